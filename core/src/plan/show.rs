//! What a plan holds, for `kc plan` and `kc plan show`: units per tier, memory needed,
//! streams, steps, the largest units, the encoded size against JSON of the same content,
//! and (`--round`) the round of every unit the isolated pass measures. Invariant: computed
//! from the plan alone.

use super::types::{Plan, PlanTier, UnitCall};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TierCount {
    pub unique_units: u64,
    pub invocations: u64,
    pub traced_us: f64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LargeUnit {
    pub id: u32,
    pub tier: String,
    pub label: String,
    pub call: String,
    pub invocations: u64,
    pub traced_us_total: f64,
    pub traced_us_mean: f64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PlanSummary {
    pub sources: Vec<String>,
    pub devices: Vec<String>,
    pub tiers: BTreeMap<String, TierCount>,
    pub units: usize,
    pub steps: usize,
    pub streams: usize,
    pub cross_stream_waits: usize,
    pub buffers: usize,
    pub device_bytes: u64,
    pub pinned_host_bytes: u64,
    pub cold_extra_peak_bytes: u64,
    pub traced_gpu_us: f64,
    pub replayable_traced_us: f64,
    /// Longest chain of steps through stream order and waits, traced durations.
    pub traced_critical_path_us: f64,
    pub encoded_bytes: u64,
    pub json_bytes: u64,
    pub bytes_per_unit: f64,
    pub largest_units: Vec<LargeUnit>,
    /// Profiled iterations the steps cover, and how they were found.
    pub iterations: u32,
    pub iterations_found_by: String,
    /// The ranks' collectives, matched (`None` without collectives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<super::collectives::CollectiveSchedule>,
    /// Why the ranks' collectives do not match, if they do not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives_mismatch: Option<String>,
    /// The memory image graph mode replays over (`None`: a plan without dataflow).
    pub dataflow: Option<DataflowSummary>,
    /// The replay's switches between different units on the lowest rank and how far back
    /// they reach (`None` without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switches: Option<SwitchSummary>,
    /// Tier-3 tensors the replay fills with the values the model's run recorded
    /// (`None`: no values file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_values: Option<ValuesSummary>,
}

/// What a plan fills from recorded values.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ValuesSummary {
    pub source: String,
    /// Tensors over all steps that take recorded values, and the steps with any.
    pub tensors: usize,
    pub steps: usize,
    /// Units whose isolated replay takes its first invocation's values.
    pub units: usize,
    /// Distinct value contents and their bytes.
    pub blobs: usize,
    pub bytes: u64,
}

fn values_summary(plan: &Plan) -> Option<ValuesSummary> {
    let v = &plan.values;
    if v.is_empty() {
        return None;
    }
    let (tensors, steps) = v.step_counts();
    Some(ValuesSummary {
        source: v.source.clone(),
        tensors,
        steps,
        units: v.units.iter().filter(|u| !u.is_empty()).count(),
        blobs: v.blobs.len(),
        bytes: v.blobs.iter().map(|b| b.len() as u64).sum(),
    })
}

/// What [`crate::plan::schedule::switch_reuse`] finds, summed up: switches per replay,
/// those to a unit's first run, and the reuse distance of the others (distinct units run
/// since the unit switched to last ran): median, 90th percentile, and the replayable
/// units there are (the round of every unit reaches that far back at every switch).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SwitchSummary {
    pub switches: u64,
    pub to_first_run: u64,
    pub reuse_distance_p50: u32,
    pub reuse_distance_p90: u32,
    pub units: usize,
}

