//! Which bytes of the memory image each step reads that a later step of the model's pass
//! writes again, and from them the spans a unit's measured steps must be given back: the
//! values those steps read in the model.
//!
//! The isolated pass gives every place the model's values by running every step once in
//! plan order; after that pass a place holds what its *last* writer left. The image
//! packs tensors whose lives do not overlap into the same bytes (the caching allocator's
//! reuse), so 61-93 % of the bytes the steps read were written again by a later step
//! before the pass ended on the repository's fixtures and the plans of session 29's calls
//! (37 % on the Mixtral prefill fixture): without these spans a unit alone read another
//! tensor's values, not its own step's.
//!
//! Invariant: the spans are exact for the tier-3 steps (their calls say what they write);
//! a step of another tier is taken to write every operand it has except a GEMM's inputs,
//! so a span is never left out, only perhaps kept when it need not be (which costs
//! memory, never the values).

use crate::plan::types::{Plan, PlanDataflow, PlanUnit, StepPlaces, UnitCall};
use std::collections::BTreeMap;

/// The bytes of the image (arena offset, length) one step reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepSpans {
    pub reads: Vec<(u64, u64)>,
    pub writes: Vec<(u64, u64)>,
}

/// What every step of `plan` reads and writes in the image `df` places it in, in step
/// order (see the module's invariant for the tiers other than 3).
pub fn step_spans(plan: &Plan, df: &PlanDataflow) -> Vec<StepSpans> {
    (0..plan.steps.len().min(df.steps.len()))
        .map(|st| {
            let unit = &plan.units[plan.steps[st].unit as usize];
            spans_of_step(plan, unit, &df.steps[st])
        })
        .collect()
}

fn spans_of_step(plan: &Plan, unit: &PlanUnit, places: &StepPlaces) -> StepSpans {
    let span = |slot: u32| {
        places
            .operand_of(unit, slot)
            .map(|o| (o, plan.buffers[slot as usize].bytes))
    };
    let mut s = StepSpans::default();
    match &unit.call {
        UnitCall::Gemm(g) => {
            s.reads.extend(
                [Some(g.a), Some(g.b), g.bias]
                    .into_iter()
                    .flatten()
                    .filter_map(span),
            );
            if let Some(c) = span(g.c) {
                s.writes.push(c);
                if g.beta != 0.0 {
                    s.reads.push(c);
                }
            }
        }
        UnitCall::Memcpy { src, dst, .. } => {
            s.reads.extend(span(*src));
            s.writes.extend(span(*dst));
        }
        UnitCall::Memset { dst, .. } => s.writes.extend(span(*dst)),
        UnitCall::AtenOp { .. } => match plan.aten_calls.get(unit.id as usize) {
            Some(Some(call)) => {
                for (i, arg) in call.args.iter().enumerate() {
                    let written = call.writes(i);
                    for t in arg.tensors() {
                        if let Some(sp) = span(t.slot) {
                            s.reads.push(sp);
                            if written {
                                s.writes.push(sp);
                            }
                        }
                    }
                }
                s.writes
                    .extend(places.outputs.iter().flatten().map(|&(o, b)| (o, b)));
            }
            _ => every_operand(plan, unit, places, &mut s),
        },
        _ => every_operand(plan, unit, places, &mut s),
    }
    s
}

/// A step whose call does not say what it writes reads and writes every operand.
fn every_operand(plan: &Plan, unit: &PlanUnit, places: &StepPlaces, s: &mut StepSpans) {
    for (o, slot) in places.operands.iter().zip(&unit.slots) {
        if let Some(o) = *o {
            let sp = (o, plan.buffers[*slot as usize].bytes);
            s.reads.push(sp);
            s.writes.push(sp);
        }
    }
    s.writes
        .extend(places.outputs.iter().flatten().map(|&(o, b)| (o, b)));
}

/// A set of byte spans, kept merged: start → end.
#[derive(Default)]
struct SpanSet(BTreeMap<u64, u64>);

