//! A kernel that keeps one warp waiting for a given time on the GPU's global timer and does
//! nothing else: the gap the energy of a unit that alone draws past the power limit is
//! measured against (the unit and a spin alternate, so their mean power stays under the
//! limit and the clock where the model runs it; `procedure::isolated`). Loaded from PTX
//! embedded here, JIT-compiled by the driver, on first use.
//!
//! Invariant: the spin touches no memory; its one parameter is the time it waits, in
//! nanoseconds, measured on `%globaltimer`.

use super::Device;
use crate::ExecError;
use std::ffi::c_void;

/// `kc_spin(u64 ns)`: `nanosleep` in a loop until `%globaltimer` has advanced `ns`.
const SPIN_PTX: &std::ffi::CStr = cr#".version 7.0
.target sm_70
.address_size 64

.visible .entry kc_spin(
    .param .u64 kc_spin_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [kc_spin_ns];
    mov.u64 %rd2, %globaltimer;
$L_wait:
    nanosleep.u32 256;
    mov.u64 %rd3, %globaltimer;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_wait;
    ret;
}
"#;

impl Device {
    /// Loads the spin kernel into the context, once.
    pub fn load_spin(&mut self) -> Result<(), ExecError> {
        if self.spin.is_some() {
            return Ok(());
        }
        let (m, f) = super::load_ptx_entry(SPIN_PTX, c"kc_spin")?;
        self.spin = Some((m, f));
        Ok(())
    }

    /// Enqueues one spin of `ns` nanoseconds on `stream` (captured into a graph when the
    /// stream captures); [`Device::load_spin`] first.
    pub fn enqueue_spin(&self, stream: usize, ns: u64) -> Result<(), ExecError> {
        let (_, f) = self.spin.ok_or(ExecError::NoSpin)?;
        let mut ns = ns;
        let mut args = [&mut ns as *mut u64 as *mut c_void];
        // SAFETY: `f` is the loaded kc_spin, whose one parameter is a u64 read at launch;
        // one block of one warp, no shared memory.
        unsafe { self.launch_own_kernel(f, (1, 32, 0), stream, &mut args, "kc_spin") }
    }
}
