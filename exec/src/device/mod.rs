//! The device core: one GPU's context, streams, events and memory (the plan's buffer slots,
//! their cold-cache copies, the model's memory image), graph capture and timed launches. It
//! knows no tier: what a unit's call does is a back end's (`crate::backends`), and this core
//! only tells a back end where an invocation's operands are ([`Device::addr`]).
//!
//! Pitfalls from ../shared/gpu/NOTES.md that shape this file: the driver library is probed
//! before any call (no panic without a GPU), timing events are created with
//! CU_EVENT_DEFAULT, and every stream is created non-blocking.
//!
//! Invariant: every CUDA status is checked and turned into an [`ExecError`] that names the
//! call; no handle outlives the [`Device`] that made it.

mod carveout;
mod code_evict;
pub mod cupti;
mod graph;
mod memory;
pub mod nvml;
mod spin;
mod touch;

pub use carveout::CARVEOUT_KERNEL;
pub use code_evict::CODE_EVICT_KERNEL;
pub use graph::{CaptureOwner, Feeder, Graph, TimedLaunches};
pub use memory::{Census, ImageAt};
pub use touch::{MARK_KERNEL, TOUCH_KERNEL};

/// The device core's own kernels a unit's launch may run besides the unit's (the record in
/// the model's cache state), by the names CUPTI records: left out of the unit's records.
pub const OWN_KERNELS: [&str; 5] = [
    TOUCH_KERNEL,
    touch::TOUCH_ON_SMS_KERNEL,
    touch::MARK_KERNEL,
    CODE_EVICT_KERNEL,
    CARVEOUT_KERNEL,
];

use crate::ExecError;
use cudarc::driver::sys as cu;
use std::collections::HashMap;
use std::ffi::c_void;

