//! Tier 3 on the GPU: replays the aten op behind a unit through libtorch, on kc's own CUDA
//! stream, so that the op's kernels land in the same CUDA graph as tiers 1 and 2 (or in the
//! unit's own graph in isolated mode). The call itself is decided by [`super::aten::build`]
//! without libtorch; this file only turns it into tensors and one libtorch call.
//!
//! Per unit, before any capture: the argument tensors are created once on the GPU with the
//! recorded sizes, strides and dtypes (their storage filled through a contiguous base, so
//! expanded and overlapping views work), CPU scalars where the kernels showed one, and the op
//! runs once eagerly in its allocating form. Its results become the preallocated outputs that
//! every later invocation writes through the op's out variant; ops without a reachable out
//! variant allocate, which inside a capture is served by libtorch's warm caching allocator
//! (the eager run left blocks of the right sizes) under relaxed capture mode.
//!
//! Most ops go through tch's typed bindings. Ops that tch does not bind, whose schema holds no
//! `Scalar` and whose returns are all tensors (native_layer_norm_backward, nll_loss_forward)
//! go through libtorch's boxed dispatcher (`aoti_torch_call_dispatcher`), by schema position.
//!
//! Invariant: every libtorch error becomes an [`ExecError`] naming the op; an op runs only on
//! the stream it was handed (the thread's current libtorch stream is set before each call).

use super::aten::{self, AtenCall, CallArg, Fill, TensorInput};
use super::ExecError;
use crate::plan::types::{ElemType, PlanUnit, UnitCall};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use tch::{Device, Kind, Tensor};

extern "C" {
    /// Exported by libtorch_cuda (torch/csrc/stable/c/shim.h): makes an external stream the
    /// calling thread's current stream for `device_index`.
    fn torch_set_current_cuda_stream(stream: *mut c_void, device_index: i32) -> i32;
    /// Exported by libtorch_cpu (torch/csrc/inductor/aoti_torch/c/shim.h): calls an op
    /// overload with a stack of StableIValues; results replace the stack's first entries.
    fn aoti_torch_call_dispatcher(
        op_name: *const c_char,
        overload_name: *const c_char,
        stack: *mut u64,
    ) -> i32;
    fn torch_new_list_reserve_size(size: usize, ret: *mut *mut c_void) -> i32;
    fn torch_list_push_back(list: *mut c_void, element: u64) -> i32;
}

