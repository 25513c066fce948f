//! The collective back end: NCCL through cudarc's bindings (libnccl loaded at run time),
//! one communicator over the job's ranks, and the traced collectives issued on kc's
//! streams, so that they land in each rank's CUDA graph like any kernel (NCCL calls are
//! graph-capturable) or run alone in isolated mode. Each collective unit has its own send
//! and receive buffers, sized by the traced element counts (the data's values do not change
//! what NCCL moves).
//!
//! Which collectives: what the profiler's `record_param_comms` names, mapped onto NCCL's
//! calls by the plan ([`kc_core::plan::collectives::CollectiveCall`], which also refuses, at
//! `kc plan` time, what kc cannot replay); the reduction is a sum (the profiler does not
//! record it, and a sum is what data and tensor parallelism reduce with). Invariant: a unit
//! is enqueued only with a kind and an element type NCCL has and counts that fit its
//! buffers.

use crate::device::cu_err;
use crate::ExecError;
use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nc;
use kc_core::plan::collectives::{CollectiveCall, CollectiveKind};
use kc_core::plan::types::{PlanUnit, UnitCall};
use std::collections::HashMap;
use std::ffi::c_void;

/// NCCL's element type for a trace's dtype name ("Half", "BFloat16", ...).
fn nccl_type(dtype: &str) -> Option<nc::ncclDataType_t> {
    use nc::ncclDataType_t::*;
    Some(match dtype {
        "Half" | "Float16" | "c10::Half" => ncclFloat16,
        "BFloat16" | "c10::BFloat16" => ncclBfloat16,
        "Float" | "Float32" => ncclFloat32,
        "Double" => ncclFloat64,
        "Int" | "Int32" => ncclInt32,
        "Long" | "Int64" => ncclInt64,
        "Byte" | "UInt8" | "Bool" => ncclUint8,
        "Char" | "Int8" => ncclInt8,
        _ => return None,
    })
}

/// NCCL's entry points, from the library every NCCL install names by its soname
/// (`libnccl.so.2`, which libtorch also links), so that one process never holds two NCCLs:
/// cudarc's own loader tries `libnccl.so` first, which may be another version, and two
/// NCCLs in one process take each other's communicators for corrupt ones (seen on the
/// H200 pair: "corrupted comm object detected" with 2.28.3 beside torch's 2.28.9).
struct Lib {
    _lib: libloading::Library,
    get_unique_id: unsafe extern "C" fn(*mut nc::ncclUniqueId) -> nc::ncclResult_t,
    comm_init_rank:
        unsafe extern "C" fn(*mut nc::ncclComm_t, i32, nc::ncclUniqueId, i32) -> nc::ncclResult_t,
    comm_destroy: unsafe extern "C" fn(nc::ncclComm_t) -> nc::ncclResult_t,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        nc::ncclDataType_t,
        nc::ncclRedOp_t,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        nc::ncclDataType_t,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        nc::ncclDataType_t,
        nc::ncclRedOp_t,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        nc::ncclDataType_t,
        i32,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    send: unsafe extern "C" fn(
        *const c_void,
        usize,
        nc::ncclDataType_t,
        i32,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    recv: unsafe extern "C" fn(
        *mut c_void,
        usize,
        nc::ncclDataType_t,
        i32,
        nc::ncclComm_t,
        nc::cudaStream_t,
    ) -> nc::ncclResult_t,
    group_start: unsafe extern "C" fn() -> nc::ncclResult_t,
    group_end: unsafe extern "C" fn() -> nc::ncclResult_t,
}

fn lib() -> Result<&'static Lib, ExecError> {
    static LIB: std::sync::OnceLock<Result<Lib, String>> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading NCCL runs its initialisers, which only register the library;
        // each symbol is looked up with the C signature NCCL's header declares.
        unsafe {
            let l = ["libnccl.so.2", "libnccl.so"]
                .iter()
                .find_map(|n| libloading::Library::new(n).ok())
                .ok_or_else(|| {
                    "libnccl not found: put NCCL's library directory (e.g. torch's nvidia/nccl/lib) on LD_LIBRARY_PATH".to_string()
                })?;
            macro_rules! sym {
                ($name:literal) => {
                    *l.get($name)
                        .map_err(|e| format!("libnccl: {}: {e}", String::from_utf8_lossy($name)))?
                };
            }
            Ok(Lib {
                get_unique_id: sym!(b"ncclGetUniqueId"),
                comm_init_rank: sym!(b"ncclCommInitRank"),
                comm_destroy: sym!(b"ncclCommDestroy"),
                all_reduce: sym!(b"ncclAllReduce"),
                all_gather: sym!(b"ncclAllGather"),
                reduce_scatter: sym!(b"ncclReduceScatter"),
                broadcast: sym!(b"ncclBroadcast"),
                send: sym!(b"ncclSend"),
                recv: sym!(b"ncclRecv"),
                group_start: sym!(b"ncclGroupStart"),
                group_end: sym!(b"ncclGroupEnd"),
                _lib: l,
            })
        }
    })
    .as_ref()
    .map_err(|e| ExecError::NoNccl(e.clone()))
}

