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
//! Two counts of the distance: [`ModelTouches::reads_at`] sums the bytes each step between
//! touched (a byte touched twice counts twice), each read whole, and is what the record
//! uses; [`ModelTouches::reads_at_distinct`] counts the distinct bytes between, piece by
//! piece of the read (the stack distance of a least-recently-used cache), a diagnostic
//! (0.1-0.6 points further from kc's graph on four models of four, session 52). An operand
//! the image does not hold is as far as the step the plan binds it to, where the executor
//! takes that step's result, else an iteration ([`held_operand_distance`]). A step's code
//! is as far as the nearest step before it that ran one of its kernels ([`code_distance`]).
//!
//! Invariant: every distance is capped at the `cap` asked for; the distinct pieces of a
//! read cover it exactly; a read (or code) no other step touches (or runs) has the whole
//! iteration between it and itself.

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

impl ModelTouches {
    /// The reads of `step` byte by byte as a least-recently-used cache of bytes would see
    /// them: each read's bytes split by the step that last touched them (walking back
    /// through the iteration before where needed), each piece with the *distinct* bytes
    /// the steps after that touch and before `step` touched (its stack distance, not
    /// [`ModelTouches::reads_at`]'s sum, which counts a byte touched twice twice) and
    /// whether that touch wrote it. Pieces still unattributed when `cap` distinct bytes
    /// lie between have `cap`. Pieces of one read with equal distance and kind are merged.
    pub fn reads_at_distinct(&self, step: u32, cap: u64) -> Vec<ReadReuse> {
        let n = self.touched.len();
        let st = step as usize;
        let Some(reads) = self.reads.get(st) else {
            return Vec::new();
        };
        let mut out: Vec<ReadReuse> = Vec::new();
        for &span in reads {
            let mut pending = vec![span];
            let mut seen: Vec<(u64, u64)> = Vec::new();
            let mut seen_bytes = 0u64;
            let mut pieces: Vec<ReadReuse> = Vec::new();
            for back in 1..=n {
                if pending.is_empty() || seen_bytes >= cap {
                    break;
                }
                let j = (st + n - back) % n;
                let hit = intersect(&pending, &self.touched[j]);
                if !hit.is_empty() {
                    let dirty = intersect(&hit, &self.writes[j]);
                    let clean = subtract(&hit, &dirty);
                    for (spans, wrote) in [(dirty, true), (clean, false)] {
                        pieces.extend(spans.into_iter().map(|s| ReadReuse {
                            span: s,
                            bytes_between: seen_bytes,
                            last_touch_wrote: wrote,
                        }));
                    }
                    pending = subtract(&pending, &hit);
                }
                seen = merge(&[seen.as_slice(), self.touched[j].as_slice()].concat(), 0);
                seen_bytes = seen.iter().map(|s| s.1).sum();
            }
            pieces.extend(pending.into_iter().map(|s| ReadReuse {
                span: s,
                bytes_between: cap,
                last_touch_wrote: false,
            }));
            for p in &mut pieces {
                p.bytes_between = p.bytes_between.min(cap);
            }
            pieces.sort_by_key(|p| p.span);
            // Neighbouring pieces alike become one touch.
            for p in pieces {
                match out.last_mut() {
                    Some(q)
                        if q.span.0 + q.span.1 == p.span.0
                            && q.bytes_between == p.bytes_between
                            && q.last_touch_wrote == p.last_touch_wrote =>
                    {
                        q.span.1 += p.span.1
                    }
                    _ => out.push(p),
                }
            }
        }
        out
    }
}

/// The bytes `a` and `b` (each sorted and disjoint) share, sorted and disjoint.
fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let (mut i, mut k, mut out) = (0, 0, Vec::new());
    while i < a.len() && k < b.len() {
        let (a0, a1) = (a[i].0, a[i].0 + a[i].1);
        let (b0, b1) = (b[k].0, b[k].0 + b[k].1);
        let (lo, hi) = (a0.max(b0), a1.min(b1));
        if lo < hi {
            out.push((lo, hi - lo));
        }
        if a1 <= b1 {
            i += 1;
        } else {
            k += 1;
        }
    }
    out
}