impl SpanSet {
    fn insert(&mut self, (start, len): (u64, u64)) {
        if len == 0 {
            return;
        }
        let (mut lo, mut hi) = (start, start.saturating_add(len));
        // Every span that touches [lo, hi) is folded into it.
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=hi)
            .rev()
            .take_while(|&(_, &e)| e >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.0.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.0.insert(lo, hi);
    }

    /// The parts of `(start, len)` this set covers, in order, as (offset, length).
    fn overlap(&self, (start, len): (u64, u64)) -> Vec<(u64, u64)> {
        let end = start.saturating_add(len);
        let mut out: Vec<(u64, u64)> = self
            .0
            .range(..end)
            .rev()
            .take_while(|&(_, &e)| e > start)
            .map(|(&s, &e)| (s.max(start), e.min(end)))
            .filter(|(s, e)| e > s)
            .map(|(s, e)| (s, e - s))
            .collect();
        out.reverse();
        out
    }

    /// What `(start, len)` holds that this set does not cover, as (offset, length).
    fn outside(&self, (start, len): (u64, u64)) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        for (s, l) in self.overlap((start, len)) {
            if s > at {
                out.push((at, s - at));
            }
            at = s + l;
        }
        let end = start.saturating_add(len);
        if end > at {
            out.push((at, end - at));
        }
        out
    }
}

/// For every step, the bytes it reads that a later step of the pass writes (merged, in
/// offset order): the bytes whose values at the end of the pass are not the ones the
/// step read. One pass from the end.
pub fn reads_rewritten_later(spans: &[StepSpans]) -> Vec<Vec<(u64, u64)>> {
    let mut later = SpanSet::default();
    let mut out = vec![Vec::new(); spans.len()];
    for (st, s) in spans.iter().enumerate().rev() {
        let mut rewritten = SpanSet::default();
        for &r in &s.reads {
            for o in later.overlap(r) {
                rewritten.insert(o);
            }
        }
        out[st] = rewritten.0.into_iter().map(|(a, b)| (a, b - a)).collect();
        for &w in &s.writes {
            later.insert(w);
        }
    }
    out
}

/// Whether a launch of the unit that runs `steps` writes bytes one of those steps reads
/// (an in-place activation, or two of its places that the image packs into the same
/// bytes), by the spans: such a launch can change what the next one reads, so its repeats
/// can run its values away. On session 29's plans these are 68 of DenseNet-121's 264
/// units, 63 of the 65 whose values ran away among them (their in-place ReLUs); the spans
/// do not show the other two (batch norms) so, why not looked into.
pub fn launch_rewrites_its_reads(spans: &[StepSpans], steps: &[u32]) -> bool {
    let mut written = SpanSet::default();
    for &st in steps {
        for &w in spans.get(st as usize).map_or(&[][..], |s| &s.writes[..]) {
            written.insert(w);
        }
    }
    steps.iter().any(|&st| {
        spans.get(st as usize).is_some_and(|s| {
            s.reads
                .iter()
                .any(|&r| r.1 > 0 && !written.overlap(r).is_empty())
        })
    })
}

/// For each invocation of a launch that runs `steps` in turn, the bytes it reads that
/// some invocation of the launch writes (itself in place, or another over a place the
/// image packs into the same bytes), merged in offset order: what the launch itself can
/// have changed before that invocation reads it, and so what must be given back to it
/// for it to read the model's values. Only these: a read the launch never writes already
/// holds them, and copying it too would put it in L2 where the model may read it from
/// memory.
pub fn reads_the_launch_writes(spans: &[StepSpans], steps: &[u32]) -> Vec<Vec<(u64, u64)>> {
    let mut written = SpanSet::default();
    for &st in steps {
        for &w in spans.get(st as usize).map_or(&[][..], |s| &s.writes[..]) {
            written.insert(w);
        }
    }
    steps
        .iter()
        .map(|&st| {
            let mut own = SpanSet::default();
            for &r in spans.get(st as usize).map_or(&[][..], |s| &s.reads[..]) {
                for o in written.overlap(r) {
                    own.insert(o);
                }
            }
            own.0.into_iter().map(|(a, b)| (a, b - a)).collect()
        })
        .collect()
}

