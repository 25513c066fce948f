//! The device core's kernel recorder (`kc exec --verify`): CUPTI's activity API (cudarc's
//! bindings, libcupti loaded at run time like the other CUDA libraries) records every
//! kernel the GPU runs while [`record`] runs its closure: name, grid, block, registers,
//! shared memory, start and end on the GPU clock, and its graph node. [`record_with_copies`]
//! also records the copies and fills (memcpy and memset activity), which a graph runs as
//! copy nodes that no kernel record shows.
//!
//! Invariant: recording is enabled only for the closure and always disabled after it; the
//! buffers CUPTI fills are kc's (allocated in the request callback, freed once parsed).

use crate::ExecError;
use cudarc::cupti::sys;
use kc_core::results::fidelity::{CopyRecord, KernelRecord};
use std::alloc::{alloc, dealloc, Layout};
use std::sync::Mutex;

const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;

/// Records parsed from completed buffers, until [`record`] takes them.
static RECORDS: Mutex<Vec<KernelRecord>> = Mutex::new(Vec::new());
/// Copy and fill records, likewise.
static COPIES: Mutex<Vec<CopyRecord>> = Mutex::new(Vec::new());

fn layout() -> Layout {
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("constant layout")
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    // SAFETY: CUPTI hands valid out-pointers; the buffer is freed in buffer_completed,
    // which CUPTI calls for every buffer it requested.
    unsafe {
        *buffer = alloc(layout());
        *size = if (*buffer).is_null() { 0 } else { BUFFER_BYTES };
        *max = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    _ctx: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut out = Vec::new();
    let mut copies = Vec::new();
    let mut rec: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: CUPTI walks its own buffer of `valid` bytes; records are read with unaligned
    // reads because the structs are packed. The memcpy and memset records are read by the
    // layout of CUDA 13.0's (Memcpy6, Memset4): later versions append fields, and only
    // the leading ones up to the graph node are read.
    unsafe {
        while sys::cuptiActivityGetNextRecord(buffer, valid, &mut rec)
            == sys::CUptiResult::CUPTI_SUCCESS
        {
            match (*rec).kind {
                sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY => {
                    let c = std::ptr::read_unaligned(rec as *const sys::CUpti_ActivityMemcpy6);
                    copies.push(CopyRecord {
                        fill: false,
                        bytes: c.bytes,
                        start_ns: c.start,
                        end_ns: c.end,
                        graph_node: c.graphNodeId,
                    });
                    continue;
                }
                sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET => {
                    let c = std::ptr::read_unaligned(rec as *const sys::CUpti_ActivityMemset4);
                    copies.push(CopyRecord {
                        fill: true,
                        bytes: c.bytes,
                        start_ns: c.start,
                        end_ns: c.end,
                        graph_node: c.graphNodeId,
                    });
                    continue;
                }
                sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {}
                _ => continue,
            }
            let k = std::ptr::read_unaligned(rec as *const sys::CUpti_ActivityKernel10);
            let name = if k.name.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(k.name)
                    .to_string_lossy()
                    .into_owned()
            };
            out.push(KernelRecord {
                name,
                grid: [k.gridX, k.gridY, k.gridZ],
                block: [k.blockX, k.blockY, k.blockZ],
                registers: k.registersPerThread,
                shared_bytes: k.staticSharedMemory + k.dynamicSharedMemory,
                start_ns: k.start,
                end_ns: k.end,
                graph_node: k.graphNodeId,
            });
        }
        dealloc(buffer, layout());
    }
    if let Ok(mut r) = RECORDS.lock() {
        r.extend(out);
    }
    if let Ok(mut c) = COPIES.lock() {
        c.extend(copies);
    }
}

fn err(what: &str, e: impl std::fmt::Debug) -> ExecError {
    ExecError::Cupti(format!("{what}: {e:?}"))
}

/// Runs `f` with CUPTI recording every kernel and returns the kernels it ran (after the
/// device synchronised inside `f`).
pub fn record(f: impl FnOnce() -> Result<(), ExecError>) -> Result<Vec<KernelRecord>, ExecError> {
    record_kinds(f, false).map(|(k, _)| k)
}

/// [`record`], and the copies and fills `f` ran.
pub fn record_with_copies(
    f: impl FnOnce() -> Result<(), ExecError>,
) -> Result<(Vec<KernelRecord>, Vec<CopyRecord>), ExecError> {
    record_kinds(f, true)
}

/// The activity kinds recorded besides kernels when copies are asked for.
const COPY_KINDS: [sys::CUpti_ActivityKind; 2] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
];

fn record_kinds(
    f: impl FnOnce() -> Result<(), ExecError>,
    with_copies: bool,
) -> Result<(Vec<KernelRecord>, Vec<CopyRecord>), ExecError> {
    // SAFETY: probing for the library loads nothing kc relies on.
    if !unsafe { sys::is_culib_present() } {
        return Err(ExecError::Cupti(
            "libcupti.so was not found on the library path".into(),
        ));
    }
    let check = |r: sys::CUptiResult, what: &str| -> Result<(), ExecError> {
        if r == sys::CUptiResult::CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(err(what, r))
        }
    };
    if let Ok(mut r) = RECORDS.lock() {
        r.clear();
    }
    if let Ok(mut c) = COPIES.lock() {
        c.clear();
    }
    // SAFETY: plain CUPTI calls; the callbacks are 'static functions of this file.
    unsafe {
        check(
            sys::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed)),
            "cuptiActivityRegisterCallbacks",
        )?;
        check(
            sys::cuptiActivityEnable(
                sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            ),
            "cuptiActivityEnable",
        )?;
        for kind in COPY_KINDS.into_iter().filter(|_| with_copies) {
            if let Err(e) = check(sys::cuptiActivityEnable(kind), "cuptiActivityEnable") {
                let _ = sys::cuptiActivityDisable(
                    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                );
                for k in COPY_KINDS {
                    let _ = sys::cuptiActivityDisable(k);
                }
                return Err(e);
            }
        }
    }
    let ran = f();
    // SAFETY: as above; recording stops whatever `f` did.
    unsafe {
        let _ = sys::cuptiActivityDisable(
            sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        );
        for kind in COPY_KINDS.into_iter().filter(|_| with_copies) {
            let _ = sys::cuptiActivityDisable(kind);
        }
        check(sys::cuptiActivityFlushAll(1), "cuptiActivityFlushAll")?;
    }
    ran?;
    let kernels = RECORDS
        .lock()
        .map(|mut r| std::mem::take(&mut *r))
        .unwrap_or_default();
    let copies = COPIES
        .lock()
        .map(|mut c| std::mem::take(&mut *c))
        .unwrap_or_default();
    Ok((kernels, copies))
}
