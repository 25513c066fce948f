//! Results the replay cannot write into the memory image, detached from it: a tier-3 op
//! with no `.out` overload of its own (cuDNN attention, `embedding_dense_backward`)
//! allocates its results outside the image, so the storage its consumers read still holds
//! whatever its previous tenant wrote. PyTorch's caching allocator hands one block to
//! tensors of different element types, so those bytes may be fp32 read as bf16: NaN and
//! 1e38s that a training step's next GEMM turns into infinities everywhere. Each read of
//! such a result, from the allocating step until the storage is next written, is moved to
//! a region of its own that keeps finite starting values in the reader's element type.
//!
//! Invariant: only reads between an allocating step and the next write of the same storage
//! are moved; a detached region holds the furthest byte any moved read reaches.

use super::aten_call::{AtenCall, Outputs};
use super::types::{ElemType, PlanUnit};
use kc_ir::KernelGraph;
use std::collections::HashMap;

/// One detached result: the rank whose image holds it, the element type its first reader
/// uses, the bytes its reads reach, and the steps that read it; `first_step` is the step
/// that allocates it, and `output` its position among that step's results.
pub struct Detached {
    pub rank: u32,
    pub output: u32,
    pub dtype: ElemType,
    pub bytes: u64,
    pub first_step: u32,
    pub last_step: u32,
}

/// The detached results and the moved reads: `(step, operand) -> (result, byte offset
/// inside it)`.
pub struct Detachment {
    pub results: Vec<Detached>,
    pub moved: HashMap<(u32, usize), (usize, u64)>,
}

/// Finds the reads of allocated results in step order. `operands` are each unit's operands
/// as lowering gives them; `dtype_of(unit, operand)` is the element type the unit's call
/// reads the operand as.
pub fn detach(
    g: &KernelGraph,
    instance_order: &[usize],
    units: &[PlanUnit],
    aten_calls: &[Option<AtenCall>],
    operands: &[Vec<kc_ir::Operand>],
    dtype_of: &dyn Fn(&PlanUnit, usize) -> ElemType,
) -> Detachment {
    let df = &g.dataflow;
    let mut out = Detachment {
        results: Vec::new(),
        moved: HashMap::new(),
    };
    // Per storage, the allocated results still unwritten: (byte offset, result index).
    let mut live: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
    for (step, &i) in instance_order.iter().enumerate() {
        let step = step as u32;
        let unit = &units[g.instances[i].unit.0 as usize];
        let p = &df.instances[i];
        if !unit.tier.is_replayable() || p.operands.len() != unit.slots.len() {
            continue;
        }
        let operands = &operands[unit.id as usize];
        let updates = super::build::updates_in_place(&unit.call);
        for (k, pl) in p.operands.iter().enumerate() {
            let Some(pl) = pl else { continue };
            let writes = operands.get(k).is_some_and(|o| o.writes);
            if writes && !updates {
                live.remove(&pl.storage);
                continue;
            }
            // The latest allocated result at or before this operand's offset.
            let Some(&(at, r)) = live
                .get(&pl.storage)
                .and_then(|v| v.iter().filter(|(at, _)| *at <= pl.offset_bytes).max())
            else {
                continue;
            };
            let rel = pl.offset_bytes - at;
            let d = &mut out.results[r];
            if d.dtype == ElemType::Unknown {
                d.dtype = dtype_of(unit, k);
            }
            d.bytes = d
                .bytes
                .max(rel + operands.get(k).map_or(1, |o| o.bytes.max(1)));
            d.last_step = step;
            out.moved.insert((step, k), (r, rel));
        }
        let allocates = matches!(
            aten_calls.get(unit.id as usize).and_then(|c| c.as_ref()),
            Some(AtenCall {
                outputs: Outputs::Allocates,
                ..
            })
        );
        for (output, pl) in p.outputs.iter().enumerate() {
            let Some(pl) = pl else { continue };
            // An in-place op's results are the tensors it updated (`div_` returns `self`):
            // a detached result it updated stays detached for the readers after it.
            if updates && !allocates {
                continue;
            }
            let v = live.entry(pl.storage).or_default();
            if allocates {
                v.retain(|(at, _)| *at != pl.offset_bytes);
                out.results.push(Detached {
                    rank: g.instances[i].rank,
                    output: output as u32,
                    dtype: ElemType::Unknown,
                    bytes: 0,
                    first_step: step,
                    last_step: step,
                });
                v.push((pl.offset_bytes, out.results.len() - 1));
            } else {
                v.clear();
            }
        }
    }
    out
}