/// The bytes of `a` that `b` does not hold (each sorted and disjoint).
fn subtract(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut k = 0;
    for &(off, bytes) in a {
        let (mut lo, hi) = (off, off + bytes);
        while k < b.len() && b[k].0 + b[k].1 <= lo {
            k += 1;
        }
        let mut m = k;
        while lo < hi && m < b.len() && b[m].0 < hi {
            if b[m].0 > lo {
                out.push((lo, b[m].0 - lo));
            }
            lo = lo.max(b[m].0 + b[m].1);
            m += 1;
        }
        if lo < hi {
            out.push((lo, hi - lo));
        }
    }
    out
}

impl ModelTouches {
    /// The bytes the model's steps strictly between step `from` and step `to` touched
    /// (summed, as [`ModelTouches::reads_at`] counts), walking forward through the end of
    /// the iteration where `to` comes first, at most `cap`; `cap` for a step the plan does
    /// not hold.
    pub fn bytes_between(&self, from: u32, to: u32, cap: u64) -> u64 {
        if from as usize >= self.touched_bytes.len() {
            return cap;
        }
        self.bytes_since(to, cap, |j| j == from)
    }

    /// The bytes the model's steps touched between the nearest step before `step` for
    /// which `shares` holds and `step`, walking back through the start of the iteration to
    /// its end (`step` itself an iteration back where no other step shares), at most
    /// `cap`; `cap` for a step the plan does not hold.
    pub fn bytes_since(&self, step: u32, cap: u64, shares: impl Fn(u32) -> bool) -> u64 {
        let n = self.touched_bytes.len();
        let s = step as usize;
        if s >= n {
            return cap;
        }
        let mut between = 0u64;
        let mut j = (s + n - 1) % n;
        while j != s && !shares(j as u32) {
            between = between.saturating_add(self.touched_bytes[j]);
            if between >= cap {
                return cap;
            }
            j = (j + n - 1) % n;
        }
        between
    }
}

/// How far the model's code for `step` lies: the bytes the model's steps touched since the
/// nearest step before it that launched one of its unit's kernels (by name; the unit's
/// own steps where the plan names none), at most `cap`. A kernel's code lies in device
/// memory and reaches the SMs through L2 as data does, so where more than L2 passes
/// between, the model fetches it from memory; a unit alone finds it in its SMs'
/// instruction caches. Session 53: with the code kept, the units' signed medians against
/// kc's graph were −0.5 … −2.8 % (within 3 % on 7 of 10 models, call 1); evicted where
/// this passes L2, −0.6 … +1.5 % (10 of 10, call 2); Mixtral's routing `sum` −45 → +0.6 %.
pub fn code_distance(plan: &Plan, touches: &ModelTouches, step: u32, cap: u64) -> u64 {
    let unit_at = |s: u32| {
        plan.steps
            .get(s as usize)
            .and_then(|st| plan.units.get(st.unit as usize))
    };
    let Some(mine) = unit_at(step) else {
        return cap;
    };
    touches.bytes_since(step, cap, |s| {
        unit_at(s)
            .is_some_and(|u| u.id == mine.id || u.kernels.iter().any(|k| mine.kernels.contains(k)))
    })
}

