//! A kernel whose program is long straight-line code and does nothing else: run on every
//! SM, it fills each SM's instruction caches with its own code, so that a unit launched
//! after it fetches its code again from L2 or memory, as it does in a model where other
//! kernels ran on that SM since its last invocation. A unit recorded in the model's cache
//! state runs behind it where the model's code for its step is far (`procedure::isolated`,
//! `--model-cache-code`), and its records leave it out by name ([`CODE_EVICT_KERNEL`]). Its
//! PTX is generated here and JIT-compiled by the driver (0.8 s on the H200), on first use.
//!
//! Invariant: the kernel reads no memory and writes at most the touch kernel's 4-byte sink
//! (where a chain of squares of the SM clock lands on one constant), so it changes no value
//! of the image or of any operand.

use super::Device;
use crate::ExecError;
use std::ffi::c_void;

/// The kernel's name, as CUPTI records it.
pub const CODE_EVICT_KERNEL: &str = "kc_evict_code";

/// Steps of the chain; each is two instructions of 16 bytes (a multiply and an exclusive
/// or), so the program is 384 KiB, three times the 128 KiB instruction cache an SM of
/// Volta holds (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
/// Microbenchmarking", 2018); Hopper's is not published.
const STEPS: usize = 12 * 1024;

/// The PTX of `kc_evict_code(u64 sink)`: `STEPS` steps of `r = (r * r) ^ k_i` from the SM
/// clock, each `k_i` odd and different, so that no step folds into another; `r` goes to
/// `sink` only where it equals a constant, so that the chain stays in the program.
fn ptx() -> std::ffi::CString {
    use std::fmt::Write;
    let mut s = String::with_capacity(STEPS * 64 + 1024);
    s.push_str(
        ".version 7.0\n.target sm_70\n.address_size 64\n\n\
         .visible .entry kc_evict_code(\n    .param .u64 kc_evict_code_sink\n)\n{\n\
         \x20   .reg .pred %p1;\n    .reg .b32 %r1;\n    .reg .b64 %rd1;\n\n\
         \x20   ld.param.u64 %rd1, [kc_evict_code_sink];\n    mov.u32 %r1, %clock;\n",
    );
    // A Weyl sequence gives distinct odd constants without a table.
    let mut k: u32 = 0x2545_f491;
    for _ in 0..STEPS {
        k = k.wrapping_add(0x9e37_79b8) | 1;
        // Writing to a String cannot fail.
        let _ = writeln!(
            s,
            "    mul.lo.u32 %r1, %r1, %r1;\n    xor.b32 %r1, %r1, {k};"
        );
    }
    s.push_str(
        "    setp.eq.u32 %p1, %r1, -1640531527;\n    @%p1 st.global.u32 [%rd1], %r1;\n    ret;\n}\n",
    );
    std::ffi::CString::new(s).expect("generated PTX holds no NUL")
}

impl Device {
    /// Loads the code-evicting kernel into the context, once (with the touch kernel, whose
    /// sink it shares).
    pub fn load_code_evict(&mut self) -> Result<(), ExecError> {
        if self.code_evict.is_some() {
            return Ok(());
        }
        self.load_touch()?;
        let (m, f) = super::load_ptx_entry(&ptx(), c"kc_evict_code")?;
        self.code_evict = Some((m, f));
        Ok(())
    }

    /// Enqueues the code-evicting kernel on `stream` (captured into a graph when the stream
    /// captures): two blocks of one warp per SM, so that every SM runs its whole program;
    /// [`Device::load_code_evict`] first.
    pub fn evict_code(&self, stream: usize) -> Result<(), ExecError> {
        let (_, f) = self.code_evict.ok_or(ExecError::NoCodeEvict)?;
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let mut sink: u64 = t.sink;
        let mut args = [&mut sink as *mut u64 as *mut c_void];
        let blocks = 2 * self.facts.sm_count.max(1) as u32;
        // SAFETY: `f` is the loaded kc_evict_code, whose one parameter is a u64 read at
        // launch; it reads no memory and may write 4 bytes at the touch kernel's sink, a
        // live scratch allocation of 32 bytes.
        unsafe { self.launch_own_kernel(f, (blocks, 32, 0), stream, &mut args, "kc_evict_code") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_straight_line_code_of_distinct_steps() {
        let p = ptx().into_string().unwrap();
        assert_eq!(p.matches("mul.lo.u32").count(), STEPS);
        assert_eq!(p.matches("xor.b32").count(), STEPS);
        // No loop: the only branch-free program has no label and no `bra`.
        assert!(!p.contains("bra"));
        let ks: std::collections::HashSet<&str> = p
            .lines()
            .filter_map(|l| l.trim().strip_prefix("xor.b32 %r1, %r1, "))
            .collect();
        assert_eq!(ks.len(), STEPS, "every step's constant differs");
        assert!(p.contains(".visible .entry kc_evict_code("));
    }
}
