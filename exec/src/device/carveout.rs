//! A kernel that takes all the shared memory a block may have on every SM and does next to
//! nothing with it: run just before a unit, it leaves every SM's L1 split as a large GEMM
//! or an attention kernel leaves it, so that a unit whose kernels want another split starts
//! after the SM changes it back, as after such a kernel in a model. A diagnostic of the
//! record in the model's cache state (`--model-cache-smem-predecessor`,
//! `procedure::isolated`); its records are left out by name ([`CARVEOUT_KERNEL`]).
//!
//! Invariant: the kernel writes and reads back one word of shared memory per thread and
//! writes at most the touch kernel's 4-byte sink (where the word read differs from the word
//! written, which it never does), so it changes no value of the image or of any operand.

use super::{cu_err, Device};
use crate::ExecError;
use cudarc::driver::sys as cu;
use std::ffi::c_void;

/// The kernel's name, as CUPTI records it.
pub const CARVEOUT_KERNEL: &str = "kc_smem_fill";

/// `kc_smem_fill(u64 sink)`: each thread stores its index in shared memory and loads it
/// back after a barrier; the dynamic shared memory it is launched with sets the split.
const CARVEOUT_PTX: &std::ffi::CStr = cr#".version 7.0
.target sm_70
.address_size 64

.extern .shared .align 16 .b8 kc_smem[];

.visible .entry kc_smem_fill(
    .param .u64 kc_smem_fill_sink
)
{
    .reg .pred %p1;
    .reg .b32 %r<5>;
    .reg .b64 %rd1;

    ld.param.u64 %rd1, [kc_smem_fill_sink];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, kc_smem;
    add.u32 %r3, %r3, %r2;
    st.shared.u32 [%r3], %r1;
    bar.sync 0;
    ld.shared.u32 %r4, [%r3];
    setp.ne.u32 %p1, %r4, %r1;
    @%p1 st.global.u32 [%rd1], %r4;
    ret;
}
"#;

impl Device {
    /// Loads the shared-memory kernel into the context, once, allowed the most dynamic
    /// shared memory a block may opt in to (with the touch kernel, whose sink it shares).
    pub fn load_carveout(&mut self) -> Result<(), ExecError> {
        if self.carveout.is_some() {
            return Ok(());
        }
        self.load_touch()?;
        let (m, f) = super::load_ptx_entry(CARVEOUT_PTX, c"kc_smem_fill")?;
        let mut most = 0i32;
        // SAFETY: the context is current; `f` was just loaded; out-pointers are valid.
        let set = unsafe {
            let mut dev: cu::CUdevice = 0;
            cu_err(cu::cuCtxGetDevice(&mut dev), "cuCtxGetDevice").and_then(|_| {
                cu_err(
                    cu::cuDeviceGetAttribute(
                        &mut most,
                        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                        dev,
                    ),
                    "cuDeviceGetAttribute (shared memory opt-in)",
                )
            })
            .and_then(|_| {
                cu_err(
                    cu::cuFuncSetAttribute(
                        f,
                        cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        most,
                    ),
                    "cuFuncSetAttribute (kc_smem_fill)",
                )
            })
        };
        if let Err(e) = set {
            // SAFETY: the module was loaded above and nothing uses it yet.
            unsafe { cu::cuModuleUnload(m) };
            return Err(e);
        }
        self.carveout = Some((m, f, most.max(0) as u32));
        Ok(())
    }

    /// Enqueues the shared-memory kernel on `stream` (captured into a graph when the stream
    /// captures): one block of one warp per SM, each with all the shared memory a block may
    /// have, so that every SM runs one; [`Device::load_carveout`] first.
    pub fn fill_shared_memory(&self, stream: usize) -> Result<(), ExecError> {
        let (_, f, bytes) = self.carveout.ok_or(ExecError::NoCarveout)?;
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let mut sink: u64 = t.sink;
        let mut args = [&mut sink as *mut u64 as *mut c_void];
        // SAFETY: `f` is the loaded kc_smem_fill, whose one parameter is a u64 read at
        // launch, allowed `bytes` of dynamic shared memory; it touches its own shared
        // memory and may write 4 bytes at the touch kernel's sink, a live scratch.
        unsafe {
            self.launch_own_kernel(
                f,
                (self.facts.sm_count.max(1) as u32, 32, bytes),
                stream,
                &mut args,
                "kc_smem_fill",
            )
        }
    }
}