/// Where the model leaves an operand of `step` (a step of `unit`, buffer slot `slot`) that
/// the memory image does not hold: where the plan binds the read to the step that made it
/// ([`crate::plan::types::BoundRead`]) and the executor takes that result
/// ([`crate::plan::aten_call::takes_bound_result`]), the bytes the model's steps touched
/// since that step; else the operand is made once an iteration (an input, a constant, or
/// recorded values the executor keeps in place of the result), and as far as the model's
/// whole iteration. At most `cap`.
pub fn held_operand_distance(
    plan: &Plan,
    df: &PlanDataflow,
    touches: &ModelTouches,
    unit: &PlanUnit,
    step: u32,
    slot: u32,
    cap: u64,
) -> u64 {
    let once_an_iteration = touches.touched_bytes.iter().sum::<u64>().min(cap);
    let operand = unit.slots.iter().position(|&s| s == slot);
    let Some(b) = plan
        .bound_reads
        .iter()
        .find(|b| b.step == step && Some(b.operand as usize) == operand)
    else {
        return once_an_iteration;
    };
    // The tier-3 tensor that reads it, and whether the executor hands it the result.
    if let Some(Some(call)) = plan.aten_calls.get(unit.id as usize) {
        let arg = call.args.iter().enumerate().find_map(|(i, a)| {
            a.tensors()
                .into_iter()
                .find(|t| t.slot == slot)
                .map(|t| (i, t))
        });
        if let Some((i, t)) = arg {
            let recorded = plan.values.for_slot(unit.id, Some(step), slot).is_some();
            let placed = df
                .steps
                .get(step as usize)
                .is_some_and(|p| p.operand_of(unit, slot).is_some());
            if !crate::plan::aten_call::takes_bound_result(t, recorded, call.writes(i), placed) {
                return once_an_iteration;
            }
        }
    }
    touches.bytes_between(b.producer_step, step, cap)
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

    #[test]
    fn the_distinct_distance_counts_a_byte_touched_twice_once_and_splits_a_read_by_its_last_touch()
    {
        // Step 0 writes A (0..100) and reads W (1000..1100); steps 1 and 2 both read W
        // again; step 3 reads A and B (200..300), which step 2 wrote.
        let spans = vec![
            step(&[(1000, 100)], &[(0, 100)]),
            step(&[(1000, 100)], &[(5000, 10)]),
            step(&[(1000, 100)], &[(200, 100)]),
            step(&[(0, 100), (200, 100)], &[]),
        ];
        let t = ModelTouches::of(&spans);
        let summed = t.reads_at(3, u64::MAX);
        let distinct = t.reads_at_distinct(3, u64::MAX);
        // A: summed, steps 1 and 2 add 110 + 200; distinct, W once, then 10 and 100.
        let a = |r: &[ReadReuse]| r.iter().find(|x| x.span.0 == 0).copied().unwrap();
        assert_eq!(a(&summed).bytes_between, 310);
        assert_eq!(a(&distinct).bytes_between, 210);
        assert!(a(&distinct).last_touch_wrote);
        // B: step 2 wrote it, just before.
        let b = distinct.iter().find(|x| x.span.0 == 200).unwrap();
        assert_eq!((b.bytes_between, b.last_touch_wrote), (0, true));
        // A read half written by the step before and half read by the one before that.
        let spans = vec![
            step(&[(0, 50)], &[]),
            step(&[], &[(50, 50)]),
            step(&[(0, 100)], &[]),
        ];
        let r = ModelTouches::of(&spans).reads_at_distinct(2, u64::MAX);
        assert_eq!(
            r,
            vec![
                ReadReuse {
                    span: (0, 50),
                    bytes_between: 50,
                    last_touch_wrote: false
                },
                ReadReuse {
                    span: (50, 50),
                    bytes_between: 0,
                    last_touch_wrote: true
                },
            ]
        );
    }

    #[test]
    fn a_held_operand_is_as_far_as_its_producer_or_the_whole_iteration() {
        let spans = vec![
            step(&[(0, 100)], &[(100, 10)]),
            step(&[(100, 10)], &[(200, 1000)]),
            step(&[(200, 1000)], &[(0, 100)]),
        ];
        let t = ModelTouches::of(&spans);
        // Between step 0 and step 2 lies step 1 (1 010 bytes); from 2 round to 1, step 0.
        assert_eq!(t.bytes_between(0, 2, u64::MAX), 1010);
        assert_eq!(t.bytes_between(2, 1, u64::MAX), 110);
        assert_eq!(t.bytes_between(0, 1, u64::MAX), 0);
        assert_eq!(t.bytes_between(0, 2, 500), 500);
        assert_eq!(t.bytes_between(0, 9, 500), 500);
    }

    #[test]
    fn the_bytes_since_a_sharing_step_stop_at_the_nearest_one_before() {
        // Touched bytes by step: 10, 20, 40, 80.
        let spans = vec![
            step(&[(0, 10)], &[]),
            step(&[(100, 20)], &[]),
            step(&[(200, 40)], &[]),
            step(&[(300, 80)], &[]),
        ];
        let t = ModelTouches::of(&spans);
        // Step 0 shares with step 3: the step just before, through the iteration's end.
        assert_eq!(t.bytes_since(0, u64::MAX, |s| s == 3), 0);
        // Step 3 shares with step 0: steps 1 and 2 lie between.
        assert_eq!(t.bytes_since(3, u64::MAX, |s| s == 0), 60);
        // Shared with none: itself an iteration back, every other step between.
        assert_eq!(t.bytes_since(1, u64::MAX, |_| false), 130);
        // The cap bounds the walk; a step the plan does not hold is at the cap.
        assert_eq!(t.bytes_since(3, 50, |s| s == 0), 50);
        assert_eq!(t.bytes_since(9, 50, |_| true), 50);
    }

    proptest! {
        /// The distinct distance splits each read into pieces that cover it exactly, none
        /// past the cap, the nearest no farther than the read's summed distance.
        #[test]
        fn distinct_pieces_cover_each_read_and_are_no_farther_than_the_sum(
            steps in prop::collection::vec(
                (prop::collection::vec((0u64..4_000, 0u64..400), 0..4),
                 prop::collection::vec((0u64..4_000, 0u64..400), 0..4)),
                1..10),
            cap in 0u64..5_000,
        ) {
            let spans: Vec<StepSpans> = steps.iter().map(|(r, w)| step(r, w)).collect();
            let t = ModelTouches::of(&spans);
            for st in 0..spans.len() as u32 {
                let whole = t.reads_at(st, cap);
                let pieces = t.reads_at_distinct(st, cap);
                for w in &whole {
                    let (lo, hi) = (w.span.0, w.span.0 + w.span.1);
                    let mine: Vec<&ReadReuse> =
                        pieces.iter().filter(|p| p.span.0 >= lo && p.span.0 < hi).collect();
                    prop_assert_eq!(mine.iter().map(|p| p.span.1).sum::<u64>(), w.span.1);
                    for p in &mine {
                        prop_assert!(p.span.0 + p.span.1 <= hi);
                        prop_assert!(p.bytes_between <= cap);
                    }
                    // The summed walk stops at the first step that touches any byte of
                    // the read; that piece lies no farther counted distinctly.
                    let nearest = mine.iter().map(|p| p.bytes_between).min().unwrap_or(0);
                    prop_assert!(nearest <= w.bytes_between);
                }
                prop_assert_eq!(pieces.iter().map(|p| p.span.1).sum::<u64>(),
                                whole.iter().map(|p| p.span.1).sum::<u64>());
            }
        }

        /// The bytes since a sharing step never pass the cap nor the step's own iteration
        /// back; they are none where the step just before shares, and they grow as the
        /// sharing step lies further back.
        #[test]
        fn the_bytes_since_a_sharing_step_are_bounded_and_grow_with_its_distance(
            sizes in prop::collection::vec(0u64..1_000, 1..12),
            at in 0u32..12,
            back in 1usize..12,
            cap in 0u64..20_000,
        ) {
            let spans: Vec<StepSpans> = sizes
                .iter()
                .enumerate()
                .map(|(i, &b)| step(&[(10_000 * i as u64, b)], &[]))
                .collect();
            let t = ModelTouches::of(&spans);
            let n = spans.len();
            let s = at % n as u32;
            let whole = t.bytes_between(s, s, u64::MAX);
            // The step `k` before `s`, through the start of the iteration.
            let before = |k: usize| ((s as usize + n - k % n) % n) as u32;
            let d = t.bytes_since(s, cap, |j| j == before(back));
            prop_assert!(d <= cap);
            prop_assert!(d <= whole || d == cap);
            prop_assert_eq!(t.bytes_since(s, cap, |j| j == before(1)), 0);
            if back >= 2 && back < n {
                let nearer = t.bytes_since(s, cap, |j| j == before(back - 1));
                prop_assert!(nearer <= d);
            }
        }

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
