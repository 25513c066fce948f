//! Merges argument shapes into ops whose trace recorded none, from a PyTorch Execution
//! Trace (schema 1.0.x with `input_shapes`, or 1.1.x-chakra with `inputs.shapes` and an
//! `rf_id` attribute) or from a kc JSONL shape log (format in docs/FORMATS.md).
//!
//! Matching: by record-function id when the trace recorded non-zero ids; otherwise by
//! aligning the op-name sequence of the Execution Trace (node id order) with the trace's
//! ops in start order, restarting at the top when the Execution Trace (usually one
//! iteration) runs out. Invariant: only ops with `ArgsSource::None` are changed, or ops whose
//! trace recorded tensor lists without their shapes (then the whole record replaces theirs),
//! and an op receives shapes only from a record with the same op name.

use super::args::typed_args;
use crate::diag::Diagnostics;
use kc_ir::{ArgRefs, ArgsSource, DType, KernelGraph, OpArg, OpKind, OpTensors, TensorRef};
use serde_json::Value;
use std::collections::HashMap;

/// One op's shapes from an external source.
#[derive(Clone, Debug)]
pub struct ShapeRecord {
    pub name: String,
    pub rf_id: Option<u64>,
    pub external_id: Option<u64>,
    pub rank: Option<u32>,
    pub args: Vec<OpArg>,
    /// Tensor identities of inputs and outputs, by position (Execution Traces only).
    pub tensors: Option<(Vec<ArgRefs>, Vec<ArgRefs>)>,
    /// The Execution Trace node's id (Execution Traces only), which a values file names.
    pub et_node: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ShapesError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

fn attr(node: &Value, key: &str) -> Option<u64> {
    if let Some(v) = node.get(key).and_then(Value::as_u64) {
        return Some(v);
    }
    node.get("attrs")?
        .as_array()?
        .iter()
        .find(|a| a.get("name").and_then(Value::as_str) == Some(key))?
        .get("value")?
        .as_u64()
}

/// One tensor of an Execution Trace: the id tuple `[tensor_id, storage_id, offset (elements),
/// numel, itemsize, device]` with its shape, strides and type. `None` when the tuple is not
/// one (schema 1.0 traces record no ids).
fn tensor_ref(
    value: &Value,
    dims: &Value,
    strides: &Value,
    ty: &str,
) -> Result<Option<TensorRef>, String> {
    let Some(t) = value.as_array() else {
        return Ok(None);
    };
    if t.len() < 6 {
        return Ok(None);
    }
    let (Some(storage), Some(offset), Some(itemsize), Some(device)) =
        (t[1].as_u64(), t[2].as_u64(), t[4].as_u64(), t[5].as_str())
    else {
        return Ok(None);
    };
    let ints =
        |v: &Value| -> Option<Vec<i64>> { v.as_array()?.iter().map(Value::as_i64).collect() };
    let Some(dims) = ints(dims) else {
        return Ok(None);
    };
    let strides = ints(strides)
        .filter(|s| s.len() == dims.len())
        .unwrap_or_else(|| kc_ir::TensorSpec::contiguous_strides(&dims));
    // A span or offset that does not fit is a corrupt record, refused: wrapped, it would
    // place the tensor anywhere in the memory image.
    let fits = |x: Option<u64>| x.filter(|v| *v <= i64::MAX as u64);
    let span = kc_ir::TensorSpec::checked_storage_elems(&dims, &strides);
    let (Some(offset_bytes), Some(span_bytes)) = (
        fits(offset.checked_mul(itemsize)),
        fits(span.and_then(|s| s.checked_mul(itemsize))),
    ) else {
        return Err(format!(
            "tensor of sizes {dims:?}, strides {strides:?}, offset {offset} and {itemsize}-byte items spans more than 2^63 bytes"
        ));
    };
    Ok(Some(TensorRef {
        storage,
        offset_bytes,
        span_bytes,
        float: DType::from_torch_name(ty).is_some_and(DType::is_float),
        on_device: device.starts_with("cuda") || device.starts_with("hip"),
    }))
}

/// The tensors of an Execution Trace node's `inputs` or `outputs` object, by position.
fn tensor_refs(io: Option<&Value>) -> Result<Vec<ArgRefs>, String> {
    let Some(Value::Object(io)) = io else {
        return Ok(Vec::new());
    };
    let empty = Vec::new();
    let arr = |k: &str| io.get(k).and_then(Value::as_array).unwrap_or(&empty);
    let (values, shapes, strides, types) =
        (arr("values"), arr("shapes"), arr("strides"), arr("types"));
    let null = Value::Null;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let ty = types.get(i).and_then(Value::as_str).unwrap_or("");
            let dims = shapes.get(i).unwrap_or(&null);
            let st = strides.get(i).unwrap_or(&null);
            if ty.starts_with("Tensor(") {
                Ok(tensor_ref(v, dims, st, ty)?.map_or(ArgRefs::None, ArgRefs::One))
            } else if let Some(inner) = ty
                .strip_prefix("GenericList[")
                .filter(|t| t.contains("Tensor("))
            {
                let tys: Vec<&str> = inner.trim_end_matches(']').split(',').collect();
                let items = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
                // The present entries of a list (a `Tensor?[]`'s absent ones have none).
                let refs: Result<Option<Vec<TensorRef>>, String> = items
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| tys.get(*k).is_some_and(|t| t.starts_with("Tensor(")))
                    .map(|(k, t)| {
                        tensor_ref(
                            t,
                            dims.get(k).unwrap_or(&null),
                            st.get(k).unwrap_or(&null),
                            tys.get(k).copied().unwrap_or(""),
                        )
                    })
                    .collect::<Result<Vec<Option<TensorRef>>, String>>()
                    .map(|v| v.into_iter().collect());
                Ok(refs?.map_or(ArgRefs::None, ArgRefs::List))
            } else {
                Ok(ArgRefs::None)
            }
        })
        .collect()
}

