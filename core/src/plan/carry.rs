//! Values carried in from before the replay, given regions of their own. A read that comes
//! before any replayed write of the bytes it reads, in a storage that the replay writes
//! later, reads what the model held before the profiled window: the weights before this
//! step's optimizer update, the residual stream a block of an earlier iteration left where
//! the caching allocator hands the block out again, an fp32 block read as bf16. Replayed back
//! to back, such a read sees what the previous replay's last write left instead, so values
//! feed on themselves replay after replay: thousands of optimizer steps on one batch
//! through weights the forward pass reads again, residual streams added to themselves, fp32
//! bit patterns read as bf16 (1e38s and NaN). The memory image then fills with non-finite
//! values over the timed replays, and the GPU's power over it is not the model's.
//!
//! Each such read moves to a region that holds its storage's starting values and that no
//! step writes, so every replay reads the same values, as each iteration of the model read
//! its own. The storage keeps its writes and every read after them: the dataflow inside a
//! replay is unchanged, and an in-place update that reads what it writes (an optimizer's
//! `_fused_adamw_` on the parameters, `mul_` of a moment) stays on the storage, because one
//! pointer cannot be two places.
//!
//! Invariant: only pure reads are moved, each overlapping no earlier replayed write of its
//! storage and some later one; a carried region spans exactly the bytes its moved reads
//! reach.

use super::types::PlanUnit;
use kc_ir::{KernelGraph, Operand};
use std::collections::{BTreeMap, HashMap};

/// One storage's carried-in reads: the storage, the rank whose image holds it, the byte
/// range of the storage they read, and the steps that read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carried {
    pub storage: u32,
    pub rank: u32,
    pub start: u64,
    pub end: u64,
    pub first_step: u32,
    pub last_step: u32,
}

/// The carried regions and the moved reads: `(step, operand) -> (region, byte offset inside
/// it)`.
#[derive(Default)]
pub struct Carry {
    pub regions: Vec<Carried>,
    pub moved: HashMap<(u32, usize), (usize, u64)>,
}

/// Disjoint byte ranges `[start, end)` of one storage, merged as they are added.
#[derive(Default)]
struct Spans(BTreeMap<u64, u64>);

impl Spans {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        // The range that starts last before `end` is the only one that can reach past
        // `start` (ranges are disjoint and sorted).
        self.0
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
    }

    fn add(&mut self, mut start: u64, mut end: u64) {
        if end <= start {
            return;
        }
        // Absorb every range that touches [start, end).
        while let Some((&s, &e)) = self.0.range(..=end).next_back() {
            if e < start {
                break;
            }
            start = start.min(s);
            end = end.max(e);
            self.0.remove(&s);
        }
        self.0.insert(start, end);
    }
}

/// Finds the carried-in reads in step order. `operands` are each unit's operands as lowering
/// gives them (which it writes, how many bytes each reaches).
pub fn carry(
    g: &KernelGraph,
    instance_order: &[usize],
    units: &[PlanUnit],
    operands: &[Vec<Operand>],
) -> Carry {
    let df = &g.dataflow;
    let replayed = |i: usize| {
        let unit = &units[g.instances[i].unit.0 as usize];
        let p = &df.instances[i];
        unit.tier.is_replayable() && p.operands.len() == unit.slots.len()
    };
    let bytes = |unit: &PlanUnit, k: usize| {
        operands[unit.id as usize]
            .get(k)
            .map_or(1, |o| o.bytes.max(1))
    };
    let writes =
        |unit: &PlanUnit, k: usize| operands[unit.id as usize].get(k).is_some_and(|o| o.writes);
    // Adds instance `i`'s writes to `spans`: its written operands, and its results (which
    // may reach the end of their storage; their size is known only when the op runs).
    let add_writes = |spans: &mut HashMap<u32, Spans>, i: usize| {
        let unit = &units[g.instances[i].unit.0 as usize];
        let p = &df.instances[i];
        for (k, pl) in p.operands.iter().enumerate() {
            if let (Some(pl), true) = (pl, writes(unit, k)) {
                let s = spans.entry(pl.storage).or_default();
                s.add(pl.offset_bytes, pl.offset_bytes + bytes(unit, k));
            }
        }
        for pl in p.outputs.iter().flatten() {
            let s = spans.entry(pl.storage).or_default();
            s.add(pl.offset_bytes, df.storages[pl.storage as usize].bytes);
        }
    };
    // Every replayed write, per storage: a read no later write overlaps reads the same
    // values in every replay already.
    let mut all_writes: HashMap<u32, Spans> = HashMap::new();
    for &i in instance_order.iter().filter(|&&i| replayed(i)) {
        add_writes(&mut all_writes, i);
    }
    let mut out = Carry::default();
    let mut region_of: HashMap<u32, usize> = HashMap::new();
    let mut written: HashMap<u32, Spans> = HashMap::new();
    let mut moved_at: Vec<((u32, usize), usize, u64)> = Vec::new();
    for (step, &i) in instance_order.iter().enumerate() {
        if !replayed(i) {
            continue;
        }
        let step = step as u32;
        let unit = &units[g.instances[i].unit.0 as usize];
        let p = &df.instances[i];
        for (k, pl) in p.operands.iter().enumerate() {
            let Some(pl) = pl else { continue };
            if writes(unit, k) {
                continue;
            }
            let (start, end) = (pl.offset_bytes, pl.offset_bytes + bytes(unit, k));
            let later = all_writes
                .get(&pl.storage)
                .is_some_and(|w| w.overlaps(start, end));
            let earlier = written
                .get(&pl.storage)
                .is_some_and(|w| w.overlaps(start, end));
            if !later || earlier {
                continue;
            }
            let r = *region_of.entry(pl.storage).or_insert_with(|| {
                out.regions.push(Carried {
                    storage: pl.storage,
                    rank: g.instances[i].rank,
                    start,
                    end,
                    first_step: step,
                    last_step: step,
                });
                out.regions.len() - 1
            });
            let c = &mut out.regions[r];
            c.start = c.start.min(start);
            c.end = c.end.max(end);
            c.last_step = step;
            moved_at.push(((step, k), r, start));
        }
        // This step's writes count for the steps after it (a step's reads come first).
        add_writes(&mut written, i);
    }
    out.moved = moved_at
        .into_iter()
        .map(|(key, r, at)| (key, (r, at - out.regions[r].start)))
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge_and_answer_overlaps() {
        let mut s = Spans::default();
        s.add(10, 20);
        s.add(30, 40);
        assert!(!s.overlaps(0, 10));
        assert!(s.overlaps(0, 11));
        assert!(!s.overlaps(20, 30));
        assert!(s.overlaps(39, 50));
        assert!(!s.overlaps(40, 50));
        // Touching ranges merge into one.
        s.add(20, 30);
        assert_eq!(s.0.len(), 1);
        assert_eq!(s.0.get(&10), Some(&40));
        s.add(5, 12);
        assert_eq!(s.0.get(&5), Some(&40));
        s.add(50, 50);
        assert_eq!(s.0.len(), 1);
    }
}
