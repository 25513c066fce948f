//! The GPU back end: CUDA driver calls (streams, events, memory, stream capture, graphs)
//! and cuBLAS/cuBLASLt through cudarc's raw bindings, loaded at run time. It executes the
//! tier-1 (memcpy, memset) and tier-2 (GEMM) units of a plan, either all captured into one
//! CUDA graph on the plan's streams, or one unit at a time, unrolled into a graph.
//!
//! Pitfalls from ../shared/gpu/NOTES.md that shape this file: the driver library is probed
//! before any call (no panic without a GPU), cuBLAS gets a user workspace before capture,
//! timing events are created with CU_EVENT_DEFAULT, and every unit runs once eagerly before
//! capture so that library initialisation never happens inside a capture.
//!
//! Invariant: every CUDA/cuBLAS status is checked and turned into an [`ExecError`] that names
//! the call (and the unit, where there is one); no handle outlives the [`Gpu`] that made it.

use super::ExecError;
use cudarc::cublas::sys as cb;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::sys as cu;
use kc_core::plan::types::{
    ElemType, Epilogue, GemmParams, Location, Op, Plan, PlanUnit, RegionInit, UnitCall,
};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;

const WORKSPACE_BYTES: usize = 64 << 20;

pub(super) fn cu_err(r: cu::CUresult, what: &str) -> Result<(), ExecError> {
    if r == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string or leaves it null.
    unsafe { cu::cuGetErrorName(r, &mut name) };
    let code = if name.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: non-null names point to static NUL-terminated strings owned by the driver.
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    };
    Err(ExecError::Cuda {
        what: what.to_string(),
        code,
    })
}

fn blas_err(s: cb::cublasStatus_t, what: &str) -> Result<(), ExecError> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(ExecError::Cublas {
            what: what.to_string(),
            status: format!("{s:?}"),
        })
    }
}

fn lt_err(s: lt::cublasStatus_t, what: &str) -> Result<(), ExecError> {
    if s == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(ExecError::Cublas {
            what: what.to_string(),
            status: format!("{s:?}"),
        })
    }
}

fn blas_type(t: ElemType) -> Result<cb::cudaDataType_t, ExecError> {
    Ok(match t {
        ElemType::F16 => cb::cudaDataType_t::CUDA_R_16F,
        ElemType::BF16 => cb::cudaDataType_t::CUDA_R_16BF,
        ElemType::F32 => cb::cudaDataType_t::CUDA_R_32F,
        ElemType::F64 => cb::cudaDataType_t::CUDA_R_64F,
        other => return Err(ExecError::Unsupported(format!("GEMM on {other:?}"))),
    })
}

fn lt_type(t: ElemType) -> Result<lt::cudaDataType_t, ExecError> {
    Ok(match t {
        ElemType::F16 => lt::cudaDataType_t::CUDA_R_16F,
        ElemType::BF16 => lt::cudaDataType_t::CUDA_R_16BF,
        ElemType::F32 => lt::cudaDataType_t::CUDA_R_32F,
        ElemType::F64 => lt::cudaDataType_t::CUDA_R_64F,
        other => return Err(ExecError::Unsupported(format!("GEMM on {other:?}"))),
    })
}

fn blas_op(o: Op) -> cb::cublasOperation_t {
    match o {
        Op::N => cb::cublasOperation_t::CUBLAS_OP_N,
        Op::T => cb::cublasOperation_t::CUBLAS_OP_T,
    }
}

/// cuBLASLt takes the transpose attributes as `cublasOperation_t` values in an int32.
fn lt_op(o: Op) -> i32 {
    blas_op(o) as i32
}

struct Buffer {
    ptr: cu::CUdeviceptr,
    host: *mut c_void,
    bytes: u64,
}

/// A cuBLASLt matmul prepared once per unit (descriptors and the heuristic's algorithm).
struct LtPlan {
    desc: lt::cublasLtMatmulDesc_t,
    a: lt::cublasLtMatrixLayout_t,
    b: lt::cublasLtMatrixLayout_t,
    c: lt::cublasLtMatrixLayout_t,
    algo: lt::cublasLtMatmulAlgo_t,
    /// cuBLASLt's heuristic candidates, best first (`algo` is one of them).
    candidates: Vec<lt::cublasLtMatmulAlgo_t>,
}

/// A CUDA event owned by a [`Gpu`] (destroyed with it); a handle, not a pointer to
/// dereference.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event(cu::CUevent);

/// Where an invocation's operands are: in the unit's own buffer slots (copy `k` of them,
/// for cold-cache rotation), or where one step of the plan's memory image puts them.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    Slots(u32),
    Step {
        step: u32,
        places: &'a kc_core::plan::types::StepPlaces,
    },
}

/// What the device is and has, read at start-up.
pub struct DeviceFacts {
    pub name: String,
    pub total_memory: u64,
    pub free_memory: u64,
    pub sm_count: i32,
    /// Compute capability as major * 10 + minor (90 for an H100 or H200).
    pub sm: u32,
    pub driver_version: i32,
    pub cublas_version: Option<i32>,
}

/// Whether the driver loads and reports at least one device, without creating a context.
pub fn probe() -> bool {
    // SAFETY: probing for the library and two query calls with valid out-pointers.
    unsafe {
        if !cu::is_culib_present() {
            return false;
        }
        let mut n = 0;
        cu::cuInit(0) == cu::CUresult::CUDA_SUCCESS
            && cu::cuDeviceGetCount(&mut n) == cu::CUresult::CUDA_SUCCESS
            && n > 0
    }
}

pub struct Gpu {
    pub streams: Vec<cu::CUstream>,
    blas: Vec<cb::cublasHandle_t>,
    lt: lt::cublasLtHandle_t,
    workspaces: Vec<cu::CUdeviceptr>,
    buffers: Vec<Buffer>,
    /// Extra copies of a slot for cold-cache rotation: copy k >= 1 is `copies[slot][k-1]`.
    copies: HashMap<u32, Vec<cu::CUdeviceptr>>,
    lt_plans: HashMap<u32, LtPlan>,
    /// What choosing cuBLASLt algorithms by the traced kernel's name found, per unit.
    pub gemm_choices: Vec<String>,
    events: Vec<Event>,
    /// The plan's memory image for graph mode (0 until [`Gpu::allocate_arena`]).
    arena: cu::CUdeviceptr,
    #[cfg(feature = "torch")]
    torch: super::torch::Torch,
    /// Tier 4's loaded binaries.
    kernels: super::compiled::Kernels,
    /// The job's communicator when ranks replay together (`kc exec --ranks`).
    nccl: Option<super::nccl::Nccl>,
    pub facts: DeviceFacts,
}