/// The (op, record) pairs of ops and the Execution Trace records that describe them, found
/// by record-function id and name (every op, whatever the source of its shapes), in op
/// order; none when the trace has no record-function ids to match on.
fn ops_with_records(g: &KernelGraph, records: &[ShapeRecord]) -> Vec<(usize, usize)> {
    let by_rf: HashMap<u64, usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.tensors.is_some())
        .filter_map(|(i, r)| r.rf_id.filter(|&x| x != 0).map(|x| (x, i)))
        .collect();
    g.ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.kind == OpKind::Op)
        .filter_map(|(i, op)| {
            let k = *by_rf.get(&op.record_function_id?)?;
            (records[k].name == g.strings.get(op.name)).then_some((i, k))
        })
        .collect()
}

/// Records the tensor identities of `records` on the ops they describe
/// ([`ops_with_records`]). Returns how many ops received them.
pub fn attach_tensors(g: &mut KernelGraph, records: &[ShapeRecord]) -> usize {
    let refs: Vec<OpTensors> = ops_with_records(g, records)
        .into_iter()
        .filter_map(|(i, k)| {
            let (inputs, outputs) = records[k].tensors.clone().unwrap_or_default();
            let any = inputs
                .iter()
                .chain(&outputs)
                .any(|a| !a.tensors().is_empty());
            any.then_some(OpTensors {
                op: kc_ir::OpId(i as u32),
                inputs,
                outputs,
            })
        })
        .collect();
    let n = refs.len();
    g.tensor_refs = refs;
    n
}

/// The op each Execution Trace node describes ([`ops_with_records`]): what a values file's
/// node ids resolve through.
pub fn ops_by_et_node(g: &KernelGraph, records: &[ShapeRecord]) -> HashMap<u64, kc_ir::OpId> {
    ops_with_records(g, records)
        .into_iter()
        .filter_map(|(i, k)| Some((records[k].et_node?, kc_ir::OpId(i as u32))))
        .collect()
}

