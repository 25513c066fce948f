//! A kernel that reads (or reads and writes back unchanged) one 4-byte word of every
//! 32-byte sector of a span of device memory: it brings the span into L2 as the model's
//! last touch of it left it (a read clean, a write dirty), or, over a scratch twice L2,
//! turns L2 over; reading one word a page of a larger scratch, it turns the GPU's address
//! translation caches over (a diagnostic). A unit recorded in the model's cache state
//! (`procedure::isolated`) runs behind these, and its records leave them out by name
//! ([`TOUCH_KERNEL`]). Loaded from PTX embedded here, JIT-compiled by the driver, on first
//! use.
//!
//! Invariant: a touch changes no byte's value (a write stores back the word it read, each
//! word by one thread); it reads and writes only inside the span it is given, the span
//! rounded out to whole sectors inside the allocation the caller names.

use super::{cu_err, Device};
use crate::ExecError;
use cudarc::driver::sys as cu;
use std::ffi::c_void;

/// The touch kernel's name, as CUPTI records it.
pub const TOUCH_KERNEL: &str = "kc_touch";

/// The touch from chosen SMs only ([`Device::touch_held_on_sms`]), as CUPTI records it.
pub const TOUCH_ON_SMS_KERNEL: &str = "kc_touch_on_sms";

/// A kernel that does nothing, to mark a place in a launch ([`Device::mark`]), as CUPTI
/// records it.
pub const MARK_KERNEL: &str = "kc_mark";

/// The loaded touch kernel and the memory it keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Touch {
    pub(crate) module: cu::CUmodule,
    function: cu::CUfunction,
    /// `kc_touch_on_sms`, of the same module.
    on_sms: cu::CUfunction,
    /// `kc_mark`, of the same module.
    mark: cu::CUfunction,
    /// A 4-byte word the touch (and the code-evicting and shared-memory kernels) may write.
    pub(crate) sink: cu::CUdeviceptr,
    /// A scratch of twice L2, and its bytes ([`Device::turn_l2_over`]).
    flush: (cu::CUdeviceptr, u64),
    /// A scratch of many pages, and its bytes, once allocated ([`Device::turn_tlb_over`]).
    tlb: Option<(cu::CUdeviceptr, u64)>,
}

/// The bytes of L2 a sector is.
const SECTOR: u64 = 32;

/// The bytes of a page of the GPU's large allocations.
const PAGE: u64 = 2 << 20;

/// The span [`Device::turn_tlb_over`] reads a word of each page of: 8 192 pages, more than
/// the GPU's address translation caches are thought to hold (Hopper's are not published).
const TLB_SPAN: u64 = 16 << 30;

/// `kc_touch(u64 base, u64 sectors, u32 write, u64 sink, u64 stride)`: for every `i` of
/// `sectors`, load the first word at `base + i * stride` (`base` 32-byte aligned, `stride`
/// a sector or a page); where `write`, store it back. The loads' exclusive or goes to
/// `sink` only where it equals a constant, so that the loads stay in the program and
/// `sink` is almost never written.
const TOUCH_PTX: &std::ffi::CStr = cr#".version 7.0
.target sm_70
.address_size 64

.visible .entry kc_touch(
    .param .u64 kc_touch_base,
    .param .u64 kc_touch_sectors,
    .param .u32 kc_touch_write,
    .param .u64 kc_touch_sink,
    .param .u64 kc_touch_stride
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [kc_touch_base];
    ld.param.u64 %rd2, [kc_touch_sectors];
    ld.param.u32 %r1, [kc_touch_write];
    ld.param.u64 %rd3, [kc_touch_sink];
    ld.param.u64 %rd9, [kc_touch_stride];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, %nctaid.x;
    mul.wide.u32 %rd4, %r2, %r3;
    cvt.u64.u32 %rd5, %r4;
    add.u64 %rd4, %rd4, %rd5;
    mul.wide.u32 %rd6, %r5, %r3;
    mov.u32 %r6, 0;
    setp.ne.u32 %p2, %r1, 0;
$L_next:
    setp.ge.u64 %p1, %rd4, %rd2;
    @%p1 bra $L_done;
    mul.lo.u64 %rd7, %rd4, %rd9;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.u32 %r7, [%rd8];
    xor.b32 %r6, %r6, %r7;
    @%p2 st.global.u32 [%rd8], %r7;
    add.u64 %rd4, %rd4, %rd6;
    bra $L_next;
$L_done:
    setp.eq.u32 %p3, %r6, -1640531527;
    @%p3 st.global.u32 [%rd3], %r6;
    ret;
}