/// An argument made concrete.
enum Value {
    Tensor(Tensor),
    List(Vec<Tensor>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Ints(Vec<i64>),
    Bools(Vec<bool>),
    None,
}

struct Prepared {
    call: AtenCall,
    values: Vec<Value>,
    /// The outputs of the eager run, written again by every out-variant invocation.
    outputs: Vec<Tensor>,
}

/// Tier-3 units prepared for replay: per unit on its own tensors (`None`), and per graph
/// step on that step's places in the memory image.
#[derive(Default)]
pub struct Torch {
    units: HashMap<(u32, Option<u32>), Prepared>,
}

/// A tensor over plan memory at `addr`: a view with the call's sizes and strides that
/// owns nothing (the arena outlives every prepared call).
fn placed_tensor(t: &TensorInput, addr: u64) -> Result<Tensor, tch::TchError> {
    let kind = kind_of(t.dtype).map_err(tch::TchError::Kind)?;
    // SAFETY: `addr` is inside the arena, which the plan sized to hold this operand's
    // furthest element; the arena lives until the Gpu drops, after every prepared call.
    unsafe {
        Tensor::f_from_blob(
            addr as *const u8,
            &t.dims,
            &t.strides,
            kind,
            Device::Cuda(0),
        )
    }
}

/// Whether a tensor may live in plan memory: floating-point data the op reads as drawn
/// (not indices or masks, which need valid values) on the GPU.
/// fp8 tensors are drawn in half precision and converted ([`make_tensor`]); they keep
/// their own.
fn placeable(t: &TensorInput) -> bool {
    t.fill == Fill::Normal
        && !t.host_scalar
        && aten::is_float(t.dtype)
        && !matches!(t.dtype, ElemType::F8E4M3 | ElemType::F8E5M2)
}

fn torch_err(op: &str, e: impl std::fmt::Display) -> ExecError {
    ExecError::Torch {
        op: op.to_string(),
        message: e.to_string().lines().next().unwrap_or_default().to_string(),
    }
}

fn kind_of(d: ElemType) -> Result<Kind, String> {
    Ok(match d {
        ElemType::F64 => Kind::Double,
        ElemType::F32 => Kind::Float,
        ElemType::F16 => Kind::Half,
        ElemType::BF16 => Kind::BFloat16,
        ElemType::F8E4M3 => Kind::Float8e4m3fn,
        ElemType::F8E5M2 => Kind::Float8e5m2,
        ElemType::I64 => Kind::Int64,
        ElemType::I32 => Kind::Int,
        ElemType::I16 => Kind::Int16,
        ElemType::I8 => Kind::Int8,
        ElemType::U8 => Kind::Uint8,
        ElemType::Bool => Kind::Bool,
        ElemType::C64 => Kind::ComplexFloat,
        ElemType::C128 => Kind::ComplexDouble,
        ElemType::Unknown => return Err("a tensor without a dtype".into()),
    })
}

/// c10::ScalarType codes as recorded for `ScalarType` arguments (e.g. `input_dtype`).
fn kind_of_code(code: i64) -> Result<Kind, String> {
    Ok(match code {
        0 => Kind::Uint8,
        1 => Kind::Int8,
        2 => Kind::Int16,
        3 => Kind::Int,
        4 => Kind::Int64,
        5 => Kind::Half,
        6 => Kind::Float,
        7 => Kind::Double,
        11 => Kind::Bool,
        15 => Kind::BFloat16,
        other => return Err(format!("ScalarType code {other} is not supported")),
    })
}

fn make_tensor(t: &TensorInput) -> Result<Tensor, tch::TchError> {
    let kind = kind_of(t.dtype).map_err(tch::TchError::Kind)?;
    let device = if t.host_scalar {
        Device::Cpu
    } else {
        Device::Cuda(0)
    };
    let n = kc_ir::TensorSpec::storage_elems(&t.dims, &t.strides) as i64;
    // Random values are drawn in a type every generator supports, then converted.
    let draw_kind = match kind {
        Kind::Float8e4m3fn | Kind::Float8e5m2 => Kind::Half,
        k => k,
    };
    let mut base = Tensor::f_empty([n], (draw_kind, device))?;
    if n > 0 {
        match &t.fill {
            Fill::Normal => {
                let _ = base.f_normal_(0.0, 1.0)?;
            }
            Fill::Indices { high } => {
                let _ = base.f_random_to_((*high).max(1))?;
            }
            Fill::Bool => {
                let _ = base.f_random_to_(2)?;
            }
            Fill::SmallInts => {
                let _ = base.f_random_to_(8)?;
            }
        }
    }
    if draw_kind != kind {
        base = base.f_to_kind(kind)?;
    }
    base.f_as_strided(t.dims.as_slice(), t.strides.as_slice(), 0)
}

fn value_of(a: &CallArg) -> Result<Value, tch::TchError> {
    Ok(match a {
        CallArg::Tensor(t) => Value::Tensor(make_tensor(t)?),
        CallArg::TensorList(ts) => {
            Value::List(ts.iter().map(make_tensor).collect::<Result<_, _>>()?)
        }
        CallArg::Int(i) => Value::Int(*i),
        CallArg::Float(f) => Value::Float(*f),
        CallArg::Bool(b) => Value::Bool(*b),
        CallArg::IntList(v) => Value::Ints(v.clone()),
        CallArg::BoolList(v) => Value::Bools(v.clone()),
        CallArg::None => Value::None,
    })
}

/// Reads argument `i` as one type, or says what was there instead.
struct Args<'a> {
    op: &'a str,
    v: &'a [Value],
}