fn nccl_err(r: nc::ncclResult_t, what: &str) -> Result<(), ExecError> {
    if r == nc::ncclResult_t::ncclSuccess {
        Ok(())
    } else {
        Err(ExecError::Cuda {
            what: what.to_string(),
            code: format!("{r:?}"),
        })
    }
}

/// A new NCCL unique id (rank 0 makes it and the rendezvous hands it to the others).
pub fn unique_id() -> Result<Vec<u8>, ExecError> {
    let l = lib()?;
    // SAFETY: the call writes the id into a local.
    unsafe {
        let mut id = nc::ncclUniqueId { internal: [0; 128] };
        nccl_err((l.get_unique_id)(&mut id), "ncclGetUniqueId")?;
        Ok(id.internal.iter().map(|&c| c as u8).collect())
    }
}

/// A communicator over the job, and the collective units' buffers.
pub struct Nccl {
    comm: nc::ncclComm_t,
    pub world: u32,
    pub rank: u32,
    calls: HashMap<
        u32,
        (
            CollectiveCall,
            nc::ncclDataType_t,
            cu::CUdeviceptr,
            cu::CUdeviceptr,
        ),
    >,
}

impl Nccl {
    /// Joins the communicator `id` (from [`unique_id`]) as `rank` of `world`.
    ///
    /// # Safety
    /// The rank's CUDA context must be current on this thread.
    pub unsafe fn init(id: &[u8], world: u32, rank: u32) -> Result<Nccl, ExecError> {
        let mut uid = nc::ncclUniqueId { internal: [0; 128] };
        if id.len() != 128 {
            return Err(ExecError::BadNcclId(id.len()));
        }
        for (d, s) in uid.internal.iter_mut().zip(id) {
            *d = *s as std::ffi::c_char;
        }
        let mut comm: nc::ncclComm_t = std::ptr::null_mut();
        nccl_err(
            (lib()?.comm_init_rank)(&mut comm, world as i32, uid, rank as i32),
            "ncclCommInitRank",
        )?;
        Ok(Nccl {
            comm,
            world,
            rank,
            calls: HashMap::new(),
        })
    }

    /// Validates a collective unit and allocates its buffers (before any capture).
    ///
    /// # Safety
    /// The rank's CUDA context must be current on this thread.
    pub unsafe fn prepare(&mut self, unit: &PlanUnit) -> Result<(), ExecError> {
        if self.calls.contains_key(&unit.id) {
            return Ok(());
        }
        let unreplayable = |why: String| ExecError::PlanDefect {
            unit: unit.id,
            why: format!("{}: {why}", unit.label),
        };
        let call = CollectiveCall::from_plan(&unit.call, self.world).map_err(unreplayable)?;
        let dtype = nccl_type(&call.dtype)
            .ok_or_else(|| unreplayable(format!("element type {:?}", call.dtype)))?;
        let alloc = |n: u64| -> Result<cu::CUdeviceptr, ExecError> {
            let mut p = 0;
            let bytes = (n * call.elem_bytes).max(1) as usize;
            cu_err(
                cu::cuMemAlloc_v2(&mut p, bytes),
                "cuMemAlloc (collective buffer)",
            )?;
            cu_err(
                cu::cuMemsetD8_v2(p, 0, bytes),
                "cuMemset (collective buffer)",
            )?;
            Ok(p)
        };
        let send = alloc(call.in_nelems)?;
        let recv = alloc(call.out_nelems)?;
        self.calls.insert(unit.id, (call, dtype, send, recv));
        Ok(())
    }