fn switch_summary(plan: &Plan) -> Option<SwitchSummary> {
    let replays =
        |s: &crate::plan::types::Step| plan.units[s.unit as usize].tier != PlanTier::NotReplayable;
    let rank = plan.ranks().first().copied()?;
    let mut r = crate::plan::schedule::switch_reuse(plan, rank, replays);
    if r.switches == 0 {
        return None;
    }
    r.distances.sort_unstable();
    let at = |q: f64| {
        r.distances
            .get(((q * r.distances.len() as f64).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0)
    };
    let units = plan
        .steps
        .iter()
        .filter(|s| plan.streams[s.stream as usize].rank == rank && replays(s))
        .map(|s| s.unit)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    Some(SwitchSummary {
        switches: r.switches,
        to_first_run: r.to_first_run,
        reuse_distance_p50: at(0.5),
        reuse_distance_p90: at(0.9),
        units,
    })
}

/// How a plan's operands are placed in the model's memory image.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DataflowSummary {
    /// "execution trace" (exact) or "heuristic".
    pub derivation: String,
    pub parameters: usize,
    pub parameter_bytes: u64,
    pub activations: usize,
    /// Bytes of every activation storage, as if none shared memory.
    pub activation_bytes_unpacked: u64,
    /// The most activation bytes alive at one step.
    pub peak_activation_bytes: u64,
    /// Parameters plus packed activations: the device memory graph mode replays over.
    pub arena_bytes: u64,
    /// Operands of replayed steps placed in the arena, and those on private buffers.
    pub operands_placed: u64,
    pub operands_private: u64,
    /// Results of tier-3 ops placed in the arena.
    pub results_placed: u64,
    /// Results tier-3 ops allocate outside the image, and the bytes their readers see in
    /// regions of their own.
    pub detached_results: usize,
    pub detached_bytes: u64,
    /// Storages whose bytes the replay reads before it writes them, and the bytes those
    /// first reads see in regions of their own (`plan::carry`).
    pub carried_in: usize,
    pub carried_in_bytes: u64,
    /// Reads of an allocated result that read the result itself (`Plan::bound_reads` of
    /// placed operands).
    pub bound_reads: usize,
    /// Integer and boolean reads (never placed) bound to the tier-3 result that computed
    /// them (`plan::integer_reads`).
    pub integer_reads_bound: usize,
    /// Units of several replayed invocations whose places chain ([`chained_units`]), how
    /// many units have several, and the chained units' traced time.
    pub chained_units: usize,
    pub units_of_several_invocations: usize,
    pub chained_traced_us: f64,
}

/// The replayed units of several invocations whose places chain: a result one invocation
/// writes in the image overlaps an operand another invocation reads (the allocator hands
/// blocks back and forth). Alone, kc unrolls a unit's invocations in model order over their
/// places, so an invocation there can read what an earlier one of the launch wrote, not the
/// model's values; a kernel whose time depends on its data then runs another time than in
/// the model (Swin3D-T's shifted-window softmax, whose masked logits take it 2.06 times as
/// long as its own output does, session 42). A result's bytes are its
/// place's, at most its largest operand's (the plan keeps no result's size); in-place
/// writes are not counted. Returns the unit ids, and how many units have several
/// invocations.
pub fn chained_units(plan: &Plan) -> (Vec<u32>, usize) {
    let Some(df) = plan.dataflow.as_ref() else {
        return (Vec::new(), 0);
    };
    let mut steps_of: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, s) in plan.steps.iter().enumerate() {
        if plan.units[s.unit as usize].tier.is_replayable() && i < df.steps.len() {
            steps_of.entry(s.unit).or_default().push(i);
        }
    }
    let several: Vec<(u32, Vec<usize>)> =
        steps_of.into_iter().filter(|(_, v)| v.len() > 1).collect();
    let chained = several
        .iter()
        .filter(|(unit, steps)| {
            let u = &plan.units[*unit as usize];
            // Each step's operands as (offset, bytes), read once.
            let reads: Vec<Vec<(u64, u64)>> = steps
                .iter()
                .map(|&i| {
                    df.steps[i]
                        .operands
                        .iter()
                        .zip(&u.slots)
                        .filter_map(|(o, slot)| Some(((*o)?, plan.buffers[*slot as usize].bytes)))
                        .collect()
                })
                .collect();
            let largest = reads.iter().flatten().map(|r| r.1).max().unwrap_or(0);
            steps.iter().enumerate().any(|(a, &i)| {
                df.steps[i].outputs.iter().flatten().any(|&(w, avail)| {
                    let end = w + avail.min(largest);
                    reads
                        .iter()
                        .enumerate()
                        .filter(|&(b, _)| b != a)
                        .any(|(_, r)| r.iter().any(|&(r, bytes)| w < r + bytes && r < end))
                })
            })
        })
        .map(|(unit, _)| *unit)
        .collect();
    (chained, several.len())
}

