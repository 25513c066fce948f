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

/// The collectives kc replays with NCCL.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    AllToAll,
}

impl CollectiveKind {
    /// The kind a trace's collective name means (`None`: not replayed, e.g. `wait`,
    /// `barrier`).
    pub fn of(name: &str) -> Option<CollectiveKind> {
        let n = name
            .trim_start_matches('_')
            .to_ascii_lowercase()
            .replace('_', "");
        Some(match n.as_str() {
            "allreduce" | "allreducecoalesced" => CollectiveKind::AllReduce,
            "allgather" | "allgatherbase" | "allgatherintotensorcoalesced" => {
                CollectiveKind::AllGather
            }
            "reducescatter" | "reducescatterbase" | "reducescattertensorcoalesced" => {
                CollectiveKind::ReduceScatter
            }
            "broadcast" => CollectiveKind::Broadcast,
            "alltoall" | "alltoallv" | "alltoallbase" => CollectiveKind::AllToAll,
            _ => return None,
        })
    }
}

/// Bytes per element of a trace's collective dtype ("Half", "BFloat16", "Float", ...).
pub fn elem_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "Half" | "Float16" | "c10::Half" | "BFloat16" | "c10::BFloat16" => 2,
        "Float" | "Float32" | "Int" | "Int32" => 4,
        "Double" | "Long" | "Int64" => 8,
        "Byte" | "UInt8" | "Bool" | "Char" | "Int8" => 1,
        _ => return None,
    })
}

/// A collective unit's call, validated for a job of some number of ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveCall {
    pub kind: CollectiveKind,
    pub dtype: String,
    pub elem_bytes: u64,
    /// Elements each rank sends and receives.
    pub in_nelems: u64,
    pub out_nelems: u64,
}

impl CollectiveCall {
    /// The call a collective unit makes on a job of `world` ranks, or why kc cannot make
    /// it (its kind, its element type, a sub-group communicator, counts that do not fit).
    pub fn from_plan(call: &UnitCall, world: u32) -> Result<CollectiveCall, String> {
        let UnitCall::Collective {
            collective,
            dtype,
            in_nelems,
            out_nelems,
            group_size,
        } = call
        else {
            return Err("not a collective".into());
        };
        if collective.is_empty() {
            return Err(
                "the trace records no collective parameters (PyTorch's record_param_comms: name, element counts, dtype), so the call cannot be sized"
                    .into(),
            );
        }
        let kind = CollectiveKind::of(collective)
            .ok_or_else(|| format!("collective {collective:?} is not replayed"))?;
        let elem =
            elem_bytes(dtype).ok_or_else(|| format!("element type {dtype:?} has no NCCL type"))?;
        if let Some(g) = group_size {
            if *g != world {
                return Err(format!(
                    "a communicator of {g} ranks in a job of {world}: sub-group communicators are not replayed"
                ));
            }
        }
        let (Some(i), Some(o)) = (in_nelems, out_nelems) else {
            return Err("element counts were not recorded".into());
        };
        let w = u64::from(world.max(1));
        let fits = match kind {
            CollectiveKind::AllReduce | CollectiveKind::Broadcast => i == o,
            CollectiveKind::AllToAll => i == o && i % w == 0,
            CollectiveKind::AllGather => Some(*o) == i.checked_mul(w),
            CollectiveKind::ReduceScatter => Some(*i) == o.checked_mul(w),
        };
        if !fits || *i == 0 {
            return Err(format!(
                "{collective} with {i} elements in and {o} out does not fit {world} ranks"
            ));
        }
        Ok(CollectiveCall {
            kind,
            dtype: dtype.clone(),
            elem_bytes: elem,
            in_nelems: *i,
            out_nelems: *o,
        })
    }
}

fn describe(u: &super::types::PlanUnit) -> Option<String> {
    // A collective the plan cannot replay still orders the ranks' sequences.
    if let UnitCall::NotReplayable { .. } = &u.call {
        return (u.family == "collective").then(|| format!("{} (not replayed)", u.label));
    }
    let c = &u.call;
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
        if let Some(d) = describe(unit) {
            seq.entry(stream.rank).or_default().push(d);
        }
    }
    let Some((&first_rank, first)) = seq.iter().next() else {
        return Ok(None);
    };
    let ranks = plan.ranks();
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
