//! Spans of the memory image as (offset, bytes): merged into the fewest copies that cover
//! them. A unit measured from the model's values copies its places back from the image's
//! snapshot at the head of every launch; each copy is a graph node of its own, with a
//! fixed cost of a few microseconds, so spans lying close together are copied as one.
//! The model's cache state (`cache_state`) merges each step's reads and writes with it.
//!
//! Invariant: every byte of every span given is covered by exactly one span returned; the
//! spans returned are sorted, disjoint and non-empty.

/// `spans` sorted and merged wherever two overlap or lie at most `gap` bytes apart (the
/// bytes between them are copied too); empty spans are dropped.
pub fn merge(spans: &[(u64, u64)], gap: u64) -> Vec<(u64, u64)> {
    let mut s: Vec<(u64, u64)> = spans.iter().copied().filter(|&(_, b)| b > 0).collect();
    s.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(s.len());
    for (off, bytes) in s {
        let end = off.saturating_add(bytes);
        match out.last_mut() {
            Some((o, b)) if off <= (*o + *b).saturating_add(gap) => {
                *b = end.max(*o + *b) - *o;
            }
            _ => out.push((off, bytes)),
        }
    }
    out
}

/// The bytes `spans` cover.
pub fn total(spans: &[(u64, u64)]) -> u64 {
    spans.iter().map(|s| s.1).sum()
}

/// Merged spans (`merge`'s) laid end to end in a scratch buffer: each span's offset in the
/// image, its bytes and its offset in the scratch, in image order.
pub fn packed(merged: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    merged
        .iter()
        .scan(0u64, |at, &(off, bytes)| {
            let p = (off, bytes, *at);
            *at += bytes;
            Some(p)
        })
        .collect()
}

/// Where the image's bytes `[off, off + bytes)` lie in the scratch `packed` lays out, where
/// one packed span holds all of them.
pub fn packed_at(packed: &[(u64, u64, u64)], off: u64, bytes: u64) -> Option<u64> {
    let i = packed.partition_point(|p| p.0 <= off).checked_sub(1)?;
    let (o, b, at) = packed[i];
    (off + bytes <= o + b).then_some(at + off - o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn close_spans_merge_and_far_ones_do_not() {
        let got = merge(&[(100, 10), (0, 50), (40, 20), (200, 0), (1000, 8)], 64);
        // (0,50) and (40,20) overlap; 60 → 100 is a gap of 40 ≤ 64; 110 → 1000 is not.
        assert_eq!(got, vec![(0, 110), (1000, 8)]);
        assert_eq!(merge(&[(0, 10), (20, 10)], 0), vec![(0, 10), (20, 10)]);
        assert_eq!(merge(&[(0, 10), (10, 10)], 0), vec![(0, 20)]);
        // A span inside another adds nothing.
        assert_eq!(merge(&[(0, 100), (10, 5)], 0), vec![(0, 100)]);
        assert_eq!(total(&[(0, 110), (1000, 8)]), 118);
    }

    #[test]
    fn packed_spans_lie_end_to_end_and_are_found_within() {
        let p = packed(&merge(&[(100, 10), (0, 50), (1000, 8)], 0));
        assert_eq!(p, vec![(0, 50, 0), (100, 10, 50), (1000, 8, 60)]);
        assert_eq!(packed_at(&p, 0, 50), Some(0));
        assert_eq!(packed_at(&p, 104, 6), Some(54));
        assert_eq!(packed_at(&p, 1000, 8), Some(60));
        // Not held whole by one span, or not held at all.
        assert_eq!(packed_at(&p, 40, 20), None);
        assert_eq!(packed_at(&p, 60, 4), None);
        assert_eq!(packed_at(&[], 0, 1), None);
    }

    proptest! {
        #[test]
        fn every_span_merged_is_found_in_the_packing(
            spans in proptest::collection::vec((0u64..4096, 1u64..512), 1..40),
            gap in 0u64..256,
        ) {
            let p = packed(&merge(&spans, gap));
            for &(o, b) in &spans {
                let at = packed_at(&p, o, b);
                prop_assert!(at.is_some());
                // Its bytes sit where their span's do, shifted as the span is.
                let i = p.iter().position(|s| s.0 <= o && o + b <= s.0 + s.1).unwrap();
                prop_assert_eq!(at.unwrap(), p[i].2 + o - p[i].0);
            }
        }
    }

    proptest! {
        #[test]
        fn every_byte_is_covered_once(
            spans in proptest::collection::vec((0u64..4096, 0u64..512), 0..40),
            gap in 0u64..256,
        ) {
            let got = merge(&spans, gap);
            for w in got.windows(2) {
                // Sorted, disjoint, and farther apart than the gap.
                prop_assert!(w[0].0 + w[0].1 + gap < w[1].0);
            }
            prop_assert!(got.iter().all(|s| s.1 > 0));
            for &(o, b) in &spans {
                if b == 0 { continue; }
                prop_assert!(got.iter().any(|&(go, gb)| go <= o && o + b <= go + gb));
            }
        }
    }
}