.visible .entry kc_touch_on_sms(
    .param .u64 kc_touch_on_sms_base,
    .param .u64 kc_touch_on_sms_sectors,
    .param .u32 kc_touch_on_sms_write,
    .param .u64 kc_touch_on_sms_sink,
    .param .u32 kc_touch_on_sms_lo,
    .param .u32 kc_touch_on_sms_hi
)
{
    .reg .pred %p<5>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;

    ld.param.u32 %r8, [kc_touch_on_sms_lo];
    ld.param.u32 %r9, [kc_touch_on_sms_hi];
    mov.u32 %r10, %smid;
    setp.lt.u32 %p4, %r10, %r8;
    @%p4 bra $L_done;
    setp.ge.u32 %p4, %r10, %r9;
    @%p4 bra $L_done;
    ld.param.u64 %rd1, [kc_touch_on_sms_base];
    ld.param.u64 %rd2, [kc_touch_on_sms_sectors];
    ld.param.u32 %r1, [kc_touch_on_sms_write];
    ld.param.u64 %rd3, [kc_touch_on_sms_sink];
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    cvt.u64.u32 %rd4, %r4;
    cvt.u64.u32 %rd6, %r3;
    mov.u32 %r6, 0;
    setp.ne.u32 %p2, %r1, 0;
$L_next:
    setp.ge.u64 %p1, %rd4, %rd2;
    @%p1 bra $L_end;
    mul.lo.u64 %rd7, %rd4, 32;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.u32 %r7, [%rd8];
    xor.b32 %r6, %r6, %r7;
    @%p2 st.global.u32 [%rd8], %r7;
    add.u64 %rd4, %rd4, %rd6;
    bra $L_next;
$L_end:
    setp.eq.u32 %p3, %r6, -1640531527;
    @%p3 st.global.u32 [%rd3], %r6;
$L_done:
    ret;
}

.visible .entry kc_mark()
{
    ret;
}
"#;

/// The words a touch of `[ptr, ptr + bytes)` reads, rounded out to whole sectors inside
/// the allocation `[lo, hi)`: the first word of every `stride` (a multiple of a sector)
/// from the span's first sector, as (its address, how many), each word inside the
/// allocation; `None` where there is none.
fn words_to_touch((lo, hi): (u64, u64), ptr: u64, bytes: u64, stride: u64) -> Option<(u64, u64)> {
    let start = (ptr.max(lo) / SECTOR * SECTOR).max(lo.next_multiple_of(SECTOR));
    let end = ptr.saturating_add(bytes).min(hi);
    if end <= start {
        return None;
    }
    let mut n = (end - start).div_ceil(stride);
    // A word of a sector past `hi` is never read.
    if start + (n - 1) * stride + 4 > hi {
        n -= 1;
    }
    (n > 0).then_some((start, n))
}