pub fn dataflow_summary(plan: &Plan) -> Option<DataflowSummary> {
    use super::types::RegionKind;
    let df = plan.dataflow.as_ref()?;
    let of = |k: RegionKind| df.regions.iter().filter(move |r| r.kind == k);
    let (mut placed, mut private, mut results) = (0u64, 0u64, 0u64);
    for (p, s) in df.steps.iter().zip(&plan.steps) {
        let u = &plan.units[s.unit as usize];
        if !u.tier.is_replayable() {
            continue;
        }
        if p.operands.is_empty() {
            private += u.slots.len() as u64;
        }
        for o in &p.operands {
            if o.is_some() {
                placed += 1;
            } else {
                private += 1;
            }
        }
        results += p.outputs.iter().flatten().count() as u64;
    }
    // A bound read of an operand the plan did not place is an integer or boolean one.
    let integer_reads_bound = plan
        .bound_reads
        .iter()
        .filter(|b| {
            df.steps
                .get(b.step as usize)
                .and_then(|p| p.operands.get(b.operand as usize))
                .is_none_or(|o| o.is_none())
        })
        .count();
    let (chained, several) = chained_units(plan);
    Some(DataflowSummary {
        derivation: df.derivation.clone(),
        parameters: of(RegionKind::Parameter).count(),
        parameter_bytes: df.parameter_bytes,
        activations: of(RegionKind::Activation).count(),
        activation_bytes_unpacked: of(RegionKind::Activation).map(|r| r.bytes).sum(),
        detached_results: of(RegionKind::Detached).count(),
        detached_bytes: of(RegionKind::Detached).map(|r| r.bytes).sum(),
        carried_in: of(RegionKind::CarriedIn).count(),
        carried_in_bytes: of(RegionKind::CarriedIn).map(|r| r.bytes).sum(),
        bound_reads: plan.bound_reads.len() - integer_reads_bound,
        integer_reads_bound,
        peak_activation_bytes: df.peak_activation_bytes,
        arena_bytes: df.arena_bytes,
        operands_placed: placed,
        operands_private: private,
        results_placed: results,
        chained_units: chained.len(),
        units_of_several_invocations: several,
        chained_traced_us: plan
            .steps
            .iter()
            .filter(|s| chained.contains(&s.unit))
            .map(|s| s.traced_ns as f64 / 1000.0)
            .sum(),
    })
}

/// One unit as `kc plan show --json` lists it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PlanUnitRow {
    pub id: u32,
    pub tier: String,
    pub family: String,
    pub label: String,
    pub call: String,
    pub invocations: u64,
    pub traced_us_total: f64,
    pub traced_us_mean: f64,
    /// Why the unit is not replayed (units the plan cannot replay only).
    pub reason: Option<String>,
    pub kernels: Vec<String>,
    pub buffers: usize,
}

/// Every unit of a plan, in id order.
pub fn unit_rows(plan: &Plan) -> Vec<PlanUnitRow> {
    plan.units
        .iter()
        .map(|u| PlanUnitRow {
            id: u.id,
            tier: u.tier.as_str().to_string(),
            family: u.family.clone(),
            label: u.label.clone(),
            call: call_str(&u.call),
            invocations: u.invocations,
            traced_us_total: u.traced_ns_total as f64 / 1000.0,
            traced_us_mean: u.traced_ns_mean() / 1000.0,
            reason: match &u.call {
                UnitCall::NotReplayable { reason } => Some(reason.clone()),
                _ => None,
            },
            kernels: u.kernels.clone(),
            buffers: u.slots.len(),
        })
        .collect()
}

pub fn call_str(c: &UnitCall) -> String {
    match c {
        UnitCall::Memcpy { kind, bytes, .. } => format!("memcpy {kind:?} {bytes} B"),
        UnitCall::Memset { bytes, .. } => format!("memset {bytes} B"),
        UnitCall::Gemm(g) => format!(
            "gemm {:?}{:?} m={} n={} k={} batch={} {:?}",
            g.transa, g.transb, g.m, g.n, g.k, g.batch, g.a_type
        ),
        UnitCall::AtenOp { op, args } => format!("{op} ({} args)", args.len()),
        UnitCall::Collective { collective, .. } => format!("collective {collective}"),
        UnitCall::NotReplayable { reason } => format!("not replayable: {reason}"),
        UnitCall::Kernel {
            binary,
            grid,
            block,
            args,
        } => format!(
            "kernel binary {binary} grid={grid:?} block={block:?} ({} args)",
            args.len()
        ),
    }
}