/// An Execution Trace record's arguments with the trace's own scalars where it recorded
/// them: the ET rounds small doubles away (AdamW's eps of 1e-8 reads 0.0, and
/// m / (sqrt(v) + eps) then divides zero by zero on every row without a gradient), Kineto
/// writes them in full.
fn with_own_scalars(rec: &[OpArg], own: &[OpArg]) -> Vec<OpArg> {
    let mut args = rec.to_vec();
    for (a, o) in args.iter_mut().zip(own) {
        if let (OpArg::Scalar { value, .. }, OpArg::Scalar { value: ov, .. }) = (a, o) {
            if !ov.is_empty() {
                value.clone_from(ov);
            }
        }
    }
    args
}

/// The trace's own arguments with the element types the Execution Trace names for the
/// list tensors Kineto recorded with shapes but untyped ("GenericList[Tensor(c10::BFloat16),
/// ...]"); `None` when it names none of them. Untyped, a list's tensors were sized at one
/// byte an element: an optimizer's moments overlapped one another in the memory image.
fn with_list_types(own: &[OpArg], rec: &[OpArg]) -> Option<Vec<OpArg>> {
    if rec.len() != own.len() {
        return None;
    }
    let mut typed = own.to_vec();
    let mut changed = false;
    for (a, r) in typed.iter_mut().zip(rec) {
        let (OpArg::TensorList(l), OpArg::TensorList(rl)) = (a, r) else {
            continue;
        };
        if l.len() != rl.len() {
            continue;
        }
        for (t, rt) in l.iter_mut().zip(rl) {
            if t.dtype == DType::Unknown && rt.dtype != DType::Unknown && t.dims == rt.dims {
                t.dtype = rt.dtype;
                changed = true;
            }
        }
    }
    changed.then_some(typed)
}

