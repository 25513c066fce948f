//! The program with each kind of unit left out and doubled (a diagnostic,
//! `--kinds-left-out`): every step of the units the isolated pass measured is captured
//! into one graph in the plan's order on one stream (the model's program of one replay,
//! as the round and the lead-ins run it), timed and measured from the model's values at
//! the start, then for each kind of unit ([`kc_core::plan::schedule::kind_groups`]: the
//! labels that hold at least 2 % of the plain sum, the rest together; a label's units
//! measured at a duty cycle alone a kind apart) once without it and
//! once with each of its steps run twice in its place, and once more whole at the end.
//! What a kind costs inside the program is the whole less the program without it (which
//! also takes from its neighbours what it left them in L2); what a second run of it costs
//! there is the doubled program less the whole (a kernel right after itself, as alone,
//! but among the model's other kernels, with its neighbours' context kept). The report
//! sets both beside the kind's units alone. The training steps' units alone overdraw the
//! model by 6-9 % in energy where their time is right (sessions 20-25); this says which
//! kinds hold that, and whether they do so as a kernel after itself. The steps that write
//! integer or boolean data in place or lead to indices another step reads
//! ([`kc_core::plan::schedule::steps_run_once`]) run once in every program, their kind's
//! left out or doubled too: on T5's graph the program with `aten::add_` doubled (its
//! int64 relative-position buckets among them) ended the process by SIGSEGV inside the
//! driver at its first launch (session 26, calls 4-5), and, with only the in-place integer
//! writers run once, so did the program without its float `copy_`s (session 28, call 1),
//! one of which converts the bucket positions to float on their way back to int64.
//!
//! Invariant: every program graph is measured the same way
//! ([`super::measure_program`]), from
//! the model's values, and holds exactly the steps its `steps` counts; a kind's figures
//! are only ever the difference of two such measurements. The order measured is the
//! whole, then each kind's program without it and doubled, then the whole.

use super::{measure_program, Energy};
use crate::backends::{At, Gpu};
use crate::{ExecError, ExecOptions};
use kc_core::plan::schedule::{kind_groups, kind_program, step_accesses, steps_run_once};
use kc_core::plan::types::{Plan, PlanDataflow, UnitCall};
use kc_core::results::{KindLeftOut, KindsLeftOut, UnitResult};
use std::collections::HashSet;

/// A label under this share of the plain sum joins the other light ones in one kind.
const MIN_KIND_SHARE: f64 = 0.02;

/// Below this share of the GPU's memory free, the pools of freed programs go back.
const LOW_MEMORY_SHARE: f64 = 0.35;

/// Each program's energy windows: at least this long, and this many at most.
const WINDOW_S: f64 = 0.4;
const MAX_WINDOWS: usize = 10;

/// The relative standard error each program's energy is measured to (the windows stop
/// there, or at [`MAX_WINDOWS`]): a kind of 5 % of the energy is then within about 5 % of
/// itself.
const TARGET_REL_SEM: f64 = 0.001;