impl Device {
    /// Loads the touch kernel into the context, with its 4-byte sink and a scratch of
    /// twice L2 to turn L2 over with, once.
    pub fn load_touch(&mut self) -> Result<(), ExecError> {
        if self.touch.is_some() {
            return Ok(());
        }
        let (m, f) = super::load_ptx_entry(TOUCH_PTX, c"kc_touch")?;
        let mut on_sms: cu::CUfunction = std::ptr::null_mut();
        // SAFETY: `m` was loaded above and nothing uses it yet; the name is NUL-terminated;
        // a module whose second entry is not found is unloaded here.
        let found = unsafe {
            cu_err(
                cu::cuModuleGetFunction(&mut on_sms, m, c"kc_touch_on_sms".as_ptr()),
                "cuModuleGetFunction (kc_touch_on_sms)",
            )
        };
        let mut mark: cu::CUfunction = std::ptr::null_mut();
        // SAFETY: as above.
        let found = found.and_then(|()| unsafe {
            cu_err(
                cu::cuModuleGetFunction(&mut mark, m, c"kc_mark".as_ptr()),
                "cuModuleGetFunction (kc_mark)",
            )
        });
        if let Err(e) = found {
            // SAFETY: as above.
            unsafe { cu::cuModuleUnload(m) };
            return Err(e);
        }
        // Its memory, given back with the module where it cannot all be had: a unit's
        // record that fails here is tried again at the next unit, which must not find the
        // first attempt's scratch still held.
        let flush_bytes = 2 * self.facts.l2_bytes.max(1 << 20);
        let held =
            self.alloc_scratch(SECTOR)
                .and_then(|sink| match self.alloc_scratch(flush_bytes) {
                    Ok(flush) => Ok((sink, flush)),
                    Err(e) => {
                        let _ = self.free_scratch(sink);
                        Err(e)
                    }
                });
        let (sink, flush) = match held {
            Ok(h) => h,
            Err(e) => {
                // SAFETY: the module was loaded above and nothing uses it yet.
                unsafe { cu::cuModuleUnload(m) };
                return Err(e);
            }
        };
        self.touch = Some(Touch {
            module: m,
            function: f,
            on_sms,
            mark,
            sink,
            flush: (flush, flush_bytes),
            tlb: None,
        });
        Ok(())
    }

    /// Enqueues a touch of the image's bytes `[off, off + bytes)` on stream `stream`.
    pub fn touch_image(
        &self,
        stream: usize,
        off: u64,
        bytes: u64,
        write: bool,
    ) -> Result<(), ExecError> {
        if self.arena == 0 || off.saturating_add(bytes) > self.arena_bytes {
            return Err(ExecError::OutsideImage {
                offset: off,
                bytes,
                image: self.arena_bytes,
            });
        }
        let (lo, hi) = (self.arena, self.arena + self.arena_bytes);
        self.enqueue_touch(stream, (lo, hi), lo + off, bytes, write)
    }

    /// Enqueues a touch of device memory `[ptr, ptr + bytes)` outside the image on stream
    /// `stream` (read, or where `write` read and stored back unchanged): a back end's own
    /// tensors that a unit reads.
    ///
    /// # Safety
    /// The bytes lie inside one live allocation that stays allocated until the touch has
    /// run (or, captured, while the graph is launched), and no other work writes them
    /// while it runs.
    pub unsafe fn touch_held(
        &self,
        stream: usize,
        ptr: u64,
        bytes: u64,
        write: bool,
    ) -> Result<(), ExecError> {
        self.enqueue_touch(stream, (ptr, ptr.saturating_add(bytes)), ptr, bytes, write)
    }