/// Parses an Execution Trace document.
pub fn from_execution_trace(doc: &Value, path: &str) -> Result<Vec<ShapeRecord>, ShapesError> {
    let nodes = doc
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or_else(|| ShapesError::Invalid {
            path: path.to_string(),
            message: "not an Execution Trace: no `nodes` array at the top level".into(),
        })?;
    let null = Value::Null;
    let mut out: Vec<(u64, ShapeRecord)> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let Some(name) = n.get("name").and_then(Value::as_str) else {
            continue;
        };
        let (shapes, types, strides) = match n.get("inputs") {
            Some(Value::Object(inputs)) => (
                inputs.get("shapes").unwrap_or(&null),
                inputs.get("types").unwrap_or(&null),
                inputs.get("strides").unwrap_or(&null),
            ),
            _ => (
                n.get("input_shapes").unwrap_or(&null),
                n.get("input_types").unwrap_or(&null),
                n.get("input_strides").unwrap_or(&null),
            ),
        };
        let values = match n.get("inputs") {
            Some(Value::Object(inputs)) => inputs.get("values").unwrap_or(&null),
            Some(v @ Value::Array(_)) => v,
            _ => &null,
        };
        // Scalars are the plain values, lists of scalars their JSON text; tensors are id
        // tuples and are not values.
        let type_at = |i: usize| types.get(i).and_then(Value::as_str).unwrap_or("");
        let concrete: Vec<Value> = values
            .as_array()
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::Array(_)
                            if type_at(i).starts_with("GenericList[")
                                && !type_at(i).contains("Tensor(") =>
                        {
                            Value::String(v.to_string())
                        }
                        Value::Array(_) | Value::Object(_) => Value::String(String::new()),
                        Value::String(s) => Value::String(s.clone()),
                        other => Value::String(other.to_string()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let types: Value = types
            .as_array()
            .map(|a| {
                Value::Array(
                    a.iter()
                        .map(|t| {
                            let s = t.as_str().unwrap_or("");
                            let mapped = if s.starts_with("Tensor(") {
                                s.to_string()
                            } else if s.starts_with("GenericList[") && s.contains("Tensor(") {
                                // Kept whole: it names each element's dtype (and `None` for
                                // the absent entries of a `Tensor?[]`).
                                s.to_string()
                            } else if matches!(s, "Int" | "Double" | "Bool") {
                                "Scalar".into()
                            } else if s.starts_with("GenericList") {
                                "ScalarList".into()
                            } else {
                                s.to_string()
                            };
                            Value::String(mapped)
                        })
                        .collect(),
                )
            })
            .unwrap_or(Value::Null);
        let id = n.get("id").and_then(Value::as_u64).unwrap_or(0);
        let bad = |side: &str, why: String| ShapesError::Invalid {
            path: path.to_string(),
            message: format!("node {id} ({name}), {side}: {why}"),
        };
        let inputs = tensor_refs(n.get("inputs")).map_err(|w| bad("inputs", w))?;
        let outputs = tensor_refs(n.get("outputs")).map_err(|w| bad("outputs", w))?;
        let args = typed_args(shapes, strides, &types, &Value::Array(concrete));
        if let Some(t) = args.iter().find_map(|a| match a {
            OpArg::Tensor(t) => {
                kc_ir::TensorSpec::checked_storage_elems(&t.dims, &t.effective_strides())
                    .is_none()
                    .then_some(t)
            }
            _ => None,
        }) {
            return Err(bad(
                "inputs",
                format!(
                    "tensor of sizes {:?} and strides {:?} spans more than 2^63 elements",
                    t.dims, t.strides
                ),
            ));
        }
        out.push((
            id,
            ShapeRecord {
                name: name.to_string(),
                rf_id: attr(n, "rf_id"),
                external_id: None,
                rank: None,
                args,
                tensors: Some((inputs, outputs)),
                et_node: Some(id),
            },
        ));
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Parses a kc JSONL shape log: one JSON object per line with `name`, `dims`, `types`
/// and optionally `strides`, `concrete`, `external_id`, `rf_id`, `rank`.
pub fn from_jsonl(text: &str, path: &str) -> Result<Vec<ShapeRecord>, ShapesError> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for (lineno, line) in text.split_inclusive('\n').enumerate() {
        let at = offset;
        offset += line.len();
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| ShapesError::Invalid {
            path: path.to_string(),
            message: format!("line {} (byte {at}): {e}", lineno + 1),
        })?;
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ShapesError::Invalid {
                path: path.to_string(),
                message: format!(
                    "line {} (byte {at}): missing string field `name`",
                    lineno + 1
                ),
            })?;
        let null = Value::Null;
        out.push(ShapeRecord {
            name: name.to_string(),
            rf_id: v.get("rf_id").and_then(Value::as_u64),
            external_id: v.get("external_id").and_then(Value::as_u64),
            rank: match v.get("rank") {
                None | Some(Value::Null) => None,
                Some(r) => Some(r.as_u64().and_then(|r| u32::try_from(r).ok()).ok_or_else(
                    || ShapesError::Invalid {
                        path: path.to_string(),
                        message: format!(
                            "line {} (byte {at}): rank {r} is not a rank (0 to 4294967295)",
                            lineno + 1
                        ),
                    },
                )?),
            },
            args: typed_args(
                v.get("dims").unwrap_or(&null),
                v.get("strides").unwrap_or(&null),
                v.get("types").unwrap_or(&null),
                v.get("concrete").unwrap_or(&null),
            ),
            tensors: None,
            et_node: None,
        });
    }
    Ok(out)
}

/// Merges `records` into the graph's ops that have no shapes. Returns how many ops got
/// shapes.
/// Tensor dims of an argument list, for comparing a trace's shapes with a record's.
fn tensor_dims(args: &[OpArg]) -> Vec<&[i64]> {
    args.iter()
        .filter_map(|a| a.tensor().map(|t| t.dims.as_slice()))
        .collect()
}

