//! Graph mode: the plan's steps of one rank captured into one CUDA graph on the trace's
//! streams (over the model's memory image when the plan has one), warmed up, timed over
//! back-to-back replays, energy windows over back-to-back replays, one more replay under
//! CUPTI with `--verify`, and the image's non-finite self-check.
//!
//! Invariant: the results count exactly the steps captured (`steps_replayed`) and give the
//! traced time of the steps not executed beside it.

use super::{job_phase, status_of, unit_row, Phases, Replay};
use crate::backends::{At, Gpu};
use crate::device::{Event, Graph};
use crate::{ExecError, ExecOptions};
use kc_core::plan::schedule::{self, ProgramOp};
use kc_core::plan::types::{Plan, PlanDataflow, Step};
use kc_core::results::stats::Stats;
use kc_core::results::*;
use std::collections::HashMap;

pub(super) fn graph_mode(r: Replay<'_, '_>) -> Result<(), ExecError> {
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
    let on_rank = |s: &Step| plan.streams[s.stream as usize].rank == rank;
    // Which units this build runs here (a back end makes their call).
    let runs: Vec<bool> = plan.units.iter().map(|u| gpu.runs(&u.call)).collect();
    let runs_step = |s: &Step| {
        let unit = &plan.units[s.unit as usize];
        on_rank(s) && runs[unit.id as usize] && !failed.contains_key(&s.unit)
    };
    let prog = schedule::graph_program(plan, runs_step);
    // A graph of nothing would time an empty launch: say why nothing runs instead.
    if prog.launched == 0 {
        let on = plan.steps.iter().filter(|s| on_rank(s)).count();
        let collective = plan.steps.iter().filter(|s| on_rank(s)).any(|s| {
            matches!(
                plan.units[s.unit as usize].call,
                kc_core::plan::types::UnitCall::Collective { .. }
            )
        });
        return Err(ExecError::NothingToReplay {
            rank,
            steps: on,
            why: if collective {
                "its collectives need every rank together: `kc exec --ranks all`"
            } else {
                "see `kc plan show` for why each unit is not replayed"
            },
        });
    }
    // Where kc's own time goes in this mode (`Results::phases`, after the run's own).
    let mut phases = Phases::start();
    // The model's memory image, this rank's regions only: tiers 1, 2 and 4 address the
    // arena directly, tier-3 steps are prepared once each with their tensors as views over it.
    let image_of_rank = plan.dataflow_of_rank(rank).filter(|_| opts.dataflow);
    let image = image_of_rank.as_ref();
    let mut memory_image = match image {
        Some(df) => Some(prepare_image(plan, df, gpu, &runs_step, notes)?),
        None => None,
    };
    phases.end("the memory image and its steps");
    let events = GraphEvents::new(gpu, &prog)?;
    let capture = |gpu: &mut Gpu, image: Option<&PlanDataflow>| {
        capture_program(gpu, plan, &prog, &events, image)
    };
    job_phase(opts, "capturing the graph");
    let graph = match capture(gpu, image) {
        Ok(g) => g,
        Err(e) if image.is_some() => {
            // A placed call that ran eagerly but not under capture: replay as before,
            // said plainly, rather than not at all.
            notes.push(format!(
                "graph mode over the memory image failed to capture ({e}); replayed on per-unit buffers"
            ));
            memory_image = None;
            gpu.synchronize()?;
            capture(gpu, None)?
        }
        Err(e) => return Err(e),
    };
    // What the capture issued (tier-3 reads bound to the results they read).
    notes.extend(gpu.take_notes());
    phases.end("the capture");
    // Every timed phase starts from the image's starting values: a training step updates
    // its own state (parameters, moments, running statistics) on every replay, and the
    // eager preparation above already ran each step once.
    let restore = |gpu: &mut Gpu, on: bool| match (on, image) {
        (true, Some(df)) => gpu.fill_arena(df),
        _ => Ok(()),
    };
    restore(gpu, memory_image.is_some())?;
    job_phase(opts, "captured; warm-up replays");
    // A fault inside the driver's launch names the graph it launched.
    let held = node_kinds(&graph);
    let warm_from = std::time::Instant::now();
    for i in 0..opts.warmup {
        crate::crash::doing(&format!(
            "launching warm-up replay {} of {} of the graph{} ({} nodes: {held})",
            i + 1,
            opts.warmup,
            if memory_image.is_some() {
                " over the memory image"
            } else {
                ""
            },
            graph.nodes
        ));
        gpu.launch(&graph)?;
    }
    gpu.synchronize()?;
    let warm_s = warm_from.elapsed().as_secs_f64() / opts.warmup.max(1) as f64;
    let timed = timed_runs(opts, warm_s, en.job.is_some());
    job_phase(opts, "timing replays");
    let timed_start = unix_ms_now();
    let samples = gpu.time_launches(&graph, timed)?;
    let timed_end = unix_ms_now();
    let replay = Stats::of(&samples);
    // In a job every rank launches the same number of graphs: the latency loop is left
    // out there (the ranks would wait on each other's synchronisations). It is a figure
    // beside the answer, so it takes about a quarter second (ResNeXt-50's step took 0.8 s
    // for its 20).
    let latency = if en.job.is_none() {
        let n = latency_launches(timed, replay.mean);
        Some(Stats::of(&gpu.time_single_launches(&graph, n)?))
    } else {
        None
    };
    restore(gpu, memory_image.is_some())?;
    phases.end("the warm-up and timed replays");
    job_phase(opts, "energy windows");
    let energy = en.windows_of(gpu, &graph, "graph", replay.mean, 1.0, opts, notes)?;
    phases.end("the energy windows");
    job_phase(opts, "timed");
    if opts.profile_replay {
        gpu.launch_in_profiler_range(&graph)?;
        notes.push(
            "one replay after the timed ones ran inside a profiler range (--profile-replay)"
                .to_string(),
        );
    }
    // Replays under CUPTI (back to back; the first left out), before anything else
    // touches the image.
    let fidelity = if opts.verify {
        verify(plan, &prog, gpu, &graph, en.job.is_none(), opts, notes)
    } else {
        None
    };
    if let (Some(mi), Some(df)) = (memory_image.as_mut(), image) {
        check_image(plan, df, gpu, mi, en.job.is_none(), &runs_step, notes)?;
    }
    let executed_traced: i64 = plan
        .steps
        .iter()
        .filter(|s| runs_step(s))
        .map(|s| s.traced_ns)
        .sum();
    let skipped_traced: i64 = plan
        .steps
        .iter()
        .filter(|s| on_rank(s) && !runs_step(s))
        .map(|s| s.traced_ns)
        .sum();
    results.graph = Some(GraphResult {
        runs: samples.len(),
        warmup: opts.warmup,
        streams: gpu.streams.len(),
        steps_replayed: prog.launched,
        steps_not_executed: plan
            .steps
            .iter()
            .filter(|s| on_rank(s) && !runs_step(s))
            .count(),
        not_executed_traced_us: skipped_traced as f64 / 1000.0,
        replayed_traced_us: executed_traced as f64 / 1000.0,
        replayed_traced_critical_path_us: schedule::critical_path_ns(plan, runs_step) as f64
            / 1000.0,
        traced_critical_path_us: schedule::critical_path_ns(plan, on_rank) as f64 / 1000.0,
        traced_iteration_span_us: schedule::iteration_span_ns(plan).map(|ns| ns / 1000.0),
        replay_us: replay,
        replay_samples_us: samples,
        latency_us: latency,
        timed_start_unix_ms: Some(timed_start),
        timed_end_unix_ms: Some(timed_end),
        energy,
        memory_image,
        fidelity,
    });
    notes.push(format!(
        "graph mode: captured graph has {} nodes ({})",
        graph.nodes, held
    ));
    phases.end("the CUPTI replay and checks");
    results.phases.extend(phases.done);
    results.units = plan
        .units
        .iter()
        .map(|u| unit_row(u, status_of(u, failed, runs[u.id as usize])))
        .collect();
    Ok(())
}

