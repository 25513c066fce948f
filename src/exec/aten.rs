//! Tier 3, the part that needs no libtorch: from an aten op recorded in a plan to a call a
//! libtorch back end can make. Every argument gets a type (tensor, tensor list, int,
//! float, bool, int list, none), every tensor a fill that keeps the op's reads valid
//! (index tensors within the dimension they index, masks and conditions boolean), tensors
//! whose dtype the trace did not record take it from the op's other tensors or from the
//! kernels the op launched, and the call says how its outputs are provided (an `*_out`
//! variant with preallocated outputs, in place, or allocated by the op).
//!
//! Invariant: `build` either returns a call whose every argument is determined by the
//! recording, or an error saying what is missing; it never guesses a value.

use crate::plan::types::{AtenArg, ElemType, TensorArg};

/// How a tensor is filled before the op runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    /// Standard normal values (floating point data).
    Normal,
    /// Integers drawn uniformly from `0..high` (indices, targets, class ids).
    Indices { high: i64 },
    /// Random booleans (masks, conditions).
    Bool,
    /// Small random integers (integer data that is not an index).
    SmallInts,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorInput {
    pub dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub dtype: ElemType,
    /// The plan's buffer slot for this tensor.
    pub slot: u32,
    pub fill: Fill,
    /// A 0-dim operand that the op received as a CPU scalar (a Python number wrapped into a
    /// tensor), not as a GPU tensor; it launches a different kernel (see [`build`]).
    pub host_scalar: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallArg {
    Tensor(TensorInput),
    TensorList(Vec<TensorInput>),
    Int(i64),
    Float(f64),
    Bool(bool),
    IntList(Vec<i64>),
    BoolList(Vec<bool>),
    None,
}

/// How the op's outputs come to exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outputs {
    /// Call the named `*_out` variant with outputs preallocated (shapes from one eager run
    /// before capture), so nothing allocates while the graph is captured.
    OutVariant(&'static str),
    /// The op writes into its first argument.
    InPlace,
    /// The op has no out variant and allocates its outputs; the back end must capture it
    /// with the allocator pointed at a graph-private pool.
    Allocates,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AtenCall {
    /// The op without its namespace ("mm", "native_layer_norm").
    pub op: String,
    pub args: Vec<CallArg>,
    pub outputs: Outputs,
}

/// Ops with an out variant, and its name.
const OUT_VARIANTS: &[(&str, &str)] = &[
    ("mm", "mm_out"),
    ("addmm", "addmm_out"),
    ("bmm", "bmm_out"),
    ("baddbmm", "baddbmm_out"),
    ("add", "add_out"),
    ("sub", "sub_out"),
    ("mul", "mul_out"),
    ("div", "div_out"),
    ("pow", "pow_out"),
    ("rsqrt", "rsqrt_out"),
    ("neg", "neg_out"),
    ("silu", "silu_out"),
    ("gelu", "gelu_out"),
    ("tanh", "tanh_out"),
    ("tanh_backward", "tanh_backward_out"),
    ("sin", "sin_out"),
    ("cos", "cos_out"),
    ("le", "le_out"),
    ("bitwise_and", "bitwise_and_out"),
    ("where", "where_out"),
    ("cat", "cat_out"),
    ("sum", "sum_out"),
    ("mean", "mean_out"),
    ("cumsum", "cumsum_out"),
    ("index_select", "index_select_out"),
    ("gather", "gather_out"),
    ("index", "index_out"),
    ("_softmax", "_softmax_out"),
    ("_log_softmax", "_log_softmax_out"),
    ("_softmax_backward_data", "_softmax_backward_data_out"),
    (
        "_log_softmax_backward_data",
        "_log_softmax_backward_data_out",
    ),
    ("max_pool2d_with_indices", "max_pool2d_with_indices_out"),
    ("nll_loss_backward", "nll_loss_backward_out"),
    ("cudnn_convolution", "cudnn_convolution_out"),
    ("_foreach_sqrt", "_foreach_sqrt_out"),
];

/// Ops that allocate their outputs: no out variant in libtorch, or none that kc's libtorch
/// bindings (tch's C API, or the dispatcher's boxed call, which takes no `Scalar`) reach.
const ALLOCATING: &[&str] = &[
    // Out variants that libtorch generates as "run the op, then copy into `out`" (no CUDA
    // out kernel): replaying them would add copy kernels the model never ran.
    "embedding_dense_backward",
    "native_layer_norm",
    "native_dropout_backward",
    "arange",
    "nll_loss_forward",
    "native_layer_norm_backward",
    "cudnn_batch_norm",
    "native_dropout",
    "_cudnn_attention_forward",
    "_cudnn_attention_backward",
];

/// Whether kc's tier-3 executor can call `op` ("aten::mm") at all: lowering asks this, so
/// the tier table never promises an op exec would then report as not executed.
pub fn op_supported(op: &str) -> Result<(), String> {
    let name = op
        .strip_prefix("aten::")
        .ok_or_else(|| format!("{op} is not an aten op"))?;
    outputs_of(name).map(|_| ())
}

fn outputs_of(op: &str) -> Result<Outputs, String> {
    if let Some((_, out)) = OUT_VARIANTS.iter().find(|(o, _)| *o == op) {
        return Ok(Outputs::OutVariant(out));
    }
    if op.ends_with('_') {
        return Ok(Outputs::InPlace);
    }
    if ALLOCATING.contains(&op) {
        return Ok(Outputs::Allocates);
    }
    Err(format!("aten::{op} is not in kc's tier-3 op table yet"))
}

fn parse_scalar(ty: &str, value: &str) -> Result<CallArg, String> {
    let v = value.trim();
    if v.is_empty() {
        return Err(format!("a {ty} argument was recorded without its value"));
    }
    Ok(match v {
        "True" | "true" => CallArg::Bool(true),
        "False" | "false" => CallArg::Bool(false),
        "None" => CallArg::None,
        _ => {
            if let Ok(i) = v.parse::<i64>() {
                CallArg::Int(i)
            } else if let Ok(f) = v
                .trim_end_matches('.')
                .parse::<f64>()
                .or_else(|_| v.parse::<f64>())
            {
                CallArg::Float(f)
            } else {
                return Err(format!("a {ty} argument has the unreadable value {v:?}"));
            }
        }
    })
}

fn parse_list(value: &str) -> Result<CallArg, String> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.trim().is_empty() {
        return Ok(CallArg::IntList(Vec::new()));
    }
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts
        .iter()
        .all(|p| matches!(*p, "True" | "False" | "true" | "false"))
    {
        return Ok(CallArg::BoolList(
            parts
                .iter()
                .map(|p| p.eq_ignore_ascii_case("true"))
                .collect(),
        ));
    }
    parts
        .iter()
        .map(|p| {
            p.parse::<i64>()
                .map_err(|_| format!("list element {p:?} is not an integer"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(CallArg::IntList)
}

pub(crate) fn is_float(d: ElemType) -> bool {
    matches!(
        d,
        ElemType::F64
            | ElemType::F32
            | ElemType::F16
            | ElemType::BF16
            | ElemType::F8E4M3
            | ElemType::F8E5M2
    )
}

fn default_fill(d: ElemType) -> Fill {
    match d {
        ElemType::Bool => Fill::Bool,
        d if is_float(d) => Fill::Normal,
        _ => Fill::SmallInts,
    }
}

fn input(t: &TensorArg, dtype: ElemType) -> TensorInput {
    TensorInput {
        dims: t.dims.clone(),
        strides: t.strides.clone(),
        dtype,
        slot: t.slot,
        fill: default_fill(dtype),
        host_scalar: false,
    }
}

/// Element types named by kernel names (template arguments, vendor codes), for
/// [`build`]'s last-resort dtype inference.
fn kernel_dtypes(kernels: &[String]) -> Vec<ElemType> {
    use kc_ir::DType;
    let mut out = Vec::new();
    for k in kernels {
        let parsed = crate::lower::name::parse(k);
        // Copy kernels such as CatArrayBatchedCopy<OpaqueType<2u>, ...> move elements by
        // size only: any dtype of that size launches the same kernel.
        for a in &parsed.template_args {
            if let Some(rest) = a.split("OpaqueType<").nth(1) {
                let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let e = match n.as_str() {
                    "1" => ElemType::U8,
                    "2" => ElemType::F16,
                    "4" => ElemType::F32,
                    "8" => ElemType::F64,
                    _ => continue,
                };
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        for d in parsed.dtypes {
            let e = match d {
                DType::F64 => ElemType::F64,
                DType::F32 => ElemType::F32,
                DType::F16 => ElemType::F16,
                DType::BF16 => ElemType::BF16,
                DType::I64 => ElemType::I64,
                DType::I32 => ElemType::I32,
                DType::Bool => ElemType::Bool,
                _ => continue,
            };
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    out
}

/// Kernel names that show a binary op received one operand as a CPU scalar: PyTorch's
/// `gpu_kernel_with_scalars` then launches a unary functor that holds the scalar, and the
/// add/sub kernels an `OnSelf`/`OnOther` functor.
const HOST_SCALAR_KERNELS: &[&str] = &[
    "AUnaryFunctor",
    "BUnaryFunctor",
    "CUDAFunctorOnSelf_",
    "CUDAFunctorOnOther_",
];

/// Builds the call of `op` ("aten::mm") with its recorded `args`. `kernels` are the names of
/// the kernels the op launched: their element types are the last resort for tensors the trace
/// recorded without a dtype, and they tell whether a 0-dim operand was a CPU scalar (Kineto
/// records no device for tensors).
pub fn build(op: &str, args: &[AtenArg], kernels: &[String]) -> Result<AtenCall, String> {
    let name = op
        .strip_prefix("aten::")
        .ok_or_else(|| format!("{op} is not an aten op"))?;
    let outputs = outputs_of(name)?;
    let kernel_dtypes = kernel_dtypes(kernels);
    let host_scalar_kernel = kernels
        .iter()
        .any(|k| HOST_SCALAR_KERNELS.iter().any(|m| k.contains(m)));
    // The dtype for tensors recorded without one: the op's other tensors, else its kernels.
    let known = args
        .iter()
        .find_map(|a| match a {
            AtenArg::Tensor(t) if t.dtype != ElemType::Unknown && is_float(t.dtype) => {
                Some(t.dtype)
            }
            _ => None,
        })
        .or_else(|| {
            kernel_dtypes
                .iter()
                .copied()
                .find(|d| is_float(*d) || *d == ElemType::U8)
        });
    let resolve = |d: ElemType| -> Result<ElemType, String> {
        if d != ElemType::Unknown {
            Ok(d)
        } else {
            known.ok_or_else(|| {
                "a tensor's dtype was not recorded and cannot be inferred".to_string()
            })
        }
    };
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        out.push(match a {
            AtenArg::Tensor(t) => CallArg::Tensor(input(t, resolve(t.dtype)?)),
            AtenArg::TensorList(ts) => {
                if ts.is_empty() {
                    return Err(format!(
                        "argument {i}: a tensor list recorded without its tensors' shapes"
                    ));
                }
                CallArg::TensorList(
                    ts.iter()
                        .map(|t| Ok(input(t, resolve(t.dtype)?)))
                        .collect::<Result<_, String>>()?,
                )
            }
            AtenArg::Scalar { ty, value } => {
                parse_scalar(ty, value).map_err(|e| format!("argument {i}: {e}"))?
            }
            AtenArg::ScalarList { value, .. } => {
                parse_list(value).map_err(|e| format!("argument {i}: {e}"))?
            }
            AtenArg::None => CallArg::None,
            AtenArg::Other { ty } => {
                return Err(format!("argument {i} has the unsupported type {ty:?}"))
            }
        });
    }
    // A 0-dim operand after the first one, beside tensors with dimensions, was a CPU
    // scalar when the kernel says so; the first operand (`self`) never is.
    if host_scalar_kernel {
        let dimensioned = out
            .iter()
            .any(|a| matches!(a, CallArg::Tensor(t) if !t.dims.is_empty()));
        for a in out.iter_mut().skip(1) {
            if let CallArg::Tensor(t) = a {
                if t.dims.is_empty() && dimensioned {
                    t.host_scalar = true;
                }
            }
        }
    }
    refuse_unbindable(name, &out)?;
    constrain(name, &mut out)?;
    Ok(AtenCall {
        op: name.to_string(),
        args: out,
        outputs,
    })
}

/// Recorded calls that kc's libtorch bindings cannot make as recorded: they are refused with
/// the reason rather than replayed with a different argument.
fn refuse_unbindable(op: &str, a: &[CallArg]) -> Result<(), String> {
    let not_one = |i: usize| match a.get(i) {
        Some(CallArg::Int(1)) | None => false,
        Some(CallArg::Float(f)) => *f != 1.0,
        Some(_) => true,
    };
    match op {
        // tch binds add.out/sub.out without `alpha`.
        "add" | "sub" | "add_" | "sub_" if not_one(2) => Err(format!(
            "aten::{op} with alpha other than 1 is not bound by tch's C API"
        )),
        // addmm/baddbmm.out are bound without beta and alpha.
        "addmm" | "baddbmm" if not_one(3) || not_one(4) => Err(format!(
            "aten::{op} with beta or alpha other than 1 is not bound by tch's C API"
        )),
        // index(self, indices): a list of optional tensors that Kineto records as one
        // value without the tensors.
        "index" if !matches!(a.get(1), Some(CallArg::TensorList(_))) => {
            Err("the trace did not record its index tensors".into())
        }
        _ => Ok(()),
    }
}

fn int_at(args: &[CallArg], i: usize) -> Option<i64> {
    match args.get(i) {
        Some(CallArg::Int(v)) => Some(*v),
        _ => None,
    }
}

fn dim_of(args: &[CallArg], tensor: usize, dim: i64) -> Result<i64, String> {
    let CallArg::Tensor(t) = args.get(tensor).ok_or("missing tensor argument")? else {
        return Err(format!("argument {tensor} is not a tensor"));
    };
    let nd = t.dims.len() as i64;
    let d = if dim < 0 { dim + nd } else { dim };
    t.dims
        .get(usize::try_from(d).map_err(|_| format!("dimension {dim} out of range"))?)
        .copied()
        .ok_or_else(|| format!("dimension {dim} out of range for a {nd}-D tensor"))
}

fn set_fill(args: &mut [CallArg], i: usize, fill: Fill) -> Result<(), String> {
    match args.get_mut(i) {
        Some(CallArg::Tensor(t)) => {
            if matches!(fill, Fill::Indices { .. }) && is_float(t.dtype) {
                return Err(format!(
                    "argument {i} should hold indices but is {:?}",
                    t.dtype
                ));
            }
            t.fill = fill;
            Ok(())
        }
        _ => Err(format!("argument {i} is not a tensor")),
    }
}

/// Values that an op reads as indices or masks, per the op's schema.
fn constrain(op: &str, a: &mut [CallArg]) -> Result<(), String> {
    match op {
        // embedding(weight, indices, ...): rows of the weight.
        "embedding" => {
            let high = dim_of(a, 0, 0)?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // index_select(self, dim, index), gather(self, dim, index, ...): along `dim`.
        "index_select" | "gather" => {
            let dim = int_at(a, 1).ok_or("argument 1 (dim) is not an integer")?;
            let high = dim_of(a, 0, dim)?;
            set_fill(a, 2, Fill::Indices { high })
        }
        // embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad).
        "embedding_dense_backward" => {
            let high = int_at(a, 2).ok_or("argument 2 (num_weights) is not an integer")?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // nll_loss_forward(self, target, ...): class ids of self's last dimension.
        "nll_loss_forward" => {
            let high = dim_of(a, 0, -1)?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // nll_loss_backward(grad, self, target, ...).
        "nll_loss_backward" => {
            let high = dim_of(a, 1, -1)?;
            set_fill(a, 2, Fill::Indices { high })
        }
        // index(self, indices): a boolean mask or per-dimension index tensors.
        "index" => {
            let dims: Vec<i64> = match a.first() {
                Some(CallArg::Tensor(t)) => t.dims.clone(),
                _ => return Err("argument 0 is not a tensor".into()),
            };
            if let Some(CallArg::TensorList(ts)) = a.get_mut(1) {
                for (k, t) in ts.iter_mut().enumerate() {
                    t.fill = if t.dtype == ElemType::Bool {
                        Fill::Bool
                    } else {
                        Fill::Indices {
                            high: *dims.get(k).ok_or("more index tensors than dimensions")?,
                        }
                    };
                }
            }
            Ok(())
        }
        // max_pool2d_with_indices_backward(grad, self, ..., indices): positions in the
        // input's spatial plane.
        "max_pool2d_with_indices_backward" => {
            let h = dim_of(a, 1, -2)?;
            let w = dim_of(a, 1, -1)?;
            let last = a.len() - 1;
            set_fill(a, last, Fill::Indices { high: h * w })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dims: &[i64], dtype: ElemType) -> AtenArg {
        AtenArg::Tensor(TensorArg {
            strides: kc_ir::TensorSpec::contiguous_strides(dims),
            dims: dims.to_vec(),
            dtype,
            slot: 0,
        })
    }

    fn s(v: &str) -> AtenArg {
        AtenArg::Scalar {
            ty: "Scalar".into(),
            value: v.into(),
        }
    }

    #[test]
    fn indices_stay_within_what_they_index() {
        let c = build(
            "aten::index_select",
            &[
                t(&[250880, 1024], ElemType::F16),
                s("0"),
                t(&[5], ElemType::I64),
            ],
            &[],
        )
        .unwrap();
        assert!(
            matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 250880 })
        );
        assert_eq!(c.outputs, Outputs::OutVariant("index_select_out"));
        let c = build(
            "aten::nll_loss_forward",
            &[
                t(&[2048, 50257], ElemType::F32),
                t(&[2048], ElemType::I64),
                AtenArg::None,
                s("1"),
                s("-100"),
            ],
            &[],
        )
        .unwrap();
        assert!(
            matches!(&c.args[1], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 50257 })
        );
        assert_eq!(c.args[4], CallArg::Int(-100));
        let c = build(
            "aten::gather",
            &[
                t(&[50257, 768], ElemType::F32),
                s("-1"),
                t(&[2048, 768], ElemType::I64),
            ],
            &[],
        )
        .unwrap();
        assert!(matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 768 }));
        // An index that is recorded as floating point is refused, not guessed.
        assert!(build(
            "aten::embedding",
            &[t(&[10, 4], ElemType::F16), t(&[3], ElemType::F16)],
            &[]
        )
        .is_err());
    }

    #[test]
    fn dtypes_are_inferred_never_guessed() {
        let list = AtenArg::TensorList(vec![
            TensorArg {
                dims: vec![2, 3],
                strides: vec![3, 1],
                dtype: ElemType::Unknown,
                slot: 1,
            },
            TensorArg {
                dims: vec![4, 3],
                strides: vec![3, 1],
                dtype: ElemType::Unknown,
                slot: 2,
            },
        ]);
        let kernels = [
            "void at::native::CatArrayBatchedCopy<c10::BFloat16, unsigned int, 2, 64, 64>(...)"
                .to_string(),
        ];
        let c = build("aten::cat", &[list.clone(), s("0")], &kernels).unwrap();
        match &c.args[0] {
            CallArg::TensorList(ts) => assert!(ts.iter().all(|t| t.dtype == ElemType::BF16)),
            other => panic!("{other:?}"),
        }
        let e = build("aten::cat", &[list, s("0")], &[]).unwrap_err();
        assert!(e.contains("dtype"), "{e}");
        let e = build(
            "aten::_foreach_add_",
            &[AtenArg::TensorList(vec![]), s("1e-08")],
            &[],
        )
        .unwrap_err();
        assert!(e.contains("without its tensors' shapes"), "{e}");
    }

    #[test]
    fn scalars_and_lists() {
        assert_eq!(parse_scalar("Scalar", "1.").unwrap(), CallArg::Float(1.0));
        assert_eq!(
            parse_scalar("Scalar", "0.10000000000000001").unwrap(),
            CallArg::Float(0.1)
        );
        assert_eq!(
            parse_scalar("Scalar", "False").unwrap(),
            CallArg::Bool(false)
        );
        assert!(parse_scalar("Scalar", "").is_err());
        assert_eq!(parse_list("[3, 3]").unwrap(), CallArg::IntList(vec![3, 3]));
        assert_eq!(
            parse_list("[True, True, False]").unwrap(),
            CallArg::BoolList(vec![true, true, false])
        );
        assert_eq!(outputs_of("add_").unwrap(), Outputs::InPlace);
        assert_eq!(outputs_of("cudnn_batch_norm").unwrap(), Outputs::Allocates);
        assert!(outputs_of("frobnicate").is_err());
    }

    #[test]
    fn calls_tch_cannot_make_are_refused_with_the_reason() {
        let x = || t(&[4, 8], ElemType::F16);
        let e = build("aten::add", &[x(), x(), s("2")], &[]).unwrap_err();
        assert!(e.contains("alpha"), "{e}");
        assert!(build("aten::add", &[x(), x(), s("1")], &[]).is_ok());
        let e = build("aten::index", &[x(), AtenArg::None], &[]).unwrap_err();
        assert!(e.contains("index tensors"), "{e}");
        // A 0-dim operand is a CPU scalar only where the kernel shows a scalar functor.
        let k = ["void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> > >".to_string()];
        let c = build("aten::mul", &[x(), t(&[], ElemType::F64)], &k).unwrap();
        assert!(matches!(&c.args[1], CallArg::Tensor(t) if t.host_scalar));
        let c = build("aten::mul", &[x(), t(&[], ElemType::F64)], &[]).unwrap();
        assert!(matches!(&c.args[1], CallArg::Tensor(t) if !t.host_scalar));
        // Out variants that libtorch generates as copy wrappers are not used.
        let ln = build(
            "aten::native_layer_norm",
            &[
                x(),
                AtenArg::ScalarList {
                    ty: "ScalarList".into(),
                    value: "[8]".into(),
                },
                t(&[8], ElemType::F16),
                t(&[8], ElemType::F16),
                s("1e-05"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(ln.outputs, Outputs::Allocates);
    }
}