impl<'a> Args<'a> {
    fn bad(&self, i: usize, want: &str) -> tch::TchError {
        tch::TchError::Kind(format!("aten::{}: argument {i} is not {want}", self.op))
    }
    fn t(&self, i: usize) -> Result<&'a Tensor, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Tensor(t)) => Ok(t),
            _ => Err(self.bad(i, "a tensor")),
        }
    }
    fn opt_t(&self, i: usize) -> Result<Option<&'a Tensor>, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Tensor(t)) => Ok(Some(t)),
            Some(Value::None) | None => Ok(None),
            _ => Err(self.bad(i, "an optional tensor")),
        }
    }
    fn list(&self, i: usize) -> Result<&'a [Tensor], tch::TchError> {
        match self.v.get(i) {
            Some(Value::List(l)) => Ok(l),
            _ => Err(self.bad(i, "a tensor list")),
        }
    }
    fn int(&self, i: usize) -> Result<i64, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Int(x)) => Ok(*x),
            Some(Value::Bool(b)) => Ok(i64::from(*b)),
            _ => Err(self.bad(i, "an integer")),
        }
    }
    fn float(&self, i: usize) -> Result<f64, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Float(x)) => Ok(*x),
            Some(Value::Int(x)) => Ok(*x as f64),
            _ => Err(self.bad(i, "a number")),
        }
    }
    fn bool(&self, i: usize) -> Result<bool, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Int(x)) => Ok(*x != 0),
            _ => Err(self.bad(i, "a bool")),
        }
    }
    fn ints(&self, i: usize) -> Result<&'a [i64], tch::TchError> {
        match self.v.get(i) {
            Some(Value::Ints(v)) => Ok(v),
            _ => Err(self.bad(i, "an integer list")),
        }
    }
    fn opt_ints(&self, i: usize) -> Result<Option<&'a [i64]>, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Ints(v)) => Ok(Some(v)),
            Some(Value::None) | None => Ok(None),
            _ => Err(self.bad(i, "an optional integer list")),
        }
    }
    fn opt_kind(&self, i: usize) -> Result<Option<Kind>, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Int(c)) => kind_of_code(*c).map(Some).map_err(tch::TchError::Kind),
            Some(Value::None) | None => Ok(None),
            _ => Err(self.bad(i, "a dtype")),
        }
    }
    /// A `Scalar` argument (a number; booleans as 0 or 1).
    fn scalar(&self, i: usize) -> Result<tch::Scalar, tch::TchError> {
        match self.v.get(i) {
            Some(Value::Int(x)) => Ok(tch::Scalar::int(*x)),
            Some(Value::Float(x)) => Ok(tch::Scalar::float(*x)),
            Some(Value::Bool(b)) => Ok(tch::Scalar::int(i64::from(*b))),
            _ => Err(self.bad(i, "a scalar")),
        }
    }
    fn is_tensor(&self, i: usize) -> bool {
        matches!(self.v.get(i), Some(Value::Tensor(_)))
    }
}