    /// Enqueues a touch of `[ptr, ptr + bytes)` outside the image on stream `stream` (as
    /// [`Device::touch_held`]) by the blocks that run on SMs `sms.0..sms.1` only (`%smid`),
    /// each of them touching every sector: four one-warp blocks an SM, so that every SM
    /// runs some (a diagnostic: whether the SMs that last touched a line set how fast a
    /// one-block kernel reads it).
    ///
    /// # Safety
    /// As [`Device::touch_held`].
    pub unsafe fn touch_held_on_sms(
        &self,
        stream: usize,
        ptr: u64,
        bytes: u64,
        write: bool,
        sms: (u32, u32),
    ) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let span = (ptr, ptr.saturating_add(bytes));
        let Some((mut base, mut sectors)) = words_to_touch(span, ptr, bytes, SECTOR) else {
            return Ok(());
        };
        let mut write: u32 = write.into();
        let mut sink: u64 = t.sink;
        let (mut lo, mut hi) = sms;
        let mut args = [
            &mut base as *mut u64 as *mut c_void,
            &mut sectors as *mut u64 as *mut c_void,
            &mut write as *mut u32 as *mut c_void,
            &mut sink as *mut u64 as *mut c_void,
            &mut lo as *mut u32 as *mut c_void,
            &mut hi as *mut u32 as *mut c_void,
        ];
        let blocks = 4 * self.facts.sm_count.max(1) as u32;
        // SAFETY: `on_sms` is the loaded kc_touch_on_sms, whose six parameters `args` holds;
        // it reads (and where `write` stores back) the first word of `sectors` sectors from
        // `base`, the last word ending inside `[ptr, ptr + bytes)` (above), which the caller
        // keeps allocated, and may write its sink.
        unsafe {
            self.launch_own_kernel(
                t.on_sms,
                (blocks, 32, 0),
                stream,
                &mut args,
                "kc_touch_on_sms",
            )
        }
    }

    /// Enqueues a kernel of one block that does nothing on stream `stream`: it marks where
    /// a unit's invocation starts in a launch that runs other work before it
    /// (`fidelity::after_markers`).
    pub fn mark(&self, stream: usize) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        // SAFETY: `mark` is the loaded kc_mark, which takes no parameters and touches no
        // memory.
        unsafe { self.launch_own_kernel(t.mark, (1, 32, 0), stream, &mut [], "kc_mark") }
    }

    /// Enqueues a read of the first sector of the scratch on stream `stream`: a kernel of
    /// one block that touches 32 bytes, to stand just before a unit.
    pub fn touch_scratch_sector(&self, stream: usize) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let (p, bytes) = t.flush;
        self.enqueue_touch(stream, (p, p + bytes), p, SECTOR, false)
    }

    /// Enqueues, on stream `stream`, L2 turned over as the model's recent steps leave it:
    /// a read of a scratch twice L2 (what L2 held before is evicted, as a model's steps
    /// that touch more than L2 between two reads leave it), then `dirty` bytes of the
    /// scratch written back unchanged, so that L2 holds as many dirty bytes as those
    /// steps wrote among the last L2 of bytes they touched. Session 51 compared the
    /// scratch all written (Mistral's decode GEMMs, which stream 117 MB of weights, then
    /// wrote its lines back as they read: 38.3 us against 30.8 in kc's graph, the units
    /// +7.2 % in sum), all read, and written then discarded from L2.
    pub fn turn_l2_over(&self, stream: usize, dirty: u64) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let (p, bytes) = t.flush;
        self.enqueue_touch(stream, (p, p + bytes), p, bytes, false)?;
        if dirty > 0 {
            self.enqueue_touch(stream, (p, p + bytes), p, dirty.min(bytes), true)?;
        }
        Ok(())
    }

    /// Enqueues, on stream `stream`, a read of one word in each 2 MiB page of a scratch of
    /// [`TLB_SPAN`] (or a quarter of the free memory, where less): the pages the GPU's
    /// address translation caches held before are displaced, as a model's steps that
    /// touch other memory leave them (a diagnostic, `--model-cache-tlb-evicted`); L2 takes
    /// one sector a page. [`Device::load_tlb_turnover`] first.
    pub fn turn_tlb_over(&self, stream: usize) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let (p, bytes) = t.tlb.ok_or(ExecError::NoTlbScratch)?;
        self.enqueue_touch_every(stream, (p, p + bytes), p, bytes, false, PAGE)
    }

    /// Allocates the scratch [`Device::turn_tlb_over`] reads, once (the touch kernel
    /// loaded first).
    pub fn load_tlb_turnover(&mut self) -> Result<(), ExecError> {
        self.load_touch()?;
        if self.touch.as_ref().is_some_and(|t| t.tlb.is_some()) {
            return Ok(());
        }
        let bytes = TLB_SPAN.min(self.facts.free_memory / 4) / PAGE * PAGE;
        let p = self.alloc_scratch(bytes.max(PAGE))?;
        if let Some(t) = self.touch.as_mut() {
            t.tlb = Some((p, bytes.max(PAGE)));
        }
        Ok(())
    }

    /// Enqueues one touch of `[ptr, ptr + bytes)` on `stream` (captured into a graph when
    /// the stream captures), rounded out to whole sectors within `[lo, hi)`, the
    /// allocation it lies in; [`Device::load_touch`] first.
    fn enqueue_touch(
        &self,
        stream: usize,
        (lo, hi): (cu::CUdeviceptr, cu::CUdeviceptr),
        ptr: cu::CUdeviceptr,
        bytes: u64,
        write: bool,
    ) -> Result<(), ExecError> {
        self.enqueue_touch_every(stream, (lo, hi), ptr, bytes, write, SECTOR)
    }

    /// [`Device::enqueue_touch`] of one word every `stride` bytes (a multiple of a sector).
    fn enqueue_touch_every(
        &self,
        stream: usize,
        (lo, hi): (cu::CUdeviceptr, cu::CUdeviceptr),
        ptr: cu::CUdeviceptr,
        bytes: u64,
        write: bool,
        stride: u64,
    ) -> Result<(), ExecError> {
        let t = self.touch.as_ref().ok_or(ExecError::NoTouch)?;
        let (f, sink) = (t.function, t.sink);
        let Some((mut base, mut sectors)) = words_to_touch((lo, hi), ptr, bytes, stride) else {
            return Ok(());
        };
        let mut stride: u64 = stride;
        let mut write: u32 = write.into();
        let mut sink: u64 = sink;
        let threads = 256u32;
        let blocks = sectors
            .div_ceil(u64::from(threads))
            .min(self.facts.sm_count.max(1) as u64 * 8) as u32;
        let mut args = [
            &mut base as *mut u64 as *mut c_void,
            &mut sectors as *mut u64 as *mut c_void,
            &mut write as *mut u32 as *mut c_void,
            &mut sink as *mut u64 as *mut c_void,
            &mut stride as *mut u64 as *mut c_void,
        ];
        // SAFETY: `f` is the loaded kc_touch, whose five parameters `args` holds; it reads
        // and writes back the first word of whole sectors `stride` apart from `base`, the
        // last of which ends inside `[lo, hi)` (checked above), and may write its sink.
        unsafe { self.launch_own_kernel(f, (blocks, threads, 0), stream, &mut args, "kc_touch") }
    }
}

