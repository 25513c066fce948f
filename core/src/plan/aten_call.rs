//! Tier 3, the part that needs no libtorch: from an aten op recorded in a plan to a call of
//! one overload of libtorch's operator registry ([`crate::lower::aten_schema`]). The
//! recorded arguments are typed by that overload's schema (tensor, optional tensor, tensor
//! list, int, float, bool, Scalar, ScalarType, lists, strings, devices), every tensor gets a
//! fill that keeps the op's reads valid (index tensors within the dimension they index,
//! masks boolean), tensors whose dtype the trace did not record take it from the op's other
//! tensors or from the kernels the op launched, and the call says how its outputs are
//! provided: libtorch's own `.out` overload with preallocated outputs where it has a kernel
//! of its own, in place, or allocated by the op. One mechanism serves every op: the back
//! end calls the overload through libtorch's boxed dispatcher.
//!
//! The call is built once, when the plan is (`plan::build`), and stored in it
//! ([`crate::plan::types::Plan::aten_calls`]); lowering asks the same question through
//! [`crate::plan::calls::verdict`] before it gives a unit tier 3, so the tier table, the
//! plan and the executor agree on what replays.
//!
//! Invariant: `build` either returns a call whose every argument is determined by the
//! recording (or is the schema's default for a string the profiler does not record, which
//! the call lists in `assumed`), or an error saying what is missing; it never guesses a
//! number.

use crate::lower::aten_schema::{self, Recorded, Schema, SchemaType};
use crate::plan::types::{AtenArg, ElemType, TensorArg};
use serde::{Deserialize, Serialize};

/// How a tensor is filled before the op runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fill {
    /// Standard normal values (floating point data).
    Normal,
    /// Integers drawn uniformly from `0..high` (indices, targets, class ids).
    Indices { high: i64 },
    /// Random booleans (masks, conditions).
    Bool,
    /// Small random integers (integer data that is not an index).
    SmallInts,
    /// Every element 1: a Python number the op received, where no values file recorded it
    /// (1 keeps what it feeds finite: x + 1, x * 1, x / 1, x ** 1, where a random draw
    /// turned RMSNorm's `variance + eps` negative and its rsqrt NaN). A values file records
    /// the integer ones, and the plan takes them (`plan::values`).
    Ones,
    /// Appended in plan format 11 (earlier variants keep their encoding). Group offsets of a grouped GEMM: element i is (i + 1) · `total` / n, rounded down,
    /// for n elements: non-decreasing and ending at `total`, the groups as even as the
    /// sizes allow. A draw is never valid offsets: the kernel asserts on a decreasing pair
    /// and the assertion ends the CUDA context (Mixtral's `_grouped_mm`, session 15).
    Offsets { total: i64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// One argument, typed by the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CallArg {
    Tensor(TensorInput),
    /// An undefined tensor where the schema takes a plain `Tensor` (autograd formulas pass
    /// these for gradients nobody needs).
    UndefinedTensor,
    TensorList(Vec<TensorInput>),
    /// `Tensor?[]` (index): `None` where the recorded list has no tensor (the dimension is
    /// not indexed).
    OptionalTensorList(Vec<Option<TensorInput>>),
    Int(i64),
    Float(f64),
    Bool(bool),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
    BoolList(Vec<bool>),
    /// `Scalar[]` (the optimizers' per-tensor step sizes): passed as floats.
    ScalarList(Vec<f64>),
    Str(String),
    Device(String),
    None,
}

impl CallArg {
    /// The tensors it passes, in order (a list's present entries), as
    /// [`super::types::AtenArg::tensors`] gives a recorded argument's.
    pub fn tensors(&self) -> Vec<&TensorInput> {
        match self {
            CallArg::Tensor(t) => vec![t],
            CallArg::TensorList(ts) => ts.iter().collect(),
            CallArg::OptionalTensorList(ts) => ts.iter().flatten().collect(),
            _ => Vec::new(),
        }
    }

    /// [`CallArg::tensors`], to change them (their fills).
    pub fn tensors_mut(&mut self) -> Vec<&mut TensorInput> {
        match self {
            CallArg::Tensor(t) => vec![t],
            CallArg::TensorList(ts) => ts.iter_mut().collect(),
            CallArg::OptionalTensorList(ts) => ts.iter_mut().flatten().collect(),
            _ => Vec::new(),
        }
    }
}