/// Runs the op. With `outs` empty it runs the allocating form and returns its results; with
/// the outputs of such a run it writes them again through the out variant.
fn invoke(op: &str, v: &[Value], outs: &[Tensor]) -> Result<Vec<Tensor>, tch::TchError> {
    let a = Args { op, v };
    let first = outs.is_empty();
    let out = |i: usize| &outs[i];
    // Unary ops: f(self) or f_out(out).
    macro_rules! unary {
        ($f:ident, $f_out:ident) => {{
            let x = a.t(0)?;
            if first {
                vec![x.$f()?]
            } else {
                vec![x.$f_out(out(0))?]
            }
        }};
    }
    // Binary ops whose second operand is a tensor or a scalar.
    macro_rules! binary {
        ($f:ident, $f_out:ident, $fs:ident, $fs_out:ident) => {{
            let x = a.t(0)?;
            if a.is_tensor(1) {
                let y = a.t(1)?;
                if first {
                    vec![x.$f(y)?]
                } else {
                    vec![x.$f_out(out(0), y)?]
                }
            } else {
                let y = a.scalar(1)?;
                if first {
                    vec![x.$fs(y)?]
                } else {
                    vec![x.$fs_out(out(0), y)?]
                }
            }
        }};
    }
    // In-place ops whose second operand is a tensor or a scalar; they write into `self`.
    macro_rules! in_place {
        ($f:ident, $fs:ident) => {{
            let mut dst = a.t(0)?.shallow_clone();
            if a.is_tensor(1) {
                let _ = dst.$f(a.t(1)?)?;
            } else {
                let _ = dst.$fs(a.scalar(1)?)?;
            }
            vec![]
        }};
    }
    let r = match op {
        "add" => binary!(f_add, f_add_out, f_add_scalar, f_add_scalar_out),
        "sub" => binary!(f_sub, f_sub_out, f_sub_scalar, f_sub_scalar_out),
        "mul" => binary!(f_mul, f_mul_out, f_mul_scalar, f_mul_scalar_out),
        "div" => binary!(f_div, f_div_out, f_div_scalar, f_div_scalar_out),
        "le" => binary!(f_le_tensor, f_le_tensor_out, f_le, f_le_scalar_out),
        "bitwise_and" => binary!(
            f_bitwise_and_tensor,
            f_bitwise_and_tensor_out,
            f_bitwise_and,
            f_bitwise_and_scalar_out
        ),
        "pow" => {
            if a.is_tensor(0) && a.is_tensor(1) {
                let (x, y) = (a.t(0)?, a.t(1)?);
                if first {
                    vec![x.f_pow(y)?]
                } else {
                    vec![x.f_pow_tensor_tensor_out(out(0), y)?]
                }
            } else if a.is_tensor(0) {
                let x = a.t(0)?;
                let y = a.scalar(1)?;
                if first {
                    vec![x.f_pow_tensor_scalar(y)?]
                } else {
                    vec![x.f_pow_tensor_scalar_out(out(0), y)?]
                }
            } else {
                let (s, y) = (a.scalar(0)?, a.t(1)?);
                if first {
                    vec![Tensor::f_pow_scalar(s, y)?]
                } else {
                    vec![Tensor::f_pow_scalar_out(out(0), s, y)?]
                }
            }
        }
        "rsqrt" => unary!(f_rsqrt, f_rsqrt_out),
        "neg" => unary!(f_neg, f_neg_out),
        "silu" => unary!(f_silu, f_silu_out),
        "tanh" => unary!(f_tanh, f_tanh_out),
        "sin" => unary!(f_sin, f_sin_out),
        "cos" => unary!(f_cos, f_cos_out),
        "gelu" => {
            let x = a.t(0)?;
            // Kineto records the default `approximate="none"` as None; another value is not
            // recorded in a form kc reads.
            if !matches!(a.v.get(1), Some(Value::None) | None) {
                return Err(a.bad(1, "the default approximation"));
            }
            if first {
                vec![x.f_gelu("none")?]
            } else {
                vec![x.f_gelu_out(out(0), "none")?]
            }
        }
        "tanh_backward" => {
            let (g, y) = (a.t(0)?, a.t(1)?);
            if first {
                vec![Tensor::f_tanh_backward(g, y)?]
            } else {
                vec![Tensor::f_tanh_backward_grad_input(out(0), g, y)?]
            }
        }
        "copy_" => {
            let mut dst = a.t(0)?.shallow_clone();
            dst.f_copy_(a.t(1)?)?;
            vec![]
        }
        "fill_" => in_place!(f_fill_tensor_, f_fill_),
        "add_" => in_place!(f_add_, f_add_scalar_),
        "mul_" => in_place!(f_mul_, f_mul_scalar_),
        "clamp_min_" => {
            let mut dst = a.t(0)?.shallow_clone();
            let _ = dst.f_clamp_min_(a.scalar(1)?)?;
            vec![]
        }
        "where" => {
            let (c, x, y) = (a.t(0)?, a.t(1)?, a.t(2)?);
            if first {
                vec![x.f_where_self(c, y)?]
            } else {
                vec![x.f_where_self_out(out(0), c, y)?]
            }
        }
        "cat" => {
            let (l, dim) = (a.list(0)?, a.int(1)?);
            if first {
                vec![Tensor::f_cat(l, dim)?]
            } else {
                vec![Tensor::f_cat_out(out(0), l, dim)?]
            }
        }
        "sum" if v.len() <= 2 => {
            // sum(self, *, dtype): the whole tensor.
            let (x, dtype) = (a.t(0)?, a.opt_kind(1)?);
            if first {
                vec![x.f_sum(dtype)?]
            } else {
                vec![x.f_sum_out(out(0), dtype)?]
            }
        }
        "sum" => {
            let x = a.t(0)?;
            let (dims, keep, dtype) = (a.opt_ints(1)?, a.bool(2)?, a.opt_kind(3)?);
            if first {
                vec![x.f_sum_dim_intlist(dims, keep, dtype)?]
            } else {
                vec![x.f_sum_intlist_out(out(0), dims, keep, dtype)?]
            }
        }
        "mean" => {
            let x = a.t(0)?;
            let dims = a.opt_ints(1)?;
            let keep = a.bool(2)?;
            let dtype = a.opt_kind(3)?;
            if first {
                vec![x.f_mean_dim(dims, keep, dtype)?]
            } else {
                vec![x.f_mean_out(out(0), dims, keep, dtype)?]
            }
        }
        "cumsum" => {
            let (x, dim, dtype) = (a.t(0)?, a.int(1)?, a.opt_kind(2)?);
            if first {
                vec![x.f_cumsum(dim, dtype)?]
            } else {
                vec![x.f_cumsum_out(out(0), dim, dtype)?]
            }
        }
        "arange" => {
            // arange.start_out(start, end, step, *, out): the recorded out tensor names the
            // dtype; the result is allocated (tch binds no arange out variant).
            let kind = a.t(3)?.kind();
            vec![Tensor::f_arange_start_step(
                a.scalar(0)?,
                a.scalar(1)?,
                a.scalar(2)?,
                (kind, Device::Cuda(0)),
            )?]
        }
        "index_select" => {
            let (x, dim, idx) = (a.t(0)?, a.int(1)?, a.t(2)?);
            if first {
                vec![x.f_index_select(dim, idx)?]
            } else {
                vec![x.f_index_select_out(out(0), dim, idx)?]
            }
        }
        "gather" => {
            let (x, dim, idx) = (a.t(0)?, a.int(1)?, a.t(2)?);
            let sparse = a.v.len() > 3 && a.bool(3)?;
            if first {
                vec![x.f_gather(dim, idx, sparse)?]
            } else {
                vec![x.f_gather_out(out(0), dim, idx, sparse)?]
            }
        }
        "index" => {
            let x = a.t(0)?;
            let idx: Vec<Option<&Tensor>> = a.list(1)?.iter().map(Some).collect();
            if first {
                vec![x.f_index(&idx)?]
            } else {
                vec![x.f_index_tensor_out(out(0), &idx)?]
            }
        }
        "embedding_dense_backward" => {
            let (g, idx) = (a.t(0)?, a.t(1)?);
            let (n, pad, scale) = (a.int(2)?, a.int(3)?, a.bool(4)?);
            if first {
                vec![Tensor::f_embedding_dense_backward(g, idx, n, pad, scale)?]
            } else {
                vec![Tensor::f_embedding_dense_backward_out(
                    out(0),
                    g,
                    idx,
                    n,
                    pad,
                    scale,
                )?]
            }
        }
        "_softmax" | "_log_softmax" => {
            let (x, dim, half) = (a.t(0)?, a.int(1)?, a.bool(2)?);
            match (op, first) {
                ("_softmax", true) => vec![x.f_internal_softmax(dim, half)?],
                ("_softmax", false) => vec![x.f_internal_softmax_out(out(0), dim, half)?],
                (_, true) => vec![x.f_internal_log_softmax(dim, half)?],
                (_, false) => vec![x.f_internal_log_softmax_out(out(0), dim, half)?],
            }
        }
        "_softmax_backward_data" | "_log_softmax_backward_data" => {
            let (g, y, dim) = (a.t(0)?, a.t(1)?, a.int(2)?);
            let kind = a.opt_kind(3)?.unwrap_or(g.kind());
            match (op, first) {
                ("_softmax_backward_data", true) => {
                    vec![Tensor::f_internal_softmax_backward_data(g, y, dim, kind)?]
                }
                ("_softmax_backward_data", false) => {
                    vec![Tensor::f_internal_softmax_backward_data_out(
                        out(0),
                        g,
                        y,
                        dim,
                        kind,
                    )?]
                }
                (_, true) => vec![Tensor::f_internal_log_softmax_backward_data(
                    g, y, dim, kind,
                )?],
                (_, false) => vec![Tensor::f_internal_log_softmax_backward_data_out(
                    out(0),
                    g,
                    y,
                    dim,
                    kind,
                )?],
            }
        }
        "native_layer_norm" => {
            let x = a.t(0)?;
            let shape = a.ints(1)?;
            let (w, b, eps) = (a.opt_t(2)?, a.opt_t(3)?, a.float(4)?);
            let (o0, o1, o2) = if first {
                x.f_native_layer_norm(shape, w, b, eps)?
            } else {
                x.f_native_layer_norm_out(out(0), out(1), out(2), shape, w, b, eps)?
            };
            vec![o0, o1, o2]
        }
        "native_dropout" => {
            let (x, p) = (a.t(0)?, a.float(1)?);
            let train = a.v.len() > 2 && a.bool(2)?;
            let (o, m) = x.f_native_dropout(p, train)?;
            vec![o, m]
        }
        "native_dropout_backward" => {
            let (g, m, scale) = (a.t(0)?, a.t(1)?, a.float(2)?);
            if first {
                vec![Tensor::f_native_dropout_backward(g, m, scale)?]
            } else {
                vec![Tensor::f_native_dropout_backward_out(out(0), g, m, scale)?]
            }
        }
        "max_pool2d_with_indices" => {
            let x = a.t(0)?;
            let (k, s, p, d) = (a.ints(1)?, a.ints(2)?, a.ints(3)?, a.ints(4)?);
            let ceil = a.bool(5)?;
            let (o, i) = if first {
                x.f_max_pool2d_with_indices(k, s, p, d, ceil)?
            } else {
                x.f_max_pool2d_with_indices_out(out(0), out(1), k, s, p, d, ceil)?
            };
            vec![o, i]
        }
        "nll_loss_backward" => {
            let (g, x, target, w) = (a.t(0)?, a.t(1)?, a.t(2)?, a.opt_t(3)?);
            let reduction = match a.int(4)? {
                0 => tch::Reduction::None,
                1 => tch::Reduction::Mean,
                2 => tch::Reduction::Sum,
                r => return Err(a.bad(4, &format!("a reduction (got {r})"))),
            };
            let (ignore, total) = (a.int(5)?, a.t(6)?);
            if first {
                vec![x.f_nll_loss_backward(g, target, w, reduction, ignore, total)?]
            } else {
                vec![x.f_nll_loss_backward_grad_input(
                    out(0),
                    g,
                    target,
                    w,
                    reduction,
                    ignore,
                    total,
                )?]
            }
        }
        "cudnn_convolution" => {
            let (x, w) = (a.t(0)?, a.t(1)?);
            let (p, s, d) = (a.ints(2)?, a.ints(3)?, a.ints(4)?);
            let groups = a.int(5)?;
            let (bench, det, tf32) = (a.bool(6)?, a.bool(7)?, a.bool(8)?);
            if first {
                vec![x.f_cudnn_convolution(w, p, s, d, groups, bench, det, tf32)?]
            } else {
                vec![x.f_cudnn_convolution_out(out(0), w, p, s, d, groups, bench, det, tf32)?]
            }
        }
        "cudnn_batch_norm" => {
            let x = a.t(0)?;
            let w = a.t(1)?;
            let (b, rm, rv) = (a.opt_t(2)?, a.opt_t(3)?, a.opt_t(4)?);
            let (train, momentum, eps) = (a.bool(5)?, a.float(6)?, a.float(7)?);
            let (o0, o1, o2, o3) = x.f_cudnn_batch_norm(w, b, rm, rv, train, momentum, eps)?;
            vec![o0, o1, o2, o3]
        }
        "mm" | "bmm" => {
            let (x, y) = (a.t(0)?, a.t(1)?);
            match (op, first) {
                ("mm", true) => vec![x.f_mm(y)?],
                ("mm", false) => vec![x.f_mm_out(out(0), y)?],
                (_, true) => vec![x.f_bmm(y)?],
                (_, false) => vec![x.f_bmm_out(out(0), y)?],
            }
        }
        "addmm" | "baddbmm" => {
            let (c, x, y) = (a.t(0)?, a.t(1)?, a.t(2)?);
            match (op, first) {
                ("addmm", true) => vec![c.f_addmm(x, y)?],
                ("addmm", false) => vec![c.f_addmm_out(out(0), x, y)?],
                (_, true) => vec![c.f_baddbmm(x, y, 1.0, 1.0)?],
                (_, false) => vec![c.f_baddbmm_out(out(0), x, y)?],
            }
        }
        "native_layer_norm_backward" => dispatch(op, v, &[Ret::T, Ret::T, Ret::T])?,
        "nll_loss_forward" => dispatch(op, v, &[Ret::T, Ret::T])?,
        "_cudnn_attention_forward" => {
            // libtorch 2.11's boxed dispatcher pairs mixed-type returns with the wrong
            // schema types, and tch binds no forward: the op is reached the way the model
            // reached it, through scaled_dot_product_attention, whose backend selection
            // picks cuDNN for the same shapes, dtypes and strides. The log-sum-exp is
            // computed only for inputs that require grad, so `compute_log_sumexp` maps to
            // that flag.
            let (q, k, val) = (a.t(0)?, a.t(1)?, a.t(2)?);
            if a.opt_t(4)?.is_some() || a.opt_t(5)?.is_some() {
                return Err(a.bad(4, "None (nested-tensor sequence offsets are not replayed)"));
            }
            let bias = a.opt_t(3)?;
            let (lse, p, causal) = (a.bool(8)?, a.float(9)?, a.bool(10)?);
            let scale = match a.v.get(12) {
                Some(Value::None) | None => None,
                _ => Some(a.float(12)?),
            };
            let q = if lse {
                q.f_set_requires_grad(true)?
            } else {
                q.shallow_clone()
            };
            vec![Tensor::f_scaled_dot_product_attention(
                &q, k, val, bias, p, causal, scale, false,
            )?]
        }
        "_cudnn_attention_backward" => {
            // Tensors the schema takes as plain `Tensor` but the trace recorded as None are
            // passed undefined, as the autograd formula passes them.
            let undefined = Tensor::new();
            let or_undefined = |i: usize| -> Result<&Tensor, tch::TchError> {
                Ok(a.opt_t(i)?.unwrap_or(&undefined))
            };
            let scale = match a.v.get(15) {
                Some(Value::None) | None => None,
                _ => Some(a.float(15)?),
            };
            let (g0, g1, g2) = Tensor::f_internal_cudnn_attention_backward(
                a.t(0)?,
                a.t(1)?,
                a.t(2)?,
                a.t(3)?,
                a.t(4)?,
                a.t(5)?,
                or_undefined(6)?,
                or_undefined(7)?,
                or_undefined(8)?,
                or_undefined(9)?,
                or_undefined(10)?,
                a.int(11)?,
                a.int(12)?,
                a.float(13)?,
                a.bool(14)?,
                scale,
            )?;
            vec![g0, g1, g2]
        }
        other => {
            return Err(tch::TchError::Kind(format!(
                "aten::{other} has no libtorch binding in kc"
            )))
        }
    };
    Ok(r)
}