impl Gpu {
    /// Opens device 0 with `streams` streams. Fails cleanly without a driver or a GPU.
    pub fn open(streams: usize) -> Result<Gpu, ExecError> {
        Self::open_on(0, streams)
    }

    /// Opens device `ordinal` (a rank's `LOCAL_RANK`) with `streams` streams.
    pub fn open_on(ordinal: u32, streams: usize) -> Result<Gpu, ExecError> {
        #[cfg(feature = "torch")]
        super::torch::set_device(ordinal);
        // SAFETY: probing for the library loads nothing into the process state we rely on.
        if !unsafe { cu::is_culib_present() } {
            return Err(ExecError::NoDriver);
        }
        // SAFETY: plain driver API calls with valid out-pointers; the context is made
        // current on this thread before anything else uses it.
        unsafe {
            cu_err(cu::cuInit(0), "cuInit")?;
            let mut count = 0;
            cu_err(cu::cuDeviceGetCount(&mut count), "cuDeviceGetCount")?;
            if count == 0 {
                return Err(ExecError::NoDevice);
            }
            if ordinal as i32 >= count {
                return Err(ExecError::Unsupported(format!(
                    "this rank's GPU is device {ordinal} (LOCAL_RANK), but the driver sees {count}"
                )));
            }
            let mut dev: cu::CUdevice = 0;
            cu_err(cu::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")?;
            let mut ctx: cu::CUcontext = std::ptr::null_mut();
            cu_err(
                cu::cuDevicePrimaryCtxRetain(&mut ctx, dev),
                "cuDevicePrimaryCtxRetain",
            )?;
            cu_err(cu::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
            let mut name = [0 as std::ffi::c_char; 256];
            cu_err(
                cu::cuDeviceGetName(name.as_mut_ptr(), 256, dev),
                "cuDeviceGetName",
            )?;
            let name = std::ffi::CStr::from_ptr(name.as_ptr())
                .to_string_lossy()
                .into_owned();
            let mut total = 0usize;
            cu_err(cu::cuDeviceTotalMem_v2(&mut total, dev), "cuDeviceTotalMem")?;
            let (mut free, mut total2) = (0usize, 0usize);
            cu_err(cu::cuMemGetInfo_v2(&mut free, &mut total2), "cuMemGetInfo")?;
            let mut sms = 0;
            cu_err(
                cu::cuDeviceGetAttribute(
                    &mut sms,
                    cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    dev,
                ),
                "cuDeviceGetAttribute",
            )?;
            let (mut major, mut minor) = (0, 0);
            cu_err(
                cu::cuDeviceGetAttribute(
                    &mut major,
                    cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    dev,
                ),
                "cuDeviceGetAttribute",
            )?;
            cu_err(
                cu::cuDeviceGetAttribute(
                    &mut minor,
                    cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    dev,
                ),
                "cuDeviceGetAttribute",
            )?;
            let mut driver = 0;
            cu_err(cu::cuDriverGetVersion(&mut driver), "cuDriverGetVersion")?;
            if !cb::is_culib_present() || !lt::is_culib_present() {
                return Err(ExecError::NoCublas);
            }
            let mut gpu = Gpu {
                streams: Vec::new(),
                blas: Vec::new(),
                lt: std::ptr::null_mut(),
                workspaces: Vec::new(),
                buffers: Vec::new(),
                copies: HashMap::new(),
                lt_plans: HashMap::new(),
                gemm_choices: Vec::new(),
                arena: 0,
                events: Vec::new(),
                #[cfg(feature = "torch")]
                torch: Default::default(),
                kernels: Default::default(),
                nccl: None,
                facts: DeviceFacts {
                    name,
                    total_memory: total as u64,
                    free_memory: free as u64,
                    sm_count: sms,
                    sm: (major * 10 + minor) as u32,
                    driver_version: driver,
                    cublas_version: None,
                },
            };
            for _ in 0..streams.max(1) {
                let mut s: cu::CUstream = std::ptr::null_mut();
                cu_err(
                    cu::cuStreamCreate(&mut s, cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
                    "cuStreamCreate",
                )?;
                gpu.streams.push(s);
                let mut h: cb::cublasHandle_t = std::ptr::null_mut();
                blas_err(cb::cublasCreate_v2(&mut h), "cublasCreate")?;
                gpu.blas.push(h);
                let ws = gpu.alloc_raw(WORKSPACE_BYTES as u64)?;
                gpu.workspaces.push(ws);
                blas_err(
                    cb::cublasSetWorkspace_v2(h, ws as *mut c_void, WORKSPACE_BYTES),
                    "cublasSetWorkspace",
                )?;
                blas_err(
                    cb::cublasSetStream_v2(h, s as cb::cudaStream_t),
                    "cublasSetStream",
                )?;
            }
            let mut v = 0;
            if cb::cublasGetVersion_v2(gpu.blas[0], &mut v)
                == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS
            {
                gpu.facts.cublas_version = Some(v);
            }
            lt_err(lt::cublasLtCreate(&mut gpu.lt), "cublasLtCreate")?;
            Ok(gpu)
        }
    }

    fn alloc_raw(&mut self, bytes: u64) -> Result<cu::CUdeviceptr, ExecError> {
        let mut p: cu::CUdeviceptr = 0;
        // SAFETY: a plain allocation with a valid out-pointer.
        let r = unsafe { cu::cuMemAlloc_v2(&mut p, bytes.max(1) as usize) };
        if r == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(ExecError::OutOfMemory {
                needed: bytes,
                free: self.facts.free_memory,
            });
        }
        cu_err(r, "cuMemAlloc")?;
        Ok(p)
    }

    /// Allocates every buffer of the plan and fills it with values in [-1, 1), as
    /// half-precision bit patterns that read as finite numbers in f16, bf16 and f32 alike.
    pub fn allocate(&mut self, plan: &Plan) -> Result<(), ExecError> {
        let needed = plan.memory.device_bytes + (self.streams.len() * WORKSPACE_BYTES) as u64;
        if needed > self.facts.free_memory {
            return Err(ExecError::OutOfMemory {
                needed,
                free: self.facts.free_memory,
            });
        }
        let pattern = typed_pattern(16 << 20, ElemType::F16, RegionInit::Uniform);
        let staging = self.alloc_raw(pattern.len() as u64)?;
        // SAFETY: copies from a live host vector into a fresh allocation of its size.
        unsafe {
            cu_err(
                cu::cuMemcpyHtoD_v2(staging, pattern.as_ptr() as *const c_void, pattern.len()),
                "cuMemcpyHtoD",
            )?;
        }
        for b in &plan.buffers {
            let buf = match b.location {
                Location::Device => {
                    let ptr = self.alloc_raw(b.bytes)?;
                    self.fill(ptr, b.bytes, staging, pattern.len() as u64)?;
                    Buffer {
                        ptr,
                        host: std::ptr::null_mut(),
                        bytes: b.bytes,
                    }
                }
                Location::PinnedHost => {
                    let mut host: *mut c_void = std::ptr::null_mut();
                    // SAFETY: pinned allocation; the device alias is looked up for UVA copies.
                    unsafe {
                        cu_err(
                            cu::cuMemHostAlloc(&mut host, b.bytes as usize, 0),
                            "cuMemHostAlloc",
                        )?;
                        std::ptr::write_bytes(host as *mut u8, 0x3c, b.bytes as usize);
                        let mut dptr: cu::CUdeviceptr = 0;
                        cu_err(
                            cu::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0),
                            "cuMemHostGetDevicePointer",
                        )?;
                        Buffer {
                            ptr: dptr,
                            host,
                            bytes: b.bytes,
                        }
                    }
                }
            };
            self.buffers.push(buf);
        }
        // SAFETY: the staging buffer is no longer referenced once the fills completed.
        unsafe {
            cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize")?;
            cu_err(cu::cuMemFree_v2(staging), "cuMemFree")?;
        }
        Ok(())
    }

    fn fill(
        &self,
        dst: cu::CUdeviceptr,
        bytes: u64,
        src: cu::CUdeviceptr,
        src_len: u64,
    ) -> Result<(), ExecError> {
        let mut off = 0;
        while off < bytes {
            let n = (bytes - off).min(src_len);
            // SAFETY: both ranges lie inside live allocations.
            unsafe {
                cu_err(
                    cu::cuMemcpyDtoD_v2(dst + off, src, n as usize),
                    "cuMemcpyDtoD",
                )?
            };
            off += n;
        }
        Ok(())
    }

    /// Makes `copies - 1` extra copies of every device slot of `unit`, for cold-cache
    /// rotation; frees any copies made for an earlier unit first.
    pub fn make_copies(
        &mut self,
        plan: &Plan,
        unit: &PlanUnit,
        copies: u32,
    ) -> Result<(), ExecError> {
        self.free_copies()?;
        if copies <= 1 {
            return Ok(());
        }
        for &slot in &unit.slots {
            if plan.buffers[slot as usize].location != Location::Device {
                continue;
            }
            let bytes = self.buffers[slot as usize].bytes;
            let mut v = Vec::new();
            for _ in 1..copies {
                let p = self.alloc_raw(bytes)?;
                // SAFETY: same-size device-to-device copy between live allocations.
                unsafe {
                    cu_err(
                        cu::cuMemcpyDtoD_v2(p, self.buffers[slot as usize].ptr, bytes as usize),
                        "cuMemcpyDtoD",
                    )?
                };
                v.push(p);
            }
            self.copies.insert(slot, v);
        }
        // SAFETY: waits for the copies above.
        unsafe { cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize") }
    }

    pub fn free_copies(&mut self) -> Result<(), ExecError> {
        // SAFETY: nothing in flight uses the copies: callers synchronise first.
        unsafe { cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize")? };
        for (_, v) in self.copies.drain() {
            for p in v {
                // SAFETY: each pointer came from cuMemAlloc and is freed once.
                unsafe { cu_err(cu::cuMemFree_v2(p), "cuMemFree")? };
            }
        }
        Ok(())
    }

    fn ptr(&self, slot: u32, copy: u32) -> cu::CUdeviceptr {
        if copy > 0 {
            if let Some(v) = self.copies.get(&slot) {
                return v[(copy as usize - 1) % v.len()];
            }
        }
        self.buffers[slot as usize].ptr
    }

    /// The address of operand `slot` of `unit` for an invocation `at`.
    fn addr(&self, unit: &PlanUnit, slot: u32, at: At<'_>) -> cu::CUdeviceptr {
        match at {
            At::Slots(copy) => self.ptr(slot, copy),
            At::Step { places, .. } => {
                let placed = unit
                    .slots
                    .iter()
                    .position(|&x| x == slot)
                    .and_then(|k| places.operands.get(k).copied().flatten());
                match placed {
                    Some(off) if self.arena != 0 => self.arena + off,
                    _ => self.ptr(slot, 0),
                }
            }
        }
    }

    /// Allocates graph mode's memory image and fills every region with its starting
    /// values in its element type ([`RegionInit`]): data flows through the replay, so the
    /// numbers must stay the kind of numbers the model computes with.
    pub fn allocate_arena(
        &mut self,
        df: &kc_core::plan::types::PlanDataflow,
    ) -> Result<(), ExecError> {
        if self.arena != 0 {
            return Ok(());
        }
        self.arena = self.alloc_raw(df.arena_bytes)?;
        self.fill_arena(df)
    }

    /// Writes every region's starting values again (the arena keeps its address, so views
    /// over it stay valid).
    pub fn fill_arena(&mut self, df: &kc_core::plan::types::PlanDataflow) -> Result<(), ExecError> {
        const PATTERN: usize = 16 << 20;
        let arena = self.arena;
        let mut staged: HashMap<(ElemType, RegionInit), cu::CUdeviceptr> = HashMap::new();
        let result = (|| {
            for r in &df.regions {
                let key = (r.dtype, r.init);
                let src = match staged.get(&key) {
                    Some(&p) => p,
                    None => {
                        let pattern = typed_pattern(PATTERN, r.dtype, r.init);
                        let p = self.alloc_raw(pattern.len() as u64)?;
                        // SAFETY: copies a live host vector into a fresh allocation of its size.
                        unsafe {
                            cu_err(
                                cu::cuMemcpyHtoD_v2(
                                    p,
                                    pattern.as_ptr() as *const c_void,
                                    pattern.len(),
                                ),
                                "cuMemcpyHtoD",
                            )?;
                        }
                        staged.insert(key, p);
                        p
                    }
                };
                self.fill(arena + r.offset, r.bytes, src, PATTERN as u64)?;
            }
            Ok(())
        })();
        // SAFETY: the fills are complete once the context synchronises; then the staging
        // buffers are unreferenced.
        unsafe {
            cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize")?;
            for (_, p) in staged {
                cu_err(cu::cuMemFree_v2(p), "cuMemFree")?;
            }
        }
        result
    }

    /// Non-finite and all floating-point values among the first `bytes` (at most 64 KiB)
    /// at arena offset `offset`, read as `dtype`; other types count nothing.
    pub fn nonfinite_at(
        &self,
        offset: u64,
        bytes: u64,
        dtype: ElemType,
    ) -> Result<(u64, u64), ExecError> {
        if self.arena == 0 || bytes == 0 {
            return Ok((0, 0));
        }
        let mut buf = vec![0u8; (bytes as usize).min(64 << 10)];
        // SAFETY: reads at most `bytes` from inside the live arena into `buf` (the caller
        // passes a place and a size the plan keeps inside the arena).
        unsafe {
            cu_err(
                cu::cuMemcpyDtoH_v2(
                    buf.as_mut_ptr() as *mut c_void,
                    self.arena + offset,
                    buf.len(),
                ),
                "cuMemcpyDtoH",
            )?;
        }
        Ok(count_nonfinite(&buf, dtype))
    }

    /// The share of non-finite values (NaN, infinity) in the floating-point regions of the
    /// memory image, read back from up to the first 64 KiB of every region: data that
    /// went non-finite would make the replay's power a property of NaNs, not of the model.
    pub fn arena_nonfinite_share(
        &self,
        df: &kc_core::plan::types::PlanDataflow,
    ) -> Result<Option<f64>, ExecError> {
        if self.arena == 0 {
            return Ok(None);
        }
        self.synchronize()?;
        let (mut bad, mut all) = (0u64, 0u64);
        for r in &df.regions {
            let (b, a) = self.nonfinite_at(r.offset, r.bytes, r.dtype)?;
            bad += b;
            all += a;
        }
        Ok((all > 0).then(|| bad as f64 / all as f64))
    }

    /// Prepares a tier-3 step whose tensors and results live in the memory image.
    #[cfg(feature = "torch")]
    pub fn prepare_step(
        &mut self,
        unit: &PlanUnit,
        step: u32,
        places: &kc_core::plan::types::StepPlaces,
    ) -> Result<usize, ExecError> {
        let stream = self.streams[0] as *mut c_void;
        let arena = self.arena;
        self.torch
            .prepare_placed(unit, Some((step, places, arena)), stream)
    }

    /// Without libtorch no tier-3 step runs, placed or not.
    #[cfg(not(feature = "torch"))]
    pub fn prepare_step(
        &mut self,
        _unit: &PlanUnit,
        _step: u32,
        _places: &kc_core::plan::types::StepPlaces,
    ) -> Result<usize, ExecError> {
        Ok(0)
    }

    /// Joins the job's NCCL communicator (`id` from rank 0, through the rendezvous).
    pub fn join_collectives(&mut self, id: &[u8], world: u32, rank: u32) -> Result<(), ExecError> {
        // SAFETY: this Gpu's context is current on this thread.
        self.nccl = Some(unsafe { super::nccl::Nccl::init(id, world, rank)? });
        Ok(())
    }

    /// Whether collectives run here (a communicator was joined).
    pub fn has_collectives(&self) -> bool {
        self.nccl.is_some()
    }

    /// Takes the plan's tier-3 calls (built by the plan, never here).
    pub fn load_calls(&mut self, calls: &[Option<kc_core::plan::aten_call::AtenCall>]) {
        #[cfg(feature = "torch")]
        self.torch.load_calls(calls);
        #[cfg(not(feature = "torch"))]
        let _ = calls;
    }

    /// Loads a plan's compiled-kernel binaries (tier 4), once, before any unit runs.
    pub fn load_binaries(
        &mut self,
        binaries: &[kc_core::plan::types::KernelBinary],
    ) -> Result<(), ExecError> {
        // SAFETY: this Gpu's context is current on this thread (made so by `open`).
        unsafe { self.kernels.load(binaries, self.facts.sm) }
    }

    /// Prepares what a unit needs before capture: cuBLASLt descriptors and algorithm, a
    /// tier-3 op's tensors and outputs (which runs the op once, eagerly, on stream 0), or
    /// a compiled kernel's scratch memory.
    pub fn prepare(&mut self, unit: &PlanUnit) -> Result<(), ExecError> {
        if let (UnitCall::Collective { .. }, Some(n)) = (&unit.call, self.nccl.as_mut()) {
            // SAFETY: this Gpu's context is current on this thread.
            return unsafe { n.prepare(unit) };
        }
        if let UnitCall::Kernel { args, .. } = &unit.call {
            // Integer and boolean operands (indices, masks) keep private buffers; zeros are
            // valid indices, where the float pattern the buffers start with is not (a
            // gather's bounds check would trap).
            for a in args {
                if let kc_core::plan::types::KernelArgValue::Pointer { slot, dtype } = a {
                    // An operand of unknown type keeps the values it starts with.
                    if !kc_core::plan::aten_call::is_float(*dtype) && *dtype != ElemType::Unknown {
                        let b = &self.buffers[*slot as usize];
                        if !b.host.is_null() {
                            continue;
                        }
                        // SAFETY: a live device allocation of `bytes` bytes.
                        unsafe {
                            cu_err(cu::cuMemsetD8_v2(b.ptr, 0, b.bytes as usize), "cuMemset")?
                        };
                    }
                }
            }
            // SAFETY: this Gpu's context is current on this thread.
            return unsafe { self.kernels.prepare(unit) };
        }
        #[cfg(feature = "torch")]
        if let UnitCall::AtenOp { .. } = &unit.call {
            let stream = self.streams[0] as *mut c_void;
            return self.torch.prepare(unit, stream);
        }
        if let UnitCall::Gemm(g) = &unit.call {
            if g.epilogue != Epilogue::None && !self.lt_plans.contains_key(&unit.id) {
                let p = self.lt_plan(g)?;
                self.lt_plans.insert(unit.id, p);
                self.choose_lt_algorithm(unit, g);
            }
        }
        Ok(())
    }

    /// Takes, among cuBLASLt's heuristic candidates, the first whose kernel has the traced
    /// kernel's name (each candidate runs once, eagerly, under CUPTI), so that the replay
    /// launches the kernel the model launched; keeps the first candidate, and says so, when
    /// none does or CUPTI is not there.
    fn choose_lt_algorithm(&mut self, unit: &PlanUnit, g: &GemmParams) {
        let Some(traced) = unit.kernels.first() else {
            return;
        };
        let want = kc_core::results::fidelity::base_name(traced).to_string();
        let n = self
            .lt_plans
            .get(&unit.id)
            .map_or(0, |p| p.candidates.len());
        let mut seen = Vec::new();
        for k in 0..n {
            if let Some(p) = self.lt_plans.get_mut(&unit.id) {
                p.algo = p.candidates[k];
            }
            let ran = super::cupti::record(|| {
                // SAFETY: the unit's buffers are allocated; the call runs eagerly on
                // stream 0 outside any capture.
                unsafe { self.lt_gemm(unit, g, 0, At::Slots(0))? };
                self.synchronize()
            });
            let names = match ran {
                Ok(r) => r,
                Err(e) => {
                    self.gemm_choices.push(format!(
                        "unit {} {}: cuBLASLt's first algorithm kept ({e})",
                        unit.id, unit.label
                    ));
                    break;
                }
            };
            if names.iter().any(|r| r.name.contains(&want)) {
                if k > 0 {
                    self.gemm_choices.push(format!(
                        "unit {} {}: cuBLASLt candidate {} of {n} launches the traced {want}",
                        unit.id,
                        unit.label,
                        k + 1
                    ));
                }
                return;
            }
            seen.extend(names.into_iter().map(|r| r.name));
        }
        if let Some(p) = self.lt_plans.get_mut(&unit.id) {
            p.algo = p.candidates[0];
        }
        if !seen.is_empty() {
            self.gemm_choices.push(format!(
                "unit {} {}: none of cuBLASLt's {n} candidates launches the traced {want} (first: {})",
                unit.id,
                unit.label,
                seen[0].chars().take(80).collect::<String>()
            ));
        }
    }

    fn lt_plan(&self, g: &GemmParams) -> Result<LtPlan, ExecError> {
        // SAFETY: descriptor calls with valid handles and attribute buffers of the sizes
        // cuBLASLt documents for each attribute.
        unsafe {
            let mut desc: lt::cublasLtMatmulDesc_t = std::ptr::null_mut();
            lt_err(
                lt::cublasLtMatmulDescCreate(
                    &mut desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    lt::cudaDataType_t::CUDA_R_32F,
                ),
                "cublasLtMatmulDescCreate",
            )?;
            let set = |attr: lt::cublasLtMatmulDescAttributes_t, v: &i32| {
                lt_err(
                    lt::cublasLtMatmulDescSetAttribute(
                        desc,
                        attr,
                        v as *const i32 as *const c_void,
                        4,
                    ),
                    "cublasLtMatmulDescSetAttribute",
                )
            };
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &lt_op(g.transa),
            )?;
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                &lt_op(g.transb),
            )?;
            let epi = match g.epilogue {
                Epilogue::None => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
                Epilogue::Bias => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
                Epilogue::BiasGelu => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
                Epilogue::BiasRelu => lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            };
            let epi_v = epi as u32;
            lt_err(
                lt::cublasLtMatmulDescSetAttribute(
                    desc,
                    lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
                    &epi_v as *const u32 as *const c_void,
                    4,
                ),
                "cublasLtMatmulDescSetAttribute(EPILOGUE)",
            )?;
            let layout = |t: ElemType,
                          rows: i64,
                          cols: i64,
                          ld: i64|
             -> Result<lt::cublasLtMatrixLayout_t, ExecError> {
                let mut l: lt::cublasLtMatrixLayout_t = std::ptr::null_mut();
                lt_err(
                    lt::cublasLtMatrixLayoutCreate(
                        &mut l,
                        lt_type(t)?,
                        rows as u64,
                        cols as u64,
                        ld,
                    ),
                    "cublasLtMatrixLayoutCreate",
                )?;
                Ok(l)
            };
            let (ar, ac) = if g.transa == Op::N {
                (g.m, g.k)
            } else {
                (g.k, g.m)
            };
            let (br, bc) = if g.transb == Op::N {
                (g.k, g.n)
            } else {
                (g.n, g.k)
            };
            let a = layout(g.a_type, ar, ac, g.lda)?;
            let b = layout(g.b_type, br, bc, g.ldb)?;
            let c = layout(g.c_type, g.m, g.n, g.ldc)?;
            let mut pref: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
            lt_err(
                lt::cublasLtMatmulPreferenceCreate(&mut pref),
                "cublasLtMatmulPreferenceCreate",
            )?;
            let ws = WORKSPACE_BYTES as u64;
            lt_err(
                lt::cublasLtMatmulPreferenceSetAttribute(
                    pref,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &ws as *const u64 as *const c_void,
                    8,
                ),
                "cublasLtMatmulPreferenceSetAttribute",
            )?;
            const CANDIDATES: usize = 8;
            let mut results: [lt::cublasLtMatmulHeuristicResult_t; CANDIDATES] = std::mem::zeroed();
            let mut found = 0;
            lt_err(
                lt::cublasLtMatmulAlgoGetHeuristic(
                    self.lt,
                    desc,
                    a,
                    b,
                    c,
                    c,
                    pref,
                    CANDIDATES as i32,
                    results.as_mut_ptr(),
                    &mut found,
                ),
                "cublasLtMatmulAlgoGetHeuristic",
            )?;
            lt::cublasLtMatmulPreferenceDestroy(pref);
            if found == 0 {
                return Err(ExecError::Unsupported(
                    "cuBLASLt found no algorithm for this epilogue GEMM".into(),
                ));
            }
            let candidates: Vec<lt::cublasLtMatmulAlgo_t> = results
                [..(found as usize).min(CANDIDATES)]
                .iter()
                .map(|r| r.algo)
                .collect();
            Ok(LtPlan {
                desc,
                a,
                b,
                c,
                algo: candidates[0],
                candidates,
            })
        }
    }

    /// Enqueues one invocation of `unit` on stream `s`, its operands `at`.
    pub fn enqueue(&self, unit: &PlanUnit, s: usize, at: At<'_>) -> Result<(), ExecError> {
        let stream = self.streams[s];
        // SAFETY: every pointer is a live buffer slot of at least the size the plan's
        // buffer planning computed for this operand; handles belong to this Gpu.
        unsafe {
            match &unit.call {
                UnitCall::Memcpy {
                    bytes, src, dst, ..
                } => cu_err(
                    cu::cuMemcpyAsync(
                        self.addr(unit, *dst, at),
                        self.addr(unit, *src, at),
                        *bytes as usize,
                        stream,
                    ),
                    "cuMemcpyAsync",
                ),
                UnitCall::Memset { bytes, value, dst } => cu_err(
                    cu::cuMemsetD8Async(self.addr(unit, *dst, at), *value, *bytes as usize, stream),
                    "cuMemsetD8Async",
                ),
                UnitCall::Gemm(g) if g.epilogue == Epilogue::None => self.gemm(unit, g, s, at),
                UnitCall::Gemm(g) => self.lt_gemm(unit, g, s, at),
                UnitCall::Kernel { .. } => {
                    self.kernels
                        .launch(unit, |slot| self.addr(unit, slot, at), stream)
                }
                UnitCall::Collective { .. } if self.nccl.is_some() => {
                    let n = self.nccl.as_ref().expect("checked");
                    n.enqueue(unit, stream)
                }
                // Tier 3 replays on its own tensors (cold-cache rotation does not apply), or
                // on a step's places in the memory image.
                #[cfg(feature = "torch")]
                UnitCall::AtenOp { .. } => {
                    let step = match at {
                        At::Step { step, .. } => Some(step),
                        At::Slots(_) => None,
                    };
                    self.torch.enqueue(unit.id, step, stream as *mut c_void)
                }
                _ => Err(ExecError::Unsupported(format!(
                    "unit {} ({}) is not executed by this back end",
                    unit.id,
                    unit.tier.as_str()
                ))),
            }
        }
    }

    unsafe fn gemm(
        &self,
        unit: &PlanUnit,
        g: &GemmParams,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        let h = self.blas[s];
        let (a, b, c) = (
            self.addr(unit, g.a, at),
            self.addr(unit, g.b, at),
            self.addr(unit, g.c, at),
        );
        let f64_compute = g.compute_type == ElemType::F64;
        let (alpha32, beta32) = (g.alpha as f32, g.beta as f32);
        let (alpha64, beta64) = (g.alpha, g.beta);
        let (pa, pb): (*const c_void, *const c_void) = if f64_compute {
            (&alpha64 as *const f64 as _, &beta64 as *const f64 as _)
        } else {
            (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
        };
        let compute = if f64_compute {
            cb::cublasComputeType_t::CUBLAS_COMPUTE_64F
        } else {
            cb::cublasComputeType_t::CUBLAS_COMPUTE_32F
        };
        let dims = |x: i64| -> Result<i32, ExecError> {
            i32::try_from(x)
                .map_err(|_| ExecError::Unsupported(format!("GEMM dimension {x} exceeds int32")))
        };
        if g.batch == 1 {
            blas_err(
                cb::cublasGemmEx(
                    h,
                    blas_op(g.transa),
                    blas_op(g.transb),
                    dims(g.m)?,
                    dims(g.n)?,
                    dims(g.k)?,
                    pa,
                    a as *const c_void,
                    blas_type(g.a_type)?,
                    dims(g.lda)?,
                    b as *const c_void,
                    blas_type(g.b_type)?,
                    dims(g.ldb)?,
                    pb,
                    c as *mut c_void,
                    blas_type(g.c_type)?,
                    dims(g.ldc)?,
                    compute,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                ),
                "cublasGemmEx",
            )
        } else {
            blas_err(
                cb::cublasGemmStridedBatchedEx(
                    h,
                    blas_op(g.transa),
                    blas_op(g.transb),
                    dims(g.m)?,
                    dims(g.n)?,
                    dims(g.k)?,
                    pa,
                    a as *const c_void,
                    blas_type(g.a_type)?,
                    dims(g.lda)?,
                    g.stride_a,
                    b as *const c_void,
                    blas_type(g.b_type)?,
                    dims(g.ldb)?,
                    g.stride_b,
                    pb,
                    c as *mut c_void,
                    blas_type(g.c_type)?,
                    dims(g.ldc)?,
                    g.stride_c,
                    dims(g.batch)?,
                    compute,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                ),
                "cublasGemmStridedBatchedEx",
            )
        }
    }

    unsafe fn lt_gemm(
        &self,
        unit: &PlanUnit,
        g: &GemmParams,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        let id = unit.id;
        let p = self.lt_plans.get(&id).ok_or_else(|| {
            ExecError::Unsupported(format!(
                "unit {id}: cuBLASLt plan missing (prepare not called)"
            ))
        })?;
        let bias = g.bias.map(|b| self.addr(unit, b, at)).unwrap_or(0);
        lt_err(
            lt::cublasLtMatmulDescSetAttribute(
                p.desc,
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                &bias as *const u64 as *const c_void,
                8,
            ),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
        )?;
        let (alpha, beta) = (g.alpha as f32, g.beta as f32);
        let c = self.addr(unit, g.c, at);
        lt_err(
            lt::cublasLtMatmul(
                self.lt,
                p.desc,
                &alpha as *const f32 as *const c_void,
                self.addr(unit, g.a, at) as *const c_void,
                p.a,
                self.addr(unit, g.b, at) as *const c_void,
                p.b,
                &beta as *const f32 as *const c_void,
                c as *const c_void,
                p.c,
                c as *mut c_void,
                p.c,
                &p.algo,
                self.workspaces[s] as *mut c_void,
                WORKSPACE_BYTES,
                self.streams[s] as lt::cudaStream_t,
            ),
            "cublasLtMatmul",
        )
    }

    pub fn event(&mut self, timing: bool) -> Result<Event, ExecError> {
        let mut e: cu::CUevent = std::ptr::null_mut();
        let flags = if timing {
            cu::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            cu::CUevent_flags::CU_EVENT_DISABLE_TIMING
        } as u32;
        // SAFETY: creates an event owned by this Gpu, destroyed in Drop.
        unsafe { cu_err(cu::cuEventCreate(&mut e, flags), "cuEventCreate")? };
        self.events.push(Event(e));
        Ok(Event(e))
    }

    pub fn record(&self, e: Event, s: usize) -> Result<(), ExecError> {
        // SAFETY: event and stream belong to this Gpu.
        unsafe { cu_err(cu::cuEventRecord(e.0, self.streams[s]), "cuEventRecord") }
    }

    pub fn wait(&self, s: usize, e: Event) -> Result<(), ExecError> {
        // SAFETY: event and stream belong to this Gpu.
        unsafe {
            cu_err(
                cu::cuStreamWaitEvent(self.streams[s], e.0, 0),
                "cuStreamWaitEvent",
            )
        }
    }

    pub fn synchronize(&self) -> Result<(), ExecError> {
        // SAFETY: waits for all work in the current context.
        unsafe { cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize") }
    }

    /// Begins capturing on stream 0; other streams join through event waits. With tier-3
    /// units prepared the capture goes through libtorch's CUDAGraph (its RNG and its
    /// allocator must know a capture is under way); the handle it returns travels to
    /// [`Gpu::end_capture`].
    fn begin_capture(&self) -> Result<*mut std::ffi::c_void, ExecError> {
        #[cfg(feature = "torch")]
        if self.torch.is_active() {
            // SAFETY: stream 0 is live and not capturing (captures never nest).
            return unsafe { super::torch::capture_begin(self.streams[0] as *mut _) };
        }
        // SAFETY: starts capturing on stream 0; other streams join through event waits.
        unsafe {
            cu_err(
                cu::cuStreamBeginCapture_v2(
                    self.streams[0],
                    cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
                ),
                "cuStreamBeginCapture",
            )?;
        }
        Ok(std::ptr::null_mut())
    }

    /// Ends the capture and instantiates the graph.
    fn end_capture(&self, torch_graph: *mut std::ffi::c_void) -> Result<Graph, ExecError> {
        // SAFETY: ends the capture begun on stream 0. A graph kc captured itself is
        // destroyed after instantiation; one libtorch's CUDAGraph captured belongs to that
        // object, which `Graph` frees when it drops. The executable graph is `Graph`'s.
        unsafe {
            let mut g: cu::CUgraph = std::ptr::null_mut();
            if torch_graph.is_null() {
                cu_err(
                    cu::cuStreamEndCapture(self.streams[0], &mut g),
                    "cuStreamEndCapture",
                )?;
            } else {
                #[cfg(feature = "torch")]
                match super::torch::capture_end(torch_graph, self.streams[0] as *mut _) {
                    Ok(raw) => g = raw as cu::CUgraph,
                    Err(e) => {
                        super::torch::capture_free(torch_graph);
                        return Err(e);
                    }
                }
            }
            let mut exec: cu::CUgraphExec = std::ptr::null_mut();
            let r = cu::cuGraphInstantiateWithFlags(&mut exec, g, 0);
            let mut nodes = 0usize;
            cu::cuGraphGetNodes(g, std::ptr::null_mut(), &mut nodes);
            if torch_graph.is_null() {
                cu::cuGraphDestroy(g);
            }
            let graph = Graph {
                exec,
                nodes,
                torch_graph,
            };
            cu_err(r, "cuGraphInstantiate")?;
            Ok(graph)
        }
    }

    /// Captures what `enqueue` issues on stream 0 (and on streams joined to it) into one
    /// instantiated graph. Capture mode is always left, also when `enqueue` fails; the
    /// first error is returned.
    pub fn capture(
        &self,
        enqueue: impl FnOnce(&Gpu) -> Result<(), ExecError>,
    ) -> Result<Graph, ExecError> {
        let torch_graph = self.begin_capture()?;
        let captured = enqueue(self);
        let graph = self.end_capture(torch_graph);
        captured?;
        graph
    }

    pub fn launch(&self, g: &Graph) -> Result<(), ExecError> {
        // SAFETY: launches an instantiated graph on stream 0.
        unsafe { cu_err(cu::cuGraphLaunch(g.exec, self.streams[0]), "cuGraphLaunch") }
    }

    /// Launches `g` `n` times back to back with a timing event between launches;
    /// returns each launch's time in microseconds.
    pub fn time_launches(&mut self, g: &Graph, n: usize) -> Result<Vec<f64>, ExecError> {
        let evs: Vec<Event> = (0..=n)
            .map(|_| self.event(true))
            .collect::<Result<_, _>>()?;
        self.record(evs[0], 0)?;
        for e in &evs[1..] {
            self.launch(g)?;
            self.record(*e, 0)?;
        }
        self.synchronize()?;
        let mut out = Vec::with_capacity(n);
        for w in evs.windows(2) {
            let mut ms = 0f32;
            // SAFETY: both events completed (synchronised above) and were timing events.
            unsafe {
                cu_err(
                    cu::cuEventElapsedTime_v2(&mut ms, w[0].0, w[1].0),
                    "cuEventElapsedTime",
                )?
            };
            out.push(f64::from(ms) * 1000.0);
        }
        self.release_events(evs)?;
        Ok(out)
    }

    fn release_events(&mut self, evs: Vec<Event>) -> Result<(), ExecError> {
        for e in evs {
            self.events.retain(|x| *x != e);
            // SAFETY: the event is complete and no longer referenced.
            unsafe { cu_err(cu::cuEventDestroy_v2(e.0), "cuEventDestroy")? };
        }
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // libtorch's tensors go first, while the streams they were used on and the arena
        // their views cover still exist (the caching allocator may record events on a
        // tensor's streams when it frees it).
        #[cfg(feature = "torch")]
        {
            // SAFETY: waits for all work in the current context.
            unsafe { cu::cuCtxSynchronize() };
            drop(std::mem::take(&mut self.torch));
            super::torch::release_stream();
        }
        // SAFETY: tears down what `open` and `allocate` made, after the device is idle.
        // Errors are ignored: nothing can be done about them while dropping.
        unsafe {
            cu::cuCtxSynchronize();
            self.kernels.release();
            drop(self.nccl.take());
            for (_, p) in self.lt_plans.drain() {
                lt::cublasLtMatmulDescDestroy(p.desc);
                lt::cublasLtMatrixLayoutDestroy(p.a);
                lt::cublasLtMatrixLayoutDestroy(p.b);
                lt::cublasLtMatrixLayoutDestroy(p.c);
            }
            for e in self.events.drain(..) {
                cu::cuEventDestroy_v2(e.0);
            }
            for (_, v) in self.copies.drain() {
                for p in v {
                    cu::cuMemFree_v2(p);
                }
            }
            if self.arena != 0 {
                cu::cuMemFree_v2(self.arena);
            }
            for b in self.buffers.drain(..) {
                if b.host.is_null() {
                    cu::cuMemFree_v2(b.ptr);
                } else {
                    cu::cuMemFreeHost(b.host);
                }
            }
            for h in self.blas.drain(..) {
                cb::cublasDestroy_v2(h);
            }
            if !self.lt.is_null() {
                lt::cublasLtDestroy(self.lt);
            }
            for w in self.workspaces.drain(..) {
                cu::cuMemFree_v2(w);
            }
            for s in self.streams.drain(..) {
                cu::cuStreamDestroy_v2(s);
            }
        }
    }
}

/// An instantiated CUDA graph.
pub struct Graph {
    exec: cu::CUgraphExec,
    pub nodes: usize,
    /// libtorch's CUDAGraph that captured it (null when kc captured it itself): it owns
    /// the captured graph and the memory pool of the ops that allocated inside it.
    #[cfg_attr(not(feature = "torch"), allow(dead_code))]
    torch_graph: *mut std::ffi::c_void,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: destroys the executable graph this value owns (null after a failed
        // instantiation), then the CUDAGraph behind it.
        unsafe {
            if !self.exec.is_null() {
                cu::cuGraphExecDestroy(self.exec);
            }
        }
        // SAFETY: the executable graph made from it is destroyed above; freed once here.
        #[cfg(feature = "torch")]
        unsafe {
            super::torch::capture_free(self.torch_graph)
        };
    }
}

/// Keeps the device busy with back-to-back launches of a graph for energy windows: at most
/// two batches in flight, each ending in an event, and a count of completed launches.
pub struct Feeder<'g> {
    graph: &'g Graph,
    batch: usize,
    in_flight: VecDeque<Event>,
    free: Vec<Event>,
    pub completed: u64,
}

impl<'g> Feeder<'g> {
    pub fn new(gpu: &mut Gpu, graph: &'g Graph, batch: usize) -> Result<Feeder<'g>, ExecError> {
        let free = (0..3)
            .map(|_| gpu.event(false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Feeder {
            graph,
            batch: batch.max(1),
            in_flight: VecDeque::new(),
            free,
            completed: 0,
        })
    }

    /// Launches enqueued so far (completed or in flight).
    pub fn launched(&self) -> u64 {
        self.completed + (self.in_flight.len() * self.batch) as u64
    }

    /// Retires finished batches, tops the queue up, and returns launches completed so far.
    pub fn pump(&mut self, gpu: &Gpu) -> Result<u64, ExecError> {
        while let Some(&e) = self.in_flight.front() {
            // SAFETY: querying an event this feeder recorded.
            let r = unsafe { cu::cuEventQuery(e.0) };
            if r == cu::CUresult::CUDA_SUCCESS {
                self.in_flight.pop_front();
                self.free.push(e);
                self.completed += self.batch as u64;
            } else if r == cu::CUresult::CUDA_ERROR_NOT_READY {
                break;
            } else {
                cu_err(r, "cuEventQuery")?;
            }
        }
        while self.in_flight.len() < 2 {
            let Some(e) = self.free.pop() else { break };
            for _ in 0..self.batch {
                gpu.launch(self.graph)?;
            }
            gpu.record(e, 0)?;
            self.in_flight.push_back(e);
        }
        Ok(self.completed)
    }
}

/// Non-finite and all values of `b` read as `dtype` (floating-point types only).
fn count_nonfinite(b: &[u8], dtype: ElemType) -> (u64, u64) {
    let (mut bad, mut all) = (0u64, 0u64);
    let mut count = |finite: &mut dyn Iterator<Item = bool>| {
        for f in finite {
            all += 1;
            bad += u64::from(!f);
        }
    };
    match dtype {
        ElemType::F32 => count(
            &mut b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite()),
        ),
        // Exponent all ones: 5 bits in f16, 8 in bf16.
        ElemType::F16 => count(
            &mut b
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]) & 0x7c00 != 0x7c00),
        ),
        ElemType::BF16 => count(
            &mut b
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]) & 0x7f80 != 0x7f80),
        ),
        _ => {}
    }
    (bad, all)
}