/// Allocates this rank's memory image and prepares every tier-3 step over it (their
/// tensors become views of the image; results move into it where their place holds them).
fn prepare_image(
    plan: &Plan,
    df: &PlanDataflow,
    gpu: &mut Gpu,
    runs_step: &dyn Fn(&Step) -> bool,
    notes: &mut Vec<String>,
) -> Result<MemoryImage, ExecError> {
    gpu.allocate_arena(df)?;
    let summary = kc_core::plan::show::dataflow_summary(plan);
    let mut mi = MemoryImage {
        derivation: df.derivation.clone(),
        arena_bytes: df.arena_bytes,
        operands_placed: summary.as_ref().map_or(0, |d| d.operands_placed),
        operands_private: summary.as_ref().map_or(0, |d| d.operands_private),
        ..Default::default()
    };
    for (i, s) in plan.steps.iter().enumerate() {
        let unit = &plan.units[s.unit as usize];
        if !runs_step(s) || !gpu.prepares_steps(&unit.call) {
            continue;
        }
        mi.results_planned += df.steps[i].outputs.iter().flatten().count() as u64;
        match super::prepare_over_image(gpu, unit, i as u32, &df.steps[i])? {
            Ok(n) => mi.results_placed += n as u64,
            Err(e) => {
                if mi.tier3_steps_unplaced < 3 {
                    notes.push(format!(
                        "step {i} ({}) runs on its unit's own tensors: {e}",
                        unit.label
                    ));
                }
                mi.tier3_steps_unplaced += 1;
            }
        }
    }
    notes.extend(gpu.take_notes());
    Ok(mi)
}

