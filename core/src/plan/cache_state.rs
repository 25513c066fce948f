//! Where the model leaves each byte a step reads, as far as the GPU's L2 can tell: for
//! every read of a step, the bytes the model's steps touched since the last step that
//! touched any of it (its reuse distance, the model's iterations taken back to back), and
//! whether that step wrote it. A unit alone repeats its own steps, so every read it makes
//! sits in L2 from the invocation before; in the model a layer's weights or an activation
//! made many steps earlier arrive from memory. Session 51's probe: a small kernel after an
//! L2 turned over ran 29-70 % longer than after itself, after other kernels that left its
//! inputs alone within 3.1 %. Also the dirty share of the bytes the steps before a step
//! touched: how much of L2 they leave to be written back. From these a unit is recorded in
//! the model's cache state (`exec`'s `procedure::isolated`), which took the units' median
//! against kc's graph from −1 to −11 % alone to within ±1.6 % on ten models (session 51).
//!
//! Invariant: the distance is an upper bound on the distinct bytes between the two touches
//! (a byte touched twice between them counts twice), capped at the `cap` asked for; a read
//! no other step touches has the whole iteration between it and itself.

use crate::plan::spans::merge;
use crate::plan::step_values::StepSpans;
use crate::plan::types::{Plan, PlanDataflow, PlanUnit, UnitCall};

/// One read of a step, and where the model left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReuse {
    /// The bytes read, as (arena offset, bytes), merged with the step's other reads.
    pub span: (u64, u64),
    /// Bytes the model's steps touched between the last touch of any of these bytes and
    /// this read, at most the cap asked for.
    pub bytes_between: u64,
    /// Whether that last touch wrote them (a producer's result, dirty in L2).
    pub last_touch_wrote: bool,
}

/// Every step's touched bytes (reads and writes, merged) and writes, once for a plan.
pub struct ModelTouches {
    reads: Vec<Vec<(u64, u64)>>,
    touched: Vec<Vec<(u64, u64)>>,
    writes: Vec<Vec<(u64, u64)>>,
    touched_bytes: Vec<u64>,
    written_bytes: Vec<u64>,
}

impl ModelTouches {
    pub fn of(spans: &[StepSpans]) -> Self {
        let reads: Vec<Vec<(u64, u64)>> = spans.iter().map(|s| merge(&s.reads, 0)).collect();
        let writes: Vec<Vec<(u64, u64)>> = spans.iter().map(|s| merge(&s.writes, 0)).collect();
        let touched: Vec<Vec<(u64, u64)>> = spans
            .iter()
            .map(|s| merge(&[s.reads.as_slice(), s.writes.as_slice()].concat(), 0))
            .collect();
        let touched_bytes = touched
            .iter()
            .map(|t| t.iter().map(|s| s.1).sum())
            .collect();
        let written_bytes = writes.iter().map(|w| w.iter().map(|s| s.1).sum()).collect();
        ModelTouches {
            reads,
            touched,
            writes,
            touched_bytes,
            written_bytes,
        }
    }

    /// The share of the bytes the model's steps just before `step` touched that they
    /// wrote, over the last `window` bytes they touched (through the iteration before
    /// where needed): how much of L2 they leave dirty. 0 where nothing was touched.
    pub fn written_share_before(&self, step: u32, window: u64) -> f64 {
        let n = self.touched.len();
        let st = step as usize;
        if st >= n {
            return 0.0;
        }
        let (mut touched, mut written) = (0u64, 0u64);
        for back in 1..=n {
            let j = (st + n - back) % n;
            touched = touched.saturating_add(self.touched_bytes[j]);
            written = written.saturating_add(self.written_bytes[j]);
            if touched >= window {
                break;
            }
        }
        if touched == 0 {
            0.0
        } else {
            (written as f64 / touched as f64).min(1.0)
        }
    }

    /// The reads of `step` and where the model left each: the steps before it are walked
    /// back, through the iteration before where needed, until one touches the read's bytes
    /// or `cap` bytes lie between. Empty for a step the plan does not hold.
    pub fn reads_at(&self, step: u32, cap: u64) -> Vec<ReadReuse> {
        let n = self.touched.len();
        let st = step as usize;
        let Some(reads) = self.reads.get(st) else {
            return Vec::new();
        };
        reads
            .iter()
            .map(|&span| {
                let mut between = 0u64;
                let mut wrote = false;
                // Back through every other step, then to the step itself an iteration
                // before.
                for back in 1..=n {
                    let j = (st + n - back) % n;
                    if overlaps(&self.touched[j], span) {
                        wrote = overlaps(&self.writes[j], span);
                        break;
                    }
                    between = between.saturating_add(self.touched_bytes[j]);
                    if between >= cap {
                        between = cap;
                        break;
                    }
                }
                ReadReuse {
                    span,
                    bytes_between: between,
                    last_touch_wrote: wrote,
                }
            })
            .collect()
    }
}