pub fn summarize(plan: &Plan, encoded_bytes: u64) -> PlanSummary {
    let mut tiers = BTreeMap::new();
    for t in [
        PlanTier::Runtime,
        PlanTier::Gemm,
        PlanTier::AtenOp,
        PlanTier::Compiled,
        PlanTier::Collective,
        PlanTier::NotReplayable,
    ] {
        let us: Vec<_> = plan.units.iter().filter(|u| u.tier == t).collect();
        tiers.insert(
            t.as_str().to_string(),
            TierCount {
                unique_units: us.len() as u64,
                invocations: us.iter().map(|u| u.invocations).sum(),
                traced_us: us.iter().map(|u| u.traced_ns_total).sum::<i64>() as f64 / 1000.0,
            },
        );
    }
    let mut largest: Vec<_> = plan.units.iter().collect();
    largest.sort_by(|a, b| {
        b.traced_ns_total
            .cmp(&a.traced_ns_total)
            .then(a.id.cmp(&b.id))
    });
    let json_bytes = serde_json::to_vec(plan)
        .map(|v| v.len() as u64)
        .unwrap_or(0);
    PlanSummary {
        sources: plan.header.sources.iter().map(|s| s.file.clone()).collect(),
        devices: {
            let mut d: Vec<String> = plan.header.devices.iter().map(|d| d.name.clone()).collect();
            d.sort();
            d.dedup();
            d
        },
        tiers,
        units: plan.units.len(),
        steps: plan.steps.len(),
        streams: plan.streams.len(),
        cross_stream_waits: plan.steps.iter().map(|s| s.waits_on.len()).sum(),
        buffers: plan.buffers.len(),
        device_bytes: plan.memory.device_bytes,
        pinned_host_bytes: plan.memory.pinned_host_bytes,
        cold_extra_peak_bytes: plan.memory.cold_extra_peak_bytes,
        traced_gpu_us: plan.header.traced_gpu_ns as f64 / 1000.0,
        replayable_traced_us: plan.header.replayable_traced_ns as f64 / 1000.0,
        traced_critical_path_us: crate::plan::schedule::critical_path_ns(
            plan,
            |_: &crate::plan::types::Step| true,
        ) as f64
            / 1000.0,
        encoded_bytes,
        json_bytes,
        bytes_per_unit: if plan.units.is_empty() {
            0.0
        } else {
            encoded_bytes as f64 / plan.units.len() as f64
        },
        largest_units: largest
            .into_iter()
            .take(10)
            .map(|u| LargeUnit {
                id: u.id,
                tier: u.tier.as_str().to_string(),
                label: u.label.clone(),
                call: call_str(&u.call),
                invocations: u.invocations,
                traced_us_total: u.traced_ns_total as f64 / 1000.0,
                traced_us_mean: u.traced_ns_mean() / 1000.0,
            })
            .collect(),
        iterations: plan.iterations.count,
        iterations_found_by: plan.iterations.found_by.clone(),
        collectives: super::collectives::match_ranks(plan).ok().flatten(),
        collectives_mismatch: super::collectives::match_ranks(plan).err(),
        dataflow: dataflow_summary(plan),
        switches: switch_summary(plan),
        recorded_values: values_summary(plan),
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

pub fn render_text(s: &PlanSummary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "plan of {} ({})",
        s.sources.join(", "),
        s.devices.join(", ")
    );
    let _ = writeln!(
        o,
        "\n  {:<13} {:>8} {:>11} {:>12}",
        "tier", "units", "invocations", "traced us"
    );
    for (t, c) in &s.tiers {
        let _ = writeln!(
            o,
            "  {:<13} {:>8} {:>11} {:>12.1}",
            t, c.unique_units, c.invocations, c.traced_us
        );
    }
    let _ = writeln!(
        o,
        "\n  steps {}  streams {}  cross-stream waits {}",
        s.steps, s.streams, s.cross_stream_waits
    );
    if let Some(c) = &s.collectives {
        let _ = writeln!(
            o,
            "  collectives: {} per rank on {}, the same sequence on every rank",
            c.per_rank,
            crate::words::count(c.ranks.len() as u64, "rank")
        );
    }
    if let Some(why) = &s.collectives_mismatch {
        let _ = writeln!(o, "  collectives DO NOT MATCH across ranks: {why}");
    }
    if let Some(w) = &s.switches {
        let _ = writeln!(
            o,
            "  switches between units: {} per replay ({} to a first run); distinct units since the unit last ran: median {}, p90 {} (of {} units)",
            w.switches, w.to_first_run, w.reuse_distance_p50, w.reuse_distance_p90, w.units
        );
    }
    let _ = if s.iterations > 0 {
        writeln!(
            o,
            "  iterations {} (from {}): one replay runs them all",
            s.iterations, s.iterations_found_by
        )
    } else {
        writeln!(
            o,
            "  iterations: {}; one replay runs the whole trace",
            s.iterations_found_by
        )
    };
    let _ = writeln!(
        o,
        "  memory: device {}  pinned host {}  cold-cache extra peak {}  ({} buffers)",
        mib(s.device_bytes),
        mib(s.pinned_host_bytes),
        mib(s.cold_extra_peak_bytes),
        s.buffers
    );
    match &s.dataflow {
        Some(d) => {
            let _ = writeln!(
                o,
                "  dataflow ({}): {} parameters {}, {} activations {} packed into {} \
                 (peak live {}); {} allocated results read from their own {} \
                 ({} reads of them read the result itself); {} integer or boolean reads \
                 bound to the result that computed them; {} storages read before the replay writes them, those reads from their own {}; \
                 arena {}; operands placed {} of {}, tier-3 results placed {}; \
                 {} of {} units of several invocations chain (a result of one overlaps an operand of another: \
                 alone, later invocations read what earlier ones wrote), {:.1} % of the traced time",
                d.derivation,
                d.parameters,
                mib(d.parameter_bytes),
                d.activations,
                mib(d.activation_bytes_unpacked),
                mib(d
                    .arena_bytes
                    .saturating_sub(d.parameter_bytes + d.detached_bytes + d.carried_in_bytes)),
                mib(d.peak_activation_bytes),
                d.detached_results,
                mib(d.detached_bytes),
                d.bound_reads,
                d.integer_reads_bound,
                d.carried_in,
                mib(d.carried_in_bytes),
                mib(d.arena_bytes),
                d.operands_placed,
                d.operands_placed + d.operands_private,
                d.results_placed,
                d.chained_units,
                d.units_of_several_invocations,
                100.0 * d.chained_traced_us / s.traced_gpu_us.max(f64::MIN_POSITIVE)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  dataflow: none (every unit replays on its own buffers); re-plan with this kc"
            );
        }
    }
    match &s.recorded_values {
        Some(v) => {
            let _ = writeln!(
                o,
                "  recorded values ({}): {} tier-3 tensors of {} steps take the values the model's run held ({} units alone); {} distinct, {}",
                v.source,
                v.tensors,
                v.steps,
                v.units,
                v.blobs,
                mib(v.bytes)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  recorded values: none; integer tensors take drawn values (indices within the dimension they index, integer data moved into an index below its table, masks random, other integers 0-7)"
            );
        }
    }
    let _ = writeln!(
        o,
        "  traced GPU time {:.1} us, of which replayable {:.1} us; traced critical path {:.1} us",
        s.traced_gpu_us, s.replayable_traced_us, s.traced_critical_path_us
    );
    let _ = writeln!(
        o,
        "  encoded {} B ({:.0} B/unit); the same content as JSON is {} B",
        s.encoded_bytes, s.bytes_per_unit, s.json_bytes
    );
    let _ = writeln!(o, "\n  largest units by traced time");
    for u in &s.largest_units {
        let _ = writeln!(
            o,
            "  unit{:<5} tier {:<3} x{:<6} {:>10.1} us  {:<22} {}",
            u.id, u.tier, u.invocations, u.traced_us_total, u.label, u.call
        );
    }
    o
}

/// One entry of the round of every unit ([`super::schedule::round_order`]): a unit's counted
/// run, or a lead-in (the model's step before it, run first and not counted).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RoundRow {
    pub entry: usize,
    pub step: u32,
    pub unit: u32,
    pub label: String,
    pub lead_in: bool,
}