/// Whether the shape records belong to the trace: where an op found by its id also has
/// shapes in the trace itself, the two must mostly agree (name and tensor dims). An
/// Execution Trace of another run matches ids by chance (they are small counters) and
/// would silently hand ops wrong shapes. Returns the disagreement as a message.
fn check_same_run(
    g: &KernelGraph,
    records: &[ShapeRecord],
    hits: &[(usize, usize)],
) -> Option<String> {
    let (mut checked, mut agree) = (0usize, 0usize);
    for &(i, k) in hits {
        let op = &g.ops[i];
        let name_ok = records[k].name == g.strings.get(op.name);
        let own = tensor_dims(&g.arg_lists[op.args as usize]);
        if op.args_source == ArgsSource::Trace && !own.is_empty() {
            checked += 1;
            agree += usize::from(name_ok && own == tensor_dims(&records[k].args));
        } else if !name_ok {
            checked += 1;
        }
    }
    // Ops whose id finds a record of another name count as disagreeing too.
    (checked >= 20 && agree * 2 < checked).then(|| {
        format!(
            "these shapes are not from this trace's run: of {checked} ops the trace itself \
             recorded and this file also holds (by id), only {agree} agree in name and shapes. \
             Give the Execution Trace recorded in the same profiled run"
        )
    })
}

