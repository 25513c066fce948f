//! Turns an op's recorded argument text (Kineto "Input Dims", "Input Strides", "Input type",
//! "Concrete Inputs", or the same lists from an Execution Trace) into typed [`OpArg`]s.
//! Invariant: the result has one entry per recorded argument, in order; anything that
//! cannot be typed becomes `OpArg::Other` with its recorded type name, never an error.

use kc_ir::{DType, OpArg, TensorSpec};
use serde_json::Value;

fn ints(v: &Value) -> Option<Vec<i64>> {
    v.as_array()?.iter().map(|x| x.as_i64()).collect()
}

/// Is `v` a list of lists of integers (a TensorList's dims)?
fn int_lists(v: &Value) -> Option<Vec<Vec<i64>>> {
    let a = v.as_array()?;
    if a.is_empty() {
        return None;
    }
    a.iter().map(ints).collect()
}

fn scalar_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The element types of an Execution Trace's "GenericList[A,B(x, y),C]": split at the
/// commas outside parentheses.
fn list_elements(ty: &str) -> Vec<&str> {
    let inner = ty
        .strip_prefix("GenericList[")
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or("");
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner.trim().is_empty() {
        out.push(inner[start..].trim());
    }
    out
}

/// Builds typed args from the four parallel lists. Missing lists count as empty.
pub fn typed_args(dims: &Value, strides: &Value, types: &Value, concrete: &Value) -> Vec<OpArg> {
    let empty = Vec::new();
    let dims = dims.as_array().unwrap_or(&empty);
    let strides = strides.as_array().unwrap_or(&empty);
    let types = types.as_array().unwrap_or(&empty);
    let concrete = concrete.as_array().unwrap_or(&empty);
    let n = dims.len().max(types.len());
    (0..n)
        .map(|i| {
            let ty = types.get(i).and_then(|t| t.as_str()).unwrap_or("");
            let d = dims.get(i).unwrap_or(&Value::Null);
            let s = strides.get(i).unwrap_or(&Value::Null);
            if let Some(dtype) = DType::from_torch_name(ty) {
                return OpArg::Tensor(TensorSpec {
                    dims: ints(d).unwrap_or_default(),
                    strides: ints(s).unwrap_or_default(),
                    dtype,
                });
            }
            // An Execution Trace's list that holds tensors and absent entries (`Tensor?[]`:
            // "GenericList[None,Tensor(long int)]"): each entry a tensor or `None`.
            if ty.starts_with("GenericList[") && ty.contains("Tensor(") && ty.contains("None") {
                let ds = d.as_array().cloned().unwrap_or_default();
                let ss = s.as_array().cloned().unwrap_or_default();
                let elems = list_elements(ty);
                return OpArg::OptionalTensorList(
                    elems
                        .iter()
                        .enumerate()
                        .map(|(k, e)| {
                            let inner = e.strip_prefix("Tensor(")?.strip_suffix(')')?;
                            Some(TensorSpec {
                                dims: ds.get(k).and_then(ints).unwrap_or_default(),
                                strides: ss.get(k).and_then(ints).unwrap_or_default(),
                                dtype: DType::from_torch_name(inner).unwrap_or(DType::Unknown),
                            })
                        })
                        .collect(),
                );
            }
            if ty == "TensorList" || ty.starts_with("GenericList[Tensor") {
                let ds = int_lists(d).unwrap_or_default();
                let ss = int_lists(s).unwrap_or_default();
                // An Execution Trace names each element's type:
                // "GenericList[Tensor(c10::Half),Tensor(float)]".
                let dtypes: Vec<DType> = ty
                    .split("Tensor(")
                    .skip(1)
                    .map(|t| {
                        DType::from_torch_name(t.split(')').next().unwrap_or(""))
                            .unwrap_or(DType::Unknown)
                    })
                    .collect();
                return OpArg::TensorList(
                    ds.into_iter()
                        .enumerate()
                        .map(|(k, dims)| TensorSpec {
                            strides: ss.get(k).cloned().unwrap_or_default(),
                            dims,
                            dtype: dtypes.get(k).copied().unwrap_or(DType::Unknown),
                        })
                        .collect(),
                );
            }
            match ty {
                "Scalar" | "Int" | "Double" | "Bool" | "Float" | "Long" | "String" | "Device"
                | "Layout" | "ScalarType" | "MemoryFormat" | "SymInt" => OpArg::Scalar {
                    ty: ty.to_string(),
                    value: scalar_text(concrete.get(i)),
                },
                "ScalarList" | "IntList" | "SymIntList" | "GenericList[Int]" => OpArg::ScalarList {
                    ty: ty.to_string(),
                    value: scalar_text(concrete.get(i)),
                },
                "" | "None" => {
                    // Legacy traces leave types empty but still record dims: keep the shape.
                    if let Some(dims) = ints(d).filter(|x| !x.is_empty()) {
                        OpArg::Tensor(TensorSpec {
                            dims,
                            strides: ints(s).unwrap_or_default(),
                            dtype: DType::Unknown,
                        })
                    } else {
                        OpArg::None
                    }
                }
                other => OpArg::Other {
                    ty: other.to_string(),
                },
            }
        })
        .collect()
}

/// Parses the Kineto text form; unparsable text counts as absent.
pub fn typed_args_from_text(dims: &str, strides: &str, types: &str, concrete: &str) -> Vec<OpArg> {
    let p = |s: &str| -> Value {
        if s.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(s).unwrap_or(Value::Null)
        }
    };
    typed_args(&p(dims), &p(strides), &p(types), &p(concrete))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kineto_addmm_args() {
        let a = typed_args_from_text(
            "[[3072], [5, 1024], [1024, 3072], [], []]",
            "[[1], [1024, 1], [1, 1024], [], []]",
            r#"["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"]"#,
            r#"["", "", "", "1", "1"]"#,
        );
        assert_eq!(a.len(), 5);
        let w = a[2].tensor().unwrap();
        assert_eq!(w.dims, vec![1024, 3072]);
        assert_eq!(w.strides, vec![1, 1024]);
        assert_eq!(w.dtype, DType::F16);
        assert_eq!(a[4].scalar_value(), Some("1"));
    }

    #[test]
    fn tensor_lists_and_nones() {
        let a = typed_args_from_text(
            "[[[2, 3], [4, 3]], []]",
            "[[[3, 1], [3, 1]], []]",
            r#"["TensorList", "Scalar"]"#,
            r#"["", "0"]"#,
        );
        match &a[0] {
            OpArg::TensorList(ts) => assert_eq!(ts[1].dims, vec![4, 3]),
            other => panic!("{other:?}"),
        }
        assert_eq!(a[1].scalar_value(), Some("0"));
        let b = typed_args_from_text("[[], [2]]", "", r#"["", ""]"#, "");
        assert_eq!(b[0], OpArg::None);
        assert!(matches!(&b[1], OpArg::Tensor(t) if t.dtype == DType::Unknown));
    }
}