/// What a dispatcher-called op returns at each stack position. libtorch 2.11 converts the
/// returns in reverse order against the schema in forward order, so only ops whose returns
/// all have one type come back intact; kc calls no other op this way.
#[derive(Copy, Clone, PartialEq)]
enum Ret {
    T,
}

/// Calls `aten::op` (default overload) through the boxed dispatcher. StableIValues: tensors
/// are owning `at::Tensor*` handles (the dispatcher takes them), numbers their bits, None 0,
/// an optional with a value a heap StableIValue that the dispatcher deletes, lists libtorch
/// list handles that it deletes.
fn dispatch(op: &str, v: &[Value], rets: &[Ret]) -> Result<Vec<Tensor>, tch::TchError> {
    let mut stack: Vec<u64> = vec![0; v.len().max(rets.len())];
    // Each tensor gets a new owning handle that the dispatcher takes over. Should the call
    // fail part-way, the handles it did not reach are leaked: an error path, a few bytes.
    let handle = |t: &Tensor| -> u64 {
        let c = t.shallow_clone();
        let p = c.as_ptr() as u64;
        std::mem::forget(c);
        p
    };
    for (i, x) in v.iter().enumerate() {
        stack[i] = match x {
            Value::Tensor(t) => handle(t),
            Value::None => 0,
            Value::Int(n) => *n as u64,
            Value::Float(f) => f.to_bits(),
            Value::Bool(b) => u64::from(*b),
            Value::Ints(l) => list(l.iter().map(|n| *n as u64))?,
            Value::Bools(l) => list(l.iter().map(|b| u64::from(*b)))?,
            Value::List(l) => list(l.iter().map(handle))?,
        };
    }
    wrap_optionals(op, &mut stack, v);
    let name = CString::new(format!("aten::{op}")).expect("op names hold no NUL");
    // SAFETY: the stack holds one StableIValue per schema argument in the encodings the
    // dispatcher's to_ivalue expects, and room for every return.
    let rc = unsafe { aoti_torch_call_dispatcher(name.as_ptr(), c"".as_ptr(), stack.as_mut_ptr()) };
    if rc != 0 {
        return Err(tch::TchError::Torch(format!(
            "aten::{op} through the dispatcher failed (libtorch printed the reason on stderr)"
        )));
    }
    let mut out = Vec::new();
    for (i, r) in rets.iter().enumerate() {
        if *r == Ret::T {
            // SAFETY: the dispatcher returned a new owning handle at this position.
            out.push(unsafe { Tensor::from_ptr(stack[i] as *mut _) });
        }
    }
    Ok(out)
}

