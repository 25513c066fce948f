//! The measured terms of kc's prediction from parts, after the units alone: the round of
//! every unit (each executed unit once per cycle, in the order the replay first runs them,
//! each after the model's step before it where the round would not have it there,
//! cycles repeated in one graph), whose time (and, with energy, whose energy) beyond the
//! units alone is what a switch from one unit to another costs when a program cycles
//! through all of the model's distinct kernels as the model does; what one graph launch costs beyond its node; and, on request,
//! rounds of fewer units (consecutive groups of the same order, sizes 2, 4, 8, ...), whose
//! switches reach back fewer units, as most of a CNN's do, and the most frequent transitions
//! as pairs (two units alternated alone, a diagnostic: their code and launch data stay
//! hot, so a pair shows the switch nearly free, unlike the model).
//! None of them times the model's program as a whole.
//!
//! Invariant: every extra time is computed against the units' isolated times of the same
//! pass and cache state; collectives are left out (they need every rank), and a
//! measurement that fails is named, never counted as measured.

use super::{units_bar, Energy};
use crate::backends::{At, Gpu};
use crate::{ExecError, ExecOptions};
use kc_core::plan::schedule::{self, Transition};
use kc_core::plan::types::{Plan, PlanDataflow, PlanUnit, Step, UnitCall};
use kc_core::results::fidelity::PositionKernels;
use kc_core::results::stats::Stats;
use kc_core::results::{
    RoundBySize, RoundUnitKernels, RoundValues, TransitionResult, TransitionsSummary, UnitResult,
    ROUND_VALUES_EXCESS_US, ROUND_VALUES_NONFINITE_PCT,
};

/// How many of the round's (unit, step) places its census samples at most.
const ROUND_CENSUS_STEPS: usize = 32;

/// GPU time one launch of a pair's graph covers, and the least timed in all.
const PAIR_GRAPH_NS: f64 = 500_000.0;
const PAIR_TIMED_US: f64 = 20_000.0;

/// The round's entries ([`schedule::round_order`]), less the lead-ins that
/// `opts.round_lead_ins_only` leaves out (a diagnostic).
fn round_entries(
    plan: &Plan,
    rank: u32,
    runs: &impl Fn(&Step) -> bool,
    opts: &ExecOptions,
    at: schedule::RoundAt,
) -> Vec<schedule::RoundEntry> {
    let mut entries = schedule::round_order(plan, rank, runs, opts.round_lead_in, at);
    if let Some(only) = &opts.round_lead_ins_only {
        schedule::keep_lead_ins(&mut entries, only);
    }
    entries
}

