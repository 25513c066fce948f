//! The device core's memory: the plan's buffer slots (filled with finite values), the
//! extra copies cold-cache rotation needs, and the model's memory image (every region filled
//! with values of its element type and role), with the non-finite check of the image.
//!
//! Invariant: every allocation is freed by [`super::Device`]'s drop; fills write only
//! inside the allocation they name.

use super::{cu_err, At, Buffer, Device};
use crate::ExecError;
use cudarc::driver::sys as cu;
use kc_core::plan::types::{ElemType, Location, Plan, PlanUnit, RegionInit};
use std::collections::HashMap;
use std::ffi::c_void;

/// One end of a copy of image bytes ([`Device::enqueue_image_copy`]): an offset into
/// the image or its snapshot, or an address in scratch memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageAt {
    Image(u64),
    Snapshot(u64),
    Scratch(cu::CUdeviceptr),
}

impl Device {
    pub fn alloc_raw(&mut self, bytes: u64) -> Result<cu::CUdeviceptr, ExecError> {
        let mut p: cu::CUdeviceptr = 0;
        // SAFETY: a plain allocation with a valid out-pointer.
        let r = unsafe { cu::cuMemAlloc_v2(&mut p, bytes.max(1) as usize) };
        if r == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            // The memory free now, not at the start: an allocation mid-pass fails beside
            // the image, its snapshot and libtorch's cached blocks (Qwen3-MoE's step read
            // "102635 MiB free" from the start where 14 GiB did not fit, session 44).
            return Err(ExecError::OutOfMemory {
                needed: bytes,
                free: self.memory_info().map_or(self.facts.free_memory, |m| m.0),
            });
        }
        cu_err(r, "cuMemAlloc")?;
        Ok(p)
    }

    /// Allocates every buffer of the plan and fills it with values in [-1, 1), as
    /// half-precision bit patterns that read as finite numbers in f16, bf16 and f32 alike.
    /// `reserved` is what the back ends hold besides (cuBLAS workspaces), for the check.
    pub fn allocate(&mut self, plan: &Plan, reserved: u64) -> Result<(), ExecError> {
        let needed = plan.memory.device_bytes + reserved;
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

    pub fn fill(
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

    pub fn ptr(&self, slot: u32, copy: u32) -> cu::CUdeviceptr {
        if copy > 0 {
            if let Some(v) = self.copies.get(&slot) {
                return v[(copy as usize - 1) % v.len()];
            }
        }
        self.buffers[slot as usize].ptr
    }

    /// The address of operand `slot` of `unit` for an invocation `at`.
    pub fn addr(&self, unit: &PlanUnit, slot: u32, at: At<'_>) -> cu::CUdeviceptr {
        match at {
            At::Slots(copy) => self.ptr(slot, copy),
            At::Step { places, .. } => {
                // A read bound to a result another back end allocated takes its address.
                let bound = self
                    .step_overrides
                    .borrow()
                    .iter()
                    .find(|o| o.0 == slot)
                    .map(|o| o.1);
                match (bound, places.operand_of(unit, slot)) {
                    (Some(a), _) => a,
                    (None, Some(off)) if self.arena != 0 => self.arena + off,
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
        self.arena_bytes = df.arena_bytes;
        self.fill_arena(df)
    }

    /// The share of the GPU's memory free now (0-1).
    pub fn free_memory_share(&self) -> Result<f64, ExecError> {
        let (free, total) = self.memory_info()?;
        Ok(free as f64 / total.max(1) as f64)
    }

    /// The GPU's memory free now, bytes.
    pub fn free_memory_bytes(&self) -> Result<u64, ExecError> {
        Ok(self.memory_info()?.0)
    }

    /// (free, total) bytes of the GPU's memory now.
    fn memory_info(&self) -> Result<(u64, u64), ExecError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: a query with valid out-pointers.
        unsafe { cu_err(cu::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
        Ok((free as u64, total as u64))
    }

    /// Keeps a copy of the memory image as it is now (the model's values, after the pass that
    /// restores them), so that [`Self::restore_arena_snapshot`] can give every place those
    /// values again with one device-to-device copy. Returns false, taking nothing, where the
    /// copy would not leave `headroom` bytes free (the caller then restores by the pass).
    pub fn snapshot_arena(
        &mut self,
        df: &kc_core::plan::types::PlanDataflow,
        headroom: u64,
    ) -> Result<bool, ExecError> {
        if self.arena == 0 || df.arena_bytes == 0 {
            return Ok(false);
        }
        let bytes = df.arena_bytes;
        if self.arena_snapshot.0 == 0 {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: a query with valid out-pointers.
            unsafe { cu_err(cu::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
            if bytes.saturating_add(headroom) > free as u64 {
                return Ok(false);
            }
            self.arena_snapshot = (self.alloc_raw(bytes)?, bytes);
        }
        // SAFETY: the snapshot and the arena are live allocations of at least `bytes`; the
        // context synchronises first, so nothing still writes the arena.
        unsafe {
            cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize")?;
            cu_err(
                cu::cuMemcpyDtoD_v2(self.arena_snapshot.0, self.arena, bytes as usize),
                "cuMemcpyDtoD",
            )?;
            cu_err(cu::cuCtxSynchronize(), "cuCtxSynchronize")?;
        }
        Ok(true)
    }

    /// Whether a snapshot of the image is held.
    pub fn has_arena_snapshot(&self) -> bool {
        self.arena_snapshot.0 != 0
    }

    /// Writes the snapshot back over the whole image (one copy), and waits for it. The
    /// device synchronises first, so no launch still reads or writes the image while it is
    /// overwritten.
    pub fn restore_arena_snapshot(&self) -> Result<(), ExecError> {
        self.synchronize()?;
        self.enqueue_snapshot_restore(0)?;
        self.synchronize()
    }

    /// Enqueues the copy of the snapshot over the image on stream `stream`, without waiting
    /// (captured into a graph when the stream captures): the round that restores the model's
    /// values before each launch starts its graph with it.
    pub fn enqueue_snapshot_restore(&self, stream: usize) -> Result<(), ExecError> {
        self.enqueue_snapshot_spans(stream, &[(0, self.arena_snapshot.1)])
    }

    /// Enqueues copies of the snapshot over the image at `spans` (arena offset, bytes)
    /// only, on stream `stream`, without waiting: a unit measured from the model's values
    /// starts each launch with its own places copied back.
    pub fn enqueue_snapshot_spans(
        &self,
        stream: usize,
        spans: &[(u64, u64)],
    ) -> Result<(), ExecError> {
        let (snap, bytes) = self.arena_snapshot;
        if snap == 0 || self.arena == 0 {
            return Err(ExecError::NoSnapshot);
        }
        for &(off, len) in spans {
            if off.saturating_add(len) > bytes {
                return Err(ExecError::OutsideImage {
                    offset: off,
                    bytes: len,
                    image: bytes,
                });
            }
            // SAFETY: both allocations are live and `bytes` long, and the span lies inside
            // them (checked above); the copy is ordered on the stream.
            unsafe {
                cu_err(
                    cu::cuMemcpyDtoDAsync_v2(
                        self.arena + off,
                        snap + off,
                        len as usize,
                        self.streams[stream],
                    ),
                    "cuMemcpyDtoDAsync",
                )?;
            }
        }
        Ok(())
    }

    /// Device memory of `bytes` beside the image, for values kept from it
    /// ([`Self::enqueue_image_copy`]); given back by [`Self::free_scratch`].
    pub fn alloc_scratch(&mut self, bytes: u64) -> Result<cu::CUdeviceptr, ExecError> {
        let p = self.alloc_raw(bytes)?;
        self.scratch.push(p);
        Ok(p)
    }

    /// Frees memory [`Self::alloc_scratch`] gave, once nothing uses it (the device
    /// synchronises first).
    pub fn free_scratch(&mut self, p: cu::CUdeviceptr) -> Result<(), ExecError> {
        let Some(at) = self.scratch.iter().position(|&q| q == p) else {
            return Ok(());
        };
        self.scratch.swap_remove(at);
        self.synchronize()?;
        // SAFETY: `p` came from `alloc_scratch` and no enqueued work uses it any more.
        unsafe { cu_err(cu::cuMemFree_v2(p), "cuMemFree") }
    }

    /// Enqueues a copy of `len` bytes from `from` to `to` on stream 0, without waiting:
    /// between the image, its snapshot and scratch memory, each image or snapshot offset
    /// checked against the image's size.
    pub fn enqueue_image_copy(
        &self,
        from: ImageAt,
        to: ImageAt,
        len: u64,
    ) -> Result<(), ExecError> {
        let resolve = |at: ImageAt| -> Result<cu::CUdeviceptr, ExecError> {
            let (base, size, off) = match at {
                ImageAt::Image(off) => (self.arena, self.arena_bytes, off),
                ImageAt::Snapshot(off) => (self.arena_snapshot.0, self.arena_snapshot.1, off),
                ImageAt::Scratch(p) => return Ok(p),
            };
            if base == 0 {
                return Err(ExecError::NoSnapshot);
            }
            if off.saturating_add(len) > size {
                return Err(ExecError::OutsideImage {
                    offset: off,
                    bytes: len,
                    image: size,
                });
            }
            Ok(base + off)
        };
        let (src, dst) = (resolve(from)?, resolve(to)?);
        // SAFETY: both ends lie inside live allocations (checked above, or scratch memory
        // the caller sized); the copy is ordered on stream 0.
        unsafe {
            cu_err(
                cu::cuMemcpyDtoDAsync_v2(dst, src, len as usize, self.streams[0]),
                "cuMemcpyDtoDAsync",
            )
        }
    }

    /// The size of the snapshot of the image (0 when none is held).
    pub fn arena_snapshot_bytes(&self) -> u64 {
        self.arena_snapshot.1
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

    /// Non-finite and all floating-point values in a sample of the `bytes` at arena offset
    /// `offset`, read as `dtype`, and the largest finite magnitude; other types count
    /// nothing. Up to 64 KiB are read: all of a small place, else 16 windows of 4 KiB spread
    /// evenly over it, so values that ran away at the far end of a large tensor (an
    /// embedding's rows, a logits buffer's last rows) are seen too.
    pub fn nonfinite_at(
        &self,
        offset: u64,
        bytes: u64,
        dtype: ElemType,
    ) -> Result<(u64, u64, f64), ExecError> {
        let c = self.census_at(offset, bytes, dtype)?;
        Ok((c.nonfinite, c.all, c.largest))
    }

    /// The census of the values sampled as [`Self::nonfinite_at`] samples them: non-finite,
    /// zero and all floating-point values, and the largest finite magnitude.
    pub fn census_at(&self, offset: u64, bytes: u64, dtype: ElemType) -> Result<Census, ExecError> {
        const SAMPLE: u64 = 64 << 10;
        const WINDOWS: u64 = 16;
        if self.arena == 0 || bytes == 0 {
            return Ok(Census::default());
        }
        let windows: Vec<(u64, u64)> = if bytes <= SAMPLE {
            vec![(0, bytes)]
        } else {
            let w = SAMPLE / WINDOWS;
            // Window starts 16-byte aligned so no element is read across its boundary.
            (0..WINDOWS)
                .map(|k| ((bytes - w) * k / (WINDOWS - 1) / 16 * 16, w))
                .collect()
        };
        let mut census = Census::default();
        let mut buf = vec![0u8; SAMPLE as usize];
        for (at, len) in windows {
            // SAFETY: reads `len` bytes starting inside `[offset, offset + bytes)` and ending
            // at its end at the latest, inside the live arena (the caller passes a place and
            // a size the plan keeps inside the arena), into `buf`, which is at least `len`.
            unsafe {
                cu_err(
                    cu::cuMemcpyDtoH_v2(
                        buf.as_mut_ptr() as *mut c_void,
                        self.arena + offset + at,
                        len as usize,
                    ),
                    "cuMemcpyDtoH",
                )?;
            }
            census.add(&count_values(&buf[..len as usize], dtype));
        }
        Ok(census)
    }

    /// The share of non-finite values (NaN, infinity) in the floating-point regions of the
    /// memory image, read back from a 64 KiB sample of every region: data that
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
            let (b, a, _) = self.nonfinite_at(r.offset, r.bytes, r.dtype)?;
            bad += b;
            all += a;
        }
        Ok((all > 0).then(|| bad as f64 / all as f64))
    }
}

/// What a sample of floating-point values holds: non-finite, zero and all values, and the
/// largest finite magnitude.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Census {
    pub nonfinite: u64,
    pub zero: u64,
    pub all: u64,
    pub largest: f64,
}

impl Census {
    pub fn add(&mut self, o: &Census) {
        self.nonfinite += o.nonfinite;
        self.zero += o.zero;
        self.all += o.all;
        self.largest = self.largest.max(o.largest);
    }
}

/// The census of `b` read as `dtype` (floating-point types only; others count nothing).
fn count_values(b: &[u8], dtype: ElemType) -> Census {
    let values: Box<dyn Iterator<Item = f32> + '_> = match dtype {
        ElemType::F32 => Box::new(
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        ),
        ElemType::F16 => Box::new(
            b.chunks_exact(2)
                .map(|c| f16_value(u16::from_le_bytes([c[0], c[1]]))),
        ),
        // bf16 is the upper half of an f32.
        ElemType::BF16 => Box::new(
            b.chunks_exact(2)
                .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16)),
        ),
        _ => Box::new(std::iter::empty()),
    };
    let mut c = Census::default();
    for v in values {
        c.all += 1;
        if !v.is_finite() {
            c.nonfinite += 1;
        } else {
            c.zero += u64::from(v == 0.0);
            c.largest = c.largest.max(f64::from(v.abs()));
        }
    }
    c
}

/// The value of IEEE half-precision bits (infinities and NaN included).
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f32::from(h & 0x3ff);
    match exp {
        0 => sign * mant * 2f32.powi(-24),
        31 if mant == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + mant / 1024.0) * 2f32.powi(e - 15),
    }
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
            RegionInit::Small => 1e-3,
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
