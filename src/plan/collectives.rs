//! The collectives of a multi-rank plan, matched across ranks. NCCL needs every rank of a
//! communicator to issue the same collectives in the same order with the same sizes;
//! replaying ranks whose traces disagree would hang, so the plan proves the match first
//! and names the first divergence. Invariant: computed from the plan alone, in step order
//! per rank.

use super::types::{Plan, UnitCall};
use serde::Serialize;
use std::collections::BTreeMap;

/// What every rank's collectives are, when they match.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct CollectiveSchedule {
    pub ranks: Vec<u32>,
    /// Collectives each rank issues, in order.
    pub per_rank: usize,
    /// Each distinct collective ("allreduce bf16 in 4194304 out 4194304") and how often
    /// one rank issues it.
    pub kinds: BTreeMap<String, usize>,
}

fn describe(c: &UnitCall) -> Option<String> {
    let UnitCall::Collective {
        collective,
        dtype,
        in_nelems,
        out_nelems,
        group_size,
    } = c
    else {
        return None;
    };
    let n = |x: &Option<u64>| x.map_or("?".to_string(), |v| v.to_string());
    Some(format!(
        "{collective} {dtype} in {} out {} group {}",
        n(in_nelems),
        n(out_nelems),
        group_size.map_or("?".to_string(), |g| g.to_string())
    ))
}

/// Matches the ranks' collective sequences. `Ok(None)` for a plan without collectives.
pub fn match_ranks(plan: &Plan) -> Result<Option<CollectiveSchedule>, String> {
    let mut seq: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for s in &plan.steps {
        let (Some(stream), Some(unit)) = (
            plan.streams.get(s.stream as usize),
            plan.units.get(s.unit as usize),
        ) else {
            continue;
        };
        if let Some(d) = describe(&unit.call) {
            seq.entry(stream.rank).or_default().push(d);
        }
    }
    let Some((&first_rank, first)) = seq.iter().next() else {
        return Ok(None);
    };
    let ranks: Vec<u32> = plan
        .streams
        .iter()
        .map(|s| s.rank)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for &r in &ranks {
        let Some(other) = seq.get(&r) else {
            return Err(format!(
                "rank {r} issues no collective, rank {first_rank} issues {}: replayed together they would wait forever",
                first.len()
            ));
        };
        if let Some(i) = (0..first.len().min(other.len())).find(|&i| first[i] != other[i]) {
            return Err(format!(
                "collective #{i} differs: rank {first_rank} issues {}, rank {r} issues {} (traces of different jobs or steps?)",
                first[i], other[i]
            ));
        }
        if other.len() != first.len() {
            return Err(format!(
                "rank {first_rank} issues {} collectives, rank {r} issues {} (a rank's trace cut short?)",
                first.len(),
                other.len()
            ));
        }
    }
    let mut kinds = BTreeMap::new();
    for d in first {
        *kinds.entry(d.clone()).or_insert(0) += 1;
    }
    Ok(Some(CollectiveSchedule {
        ranks,
        per_rank: first.len(),
        kinds,
    }))
}