#[cfg(test)]
mod tests {
    use super::{words_to_touch, SECTOR};

    #[test]
    fn a_touch_reads_a_word_of_every_whole_sector_inside_its_span() {
        // A sector-aligned span of 100 bytes: words at 0, 32, 64 and 96 (it ends at 100).
        assert_eq!(words_to_touch((0, 1 << 20), 0, 100, SECTOR), Some((0, 4)));
        // Rounded out inside the allocation: 97 bytes reach into the sector at 96.
        assert_eq!(words_to_touch((0, 1 << 20), 0, 97, SECTOR), Some((0, 4)));
        // An allocation of 99 bytes: the word at 96 would end past it.
        assert_eq!(words_to_touch((0, 99), 0, 99, SECTOR), Some((0, 3)));
        // Unaligned: from the first whole sector at or after the allocation's start.
        assert_eq!(words_to_touch((40, 140), 40, 100, SECTOR), Some((64, 3)));
        // Inside a larger allocation, the span's own first sector, rounded down.
        assert_eq!(words_to_touch((0, 1 << 20), 40, 100, SECTOR), Some((32, 4)));
        // Too short for a word, empty, or past the allocation: none.
        assert_eq!(words_to_touch((33, 36), 33, 3, SECTOR), None);
        assert_eq!(words_to_touch((0, 64), 0, 0, SECTOR), None);
        assert_eq!(words_to_touch((0, 64), 100, 10, SECTOR), None);
        // A page stride: one word a page, the last page's first word inside.
        let page = 2 << 20;
        assert_eq!(
            words_to_touch((0, 3 * page), 0, 3 * page, page),
            Some((0, 3))
        );
        assert_eq!(
            words_to_touch((0, 2 * page + 4), 0, 2 * page + 4, page),
            Some((0, 3))
        );
    }
}