/// How the op's outputs come to exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outputs {
    /// Call this `.out` overload ("out") with outputs preallocated (shapes from one eager
    /// run before capture), so nothing allocates while the graph is captured.
    OutVariant(String),
    /// The op writes into its arguments (`add_`, or the model's own `out=` call).
    InPlace,
    /// The op allocates its outputs (no `.out` overload with a kernel of its own): inside
    /// a capture libtorch serves them from the graph's private pool.
    Allocates,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AtenCall {
    /// The op without its namespace ("mm", "native_layer_norm").
    pub op: String,
    /// The overload the recorded call resolved to ("" for the default, "Tensor", ...).
    pub overload: String,
    pub args: Vec<CallArg>,
    pub outputs: Outputs,
    /// Schema defaults taken for arguments the profiler does not record (strings).
    pub assumed: Vec<String>,
}

impl AtenCall {
    /// Whether the call writes its argument `arg`: the schema marks it `Tensor(a!)` (`add_`'s
    /// self, `_index_put_impl_`'s, a model's own `out=` tensor).
    pub fn writes(&self, arg: usize) -> bool {
        writes(&self.op, &self.overload, arg)
    }

    /// Whether the call writes integer or boolean data into one of its arguments (an
    /// in-place op on positions, bucket indices, counters or masks). Run twice where the
    /// model runs it once, such a step leaves values that other steps index memory with
    /// and the model never held (T5's relative-position buckets, `add_` on int64).
    pub fn writes_integers(&self) -> bool {
        self.args
            .iter()
            .enumerate()
            .any(|(i, a)| self.writes(i) && a.tensors().iter().any(|t| !is_float(t.dtype)))
    }

    /// "aten::add.Tensor".
    pub fn schema_name(&self) -> String {
        if self.overload.is_empty() {
            format!("aten::{}", self.op)
        } else {
            format!("aten::{}.{}", self.op, self.overload)
        }
    }
}

fn recorded(a: &AtenArg) -> Recorded<'_> {
    match a {
        AtenArg::Tensor(_) => Recorded::Tensor,
        AtenArg::TensorList(_) | AtenArg::OptionalTensorList(_) => Recorded::TensorList,
        AtenArg::Scalar { value, .. } => Recorded::Scalar(value),
        AtenArg::ScalarList { value, .. } => Recorded::ScalarList(value),
        AtenArg::None => Recorded::None,
        AtenArg::Other { ty } => Recorded::Other(ty),
    }
}

/// Whether kc's tier-3 executor can call `op` ("aten::mm") as recorded: lowering asks this,
/// so the tier table never promises an op exec would then report as not executed. It
/// resolves the overload and checks that every argument the schema needs was recorded;
/// what needs the plan (dtype inference, index ranges) [`build`] decides.
pub fn op_supported(op: &str, args: &[kc_ir::OpArg]) -> Result<(), String> {
    if !op.starts_with("aten::") {
        return Err(format!("{op} is not an aten op"));
    }
    let rec: Vec<Recorded> = args.iter().map(Recorded::of).collect();
    let schema = aten_schema::resolve(op, &rec)?.schema;
    for (i, (a, r)) in schema.args.iter().zip(&rec).enumerate() {
        if let Recorded::None = r {
            absent(i, a)?;
        }
        if let (Recorded::TensorList, kc_ir::OpArg::TensorList(ts)) = (r, &args[i]) {
            if ts.is_empty() {
                return Err(no_list_shapes(i));
            }
        }
    }
    Ok(())
}

fn no_list_shapes(i: usize) -> String {
    format!(
        "argument {i}: a tensor list recorded without its tensors' shapes (an Execution \
         Trace records them: --shapes ET)"
    )
}

/// What an argument the profiler recorded as absent becomes, or why it cannot be known.
fn absent(i: usize, a: &aten_schema::SchemaArg) -> Result<CallArg, String> {
    Ok(match &a.ty {
        SchemaType::Optional(_) | SchemaType::Generator => CallArg::None,
        SchemaType::Tensor => CallArg::UndefinedTensor,
        // The op's tensors are on the GPU it ran on.
        SchemaType::Device => CallArg::Device("cuda".into()),
        SchemaType::Str => match &a.default {
            Some(d) => CallArg::Str(unquote(d)),
            None => {
                return Err(format!(
                    "argument {i} (str {}) was not recorded (Kineto records no strings; an \
                     Execution Trace does: --shapes ET)",
                    a.name
                ))
            }
        },
        t => return Err(format!("argument {i} ({t} {}) was not recorded", a.name)),
    })
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').trim_matches('\'').to_string()
}

