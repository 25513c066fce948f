//! Isolated mode: every unit this rank executes, alone, captured unrolled (about 1 ms of GPU
//! time per launch) on its own buffers (warm), on rotated copies spanning twice L2 (cold),
//! or at each invocation's own places in the memory image (context); timed until enough
//! GPU time is measured, with its own energy windows (until the unit's energy is known as
//! closely as its share of the model's traced time asks); then the terms of the prediction
//! from parts ([`super::transitions`]), unless the pass is cold. In context, a unit whose
//! repeats ran its values away is measured again with every launch from the model's values,
//! and one whose launch reads at one invocation what another wrote, with each invocation
//! from them where those values change its kernels ([`EachInvocation`]).
//!
//! Invariant: the results say which cache state was measured (context without an image
//! is measured, and labelled, warm).

use super::{status_of, unit_row, units_bar, Energy, Phases, Replay};
use crate::backends::{At, Gpu, SteeringReads};
use crate::device::Census;
use crate::energy::EnergyWindow;
use crate::{CachePolicy, ExecError, ExecOptions};
use kc_core::plan::schedule;
use kc_core::plan::types::{Plan, PlanUnit, UnitCall};
use kc_core::results::stats::Stats;
use kc_core::results::*;
use std::collections::HashMap;

/// How far a unit's mean launch time may lie over its median before the unit is timed
/// again, and how often at most.
const OUTLIER_SHARE: f64 = 0.05;
const RETIMES: usize = 2;