/// The step program's events: one per recorded step, the fork of the side streams from
/// stream 0 and their joins back into it.
struct GraphEvents {
    step: HashMap<u32, Event>,
    fork: Event,
    joins: Vec<Event>,
}

impl GraphEvents {
    fn new(gpu: &mut Gpu, prog: &schedule::Program) -> Result<GraphEvents, ExecError> {
        let mut step = HashMap::new();
        for op in &prog.ops {
            if let ProgramOp::Record { step: s, .. } = op {
                step.insert(*s, gpu.event(false)?);
            }
        }
        let fork = gpu.event(false)?;
        let joins = (1..gpu.streams.len())
            .map(|_| gpu.event(false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GraphEvents { step, fork, joins })
    }
}

/// Captures the program: stream 0 forks the others, every step is enqueued on its stream
/// (on its places in the image, or its unit's own buffers), waits become event waits, and
/// the side streams join stream 0 at the end.
fn capture_program(
    gpu: &mut Gpu,
    plan: &Plan,
    prog: &schedule::Program,
    ev: &GraphEvents,
    image: Option<&PlanDataflow>,
) -> Result<Graph, ExecError> {
    gpu.capture(|gpu| {
        gpu.record(ev.fork, 0)?;
        for s in 1..gpu.streams.len() {
            gpu.wait(s, ev.fork)?;
        }
        for op in &prog.ops {
            match *op {
                ProgramOp::Wait { stream, step } => gpu.wait(stream as usize, ev.step[&step])?,
                ProgramOp::Launch { unit, stream, step } => {
                    // Formatting for each of a few thousand steps costs microseconds.
                    crate::crash::doing(&format!(
                        "capturing step {step} (unit {unit} {}) into the graph",
                        plan.units[unit as usize].label
                    ));
                    let at = match image {
                        Some(df) => At::Step {
                            step,
                            places: &df.steps[step as usize],
                        },
                        None => At::Slots(0),
                    };
                    gpu.enqueue(&plan.units[unit as usize], stream as usize, at)?
                }
                ProgramOp::Record { step, stream } => {
                    gpu.record(ev.step[&step], stream as usize)?
                }
            }
        }
        for (k, s) in (1..gpu.streams.len()).enumerate() {
            gpu.record(ev.joins[k], s)?;
            gpu.wait(0, ev.joins[k])?;
        }
        Ok(())
    })
}

/// The kinds of a captured graph's nodes with their counts ("1389 kernel, 51 memset").
fn node_kinds(graph: &Graph) -> String {
    graph
        .node_kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replays of `graph` back to back under CUPTI: what one launched, measured against the
/// trace, its in-context durations the mean over the launches after the first (and their
/// records written to `--kernels-out`); `None`, with a note, when CUPTI is not there.
fn verify(
    plan: &Plan,
    prog: &schedule::Program,
    gpu: &mut Gpu,
    graph: &Graph,
    alone: bool,
    opts: &ExecOptions,
    notes: &mut Vec<String>,
) -> Option<kc_core::results::fidelity::Fidelity> {
    let steps = kc_core::results::fidelity::traced_steps(
        plan,
        prog.ops.iter().filter_map(|op| match *op {
            ProgramOp::Launch { unit, step, .. } => Some((unit, step)),
            _ => None,
        }),
    );
    // Launches back to back, as the timed replays ran them: the first, from an idle GPU,
    // is left out and the in-context durations are the mean of the others (one launch
    // from an idle GPU read each unit once, its kernels at the head of the replay after
    // the GPU sat idle).
    let n = super::RECORDED_LAUNCHES;
    match crate::device::cupti::record_with_copies(|| super::launch_n(gpu, graph, n)) {
        Ok((records, copies)) => {
            use kc_core::results::fidelity as fid;
            let launches = fid::RecordedLaunches::after_first(records.clone(), n);
            // The records of the launches measured; where they do not split by launch
            // (a launch that ran another number of kernels), the whole recording cannot
            // be set against one launch's steps, and one launch is recorded again.
            // In a job every rank launches alike, so none launches again.
            let (mut f, kept) = match fid::measure_back_to_back(&steps, &launches.each) {
                Some(f) => (f, launches.records),
                None if !alone => {
                    notes.push(format!(
                        "--verify: the {n} launches recorded back to back did not split into launches of equal kernels; not verified"
                    ));
                    return None;
                }
                None => {
                    notes.push(format!(
                        "--verify: the {n} launches recorded back to back did not split into launches of equal kernels; verified over one launch from an idle GPU"
                    ));
                    match crate::device::cupti::record_with_copies(|| {
                        super::launch_n(gpu, graph, 1)
                    }) {
                        Ok((one, _)) => (fid::measure(&steps, &one), one),
                        Err(e) => {
                            notes.push(format!("--verify: {e}"));
                            return None;
                        }
                    }
                }
            };
            if let Some(path) = &opts.kernels_out {
                let text = serde_json::to_vec(&kept).unwrap_or_default();
                if let Err(e) = kc_core::files::write_atomic(std::path::Path::new(path), &text) {
                    notes.push(format!("{path}: cannot write the kernel records: {e}"));
                }
            }
            // Copies per launch, over every launch recorded.
            f.copies_launched = Some(fid::copies_in(&records, &copies) / n as u64);
            f.copies_us = Some(fid::copies_beyond_kernels_us(&records, &copies) / n as f64);
            Some(f)
        }
        Err(e) => {
            notes.push(format!("--verify: {e}"));
            None
        }
    }
}

/// The image's non-finite self-check after the replay; above 1 %, a note, and (outside a
/// job: the search replays steps one by one) the first steps that produce them.
#[allow(clippy::too_many_arguments)]
fn check_image(
    plan: &Plan,
    df: &PlanDataflow,
    gpu: &mut Gpu,
    mi: &mut MemoryImage,
    search: bool,
    runs_step: &dyn Fn(&Step) -> bool,
    notes: &mut Vec<String>,
) -> Result<(), ExecError> {
    mi.nonfinite_share = gpu.arena_nonfinite_share(df)?;
    if let Some(share) = mi.nonfinite_share.filter(|&x| x > 0.01) {
        notes.push(format!(
            "{:.1} % of the memory image's float values are NaN or infinite after the replay: its power is not the model's",
            share * 100.0
        ));
        // Where the values ran away, read before the search below refills the image.
        let worst = if search {
            super::diagnose::worst_regions(plan, df, gpu, 3)?
        } else {
            String::new()
        };
        // The search replays steps one by one; in a job that would need every rank.
        if search {
            mi.nonfinite_producers =
                super::diagnose::nonfinite_producers(plan, df, gpu, runs_step, 5)?;
        }
        if let Some(first) = mi.nonfinite_producers.first() {
            notes.push(format!("the first non-finite values come from {first}"));
        } else if search {
            // No single pass from the starting values makes them: they build up over the
            // replays, in state the replay updates every time (a region read, then written
            // in place). Name the regions that hold most of them.
            notes.push(format!(
                "no single pass from the starting values makes non-finite values: they build up over the replays, in {worst}"
            ));
        }
    }
    Ok(())
}

/// The fewest replays timed when `timed_seconds` ends the timing early: their spread still
/// gives the mean's standard error.
const MIN_TIMED_RUNS: usize = 20;

/// Synchronised single launches timed for the latency figure: 20, or as many as take
/// [`LATENCY_S`] of replays of `replay_us`, but at least 3 and at most `timed`.
fn latency_launches(timed: usize, replay_us: f64) -> usize {
    let fit = (LATENCY_S * 1e6 / replay_us.max(1e-3)).floor() as usize;
    fit.clamp(3, 20).min(timed.max(1))
}

/// GPU time of the latency figure's launches, seconds.
const LATENCY_S: f64 = 0.25;

/// How many replays are timed: `opts.runs`, or fewer where `opts.timed_seconds` of them
/// (each `replay_s` long, from the warm-up) is reached first, never under
/// [`MIN_TIMED_RUNS`]. A job's ranks launch the same count, so there it is always `runs`.
fn timed_runs(opts: &ExecOptions, replay_s: f64, job: bool) -> usize {
    let runs = opts.runs.max(1);
    match opts.timed_seconds {
        Some(t) if !job && replay_s > 0.0 && opts.warmup > 0 => {
            runs.min(((t / replay_s).ceil() as usize).max(MIN_TIMED_RUNS))
        }
        _ => runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_figure_takes_a_quarter_second() {
        // A 38.7 ms replay (ResNeXt-50's training step): 6 launches, not 20.
        assert_eq!(latency_launches(26, 38_700.0), 6);
        // Short replays: 20; long ones at least 3; never more than were timed.
        assert_eq!(latency_launches(100, 500.0), 20);
        assert_eq!(latency_launches(20, 400_000.0), 3);
        assert_eq!(latency_launches(2, 400_000.0), 2);
    }

    #[test]
    fn timing_stops_at_its_seconds_but_never_under_the_minimum() {
        let opts = ExecOptions {
            runs: 100,
            timed_seconds: Some(1.0),
            ..Default::default()
        };
        // 37 ms replays: 28 of them make a second.
        assert_eq!(timed_runs(&opts, 0.037, false), 28);
        // Short replays reach --runs first; long ones keep the minimum.
        assert_eq!(timed_runs(&opts, 0.001, false), 100);
        assert_eq!(timed_runs(&opts, 0.5, false), MIN_TIMED_RUNS);
        // A job's ranks, no warm-up to size it, or no bound: every run.
        assert_eq!(timed_runs(&opts, 0.037, true), 100);
        let no_warmup = ExecOptions {
            warmup: 0,
            ..opts.clone()
        };
        assert_eq!(timed_runs(&no_warmup, 0.037, false), 100);
        let unbounded = ExecOptions {
            timed_seconds: None,
            ..opts
        };
        assert_eq!(timed_runs(&unbounded, 0.037, false), 100);
    }
}