fn list(items: impl Iterator<Item = u64>) -> Result<u64, tch::TchError> {
    let items: Vec<u64> = items.collect();
    let mut h: *mut c_void = std::ptr::null_mut();
    // SAFETY: libtorch allocates the list; each push copies a StableIValue into it.
    unsafe {
        if torch_new_list_reserve_size(items.len(), &mut h) != 0 {
            return Err(tch::TchError::Torch(
                "torch_new_list_reserve_size failed".into(),
            ));
        }
        for x in items {
            if torch_list_push_back(h, x) != 0 {
                return Err(tch::TchError::Torch("torch_list_push_back failed".into()));
            }
        }
    }
    Ok(h as u64)
}

/// Schema positions that are optional (`T?`) and hold a value in the recorded call: the
/// value moves into a heap StableIValue, as `from(std::optional<T>)` does.
fn wrap_optionals(op: &str, stack: &mut [u64], v: &[Value]) {
    let optional: &[usize] = match op {
        // (grad_out, input, normalized_shape, mean, rstd, Tensor? weight, Tensor? bias, mask)
        "native_layer_norm_backward" => &[5, 6],
        // (self, target, Tensor? weight, reduction, ignore_index)
        "nll_loss_forward" => &[2],
        _ => &[],
    };
    for &i in optional {
        if i < v.len() && !matches!(v[i], Value::None) {
            // The dispatcher frees this with C++ `delete`, which libstdc++ implements with
            // `free`; `malloc` is therefore the matching allocation.
            let layout = std::alloc::Layout::new::<u64>();
            // SAFETY: a fresh 8-byte allocation, written once before it is handed over.
            unsafe {
                let p = std::alloc::GlobalAlloc::alloc(&std::alloc::System, layout) as *mut u64;
                p.write(stack[i]);
                stack[i] = p as u64;
            }
        }
    }
}