pub fn cu_err(r: cu::CUresult, what: &str) -> Result<(), ExecError> {
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

/// Loads embedded PTX (NUL-terminated) into the current context, JIT-compiled by the
/// driver, and finds its entry `entry`: the device core's own kernels (`spin`, `touch`,
/// `code_evict`, `carveout`). The caller unloads the module (with the device).
pub(crate) fn load_ptx_entry(
    ptx: &std::ffi::CStr,
    entry: &std::ffi::CStr,
) -> Result<(cu::CUmodule, cu::CUfunction), ExecError> {
    let name = entry.to_string_lossy();
    let mut m: cu::CUmodule = std::ptr::null_mut();
    let mut f: cu::CUfunction = std::ptr::null_mut();
    // SAFETY: the caller's context is current; both strings are NUL-terminated and outlive
    // the calls; a module whose entry is not found is unloaded here.
    unsafe {
        cu_err(
            cu::cuModuleLoadData(&mut m, ptx.as_ptr() as *const c_void),
            &format!("cuModuleLoadData ({name} PTX)"),
        )?;
        if let Err(e) = cu_err(
            cu::cuModuleGetFunction(&mut f, m, entry.as_ptr()),
            &format!("cuModuleGetFunction ({name})"),
        ) {
            cu::cuModuleUnload(m);
            return Err(e);
        }
    }
    Ok((m, f))
}

impl Device {
    /// Launches one of the device core's own kernels (`spin`, `touch`, `code_evict`,
    /// `carveout`), `f`, over `(blocks, threads, shared_bytes)`: one-dimensional blocks of
    /// `threads` with `shared_bytes` of dynamic shared memory, on stream `stream`, with its
    /// parameters `args`; `name` names it where the launch fails (and only there: the
    /// record in the model's cache state enqueues these by the thousand).
    ///
    /// # Safety
    /// `f` is a loaded kernel whose parameters are exactly `args`, in order, allowed
    /// `shared_bytes` of dynamic shared memory, and what it reads and writes stays
    /// allocated until it has run.
    pub(crate) unsafe fn launch_own_kernel(
        &self,
        f: cu::CUfunction,
        (blocks, threads, shared_bytes): (u32, u32, u32),
        stream: usize,
        args: &mut [*mut c_void],
        name: &str,
    ) -> Result<(), ExecError> {
        let params = if args.is_empty() {
            std::ptr::null_mut()
        } else {
            args.as_mut_ptr()
        };
        // SAFETY: as the caller promises; the parameter pointers live through the call,
        // which copies what they point at.
        let r = unsafe {
            cu::cuLaunchKernel(
                f,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                shared_bytes,
                self.streams[stream],
                params,
                std::ptr::null_mut(),
            )
        };
        match r {
            cu::CUresult::CUDA_SUCCESS => Ok(()),
            r => cu_err(r, &format!("cuLaunchKernel ({name})")),
        }
    }
}

/// One buffer slot of the plan: device memory, or pinned host memory with its device alias.
pub(crate) struct Buffer {
    pub(crate) ptr: cu::CUdeviceptr,
    pub(crate) host: *mut c_void,
    pub(crate) bytes: u64,
}

/// A CUDA event owned by a [`Device`] (destroyed with it); a handle, not a pointer to
/// dereference.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event(pub(crate) cu::CUevent);

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

impl<'a> At<'a> {
    /// Step `step` at its places in the image `df`.
    pub fn step(df: &'a kc_core::plan::types::PlanDataflow, step: u32) -> At<'a> {
        At::Step {
            step,
            places: &df.steps[step as usize],
        }
    }
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
    /// L2's bytes, as the driver reports them.
    pub l2_bytes: u64,
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

pub struct Device {
    pub streams: Vec<cu::CUstream>,
    pub(crate) buffers: Vec<Buffer>,
    /// Extra copies of a slot for cold-cache rotation: copy k >= 1 is `copies[slot][k-1]`.
    copies: HashMap<u32, Vec<cu::CUdeviceptr>>,
    /// Scratch memory held now ([`Device::alloc_scratch`]), freed by drop if not before.
    pub(crate) scratch: Vec<cu::CUdeviceptr>,
    events: Vec<Event>,
    /// The plan's memory image for graph mode (0 until [`Device::allocate_arena`]).
    pub(crate) arena: cu::CUdeviceptr,
    /// The image's size in bytes (0 until it is allocated).
    pub(crate) arena_bytes: u64,
    /// A copy of the image holding the model's values ([`Device::snapshot_arena`]), and its
    /// size (0 until taken).
    pub(crate) arena_snapshot: (cu::CUdeviceptr, u64),
    /// The operands of the step being enqueued that read a result another back end
    /// allocated outside the image, by slot, at that result's address (set by
    /// `Gpu::enqueue` around one step; empty otherwise).
    pub(crate) step_overrides: std::cell::RefCell<Vec<(u32, cu::CUdeviceptr)>>,
    /// The spin kernel's module and function, once loaded ([`Device::load_spin`]).
    pub(crate) spin: Option<(cu::CUmodule, cu::CUfunction)>,
    /// The touch kernel, once loaded ([`Device::load_touch`]).
    pub(crate) touch: Option<touch::Touch>,
    /// The code-evicting kernel's module and function, once loaded
    /// ([`Device::load_code_evict`]).
    pub(crate) code_evict: Option<(cu::CUmodule, cu::CUfunction)>,
    /// The shared-memory kernel's module, function and the dynamic shared memory it is
    /// launched with, once loaded ([`Device::load_carveout`]).
    pub(crate) carveout: Option<(cu::CUmodule, cu::CUfunction, u32)>,
    pub facts: DeviceFacts,
}

impl Device {
    /// Opens device `ordinal` (a rank's `LOCAL_RANK`) with `streams` streams.
    pub fn open_on(ordinal: u32, streams: usize) -> Result<Device, ExecError> {
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
                return Err(ExecError::NoSuchDevice { ordinal, count });
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
            let mut l2 = 0;
            cu_err(
                cu::cuDeviceGetAttribute(
                    &mut l2,
                    cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                    dev,
                ),
                "cuDeviceGetAttribute",
            )?;
            let mut driver = 0;
            cu_err(cu::cuDriverGetVersion(&mut driver), "cuDriverGetVersion")?;
            let mut gpu = Device {
                streams: Vec::new(),
                buffers: Vec::new(),
                copies: HashMap::new(),
                scratch: Vec::new(),
                arena: 0,
                arena_bytes: 0,
                arena_snapshot: (0, 0),
                step_overrides: std::cell::RefCell::new(Vec::new()),
                spin: None,
                touch: None,
                code_evict: None,
                carveout: None,
                events: Vec::new(),
                facts: DeviceFacts {
                    name,
                    total_memory: total as u64,
                    free_memory: free as u64,
                    sm_count: sms,
                    sm: (major * 10 + minor) as u32,
                    driver_version: driver,
                    cublas_version: None,
                    l2_bytes: l2.max(0) as u64,
                },
            };
            for _ in 0..streams.max(1) {
                let mut s: cu::CUstream = std::ptr::null_mut();
                cu_err(
                    cu::cuStreamCreate(&mut s, cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
                    "cuStreamCreate",
                )?;
                gpu.streams.push(s);
            }
            Ok(gpu)
        }
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
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: frees what `open` and `allocate` made, after the device is idle (the back
        // ends, which use these streams and buffers, are gone first: see `Gpu`'s drop).
        // Errors are ignored: nothing can be done about them while dropping.
        unsafe {
            cu::cuCtxSynchronize();
            if let Some((m, _)) = self.spin.take() {
                cu::cuModuleUnload(m);
            }
            if let Some(t) = self.touch.take() {
                cu::cuModuleUnload(t.module);
            }
            if let Some((m, _)) = self.code_evict.take() {
                cu::cuModuleUnload(m);
            }
            if let Some((m, _, _)) = self.carveout.take() {
                cu::cuModuleUnload(m);
            }
            for e in self.events.drain(..) {
                cu::cuEventDestroy_v2(e.0);
            }
            for (_, v) in self.copies.drain() {
                for p in v {
                    cu::cuMemFree_v2(p);
                }
            }
            for p in self.scratch.drain(..) {
                cu::cuMemFree_v2(p);
            }
            if self.arena != 0 {
                cu::cuMemFree_v2(self.arena);
            }
            if self.arena_snapshot.0 != 0 {
                cu::cuMemFree_v2(self.arena_snapshot.0);
            }
            for b in self.buffers.drain(..) {
                if b.host.is_null() {
                    cu::cuMemFree_v2(b.ptr);
                } else {
                    cu::cuMemFreeHost(b.host);
                }
            }
            for s in self.streams.drain(..) {
                cu::cuStreamDestroy_v2(s);
            }
        }
    }
}
