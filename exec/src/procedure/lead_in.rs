//! Units after their lead-ins (the prediction's term of the units' producers; kc's default
//! where energy is measured, `--no-lead-in-units` skips it): every unit measured alone that
//! holds the first `--lead-in-share` of the units' energy (0.9 by default) is measured
//! once more with the model's steps leading up to each of its invocations ahead of it, as
//! the model runs it: back to the nearest of the 4 steps before it that shares a place with
//! it (most often the producer of its input), or the one step before it where none does
//! ([`kc_core::plan::schedule::lead_ins`]). Alone, an invocation reads its inputs at its
//! places from memory; in the model its producer has just run and left what it wrote in
//! L2. One launch runs the unit's invocations as its graph alone does, each after its
//! lead-ins where the launch does not end with them already; a second runs the lead-ins
//! alone, in the same order. The unit's time and energy after its lead-ins are the first's
//! less the second's, per invocation; the prediction takes the energy in place of alone.
//! The training steps' units alone overdraw the model by 4-9 % in energy (sessions 20-25);
//! on nine of the chart's models (session 35) the units so measured moved the prediction's
//! energy toward the model on eight (ConvNeXt-S's step +5.8 → +3.6 %, T5's step +4.3 →
//! −0.0 %, RegNetY in TF32 +3.3 → −0.4 %, Swin-B −3.8 → −1.4 %).
//!
//! Each launch's windows follow the unit's energy target as its windows alone do: where
//! the target asks no more than one window's spread (`--one-window-spread`), each launch
//! is measured over one window (from session 38), and the report gives both the run's
//! pooled spread of one window.
//!
//! With `--lead-in-kernels` (a diagnostic, from session 39) both launches are also recorded
//! with CUPTI ([`kc_core::results::fidelity::lead_in_kernels`]): the difference told apart
//! into the unit's own kernels, the lead-ins' kernels and the gaps. On Swin V2-S in TF32
//! the units' own kernels ran as alone where the difference read +3.8 %.
//!
//! Only the units that hold the energy are so measured
//! ([`kc_core::results::units_holding_energy_share`]): on ConvNeXt-S's training step the 40
//! of 154 units that held 84 % of it held all of the units' saving (session 34). At 0.9
//! (0.85 on ConvNeXt-S) the phase took 13-64 s of `kc run` on session 35's nine models,
//! where every unit took ConvNeXt-S's step 112 s (session 34).
//!
//! A unit that alone drew past the power limit was priced at a duty cycle
//! ([`super::isolated::duty_energy`]); both its launches here are measured at a duty cycle
//! too (from session 36), so that the difference is at the model's clock as the energy
//! alone it replaces is. Back to back they were held down by the cap, and such units kept
//! their energy alone: session 35's ConvNeXt-S and Wide ResNet-50-2 steps' heaviest units,
//! where their remaining overdraw sits.
//!
//! Invariant: both launches of a unit start from the model's values (restored before each
//! is timed and measured), run at the same places in the same order, and a unit's figures
//! are only ever the difference of the two; a unit without a lead-in, measured restoring,
//! or beyond the share asked for is left as it was alone, and a failure is named in the
//! notes.

use super::isolated::duty_energy;
use super::{measure_program, time_program, units_bar, Energy};
use crate::backends::{At, Gpu};
use crate::{ExecError, ExecOptions};
use kc_core::plan::schedule::{lead_ins_at_places, led_launch};
use kc_core::plan::types::{Plan, PlanDataflow, Step, UnitCall};
use kc_core::results::fidelity::{self, RecordedLaunches};
use kc_core::results::{ProgramMeasure, UnitAfterLeadIn, UnitResult};
use std::collections::HashMap;

/// How far back a unit's lead-ins reach at most: to the nearest step that shares a place
/// with it among this many before it.
pub(super) const MAX_LEAD_IN_STEPS: usize = 4;