impl Torch {
    /// Builds the unit's arguments and runs it once eagerly on `stream` (outside any
    /// capture), keeping its outputs for the out-variant invocations that follow.
    pub fn prepare(&mut self, unit: &PlanUnit, stream: *mut c_void) -> Result<(), ExecError> {
        self.prepare_placed(unit, None, stream).map(drop)
    }

    /// As [`Torch::prepare`], for one graph step whose tensors and results live in the
    /// arena at `places` (`(step, places, arena address)`): placed tensors are views over
    /// the arena, and out-variant results are written into the arena where the step's
    /// result place can hold them.
    pub fn prepare_placed(
        &mut self,
        unit: &PlanUnit,
        placed: Option<(u32, &crate::plan::types::StepPlaces, u64)>,
        stream: *mut c_void,
    ) -> Result<usize, ExecError> {
        let UnitCall::AtenOp { op, args } = &unit.call else {
            return Ok(0);
        };
        let key = (unit.id, placed.map(|p| p.0));
        if self.units.contains_key(&key) {
            return Ok(0);
        }
        let name = op.strip_prefix("aten::").unwrap_or(op);
        let call =
            aten::build(op, args, &unit.kernels).map_err(|reason| ExecError::Unreplayable {
                op: name.to_string(),
                reason,
            })?;
        set_stream(stream)?;
        // The arena address of a tensor operand of this step, if it is placed.
        let addr_of = |t: &TensorInput| -> Option<u64> {
            let (_, places, arena) = placed?;
            let k = unit.slots.iter().position(|&s| s == t.slot)?;
            let off = places.operands.get(k).copied().flatten()?;
            (placeable(t) && arena != 0).then_some(arena + off)
        };
        let make = |t: &TensorInput| match addr_of(t) {
            Some(a) => placed_tensor(t, a),
            None => make_tensor(t),
        };
        let values = call
            .args
            .iter()
            .map(|a| match a {
                CallArg::Tensor(t) => make(t).map(Value::Tensor),
                CallArg::TensorList(ts) => ts
                    .iter()
                    .map(make)
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::List),
                other => value_of(other),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| torch_err(name, e))?;
        let mut outputs = invoke(&call.op, &values, &[]).map_err(|e| torch_err(name, e))?;
        let keep = matches!(call.outputs, aten::Outputs::OutVariant(_));
        let mut moved_results = 0;
        if let (true, Some((_, places, arena))) = (keep, placed) {
            // Results move into the arena where the step's result place holds them, so the
            // op writes what its consumers read.
            for (i, out) in outputs.iter_mut().enumerate() {
                let Some(Some((off, avail))) = places.outputs.get(i) else {
                    continue;
                };
                let bytes = out.numel() as u64 * out.kind().elt_size_in_bytes() as u64;
                if arena == 0
                    || bytes > *avail
                    || !out.is_contiguous()
                    || out.device() != Device::Cuda(0)
                {
                    continue;
                }
                // SAFETY: the result place holds `avail >= bytes` bytes of the arena.
                let moved = unsafe {
                    Tensor::f_from_blob(
                        (arena + off) as *const u8,
                        &out.size(),
                        &out.stride(),
                        out.kind(),
                        Device::Cuda(0),
                    )
                }
                .map_err(|e| torch_err(name, e))?;
                *out = moved;
                moved_results += 1;
            }
        }
        self.units.insert(
            key,
            Prepared {
                call,
                values,
                outputs: if keep { outputs } else { Vec::new() },
            },
        );
        Ok(moved_results)
    }

