//! Diagnostics: non-fatal oddities found while reading or lowering, counted by kind and
//! kept with a few examples each. Stages return `(T, Vec<Diagnostic>)`; nothing here aborts.
//! Invariant: a diagnostic always names where it came from (file and event index, or node).

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable snake_case kind, the key diagnostics are counted by.
    pub kind: &'static str,
    /// Where: "trace.json event 123 (byte 4567)" or "node 12".
    pub location: String,
    pub message: String,
    /// How many occurrences this entry stands for: 1, or more for the entry that sums up
    /// the occurrences of a kind beyond the examples kept.
    pub count: u64,
}

impl Diagnostic {
    pub fn new(
        kind: &'static str,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            location: location.into(),
            message: message.into(),
            count: 1,
        }
    }
}

/// Counts per kind, with the first example of each.
#[derive(Clone, Debug, Serialize, Default, PartialEq)]
pub struct DiagnosticSummary {
    pub total: u64,
    pub by_kind: BTreeMap<String, DiagnosticKindSummary>,
}

#[derive(Clone, Debug, Serialize, Default, PartialEq)]
pub struct DiagnosticKindSummary {
    pub count: u64,
    pub example: String,
}

impl DiagnosticSummary {
    pub fn of(diags: &[Diagnostic]) -> Self {
        let mut s = DiagnosticSummary::default();
        for d in diags {
            s.total += d.count;
            let e = s.by_kind.entry(d.kind.to_string()).or_default();
            if e.count == 0 {
                e.example = format!("{}: {}", d.location, d.message);
            }
            e.count += d.count;
        }
        s
    }
}

/// A sink that keeps every diagnostic but caps how many of one kind are stored, so a
/// trace with a million identical oddities does not hold a million strings.
#[derive(Default)]
pub struct Diagnostics {
    kept: Vec<Diagnostic>,
    /// Per kind: every occurrence, those the kept entries stand for, and the kept entries.
    counts: BTreeMap<&'static str, (u64, u64, u64)>,
}

const KEEP_PER_KIND: u64 = 50;

impl Diagnostics {
    /// Adds `d`, which stands for `d.count` occurrences (a worker's "N more of this kind"
    /// entry stands for N: merged sinks count exactly).
    pub fn push(&mut self, d: Diagnostic) {
        let (all, kept, entries) = self.counts.entry(d.kind).or_insert((0, 0, 0));
        *all += d.count;
        if *entries < KEEP_PER_KIND {
            *kept += d.count;
            *entries += 1;
            self.kept.push(d);
        }
    }

    pub fn add(
        &mut self,
        kind: &'static str,
        location: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.push(Diagnostic::new(kind, location, message));
    }

    pub fn extend(&mut self, other: Vec<Diagnostic>) {
        for d in other {
            self.push(d);
        }
    }

    /// The stored diagnostics plus one entry per capped kind that stands for the rest, so
    /// summaries count exactly.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        let mut v = self.kept;
        for (kind, (all, kept, _)) in self.counts {
            if all > kept {
                v.push(Diagnostic {
                    kind,
                    location: String::new(),
                    message: format!("{} more of this kind", all - kept),
                    count: all - kept,
                });
            }
        }
        v
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    #[test]
    fn merged_sinks_count_every_occurrence() {
        // Two workers each saw 120 of one kind; the merged sink counts 240, keeps 50.
        let mut merged = Diagnostics::default();
        for _ in 0..2 {
            let mut worker = Diagnostics::default();
            for i in 0..120 {
                worker.add("odd", format!("event {i}"), "odd");
            }
            merged.extend(worker.into_vec());
        }
        let v = merged.into_vec();
        let s = DiagnosticSummary::of(&v);
        assert_eq!(s.by_kind["odd"].count, 240);
        assert_eq!(s.total, 240);
        assert!(v.len() <= 51, "{} entries kept", v.len());
    }
}