pub(super) fn isolated(r: Replay<'_, '_>) -> Result<(), ExecError> {
    let Replay {
        plan,
        rank,
        opts,
        gpu,
        en,
        failed,
        results,
        notes,
    } = r;
    let mut phases = Phases::start();
    // Context: the units' invocations run at their places in the memory image, so the
    // image is allocated and every tier-3 step prepared over it, as in graph mode.
    let image_of_rank = plan
        .dataflow_of_rank(rank)
        .filter(|_| opts.cache == CachePolicy::Context && opts.dataflow);
    let image = image_of_rank.as_ref();
    let mut steps_of: HashMap<u32, Vec<u32>> = HashMap::new();
    // Every step this rank runs, in plan order (collectives left out: they need every
    // rank): the pass that gives each place the values the model's own producer wrote.
    let mut model_pass: Vec<u32> = Vec::new();
    if let Some(df) = image {
        gpu.allocate_arena(df)?;
        for (i, s) in plan.steps.iter().enumerate() {
            let unit = &plan.units[s.unit as usize];
            if plan.streams[s.stream as usize].rank != rank
                || !gpu.runs(&unit.call)
                || failed.contains_key(&s.unit)
            {
                continue;
            }
            if unit.tier == kc_core::plan::types::PlanTier::AtenOp {
                // A step that cannot be placed runs on its unit's own tensors (enqueue
                // falls back to them), as in graph mode; one that faulted on the device
                // ends the run.
                let _ = super::prepare_over_image(gpu, unit, i as u32, &df.steps[i])?;
            }
            steps_of.entry(s.unit).or_default().push(i as u32);
            if !matches!(unit.call, UnitCall::Collective { .. }) {
                model_pass.push(i as u32);
            }
        }
        notes.extend(gpu.take_notes());
    } else if opts.cache == CachePolicy::Context {
        notes.push(
            "cache context needs the plan's memory image (dataflow); measured warm instead".into(),
        );
    }
    if image.is_some() {
        phases.end("the memory image and its steps");
    }
    // What the results say is what was measured: context without a memory image is warm.
    let measured_cache = opts.cache.measured(image.is_some());
    let bar = opts
        .progress
        .then(|| units_bar("isolated", plan.units.len()));
    let counts = crate::invocations_on_rank(plan, rank);
    // Each unit's share of the traced time sets how closely its energy must be known for
    // the sum over units to reach the target: a unit of share s stops at target / √s, so
    // that the sum's relative standard error is at most the target (Σ s = 1).
    let traced = |u: &PlanUnit| u.traced_ns_mean() * counts[u.id as usize] as f64;
    let traced_all: f64 = plan.units.iter().map(traced).sum();
    // The spin's power before the units heat the chip, and again after them: how much
    // more a hotter chip leaks at the units' clock (outside jobs, whose ranks would have
    // to meet for it).
    let spin_start = match en.job {
        None => en.spin_now(gpu, "spin (leakage, start)", opts, notes)?,
        Some(_) => None,
    };
    if spin_start.is_some() {
        phases.end("the spin's power at the start");
    }
    let mut rows = Vec::with_capacity(plan.units.len());
    let mut restore_failed = false;
    // The steps each unit's graph runs (the first of its steps, one launch's worth), and
    // the bytes every step reads and writes in the image.
    let graph_steps: HashMap<u32, Vec<u32>> = steps_of
        .iter()
        .map(|(&id, steps)| {
            let u = &plan.units[id as usize];
            let n = unroll_of(u, steps.len().max(1) as u32, opts) as usize;
            (id, steps[..n.min(steps.len())].to_vec())
        })
        .collect();
    let spans = image.map(|df| kc_core::plan::step_values::step_spans(plan, df));
    // Where each step's reads were left in L2 by the model, for the units recorded in the
    // model's cache state.
    let touches = spans
        .as_deref()
        .filter(|_| opts.alone_in_model_cache && opts.verify)
        .map(kc_core::plan::cache_state::ModelTouches::of);
    // Unless `--model-cache-lead-ins none`, the steps leading up to each step, for the
    // record in the model's cache state: among the steps the model pass runs (collectives
    // left out).
    let record_leads = match (image, &touches, opts.model_cache_lead_ins) {
        (Some(_), Some(_), kc_core::results::fidelity::RecordLeadIns::None)
        | (None, _, _)
        | (_, None, _) => None,
        (Some(df), Some(_), _) => Some(schedule::lead_ins_at_places(
            plan,
            rank,
            df,
            |s| {
                let unit = &plan.units[s.unit as usize];
                gpu.runs(&unit.call)
                    && !failed.contains_key(&s.unit)
                    && !matches!(unit.call, UnitCall::Collective { .. })
            },
            super::lead_in::MAX_LEAD_IN_STEPS,
        )),
    };
    // The values each unit's steps read in the model, for the steps its graph runs.
    let mut values_at_steps = match (image, &spans, opts.unit_values) {
        (Some(_), Some(spans), UnitValuesFrom::AtSteps) => Some(
            super::step_values::ValuesAtSteps::new(plan, spans, &graph_steps, &model_pass),
        ),
        _ => None,
    };
    // Each unit's energy target, for its windows after its lead-ins (the units' producers).
    let mut targets: HashMap<u32, f64> = HashMap::new();
    // The unit measured last, which a device fault surfacing later is laid to.
    let mut last_measured: Option<&PlanUnit> = None;
    // When the unit before's measurement returned (`UnitSetupMs::between`).
    let mut last_returned: Option<std::time::Instant> = None;
    for u in &plan.units {
        if let Some(b) = &bar {
            b.set_message(u.label.clone());
            b.inc(1);
        }
        let n = counts[u.id as usize];
        if n == 0 {
            continue;
        }
        let status = status_of(u, failed, gpu.runs(&u.call));
        if status != "ok" {
            let mut row = unit_row(u, status);
            row.invocations = n;
            rows.push(row);
            continue;
        }
        crate::crash::doing(&format!("measuring unit {} ({}) alone", u.id, u.label));
        let places = image.zip(steps_of.get(&u.id).map(Vec::as_slice));
        // A collective runs alone on every rank at once: the ranks meet first.
        let collective = matches!(u.call, kc_core::plan::types::UnitCall::Collective { .. });
        if let (true, Some(job)) = (collective, en.job.as_mut()) {
            job.barrier(&format!("unit {}", u.id))?;
        }
        let share = if traced_all > 0.0 {
            traced(u) / traced_all
        } else {
            1.0
        };
        let target = opts.energy_target_rel_sem / share.max(1e-12).sqrt();
        targets.insert(u.id, target);
        // Every place holds the model's values when the unit starts (see
        // [`restore_model_values`]); a pass that fails is said once and the units go on
        // over what the image holds.
        let unit_from = std::time::Instant::now();
        // The values its steps read in the model, where a later step wrote them again, go
        // into the snapshot before the restore, so that one copy gives both (the first
        // unit's restore makes the snapshot: its values go in after, and a second copy).
        let give = |v: &mut Option<super::step_values::ValuesAtSteps>,
                    gpu: &mut Gpu,
                    notes: &mut Vec<String>|
         -> Result<bool, ExecError> {
            let (Some(values), Some(df), false) = (v.as_mut(), image, collective) else {
                return Ok(false);
            };
            match values.give(plan, df, gpu, &model_pass, u.id) {
                Ok(given) => Ok(given),
                Err(e) if e.breaks_context() => Err(e),
                Err(e) => {
                    let _ = gpu.synchronize();
                    notes.push(format!(
                        "the values its steps read in the model could not be given to unit {} ({e}): it and the units after it read what the pass left",
                        u.id
                    ));
                    values.stop(gpu, u.id);
                    Ok(false)
                }
            }
        };
        let snapshot_first = gpu.has_arena_snapshot();
        if snapshot_first && !restore_failed {
            give(&mut values_at_steps, gpu, notes)?;
        }
        if let (Some(df), false) = (image, restore_failed) {
            if let Err(e) = restore_model_values(plan, df, gpu, &model_pass) {
                // A pass that faulted on the device leaves nothing to go on with; the error
                // names the unit measured before, whose fault surfaces here, or where there
                // was none the unit the values were restored for.
                if e.breaks_context() {
                    return Err(match last_measured {
                        Some(prev) => ExecError::context_lost(
                            prev,
                            "when it was measured alone (it surfaced as the model's values were restored for the next unit)",
                            &e,
                        ),
                        None => ExecError::context_lost(
                            u,
                            "when the model's values were restored before it",
                            &e,
                        ),
                    });
                }
                let _ = gpu.synchronize();
                restore_failed = true;
                notes.push(format!(
                    "the model's values could not be restored before unit {} ({e}): it and the units after it ran over what the image held",
                    u.id
                ));
            }
        }
        if !snapshot_first && !restore_failed && give(&mut values_at_steps, gpu, notes)? {
            gpu.restore_arena_snapshot()?;
        }
        let restore_ms = ms_since(unit_from);
        // Only a launch that writes what it reads can run its values away: such a unit's
        // values are looked at after its timed launches too, so that one that ran them
        // away there goes to its measurement from the model's values before its windows.
        let rewrites_reads =
            spans
                .as_ref()
                .zip(graph_steps.get(&u.id))
                .is_some_and(|(spans, steps)| {
                    kc_core::plan::step_values::launch_rewrites_its_reads(spans, steps)
                });
        let between_ms =
            last_returned.map(|t| unit_from.saturating_duration_since(t).as_secs_f64() * 1e3);
        let measured = measure_unit(
            plan,
            u,
            n,
            places,
            target,
            rewrites_reads.then_some(spans.as_deref()).flatten(),
            touches.as_ref().map(|t| (t, record_leads.as_ref())),
            opts,
            gpu,
            en,
            notes,
        );
        last_returned = Some(std::time::Instant::now());
        // A context the unit's measurement lost fails the take-back too: the error names the
        // unit either way (session 54's T5 and BERT records ended on a bare device
        // assertion, the take-back's).
        if let Some(Err(e)) = values_at_steps.as_mut().map(|v| v.take_back(gpu)) {
            let cause = match &measured {
                Err(m) if m.breaks_context() => m,
                _ => &e,
            };
            return Err(match cause.breaks_context() {
                true => ExecError::context_lost(u, "when it was measured alone", cause),
                false => e,
            });
        }
        last_measured = Some(u);
        match measured {
            Ok(mut row) => {
                if let Some(s) = row.setup_ms.as_mut() {
                    s.restore = restore_ms;
                    s.between = between_ms;
                }
                row.wall_ms = Some(ms_since(unit_from));
                rows.push(row)
            }
            Err(e) if e.breaks_context() => {
                return Err(ExecError::context_lost(u, "when it was measured alone", &e))
            }
            Err(e) => {
                // A unit that fails is named and the run goes on with the rest.
                let _ = gpu.synchronize();
                let mut row = unit_row(u, format!("failed: {e}"));
                row.invocations = n;
                rows.push(row);
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let unit_values = match values_at_steps {
        Some(v) => Some(v.finish(gpu)?),
        None if image.is_some() && !restore_failed => Some(UnitValuesGiven::default()),
        None => None,
    };
    phases.end("the units alone");
    if let Some(n) = opts
        .duty_shares_both
        .then(|| duty_shares_note(&rows))
        .flatten()
    {
        notes.push(n);
    }
    if let Some(v) = unit_values.as_ref().filter(|v| v.at_steps) {
        notes.push(format!(
            "each unit read the values its steps read in the model: {} MiB its steps read that a later step wrote again, given back to {} units from {} of the model's steps; {} MiB that two of a unit's steps read at different times held the earlier step's values{}",
            v.bytes >> 20,
            v.units,
            if v.passes == 1 { "1 pass".to_string() } else { format!("{} passes", v.passes) },
            v.shared_bytes >> 20,
            if v.units_left_out > 0 {
                format!("; {} units read what the pass left", v.units_left_out)
            } else {
                String::new()
            }
        ));
    }
    if image.is_some() && !restore_failed {
        notes.push(if gpu.has_arena_snapshot() {
            format!(
                "each unit started from the model's values: one pass of every step, then a copy of the image's snapshot ({} MiB) before each unit",
                gpu.arena_snapshot_bytes() >> 20
            )
        } else {
            "each unit started from the model's values: a pass of every step before each unit (no room for a snapshot of the image)".to_string()
        });
    }
    // The switches between units and the graph launch, for the prediction from parts; a
    // cold pass's units ran on rotated copies, which several units cannot share, so it
    // measures none.
    // The round starts from the model's values too, where they could be restored.
    let pass = (!restore_failed).then_some(model_pass.as_slice());
    let transitions = if opts.parts && measured_cache != CachePolicy::Cold {
        // The pairs and the round cycle units out of the model's dataflow: their integer
        // and boolean reads (routing offsets, indices, masks) take the model's values, as
        // each unit alone did, not what the cycle's own producers computed over what the
        // cycle before left, so that the round's terms price the switches, not other data.
        // (Measured on Qwen3-MoE's decode graph without recorded values, it changed
        // nothing: its grouped GEMMs' 6 % in the round had another cause, session 19.)
        gpu.steer_reads(match opts.round_bound_reads_as_alone {
            true => SteeringReads::AllAsAlone,
            false => SteeringReads::AsAlone,
        });
        let measured =
            super::transitions::measure(plan, rank, opts, gpu, en, image, pass, &rows, notes);
        gpu.steer_reads(SteeringReads::FromProducers);
        // Where the pairs' and the round's bound reads took their values.
        notes.extend(gpu.take_notes());
        match measured {
            Ok(t) => Some(t),
            Err(e) => {
                let _ = gpu.synchronize();
                notes.push(format!("transitions between units not measured: {e}"));
                None
            }
        }
    } else {
        None
    };
    if transitions.is_some() {
        phases.end("the round and the graph launch");
    }
    // The units' producers: each unit that carries the energy after the model's steps
    // leading up to each invocation. Only where energy is measured: the prediction takes
    // only their energy.
    let restored = (!restore_failed).then_some(image).flatten();
    let lead_ins_asked = opts.lead_in_units && en.meter.is_some();
    let lead_ins_ran = diagnostic_runs(lead_ins_asked, restored, en);
    if lead_ins_ran {
        checkpoint(
            opts,
            results,
            measured_cache,
            &rows,
            &transitions,
            None,
            &unit_values,
            &phases.done,
            en,
            notes,
            "the units after their lead-ins",
        );
    }
    diagnostic(
        lead_ins_asked,
        "units after their lead-ins",
        restored,
        en,
        gpu,
        notes,
        |df, en, gpu, notes| {
            // As alone by default: the lead-ins' own results would hand a unit other
            // indices than the model's values its measurement alone read.
            gpu.steer_reads(match opts.lead_in_reads_from_producers {
                true => SteeringReads::FromProducers,
                false => SteeringReads::AsAlone,
            });
            let measured = super::lead_in::measure(
                plan,
                rank,
                opts,
                gpu,
                en,
                df,
                &model_pass,
                &steps_of,
                &targets,
                &mut rows,
                notes,
            );
            gpu.steer_reads(SteeringReads::FromProducers);
            measured
        },
    )?;
    if lead_ins_ran {
        phases.end("the units after their lead-ins");
    }
    // Only where the start's windows recorded a temperature is the end measured.
    let spin_end = match spin_start {
        Some((_, _, Some(_))) => en.spin_now(gpu, "spin (leakage, end)", opts, notes)?,
        _ => None,
    };
    if spin_end.is_some() {
        phases.end("the spin's power at the end");
    }
    let leakage = match (spin_start, spin_end) {
        (Some((start_w, start_sem_w, Some(start_c))), Some((end_w, end_sem_w, Some(end_c)))) => {
            Some(kc_core::results::Leakage {
                start_w,
                start_sem_w,
                start_c,
                end_w,
                end_sem_w,
                end_c,
            })
        }
        _ => None,
    };
    // A diagnostic: the program whole, without each kind of unit and with it doubled;
    // after the spin's end, so that the temperature term's measurement stays where it was.
    let kinds_run = diagnostic_runs(opts.kinds_left_out, restored, en);
    if kinds_run {
        checkpoint(
            opts,
            results,
            measured_cache,
            &rows,
            &transitions,
            leakage.clone(),
            &unit_values,
            &phases.done,
            en,
            notes,
            "the diagnostic of the program without each kind of unit",
        );
    }
    let kinds_left_out = diagnostic(
        opts.kinds_left_out,
        "the program without each kind of unit",
        restored,
        en,
        gpu,
        notes,
        |df, en, gpu, notes| {
            super::kinds_left_out::measure(plan, rank, opts, gpu, en, df, &model_pass, &rows, notes)
        },
    )?;
    if kinds_run {
        phases.end("the diagnostic of the program without each kind of unit");
    }
    gpu.free_copies()?;
    results.isolated = Some(summary(
        measured_cache,
        &rows,
        transitions,
        leakage,
        kinds_left_out,
        unit_values,
        phases.done,
    ));
    results.units = rows;
    Ok(())
}

/// The pass's summary over its units' rows, with the terms measured after them.
fn summary(
    measured_cache: CachePolicy,
    rows: &[UnitResult],
    transitions: Option<TransitionsSummary>,
    leakage: Option<Leakage>,
    kinds_left_out: Option<KindsLeftOut>,
    unit_values: Option<UnitValuesGiven>,
    phases: Vec<PassPhase>,
) -> IsolatedSummary {
    let ok: Vec<&UnitResult> = rows.iter().filter(|r| r.status == "ok").collect();
    let executed_traced: f64 = ok
        .iter()
        .map(|r| r.traced_mean_us * r.invocations as f64)
        .sum();
    let all_traced: f64 = rows
        .iter()
        .map(|r| r.traced_mean_us * r.invocations as f64)
        .sum();
    let energy_all = ok.iter().all(|r| r.predicted_energy_j.is_some());
    IsolatedSummary {
        cache: measured_cache.as_str().to_string(),
        predicted_us: ok.iter().filter_map(|r| r.predicted_us).sum(),
        executed_traced_us: executed_traced,
        not_executed_traced_us: all_traced - executed_traced,
        predicted_energy_j: (energy_all && !ok.is_empty())
            .then(|| ok.iter().filter_map(|r| r.predicted_energy_j).sum()),
        units_ok: ok.len(),
        units_not_executed: rows
            .iter()
            .filter(|r| r.status.starts_with("not executed"))
            .count(),
        units_failed: rows
            .iter()
            .filter(|r| r.status.starts_with("failed"))
            .count(),
        transitions,
        leakage,
        kinds_left_out,
        unit_values,
        phases,
    }
}

/// Hands the caller's checkpoint ([`ExecOptions::checkpoint`]) the pass's results so far,
/// before the diagnostic `before` runs: the units, the terms measured, the windows and
/// notes, with `unfinished` naming what had not run. A diagnostic replays the model's
/// program in ways no unit did; a fault there (T5's graph ended by SIGSEGV in the driver,
/// session 26) would otherwise lose every unit measured before it.
#[allow(clippy::too_many_arguments)]
fn checkpoint(
    opts: &ExecOptions,
    results: &Results,
    measured_cache: CachePolicy,
    rows: &[UnitResult],
    transitions: &Option<TransitionsSummary>,
    leakage: Option<Leakage>,
    unit_values: &Option<UnitValuesGiven>,
    phases: &[PassPhase],
    en: &Energy<'_>,
    notes: &[String],
    before: &str,
) {
    let Some(write) = &opts.checkpoint else {
        return;
    };
    let mut partial = results.clone();
    partial.isolated = Some(summary(
        measured_cache,
        rows,
        transitions.clone(),
        leakage,
        None,
        unit_values.clone(),
        phases.to_vec(),
    ));
    partial.units = rows.to_vec();
    partial.windows = en.windows.clone();
    partial.notes = notes.to_vec();
    partial.finished = crate::energy::iso8601_ms(crate::energy::Clock::unix_ms(&en.clock));
    partial.unfinished = Some(format!(
        "{before}, and the rest of the pass after it, had not run when this was written"
    ));
    crate::crash::doing(&format!("writing the results so far, before {before}"));
    (write.0)(&partial);
}

#[allow(clippy::too_many_arguments)]
fn measure_unit(
    plan: &Plan,
    u: &PlanUnit,
    invocations: u64,
    places: Option<(&kc_core::plan::types::PlanDataflow, &[u32])>,
    energy_target: f64,
    rewritten_by_launch: Option<&[kc_core::plan::step_values::StepSpans]>,
    touches: Option<(&kc_core::plan::cache_state::ModelTouches, Option<&Leads>)>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    notes: &mut Vec<String>,
) -> Result<UnitResult, ExecError> {
    // Only a launch that writes what it reads can run its values away, or give an
    // invocation another's result to read: its steps' spans come with it.
    let rewrites_reads = rewritten_by_launch.is_some();
    // Tier-3 ops replay on their own tensors, so their buffers are not rotated.
    let rotation = match opts.cache {
        _ if places.is_some() => 1,
        _ if u.tier == kc_core::plan::types::PlanTier::AtenOp => 1,
        CachePolicy::Warm | CachePolicy::Context => 1,
        CachePolicy::Cold => u.cold_rotation.max(1),
    };
    let mut setup = UnitSetupMs::default();
    let mut step_from = std::time::Instant::now();
    // Each step's milliseconds, and the next step's start.
    let mut lap = |into: &mut f64| {
        *into = ms_since(step_from);
        step_from = std::time::Instant::now();
    };
    gpu.make_copies(plan, u, rotation)?;
    lap(&mut setup.copies);
    // Context: every place held the model's values when the unit started (the caller
    // restored them): the image's starting values, then one pass of the model's steps in
    // plan order, each place holding what its last writer wrote, and (`--unit-values
    // at-steps`, [`super::step_values`]) the bytes the unit's steps read that a later step
    // wrote again as those steps read them.
    // Without this a unit ran over what the units measured before it left there (values
    // its neighbours' repeats drove to zeros or infinities): on a LLaMA-shaped training
    // step the plain energy read 19.6 % under the model's (docs/MEASUREMENTS.md, "Units
    // alone over the model's values"). Starting values alone are not the model's either:
    // an index computed from a float activation then reads noise, out of bounds (T5).
    // And a census of the values at the unit's places then, against one after its
    // repeats: whether they drove its own data away.
    let collective = matches!(u.call, UnitCall::Collective { .. });
    let steps_of_unit = places
        .filter(|_| !collective)
        .map(|(df, steps)| (df, steps.iter().map(|&st| (u, st)).collect::<Vec<_>>()));
    let before = match &steps_of_unit {
        Some((df, at)) => census(plan, gpu, df, at, CENSUS_STEPS)?,
        None => None,
    };
    lap(&mut setup.census);
    // In context every step of the unit runs once per cycle, in model order.
    let cycle = places.map_or(rotation, |(_, steps)| steps.len().max(1) as u32);
    let unroll = unroll_of(u, cycle, opts);
    // The launch's `i`-th invocation, and the unit's `unroll` invocations, as one launch
    // runs them.
    let enqueue_invocation = |gpu: &Gpu, i: u32| -> Result<(), ExecError> {
        let at = match places {
            Some((df, steps)) if !steps.is_empty() => {
                let step = steps[(i as usize) % steps.len()];
                At::Step {
                    step,
                    places: &df.steps[step as usize],
                }
            }
            _ => At::Slots(i % rotation),
        };
        gpu.enqueue(u, 0, at)
    };
    let enqueue_unit = |gpu: &Gpu| -> Result<(), ExecError> {
        for i in 0..unroll {
            enqueue_invocation(gpu, i)?;
        }
        Ok(())
    };
    let graph = gpu.capture(enqueue_unit)?;
    lap(&mut setup.capture);
    // Nodes besides kernels in a unit that is not itself a copy or fill (a library's
    // fills, copies or stream-ordered allocations under capture): named, for the first
    // units that have them.
    let copy_or_fill = matches!(u.call, UnitCall::Memcpy { .. } | UnitCall::Memset { .. });
    let others: Vec<String> = graph
        .node_kinds
        .iter()
        .filter(|(k, _)| *k != "kernel" && !copy_or_fill)
        .map(|(k, n)| format!("{} {k}", fmt_per(*n, unroll)))
        .collect();
    const NODE_NOTE: &str = "its graph holds, per invocation,";
    if !others.is_empty() && notes.iter().filter(|n| n.contains(NODE_NOTE)).count() < 12 {
        notes.push(format!(
            "unit {} {}: {NODE_NOTE} {} besides its kernels",
            u.id,
            u.label,
            others.join(", ")
        ));
    }
    gpu.warm(&graph)?;
    lap(&mut setup.warm);
    // What the unit's graph ran, before it is timed (CUPTI, --verify): launches back to
    // back, as it is timed, the first (from an idle GPU) left out. Its kernels alone are
    // what the round's and kc's graph's are set against, and what the gap term takes off.
    // Its kernels are recorded by step too, so that the round's kernels at the unit's
    // counted step are set against the same step alone (session 49): the mean over its
    // steps would read as the round's a difference the steps' own data make (Qwen3-MoE's
    // decode graph: its experts' grouped GEMM at layer 0, the round's step, ran 6 % over
    // its mean over both layers' offsets). A unit whose launch reads at one invocation
    // what another wrote, measured with each invocation from the model's values, takes
    // these and their change there.
    let restorable = opts.unit_restoring && !collective && gpu.has_arena_snapshot();
    let each_candidate = restorable && rewrites_reads && opts.each_invocation_values;
    let launch_steps: Option<Vec<u32>> = places
        .map(|(_, steps)| steps)
        .filter(|steps| !steps.is_empty())
        .map(|steps| {
            (0..unroll as usize)
                .map(|i| steps[i % steps.len()])
                .collect()
        });
    let mut launches_verified = verify_launches(
        u,
        &graph,
        unroll,
        false,
        launch_steps.as_deref(),
        opts,
        gpu,
        notes,
    );
    // A diagnostic: the same record from a launch starting at the unit's second step, so
    // that every step runs at another place of its launch.
    if let (true, Some((df, steps)), Some(l)) = (
        opts.by_step_rotated && opts.verify,
        places.filter(|(_, steps)| steps.len() > 1),
        launches_verified.as_mut().filter(|l| !l.by_step.is_empty()),
    ) {
        let rotated: Vec<u32> = (0..unroll as usize)
            .map(|i| steps[(i + 1) % steps.len()])
            .collect();
        let enqueue_rotated = |gpu: &Gpu| -> Result<(), ExecError> {
            for &step in &rotated {
                gpu.enqueue(u, 0, At::step(df, step))?;
            }
            Ok(())
        };
        let graph = gpu.capture(enqueue_rotated)?;
        gpu.warm(&graph)?;
        if let Some(r) = verify_launches(u, &graph, unroll, false, Some(&rotated), opts, gpu, notes)
        {
            l.by_step_rotated = r.by_step;
        }
    }
    // The unit in the model's cache state (with --verify, by default): what deliverable 3
    // sets against its kernels in kc's graph; the prediction does not take it.
    if let (Some((df, steps)), Some((touches, leads)), Some(l)) = (
        places.filter(|(_, steps)| !steps.is_empty() && !collective),
        touches,
        launches_verified.as_mut(),
    ) {
        const CACHE_NOTE: &str = "its record in the model's cache state failed";
        match record_in_model_cache(plan, u, df, steps, unroll, touches, leads, opts, gpu) {
            Ok(c) => l.in_model_cache = c,
            Err(e) if e.breaks_context() => return Err(e),
            Err(e) if notes.iter().filter(|n| n.contains(CACHE_NOTE)).count() < 12 => {
                notes.push(format!("unit {} {}: {CACHE_NOTE} ({e})", u.id, u.label))
            }
            Err(_) => {}
        }
        // The steps run before its invocations there wrote their places again (an
        // in-place step twice over): the unit is timed from the model's values.
        if leads.is_some() && gpu.has_arena_snapshot() {
            gpu.restore_arena_snapshot()?;
        }
    }
    lap(&mut setup.record);
    let label = format!("unit {} {}", u.id, u.label);
    // A unit whose launch writes what it reads is looked at after its timed launches too:
    // one that ran its values away there goes to its measurement from the model's values
    // without its windows as it ran (DenseNet-121's 65 restored units of session 29, 63 of
    // them in-place ReLUs, took 0.93 s each, against 0.35 s for a unit measured once).
    let mut early_values: Option<UnitValues> = None;
    let mut look = |gpu: &mut Gpu| -> Result<bool, ExecError> {
        let (Some(b), Some((df, at))) = (&before, &steps_of_unit) else {
            return Ok(false);
        };
        let v = census(plan, gpu, df, at, CENSUS_STEPS)?.map(|a| unit_values(b, &a));
        let ran_away = v
            .as_ref()
            .is_some_and(|v| v.ran_away() || opts.unit_restoring_all);
        early_values = v;
        Ok(ran_away)
    };
    let look_early = rewrites_reads && restorable && before.is_some();
    // The unit as it runs, each launch after the one before.
    let as_it_runs = |gpu: &mut Gpu,
                      en: &mut Energy<'_>,
                      look: Option<(&mut Look<'_>, f64)>,
                      notes: &mut Vec<String>| {
        time_and_energy(
            gpu,
            en,
            u,
            &graph,
            &enqueue_unit,
            &label,
            unroll,
            energy_target,
            None,
            look,
            opts,
            notes,
        )
    };
    // The look takes about what the census before the unit took.
    let look_takes_s = setup.census / 1e3;
    let mut first = as_it_runs(
        gpu,
        en,
        look_early.then_some((&mut look as &mut Look<'_>, look_takes_s)),
        notes,
    )?;
    // Its values after its windows, where it had them (the look's census, taken again);
    // else those the look found after its timed launches.
    if !first.windows_skipped {
        look(gpu)?;
    }
    // Where its windows as it ran ended (the rest of its measurement is timed from there).
    let tail = first.tail;
    let values = early_values.take();
    // A unit whose repeats alone drove its values away is measured again, each launch
    // from the model's values at its places, where the snapshot holds them; with
    // `--units-restoring-all` (a diagnostic) every unit is.
    let again = |v: &&UnitValues| v.ran_away() || opts.unit_restoring_all;
    let restored = match (values.as_ref().filter(again), places) {
        (Some(v), Some((df, steps))) if restorable => {
            let at: Vec<(&PlanUnit, u32)> = steps.iter().map(|&st| (u, st)).collect();
            let run = &steps[..steps.len().min(unroll as usize)];
            match measure_restoring(
                plan,
                u,
                df,
                run,
                &at,
                &enqueue_unit,
                &label,
                unroll,
                energy_target,
                (v, &first),
                opts,
                gpu,
                en,
                notes,
            ) {
                Ok(r) => r,
                Err(e) if e.breaks_context() => return Err(e),
                Err(e) => {
                    let _ = gpu.synchronize();
                    notes.push(format!(
                        "{label}: its measurement from the model's values failed ({e}): the measurement as it ran stands"
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    // Its windows as it ran were left for the measurement from the model's values: where
    // that did not come, they are measured now, over what its repeats left.
    if restored.is_none() && first.windows_skipped {
        notes.push(format!(
            "{label}: its repeats ran its values away during its timed launches, and its measurement from the model's values did not come: its windows were measured as it ran"
        ));
        first = as_it_runs(gpu, en, None, notes)?;
    }
    // A unit whose launch reads at one invocation what another wrote, its values not run
    // away: recorded with each invocation from the model's values, and measured so where
    // its kernels then take another time.
    let each = match (
        &restored,
        &launch_steps.as_ref().filter(|_| each_candidate),
        rewritten_by_launch,
        &launches_verified,
    ) {
        (None, Some(launch_steps), Some(spans), Some(as_it_ran)) => {
            match measure_each_invocation(
                u,
                spans,
                launch_steps,
                &enqueue_invocation,
                &label,
                energy_target,
                (as_it_ran, values.as_ref(), &first),
                opts,
                gpu,
                en,
                notes,
            ) {
                Ok(r) => r,
                Err(e) if e.breaks_context() => return Err(e),
                Err(e) => {
                    let _ = gpu.synchronize();
                    notes.push(format!(
                        "{label}: its record with each invocation from the model's values failed ({e}): the measurement as it ran stands"
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    // Its kernels by step only where they are its measurement's: not where it was measured
    // again from the model's values, all launches restoring, which records no steps.
    if each.is_none() && restored.is_some() {
        if let Some(l) = launches_verified.as_mut() {
            l.by_step.clear();
        }
    }
    let restored = restored.or(each.map(|(m, r)| (m, values.clone(), r)));
    let (mut measured, values, restoring) = match restored {
        Some((m, values, r)) => (m, values, Some(r)),
        None => (first, values, None),
    };
    // A restoring measurement's own kernels where recorded, else the first graph's.
    // Its record in the model's cache state stays with whichever record stands.
    let in_model_cache = launches_verified.as_ref().and_then(|l| l.in_model_cache);
    let launches_verified = measured
        .launches_verified
        .take()
        .or(launches_verified)
        .map(|mut l| {
            l.in_model_cache = l.in_model_cache.or(in_model_cache);
            l
        });
    const RAN_AWAY_NOTE: &str = "its repeats alone drove its data";
    if let Some(v) = values.as_ref().filter(|v| v.ran_away()) {
        if notes.iter().filter(|n| n.contains(RAN_AWAY_NOTE)).count() < 12 {
            let how = if restoring.is_some() {
                "even from the model's values at every launch"
            } else {
                "as it ran"
            };
            notes.push(format!(
                "unit {} {}: {RAN_AWAY_NOTE} to zeros ({:.0} → {:.0} %) or non-finite values ({:.1} → {:.1} %) {how}: its energy is that of values the model never held",
                u.id, u.label, v.zero_before_pct, v.zero_after_pct, v.nonfinite_before_pct, v.nonfinite_after_pct
            ));
        }
    }
    let time = Stats::of(&measured.samples).scaled(f64::from(unroll));
    let mut row = unit_row(u, "ok".into());
    row.energy_at_duty = measured.energy_at_duty;
    row.invocations = invocations;
    row.unroll = unroll;
    row.launches = measured.samples.len();
    row.predicted_us = Some(time.mean * invocations as f64);
    row.predicted_energy_j = measured
        .energy
        .as_ref()
        .map(|e| e.per_item_j.mean * invocations as f64);
    row.time_us = Some(time);
    row.energy = measured.energy;
    row.measured_start_unix_ms = Some(measured.timed_start);
    row.measured_end_unix_ms = Some(measured.timed_end);
    row.launches_verified = launches_verified;
    row.values = values;
    row.restoring = restoring;
    if let Some(t) = tail {
        setup.probe = Some(t.probe);
        setup.join = Some(t.series.join_ms);
        setup.enqueue_timed = Some(t.enqueue);
        setup.to_series = Some(t.to_series);
        setup.queued = Some(t.series.queued_ms);
        setup.drain = Some(t.series.drain_ms);
        setup.after = Some(ms_since(t.returned));
    }
    row.setup_ms = Some(setup);
    Ok(row)
}

/// A unit whose launch reads at one invocation what another invocation of it wrote
/// (`spans`: what every step reads and writes; `launch_steps`: the step of each of the
/// launch's invocations) recorded twice more (CUPTI), each invocation after two copies of
/// the bytes it reads that the launch writes: out of the image into scratch memory, then
/// into the image again, from the scratch (its values as it runs: the control) or from the
/// image's snapshot (the model's values). The two launches differ only in the values the
/// invocations read, so their kernels' difference is what the values change; the copies'
/// own effect on the kernels (their bytes through L2) is in both. Where that difference
/// reaches [`EACH_INVOCATION_CHANGE`], the unit is measured so ([`EachInvocation`]): its
/// time as it ran (`first`) plus the difference per invocation, its kernels as it ran
/// (`as_it_ran`, by step) plus the difference at each step, its energy from launches with
/// one copy before each invocation (from the snapshot) less the copies' alone. `None`
/// where the values changed its kernels less, or they could not be told apart.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn measure_each_invocation(
    u: &PlanUnit,
    spans: &[kc_core::plan::step_values::StepSpans],
    launch_steps: &[u32],
    enqueue_invocation: &dyn Fn(&Gpu, u32) -> Result<(), ExecError>,
    label: &str,
    energy_target: f64,
    (as_it_ran, values, first): (
        &kc_core::results::fidelity::UnitLaunches,
        Option<&UnitValues>,
        &Measured,
    ),
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<(Measured, UnitRestoring)>, ExecError> {
    use crate::device::ImageAt;
    // A unit whose own kernels are copies could not be told apart from the copies.
    if u.kernels
        .iter()
        .any(|k| kc_core::results::fidelity::is_runtime_copy(k))
    {
        return Ok(None);
    }
    let reads: Vec<Vec<(u64, u64)>> =
        kc_core::plan::step_values::reads_the_launch_writes(spans, launch_steps)
            .iter()
            .map(|r| kc_core::plan::spans::merge(r, RESTORE_MERGE_GAP))
            .collect();
    // Each invocation's bytes, and the launch's: what the scratch and the copies hold.
    let sizes: Vec<u64> = reads.iter().map(|r| r.iter().map(|s| s.1).sum()).collect();
    let most = sizes.iter().copied().max().unwrap_or(0);
    let total: u64 = sizes.iter().sum();
    let spans: usize = reads.iter().map(Vec::len).sum();
    if most == 0 {
        return Ok(None);
    }
    let unroll = launch_steps.len() as u32;
    // The control's copies: where `--each-invocation-cold-control` asks and the scratch
    // fits, each invocation's own values are kept beforehand, once, from a launch as it
    // runs (the second of two, as the timed launches run after others), so that its copy
    // reads them from memory as the model's copy reads the snapshot; else each
    // invocation's reads are copied out to the scratch just before, and back.
    // Where the scratch would not fit, libtorch's cached blocks are let go first: the image
    // and its snapshot already hold most of the GPU's memory on a large training step
    // (Qwen3-MoE's fused AdamW, 14 GiB of reads, did not fit, session 44).
    if gpu.free_memory_bytes()? <= most + (1 << 30) {
        gpu.release_cached_memory();
    }
    let cold = opts.each_invocation_cold_control && gpu.free_memory_bytes()? / 4 > total;
    let scratch = gpu.alloc_scratch(if cold { total } else { most })?;
    // Each invocation's place in the scratch (cold) or the scratch's start (warm).
    let base: Vec<u64> = sizes
        .iter()
        .scan(0u64, |at, &size| {
            let b = if cold { *at } else { 0 };
            *at += size;
            Some(b)
        })
        .collect();
    let out_to_scratch = |gpu: &Gpu, i: usize| -> Result<(), ExecError> {
        let mut at = base[i];
        for &(off, len) in &reads[i] {
            gpu.enqueue_image_copy(ImageAt::Image(off), ImageAt::Scratch(scratch + at), len)?;
            at += len;
        }
        Ok(())
    };
    let kept = match cold {
        false => Ok(()),
        true => (|| {
            let save = |gpu: &Gpu| -> Result<(), ExecError> {
                for i in 0..reads.len() {
                    out_to_scratch(gpu, i)?;
                    enqueue_invocation(gpu, i as u32)?;
                }
                Ok(())
            };
            let graph = gpu.capture(save)?;
            gpu.restore_arena_snapshot()?;
            gpu.launch(&graph)?;
            gpu.launch(&graph)?;
            gpu.synchronize()
        })(),
    };
    // The two recorded launches: each invocation's reads from its own values (`model_values`
    // false) or from the snapshot.
    let record =
        |gpu: &mut Gpu, model_values: bool, notes: &mut Vec<String>| -> Result<_, ExecError> {
            let enqueue = |gpu: &Gpu| -> Result<(), ExecError> {
                for (i, r) in reads.iter().enumerate() {
                    if !cold {
                        out_to_scratch(gpu, i)?;
                    }
                    let mut at = base[i];
                    for &(off, len) in r {
                        let from = match model_values {
                            true => ImageAt::Snapshot(off),
                            false => ImageAt::Scratch(scratch + at),
                        };
                        gpu.enqueue_image_copy(from, ImageAt::Image(off), len)?;
                        at += len;
                    }
                    enqueue_invocation(gpu, i as u32)?;
                }
                Ok(())
            };
            let graph = gpu.capture(enqueue)?;
            gpu.restore_arena_snapshot()?;
            gpu.warm(&graph)?;
            Ok(verify_launches(
                u,
                &graph,
                unroll,
                true,
                Some(launch_steps),
                opts,
                gpu,
                notes,
            ))
        };
    let recorded = kept
        .and_then(|_| record(gpu, false, notes))
        .and_then(|c| Ok((c, record(gpu, true, notes)?)));
    gpu.free_scratch(scratch)?;
    // A record that failed is named in the notes by `verify_launches`.
    let (Some(control), Some(model)) = recorded? else {
        return Ok(None);
    };
    let counts = [&control, &model].map(|l| l.whole_per_invocation());
    if counts != [as_it_ran.whole_per_invocation(); 2] || counts[0].is_none() {
        notes.push(format!(
            "{label}: after copies before each invocation it launched {:.2} and {:.2} kernels an invocation (its own values, the model's), {:.2} as it ran: the measurement as it ran stands",
            control.launched_per_invocation, model.launched_per_invocation, as_it_ran.launched_per_invocation
        ));
        return Ok(None);
    }
    let change = model.kernels_us - control.kernels_us;
    let least = (EACH_INVOCATION_CHANGE * as_it_ran.kernels_us).max(EACH_INVOCATION_CHANGE_US);
    if change.abs() < least {
        // Said of a long unit (a fused optimizer step), so that one checked and left as it
        // ran is told from one never checked; short ones (Swin-B's 90 fills and copies,
        // session 44) would bury the notes.
        if as_it_ran.kernels_us >= EACH_INVOCATION_NOTE_US {
            notes.push(format!(
            "{label}: an invocation of its launch read another's result; after copies before each invocation its kernels took {:.2} us over the model's values, {:.2} over its own ({:.2} as it ran): under {:.0} % and {} us apart, measured as it ran",
            model.kernels_us,
            control.kernels_us,
            as_it_ran.kernels_us,
            100.0 * EACH_INVOCATION_CHANGE,
            EACH_INVOCATION_CHANGE_US,
            ));
        }
        return Ok(None);
    }
    // Its kernels as it ran, at each step and busy, plus what the model's values change.
    let mut launches = as_it_ran.clone();
    launches.kernels_us += change;
    if let (Some(b), Some(mb), Some(cb)) =
        (launches.busy_us.as_mut(), model.busy_us, control.busy_us)
    {
        *b += mb - cb;
    }
    for s in &mut launches.by_step {
        if let (Some(m), Some(c)) = (model.at_step(s.step), control.at_step(s.step)) {
            s.kernels_us += m.kernels_us - c.kernels_us;
            s.busy_us += m.busy_us - c.busy_us;
        }
    }
    // Its energy: launches with one copy before each invocation, from the snapshot, less
    // those copies alone.
    let copies = |gpu: &Gpu| -> Result<(), ExecError> {
        for r in reads.iter().filter(|r| !r.is_empty()) {
            gpu.enqueue_snapshot_spans(0, r)?;
        }
        Ok(())
    };
    let restoring = |gpu: &Gpu| -> Result<(), ExecError> {
        for (i, r) in reads.iter().enumerate() {
            if !r.is_empty() {
                gpu.enqueue_snapshot_spans(0, r)?;
            }
            enqueue_invocation(gpu, i as u32)?;
        }
        Ok(())
    };
    let what = "copies from the snapshot";
    let Some(alone) = copies_alone(
        gpu,
        en,
        &copies,
        label,
        what,
        energy_target,
        first,
        opts,
        notes,
    )?
    else {
        return Ok(None);
    };
    let copy = alone.besides();
    let graph = gpu.capture(restoring)?;
    gpu.restore_arena_snapshot()?;
    gpu.warm(&graph)?;
    let what = format!("{label} with each invocation from the model's values");
    let mut m = time_and_energy(
        gpu,
        en,
        u,
        &graph,
        &restoring,
        &what,
        unroll,
        energy_target,
        Some(copy),
        None,
        opts,
        notes,
    )?;
    let per = f64::from(unroll);
    let less_copies_us = Stats::of(&m.samples).mean / per;
    // The time is the launch as it ran with the values' change to its kernels: the
    // copies interleaved add node gaps that taking their time alone off does not cancel.
    m.samples = first.samples.iter().map(|t| t + change * per).collect();
    m.timed_start = first.timed_start;
    m.timed_end = first.timed_end;
    m.launches_verified = Some(launches);
    let as_it_ran_us = Stats::of(&first.samples).mean / per;
    notes.push(format!(
        "{label}: an invocation of its launch read another's result: after copies before each invocation its kernels took {:.2} us over the model's values, {:.2} over its own ({:.2} as it ran; {:.1} MiB a launch in {} copies, {:.1} us alone): time {:.2} → {:.2} us an invocation ({:.2} by the copies' time taken off)",
        model.kernels_us,
        control.kernels_us,
        as_it_ran.kernels_us,
        total as f64 / (1u64 << 20) as f64,
        spans,
        alone.time.mean,
        as_it_ran_us,
        as_it_ran_us + change,
        less_copies_us,
    ));
    let restoring = UnitRestoring {
        bytes: total,
        spans,
        copy_us: alone.time.mean,
        copy_energy_j: alone.j,
        copy_energy_sem_j: alone.sem_j,
        copy_one_window: alone.one_window,
        values_as_it_ran: values.cloned().unwrap_or_default(),
        as_it_ran_us,
        as_it_ran_energy_j: first.energy.as_ref().map(|e| e.per_item_j.mean),
        asked: false,
        found_after_timing: false,
        each_invocation: Some(EachInvocation {
            kernels_as_it_ran_us: as_it_ran.kernels_us,
            own_values_kernels_us: control.kernels_us,
            model_values_kernels_us: model.kernels_us,
            less_copies_us,
            cold_control: cold,
        }),
    };
    Ok(Some((m, restoring)))
}

/// What `u`'s graph (`unroll` invocations a launch) ran, with `--verify`: launches back to
/// back, as it is timed, the first (from an idle GPU) left out (CUPTI). A restoring graph
/// (`restoring`) starts with copies from the snapshot, which the driver may run as its
/// own copy kernels: those are left out, and where the unit's own kernels are such
/// copies too (they could not be told apart) nothing is returned. With `launch_steps` (the
/// step of each invocation of a launch) its kernels are told apart by step too.
#[allow(clippy::too_many_arguments)]
pub(super) fn verify_launches(
    u: &PlanUnit,
    graph: &crate::device::Graph,
    unroll: u32,
    restoring: bool,
    launch_steps: Option<&[u32]>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    notes: &mut Vec<String>,
) -> Option<kc_core::results::fidelity::UnitLaunches> {
    use kc_core::results::fidelity::is_runtime_copy;
    let own_copies = u.kernels.iter().any(|k| is_runtime_copy(k));
    if !opts.verify || (restoring && own_copies) {
        return None;
    }
    match super::record_launches_with_copies(gpu, graph) {
        Ok((r, copies)) => {
            let mut l = launches_of(u, r, unroll, restoring, launch_steps);
            // A restoring graph holds the snapshot's copies beside the unit's own.
            if !restoring {
                l.copies_per_invocation = Some(copies / f64::from(unroll.max(1)));
                l.traced_copies_per_invocation =
                    u.kernels.iter().filter(|k| is_runtime_copy(k)).count() as u64;
            }
            Some(l)
        }
        Err(e) => {
            notes.push(format!("unit {} --verify: {e}", u.id));
            None
        }
    }
}

/// Invocations at least, and at most, of a unit's launch in the model's cache state: a
/// cycle of its steps where that lies between, never more than its own unroll.
const MODEL_CACHE_INVOCATIONS: (usize, usize) = (16, 256);

/// `u` recorded in the model's cache state (CUPTI): a launch of its steps in turn, each
/// invocation after L2 is turned over (with as many dirty bytes as the model's steps
/// before it leave) and the reads the model left in L2 touched again,
/// the nearest in the model last (written back where the model's last touch wrote them);
/// where the model last ran the step's code more than L2 of bytes before (by default), a
/// kernel of long straight-line code on every SM first, so that the unit's code comes from
/// memory; the touches' and that kernel's records left out. `None` where its launch ran no
/// kernels of its own.
#[allow(clippy::too_many_arguments)]
fn record_in_model_cache(
    plan: &Plan,
    u: &PlanUnit,
    df: &kc_core::plan::types::PlanDataflow,
    steps: &[u32],
    unroll: u32,
    touches: &kc_core::plan::cache_state::ModelTouches,
    leads: Option<&Leads>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
) -> Result<Option<kc_core::results::fidelity::ModelCacheKernels>, ExecError> {
    use kc_core::plan::cache_state::ReadReuse;
    use kc_core::results::fidelity::{CodeCache, RecordLeadIns, ReuseDistance};
    gpu.load_touch()?;
    let l2 = gpu.facts.l2_bytes;
    let (least, most) = MODEL_CACHE_INVOCATIONS;
    let n = steps.len().clamp(least, most).min(unroll.max(1) as usize);
    // The launch runs its steps in turn: each distinct step's state is worked out once.
    let cycle = &steps[..n.min(steps.len())];
    let mut c = kc_core::results::fidelity::ModelCacheKernels {
        invocations: n as u32,
        l2_bytes: l2,
        distance: Some(opts.model_cache_distance),
        ..Default::default()
    };
    // Each step's reads the model left in L2 (fewer bytes than L2 between them and their
    // last touch), the farthest first, and the operands the executor holds outside the
    // image that it leaves there (address, bytes); the dirty bytes the steps before it
    // leave in L2; and its reads left to memory (held operands among them) and operands
    // outside the image, to be counted.
    struct AtStep<'a> {
        step: u32,
        warm: Vec<ReadReuse>,
        held: Vec<(u64, u64)>,
        cold_bytes: u64,
        cold_reads: u32,
        dirty: u64,
        outside: u32,
        evict_code: bool,
        /// The model's steps run before the invocation (`--model-cache-lead-ins`).
        lead: &'a [u32],
        /// Whether its and their integer and boolean reads take the lead-ins' results
        /// (`--model-cache-lead-ins producers`, none of them writing integers in place)
        /// rather than their stand-ins.
        reads_from_producers: bool,
    }
    let each: Vec<AtStep> = cycle
        .iter()
        .map(|&st| {
            let lead = leads
                .and_then(|leads| leads.get(&st))
                .map_or(&[][..], Vec::as_slice);
            let reads = match opts.model_cache_distance {
                ReuseDistance::Distinct => touches.reads_at_distinct(st, l2.saturating_mul(2)),
                ReuseDistance::Summed => touches.reads_at(st, l2.saturating_mul(2)),
            };
            let (mut warm, cold): (Vec<ReadReuse>, Vec<ReadReuse>) =
                reads.into_iter().partition(|r| r.bytes_between < l2);
            warm.sort_by_key(|r| std::cmp::Reverse(r.bytes_between));
            let held = if opts.model_cache_touches_held {
                gpu.held_outside_image(u, st)
            } else {
                Vec::new()
            };
            let (held, held_cold): (Vec<_>, Vec<_>) =
                held.into_iter().partition(|&(slot, _, _)| {
                    kc_core::plan::cache_state::held_operand_distance(
                        plan, df, touches, u, st, slot, l2,
                    ) < l2
                });
            AtStep {
                step: st,
                warm,
                held: held
                    .into_iter()
                    .map(|(_, ptr, bytes)| (ptr, bytes))
                    .collect(),
                cold_bytes: cold.iter().map(|r| r.span.1).sum::<u64>()
                    + held_cold.iter().map(|h| h.2).sum::<u64>(),
                cold_reads: (cold.len() + held_cold.len()) as u32,
                dirty: (touches.written_share_before(st, l2) * l2 as f64) as u64,
                outside: kc_core::plan::cache_state::operands_outside_image(plan, df, u, st),
                lead,
                reads_from_producers: opts.model_cache_lead_ins == RecordLeadIns::Producers
                    && !lead
                        .iter()
                        .any(|&p| schedule::step_writes_integers(plan, p)),
                evict_code: match opts.model_cache_code {
                    CodeCache::Far => {
                        kc_core::plan::cache_state::code_distance(plan, touches, st, l2) >= l2
                    }
                    CodeCache::Evicted => true,
                    CodeCache::Kept => false,
                },
            }
        })
        .collect();
    if each.iter().any(|s| s.evict_code) {
        gpu.load_code_evict()?;
    }
    if opts.model_cache_tlb_evicted {
        gpu.load_tlb_turnover()?;
    }
    if opts.model_cache_smem_predecessor {
        gpu.load_carveout()?;
    }
    let (mut outside, mut held, mut code_evicted) = (0, 0, 0);
    for s in each.iter().cycle().take(n) {
        code_evicted += u32::from(s.evict_code);
        c.warm_reads += s.warm.len() as u32;
        c.warm_bytes += s.warm.iter().map(|r| r.span.1).sum::<u64>();
        c.cold_reads += s.cold_reads;
        c.cold_bytes += s.cold_bytes;
        c.dirty_bytes += s.dirty;
        outside += s.outside;
        held += s.held.iter().map(|h| h.1).sum::<u64>();
    }
    c.outside_image_operands = Some(outside);
    c.outside_image_touched_bytes = opts.model_cache_touches_held.then_some(held);
    c.held_written =
        (opts.model_cache_held_written && opts.model_cache_touches_held).then_some(true);
    c.lead_in_steps = leads.map(|_| {
        each.iter()
            .cycle()
            .take(n)
            .map(|s| s.lead.len() as u32)
            .sum()
    });
    c.lead_in_reads_from_producers =
        (leads.is_some() && opts.model_cache_lead_ins == RecordLeadIns::Producers).then(|| {
            each.iter()
                .cycle()
                .take(n)
                .filter(|s| s.reads_from_producers)
                .count() as u32
        });
    c.held_on_sms = opts
        .model_cache_held_on_sms
        .filter(|_| opts.model_cache_touches_held)
        .map(|(lo, hi)| [lo, hi]);
    c.small_predecessor = opts.model_cache_small_predecessor.then_some(true);
    c.code = Some(opts.model_cache_code);
    c.code_evicted_invocations = Some(code_evicted);
    c.tlb_evicted = opts.model_cache_tlb_evicted.then_some(true);
    c.smem_predecessor = opts.model_cache_smem_predecessor.then_some(true);
    let enqueue = |gpu: &Gpu| -> Result<(), ExecError> {
        for s in each.iter().cycle().take(n) {
            // The diagnostic's pages first, so that every touch after it finds its own.
            if opts.model_cache_tlb_evicted {
                gpu.turn_tlb_over(0)?;
            }
            // Before L2 is turned over, so that it is turned over under the code-evicting
            // kernel's code as under the unit's: an SM's instruction caches and L2 both
            // hold the unit's code after its repeats alone, where the model ran more than
            // L2 of bytes since (session 53's call 1: Mixtral's routing `sum` ran 45 %
            // under kc's graph with its code kept, within 0.6 % with it evicted).
            if s.evict_code {
                gpu.evict_code(0)?;
            }
            gpu.turn_l2_over(0, s.dirty)?;
            for r in &s.warm {
                gpu.touch_image(0, r.span.0, r.span.1, r.last_touch_wrote)?;
            }
            // Last, what the unit reads outside the image that the model leaves in L2:
            // an index or mask the plan binds to a step less than L2 of bytes before
            // (T5's relative-position buckets ran 20-50 % over kc's graph with L2 turned
            // over under them, session 51). Those made once an iteration, or kept on
            // recorded values, stay evicted: touched, LLaMA's `copy_` and
            // `nll_loss_forward` and Mistral's `where` ran 13-30 % under kc's graph
            // (session 52, call 2).
            for &(ptr, bytes) in &s.held {
                // SAFETY: the back end keeps these tensors while the step stays prepared,
                // which it does until the Gpu drops, after this graph.
                let write = opts.model_cache_held_written;
                match opts.model_cache_held_on_sms {
                    // SAFETY: as above.
                    Some(sms) => unsafe { gpu.touch_held_on_sms(0, ptr, bytes, write, sms)? },
                    None => unsafe { gpu.touch_held(0, ptr, bytes, write)? },
                }
            }
            if opts.model_cache_small_predecessor {
                gpu.touch_scratch_sector(0)?;
            }
            if opts.model_cache_smem_predecessor {
                gpu.fill_shared_memory(0)?;
            }
            // The model's steps leading up to the invocation, then the marker its records
            // are told from theirs by. Their and the unit's integer and boolean reads stay
            // on their stand-ins (the model's values), as the units after their lead-ins
            // read them, unless asked otherwise: an in-place lead-in run before every
            // invocation would hand the unit indices it bumped again each time (T5's
            // bucket `add_` and BERT's gather ran out of bounds in session 54's call 5).
            if leads.is_some() {
                gpu.steer_reads(match s.reads_from_producers {
                    true => SteeringReads::FromProducers,
                    false => SteeringReads::AsAlone,
                });
                for &p in s.lead {
                    let unit = &plan.units[plan.steps[p as usize].unit as usize];
                    gpu.enqueue(unit, 0, At::step(df, p))?;
                }
                gpu.mark(0)?;
            }
            gpu.enqueue(u, 0, At::step(df, s.step))?;
        }
        Ok(())
    };
    let graph = gpu.capture(enqueue);
    // Back to the units alone's way (from producers, which a unit alone has none of).
    if leads.is_some() {
        gpu.steer_reads(SteeringReads::FromProducers);
    }
    let graph = graph?;
    gpu.warm(&graph)?;
    let r = match leads {
        Some(_) => super::record_launches_after_markers(gpu, &graph)?,
        None => super::record_launches_leaving_out_touches(gpu, &graph)?,
    };
    let l = launches_of(u, r, n as u32, false, None);
    if l.launched_per_invocation <= 0.0 {
        return Ok(None);
    }
    c.kernels_us = l.kernels_us;
    c.busy_us = l.busy_us;
    Ok(Some(c))
}

/// `u`'s kernels in recorded launches `r` of its graph (`unroll` invocations a launch),
/// set against its traced kernels; a restoring graph's copies from the snapshot left out,
/// and with `launch_steps` its kernels told apart by step.
pub(super) fn launches_of(
    u: &PlanUnit,
    r: kc_core::results::fidelity::RecordedLaunches,
    unroll: u32,
    restoring: bool,
    launch_steps: Option<&[u32]>,
) -> kc_core::results::fidelity::UnitLaunches {
    use kc_core::results::fidelity::is_runtime_copy;
    let traced: Vec<&str> = u
        .kernels
        .iter()
        .map(String::as_str)
        .filter(|k| !is_runtime_copy(k))
        .collect();
    let own: Vec<_> = r
        .records
        .into_iter()
        .filter(|k| !restoring || !is_runtime_copy(&k.name))
        .collect();
    let mut l = kc_core::results::fidelity::unit_launches(&traced, &own, unroll * r.launches);
    if let (Some(steps), Some(k)) = (launch_steps, l.whole_per_invocation()) {
        l.by_step = kc_core::results::fidelity::kernels_by_step(&own, k, steps, r.launches)
            .unwrap_or_default();
    }
    l
}

/// The invocations one launch of `u`'s graph runs, where a cycle of its invocations holds
/// `cycle` (its steps in context, its rotated copies cold): about `unroll_target_ns` of
/// traced time, and at least one cycle, up to `max_unroll`.
fn unroll_of(u: &PlanUnit, cycle: u32, opts: &ExecOptions) -> u32 {
    schedule::unroll_count(u.traced_ns_mean(), opts.unroll_target_ns, opts.max_unroll)
        .max(cycle.min(opts.max_unroll))
}

/// Milliseconds since `t`.
fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// One measurement of a unit's graph: its launches' times, microseconds (less a restoring
/// launch's copy), the host clock around them, its energy per invocation and, where its
/// windows met the power cap, its energy at a duty cycle.
struct Measured {
    samples: Vec<f64>,
    timed_start: i64,
    timed_end: i64,
    energy: Option<EnergySummary>,
    energy_at_duty: Option<DutyEnergy>,
    /// What the measured graph ran (CUPTI, `--verify`), where it was recorded apart from
    /// the unit's first graph: a restoring graph's own kernels.
    launches_verified: Option<kc_core::results::fidelity::UnitLaunches>,
    /// The look after the timed launches ended the measurement there: no windows.
    windows_skipped: bool,
    /// Its energy series, where it ran ([`SeriesTimes`]).
    tail: Option<SeriesTimes>,
}

/// A unit's energy series as the host ran it, ms (`UnitSetupMs`): the probe's launches,
/// the timed launches' enqueue, from it to the series' wait for its first tick, the
/// series' own end ([`super::SeriesTail`]); and when the series returned.
#[derive(Clone, Copy)]
struct SeriesTimes {
    probe: f64,
    enqueue: f64,
    to_series: f64,
    series: super::SeriesTail,
    returned: std::time::Instant,
}

/// The model's steps leading up to each step, oldest first, by step
/// ([`schedule::lead_ins_at_places`]).
type Leads = HashMap<u32, Vec<u32>>;

/// A look at a unit's values after its timed launches: `true` ends its measurement there.
type Look<'a> = dyn FnMut(&mut Gpu) -> Result<bool, ExecError> + 'a;

/// Times the unit's `graph` (`enqueue_unit` captured: `unroll` invocations, after the
/// restoring `copy` where given) until enough GPU time is measured, then its energy
/// windows, and where they met the power cap its energy at a duty cycle; the copy's own
/// time and energy are taken off each launch. Where given, `look` runs once the timed
/// launches have ended (or the head of them that ends before the counter's next tick,
/// less the look's margin and the seconds the look is said to take), before the windows:
/// `true` ends the measurement there, its time without windows (`windows_skipped`).
#[allow(clippy::too_many_arguments)]
fn time_and_energy(
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    u: &PlanUnit,
    graph: &crate::device::Graph,
    enqueue_unit: &dyn Fn(&Gpu) -> Result<(), ExecError>,
    label: &str,
    unroll: u32,
    energy_target: f64,
    copy: Option<Besides>,
    look: Option<(&mut Look<'_>, f64)>,
    opts: &ExecOptions,
    notes: &mut Vec<String>,
) -> Result<Measured, ExecError> {
    let collective = matches!(u.call, UnitCall::Collective { .. });
    let probe_from = std::time::Instant::now();
    let probe = Stats::of(&gpu.time_launches(graph, 3)?);
    let probe_ms = ms_since(probe_from);
    let mut launches = ((opts.min_unit_time_s * 1e6 / probe.mean.max(0.001)).ceil() as usize)
        .clamp(10, opts.runs.max(10) * 20);
    // Every rank times a collective the same number of times (the job's most).
    if let (true, Some(job)) = (collective, en.job.as_mut()) {
        launches = job.agree_max(&format!("unit {} launches", u.id), launches as u64)? as usize;
    }
    // The timed launches go first and the energy windows' launches queue behind them, so
    // the wait for the counter's first tick overlaps the timing.
    let mut timed_start = unix_ms_now();
    // Where `look` is given, the timed launches are read and looked at before the windows
    // start. Looked at after all of them, the windows began a tick later than behind the
    // timing (Qwen2's step graph, session 32: 43 of its 120 units took four ticks, not
    // three, 4.3 s of its 64 s). So the look comes after the head of them that ends before
    // the counter's next tick, less the look's margin, where that head is long enough to
    // tell; the rest are timed behind it, as a unit that is not looked at is.
    let head = match &look {
        Some((_, takes_s)) => crate::energy::head_before_tick(
            en.until_next_tick_s(),
            LOOK_MARGIN_S + takes_s,
            probe.mean,
            launches,
        ),
        None => None,
    };
    let enqueue_from = std::time::Instant::now();
    // Without a look, only the timed launches' events now, the launches inside the energy
    // series, where the ticks are watched (`SeriesHow::timed`).
    let timed = match look {
        None => gpu.begin_timed(launches)?,
        Some(_) => gpu.enqueue_timed(graph, head.unwrap_or(launches))?,
    };
    let enqueue_ms = ms_since(enqueue_from);
    // The head's samples, where the rest were timed behind them.
    let mut head_samples = Vec::new();
    // `pending` holds the timed launches' samples, or the launches still to be read.
    let mut pending: Result<Vec<f64>, _> = match look {
        None => Err(timed),
        Some((look, _)) => {
            let mut samples = timed.read(gpu)?;
            if look(gpu)? {
                let timed_end = span_end(timed_start, &samples);
                less_copy(&mut samples, copy.unwrap_or_default());
                return Ok(Measured {
                    samples,
                    timed_start,
                    timed_end,
                    energy: None,
                    energy_at_duty: None,
                    launches_verified: None,
                    windows_skipped: true,
                    tail: None,
                });
            }
            match head {
                Some(n) => {
                    head_samples = samples;
                    Err(gpu.begin_timed(launches - n)?)
                }
                None => Ok(samples),
            }
        }
    };
    // A unit held down by the power cap is measured again at a duty cycle, which then
    // gives its energy: its windows back to back end after the first so held down (they
    // stay in the results, a diagnostic).
    let top = en.top_clock_mhz();
    let held_down = |w: &EnergyWindow| held_down_by_cap(w, top);
    let at_duty_after = opts.duty_energy && !collective;
    let mut series = None;
    let how = super::SeriesHow {
        per_launch_us: probe.mean,
        target_rel_sem: energy_target,
        stop_after: at_duty_after.then_some(&held_down as &dyn Fn(&EnergyWindow) -> bool),
        // A unit whose share of the model is small enough asks less of its energy than one
        // window's spread gives: a second window (a tick) would buy nothing it needs.
        one_window: true,
        // The timed launches still to run go ahead of the windows' launches, in the series.
        timed: pending.as_mut().err(),
        tail: Some(&mut series),
        ..Default::default()
    };
    let windows = en.series_how(gpu, graph, label, how, opts, notes)?;
    let tail = series.map(|series| SeriesTimes {
        probe: probe_ms,
        enqueue: enqueue_ms,
        to_series: series
            .began
            .saturating_duration_since(enqueue_from)
            .as_secs_f64()
            * 1e3,
        series,
        returned: std::time::Instant::now(),
    });
    let mut samples = match pending {
        Ok(s) => s,
        Err(timed) => {
            head_samples.extend(timed.read(gpu)?);
            head_samples
        }
    };
    // The timed launches ended before the windows' launches: their own span, not now.
    let mut timed_end = span_end(timed_start, &samples);
    // A few launches now and then take several times the others (seen on 0-3 units of a
    // model, in both orders of timing and energy): the mean would carry them into the
    // sum. Such a series is timed again, at most twice, and the steadiest kept; the
    // notes say so. Not a collective's: its launches need every rank, which would not all
    // time again.
    let retimes = if collective { 0 } else { RETIMES };
    for _ in 0..retimes {
        let s = Stats::of(&samples);
        if s.mean <= s.p50 * (1.0 + OUTLIER_SHARE) {
            break;
        }
        let again_start = unix_ms_now();
        let again = gpu.time_launches(graph, launches)?;
        let a = Stats::of(&again);
        notes.push(format!(
            "{label}: timed again, its launches' mean was {:.1} % over their median ({:.1} % again)",
            100.0 * (s.mean / s.p50 - 1.0),
            100.0 * (a.mean / a.p50 - 1.0)
        ));
        if a.mean / a.p50 < s.mean / s.p50 {
            samples = again;
            (timed_start, timed_end) = (again_start, unix_ms_now());
        }
    }
    // The graph's own launch (with any copy), for the energy windows.
    let launch_us = Stats::of(&samples).mean;
    let besides = copy.unwrap_or_default();
    less_copy(&mut samples, besides);
    // Windows whose clock the cap held down: the cap's reason alone also comes with a
    // unit's bursts past the limit at the clock the work asks for.
    let capped = windows
        .as_deref()
        .map_or(0, |w| w.iter().filter(|x| held_down(x)).count());
    let windows_alone = windows.as_ref().map_or(0, Vec::len);
    let mut energy = windows.map(|w| {
        en.summarise_with(w, label, launch_us, notes, |ws, first, idle| {
            energy_summary_besides(ws, first, idle, launch_us / 1e6, besides, f64::from(unroll))
        })
    });
    // A unit that alone drew past the power limit ran at a clock the model does not run it
    // at: its energy is measured again at a duty cycle that keeps the mean power under it.
    // `duty_energy_all` (a diagnostic) measures every unit so.
    let mut energy_at_duty = None;
    let at_duty = (capped > 0 || opts.duty_energy_all) && opts.duty_energy;
    if let (true, false, Some(alone)) = (at_duty, collective, &energy) {
        let alone_j = alone.per_item_j.mean;
        match duty_energy(
            gpu,
            en,
            enqueue_unit,
            label,
            launch_us,
            besides,
            unroll,
            energy_target,
            opts,
            notes,
        ) {
            Ok(Some((summary, mut duty))) => {
                duty.capped_windows = capped;
                duty.windows_alone = windows_alone;
                duty.alone_per_item_j = alone_j;
                energy = Some(summary);
                energy_at_duty = Some(duty);
            }
            Ok(None) => {}
            Err(e) if e.breaks_context() => return Err(e),
            Err(e) => {
                let _ = gpu.synchronize();
                notes.push(format!(
                    "{label}: its energy at a duty cycle could not be measured ({e}): the windows alone stand, at the power cap"
                ));
            }
        }
    }
    Ok(Measured {
        samples,
        timed_start,
        timed_end,
        energy,
        energy_at_duty,
        launches_verified: None,
        windows_skipped: false,
        tail,
    })
}

/// What a unit's look before its windows needs after the head of its timed launches,
/// besides its census (the census before the unit's timed launches stands for it):
/// enqueuing the rest, and the watching thread's first read of the counter (3-5 ms), all
/// before the tick, which is itself predicted from a tick seen 3-5 ms late. With 12 ms in
/// all, census included, 22 of ResNeXt-50's step's units still took four ticks
/// (session 33, call 4): their census took 1.9-11.3 ms, a median 6.3, against 0.5-5.1 ms
/// for those that made the tick. Adding the census to the margin bought nothing
/// measurable in session 34 (ResNeXt-50's units alone 51.4 s against 50.3 s; its plain
/// two-window units that took four ticks by their walls, 28 against 25).
const LOOK_MARGIN_S: f64 = 0.012;

/// When timed launches that started at `start` (unix ms) ended: their own span, however
/// long after them they were read.
fn span_end(start: i64, samples: &[f64]) -> i64 {
    start + (samples.iter().sum::<f64>() / 1000.0).round() as i64
}

/// Each launch's time less its restoring copy's own (`besides`; none: nothing taken off).
fn less_copy(samples: &mut [f64], besides: Besides) {
    for t in samples {
        *t -= besides.s * 1e6;
    }
}

/// The copies a restoring launch runs besides its unit, measured alone: their time per
/// launch and, where measured, their energy, its standard error over two windows or more,
/// or whether it was one window (the unit's own target: one window where its share asks no
/// more).
struct CopiesAlone {
    time: Stats,
    j: Option<f64>,
    sem_j: Option<f64>,
    one_window: bool,
}

impl CopiesAlone {
    /// What a restoring launch holds besides the unit, taken off its time and energy.
    fn besides(&self) -> Besides {
        Besides {
            j: self.j.unwrap_or(0.0),
            s: self.time.mean / 1e6,
        }
    }
}

/// Measures `copies` alone ([`CopiesAlone`]), named `what`; `None` (and a note) where
/// their energy could not be measured while the unit's as it ran (`first`) was or would
/// have been: the measurement as it ran then stands.
#[allow(clippy::too_many_arguments)]
fn copies_alone(
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    copies: &dyn Fn(&Gpu) -> Result<(), ExecError>,
    label: &str,
    what: &str,
    energy_target: f64,
    first: &Measured,
    opts: &ExecOptions,
    notes: &mut Vec<String>,
) -> Result<Option<CopiesAlone>, ExecError> {
    let name = format!("{label}'s {what}");
    let (time, energy) = en.alone(gpu, copies, &name, (energy_target, true), opts, notes)?;
    let j = energy.as_ref().map(|e| e.per_item_j.mean);
    if j.is_none() && (first.energy.is_some() || first.windows_skipped) {
        notes.push(format!(
            "{name} has no energy: the measurement as it ran stands"
        ));
        return Ok(None);
    }
    Ok(Some(CopiesAlone {
        time,
        j,
        sem_j: energy
            .as_ref()
            .filter(|e| e.per_item_j.n > 1)
            .map(|e| e.per_item_j.sem()),
        one_window: energy.as_ref().is_some_and(|e| e.per_item_j.n == 1),
    }))
}

/// Spans of the image closer than this are copied as one: a copy node costs a few
/// microseconds, 256 KiB about a tenth of a microsecond.
pub(super) const RESTORE_MERGE_GAP: u64 = 256 << 10;

/// A unit checked with each invocation from the model's values and left as it ran is named
/// in the notes where its kernels as it ran take at least this long, microseconds.
const EACH_INVOCATION_NOTE_US: f64 = 100.0;

/// The unit measured again with every launch starting from the model's values at its
/// places: the places of the steps one launch runs (`run`), copied back from the image's
/// snapshot at the head of the graph; the copy alone timed and measured first, and taken
/// off. Returns the measurement, the values at the unit's places (`at`) before and after
/// it, and what the results keep of both measurements; `None` where the copy's energy
/// could not be measured while the unit's was (the first measurement then stands).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn measure_restoring(
    plan: &Plan,
    u: &PlanUnit,
    df: &kc_core::plan::types::PlanDataflow,
    run: &[u32],
    at: &[(&PlanUnit, u32)],
    enqueue_unit: &dyn Fn(&Gpu) -> Result<(), ExecError>,
    label: &str,
    unroll: u32,
    energy_target: f64,
    (as_it_ran, first): (&UnitValues, &Measured),
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<(Measured, Option<UnitValues>, UnitRestoring)>, ExecError> {
    let spots: Vec<(u64, u64)> = run
        .iter()
        .flat_map(|&st| super::diagnose::step_spots(plan, u, &df.steps[st as usize]))
        .map(|(off, bytes, _)| (off, bytes))
        .collect();
    let spans = kc_core::plan::spans::merge(&spots, RESTORE_MERGE_GAP);
    let copies = |gpu: &Gpu| gpu.enqueue_snapshot_spans(0, &spans);
    let what = "copy from the snapshot";
    let Some(alone) = copies_alone(
        gpu,
        en,
        &copies,
        label,
        what,
        energy_target,
        first,
        opts,
        notes,
    )?
    else {
        return Ok(None);
    };
    let copy = alone.besides();
    let restoring_enqueue = |gpu: &Gpu| -> Result<(), ExecError> {
        gpu.enqueue_snapshot_spans(0, &spans)?;
        enqueue_unit(gpu)
    };
    let graph = gpu.capture(restoring_enqueue)?;
    gpu.restore_arena_snapshot()?;
    let before = census(plan, gpu, df, at, CENSUS_STEPS)?;
    gpu.warm(&graph)?;
    // Its kernels as it is now timed: the first graph's ran over the values its repeats
    // drove away (EfficientNet-V2-S's in-place SiLUs: 40 us of kernels a launch, where
    // restoring they took 24 us in all), and the prediction sets the round's kernels
    // and gaps against these.
    let launches_verified = verify_launches(u, &graph, unroll, true, None, opts, gpu, notes);
    let what = format!("{label} from the model's values");
    let mut m = time_and_energy(
        gpu,
        en,
        u,
        &graph,
        &restoring_enqueue,
        &what,
        unroll,
        energy_target,
        Some(copy),
        None,
        opts,
        notes,
    )?;
    m.launches_verified = launches_verified;
    let after = census(plan, gpu, df, at, CENSUS_STEPS)?;
    let values = before.zip(after).map(|(b, a)| unit_values(&b, &a));
    let per_item = |m: &Measured| Stats::of(&m.samples).mean / f64::from(unroll);
    let energy_of = |m: &Measured| m.energy.as_ref().map(|e| e.per_item_j.mean);
    let restoring = UnitRestoring {
        bytes: kc_core::plan::spans::total(&spans),
        spans: spans.len(),
        copy_us: alone.time.mean,
        copy_energy_j: alone.j,
        copy_energy_sem_j: alone.sem_j,
        copy_one_window: alone.one_window,
        values_as_it_ran: as_it_ran.clone(),
        as_it_ran_us: per_item(first),
        as_it_ran_energy_j: energy_of(first),
        asked: !as_it_ran.ran_away(),
        found_after_timing: first.windows_skipped,
        each_invocation: None,
    };
    let energy_words = match (energy_of(first), energy_of(&m)) {
        (Some(a), Some(b)) => format!(", energy {:.3} → {:.3} mJ", a * 1e3, b * 1e3),
        _ => String::new(),
    };
    notes.push(format!(
        "{label}: its repeats alone drove its data to zeros ({:.0} → {:.0} %) or non-finite values ({:.1} → {:.1} %): measured again with every launch starting from the model's values at its places ({:.1} MiB in {} copies from the snapshot, {:.1} us and {:.3} mJ alone, taken off): per invocation, time {:.2} → {:.2} us{energy_words}",
        as_it_ran.zero_before_pct,
        as_it_ran.zero_after_pct,
        as_it_ran.nonfinite_before_pct,
        as_it_ran.nonfinite_after_pct,
        restoring.bytes as f64 / (1u64 << 20) as f64,
        restoring.spans,
        alone.time.mean,
        copy.j * 1e3,
        restoring.as_it_ran_us,
        per_item(&m),
    ));
    Ok(Some((m, values, restoring)))
}

/// The unit's share of each launch when its energy is measured at a duty cycle, and the
/// share tried once more where its windows, once settled, were still held down by the
/// power cap. Before session 23 a half came first, and a third where windows at a half
/// saw the cap's reason: 62 of session 22's 71 capped units went on to a third. The
/// reason was the GPU bringing its clock back after the windows at the cap, and a unit's
/// own bursts past the limit (windows averaging 200-440 W raise it at 1965-1980 MHz);
/// settling windows and the clock ([`held_down_by_cap`]) now tell that apart. A third
/// keeps the spin's share, whose power is taken off, small.
const DUTY_SHARES: [f64; 2] = [1.0 / 3.0, 0.2];

/// A unit's launch at a duty cycle is timed from the feeder's batches inside its counted
/// windows ([`launch_from_batches`]): the launches its energy was measured over. Timing
/// eight launches after the windows instead (about 25 ms at a third, the way of session
/// 23) put a duty unit's last window 91-95 ms (median) before the next unit's timed
/// launches, against 58-62 ms after a unit alone, and the next unit's windows started a
/// tick later (200 ms against 100; ResNeXt-50's step, session 23, call 6). At least this
/// many batches (2 ms each) must lie inside the windows; with fewer, the eight launches
/// after them are timed.
const DUTY_MIN_BATCHES: usize = 8;
/// Launches timed after the windows where fewer than [`DUTY_MIN_BATCHES`] lie inside them.
const DUTY_TIMED_LAUNCHES: usize = 8;

/// A unit's energy at a duty cycle ([`DutyEnergy`]): its invocations (`enqueue_unit`) and a
/// spin after them in one graph, the unit `DUTY_SHARES[0]` of each launch (a fifth where
/// that was still held down by the power cap), timed and measured in windows; the spin's
/// power, measured once per run in windows of its own, is taken off, and so is `besides`
/// (what the unit's graph holds besides its invocations: a restoring launch's copy).
/// With `--duty-shares-both` both shares are measured, the one that is not the answer kept
/// beside it (`DutyEnergy::other_share`). `None` without a meter.
#[allow(clippy::too_many_arguments)]
pub(super) fn duty_energy(
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    enqueue_unit: &dyn Fn(&Gpu) -> Result<(), ExecError>,
    label: &str,
    unit_launch_us: f64,
    besides: Besides,
    unroll: u32,
    energy_target: f64,
    opts: &ExecOptions,
    notes: &mut Vec<String>,
) -> Result<Option<(EnergySummary, DutyEnergy)>, ExecError> {
    // The spin's power first: measuring it loads the spin kernel.
    let Some((spin_w, spin_sem_w)) = en.spin_power(gpu, opts, notes)? else {
        return Ok(None);
    };
    let mut last: Option<(EnergySummary, DutyEnergy)> = None;
    for share in DUTY_SHARES {
        let spin_ns = (DutyEnergy::spin_for_us(unit_launch_us, share) * 1000.0).round() as u64;
        let graph = gpu.capture(|gpu| {
            enqueue_unit(gpu)?;
            gpu.enqueue_spin(0, spin_ns)
        })?;
        gpu.warm(&graph)?;
        // After its windows at the cap the GPU brings its clock back over a few windows
        // (1665-1935 MHz in the first, ResNeXt-50's step): those that ran held down are
        // left out as settling, and the launch is timed inside the windows counted.
        let top = en.top_clock_mhz();
        let settled = |w: &EnergyWindow| !held_down_by_cap(w, top);
        let mut batches = Vec::new();
        let how = super::SeriesHow {
            // The series sizes its batches by the launch the graph was built to be.
            per_launch_us: unit_launch_us / share,
            target_rel_sem: energy_target,
            stop_after: None,
            settled: Some(&settled),
            batch_times: Some(&mut batches),
            // At least two: the duty's share is sized from them, and their spread is the
            // unit's (the pooled spread of one window is of windows back to back).
            one_window: false,
            timed: None,
            tail: None,
        };
        let what = format!("{label} at a {:.0} % duty", share * 100.0);
        let before = en.windows_so_far();
        let windows = en.series_how(gpu, &graph, &what, how, opts, notes)?;
        let settling = en.windows_so_far() - before;
        let Some(w) = windows else {
            return Ok(None);
        };
        let (launch_us, launch_batches) = match launch_from_batches(&batches, &w, DUTY_MIN_BATCHES)
        {
            Some(b) => (b.p50, b.n),
            None => (
                Stats::of(&gpu.time_launches(&graph, DUTY_TIMED_LAUNCHES)?).mean,
                0,
            ),
        };
        let duty_capped = w.iter().filter(|x| !settled(x)).count();
        // The spin waits on the global timer: it takes the time it was asked for at any
        // clock, while the unit runs faster here than alone at the cap (the launch less the
        // unit's graph alone, taken off before session 32, fell short of it).
        let spin_us = spin_ns as f64 / 1000.0;
        let summary = en.summarise_with(w, &what, launch_us, notes, |ws, first, idle| {
            let spin = spin_besides(spin_us / 1e6, spin_w);
            let all = spin.and(besides);
            energy_summary_besides(ws, first, idle, launch_us / 1e6, all, f64::from(unroll))
        });
        let duty = DutyEnergy {
            unit_share: share,
            launch_us,
            launch_batches,
            unit_launch_us,
            spin_w,
            spin_sem_w,
            duty_capped_windows: duty_capped,
            settling_windows: settling,
            spin_us: Some(spin_us),
            ..Default::default()
        };
        let done = duty_capped == 0;
        // With `--duty-shares-both`, the share after the answer, or the one the cap held
        // down before it, is kept beside the answer.
        let at_share = |s: &EnergySummary, d: &DutyEnergy| DutyAtShare {
            unit_share: d.unit_share,
            launch_us: d.launch_us,
            spin_us: d.spin_time_us(),
            per_item_j: s.per_item_j.mean,
            per_item_sem_j: s.per_item_j.sem(),
            duty_capped_windows: d.duty_capped_windows,
            settling_windows: d.settling_windows,
        };
        let measured = (summary, duty);
        last = match last.take() {
            // The answer stands (`--duty-shares-both`): this share is kept beside it.
            Some((s, mut d)) if d.duty_capped_windows == 0 => {
                d.other_share = Some(Box::new(at_share(&measured.0, &measured.1)));
                Some((s, d))
            }
            // The share before, held down by the cap, is kept beside this one where asked.
            Some((s, d)) if opts.duty_shares_both => {
                let (s_now, mut d_now) = measured;
                d_now.other_share = Some(Box::new(at_share(&s, &d)));
                Some((s_now, d_now))
            }
            _ => Some(measured),
        };
        if done && !opts.duty_shares_both {
            break;
        }
    }
    Ok(last)
}

/// The diagnostic's sentence over the units measured at both duty shares
/// (`--duty-shares-both`): the other share's energy against the answer's, and the spin's
/// power beside the unit over alone that the two read ([`UnitResult::duty_spin_excess_w`]);
/// `None` where no unit was.
fn duty_shares_note(rows: &[UnitResult]) -> Option<String> {
    let mut ratios = Vec::new();
    let mut excess = Vec::new();
    for r in rows {
        let (Some(d), Some(e)) = (r.energy_at_duty.as_ref(), r.energy.as_ref()) else {
            continue;
        };
        let Some(other) = d.other_share.as_deref() else {
            continue;
        };
        if e.per_item_j.mean > 0.0 {
            ratios.push(100.0 * (other.per_item_j / e.per_item_j.mean - 1.0));
        }
        excess.extend(r.duty_spin_excess_w());
    }
    if ratios.is_empty() {
        return None;
    }
    let r = Stats::of(&ratios);
    let spin = match Stats::of(&excess) {
        _ if excess.is_empty() => "no unit had both shares clear of the cap".to_string(),
        w => format!(
            "read as the spin drawing more beside the unit than alone, {:.1} W (median of {} units neither held down by the cap; {:.1} … {:.1} W)",
            w.p50,
            excess.len(),
            w.min,
            w.max
        ),
    };
    Some(format!(
        "{} units measured at both duty shares (--duty-shares-both): the other share's energy read {:+.1} % of the answer's (median; {:+.1} … {:+.1} %); {spin}",
        ratios.len(),
        r.p50,
        r.min,
        r.max
    ))
}

/// Gives every place of the memory image the model's values: the image's starting values,
/// then each step of `pass` once, in plan order on stream 0 (as the diagnosis replays
/// them), so that each place holds what its last writer in the model wrote (a unit's own
/// steps' values are given on top by [`super::step_values`]). The first call
/// keeps a snapshot of the image then, where a second image fits with
/// [`SNAPSHOT_HEADROOM`] to spare, and later calls copy it back: one device-to-device copy
/// instead of an eager pass of every step (about 0.4 s on a 100-unit plan). Results a back
/// end allocated outside the image keep what their last writer left either way; the
/// census reads the image only.
pub(super) fn restore_model_values(
    plan: &Plan,
    df: &kc_core::plan::types::PlanDataflow,
    gpu: &mut Gpu,
    pass: &[u32],
) -> Result<(), ExecError> {
    if gpu.has_arena_snapshot() {
        return gpu.restore_arena_snapshot();
    }
    run_model_pass(plan, df, gpu, pass, |_, _| Ok(()))?;
    gpu.snapshot_arena(df, SNAPSHOT_HEADROOM)?;
    Ok(())
}

/// One pass of the model's steps over the image: its starting values, then each step of
/// `pass` once, in plan order on stream 0, `before_step` enqueuing what must come before
/// a step on the same stream; waits for it.
pub(super) fn run_model_pass(
    plan: &Plan,
    df: &kc_core::plan::types::PlanDataflow,
    gpu: &mut Gpu,
    pass: &[u32],
    mut before_step: impl FnMut(&Gpu, u32) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    gpu.fill_arena(df)?;
    for &st in pass {
        before_step(gpu, st)?;
        let unit = &plan.units[plan.steps[st as usize].unit as usize];
        gpu.enqueue(
            unit,
            0,
            At::Step {
                step: st,
                places: &df.steps[st as usize],
            },
        )?;
    }
    gpu.synchronize()
}

/// Device memory a snapshot of the image must leave free: the units' graphs, the round's
/// and libtorch's own allocations come after it.
pub(super) const SNAPSHOT_HEADROOM: u64 = 4 << 30;

/// The census of the floating-point values at the places of at most `limit` of the
/// (unit, step) pairs `at`, spread evenly over them (a census is a sample, and its reads
/// are synchronous), or `None` where they hold no floating-point values.
pub(super) fn census(
    plan: &Plan,
    gpu: &Gpu,
    df: &kc_core::plan::types::PlanDataflow,
    at: &[(&PlanUnit, u32)],
    limit: usize,
) -> Result<Option<Census>, ExecError> {
    gpu.synchronize()?;
    let mut c = Census::default();
    let stride = at.len().div_ceil(limit.max(1)).max(1);
    for &(u, st) in at.iter().step_by(stride) {
        for (off, bytes, d) in super::diagnose::step_spots(plan, u, &df.steps[st as usize]) {
            c.add(&gpu.census_at(off, bytes, d)?);
        }
    }
    Ok((c.all > 0).then_some(c))
}

/// How many steps a unit's census samples at most.
const CENSUS_STEPS: usize = 8;

/// Two censuses of the same places as shares, before and after.
pub(super) fn unit_values(b: &Census, a: &Census) -> UnitValues {
    let pct = |n: u64, all: u64| 100.0 * n as f64 / all.max(1) as f64;
    UnitValues {
        sampled: a.all,
        zero_before_pct: pct(b.zero, b.all),
        zero_after_pct: pct(a.zero, a.all),
        nonfinite_before_pct: pct(b.nonfinite, b.all),
        nonfinite_after_pct: pct(a.nonfinite, a.all),
    }
}

/// `n` nodes over `unroll` invocations, per invocation ("1", "0.5").
fn fmt_per(n: usize, unroll: u32) -> String {
    let per = n as f64 / f64::from(unroll.max(1));
    if per.fract() == 0.0 {
        format!("{per:.0}")
    } else {
        format!("{per:.2}")
    }
}

/// Whether a diagnostic asked for (`asked`) runs: only with the model's values restorable
/// in a memory image (`image`) and outside jobs. [`diagnostic`] runs it on this, and the
/// results so far are checkpointed before it on this.
fn diagnostic_runs(
    asked: bool,
    image: Option<&kc_core::plan::types::PlanDataflow>,
    en: &super::Energy<'_>,
) -> bool {
    asked && image.is_some() && en.job.is_none()
}

/// Runs a diagnostic of the context cache where it is asked for (`asked`): only with the
/// model's values restorable in a memory image (`image`) and outside jobs, else a note
/// says why not. What the back ends issued goes to the notes; a failure that leaves the
/// context usable is named in the notes and the pass goes on, one that breaks it ends it.
fn diagnostic<T>(
    asked: bool,
    what: &str,
    image: Option<&kc_core::plan::types::PlanDataflow>,
    en: &mut super::Energy<'_>,
    gpu: &mut Gpu,
    notes: &mut Vec<String>,
    run: impl FnOnce(
        &kc_core::plan::types::PlanDataflow,
        &mut super::Energy<'_>,
        &mut Gpu,
        &mut Vec<String>,
    ) -> Result<T, ExecError>,
) -> Result<Option<T>, ExecError> {
    if !asked {
        return Ok(None);
    }
    let (Some(df), true) = (image, diagnostic_runs(asked, image, en)) else {
        notes.push(format!(
            "{what} not measured: they need the model's values restored in a memory image, outside jobs"
        ));
        return Ok(None);
    };
    let measured = run(df, en, gpu, notes);
    notes.extend(gpu.take_notes());
    match measured {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.breaks_context() => Err(e),
        Err(e) => {
            let _ = gpu.synchronize();
            notes.push(format!("{what} not measured: {e}"));
            Ok(None)
        }
    }
}