    /// Issues one invocation of a prepared unit on `stream`: the step's placed call when
    /// `step` was prepared in place, else the unit's own.
    pub fn enqueue(
        &self,
        unit: u32,
        step: Option<u32>,
        stream: *mut c_void,
    ) -> Result<(), ExecError> {
        let p = step
            .and_then(|s| self.units.get(&(unit, Some(s))))
            .or_else(|| self.units.get(&(unit, None)))
            .ok_or_else(|| {
                ExecError::Unsupported(format!("tier-3 unit {unit} was not prepared"))
            })?;
        set_stream(stream)?;
        // Allocated results (ops without an out variant) are dropped at once: their blocks
        // go back to libtorch's cache, and the captured kernels keep their addresses.
        invoke(&p.call.op, &p.values, &p.outputs)
            .map(drop)
            .map_err(|e| torch_err(&p.call.op, e))
    }
}

fn set_stream(stream: *mut c_void) -> Result<(), ExecError> {
    // SAFETY: `stream` is a live stream of the current context, created by kc's Gpu.
    let rc = unsafe { torch_set_current_cuda_stream(stream, 0) };
    if rc != 0 {
        return Err(ExecError::Torch {
            op: "torch_set_current_cuda_stream".into(),
            message: format!("returned {rc}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_codes_follow_c10() {
        assert_eq!(kind_of_code(6).unwrap(), Kind::Float);
        assert_eq!(kind_of_code(15).unwrap(), Kind::BFloat16);
        assert!(kind_of_code(99).is_err());
    }
}
