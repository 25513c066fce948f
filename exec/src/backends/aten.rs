//! Tier 3 on the GPU: replays the aten op behind a unit through libtorch, on kc's own CUDA
//! stream, so that the op's kernels land in the same CUDA graph as tiers 1 and 2 (or in the
//! unit's own graph in isolated mode). The call itself (overload, typed arguments, output
//! policy) is decided by [`kc_core::plan::aten_call::build`] without libtorch; this file only turns it
//! into tensors and one call of libtorch's boxed dispatcher, through the C++ shim
//! (`torch_shim.cpp`): one mechanism for every op.
//!
//! Per unit, before any capture: the argument tensors are created once on the GPU with the
//! recorded sizes, strides and dtypes (their storage filled through a contiguous base, so
//! expanded and overlapping views work), CPU scalars where the kernels showed one, and the op
//! runs once eagerly in its functional form. Its results become the preallocated outputs
//! that every later invocation writes through libtorch's `.out` overload; ops without one
//! allocate, which inside a capture libtorch serves from the graph's private pool (captures
//! go through `at::cuda::CUDAGraph`, [`capture_begin`], which also registers libtorch's CUDA
//! generator so that dropout and other RNG ops capture).
//!
//! Invariant: every libtorch error becomes an [`ExecError`] naming the op; an op runs only on
//! the stream it was handed (the thread's current libtorch stream is set before each call).

use super::SteeringReads;
use crate::ExecError;
use kc_core::plan::aten_call::{self, AtenCall, CallArg, Fill, TensorInput};
use kc_core::plan::types::{ElemType, PlanUnit, UnitCall};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use tch::{Device, Kind, Tensor};