    /// Enqueues one invocation of a prepared collective unit on `stream`.
    ///
    /// # Safety
    /// The stream must belong to the rank's context.
    pub unsafe fn enqueue(&self, unit: &PlanUnit, stream: cu::CUstream) -> Result<(), ExecError> {
        let Some((c, dtype, send, recv)) = self.calls.get(&unit.id) else {
            return Err(ExecError::NotPrepared {
                unit: unit.id,
                what: "the collective",
            });
        };
        let l = lib()?;
        let (s, r) = (*send as *const c_void, *recv as *mut c_void);
        let st = stream as nc::cudaStream_t;
        let sum = nc::ncclRedOp_t::ncclSum;
        let what = format!("NCCL {:?} (unit {})", c.kind, unit.id);
        match c.kind {
            CollectiveKind::AllReduce => nccl_err(
                (l.all_reduce)(s, r, c.in_nelems as usize, *dtype, sum, self.comm, st),
                &what,
            ),
            CollectiveKind::AllGather => nccl_err(
                (l.all_gather)(s, r, c.in_nelems as usize, *dtype, self.comm, st),
                &what,
            ),
            CollectiveKind::ReduceScatter => nccl_err(
                (l.reduce_scatter)(s, r, c.out_nelems as usize, *dtype, sum, self.comm, st),
                &what,
            ),
            CollectiveKind::Broadcast => nccl_err(
                (l.broadcast)(s, r, c.in_nelems as usize, *dtype, 0, self.comm, st),
                &what,
            ),
            CollectiveKind::AllToAll => {
                // NCCL's all-to-all: one send and one receive per peer, grouped.
                let per = c.in_nelems / u64::from(self.world);
                let bytes = per * c.elem_bytes;
                nccl_err((l.group_start)(), "ncclGroupStart")?;
                for peer in 0..self.world {
                    let off = u64::from(peer) * bytes;
                    nccl_err(
                        (l.send)(
                            (*send + off) as *const c_void,
                            per as usize,
                            *dtype,
                            peer as i32,
                            self.comm,
                            st,
                        ),
                        &what,
                    )?;
                    nccl_err(
                        (l.recv)(
                            (*recv + off) as *mut c_void,
                            per as usize,
                            *dtype,
                            peer as i32,
                            self.comm,
                            st,
                        ),
                        &what,
                    )?;
                }
                nccl_err((l.group_end)(), "ncclGroupEnd")
            }
        }
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        // SAFETY: the communicator and buffers were made by this value; the device is
        // synchronised by the GPU's teardown before this runs.
        unsafe {
            for (_, (_, _, s, r)) in self.calls.drain() {
                cu::cuMemFree_v2(s);
                cu::cuMemFree_v2(r);
            }
            if let Ok(l) = lib() {
                (l.comm_destroy)(self.comm);
            }
        }
    }
}

/// The back end's name ([`super::Gpu::has_collectives`] looks for it).
pub const NAME: &str = "NCCL";

impl super::Backend for Nccl {
    fn name(&self) -> &'static str {
        NAME
    }

    fn makes(&self, call: &UnitCall) -> bool {
        matches!(call, UnitCall::Collective { .. })
    }

    fn prepare(
        &mut self,
        _dev: &mut crate::device::Device,
        unit: &PlanUnit,
    ) -> Result<(), ExecError> {
        // SAFETY: the rank's context is current on this thread.
        unsafe { Nccl::prepare(self, unit) }
    }

    fn enqueue(
        &self,
        dev: &crate::device::Device,
        unit: &PlanUnit,
        s: usize,
        _at: super::At<'_>,
    ) -> Result<(), ExecError> {
        // SAFETY: the stream belongs to the rank's context.
        unsafe { Nccl::enqueue(self, unit, dev.streams[s]) }
    }
}