/// The round `kc exec --isolated` runs on `rank`, with one lead-in step, each unit at its
/// first run, over the units that replay (not the unreplayable, not collectives). The
/// isolated pass leaves out, besides, a unit that failed alone, so its round can be
/// shorter; the lead-ins' steps are what `kc exec --round-lead-ins-only` takes.
pub fn round_rows(plan: &Plan, rank: u32) -> Vec<RoundRow> {
    let runs = |s: &super::types::Step| plan.units[s.unit as usize].tier.is_replayable();
    super::schedule::round_order(plan, rank, runs, 1, super::schedule::RoundAt::First)
        .iter()
        .enumerate()
        .map(|(entry, e)| RoundRow {
            entry,
            step: e.step,
            unit: e.unit,
            label: plan.units[e.unit as usize].label.clone(),
            lead_in: !e.counted,
        })
        .collect()
}

/// The round as text: a heading with its counts, then an entry a line.
pub fn render_round(rows: &[RoundRow], rank: u32) -> String {
    let lead_ins = rows.iter().filter(|r| r.lead_in).count();
    let mut out = format!(
        "round of every unit, rank {rank}: {} units at their first run, {lead_ins} lead-ins\n",
        rows.len() - lead_ins
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:4}  {:7}  step {:5}  unit {:4}  {}",
            r.entry,
            if r.lead_in { "lead-in" } else { "" },
            r.step,
            r.unit,
            r.label
        );
    }
    out
}