/// `bytes` of values for a region of element type `dtype` starting as `init` (a pattern
/// repeated over the region; xorshift, deterministic). Unknown types get half-precision
/// values.
fn typed_pattern(bytes: usize, dtype: ElemType, init: RegionInit) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 8);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bound = match init {
        RegionInit::Weight { fan_in } => 1.0 / (fan_in.max(1) as f64).sqrt(),
        _ => 1.0,
    };
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let v = match init {
            RegionInit::Uniform | RegionInit::Weight { .. } => u * bound,
            RegionInit::Ones => 1.0,
            RegionInit::Zeros => 0.0,
        };
        match dtype {
            ElemType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            ElemType::F64 => out.extend_from_slice(&v.to_le_bytes()),
            ElemType::BF16 => {
                out.extend_from_slice(&(((v as f32).to_bits() >> 16) as u16).to_le_bytes())
            }
            _ => out.extend_from_slice(&f16_bits(v as f32).to_le_bytes()),
        }
    }
    out.truncate(bytes);
    out
}

/// IEEE half-precision bits of `v` (|v| < 2, rounding toward zero; enough for test data).
fn f16_bits(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let mant = ((b >> 13) & 0x3ff) as u16;
    if exp <= 0 {
        sign
    } else {
        sign | ((exp as u16) << 10) | mant
    }
}