/// How many operands of `step` (a step of `unit`) the memory image does not hold: a slot
/// the step does not place, a tier-3 tensor the executor gives a tensor of its own
/// (indices, masks, recorded values: not [`crate::plan::aten_call::placeable`]), or a read
/// the plan binds to another step's result. Where such an operand lies in L2 the model's
/// touches of the image do not tell, so a unit with one is not in the model's cache state
/// as far as that operand goes (session 51: T5's graph's 32 units with no read in the
/// image ran a median 20 % over kc's graph after L2 was turned over).
pub fn operands_outside_image(plan: &Plan, df: &PlanDataflow, unit: &PlanUnit, step: u32) -> u32 {
    let Some(places) = df.steps.get(step as usize) else {
        return unit.slots.len() as u32;
    };
    let bound: Vec<u32> = plan
        .bound_reads
        .iter()
        .filter(|b| b.step == step)
        .filter_map(|b| unit.slots.get(b.operand as usize).copied())
        .collect();
    let outside = |slot: u32| places.operand_of(unit, slot).is_none() || bound.contains(&slot);
    match (&unit.call, plan.aten_calls.get(unit.id as usize)) {
        (UnitCall::AtenOp { .. }, Some(Some(call))) => call
            .args
            .iter()
            .flat_map(|a| a.tensors())
            .filter(|t| !crate::plan::aten_call::placeable(t) || outside(t.slot))
            .count() as u32,
        _ => unit.slots.iter().filter(|&&s| outside(s)).count() as u32,
    }
}

/// Whether any of the sorted, merged `spans` shares a byte with `(off, bytes)`.
fn overlaps(spans: &[(u64, u64)], (off, bytes): (u64, u64)) -> bool {
    let end = off.saturating_add(bytes);
    // The first span that ends after `off`; it overlaps where it starts before `end`.
    let i = spans.partition_point(|&(o, b)| o.saturating_add(b) <= off);
    spans.get(i).is_some_and(|&(o, _)| o < end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(reads: &[(u64, u64)], writes: &[(u64, u64)]) -> StepSpans {
        StepSpans {
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }

    #[test]
    fn a_producers_result_is_near_and_a_weight_read_once_an_iteration_is_far() {
        // Step 0 reads a weight W0 and an input, writes A; step 1 reads a weight W1 and A,
        // writes B; step 2 reads W2 and B, writes the input again.
        let w = 1000u64;
        let spans = vec![
            step(&[(0, w), (10_000, 100)], &[(20_000, 100)]),
            step(&[(w, w), (20_000, 100)], &[(30_000, 100)]),
            step(&[(2 * w, w), (30_000, 100)], &[(10_000, 100)]),
        ];
        let t = ModelTouches::of(&spans);
        let at1 = t.reads_at(1, u64::MAX);
        // W1: nothing else touches it, so the whole iteration lies between.
        let w1 = at1.iter().find(|r| r.span == (w, w)).unwrap();
        assert_eq!(w1.bytes_between, (w + 200) + (w + 200));
        assert!(!w1.last_touch_wrote);
        // A: written by the step just before.
        let a = at1.iter().find(|r| r.span == (20_000, 100)).unwrap();
        assert_eq!(a.bytes_between, 0);
        assert!(a.last_touch_wrote);
        // Step 0's input was written by step 2, an iteration before: step 2 is the one
        // just before step 0.
        let at0 = t.reads_at(0, u64::MAX);
        let input = at0.iter().find(|r| r.span == (10_000, 100)).unwrap();
        assert_eq!((input.bytes_between, input.last_touch_wrote), (0, true));
        // Before step 1: step 0 touched 1 200 bytes and wrote 100 of them; over a wider
        // window the iteration before comes in (step 2, the same).
        assert!((t.written_share_before(1, 1000) - 100.0 / 1200.0).abs() < 1e-12);
        assert!((t.written_share_before(1, 2000) - 200.0 / 2400.0).abs() < 1e-12);
        assert_eq!(t.written_share_before(9, 2000), 0.0);
        // The cap bounds the walk.
        assert_eq!(t.reads_at(1, 500)[0].bytes_between, 500);
        assert!(t.reads_at(7, 500).is_empty());
    }

    #[test]
    fn a_read_only_partly_touched_before_counts_as_touched() {
        let spans = vec![
            step(&[(0, 100)], &[(500, 10)]),
            step(&[(1000, 10)], &[(1000, 10)]),
            step(&[(50, 100)], &[(600, 10)]),
        ];
        let t = ModelTouches::of(&spans);
        let r = t.reads_at(2, u64::MAX);
        assert_eq!(r.len(), 1);
        // Step 1 (20 bytes touched, merged to 10) lies between step 0's read and step 2's.
        assert_eq!(r[0].bytes_between, 10);
        assert!(!r[0].last_touch_wrote);
    }

    proptest! {
        /// The distance never passes the cap nor the bytes of one whole iteration, and
        /// every read of a step is answered once.
        #[test]
        fn distances_are_bounded(
            steps in prop::collection::vec(
                (prop::collection::vec((0u64..10_000, 0u64..500), 0..4),
                 prop::collection::vec((0u64..10_000, 0u64..500), 0..4)),
                1..12),
            cap in 0u64..5_000,
        ) {
            let spans: Vec<StepSpans> = steps.iter().map(|(r, w)| step(r, w)).collect();
            let t = ModelTouches::of(&spans);
            let whole: u64 = t.touched_bytes.iter().sum();
            for st in 0..spans.len() as u32 {
                let r = t.reads_at(st, cap);
                prop_assert_eq!(r.len(), merge(&spans[st as usize].reads, 0).len());
                for x in r {
                    prop_assert!(x.bytes_between <= cap.min(whole));
                }
                let w = t.written_share_before(st, cap);
                prop_assert!((0.0..=1.0).contains(&w));
            }
        }
    }
}