/// The spans a unit measured over `steps` (in the order its launch runs them) must be
/// given back to read what those steps read in the model, each as (step, arena offset,
/// length), with no byte twice: where two of its steps read the same bytes the earlier
/// in `steps` keeps them (so the launch's first invocation reads the model's values).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitStepValues {
    pub spans: Vec<(u32, u64, u64)>,
    /// Bytes a later step of the unit also reads with the values of another time, which
    /// the earlier step's values serve.
    pub shared_bytes: u64,
}

impl UnitStepValues {
    pub fn bytes(&self) -> u64 {
        self.spans.iter().map(|s| s.2).sum()
    }
}

/// [`UnitStepValues`] of the unit that runs `steps`, from [`reads_rewritten_later`].
pub fn unit_step_values(rewritten: &[Vec<(u64, u64)>], steps: &[u32]) -> UnitStepValues {
    let mut claimed = SpanSet::default();
    let mut v = UnitStepValues::default();
    for &st in steps {
        for &r in rewritten.get(st as usize).map(Vec::as_slice).unwrap_or(&[]) {
            let free = claimed.outside(r);
            let free_bytes: u64 = free.iter().map(|f| f.1).sum();
            v.shared_bytes += r.1 - free_bytes;
            v.spans.extend(free.into_iter().map(|(o, l)| (st, o, l)));
            claimed.insert(r);
        }
    }
    v
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
    fn each_invocation_is_given_back_only_what_the_launch_writes_of_its_reads() {
        let spans = vec![
            // 0: reads a weight [1000, 64) and block A [0, 16), writes block B [16, 16).
            step(&[(1000, 64), (0, 16)], &[(16, 16)]),
            // 1: reads the weight and block B, writes block A: the places chain.
            step(&[(1000, 64), (16, 16)], &[(0, 16)]),
            // 2: in place over [200, 8).
            step(&[(200, 8)], &[(200, 8)]),
        ];
        let got = reads_the_launch_writes(&spans, &[0, 1, 0, 1]);
        assert_eq!(
            got,
            vec![vec![(0, 16)], vec![(16, 16)], vec![(0, 16)], vec![(16, 16)]]
        );
        // Alone, a step's reads that no step of the launch writes are not given back.
        assert_eq!(reads_the_launch_writes(&spans, &[0]), vec![Vec::new()]);
        assert_eq!(reads_the_launch_writes(&spans, &[2]), vec![vec![(200, 8)]]);
    }

    #[test]
    fn a_launch_rewrites_its_reads_in_place_or_through_packed_places() {
        let spans = vec![
            // 0: in place (a ReLU_ over [0, 8)).
            step(&[(0, 8)], &[(0, 8)]),
            // 1: reads [100, 8), writes [200, 8).
            step(&[(100, 8)], &[(200, 8)]),
            // 2: reads [204, 8) (over step 1's output), writes [300, 8).
            step(&[(204, 8)], &[(300, 8)]),
            // 3: reads [400, 8), writes [500, 8): nothing of its own.
            step(&[(400, 8)], &[(500, 8)]),
        ];
        assert!(launch_rewrites_its_reads(&spans, &[0]));
        assert!(!launch_rewrites_its_reads(&spans, &[1]));
        assert!(!launch_rewrites_its_reads(&spans, &[3]));
        // A launch of steps 1 and 2: step 1 writes what step 2 reads.
        assert!(launch_rewrites_its_reads(&spans, &[1, 2]));
        assert!(launch_rewrites_its_reads(&spans, &[2, 1]));
        assert!(!launch_rewrites_its_reads(&spans, &[1, 3]));
        // Steps past the spans count as touching nothing.
        assert!(!launch_rewrites_its_reads(&spans, &[9]));
    }

    #[test]
    fn a_place_reused_by_a_later_tensor_is_rewritten_for_its_readers() {
        // Step 0 writes a at [0, 100), step 1 reads it, step 2 writes b over [50, 150)
        // (the allocator gave a's freed bytes to b), step 3 reads b.
        let spans = vec![
            step(&[], &[(0, 100)]),
            step(&[(0, 100)], &[(200, 10)]),
            step(&[(200, 10)], &[(50, 100)]),
            step(&[(50, 100)], &[]),
        ];
        let r = reads_rewritten_later(&spans);
        assert_eq!(r[1], vec![(50, 50)], "b's write takes a's upper half");
        assert!(r[2].is_empty() && r[3].is_empty());
        // A step that writes what it reads (in place) is not its own later writer.
        let r = reads_rewritten_later(&[step(&[(0, 8)], &[(0, 8)])]);
        assert!(r[0].is_empty());
    }

    #[test]
    fn a_units_steps_share_bytes_with_the_earlier_step_first() {
        let rewritten = vec![vec![(0, 100)], vec![], vec![(50, 100), (400, 4)]];
        let v = unit_step_values(&rewritten, &[0, 1, 2]);
        assert_eq!(v.spans, vec![(0, 0, 100), (2, 100, 50), (2, 400, 4)]);
        assert_eq!(v.shared_bytes, 50);
        assert_eq!(v.bytes(), 154);
        // In the other order the later step in the model keeps the shared bytes.
        let v = unit_step_values(&rewritten, &[2, 0]);
        assert_eq!(v.spans, vec![(2, 50, 100), (2, 400, 4), (0, 0, 50)]);
    }

    /// The rewritten bytes, byte by byte: read by step s and written by a step after it.
    fn brute(spans: &[StepSpans], size: u64) -> Vec<Vec<bool>> {
        (0..spans.len())
            .map(|s| {
                (0..size)
                    .map(|b| {
                        let inside = |v: &[(u64, u64)]| v.iter().any(|&(o, l)| b >= o && b < o + l);
                        inside(&spans[s].reads) && spans[s + 1..].iter().any(|t| inside(&t.writes))
                    })
                    .collect()
            })
            .collect()
    }

    fn span() -> impl Strategy<Value = (u64, u64)> {
        (0u64..60, 0u64..20)
    }

    proptest! {
        #[test]
        fn rewritten_reads_match_byte_by_byte(
            raw in proptest::collection::vec(
                (proptest::collection::vec(span(), 0..4), proptest::collection::vec(span(), 0..4)),
                1..12,
            )
        ) {
            let spans: Vec<StepSpans> = raw.into_iter().map(|(r, w)| StepSpans { reads: r, writes: w }).collect();
            let fast = reads_rewritten_later(&spans);
            let slow = brute(&spans, 80);
            for (s, want) in slow.iter().enumerate() {
                let got: Vec<bool> = (0..80u64)
                    .map(|b| fast[s].iter().any(|&(o, l)| b >= o && b < o + l))
                    .collect();
                prop_assert_eq!(&got, want, "step {}", s);
                // Merged: sorted, apart, none empty.
                for w in fast[s].windows(2) {
                    prop_assert!(w[0].0 + w[0].1 < w[1].0);
                }
                prop_assert!(fast[s].iter().all(|&(_, l)| l > 0));
            }
        }

        #[test]
        fn a_units_spans_cover_its_steps_rewritten_reads_once(
            rewritten in proptest::collection::vec(proptest::collection::vec(span(), 0..3), 1..6),
        ) {
            let steps: Vec<u32> = (0..rewritten.len() as u32).collect();
            let v = unit_step_values(&rewritten, &steps);
            let mut seen = [0u32; 80];
            for &(_, o, l) in &v.spans {
                for b in o..o + l {
                    seen[b as usize] += 1;
                }
            }
            for b in 0..80u64 {
                let wanted = rewritten.iter().flatten().any(|&(o, l)| b >= o && b < o + l);
                prop_assert_eq!(seen[b as usize], u32::from(wanted), "byte {}", b);
            }
            let asked: u64 = rewritten.iter().flatten().map(|s| s.1).sum();
            prop_assert_eq!(v.bytes() + v.shared_bytes, asked);
        }
    }
}