fn parse_int(v: &str) -> Result<i64, String> {
    let v = v.trim();
    match v {
        "True" | "true" => Ok(1),
        "False" | "false" => Ok(0),
        _ => v
            .parse::<i64>()
            .map_err(|_| format!("{v:?} is not an integer")),
    }
}

fn parse_float(v: &str) -> Result<f64, String> {
    let v = v.trim();
    match v {
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" => Ok(f64::NAN),
        // Rust reads "1." and "1e-05" as Python prints them.
        _ => v
            .parse::<f64>()
            .map_err(|_| format!("{v:?} is not a number")),
    }
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.trim() {
        "True" | "true" | "1" => Ok(true),
        "False" | "false" | "0" => Ok(false),
        other => Err(format!("{other:?} is not a bool")),
    }
}

/// A `Scalar`: an integer, a float or a bool, as its text says.
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
            } else {
                CallArg::Float(
                    parse_float(v)
                        .map_err(|_| format!("a {ty} argument has the unreadable value {v:?}"))?,
                )
            }
        }
    })
}

fn list_items(value: &str) -> Vec<&str> {
    value
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// A scalar typed by its schema type.
fn typed_scalar(t: &SchemaType, value: &str) -> Result<CallArg, String> {
    if value.trim().is_empty() {
        return Err("recorded without its value".into());
    }
    Ok(match t {
        SchemaType::Int
        | SchemaType::SymInt
        | SchemaType::ScalarType
        | SchemaType::Layout
        | SchemaType::MemoryFormat => CallArg::Int(parse_int(value)?),
        SchemaType::Float => CallArg::Float(parse_float(value)?),
        SchemaType::Bool => CallArg::Bool(parse_bool(value)?),
        SchemaType::Scalar => parse_scalar("Scalar", value)?,
        SchemaType::Str => CallArg::Str(unquote(value)),
        SchemaType::Device => CallArg::Device(unquote(value)),
        SchemaType::List(e, _) if matches!(**e, SchemaType::Int | SchemaType::SymInt) => {
            CallArg::IntList(vec![parse_int(value)?])
        }
        other => return Err(format!("a scalar where the schema takes {other}")),
    })
}

fn typed_list(t: &SchemaType, value: &str) -> Result<CallArg, String> {
    let items = list_items(value);
    let SchemaType::List(e, _) = t else {
        return Err(format!("a list where the schema takes {t}"));
    };
    fn each<T>(items: &[&str], f: fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
        items.iter().map(|x| f(x)).collect()
    }
    Ok(match e.inner() {
        SchemaType::Int | SchemaType::SymInt => CallArg::IntList(each(&items, parse_int)?),
        SchemaType::Float => CallArg::FloatList(each(&items, parse_float)?),
        SchemaType::Bool => CallArg::BoolList(each(&items, parse_bool)?),
        SchemaType::Scalar => CallArg::ScalarList(each(&items, parse_float)?),
        // An empty tensor list the Execution Trace recorded as a value ("[]": AdamW's
        // `max_exp_avg_sqs` without amsgrad): an empty list, not an unknown one.
        SchemaType::Tensor if items.is_empty() && e.is_optional() => {
            CallArg::OptionalTensorList(Vec::new())
        }
        SchemaType::Tensor if items.is_empty() => CallArg::TensorList(Vec::new()),
        other => return Err(format!("a list of {other} is not replayed yet")),
    })
}

/// Whether overload `overload` of ATen op `op` (without its namespace: "add_") writes its
/// argument `arg`, as its schema says.
fn writes(op: &str, overload: &str, arg: usize) -> bool {
    aten_schema::registry()
        .find(&format!("aten::{op}"), overload)
        .and_then(|s| s.args.get(arg))
        .is_some_and(|a| a.mutable)
}

/// Whether an element type is a floating-point one (a tensor the replay fills with normal
/// values, never an index).
/// Whether a tensor may live in plan memory: floating-point data the op reads as drawn
/// (not indices or masks, which need valid values) on the GPU. fp8 tensors are drawn in
/// half precision and converted by the executor; they keep their own.
pub fn placeable(t: &TensorInput) -> bool {
    t.fill == Fill::Normal
        && !t.host_scalar
        && is_float(t.dtype)
        && !matches!(t.dtype, ElemType::F8E4M3 | ElemType::F8E5M2)
}

/// Whether output `output` of `op` (without its namespace) holds valid indices into the
/// op's own input whatever values that input holds: `topk`'s and `sort`'s indices, an
/// `argmax`'s. A step that reads such a result as indices needs its producer to have run
/// once, not on the model's values, so [`crate::plan::schedule::steps_run_once`] does not
/// follow the data back past it (the routing of a mixture of experts leads back through
/// `topk` to every layer before it, a CNN's pooling backward through its forward pooling's
/// indices). An op's other outputs, and ops not listed, are followed.
pub fn indices_in_range_whatever_input(op: &str, output: u32) -> bool {
    match op {
        "topk"
        | "sort"
        | "max"
        | "min"
        | "kthvalue"
        | "mode"
        | "median"
        | "nanmedian"
        | "cummax"
        | "cummin"
        | "max_pool2d_with_indices"
        | "max_pool3d_with_indices"
        | "adaptive_max_pool2d"
        | "adaptive_max_pool3d" => output == 1,
        "argmax" | "argmin" | "argsort" => output == 0,
        _ => false,
    }
}

/// Whether a step's read that the plan bound to an earlier step's result
/// ([`crate::plan::types::BoundRead`]) takes that result, as the executor hands it over
/// and [`crate::plan::schedule::step_accesses`] follows it. Recorded values win, but not
/// over a tensor the step writes in place (in the model it modified the result its
/// producer had just computed, afresh every iteration); a float tensor that could be
/// placed but was not (`placed`: it is a view of the image) reads its own region.
pub fn takes_bound_result(t: &TensorInput, recorded: bool, written: bool, placed: bool) -> bool {
    (written || !recorded) && (placed || !placeable(t))
}

pub fn is_float(d: ElemType) -> bool {
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

/// Of [`HOST_SCALAR_KERNELS`], the forms whose scalar may be the op's first operand
/// (`self`): PyTorch's add and sub take `CUDAFunctorOnOther_` where `self` is the CPU
/// scalar (`CUDAFunctorOnSelf_` where `other` is), and commutative ops `AUnaryFunctor`
/// whichever it is.
const SELF_SCALAR_KERNELS: &[&str] = &["AUnaryFunctor", "CUDAFunctorOnOther_"];

/// Ops whose CUDA `.out` kernel is written by hand as the functional op into a temporary
/// and a copy into `out` (so the registry, which tells libtorch's generated out forms
/// apart, counts it a kernel of its own): called through it, the replay runs a copy the
/// model's call did not. PyTorch's `_histc_out_cuda` (aten/src/ATen/native/cuda/
/// SummaryOps.cu) is `_histc_cuda(...)` then `result.copy_(ret)`; a mixture of experts'
/// routing calls the functional `histc`, and kc's graph and its unit alone ran one copy an
/// invocation the trace does not hold (session 49, CUPTI). They allocate instead, as the
/// model did.
const OUT_KERNELS_THAT_COPY: &[&str] = &["aten::histc"];

/// How the outputs of a call of `schema` come to exist.
fn outputs_of(schema: &Schema) -> Outputs {
    if schema.name.ends_with('_') || schema.args.iter().any(|a| a.mutable) {
        return Outputs::InPlace;
    }
    if OUT_KERNELS_THAT_COPY.contains(&schema.name.as_str()) {
        return Outputs::Allocates;
    }
    match aten_schema::registry().real_out_variant(schema) {
        Some(o) => Outputs::OutVariant(o.overload.clone()),
        None => Outputs::Allocates,
    }
}

/// Builds the call of `op` ("aten::mm") with its recorded `args`. `kernels` are the names of
/// the kernels the op launched: their element types are the last resort for tensors the trace
/// recorded without a dtype, and they tell whether a 0-dim operand was a CPU scalar (Kineto
/// records no device for tensors).
pub fn build(op: &str, args: &[AtenArg], kernels: &[String]) -> Result<AtenCall, String> {
    let name = op
        .strip_prefix("aten::")
        .ok_or_else(|| format!("{op} is not an aten op"))?;
    let rec: Vec<Recorded> = args.iter().map(recorded).collect();
    let schema = aten_schema::resolve(op, &rec)?.schema;
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
        // Parsing kernel names is the costly part of building a call: only when needed.
        .or_else(|| {
            kernel_dtypes(kernels)
                .into_iter()
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
    let mut assumed = Vec::new();
    for (i, (a, s)) in args.iter().zip(&schema.args).enumerate() {
        let at = |e: String| format!("argument {i} ({} {}): {e}", s.ty, s.name);
        out.push(match a {
            AtenArg::Tensor(t) => CallArg::Tensor(input(t, resolve(t.dtype)?)),
            AtenArg::TensorList(ts) => {
                if ts.is_empty() {
                    return Err(no_list_shapes(i));
                }
                let ts = ts
                    .iter()
                    .map(|t| Ok(input(t, resolve(t.dtype)?)))
                    .collect::<Result<Vec<_>, String>>()?;
                match &s.ty {
                    SchemaType::List(e, _) if e.is_optional() => {
                        CallArg::OptionalTensorList(ts.into_iter().map(Some).collect())
                    }
                    _ => CallArg::TensorList(ts),
                }
            }
            AtenArg::OptionalTensorList(ts) => {
                if !matches!(&s.ty, SchemaType::List(e, _) if e.is_optional()) {
                    return Err(at(
                        "a list with absent entries where the schema takes none".into()
                    ));
                }
                CallArg::OptionalTensorList(
                    ts.iter()
                        .map(|t| {
                            t.as_ref()
                                .map(|t| Ok(input(t, resolve(t.dtype)?)))
                                .transpose()
                        })
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
            AtenArg::Scalar { value, .. } => typed_scalar(s.ty.inner(), value).map_err(at)?,
            AtenArg::ScalarList { value, .. } => typed_list(s.ty.inner(), value).map_err(at)?,
            AtenArg::None => {
                let v = absent(i, s)?;
                if let (SchemaType::Str, CallArg::Str(d)) = (&s.ty, &v) {
                    assumed.push(format!("{}={d:?}", s.name));
                }
                v
            }
            AtenArg::Other { .. } if *s.ty.inner() == SchemaType::Device => {
                CallArg::Device("cuda".into())
            }
            AtenArg::Other { ty } => {
                return Err(at(format!("recorded as {ty:?}, which kc does not read")))
            }
        });
    }
    // A 0-dim operand after the first one, beside tensors with dimensions, was a CPU
    // scalar when the kernel says so. The first operand (`self`) was one only where the
    // kernel is the form for a scalar `self` (`1 - x` traced as `aten::sub(1, x)`:
    // `CUDAFunctorOnOther_add`; a commutative op's `AUnaryFunctor` either way): on a GPU
    // it took another kernel, with a cast for each element, and BLOOM's GELU backward
    // launched it where the trace holds a vectorized one (sessions 37-46).
    if host_scalar_kernel {
        let dimensioned = out
            .iter()
            .any(|a| matches!(a, CallArg::Tensor(t) if !t.dims.is_empty()));
        let self_scalar_kernel = kernels
            .iter()
            .any(|k| SELF_SCALAR_KERNELS.iter().any(|m| k.contains(m)));
        for (i, a) in out.iter_mut().enumerate() {
            if let CallArg::Tensor(t) = a {
                if t.dims.is_empty() && dimensioned && (i > 0 || self_scalar_kernel) {
                    t.host_scalar = true;
                    t.fill = Fill::Ones;
                }
            }
        }
    }
    constrain(name, &mut out)?;
    Ok(AtenCall {
        op: name.to_string(),
        overload: schema.overload.clone(),
        args: out,
        outputs: outputs_of(schema),
        assumed,
    })
}

/// The values of [`Fill::Offsets`]: `n` cumulative group ends spread evenly over `total`.
pub fn even_offsets(total: i64, n: usize) -> Vec<i64> {
    let n64 = n.max(1) as i64;
    (1..=n as i64).map(|i| i * total.max(0) / n64).collect()
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
            if matches!(fill, Fill::Indices { .. } | Fill::Offsets { .. }) && is_float(t.dtype) {
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

/// Values that an op reads as indices or masks: knowledge of what the op does with them,
/// which no schema states.
fn constrain(op: &str, a: &mut [CallArg]) -> Result<(), String> {
    match op {
        // embedding(weight, indices, ...): rows of the weight.
        "embedding" => {
            let high = dim_of(a, 0, 0)?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // index_select(self, dim, index), gather(self, dim, index, ...), scatter and
        // scatter_add (self, dim, index, src): along `dim`.
        "index_select" | "gather" | "scatter" | "scatter_" | "scatter_add" | "scatter_add_" => {
            let dim = int_at(a, 1).ok_or("argument 1 (dim) is not an integer")?;
            let high = dim_of(a, 0, dim)?;
            set_fill(a, 2, Fill::Indices { high })
        }
        // index_add(self, dim, index, source, ...), index_copy, index_fill.
        "index_add" | "index_add_" | "index_copy" | "index_copy_" | "index_fill"
        | "index_fill_" => {
            let dim = int_at(a, 1).ok_or("argument 1 (dim) is not an integer")?;
            let high = dim_of(a, 0, dim)?;
            set_fill(a, 2, Fill::Indices { high })
        }
        // embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad).
        "embedding_dense_backward" => {
            let high = int_at(a, 2).ok_or("argument 2 (num_weights) is not an integer")?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // nll_loss_forward(self, target, ...), nll_loss2d_forward: class ids of self's
        // class dimension.
        "nll_loss_forward" | "nll_loss2d_forward" => {
            let high = dim_of(a, 0, if op == "nll_loss_forward" { -1 } else { 1 })?;
            set_fill(a, 1, Fill::Indices { high })
        }
        // nll_loss_backward(grad, self, target, ...).
        "nll_loss_backward" | "nll_loss2d_backward" => {
            let high = dim_of(a, 1, if op == "nll_loss_backward" { -1 } else { 1 })?;
            set_fill(a, 2, Fill::Indices { high })
        }
        // index(self, indices) and index_put(self, indices, values, ...): a boolean mask or
        // per-dimension index tensors.
        "index" | "index_put" | "index_put_" | "_index_put_impl_" => {
            let dims: Vec<i64> = match a.first() {
                Some(CallArg::Tensor(t)) => t.dims.clone(),
                _ => return Err("argument 0 is not a tensor".into()),
            };
            // Entry k indexes dimension k (an absent entry leaves its dimension whole).
            let entries: Vec<Option<&mut TensorInput>> = match a.get_mut(1) {
                Some(CallArg::OptionalTensorList(ts)) => {
                    ts.iter_mut().map(Option::as_mut).collect()
                }
                Some(CallArg::TensorList(ts)) => ts.iter_mut().map(Some).collect(),
                _ => return Err("the trace did not record its index tensors".into()),
            };
            for (k, t) in entries.into_iter().enumerate() {
                let Some(t) = t else { continue };
                t.fill = if t.dtype == ElemType::Bool {
                    Fill::Bool
                } else {
                    Fill::Indices {
                        high: *dims.get(k).ok_or("more index tensors than dimensions")?,
                    }
                };
            }
            Ok(())
        }
        // _grouped_mm(self, mat2, offs, ...): offsets along the grouped dimension, which
        // the operands' ranks tell (2-D x 3-D: self's rows; 3-D x 2-D: mat2's columns;
        // 2-D x 2-D: the shared K). 3-D x 3-D takes none.
        "_grouped_mm" => {
            let rank = |i: usize| match a.get(i) {
                Some(CallArg::Tensor(t)) => Some(t.dims.len()),
                _ => None,
            };
            if !matches!(a.get(2), Some(CallArg::Tensor(_))) {
                return Ok(());
            }
            let total = match (rank(0), rank(1)) {
                (Some(2), Some(3)) => dim_of(a, 0, 0)?,
                (Some(3), Some(2)) => dim_of(a, 1, 1)?,
                (Some(2), Some(2)) => dim_of(a, 0, 1)?,
                _ => return Ok(()),
            };
            set_fill(a, 2, Fill::Offsets { total })
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
mod tests;