extern "C" {
    /// Exported by libtorch_cuda (torch/csrc/stable/c/shim.h): makes an external stream the
    /// calling thread's current stream for `device_index`.
    fn torch_set_current_cuda_stream(stream: *mut c_void, device_index: i32) -> i32;
    /// torch_shim.cpp: calls `name.overload` through the boxed dispatcher; every tensor it
    /// returns comes back as a new owning `at::Tensor*`.
    fn kc_call_op(
        name: *const c_char,
        overload: *const c_char,
        args: *const KcArg,
        nargs: usize,
        outs: *mut *mut c_void,
        max_outs: usize,
        n_outs: *mut usize,
        err: *mut c_char,
        err_len: usize,
    ) -> i32;
    fn kc_graph_begin(stream: *mut c_void, err: *mut c_char, err_len: usize) -> *mut c_void;
    /// torch_shim.cpp: libtorch's TF32 settings for cuBLAS and cuDNN.
    fn kc_set_math(tf32_cublas: i32, tf32_cudnn: i32);
    fn kc_graph_end(
        graph: *mut c_void,
        stream: *mut c_void,
        raw: *mut *mut c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> i32;
    fn kc_graph_free(graph: *mut c_void);
    /// torch_shim.cpp: libtorch's cached blocks back to the driver (freed graphs' pools).
    fn kc_empty_cache();
}

/// The GPU this process replays on (a job's rank replays on its `LOCAL_RANK`): libtorch's
/// tensors and streams must be on the device whose context kc made current.
static DEVICE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sets the device libtorch's tensors and streams use (before any unit is prepared).
pub fn set_device(ordinal: u32) {
    DEVICE.store(ordinal as usize, std::sync::atomic::Ordering::Relaxed);
}

fn device() -> usize {
    DEVICE.load(std::sync::atomic::Ordering::Relaxed)
}

/// One argument as torch_shim.cpp reads it (`struct KcArg`).
#[repr(C)]
struct KcArg {
    tag: i32,
    reserved: i32,
    i: i64,
    f: f64,
    ptr: *const c_void,
    len: u64,
}

const KC_NONE: i32 = 0;
const KC_TENSOR: i32 = 1;
const KC_UNDEFINED_TENSOR: i32 = 2;
const KC_INT: i32 = 3;
const KC_DOUBLE: i32 = 4;
const KC_BOOL: i32 = 5;
const KC_INTS: i32 = 6;
const KC_DOUBLES: i32 = 7;
const KC_BOOLS: i32 = 8;
const KC_TENSORS: i32 = 9;
const KC_OPTIONAL_TENSORS: i32 = 10;
const KC_STR: i32 = 11;
const KC_DEVICE: i32 = 12;
const KC_SCALARS: i32 = 13;

/// An argument made concrete.
enum Value {
    Tensor(Tensor),
    Undefined,
    List(Vec<Tensor>),
    /// `Tensor?[]`: `None` for an absent entry.
    OptionalList(Vec<Option<Tensor>>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Bools(Vec<u8>),
    Scalars(Vec<f64>),
    Str(String),
    Device(String),
    None,
}

struct Prepared {
    call: AtenCall,
    values: Vec<Value>,
    /// The outputs of the eager run, written again by every out-variant invocation.
    outputs: Vec<Tensor>,
    /// Tensors of this step that read a result an earlier step allocated
    /// ([`kc_core::plan::types::BoundRead`]): at each invocation they become views of that
    /// result, when it is live.
    rebinds: Vec<Rebind>,
}

/// Where a bound read sits in a prepared call, and what it reads.
struct Rebind {
    /// The argument, and the position in it when it is a list.
    arg: usize,
    item: Option<usize>,
    producer_step: u32,
    output: usize,
    byte_offset: u64,
    input: TensorInput,
}

/// A shallow copy of an argument: tensors share their storage.
fn shallow(v: &Value) -> Value {
    match v {
        Value::Tensor(t) => Value::Tensor(t.shallow_clone()),
        Value::Undefined => Value::Undefined,
        Value::List(ts) => Value::List(ts.iter().map(Tensor::shallow_clone).collect()),
        Value::OptionalList(ts) => Value::OptionalList(
            ts.iter()
                .map(|t| t.as_ref().map(Tensor::shallow_clone))
                .collect(),
        ),
        Value::Int(n) => Value::Int(*n),
        Value::Float(x) => Value::Float(*x),
        Value::Bool(b) => Value::Bool(*b),
        Value::Ints(l) => Value::Ints(l.clone()),
        Value::Floats(l) => Value::Floats(l.clone()),
        Value::Bools(l) => Value::Bools(l.clone()),
        Value::Scalars(l) => Value::Scalars(l.clone()),
        Value::Str(s) => Value::Str(s.clone()),
        Value::Device(s) => Value::Device(s.clone()),
        Value::None => Value::None,
    }
}

/// A view of `result` at `byte_offset` with the reader's sizes, strides and type, when the
/// result is a defined tensor on the replay's GPU whose bytes hold the view's furthest
/// element.
fn view_of_result(result: &Tensor, byte_offset: u64, t: &TensorInput) -> Option<Tensor> {
    if !result.defined() || result.device() != Device::Cuda(device()) {
        return None;
    }
    let kind = kind_of(t.dtype).ok()?;
    // The model's reader read the tensor the producer returned, in its type: a plan that
    // typed the read otherwise keeps the read on its detached region.
    if result.kind() != kind {
        return None;
    }
    let have = kc_ir::TensorSpec::storage_elems(&result.size(), &result.stride())
        * result.kind().elt_size_in_bytes() as u64;
    let need =
        kc_ir::TensorSpec::storage_elems(&t.dims, &t.strides) * kind.elt_size_in_bytes() as u64;
    if result.stride().iter().any(|&s| s < 0) || byte_offset.checked_add(need)? > have {
        return None;
    }
    // SAFETY: the view's furthest element lies inside the result's bytes (checked above),
    // and the result is kept alive (`Torch::live`) until its last reader has been issued.
    unsafe { view_at(t, result.data_ptr() as u64 + byte_offset) }.ok()
}

/// Tier-3 units prepared for replay: per unit on its own tensors (`None`), and per graph
/// step on that step's places in the memory image.
#[derive(Default)]
pub struct Torch {
    units: HashMap<(u32, Option<u32>), Prepared>,
    /// Every tier-3 unit's call, as the plan stores it (by unit id).
    calls: HashMap<u32, AtenCall>,
    /// The recorded values the plan fills tensors with (per step and per unit).
    values: kc_core::plan::values::PlanValues,
    /// Tensors filled from recorded values, and those whose values could not be written
    /// (bytes that are not the view's elements, a view that overlaps itself other than by
    /// broadcasting), for the results' notes: of units' own calls, then of graph steps.
    filled: [(usize, usize); 2],
    /// The plan's bound reads by reading step, and per producing step its last reader.
    bound: HashMap<u32, Vec<kc_core::plan::types::BoundRead>>,
    last_reader: HashMap<u32, u32>,
    /// Results of producing steps, kept until their last reader is issued (inside a
    /// capture they come from the graph's pool, as the model's did), with the capture they
    /// were issued in: a reader binds only to a result of its own capture (or of the same
    /// eager pass), never to one a unit captured alone left behind.
    live: std::cell::RefCell<HashMap<u32, (u64, Vec<Tensor>)>>,
    /// Counts the captures begun; results of another capture are never read.
    capture_generation: std::cell::Cell<u64>,
    /// Bound reads issued on the producer's result, those that fell back to their
    /// detached region (no live result, or one that does not hold the view), and integer or
    /// boolean ones kept on their stand-in by choice ([`SteeringReads::AsAlone`]).
    bound_issued: std::cell::Cell<(u64, u64, u64)>,
    /// Where a capture's integer and boolean bound reads come from.
    steering: std::cell::Cell<SteeringReads>,
}

/// A tensor over device memory at `addr`: a view with the call's sizes, strides and type
/// that owns nothing.
///
/// # Safety
/// The bytes from `addr` hold the view's furthest element and stay allocated while the
/// view (or a call captured with it) is used.
unsafe fn view_at(t: &TensorInput, addr: u64) -> Result<Tensor, tch::TchError> {
    let kind = kind_of(t.dtype).map_err(tch::TchError::Kind)?;
    // SAFETY: as the caller guarantees.
    unsafe {
        Tensor::f_from_blob(
            addr as *const u8,
            &t.dims,
            &t.strides,
            kind,
            Device::Cuda(device()),
        )
    }
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

fn make_tensor(t: &TensorInput) -> Result<Tensor, tch::TchError> {
    let kind = kind_of(t.dtype).map_err(tch::TchError::Kind)?;
    let device = if t.host_scalar {
        Device::Cpu
    } else {
        Device::Cuda(device())
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
            Fill::Ones => {
                let _ = base.f_fill_(1.0)?;
            }
            Fill::Offsets { total } => {
                let values: Vec<i64> = kc_core::plan::aten_call::even_offsets(*total, n as usize);
                let host = Tensor::f_from_slice(&values)?;
                base = host.f_to_device(device)?.f_to_kind(draw_kind)?;
            }
        }
    }
    if draw_kind != kind {
        base = base.f_to_kind(kind)?;
    }
    base.f_as_strided(t.dims.as_slice(), t.strides.as_slice(), 0)
}

/// A tensor as [`make_tensor`] makes it, its elements then overwritten with `bytes` (the
/// recorded values, row-major), and whether it took them: not when the bytes are not its
/// elements, and then the drawn values stay. An expanded view (a dimension of stride 0: an
/// attention mask broadcast over heads) overlaps itself, and every element along such a
/// dimension is the same memory: it takes the recorded values of index 0 there, which
/// the recording holds once per index, equal.
fn make_recorded(t: &TensorInput, bytes: &[u8]) -> Result<(Tensor, bool), tch::TchError> {
    let dst = make_tensor(t)?;
    let kind = kind_of(t.dtype).map_err(tch::TchError::Kind)?;
    let numel: i64 = t.dims.iter().product();
    if numel <= 0 || bytes.len() as i64 != numel * kind.elt_size_in_bytes() as i64 {
        return Ok((dst, false));
    }
    let mut src = Tensor::f_from_data_size(bytes, &t.dims, kind)?.f_to_device(dst.device())?;
    let mut target = dst.shallow_clone();
    for (d, (&n, &stride)) in t.dims.iter().zip(&t.strides).enumerate() {
        if n > 1 && stride == 0 {
            src = src.f_narrow(d as i64, 0, 1)?;
            target = target.f_narrow(d as i64, 0, 1)?;
        }
    }
    // A view that overlaps itself otherwise (an `as_strided` window) cannot be written
    // element by element: it keeps the drawn values.
    if target.f_copy_(&src).is_err() {
        return Ok((dst, false));
    }
    Ok((dst, true))
}

fn value_of(a: &CallArg) -> Result<Value, tch::TchError> {
    Ok(match a {
        CallArg::Tensor(t) => Value::Tensor(make_tensor(t)?),
        CallArg::UndefinedTensor => Value::Undefined,
        CallArg::TensorList(ts) => {
            Value::List(ts.iter().map(make_tensor).collect::<Result<_, _>>()?)
        }
        CallArg::OptionalTensorList(ts) => Value::OptionalList(
            ts.iter()
                .map(|t| t.as_ref().map(make_tensor).transpose())
                .collect::<Result<_, _>>()?,
        ),
        CallArg::Int(i) => Value::Int(*i),
        CallArg::Float(f) => Value::Float(*f),
        CallArg::Bool(b) => Value::Bool(*b),
        CallArg::IntList(v) => Value::Ints(v.clone()),
        CallArg::FloatList(v) => Value::Floats(v.clone()),
        CallArg::BoolList(v) => Value::Bools(v.iter().map(|b| u8::from(*b)).collect()),
        CallArg::ScalarList(v) => Value::Scalars(v.clone()),
        CallArg::Str(s) => Value::Str(s.clone()),
        CallArg::Device(s) => Value::Device(s.clone()),
        CallArg::None => Value::None,
    })
}

/// Calls `aten::op.overload` with `values` followed by `outs` (the preallocated outputs of
/// an out form) through the boxed dispatcher; returns every tensor the call returned.
fn call_op(
    op: &str,
    overload: &str,
    values: &[Value],
    outs: &[Tensor],
) -> Result<Vec<Tensor>, tch::TchError> {
    // Pointer arrays for tensor lists live until the call returns.
    let mut lists: Vec<Vec<*const c_void>> = Vec::new();
    let mut args: Vec<KcArg> = Vec::with_capacity(values.len() + outs.len());
    let arg = |tag: i32, i: i64, f: f64, ptr: *const c_void, len: usize| KcArg {
        tag,
        reserved: 0,
        i,
        f,
        ptr,
        len: len as u64,
    };
    let tensor_ptr = |t: &Tensor| t.as_ptr() as *const c_void;
    for v in values {
        args.push(match v {
            Value::Tensor(t) => arg(KC_TENSOR, 0, 0.0, tensor_ptr(t), 0),
            Value::Undefined => arg(KC_UNDEFINED_TENSOR, 0, 0.0, std::ptr::null(), 0),
            Value::List(ts) => {
                lists.push(ts.iter().map(tensor_ptr).collect());
                let l = lists.last().expect("just pushed");
                arg(KC_TENSORS, 0, 0.0, l.as_ptr() as *const c_void, l.len())
            }
            // An absent entry travels as a null pointer (the shim makes it `nullopt`).
            Value::OptionalList(ts) => {
                lists.push(
                    ts.iter()
                        .map(|t| t.as_ref().map_or(std::ptr::null(), tensor_ptr))
                        .collect(),
                );
                let l = lists.last().expect("just pushed");
                arg(
                    KC_OPTIONAL_TENSORS,
                    0,
                    0.0,
                    l.as_ptr() as *const c_void,
                    l.len(),
                )
            }
            Value::Int(n) => arg(KC_INT, *n, 0.0, std::ptr::null(), 0),
            Value::Float(x) => arg(KC_DOUBLE, 0, *x, std::ptr::null(), 0),
            Value::Bool(b) => arg(KC_BOOL, i64::from(*b), 0.0, std::ptr::null(), 0),
            Value::Ints(l) => arg(KC_INTS, 0, 0.0, l.as_ptr() as *const c_void, l.len()),
            Value::Floats(l) => arg(KC_DOUBLES, 0, 0.0, l.as_ptr() as *const c_void, l.len()),
            Value::Bools(l) => arg(KC_BOOLS, 0, 0.0, l.as_ptr() as *const c_void, l.len()),
            Value::Scalars(l) => arg(KC_SCALARS, 0, 0.0, l.as_ptr() as *const c_void, l.len()),
            Value::Str(s) => arg(KC_STR, 0, 0.0, s.as_ptr() as *const c_void, s.len()),
            Value::Device(s) => arg(KC_DEVICE, 0, 0.0, s.as_ptr() as *const c_void, s.len()),
            Value::None => arg(KC_NONE, 0, 0.0, std::ptr::null(), 0),
        });
    }
    for t in outs {
        args.push(arg(KC_TENSOR, 0, 0.0, tensor_ptr(t), 0));
    }
    let name = CString::new(format!("aten::{op}")).expect("op names hold no NUL");
    let overload = CString::new(overload).expect("overload names hold no NUL");
    // A foreach op returns one tensor per parameter.
    const MAX_OUTS: usize = 4096;
    let mut raw: Vec<*mut c_void> = vec![std::ptr::null_mut(); MAX_OUTS];
    let mut n = 0usize;
    let mut err = [0 as c_char; 1024];
    // SAFETY: every pointer in `args` points into `values`, `outs` or `lists`, all alive
    // until the call returns; the shim copies what it keeps and writes at most MAX_OUTS
    // owning handles into `raw` and a NUL-terminated message into `err`.
    let rc = unsafe {
        kc_call_op(
            name.as_ptr(),
            overload.as_ptr(),
            args.as_ptr(),
            args.len(),
            raw.as_mut_ptr(),
            MAX_OUTS,
            &mut n,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if rc != 0 {
        // SAFETY: the shim wrote a NUL-terminated message.
        let msg = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
        return Err(tch::TchError::Torch(msg.to_string_lossy().into_owned()));
    }
    Ok(raw[..n.min(MAX_OUTS)]
        .iter()
        // SAFETY: each handle is a new at::Tensor the shim allocated for the caller.
        .map(|p| unsafe { Tensor::from_ptr(*p as *mut _) })
        .collect())
}

/// Begins a stream capture on `stream` through libtorch's CUDAGraph (see the module
/// documentation); returns the handle [`capture_end`] takes.
///
/// # Safety
/// `stream` is a live stream of the current context that is not capturing.
pub unsafe fn capture_begin(stream: *mut c_void) -> Result<*mut c_void, ExecError> {
    let mut err = [0 as c_char; 1024];
    // SAFETY: `stream` is a live stream of the current context; the shim writes a
    // NUL-terminated message on failure.
    let g = unsafe { kc_graph_begin(stream, err.as_mut_ptr(), err.len()) };
    if g.is_null() {
        // SAFETY: as above.
        let msg = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
        return Err(ExecError::Torch {
            op: "CUDAGraph::capture_begin".into(),
            message: first_line(&msg.to_string_lossy()),
        });
    }
    Ok(g)
}

/// Ends the capture [`capture_begin`] began; returns the captured graph (a `CUgraph` that
/// the CUDAGraph object owns: free it with [`capture_free`], never destroy it).
///
/// # Safety
/// `graph` came from [`capture_begin`] on `stream` and was not freed.
pub unsafe fn capture_end(
    graph: *mut c_void,
    stream: *mut c_void,
) -> Result<*mut c_void, ExecError> {
    let mut err = [0 as c_char; 1024];
    let mut raw: *mut c_void = std::ptr::null_mut();
    // SAFETY: `graph` came from capture_begin on `stream`.
    let rc = unsafe { kc_graph_end(graph, stream, &mut raw, err.as_mut_ptr(), err.len()) };
    if rc != 0 {
        // SAFETY: the shim wrote a NUL-terminated message.
        let msg = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
        return Err(ExecError::Torch {
            op: "CUDAGraph::capture_end".into(),
            message: first_line(&msg.to_string_lossy()),
        });
    }
    Ok(raw)
}

/// Frees a CUDAGraph object (its captured graph and its memory pool).
///
/// # Safety
/// `graph` is null or came from [`capture_begin`], and is freed once, after every
/// executable graph instantiated from it is destroyed.
pub unsafe fn capture_free(graph: *mut c_void) {
    if !graph.is_null() {
        // SAFETY: `graph` came from capture_begin and is freed once, by its owner.
        unsafe { kc_graph_free(graph) }
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

impl Torch {
    /// Whether any tier-3 call is prepared (captures then go through libtorch).
    pub fn is_active(&self) -> bool {
        !self.units.is_empty()
    }

    /// Builds the unit's arguments and runs it once eagerly on `stream` (outside any
    /// capture), keeping its outputs for the out-variant invocations that follow.
    /// Takes the plan's built calls (one per tier-3 unit).
    pub fn load_values(&mut self, values: &kc_core::plan::values::PlanValues) {
        self.values = values.clone();
    }

    /// Takes the plan's bound reads (see [`Prepared::rebinds`]).
    pub fn load_bound_reads(&mut self, reads: &[kc_core::plan::types::BoundRead]) {
        self.bound.clear();
        self.last_reader.clear();
        for b in reads {
            self.bound.entry(b.step).or_default().push(*b);
            let last = self.last_reader.entry(b.producer_step).or_insert(b.step);
            *last = (*last).max(b.step);
        }
    }

    pub fn load_calls(&mut self, calls: &[Option<AtenCall>]) {
        self.calls = calls
            .iter()
            .enumerate()
            .filter_map(|(id, c)| c.clone().map(|c| (id as u32, c)))
            .collect();
    }

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
        placed: Option<(u32, &kc_core::plan::types::StepPlaces, u64)>,
        stream: *mut c_void,
    ) -> Result<usize, ExecError> {
        let UnitCall::AtenOp { op, args } = &unit.call else {
            return Ok(0);
        };
        let key = (unit.id, placed.map(|p| p.0));
        if self.units.contains_key(&key) {
            return Ok(0);
        }
        let _ = args;
        let name = op.strip_prefix("aten::").unwrap_or(op);
        // The plan built the call (it stores one for every tier-3 unit); nothing is built or
        // refused here.
        let call = self
            .calls
            .get(&unit.id)
            .cloned()
            .ok_or_else(|| ExecError::PlanDefect {
                unit: unit.id,
                why: "the plan stores no call for this tier-3 unit".into(),
            })?;
        set_stream(stream)?;
        // The arena address of a tensor operand of this step, if it is placed.
        let addr_of = |t: &TensorInput| -> Option<u64> {
            let (_, places, arena) = placed?;
            let off = places.operand_of(unit, t.slot)?;
            (aten_call::placeable(t) && arena != 0).then_some(arena + off)
        };
        let step = placed.map(|p| p.0);
        let values = &self.values;
        let which = usize::from(step.is_some());
        let filled = std::cell::Cell::new(self.filled[which]);
        // Recorded values first (integer tensors are never placed), then the arena, then a
        // tensor of its own with drawn values.
        let make = |t: &TensorInput| {
            if let Some(bytes) = values.for_slot(unit.id, step, t.slot) {
                let (tensor, ok) = make_recorded(t, bytes)?;
                let (a, b) = filled.get();
                filled.set(if ok { (a + 1, b) } else { (a, b + 1) });
                return Ok(tensor);
            }
            match addr_of(t) {
                // SAFETY: `a` is inside the arena, which the plan sized to hold this
                // operand's furthest element; the arena lives until the Gpu drops, after
                // every prepared call.
                Some(a) => unsafe { view_at(t, a) },
                None => make_tensor(t),
            }
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
                CallArg::OptionalTensorList(ts) => ts
                    .iter()
                    .map(|t| t.as_ref().map(make).transpose())
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::OptionalList),
                other => value_of(other),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| torch_err(name, e))?;
        self.filled[which] = filled.get();
        // The step's placed tensors that read an allocated result of an earlier step.
        let mut rebinds = Vec::new();
        if let Some(reads) = step.and_then(|s| self.bound.get(&s)) {
            for (arg, a) in call.args.iter().enumerate() {
                let items: Vec<(Option<usize>, &TensorInput)> = match a {
                    CallArg::Tensor(t) => vec![(None, t)],
                    CallArg::TensorList(ts) => {
                        ts.iter().enumerate().map(|(j, t)| (Some(j), t)).collect()
                    }
                    _ => Vec::new(),
                };
                for (item, t) in items {
                    let Some(k) = unit.slots.iter().position(|&s| s == t.slot) else {
                        continue;
                    };
                    let recorded = self.values.for_slot(unit.id, step, t.slot).is_some();
                    let Some(b) = reads.iter().find(|b| b.operand as usize == k) else {
                        continue;
                    };
                    // A float read is bound where the plan placed it (its detached
                    // region stands in when the result is gone); an integer or boolean
                    // read, never placed, where the plan bound it to the result that
                    // computed it (its own drawn values stand in). Recorded values win,
                    // but not over the tensor an in-place op writes: in the model it
                    // modified the result its producer had just computed, afresh every
                    // iteration. Kept on the recorded values, it would modify them again
                    // at every launch (T5's relative-position buckets, `add_`: found
                    // reading its plan; the fault of its graph had another cause).
                    let written = call.writes(arg);
                    if !aten_call::takes_bound_result(t, recorded, written, addr_of(t).is_some()) {
                        continue;
                    }
                    rebinds.push(Rebind {
                        arg,
                        item,
                        producer_step: b.producer_step,
                        output: b.output as usize,
                        byte_offset: b.byte_offset,
                        input: t.clone(),
                    });
                }
            }
        }
        let mut outputs =
            call_op(&call.op, &call.overload, &values, &[]).map_err(|e| torch_err(name, e))?;
        let keep = matches!(call.outputs, aten_call::Outputs::OutVariant(_));
        let mut moved_results = 0;
        if let (true, Some((_, places, arena))) = (keep, placed) {
            // Results move into the arena where the step's result place holds them, so the
            // op writes what its consumers read.
            for (i, out) in outputs.iter_mut().enumerate() {
                let Some(Some((off, avail))) = places.outputs.get(i) else {
                    continue;
                };
                // A result moves with its own strides (channels-last results are dense but
                // not contiguous), into a place that holds its furthest element.
                let (size, stride) = (out.size(), out.stride());
                let bytes = kc_ir::TensorSpec::storage_elems(&size, &stride)
                    * out.kind().elt_size_in_bytes() as u64;
                if arena == 0
                    || bytes > *avail
                    || stride.iter().any(|&s| s < 0)
                    || bytes != out.numel() as u64 * out.kind().elt_size_in_bytes() as u64
                    || out.device() != Device::Cuda(device())
                {
                    continue;
                }
                // SAFETY: the result place holds `avail >= bytes` bytes of the arena, and
                // the view's furthest element lies within `bytes`.
                let moved = unsafe {
                    Tensor::f_from_blob(
                        (arena + off) as *const u8,
                        &out.size(),
                        &out.stride(),
                        out.kind(),
                        Device::Cuda(device()),
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
                rebinds,
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
            .ok_or(ExecError::NotPrepared {
                unit,
                what: "the tier-3 call",
            })?;
        set_stream(stream)?;
        let mut live = self.live.borrow_mut();
        if let Some(s) = step {
            // Results whose last reader was issued go, and so do those of steps at or after
            // this one (a pass that began again).
            live.retain(|&p, _| p < s && self.last_reader.get(&p).is_some_and(|&l| l >= s));
        }
        let rebound;
        // Outside a capture (the pass that gives the image the model's values), a bound
        // read's stand-in also takes its producer's values: a unit captured alone later,
        // whose producer's result is then gone, reads what the model's producer last wrote
        // for this step (a grouped GEMM's group offsets from the routing), not drawn values.
        let eager = !p.rebinds.is_empty() && !is_capturing(stream)?;
        let values = if p.rebinds.is_empty() {
            &p.values
        } else {
            let mut v: Vec<Value> = p.values.iter().map(shallow).collect();
            let (mut on_result, mut detached, mut as_alone) = self.bound_issued.get();
            // Under `AsAlone`, a capture's integer and boolean reads stay on their stand-ins
            // (the model's values, from the model pass), as the unit alone read them.
            let steered = |r: &Rebind| {
                !eager
                    && match self.steering.get() {
                        SteeringReads::FromProducers => false,
                        SteeringReads::AsAlone => !aten_call::is_float(r.input.dtype),
                        SteeringReads::AllAsAlone => true,
                    }
            };
            for r in &p.rebinds {
                if steered(r) {
                    as_alone += 1;
                    continue;
                }
                let Some(view) = self.bound_view(&live, r) else {
                    detached += 1;
                    continue;
                };
                on_result += 1;
                match (&mut v[r.arg], r.item) {
                    (Value::Tensor(t), None) => {
                        if eager {
                            // A stand-in that cannot take them (one that overlaps
                            // itself) keeps its drawn values.
                            let _ = t.shallow_clone().f_copy_(&view);
                        }
                        *t = view
                    }
                    (Value::List(ts), Some(j)) => {
                        if eager {
                            let _ = ts[j].shallow_clone().f_copy_(&view);
                        }
                        ts[j] = view
                    }
                    _ => {}
                }
            }
            self.bound_issued.set((on_result, detached, as_alone));
            rebound = v;
            &rebound
        };
        let overload = match &p.call.outputs {
            aten_call::Outputs::OutVariant(o) => o.as_str(),
            _ => p.call.overload.as_str(),
        };
        let results = call_op(&p.call.op, overload, values, &p.outputs)
            .map_err(|e| torch_err(&p.call.op, e))?;
        // Allocated results (ops without an out form) are dropped at once unless a later
        // step reads them: their blocks go back to libtorch's cache (the graph's private
        // pool under capture), and the captured kernels keep their addresses.
        if let Some(s) = step.filter(|s| self.last_reader.contains_key(s)) {
            live.insert(s, (self.capture_generation.get(), results));
        }
        Ok(())
    }
}

impl Torch {
    /// The address another back end's bound read takes of a live result of this capture
    /// (or eager pass): the result's first byte plus the read's offset, when the result
    /// lies on this GPU and holds `bytes` from there.
    fn bound_address(&self, step: u32, operand: u32, bytes: u64) -> Option<u64> {
        let b = self
            .bound
            .get(&step)?
            .iter()
            .find(|b| b.operand == operand)?;
        let live = self.live.borrow();
        let (on_result, detached, as_alone) = self.bound_issued.get();
        let address = live
            .get(&b.producer_step)
            .filter(|(g, _)| *g == self.capture_generation.get())
            .and_then(|(_, outs)| outs.get(b.output as usize))
            .filter(|r| {
                r.defined()
                    && r.device() == Device::Cuda(device())
                    && r.stride().iter().all(|&s| s >= 0)
                    && b.byte_offset.checked_add(bytes).is_some_and(|end| {
                        end <= kc_ir::TensorSpec::storage_elems(&r.size(), &r.stride())
                            * r.kind().elt_size_in_bytes() as u64
                    })
            })
            .map(|r| r.data_ptr() as u64 + b.byte_offset);
        self.bound_issued.set(match address {
            Some(_) => (on_result + 1, detached, as_alone),
            None => (on_result, detached + 1, as_alone),
        });
        address
    }

    /// The view a bound read takes of its producer's result, when that result is live and
    /// of this capture (or eager pass) and holds the read.
    fn bound_view(&self, live: &HashMap<u32, (u64, Vec<Tensor>)>, r: &Rebind) -> Option<Tensor> {
        live.get(&r.producer_step)
            .filter(|(g, _)| *g == self.capture_generation.get())
            .and_then(|(_, outs)| outs.get(r.output))
            .and_then(|res| view_of_result(res, r.byte_offset, &r.input))
    }

    /// The tensors the prepared call for step `step` of `unit` (else the unit's own call)
    /// takes that do not lie in the image `[image.0, image.1)`, as (slot, address, bytes):
    /// each a tensor the prepared call keeps alive.
    fn held_outside_image(&self, unit: u32, step: u32, image: (u64, u64)) -> Vec<(u32, u64, u64)> {
        let Some(p) = self
            .units
            .get(&(unit, Some(step)))
            .or_else(|| self.units.get(&(unit, None)))
        else {
            return Vec::new();
        };
        // Each argument's tensors beside the plan's inputs they were made from, in order.
        let mut taken: Vec<(u32, &Tensor)> = Vec::new();
        for (a, v) in p.call.args.iter().zip(&p.values) {
            match (a, v) {
                (CallArg::Tensor(t), Value::Tensor(x)) => taken.push((t.slot, x)),
                (CallArg::TensorList(ts), Value::List(xs)) => {
                    taken.extend(ts.iter().zip(xs).map(|(t, x)| (t.slot, x)))
                }
                (CallArg::OptionalTensorList(ts), Value::OptionalList(xs)) => taken.extend(
                    ts.iter()
                        .zip(xs)
                        .filter_map(|(t, x)| Some((t.as_ref()?.slot, x.as_ref()?))),
                ),
                _ => {}
            }
        }
        taken
            .into_iter()
            .filter(|(_, t)| {
                t.defined()
                    && t.device() == Device::Cuda(device())
                    && t.numel() > 0
                    && t.stride().iter().all(|&s| s >= 0)
            })
            .map(|(slot, t)| {
                let bytes = kc_ir::TensorSpec::storage_elems(&t.size(), &t.stride())
                    * t.kind().elt_size_in_bytes() as u64;
                (slot, t.data_ptr() as u64, bytes)
            })
            .filter(|&(_, ptr, _)| !(image.0..image.1).contains(&ptr))
            .collect()
    }

    /// Non-finite values in the results step `step` of `unit` reads through its bound
    /// reads and, with `returned`, in those it allocated and kept for later readers, with
    /// the largest finite magnitude.
    fn nonfinite_outside_image(&self, unit: u32, step: u32, returned: bool) -> (u64, f64) {
        let live = self.live.borrow();
        let mut tensors: Vec<Tensor> = live
            .get(&step)
            .filter(|_| returned)
            .map(|(_, outs)| outs.iter().map(Tensor::shallow_clone).collect())
            .unwrap_or_default();
        if let Some(p) = self.units.get(&(unit, Some(step))) {
            tensors.extend(p.rebinds.iter().filter_map(|r| self.bound_view(&live, r)));
        }
        let (mut bad, mut largest) = (0u64, 0f64);
        for t in tensors
            .iter()
            .filter(|t| t.defined() && t.is_floating_point())
        {
            let finite = t.isfinite();
            bad += i64::try_from(finite.logical_not().sum(Kind::Int64)).unwrap_or(0) as u64;
            let kept = t
                .to_kind(Kind::Float)
                .abs()
                .where_self(&finite, &Tensor::from(0f32).to_device(t.device()));
            if let Ok(m) = f64::try_from(kept.max()) {
                largest = largest.max(m);
            }
        }
        (bad, largest)
    }
}

/// Points libtorch's current stream back at the device's default stream, so that nothing
/// libtorch does after kc's streams are destroyed (its own teardown) uses one of them.
pub fn release_stream() {
    // SAFETY: a null stream is the default stream, which always exists.
    let _ = unsafe { torch_set_current_cuda_stream(std::ptr::null_mut(), device() as i32) };
}

/// Whether `stream` is capturing a graph.
fn is_capturing(stream: *mut c_void) -> Result<bool, ExecError> {
    use cudarc::driver::sys as cu;
    let mut status = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` is a live stream of the current context; a query with a valid
    // out-pointer.
    let rc = unsafe { cu::cuStreamIsCapturing(stream as cu::CUstream, &mut status) };
    if rc != cu::CUresult::CUDA_SUCCESS {
        return Err(ExecError::Cuda {
            what: "cuStreamIsCapturing".into(),
            code: format!("{rc:?}"),
        });
    }
    Ok(status != cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

fn set_stream(stream: *mut c_void) -> Result<(), ExecError> {
    // SAFETY: `stream` is a live stream of the current context, created by kc's Gpu.
    let rc = unsafe { torch_set_current_cuda_stream(stream, device() as i32) };
    if rc != 0 {
        return Err(ExecError::Torch {
            op: "torch_set_current_cuda_stream".into(),
            message: format!("returned {rc}"),
        });
    }
    Ok(())
}

/// Tier 3 as a back end: every aten op through libtorch's boxed dispatcher, the call the
/// plan built and stored; captures go through libtorch's CUDAGraph once any tier-3 call
/// is prepared.
#[derive(Default)]
pub struct Aten {
    torch: Torch,
}

impl super::Backend for Aten {
    fn name(&self) -> &'static str {
        "libtorch"
    }

    fn makes(&self, call: &UnitCall) -> bool {
        matches!(call, UnitCall::AtenOp { .. })
    }

    fn captures_alone_first(&self) -> bool {
        true
    }

    fn prepares_steps(&self) -> bool {
        true
    }

    fn nonfinite_outside_image(&self, unit: &PlanUnit, step: u32, returned: bool) -> (u64, f64) {
        self.torch.nonfinite_outside_image(unit.id, step, returned)
    }

    fn held_outside_image(
        &self,
        unit: &PlanUnit,
        step: u32,
        image: (u64, u64),
    ) -> Vec<(u32, u64, u64)> {
        self.torch.held_outside_image(unit.id, step, image)
    }

    fn take_notes(&mut self) -> Vec<String> {
        let filled = std::mem::take(&mut self.torch.filled);
        let source = &self.torch.values.source;
        let (on_result, detached, as_alone) = self.torch.bound_issued.take();
        let bound = (on_result + detached + as_alone > 0).then(|| {
            let mut note = format!(
                "allocated results: {on_result} reads issued on the result the earlier step allocated, {detached} on their stand-in (no live result that holds the read: a float read's detached region, an integer or boolean read's drawn values or those the model pass gave it)"
            );
            if as_alone > 0 {
                note.push_str(&format!(
                    "; {as_alone} integer or boolean reads (float ones too with --round-bound-reads-as-alone) in the pairs and the round on their stand-in, as the unit alone read them (the model's values), not on the result the round's own producer computed"
                ));
            }
            note
        });
        filled
            .iter()
            .zip(["units' own calls", "graph steps"])
            .filter(|((ok, failed), _)| ok + failed > 0)
            .map(|((ok, failed), whose)| {
                let mut note = format!(
                    "recorded values: {ok} tensors of tier-3 {whose} filled with the values the model's run held ({source})"
                );
                if *failed > 0 {
                    note.push_str(&format!(
                        "; {failed} kept drawn values (bytes that are not the view's elements, or a view that overlaps itself other than by broadcasting)"
                    ));
                }
                note
            })
            .chain(bound)
            .collect()
    }

    fn load(
        &mut self,
        _dev: &mut crate::device::Device,
        plan: &kc_core::plan::types::Plan,
    ) -> Result<(), ExecError> {
        self.torch.load_calls(&plan.aten_calls);
        self.torch.load_values(&plan.values);
        self.torch.load_bound_reads(&plan.bound_reads);
        // SAFETY: sets two flags of libtorch's global context; no tensor is in flight.
        unsafe {
            kc_set_math(
                i32::from(plan.math.tf32_matmul),
                i32::from(plan.math.tf32_cudnn),
            )
        };
        Ok(())
    }

    fn prepare(
        &mut self,
        dev: &mut crate::device::Device,
        unit: &PlanUnit,
    ) -> Result<(), ExecError> {
        self.torch.prepare(unit, super::stream_ptr(dev, 0))
    }

    fn prepare_step(
        &mut self,
        dev: &mut crate::device::Device,
        unit: &PlanUnit,
        step: u32,
        places: &kc_core::plan::types::StepPlaces,
    ) -> Result<usize, ExecError> {
        let stream = super::stream_ptr(dev, 0);
        self.torch
            .prepare_placed(unit, Some((step, places, dev.arena)), stream)
    }

    fn enqueue(
        &self,
        dev: &crate::device::Device,
        unit: &PlanUnit,
        s: usize,
        at: super::At<'_>,
    ) -> Result<(), ExecError> {
        // Tier 3 replays on its own tensors (cold-cache rotation does not apply), or on a
        // step's places in the memory image.
        let step = match at {
            super::At::Step { step, .. } => Some(step),
            super::At::Slots(_) => None,
        };
        self.torch.enqueue(unit.id, step, super::stream_ptr(dev, s))
    }

    fn bound_address(&self, step: u32, operand: u32, bytes: u64) -> Option<u64> {
        self.torch.bound_address(step, operand, bytes)
    }

    fn steer_reads(&self, from: SteeringReads) {
        self.torch.steering.set(from);
    }

    fn release_cached_memory(&self) {
        if self.torch.is_active() {
            // SAFETY: called outside any capture (the trait's contract).
            unsafe { kc_empty_cache() };
        }
    }

    fn begin_capture(
        &self,
        dev: &crate::device::Device,
    ) -> Result<Option<crate::device::CaptureOwner>, ExecError> {
        if !self.torch.is_active() {
            return Ok(None);
        }
        // Results kept for readers of an earlier capture or pass go back to libtorch
        // (to their graph's private pool, whose addresses that graph keeps).
        self.torch.live.borrow_mut().clear();
        let g = &self.torch.capture_generation;
        g.set(g.get() + 1);
        // SAFETY: stream 0 is live and not capturing (captures never nest).
        let handle = unsafe { capture_begin(super::stream_ptr(dev, 0))? };
        Ok(Some(crate::device::CaptureOwner {
            handle,
            free: capture_free,
        }))
    }

    fn end_capture(
        &self,
        dev: &crate::device::Device,
        owner: &crate::device::CaptureOwner,
    ) -> Result<cudarc::driver::sys::CUgraph, ExecError> {
        // SAFETY: the handle came from `begin_capture` on stream 0 and was not freed.
        let raw = unsafe { capture_end(owner.handle, super::stream_ptr(dev, 0))? };
        Ok(raw as cudarc::driver::sys::CUgraph)
    }
}

impl Drop for Aten {
    fn drop(&mut self) {
        // libtorch's tensors go first, while the streams they were used on and the arena
        // their views cover still exist; then its current stream goes back to the default.
        // SAFETY: waits for all work in the current context.
        unsafe { cudarc::driver::sys::cuCtxSynchronize() };
        drop(std::mem::take(&mut self.torch));
        release_stream();
    }
}
