//! Integer and boolean tensors the replay computes, read where they were computed: a mask
//! the model builds (`ne`, then `masked_fill_`), routing indices (`topk`, then `index`).
//! The memory image holds floating-point data only (lowering keeps integer and boolean
//! tensors in private buffers, so no float producer overwrites them), so without recorded
//! values such a read would see the values drawn for its private buffer: a random mask
//! masks a quarter of every attention row where the model masks the borders of a few
//! windows, and a softmax over it runs another path (Swin-T's shifted windows: +84 %).
//! With the Execution Trace's tensor identities each such read of a result an earlier
//! tier-3 step on the same stream produced is bound to that result ([`BoundRead`]), so it
//! reads what the replay computed from the model's program; recorded values (`kc ingest
//! --values`) still take precedence in exec.
//!
//! Invariant: a read is bound only to the latest tier-3 result of the same trace storage
//! produced at or before its offset, by an earlier step on the same stream, with no write
//! of that storage by any other step in between.

use super::types::{BoundRead, PlanUnit, UnitCall};
use crate::lower::dataflow::{recorded_operands, refs_of};
use kc_ir::{KernelGraph, UnitParams};
use std::collections::HashMap;

/// One integer or boolean result still readable: where it starts in its trace storage,
/// the step that produced it, its position among that step's results and the stream
/// (rank, device, stream) it was produced on.
#[derive(Clone, Copy)]
struct Produced {
    offset: u64,
    step: u32,
    output: u32,
    stream: (u32, u32, u64),
}

/// The bound reads of integer and boolean tensors over the steps (`instance_order`), in
/// step order; empty when the graph has no tensor identities. `operands` are each unit's
/// operands as lowering gives them (which it writes).
pub fn integer_reads(
    g: &KernelGraph,
    instance_order: &[usize],
    units: &[PlanUnit],
    operands: &[Vec<kc_ir::Operand>],
) -> Vec<BoundRead> {
    let mut out = Vec::new();
    if g.tensor_refs.is_empty() {
        return out;
    }
    let stream_of = |i: usize| {
        let inst = &g.instances[i];
        (inst.rank, inst.device, inst.stream)
    };
    // Per trace storage, the integer results still unwritten, with their producers' streams.
    let mut live: HashMap<u64, Vec<Produced>> = HashMap::new();
    for (step, &i) in instance_order.iter().enumerate() {
        let step = step as u32;
        let inst = &g.instances[i];
        let unit = &units[inst.unit.0 as usize];
        let gu = &g.units[inst.unit.0 as usize];
        let Some((op, refs)) = inst.op.and_then(|o| Some((o, refs_of(g, o)?))) else {
            continue;
        };
        // A unit whose operands lowering did not match one by one to the plan's slots
        // (the places' own check) binds nothing.
        let n = unit.slots.len();
        let matched = g.dataflow.instances.get(i).map(|p| p.operands.len()) == Some(n);
        let tier3 =
            matched && unit.tier.is_replayable() && matches!(unit.call, UnitCall::AtenOp { .. });
        let (recorded, outputs) = if matches!(gu.params, UnitParams::Op { .. }) {
            recorded_operands(
                &g.compiled_kernels,
                &gu.params,
                g.str(g.op(op).name),
                g.args(op),
                refs,
                n,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        if tier3 {
            // An operand the op only overwrites (`copy_`'s destination) reads nothing.
            let operands = &operands[unit.id as usize];
            let updates = super::build::updates_in_place(&unit.call);
            for (k, t) in recorded.iter().enumerate() {
                let Some(t) = t.filter(|t| t.on_device && !t.float) else {
                    continue;
                };
                if operands.get(k).is_some_and(|o| o.writes) && !updates {
                    continue;
                }
                let Some(p) = live.get(&t.storage).and_then(|v| {
                    v.iter()
                        .filter(|p| p.offset <= t.offset_bytes && p.stream == stream_of(i))
                        .max_by_key(|p| (p.offset, p.step))
                }) else {
                    continue;
                };
                out.push(BoundRead {
                    step,
                    operand: k as u32,
                    producer_step: p.step,
                    output: p.output,
                    byte_offset: t.offset_bytes - p.offset,
                });
            }
        }
        // What this op wrote: a tier-3 op's integer results become the storage's latest
        // values; any other write (a copy, a float result in a reused block) ends them.
        for (output, t) in outputs.iter().enumerate() {
            let Some(t) = t.filter(|t| t.on_device) else {
                continue;
            };
            let v = live.entry(t.storage).or_default();
            v.retain(|p| p.offset != t.offset_bytes);
            if tier3 && !t.float {
                v.push(Produced {
                    offset: t.offset_bytes,
                    step,
                    output: output as u32,
                    stream: stream_of(i),
                });
            } else {
                v.clear();
            }
        }
        if !matches!(gu.params, UnitParams::Op { .. }) {
            // Copies, fills and GEMMs write their last recorded tensor (or their output).
            for t in refs.outputs.iter().flat_map(|a| a.tensors()) {
                live.remove(&t.storage);
            }
        }
    }
    out
}