/// Measures the program whole, then without each kind of unit and with it doubled, then
/// whole again; `pass` restores the model's values.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    plan: &Plan,
    rank: u32,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    df: &PlanDataflow,
    pass: &[u32],
    rows: &[UnitResult],
    notes: &mut Vec<String>,
) -> Result<KindsLeftOut, ExecError> {
    let ok: HashSet<u32> = rows
        .iter()
        .filter(|r| r.status == "ok" && r.time_us.is_some())
        .filter(|r| !matches!(plan.units[r.id as usize].call, UnitCall::Collective { .. }))
        .map(|r| r.id)
        .collect();
    let program: Vec<u32> = plan
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| plan.streams[s.stream as usize].rank == rank && ok.contains(&s.unit))
        .map(|(i, _)| i as u32)
        .collect();
    // Each unit weighs what the plain sum gives it: energy where measured, else time. A
    // unit whose energy alone was taken at a duty cycle (its windows alone saw the power
    // cap) is of a kind apart, so that the duty cycle's own figure is set against the
    // program by itself.
    let labels: Vec<(u32, String, f64)> = rows
        .iter()
        .filter(|r| ok.contains(&r.id))
        .map(|r| {
            let w = r.predicted_energy_j.or(r.predicted_us).unwrap_or(0.0);
            let label = match r.energy_at_duty {
                Some(_) => format!("{}, at the cap alone", r.label),
                None => r.label.clone(),
            };
            (r.id, label, w)
        })
        .collect();
    let weights: Vec<(u32, &str, f64)> = labels
        .iter()
        .map(|(i, l, w)| (*i, l.as_str(), *w))
        .collect();
    let kinds = kind_groups(&weights, MIN_KIND_SHARE);
    // The steps that write integers in place or lead to indices another step reads run
    // once in every program, their kind's too: left out or run twice, they would take
    // the indices others read out of the model's range.
    let once = steps_run_once(&program, &step_accesses(plan, df));
    let mut o = opts.clone();
    o.energy_window_s = o.energy_window_s.map(|w| w.max(WINDOW_S));
    o.energy_repeats = MAX_WINDOWS;
    let bar = opts
        .progress
        .then(|| super::units_bar("kinds left out", 2 * kinds.len() + 2));
    // The program with each step of the kind's units run `times` times in its place
    // (0: left out, 1: the whole, 2: doubled).
    let run = |gpu: &mut Gpu,
               en: &mut Energy<'_>,
               kind: &HashSet<u32>,
               times: usize,
               label: &str,
               notes: &mut Vec<String>| {
        let steps = kind_program(
            &program,
            |st| plan.steps[st as usize].unit,
            kind,
            &once,
            times,
        );
        crate::crash::doing(&format!("measuring the program {label}"));
        let graph = gpu.capture(|gpu| {
            for &st in &steps {
                let unit = &plan.units[plan.steps[st as usize].unit as usize];
                let at = At::Step {
                    step: st,
                    places: &df.steps[st as usize],
                };
                gpu.enqueue(unit, 0, at)?;
            }
            Ok(())
        })?;
        let label = format!("the program {label}");
        let mut m = measure_program(
            plan,
            gpu,
            en,
            &graph,
            &label,
            (TARGET_REL_SEM, false),
            &o,
            df,
            pass,
            notes,
        )?;
        m.steps = steps.len() as u32;
        // The freed programs' pools go back before the next is captured once the GPU runs
        // low: ResNeXt-50's step ran out of memory at its 22nd program without (session
        // 26, call 2). Only then, so that libtorch's cache stays as other phases leave it.
        // (T5's graph ended by SIGSEGV both with them given back after every program and
        // with them given back only when low, calls 4-5: that crash is not this.)
        drop(graph);
        if gpu.dev.free_memory_share()? < LOW_MEMORY_SHARE {
            gpu.release_cached_memory();
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
        Ok::<_, ExecError>(m)
    };
    let none = HashSet::new();
    let whole_first = run(gpu, en, &none, 1, "whole (first)", notes)?;
    let mut out = Vec::with_capacity(kinds.len());
    for (kind, units) in kinds {
        let ours: HashSet<u32> = units.iter().copied().collect();
        let without = run(gpu, en, &ours, 0, &format!("without {kind}"), notes)?;
        let doubled = run(gpu, en, &ours, 2, &format!("with {kind} doubled"), notes)?;
        let doubled_once = program
            .iter()
            .filter(|&&st| ours.contains(&plan.steps[st as usize].unit) && once.contains(&st))
            .count() as u32;
        out.push(KindLeftOut {
            kind,
            units,
            without,
            doubled: Some(doubled),
            doubled_once,
        });
    }
    let whole_last = run(gpu, en, &none, 1, "whole (last)", notes)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(KindsLeftOut {
        whole_first,
        whole_last,
        kinds: out,
    })
}