/// Measures the round of every unit, the graph launch overhead and up to
/// `opts.transitions` pairs (the most frequent first), after the units were measured
/// (`rows`).
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    plan: &Plan,
    rank: u32,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    image: Option<&PlanDataflow>,
    model_pass: Option<&[u32]>,
    rows: &[UnitResult],
    notes: &mut Vec<String>,
) -> Result<TransitionsSummary, ExecError> {
    // With the pass that restores them ([`super::isolated::restore_model_values`]), the
    // pairs and the round start from the model's values, as the units did.
    let restore = image.zip(model_pass);
    if let Some((df, pass)) = restore {
        super::isolated::restore_model_values(plan, df, gpu, pass)?;
    }
    // The units that ran alone, by id: looked up at every step of the plan.
    let ok: std::collections::HashMap<u32, &UnitResult> = rows
        .iter()
        .filter(|r| r.status == "ok" && r.time_us.is_some())
        .map(|r| (r.id, r))
        .collect();
    // Each unit's time alone at the clock the model runs it at: a unit that drew past the
    // power limit alone is taken at its duty cycle, as its energy is, so that what the
    // cap cost it alone is not read as the round's saving (Qwen2's training step graph,
    // session 32: three GEMMs 7-19 % slower alone at the cap made -0.85 us per switch).
    let at_model_clock: std::collections::HashMap<u32, Stats> = ok
        .iter()
        .filter_map(|(&id, r)| Some((id, r.time_at_model_clock()?)))
        .collect();
    let alone = |unit: u32| -> Option<&Stats> { at_model_clock.get(&unit) };
    let is_collective =
        |unit: u32| matches!(plan.units[unit as usize].call, UnitCall::Collective { .. });
    let runs = |s: &Step| alone(s.unit).is_some() && !is_collective(s.unit);
    let all: Vec<Transition> = schedule::transitions(plan, rank, runs);
    let mut summary = TransitionsSummary {
        total: all.iter().map(|t| t.occurrences.len() as u64).sum(),
        pairs: all.len(),
        alone_at_model_clock: true,
        ..Default::default()
    };
    let take = all.len().min(opts.transitions);
    let bar = opts.progress.then(|| units_bar("transitions", take));
    for t in all.iter().take(take) {
        if let Some(b) = &bar {
            b.inc(1);
        }
        let (Some(a), Some(b)) = (alone(t.from_unit), alone(t.to_unit)) else {
            continue;
        };
        match measure_pair(plan, t, (a, b), opts, gpu, image) {
            Ok(r) => {
                summary.covered += r.count;
                summary.measured.push(r);
            }
            Err(e) => {
                let _ = gpu.synchronize();
                if summary.failed.len() < 8 {
                    summary
                        .failed
                        .push(format!("units {} -> {}: {e}", t.from_unit, t.to_unit));
                }
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    summary.pairs_measured = summary.measured.len();
    // The round: every unit once, in the order the replay runs them, each after the
    // model's step before it (a lead-in, not counted) where the round's previous entry is
    // not that step; one round per run `round_runs` spreads over each unit's runs, the
    // first of them measured whole (its energy, values, smaller rounds), the others for
    // their switches and kernels.
    let spread = schedule::RoundAt::spread(opts.round_runs);
    let entries = round_entries(plan, rank, &runs, opts, spread[0]);
    if opts.round_lead_ins_only.is_some() {
        let kept: Vec<u32> = entries
            .iter()
            .filter(|e| !e.counted)
            .map(|e| e.step)
            .collect();
        notes.push(format!(
            "the round kept {} lead-ins, at model steps {kept:?} (--round-lead-ins-only, a diagnostic; the first round's, where --round-runs asks for more)",
            kept.len()
        ));
    }
    let order: Vec<(u32, u32)> = entries.iter().map(|e| (e.unit, e.step)).collect();
    let first_runs: Vec<(u32, u32)> = entries
        .iter()
        .filter(|e| e.counted)
        .map(|e| (e.unit, e.step))
        .collect();
    // Each unit's kernels per invocation alone (CUPTI), to tell the round's kernels apart
    // by unit; empty where a unit's count is unknown or not whole.
    let per_invocation_of = |order: &[(u32, u32)]| -> Vec<usize> {
        order
            .iter()
            .map(|&(u, _)| {
                ok.get(&u)?
                    .launches_verified
                    .as_ref()?
                    .whole_per_invocation()
            })
            .collect::<Option<_>>()
            .unwrap_or_default()
    };
    // The gaps between kernels alone: each unit's time (at the model's clock) beyond its
    // kernels (CUPTI, `--verify`), which its isolated time already holds; `kernels` reads
    // them from its record alone, by their durations or by their busy time.
    let gaps_alone_of = |order: &[(u32, u32)],
                         kernels: fn(&kc_core::results::fidelity::UnitLaunches) -> Option<f64>|
     -> Option<f64> {
        order
            .iter()
            .map(|&(u, _)| Some(alone(u)?.mean - kernels(ok.get(&u)?.launches_verified.as_ref()?)?))
            .sum()
    };
    let durations = |l: &kc_core::results::fidelity::UnitLaunches| Some(l.kernels_us);
    let busy = |l: &kc_core::results::fidelity::UnitLaunches| l.busy_us;
    // Each counted unit's kernels; a lead-in's are the context, not its own.
    let unit_kernels_of =
        |entries: &[schedule::RoundEntry], v: &[PositionKernels]| -> Vec<RoundUnitKernels> {
            entries
                .iter()
                .zip(v)
                .filter(|(e, _)| e.counted)
                .filter_map(|(e, p)| {
                    let alone = ok.get(&e.unit)?.launches_verified.as_ref()?;
                    Some(RoundUnitKernels::against(e.unit, e.step, *p, alone))
                })
                .collect()
        };
    if first_runs.len() > 1 {
        let per_invocation = per_invocation_of(&order);
        // The round's (unit, step) places, for its censuses.
        let at: Vec<(&PlanUnit, u32)> = order
            .iter()
            .map(|&(u, st)| (&plan.units[u as usize], st))
            .collect();
        let timed = round_from_model_values(
            plan,
            &order,
            &at,
            &alone,
            &per_invocation,
            opts,
            gpu,
            image,
            restore,
            &mut summary,
            notes,
        );
        match timed {
            Ok(round) => {
                let switches = round.switches;
                // Each unit's kernels in the round, and where the round ran its places to
                // non-finite values, those units recorded alone over them and over the
                // model's (before the energy windows restore the image).
                let mut unit_kernels = match &round.unit_kernels_us {
                    Some(v) => unit_kernels_of(&entries, v),
                    None => Vec::new(),
                };
                // Where the round ran its values away, a unit whose kernels the cycles
                // after each launch's first (from the model's values) ran another time
                // is taken at the first cycles' ([`RoundUnitKernels::set_by_first_cycle`]):
                // that also covers the operands the round serves from its own pool,
                // which the record over the image below cannot hold.
                // `--round-as-recorded` keeps the round's kernels as recorded: no first
                // cycles are taken then.
                let first_cycles = round
                    .unit_first_cycle_kernels_us
                    .as_ref()
                    .filter(|_| opts.round_values_check);
                if let Some((first, launches)) = first_cycles {
                    let ran_away = summary
                        .round_timed_values
                        .as_ref()
                        .is_some_and(|v| v.ran_away());
                    let counted = entries.iter().zip(first).filter(|(e, _)| e.counted);
                    for (e, p) in counted {
                        if let Some(k) = unit_kernels.iter_mut().find(|k| k.unit == e.unit) {
                            k.set_by_first_cycle(*p, *launches, ran_away);
                        }
                    }
                }
                if let (Some(df), true, false) = (
                    image,
                    opts.round_values_check && gpu.has_arena_snapshot(),
                    unit_kernels.is_empty(),
                ) {
                    match check_round_values(
                        plan,
                        df,
                        &entries,
                        &mut unit_kernels,
                        opts,
                        gpu,
                        notes,
                    ) {
                        Ok(unchecked) => summary.round_values_unchecked = unchecked,
                        Err(e) if e.breaks_context() => return Err(e),
                        Err(e) => {
                            let _ = gpu.synchronize();
                            let _ = gpu.restore_arena_snapshot();
                            notes.push(format!(
                                "the round's units over its values and the model's could not be recorded ({e}): their kernels in the round stand as recorded"
                            ));
                        }
                    }
                }
                // The round's own energy: what the units cycling draw, against the units
                // alone (each unit's energy per invocation, from its windows).
                let alone_j: Option<(f64, f64)> = order
                    .iter()
                    .map(|&(u, _)| {
                        let s = &ok.get(&u)?.energy.as_ref()?.per_item_j;
                        Some((s.mean, s.sem()))
                    })
                    .try_fold((0.0, 0.0), |(e, v), x: Option<(f64, f64)>| {
                        x.map(|(m, u)| (e + m, v + u * u))
                    });
                // In a job every rank would have to reach the same windows (their launch
                // counts are agreed); a rank whose units lack energy would not: the
                // round's energy is measured outside jobs only, and on request (only a
                // diagnostic pricing takes it).
                let measure_energy = opts.round_energy && en.job.is_none();
                if let (Some((sum_j, var_j)), true) = (alone_j, measure_energy) {
                    let launch_us = round.cycle_us * f64::from(round.cycles);
                    let target = opts.energy_target_rel_sem;
                    // The round's energy windows start from the model's values, as the
                    // units' do, and a census of the round's places before and after them
                    // says whether cycling the units out of the model's dataflow ran its
                    // values away.
                    let before = restored_census(plan, gpu, restore, &at)?;
                    // A restoring round's launch also holds the copy, whose own energy
                    // (its windows, alone) is taken off; without it the round's energy is
                    // not known.
                    let copy_us = round.copy.as_ref().map_or(0.0, |c| c.1.mean);
                    let launch_us = launch_us + copy_us;
                    let cycles = f64::from(round.cycles);
                    let copy_j: Option<(f64, f64)> = match &round.copy {
                        None => Some((0.0, 0.0)),
                        Some((g, t)) => en
                            .series(gpu, g, "round's copy", t.mean, target, opts, notes)?
                            .map(|w| {
                                let c = en.summarise(w, "round's copy", t.mean, cycles, notes);
                                (c.per_item_j.mean, c.per_item_j.sem())
                            }),
                    };
                    // Set only where the round kept is the restoring one (it has the copy).
                    if let Some(r) = summary.round_restoring.as_mut() {
                        r.copy_energy_j = copy_j.map(|c| c.0 * cycles);
                    }
                    let w = match copy_j {
                        Some(_) => {
                            en.series(gpu, &round.graph, "round", launch_us, target, opts, notes)?
                        }
                        None => None,
                    };
                    if let (Some(w), Some((cj, cj_sem))) = (w, copy_j) {
                        let s = en.summarise(w, "round", launch_us, cycles, notes);
                        let k = switches as f64;
                        summary.round_extra_energy_j = Some((s.per_item_j.mean - cj - sum_j) / k);
                        summary.round_extra_energy_sem_j =
                            Some(s.per_item_j.sem().hypot(cj_sem).hypot(var_j.sqrt()) / k);
                        summary.round_power_w = Some(s.avg_power_w.mean);
                    }
                    if let (Some(b), Some(df)) = (before, image) {
                        let after =
                            super::isolated::census(plan, gpu, df, &at, ROUND_CENSUS_STEPS)?;
                        summary.round_values = after.map(|a| super::isolated::unit_values(&b, &a));
                    }
                }
                summary.round_unit_kernels = unit_kernels;
                summary.round_units = first_runs.len();
                summary.round_lead_ins = entries.len() - first_runs.len();
                summary.round_lead_in_steps = opts.round_lead_in;
                summary.round_switches = switches;
                summary.round_cycles = round.cycles;
                summary.round_extra_us = Some(round.extra_us);
                summary.round_extra_sem_us = Some(round.extra_sem_us);
                let gaps_alone = gaps_alone_of(&order, durations);
                summary.round_cycle_us = Some(round.cycle_us);
                if let Some((c, u)) = round.cycle_by_difference {
                    summary.round_cycle_by_difference_us = Some(c);
                    summary.round_cycle_by_difference_sem_us = Some(u);
                }
                if round.kernels_us.is_some() {
                    summary.round_recorded_launches = super::RECORDED_LAUNCHES as u32;
                }
                summary.round_first_recorded_kernels_us = round.first_recorded_kernels_us;
                if let Some((g, span)) = round.recorded_gaps_span_us {
                    summary.round_recorded_gaps_us = Some(g);
                    summary.round_recorded_span_us = Some(span);
                }
                if let Some(gap) = round.gap_extra_us(gaps_alone) {
                    summary.round_kernels_us = round.kernels_us;
                    summary.round_gap_extra_us = Some(gap);
                }
                summary.round_gap_extra_busy_us =
                    round.gap_extra_busy_us(gaps_alone_of(&order, busy));
                summary.round_entry_units = order.iter().map(|&(u, _)| u).collect();
            }
            Err(e) => {
                let _ = gpu.synchronize();
                summary.failed.push(format!("the round of every unit: {e}"));
            }
        }
        // The other rounds, each at other runs of every unit: their switches and each
        // unit's kernels go into the mean with the first's. A round that fails is named
        // and left out of it.
        if let (Some(first_extra), true) = (summary.round_extra_us, spread.len() > 1) {
            let mut extra = vec![(first_extra, summary.round_extra_sem_us.unwrap_or(0.0))];
            let mut gaps: Vec<f64> = summary.round_gap_extra_us.into_iter().collect();
            let mut busy_gaps: Vec<f64> = summary.round_gap_extra_busy_us.into_iter().collect();
            let mut kernels = vec![std::mem::take(&mut summary.round_unit_kernels)];
            for &at in &spread[1..] {
                let entries = round_entries(plan, rank, &runs, opts, at);
                let order: Vec<(u32, u32)> = entries.iter().map(|e| (e.unit, e.step)).collect();
                let places: Vec<(&PlanUnit, u32)> = order
                    .iter()
                    .map(|&(u, st)| (&plan.units[u as usize], st))
                    .collect();
                let per_invocation = per_invocation_of(&order);
                // What a round records of itself (its copy, its values) is the first's.
                let mut own = TransitionsSummary::default();
                match round_from_model_values(
                    plan,
                    &order,
                    &places,
                    &alone,
                    &per_invocation,
                    opts,
                    gpu,
                    image,
                    restore,
                    &mut own,
                    notes,
                ) {
                    Ok(round) => {
                        extra.push((round.extra_us, round.extra_sem_us));
                        if let (Some(gap), false) = (
                            round.gap_extra_us(gaps_alone_of(&order, durations)),
                            gaps.is_empty(),
                        ) {
                            gaps.push(gap);
                        }
                        if let (Some(gap), false) = (
                            round.gap_extra_busy_us(gaps_alone_of(&order, busy)),
                            busy_gaps.is_empty(),
                        ) {
                            busy_gaps.push(gap);
                        }
                        if let Some(v) = &round.unit_kernels_us {
                            kernels.push(unit_kernels_of(&entries, v));
                        }
                    }
                    Err(e) if e.breaks_context() => return Err(e),
                    Err(e) => {
                        let _ = gpu.synchronize();
                        summary.failed.push(format!("the round at {at:?}: {e}"));
                    }
                }
            }
            let n = extra.len() as f64;
            summary.round_extra_us = Some(extra.iter().map(|e| e.0).sum::<f64>() / n);
            summary.round_extra_sem_us =
                Some(extra.iter().map(|e| e.1 * e.1).sum::<f64>().sqrt() / n);
            if !gaps.is_empty() {
                summary.round_gap_extra_us = Some(gaps.iter().sum::<f64>() / gaps.len() as f64);
            }
            if !busy_gaps.is_empty() {
                summary.round_gap_extra_busy_us =
                    Some(busy_gaps.iter().sum::<f64>() / busy_gaps.len() as f64);
            }
            summary.round_unit_kernels = kc_core::results::round_unit_kernels_mean(&kernels);
            summary.round_runs = extra.len() as u32;
            summary.round_runs_of = spread.len() as u32;
        }
        // Smaller rounds, by how far back their switches reach.
        let mut k = 2;
        while opts.round_sizes && k < first_runs.len() && summary.round_extra_us.is_some() {
            match measure_rounds_of_size(plan, &first_runs, k, &alone, opts, gpu, image) {
                Ok(r) => summary.rounds_by_size.push(r),
                Err(e) => {
                    let _ = gpu.synchronize();
                    summary.failed.push(format!("rounds of {k} units: {e}"));
                    break;
                }
            }
            k *= 2;
        }
    }
    // The launch overhead: the shortest unit that runs, one invocation per graph.
    let shortest = rows
        .iter()
        .filter(|r| r.status == "ok" && !is_collective(r.id))
        .filter_map(|r| Some((r.id, r.time_us.as_ref()?)))
        .min_by(|x, y| x.1.mean.total_cmp(&y.1.mean));
    if let Some((unit, t)) = shortest {
        let u = &plan.units[unit as usize];
        let first_step = plan
            .steps
            .iter()
            .position(|s| s.unit == unit && plan.streams[s.stream as usize].rank == rank);
        let at = match (image, first_step) {
            (Some(df), Some(step)) => At::Step {
                step: step as u32,
                places: &df.steps[step],
            },
            _ => At::Slots(0),
        };
        let graph = gpu.capture(|gpu| gpu.enqueue(u, 0, at))?;
        for _ in 0..5 {
            gpu.launch(&graph)?;
        }
        gpu.synchronize()?;
        let one = Stats::of(&gpu.time_launches(&graph, 200)?);
        summary.launch_extra_us = Some(one.mean - t.mean);
        summary.launch_extra_sem_us = Some(one.sem().hypot(t.sem()));
    }
    Ok(summary)
}

fn measure_pair(
    plan: &Plan,
    t: &Transition,
    (a, b): (&Stats, &Stats),
    opts: &ExecOptions,
    gpu: &mut Gpu,
    image: Option<&PlanDataflow>,
) -> Result<TransitionResult, ExecError> {
    let (ua, ub) = (
        &plan.units[t.from_unit as usize],
        &plan.units[t.to_unit as usize],
    );
    let pair_us = (a.mean + b.mean).max(0.001);
    let cycles = ((PAIR_GRAPH_NS / 1000.0 / pair_us).ceil() as u32)
        .clamp(1, opts.max_unroll.max(1))
        .max((t.occurrences.len() as u32).min(opts.max_unroll.max(1)));
    let at = |step: u32| match image {
        Some(df) => At::Step {
            step,
            places: &df.steps[step as usize],
        },
        None => At::Slots(0),
    };
    let graph = gpu.capture(|gpu| {
        for k in 0..cycles as usize {
            let (sa, sb) = t.occurrences[k % t.occurrences.len()];
            gpu.enqueue(ua, 0, at(sa))?;
            gpu.enqueue(ub, 0, at(sb))?;
        }
        Ok(())
    })?;
    gpu.warm(&graph)?;
    let launch_us = pair_us * f64::from(cycles);
    let launches = ((PAIR_TIMED_US / launch_us).ceil() as usize).clamp(10, 200);
    let per_launch = Stats::of(&gpu.time_launches(&graph, launches)?);
    let cycle = per_launch.scaled(f64::from(cycles));
    Ok(TransitionResult {
        from_unit: t.from_unit,
        to_unit: t.to_unit,
        count: t.occurrences.len() as u64,
        cycles,
        launches,
        extra_us: (cycle.mean - a.mean - b.mean) / 2.0,
        extra_sem_us: cycle.sem().hypot(a.sem()).hypot(b.sem()) / 2.0,
        cycle_us: cycle,
    })
}

/// Groups measured per round size, at most: spread over the order, they sample its kinds
/// of units while the sizes stay cheap (each group ~20 ms of GPU time).
const GROUPS_PER_SIZE: usize = 8;

/// Rounds of `k` units: consecutive groups of the order (at most [`GROUPS_PER_SIZE`],
/// evenly spaced), each cycled alone; the extra per switch over all of them.
fn measure_rounds_of_size<'s>(
    plan: &Plan,
    order: &[(u32, u32)],
    k: usize,
    alone: &dyn Fn(u32) -> Option<&'s Stats>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    image: Option<&PlanDataflow>,
) -> Result<RoundBySize, ExecError> {
    let groups: Vec<&[(u32, u32)]> = order.chunks_exact(k).collect();
    let stride = groups.len().div_ceil(GROUPS_PER_SIZE).max(1);
    let (mut extra, mut var, mut measured) = (0.0, 0.0, 0usize);
    for g in groups.iter().step_by(stride) {
        let r = measure_round(plan, g, alone, None, opts, gpu, image, false)?;
        extra += r.extra_us;
        var += r.extra_sem_us.powi(2);
        measured += 1;
    }
    let n = measured.max(1) as f64;
    Ok(RoundBySize {
        units: k,
        groups: measured,
        extra_us: extra / n,
        extra_sem_us: var.sqrt() / n,
    })
}

/// Room left beside the scratch that keeps what the round left at its units' reads, bytes.
const SCRATCH_MARGIN: u64 = 1 << 30;

/// The round's units checked over the values it left, at most this many (the longest
/// kernels in the round first): each costs two records alone.
const ROUND_VALUES_CHECK_MOST: usize = 48;

/// After the round's launches, while the image holds what they left: each counted entry
/// of `entries` whose places hold at least [`ROUND_VALUES_NONFINITE_PCT`] more non-finite
/// values (sampled) than the model's values there, or whose kernels ran slower in the
/// round than alone ([`RoundUnitKernels::slower_in_round`]), is recorded alone, one
/// invocation at the step the round ran it at, over what the round left at its reads and
/// over the model's values (the image's snapshot); its entry in `kernels` is set by the
/// two ([`RoundUnitKernels::set_by_values`]). Cycling a training step's units out of the
/// model's dataflow ran half of Mixtral's places to NaN, and a fused AdamW step's kernels
/// run up to 48 % longer over NaN gradients (session 44), so the round's kernels for such
/// a unit are not the model's; a unit slower in the round over values the census does not
/// tell apart (zeros, magnitudes) is recorded for the same question.
///
/// What the round left at the units' reads is kept in scratch, those reads only, the
/// longest units in the round first while they fit beside the image and its snapshot.
/// The longest whose reads do not fit (Qwen3-MoE's fused AdamW, 15 GB of reads, session
/// 45) is recorded in place instead, first, before anything else writes the image: one
/// launch over the image as the round left it, and after the snapshot is restored one
/// over the model's values, each with no copies ([`RoundValues::in_place`]). Leaves the
/// image holding the model's values. Returns how many such units were not recorded over
/// both.
fn check_round_values(
    plan: &Plan,
    df: &PlanDataflow,
    entries: &[schedule::RoundEntry],
    kernels: &mut [RoundUnitKernels],
    opts: &ExecOptions,
    gpu: &mut Gpu,
    notes: &mut Vec<String>,
) -> Result<usize, ExecError> {
    use crate::device::ImageAt;
    // The non-finite share (percent of those sampled) at a unit's places at a step now;
    // `None` where nothing there was sampled.
    let nonfinite_pct = |gpu: &Gpu, unit: u32, step: u32| -> Result<Option<f64>, ExecError> {
        let at = [(&plan.units[unit as usize], step)];
        Ok(super::isolated::census(plan, gpu, df, &at, 1)?
            .map(|c| 100.0 * c.nonfinite as f64 / c.all as f64))
    };
    let round_us = |kernels: &[RoundUnitKernels], unit: u32| {
        kernels
            .iter()
            .find(|k| k.unit == unit)
            .map_or(0.0, |k| k.round_us)
    };
    // The counted entries whose kernels the round told apart, with the non-finite share
    // the round left at their places and whether their kernels ran slower in the round
    // than alone, the longest in the round first.
    let mut after: Vec<(u32, u32, f64, bool)> = Vec::new();
    for e in entries.iter().filter(|e| e.counted) {
        // A unit already taken at its first cycles' kernels (the model's values) is not
        // recorded again over them.
        let Some(slower) = kernels
            .iter()
            .find(|k| k.unit == e.unit)
            .filter(|k| !k.first_cycle.as_ref().is_some_and(|f| f.set))
            .map(RoundUnitKernels::slower_in_round)
        else {
            continue;
        };
        let p = nonfinite_pct(gpu, e.unit, e.step)?;
        if slower || p.is_some_and(|p| p >= ROUND_VALUES_NONFINITE_PCT) {
            after.push((e.unit, e.step, p.unwrap_or(0.0), slower));
        }
    }
    if after.is_empty() {
        return Ok(0);
    }
    after.sort_by(|a, b| round_us(kernels, b.0).total_cmp(&round_us(kernels, a.0)));
    let spans = kc_core::plan::step_values::step_spans(plan, df);
    let reads_of = |step: u32| {
        kc_core::plan::spans::merge(
            spans.get(step as usize).map_or(&[][..], |s| &s.reads[..]),
            super::isolated::RESTORE_MERGE_GAP,
        )
    };
    let bytes_of = |s: &[(u64, u64)]| s.iter().map(|k| k.1).sum::<u64>();
    // Which of the candidates keep their reads in scratch, and which one runs in place.
    let candidates = &after[..after.len().min(ROUND_VALUES_CHECK_MOST)];
    let all: Vec<(u64, u64)> = candidates
        .iter()
        .flat_map(|&(_, st, ..)| reads_of(st))
        .collect();
    // libtorch's cache is given back only where the scratch would not fit beside it, so
    // that it stays as other phases leave it (as the kinds left out do).
    if gpu.free_memory_bytes()? <= bytes_of(&kc_core::plan::spans::merge(&all, 0)) + SCRATCH_MARGIN
    {
        gpu.release_cached_memory();
    }
    let room = gpu.free_memory_bytes()?.saturating_sub(SCRATCH_MARGIN);
    let (mut kept_spans, mut in_scratch, mut in_place) = (Vec::new(), Vec::new(), None);
    for &(unit, step, ..) in candidates {
        let mut with = kept_spans.clone();
        with.extend(reads_of(step));
        let with = kc_core::plan::spans::merge(&with, 0);
        if bytes_of(&with) < room {
            kept_spans = with;
            in_scratch.push(unit);
        } else if in_place.is_none() {
            in_place = Some((unit, step));
        }
    }
    let kept = kc_core::plan::spans::packed(&kept_spans);
    let bytes = bytes_of(&kept_spans);
    let scratch = match bytes {
        0 => None,
        _ => Some(gpu.alloc_scratch(bytes)?),
    };
    let checked = (|| -> Result<(usize, usize, usize), ExecError> {
        if let Some(scratch) = scratch {
            for &(off, len, at) in &kept {
                gpu.enqueue_image_copy(ImageAt::Image(off), ImageAt::Scratch(scratch + at), len)?;
            }
            gpu.synchronize()?;
        }
        // One launch of a unit's invocation at `step` over the image as it is, from an
        // idle GPU, recorded.
        let record_in_place = |gpu: &mut Gpu,
                               notes: &mut Vec<String>,
                               unit: u32,
                               step: u32|
         -> Result<_, ExecError> {
            let u = &plan.units[unit as usize];
            let places = &df.steps[step as usize];
            let graph = gpu.capture(|gpu| gpu.enqueue(u, 0, At::Step { step, places }))?;
            Ok(match super::record_launches_n(gpu, &graph, 1) {
                Ok(r) => Some(super::isolated::launches_of(u, r, 1, false, None)),
                Err(e) => {
                    notes.push(format!(
                        "unit {} in place over the round's values: {e}",
                        u.id
                    ));
                    None
                }
            })
        };
        let place_over_round = match (in_place, opts.verify) {
            (Some((unit, step)), true) => record_in_place(gpu, notes, unit, step)?,
            _ => None,
        };
        gpu.restore_arena_snapshot()?;
        // Those whose places the round ran away from the model's values, and those
        // slower in the round whatever their values.
        let mut ran: Vec<(u32, u32, f64, f64, bool)> = Vec::new();
        for &(unit, step, round_pct, slower) in &after {
            let model_pct = nonfinite_pct(gpu, unit, step)?.unwrap_or(0.0);
            if slower || round_pct - model_pct >= ROUND_VALUES_NONFINITE_PCT {
                ran.push((unit, step, model_pct, round_pct, slower));
            }
        }
        let found = ran.len();
        let (mut recorded, mut set) = (0, 0);
        for (unit, step, model_pct, round_pct, slower) in ran {
            let u = &plan.units[unit as usize];
            let places = &df.steps[step as usize];
            let reads = reads_of(step);
            let (over_round, over_model) = if in_place == Some((unit, step)) {
                let Some(over_round) = place_over_round.clone() else {
                    continue;
                };
                (Some(over_round), record_in_place(gpu, notes, unit, step)?)
            } else {
                let (Some(scratch), true) = (scratch, in_scratch.contains(&unit)) else {
                    continue;
                };
                // Each read's place in the scratch (every one is within a span kept).
                let Some(at): Option<Vec<u64>> = reads
                    .iter()
                    .map(|&(off, len)| kc_core::plan::spans::packed_at(&kept, off, len))
                    .collect()
                else {
                    continue;
                };
                // One invocation after its reads are copied in from the round's values
                // (the scratch) or the model's (the snapshot), recorded as the units alone
                // are.
                let mut record = |gpu: &mut Gpu, from_round: bool| -> Result<_, ExecError> {
                    let graph = gpu.capture(|gpu| {
                        for (&(off, len), &kept_at) in reads.iter().zip(&at) {
                            let from = match from_round {
                                true => ImageAt::Scratch(scratch + kept_at),
                                false => ImageAt::Snapshot(off),
                            };
                            gpu.enqueue_image_copy(from, ImageAt::Image(off), len)?;
                        }
                        gpu.enqueue(u, 0, At::Step { step, places })
                    })?;
                    gpu.warm(&graph)?;
                    Ok(super::isolated::verify_launches(
                        u, &graph, 1, true, None, opts, gpu, notes,
                    ))
                };
                (record(gpu, true)?, record(gpu, false)?)
            };
            let (Some(over_round), Some(over_model)) = (over_round, over_model) else {
                continue;
            };
            let Some(k) = kernels.iter_mut().find(|k| k.unit == unit) else {
                continue;
            };
            // Records that launched another count of kernels than each other cannot be set
            // against each other.
            if over_round.whole_per_invocation().is_none()
                || over_round.whole_per_invocation() != over_model.whole_per_invocation()
            {
                continue;
            }
            recorded += 1;
            k.set_by_values(RoundValues {
                step,
                nonfinite_model_pct: model_pct,
                nonfinite_round_pct: round_pct,
                round_values_kernels_us: over_round.kernels_us,
                model_values_kernels_us: over_model.kernels_us,
                round_values_busy_us: over_round.busy_us.unwrap_or(over_round.kernels_us),
                model_values_busy_us: over_model.busy_us.unwrap_or(over_model.kernels_us),
                in_place: in_place == Some((unit, step)),
                slower_in_round: slower,
                bound_operands: plan.bound_reads.iter().filter(|b| b.step == step).count(),
                ..Default::default()
            });
            set += usize::from(k.values.as_ref().is_some_and(|v| v.set));
        }
        Ok((found, recorded, set))
    })();
    if let Some(scratch) = scratch {
        gpu.free_scratch(scratch)?;
    }
    gpu.restore_arena_snapshot()?;
    let (found, recorded, set) = checked?;
    if found > 0 {
        let left = candidates.len() - in_scratch.len() - usize::from(in_place.is_some());
        notes.push(format!(
            "{found} units of the round held non-finite values at their places after it where the model's values are finite, or ran their kernels at least {:.0} % and {ROUND_VALUES_EXCESS_US} us longer in it than alone; {recorded} recorded alone over both (at most {ROUND_VALUES_CHECK_MOST}, the longest first; {} with their reads kept in scratch ({:.0} MiB){}{}), {set} of them ran another time over the round's values and are taken alone",
            100.0 * kc_core::results::EACH_INVOCATION_CHANGE,
            in_scratch.len(),
            bytes as f64 / (1u64 << 20) as f64,
            match in_place {
                Some((u, _)) => format!(", unit {u} in place (its reads did not fit beside the image)"),
                None => String::new(),
            },
            match left {
                0 => String::new(),
                n => format!(", {n} whose reads did not fit left as recorded"),
            },
        ));
    }
    Ok(found - recorded)
}

/// Restores the model's values (where a pass restores them) and takes the census of the
/// round's places `at` then; `None` without a restore.
fn restored_census(
    plan: &Plan,
    gpu: &mut Gpu,
    restore: Option<(&PlanDataflow, &[u32])>,
    at: &[(&PlanUnit, u32)],
) -> Result<Option<crate::device::Census>, ExecError> {
    match restore {
        Some((df, pass)) => {
            super::isolated::restore_model_values(plan, df, gpu, pass)?;
            super::isolated::census(plan, gpu, df, at, ROUND_CENSUS_STEPS)
        }
        None => Ok(None),
    }
}

/// What the round measured, per cycle and per switch, and its graph (for energy).
struct Round {
    graph: crate::device::Graph,
    cycles: u32,
    /// Switches between different units per cycle ([`schedule::switches_per_cycle`]): what
    /// `extra_us` is per.
    switches: usize,
    cycle_us: f64,
    extra_us: f64,
    extra_sem_us: f64,
    /// The kernels' durations in one cycle (CUPTI), with `--verify`.
    kernels_us: Option<f64>,
    /// Each position's kernels per cycle (CUPTI), where they could be told apart.
    unit_kernels_us: Option<Vec<PositionKernels>>,
    /// A restoring round's: each position's kernels in the first cycle of each recorded
    /// launch (from the model's values), and how many launches that is.
    unit_first_cycle_kernels_us: Option<(Vec<PositionKernels>, u32)>,
    /// The recorded launches' gaps between kernels and their span, per cycle (CUPTI).
    recorded_gaps_span_us: Option<(f64, f64)>,
    /// The first recorded launch's kernels per cycle (from an idle GPU; a diagnostic).
    first_recorded_kernels_us: Option<f64>,
    /// A restoring round's copy of the image's snapshot alone: its graph and its time per
    /// launch (taken off the round's launches).
    copy: Option<(crate::device::Graph, Stats)>,
    /// A restoring round's cycle from a launch of one cycle after the same copy, and its
    /// standard error (a diagnostic: [`kc_core::results::cycle_by_difference`]).
    cycle_by_difference: Option<(f64, f64)>,
}

impl Round {
    /// The part of a switch that is gap between kernels: the timed cycle less its recorded
    /// kernels (CUPTI) less the entries' gaps alone (`gaps_alone`), per switch; none
    /// without either.
    fn gap_extra_us(&self, gaps_alone: Option<f64>) -> Option<f64> {
        let (k, g) = (self.kernels_us?, gaps_alone?);
        Some((self.cycle_us - k - g) / self.switches as f64)
    }

    /// The same by busy time: the timed cycle less the recorded launches' busy time per
    /// cycle (their span less their gaps) less the entries' time alone beyond their busy
    /// time alone (`busy_gaps_alone`), per switch.
    fn gap_extra_busy_us(&self, busy_gaps_alone: Option<f64>) -> Option<f64> {
        let ((gaps, span), g) = (self.recorded_gaps_span_us?, busy_gaps_alone?);
        Some((self.cycle_us - (span - gaps) - g) / self.switches as f64)
    }
}

/// A restoring round's copy takes at most about this share of each launch: the round then
/// runs this many times the copy's time in cycles, at most [`RESTORING_MAX_CYCLES`].
const RESTORING_COPY_SHARE: f64 = 0.1;
const RESTORING_MAX_CYCLES: u32 = 16;

/// The round of every unit from the model's values (restored first, where a pass restores
/// them), with a census of its places before and after it is timed. Cycling the units out
/// of the model's dataflow can drive those values to zeros or infinities within the round's
/// first launches (a training step's in-place updates, each cycled against itself): such a
/// round is timed again with every launch starting from the model's values, a copy of the
/// image's snapshot at the head of its graph, the copy's own time taken off.
#[allow(clippy::too_many_arguments)]
fn round_from_model_values<'s>(
    plan: &Plan,
    order: &[(u32, u32)],
    at: &[(&PlanUnit, u32)],
    alone: &dyn Fn(u32) -> Option<&'s Stats>,
    per_invocation: &[usize],
    opts: &ExecOptions,
    gpu: &mut Gpu,
    image: Option<&PlanDataflow>,
    restore: Option<(&PlanDataflow, &[u32])>,
    summary: &mut TransitionsSummary,
    notes: &mut Vec<String>,
) -> Result<Round, ExecError> {
    let before = restored_census(plan, gpu, restore, at)?;
    // The round as it runs (`restoring` false), or with each launch from the snapshot.
    let time_round = |gpu: &mut Gpu, restoring: bool| {
        let kernels = opts.verify.then_some(per_invocation);
        measure_round(plan, order, alone, kernels, opts, gpu, image, restoring)
    };
    // By default every launch starts from the model's values where the snapshot is held:
    // cycled as it runs, T5's round drove its values on and its kernels ran 7.2 % over kc's
    // graph, restoring 2.1 % (session 17).
    if opts.round_restoring && gpu.has_arena_snapshot() {
        match time_round(gpu, true) {
            Ok(r) => {
                record_restoring(summary, gpu, &r, true);
                summary.round_timed_values = timed_values(plan, gpu, before, image, at)?;
                return Ok(r);
            }
            Err(e) if e.breaks_context() => return Err(e),
            Err(e) => {
                let _ = gpu.synchronize();
                notes.push(format!(
                    "the round restoring the model's values at every launch failed ({e}): timed as it runs"
                ));
            }
        }
    } else if opts.round_restoring && image.is_some() {
        notes.push(
            "no room for a snapshot of the image: the round was timed as it runs, each launch from what the one before left".into(),
        );
    }
    let round = time_round(gpu, false)?;
    let Some(values) = timed_values(plan, gpu, before, image, at)? else {
        return Ok(round);
    };
    summary.round_timed_values = Some(values.clone());
    if !values.ran_away() || !gpu.has_arena_snapshot() {
        return Ok(round);
    }
    match time_round(gpu, true) {
        Ok(r) => {
            let copy_us = r.copy.as_ref().map_or(0.0, |c| c.1.mean);
            notes.push(format!(
                "the round ran its values away while it was timed (zeros {:.0} → {:.0} %, non-finite {:.1} → {:.1} %): timed again with every launch starting from the model's values ({} cycles after a {:.0} us copy of the image's snapshot, the copy's own time and energy taken off); {:.2} us per switch before, {:.2} us now",
                values.zero_before_pct,
                values.zero_after_pct,
                values.nonfinite_before_pct,
                values.nonfinite_after_pct,
                r.cycles,
                copy_us,
                round.extra_us,
                r.extra_us
            ));
            record_restoring(summary, gpu, &r, false);
            Ok(r)
        }
        Err(e) => {
            let _ = gpu.synchronize();
            notes.push(format!(
                "the round ran its values away while it was timed; the round restoring them failed ({e}): the first round stands"
            ));
            Ok(round)
        }
    }
}

/// Records that the round kept is a restoring one: the snapshot, its cycles and its copy,
/// and whether it restored from its first timing (the default) or only after the round as
/// it ran had run its values away.
fn record_restoring(summary: &mut TransitionsSummary, gpu: &Gpu, r: &Round, from_the_start: bool) {
    summary.round_restoring = Some(kc_core::results::RoundRestoring {
        bytes: gpu.arena_snapshot_bytes(),
        cycles: r.cycles,
        copy_us: r.copy.as_ref().map_or(0.0, |c| c.1.mean),
        copy_energy_j: None,
        from_the_start,
    });
}

/// The round's places after it was timed against their census `before` (the model's
/// values), where both were taken.
fn timed_values(
    plan: &Plan,
    gpu: &Gpu,
    before: Option<crate::device::Census>,
    image: Option<&PlanDataflow>,
    at: &[(&PlanUnit, u32)],
) -> Result<Option<kc_core::results::UnitValues>, ExecError> {
    let (Some(b), Some(df)) = (before, image) else {
        return Ok(None);
    };
    let after = super::isolated::census(plan, gpu, df, at, ROUND_CENSUS_STEPS)?;
    Ok(after.map(|a| super::isolated::unit_values(&b, &a)))
}

/// Every unit once per cycle, in replay order (`order`: unit, its first step), cycles
/// repeated in one graph: what one switch to another unit costs when the program cycles
/// through all of the model's distinct kernels (their code and launch data no longer hot,
/// as in the model), beyond the units alone; with `--verify`, also the kernels' own
/// durations in the round (CUPTI), which split that cost into slower kernels and longer
/// gaps between them.
#[allow(clippy::too_many_arguments)]
fn measure_round<'s>(
    plan: &Plan,
    order: &[(u32, u32)],
    alone: &dyn Fn(u32) -> Option<&'s Stats>,
    record_kernels: Option<&[usize]>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    image: Option<&PlanDataflow>,
    restoring: bool,
) -> Result<Round, ExecError> {
    let sum_alone: f64 = order
        .iter()
        .filter_map(|&(u, _)| alone(u))
        .map(|t| t.mean)
        .sum();
    let sum_sem = order
        .iter()
        .filter_map(|&(u, _)| alone(u))
        .fold(0.0f64, |acc, t| acc.hypot(t.sem()));
    // A restoring round's copy, alone: captured, warmed and timed first.
    let copy = if restoring {
        let g = gpu.capture(|gpu| gpu.enqueue_snapshot_restore(0))?;
        gpu.warm(&g)?;
        let t = Stats::of(&gpu.time_launches(&g, 20)?);
        Some((g, t))
    } else {
        None
    };
    let cycles = opts.round_cycles.unwrap_or_else(|| match &copy {
        Some((_, t)) => ((t.mean / RESTORING_COPY_SHARE / sum_alone.max(0.001)).ceil() as u32)
            .clamp(2, RESTORING_MAX_CYCLES.min(opts.max_unroll.max(2))),
        None => ((PAIR_GRAPH_NS / 1000.0 / sum_alone.max(0.001)).ceil() as u32)
            .clamp(2, opts.max_unroll.max(2)),
    });
    // A launch: the copy (restoring) and then `n` cycles of the round.
    let restores = copy.is_some();
    let enqueue_cycles = |gpu: &Gpu, n: u32| -> Result<(), ExecError> {
        if restores {
            gpu.enqueue_snapshot_restore(0)?;
        }
        for _ in 0..n {
            for &(u, step) in order {
                let at = match image {
                    Some(df) => At::Step {
                        step,
                        places: &df.steps[step as usize],
                    },
                    None => At::Slots(0),
                };
                gpu.enqueue(&plan.units[u as usize], 0, at)?;
            }
        }
        Ok(())
    };
    let graph = gpu.capture(|gpu| enqueue_cycles(gpu, cycles))?;
    gpu.warm(&graph)?;
    // With CUPTI, the kernels of launches back to back, as the timed launches run: their
    // time per cycle, and each position's where every unit launched as many kernels as
    // alone (`per_invocation`). The first launch, from an idle GPU, is kept apart as a
    // diagnostic.
    let recorded = match record_kernels {
        Some(_) => super::record_launches(gpu, &graph).ok(),
        None => None,
    };
    let recorded_cycles = |r: &kc_core::results::fidelity::RecordedLaunches| cycles * r.launches;
    let kernels_us = recorded.as_ref().map(|r| {
        kc_core::results::fidelity::unit_launches(&[], &r.records, recorded_cycles(r)).kernels_us
    });
    let recorded_gaps_span_us = recorded
        .as_ref()
        .and_then(|r| kc_core::results::fidelity::gaps_and_span_us_by_launch(&r.each, cycles));
    // Each position's kernels in every recorded cycle: their mean over all, and in a
    // restoring round over each launch's first cycle, the one from the model's values.
    let each_cycle = recorded.as_ref().zip(record_kernels).and_then(|(r, per)| {
        kc_core::results::fidelity::kernels_by_position_each_cycle(
            &r.records,
            per,
            recorded_cycles(r),
        )
    });
    let unit_kernels_us = each_cycle
        .as_ref()
        .map(|each| kc_core::results::fidelity::mean_of_cycles(each, |_| true));
    let unit_first_cycle_kernels_us = match (&each_cycle, restoring) {
        (Some(each), true) => Some((
            kc_core::results::fidelity::mean_of_cycles(each, |i| i % cycles as usize == 0),
            recorded.as_ref().map_or(0, |r| r.launches),
        )),
        _ => None,
    };
    let first_recorded_kernels_us = recorded.as_ref().and_then(|r| {
        let first = r.first.as_deref()?;
        Some(kc_core::results::fidelity::unit_launches(&[], first, cycles).kernels_us)
    });
    let launch_us = sum_alone * f64::from(cycles);
    let launches = ((PAIR_TIMED_US / launch_us.max(0.001)).ceil() as usize).clamp(10, 200);
    let per_launch = Stats::of(&gpu.time_launches(&graph, launches)?);
    // The copy's own time, alone, is taken off each launch of a restoring round.
    let (copy_mean, copy_sem) = copy.as_ref().map_or((0.0, 0.0), |c| (c.1.mean, c.1.sem()));
    let n = f64::from(cycles);
    let cycle_us = (per_launch.mean - copy_mean) / n;
    let cycle_sem = per_launch.sem().hypot(copy_sem) / n;
    // A diagnostic: the cycle from a launch of one cycle after the same copy, the copy
    // cancelling in the difference. ViT-B/16's gap term followed its timed cycle against
    // its recorded span, ± 6 us a cycle from run to run, as a copy taking ± 100 us more or
    // less in its launch than alone would (session 23, gapnoise.py).
    // A diagnostic never costs the answer: where it fails, short of losing the context,
    // it is left out.
    let mut by_difference = || -> Result<Option<(f64, f64)>, ExecError> {
        if copy.is_none() || cycles < 2 {
            return Ok(None);
        }
        let one = gpu.capture(|gpu| enqueue_cycles(gpu, 1))?;
        gpu.warm(&one)?;
        let short = Stats::of(&gpu.time_launches(&one, launches)?);
        Ok(kc_core::results::cycle_by_difference(
            &per_launch,
            &short,
            cycles,
        ))
    };
    let cycle_by_difference = match by_difference() {
        Ok(c) => c,
        Err(e) if e.breaks_context() => return Err(e),
        Err(_) => {
            let _ = gpu.synchronize();
            None
        }
    };
    let units: Vec<u32> = order.iter().map(|&(u, _)| u).collect();
    let switches = schedule::switches_per_cycle(&units);
    let k = switches as f64;
    Ok(Round {
        graph,
        cycles,
        switches,
        cycle_us,
        extra_us: (cycle_us - sum_alone) / k,
        extra_sem_us: cycle_sem.hypot(sum_sem) / k,
        kernels_us,
        unit_kernels_us,
        unit_first_cycle_kernels_us,
        recorded_gaps_span_us,
        first_recorded_kernels_us,
        copy,
        cycle_by_difference,
    })
}