/// Measures every unit of `rows` that ran alone at its places once more after its
/// lead-ins, and sets its `after_lead_in`; `pass` restores the model's values.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    plan: &Plan,
    rank: u32,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    df: &PlanDataflow,
    pass: &[u32],
    steps_of: &HashMap<u32, Vec<u32>>,
    targets: &HashMap<u32, f64>,
    rows: &mut [UnitResult],
    notes: &mut Vec<String>,
) -> Result<(), ExecError> {
    let ok: HashMap<u32, bool> = rows
        .iter()
        .map(|r| (r.id, r.status == "ok" && r.time_us.is_some()))
        .collect();
    let runs = |s: &Step| {
        ok.get(&s.unit).copied().unwrap_or(false)
            && !matches!(
                plan.units[s.unit as usize].call,
                UnitCall::Collective { .. }
            )
    };
    let before = lead_ins_at_places(plan, rank, df, runs, MAX_LEAD_IN_STEPS);
    // Each unit's kernels per invocation alone (CUPTI), whole counts only: with
    // `--lead-in-kernels` they tell the kernels of a launch apart by step.
    let kernels_per_invocation: HashMap<u32, usize> = rows
        .iter()
        .filter_map(|r| Some((r.id, r.launches_verified.as_ref()?.whole_per_invocation()?)))
        .collect();
    // Where asked, only the units that carry the energy (`--lead-in-share`).
    let chosen = kc_core::results::units_holding_energy_share(rows, opts.lead_in_share);
    let bar = opts
        .progress
        .then(|| units_bar("after lead-ins", rows.len()));
    let (mut measured, mut restoring, mut unled, mut failed) = (0usize, 0usize, 0usize, 0usize);
    let mut by_share = 0usize;
    for row in rows.iter_mut() {
        if let Some(b) = &bar {
            b.inc(1);
        }
        let collective = matches!(
            plan.units[row.id as usize].call,
            UnitCall::Collective { .. }
        );
        if row.status != "ok" || collective || row.unroll == 0 {
            continue;
        }
        if chosen.as_ref().is_some_and(|c| !c.contains(&row.id)) {
            by_share += 1;
            continue;
        }
        let Some(steps) = steps_of.get(&row.id).filter(|s| !s.is_empty()) else {
            continue;
        };
        // A unit measured restoring ran each launch after a copy of its places; its
        // figures are not set against a launch that does not.
        if row.restoring.is_some() {
            restoring += 1;
            continue;
        }
        let launch = led_launch(steps, row.unroll, &before);
        if launch.iter().all(|(l, _)| l.is_empty()) {
            unled += 1;
            continue;
        }
        let target = targets
            .get(&row.id)
            .copied()
            .unwrap_or(opts.energy_target_rel_sem);
        crate::crash::doing(&format!("measuring unit {} after its lead-ins", row.id));
        let how = LedHow {
            launch: &launch,
            target,
            kernels_per_invocation: &kernels_per_invocation,
        };
        match measure_unit(plan, row, how, opts, gpu, en, df, pass, notes) {
            Ok(a) => {
                row.after_lead_in = Some(a);
                measured += 1;
            }
            Err(e) if e.breaks_context() => return Err(e),
            Err(e) => {
                let _ = gpu.synchronize();
                failed += 1;
                if failed <= 8 {
                    notes.push(format!("unit {} after its lead-ins: {e}", row.id));
                }
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let share = match chosen {
        Some(_) => format!(
            ", {by_share} beyond the units that hold the first {:.0} % of the units' energy (--lead-in-share, left out: their energy alone stands)",
            100.0 * opts.lead_in_share.max(0.0)
        ),
        None => String::new(),
    };
    let reads = match opts.lead_in_reads_from_producers {
        true => "; their integer and boolean bound reads on the results their lead-ins computed (--lead-in-reads-from-producers), not the model's values",
        false => "",
    };
    notes.push(format!(
        "units after their lead-ins: {measured} measured, {unled} without a lead-in, {restoring} measured restoring alone (left out), {failed} failed{share}{reads}"
    ));
    Ok(())
}

/// How one unit is measured after its lead-ins: its launch (each invocation's lead-in
/// steps, then its step), its energy target, and every unit's kernels per invocation alone
/// (for `--lead-in-kernels`).
struct LedHow<'a> {
    launch: &'a [(Vec<u32>, u32)],
    target: f64,
    kernels_per_invocation: &'a HashMap<u32, usize>,
}

/// One unit after its lead-ins: the launch `launch` (lead-in, step) and the lead-ins alone,
/// each timed and measured from the model's values; their difference per invocation.
#[allow(clippy::too_many_arguments)]
fn measure_unit(
    plan: &Plan,
    row: &UnitResult,
    how: LedHow<'_>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    df: &PlanDataflow,
    pass: &[u32],
    notes: &mut Vec<String>,
) -> Result<UnitAfterLeadIn, ExecError> {
    let LedHow {
        launch,
        target,
        kernels_per_invocation,
    } = how;
    let at = |step: u32| At::Step {
        step,
        places: &df.steps[step as usize],
    };
    let unit_of = |step: u32| &plan.units[plan.steps[step as usize].unit as usize];
    let enqueue_led = |gpu: &Gpu| -> Result<(), ExecError> {
        for (lead, st) in launch {
            for &p in lead {
                gpu.enqueue(unit_of(p), 0, at(p))?;
            }
            gpu.enqueue(unit_of(*st), 0, at(*st))?;
        }
        Ok(())
    };
    let enqueue_leads = |gpu: &Gpu| -> Result<(), ExecError> {
        for &p in launch.iter().flat_map(|(l, _)| l) {
            gpu.enqueue(unit_of(p), 0, at(p))?;
        }
        Ok(())
    };
    // A unit that alone drew past the power limit was priced at a duty cycle, at the clock
    // the model runs it at; after its lead-ins it would draw past it too (session 35:
    // 7 of ConvNeXt-S's step's units and 19 of Wide ResNet-50-2's, its heaviest, were
    // held down in either launch and so kept their energy alone). Both launches are then
    // measured at a duty cycle, so that the difference is at the model's clock as the
    // energy alone it replaces is.
    let at_duty = opts.duty_energy
        && row
            .energy_at_duty
            .as_ref()
            .is_some_and(|d| d.capped_windows > 0);
    let mut measure =
        |enqueue: &dyn Fn(&Gpu) -> Result<(), ExecError>,
         label: &str,
         notes: &mut Vec<String>|
         -> Result<(ProgramMeasure, Option<f64>, Option<RecordedLaunches>), ExecError> {
            let graph = gpu.capture(enqueue)?;
            // A diagnostic never costs the answer: a launch that cannot be recorded is left
            // unrecorded.
            let recorded = if opts.lead_in_kernels {
                super::record_launches(gpu, &graph).ok()
            } else {
                None
            };
            if !at_duty {
                let how = (target, true);
                let m = measure_program(plan, gpu, en, &graph, label, how, opts, df, pass, notes)?;
                return Ok((m, None, recorded));
            }
            let mut m = time_program(plan, gpu, &graph, df, pass)?;
            let besides = kc_core::results::Besides::default();
            // Per launch (one item), as the launch without a duty cycle is measured.
            match duty_energy(
                gpu, en, enqueue, label, m.time_us, besides, 1, target, opts, notes,
            )? {
                Some((summary, duty)) => {
                    m.energy_j = Some(summary.per_item_j.mean);
                    m.energy_sem_j = Some(summary.per_item_j.sem());
                    m.capped_windows = duty.duty_capped_windows;
                    Ok((m, Some(duty.unit_share), recorded))
                }
                None => Ok((m, None, recorded)),
            }
        };
    let (l, duty_share, led_recorded) = measure(
        &enqueue_led,
        &format!("unit {} after its lead-ins", row.id),
        notes,
    )?;
    let (a, _, leads_recorded) = measure(
        &enqueue_leads,
        &format!("unit {}'s lead-ins alone", row.id),
        notes,
    )?;
    let n = f64::from(row.unroll);
    // Where both launches were recorded: each position of the launch with lead-ins, in the
    // order it runs, with its kernels per invocation alone and whether it is the unit's own
    // step, tells their kernels apart.
    let kernels = led_recorded.zip(leads_recorded).and_then(|(l, a)| {
        let positions: Option<Vec<(usize, bool)>> = launch
            .iter()
            .flat_map(|(lead, st)| {
                lead.iter()
                    .map(|&p| (p, false))
                    .chain(std::iter::once((*st, true)))
            })
            .map(|(step, own)| {
                let unit = plan.steps[step as usize].unit;
                Some((*kernels_per_invocation.get(&unit)?, own))
            })
            .collect();
        fidelity::lead_in_kernels(&l, &a, positions.as_deref(), row.unroll)
    });
    // One window gives no spread: the report gives each launch the run's pooled spread of
    // one window. Both launches follow the same target, so they end alike; were one of
    // them to count two, the other's spread would still be unknown, so either is enough.
    let one_window = duty_share.is_none() && (l.windows == 1 || a.windows == 1);
    let energy = l
        .energy_j
        .zip(l.energy_sem_j)
        .zip(a.energy_j.zip(a.energy_sem_j))
        .map(|((x, ux), (y, uy))| ((x - y) / n, ux.hypot(uy) / n));
    Ok(UnitAfterLeadIn {
        led: launch.iter().filter(|(l, _)| !l.is_empty()).count() as u32,
        lead_in_steps: launch.iter().map(|(l, _)| l.len() as u32).sum(),
        time_us: (l.time_us - a.time_us) / n,
        time_sem_us: l.time_sem_us.hypot(a.time_sem_us) / n,
        energy_j: energy.map(|e| e.0),
        energy_sem_j: energy.map(|e| e.1).filter(|_| !one_window),
        lead_ins_us: a.time_us / n,
        lead_ins_energy_j: a.energy_j.map(|e| e / n),
        capped_windows: l.capped_windows + a.capped_windows,
        duty_share,
        one_window,
        kernels,
    })
}