pub fn merge(
    g: &mut KernelGraph,
    records: &[ShapeRecord],
    source: ArgsSource,
    diags: &mut Diagnostics,
) -> Result<usize, String> {
    let mut merged = 0;
    // Each record's args become one shared argument list, added only when first used.
    let mut list_of: Vec<Option<u32>> = vec![None; records.len()];
    let mut assign = |g: &mut KernelGraph, i: usize, k: usize| {
        let id = *list_of[k].get_or_insert_with(|| {
            g.arg_lists.push(records[k].args.clone());
            (g.arg_lists.len() - 1) as u32
        });
        g.ops[i].args = id;
        g.ops[i].args_source = source;
    };
    let by_ext: HashMap<(Option<u32>, u64), usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.external_id.map(|e| ((r.rank, e), i)))
        .collect();
    let by_rf: HashMap<u64, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.rf_id.filter(|&x| x != 0).map(|x| (x, i)))
        .collect();
    let trace_has_rf = g
        .ops
        .iter()
        .any(|o| o.record_function_id.is_some_and(|x| x != 0));
    let find = |op: &kc_ir::CpuOp| {
        by_ext
            .get(&(Some(op.rank), op.external_id))
            .or_else(|| by_ext.get(&(None, op.external_id)))
            .or_else(|| {
                trace_has_rf
                    .then(|| op.record_function_id.and_then(|r| by_rf.get(&r)))
                    .flatten()
            })
            .copied()
    };
    let hits: Vec<(usize, usize)> = (0..g.ops.len())
        .filter(|&i| g.ops[i].kind == OpKind::Op)
        .filter_map(|i| find(&g.ops[i]).map(|k| (i, k)))
        .collect();
    if let Some(why) = check_same_run(g, records, &hits) {
        return Err(why);
    }
    let wanting = g
        .ops
        .iter()
        .filter(|op| op.args_source == ArgsSource::None && op.kind == OpKind::Op)
        .count();
    let mut unmatched: Vec<usize> = Vec::new();
    for i in 0..g.ops.len() {
        let op = &g.ops[i];
        if op.args_source != ArgsSource::None || op.kind != OpKind::Op {
            continue;
        }
        let name = g.strings.get(op.name);
        let hit = find(op).filter(|&k| records[k].name == name);
        match hit {
            Some(k) => {
                assign(g, i, k);
                merged += 1;
            }
            None => unmatched.push(i),
        }
    }
    // Ops whose trace recorded a tensor list without its tensors take the whole record of
    // the same op, when it has as many arguments and records that list: Kineto records the
    // optimizer's `_foreach_*` lists without shapes, and `index`'s `Tensor?[]` indices as
    // nothing at all.
    let list_unknown =
        |a: &OpArg| matches!(a, OpArg::None) || matches!(a, OpArg::TensorList(l) if l.is_empty());
    let records_list = |a: &OpArg| match a {
        OpArg::TensorList(l) => !l.is_empty(),
        OpArg::OptionalTensorList(_) => true,
        _ => false,
    };
    let lacks_list_shapes = |args: &[OpArg]| {
        args.iter()
            .any(|a| matches!(a, OpArg::TensorList(l) if l.is_empty()))
    };
    // An empty list in a Kineto record may be an empty list or one recorded without its
    // tensors; the Execution Trace says which ("GenericList[]" is empty).
    let richer = |own: &[OpArg], rec: &[OpArg]| {
        rec.len() == own.len()
            && !lacks_list_shapes(rec)
            && (lacks_list_shapes(own)
                || own
                    .iter()
                    .zip(rec)
                    .any(|(o, r)| list_unknown(o) && records_list(r)))
    };
    // Kineto's record completed by the op's Execution Trace record: its lists taken whole
    // where Kineto recorded them without their tensors (`richer`), else its element types
    // for the list tensors Kineto recorded untyped.
    for i in 0..g.ops.len() {
        let op = &g.ops[i];
        if op.args_source != ArgsSource::Trace || op.kind != OpKind::Op {
            continue;
        }
        let own = &g.arg_lists[op.args as usize];
        let untyped = |a: &OpArg| matches!(a, OpArg::TensorList(l) if l.iter().any(|t| t.dtype == DType::Unknown));
        if !own.iter().any(|a| list_unknown(a) || untyped(a)) {
            continue;
        }
        let name = g.strings.get(op.name);
        let Some(k) = find(op).filter(|&k| records[k].name == name) else {
            continue;
        };
        let rec = &records[k].args;
        if own.iter().any(list_unknown) && richer(own, rec) {
            g.arg_lists.push(with_own_scalars(rec, own));
            g.ops[i].args_source = source;
            merged += 1;
        } else if let Some(typed) = with_list_types(own, rec) {
            g.arg_lists.push(typed);
        } else {
            continue;
        }
        g.ops[i].args = (g.arg_lists.len() - 1) as u32;
    }
    if !unmatched.is_empty() && !trace_has_rf && by_ext.is_empty() {
        // Sequence alignment by op name, cyclic over the record list.
        unmatched.sort_by_key(|&i| (g.ops[i].start_ns, i));
        let n = records.len();
        let mut cursor = 0usize;
        const WINDOW: usize = 256;
        for i in unmatched {
            let name = g.strings.get(g.ops[i].name);
            let found = (0..WINDOW.min(n))
                .map(|d| (cursor + d) % n)
                .find(|&k| records[k].name == name);
            match found {
                Some(k) => {
                    assign(g, i, k);
                    merged += 1;
                    cursor = (k + 1) % n.max(1);
                }
                None => diags.add(
                    "shapes_unmatched",
                    format!("op{i}"),
                    format!("{name}: no record with this name near position {cursor}"),
                ),
            }
        }
    } else {
        for i in unmatched {
            diags.add(
                "shapes_unmatched",
                format!("op{i}"),
                format!(
                    "{}: no shape record with its id",
                    g.strings.get(g.ops[i].name)
                ),
            );
        }
    }
    // Most ops finding no record means the records describe another run.
    if wanting >= 20 && merged * 2 < wanting {
        return Err(format!(
            "these shapes are not from this trace's run: only {merged} of the {wanting} ops \
             without shapes found a record. Give the Execution Trace recorded in the same \
             profiled run"
        ));
    }
    Ok(merged)
}
