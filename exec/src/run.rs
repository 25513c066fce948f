//! The measurement procedure on the GPU: idle power, an eager check of every unit, then
//! graph mode (capture the whole plan into one graph, warm up, time `runs` replays, energy
//! windows of back-to-back replays) or isolated mode (per unit: capture it unrolled, time
//! enough launches, energy windows). Invariant: every window and every timed sample in the
//! results was measured in this run; derived figures say how they were derived.

use super::energy::{self, Clock, PowerMeter, SystemClock, WindowSpec};
use super::gpu::{At, Feeder, Gpu, Graph};
use super::{not_executed_reason, nvml, runs_unit, CachePolicy, ExecError, ExecOptions};
use kc_core::plan::schedule::{self, ProgramOp};
use kc_core::plan::show::call_str;
use kc_core::plan::types::{ElemType, Plan, PlanUnit, Step};
use kc_core::results::stats::Stats;
use kc_core::results::*;
use std::collections::HashMap;

/// Target GPU time of one feeder batch: long enough that host launch overhead does not
/// starve the GPU, short enough to count completions finely.
const BATCH_NS: f64 = 20_000_000.0;

struct Energy<'a> {
    meter: Option<nvml::NvmlMeter<'a>>,
    clock: SystemClock,
    windows: Vec<energy::EnergyWindow>,
    idle_w: Option<f64>,
    /// The job, when ranks replay together: windows launch as many replays as the time
    /// takes, which differs by rank, so each rank tops its launches up to the job's most
    /// (a rank that stopped early would leave its partners waiting in a collective).
    job: Option<super::rendezvous::Job>,
}

/// Every rank of a job ends a phase with the same number of launches of its graph: each
/// tops its own up to the job's most (without waiting: the caller synchronises after).
/// Without a job, nothing to do.
fn even_out(
    job: Option<&mut super::rendezvous::Job>,
    gpu: &mut Gpu,
    graph: &Graph,
    launched: u64,
    what: &str,
) -> Result<(), ExecError> {
    let Some(job) = job else {
        return Ok(());
    };
    let most = job.agree_max(what, launched)?;
    for _ in launched..most {
        gpu.launch(graph)?;
    }
    Ok(())
}

/// What both replay modes read and fill: the plan and the rank replayed, the options, the
/// GPU, the energy meter, the units that failed their trial run (left out and reported), the
/// results being written and the notes that go with them.
struct Replay<'a, 'm> {
    plan: &'a Plan,
    rank: u32,
    opts: &'a ExecOptions,
    gpu: &'a mut Gpu,
    en: &'a mut Energy<'m>,
    failed: &'a HashMap<u32, String>,
    results: &'a mut Results,
    notes: &'a mut Vec<String>,
}

impl Energy<'_> {
    /// Measures `repeats` windows while `graph` is replayed back to back; `items` work
    /// items (unit invocations) complete per replay.
    #[allow(clippy::too_many_arguments)]
    fn windows_of(
        &mut self,
        gpu: &mut Gpu,
        graph: &Graph,
        label: &str,
        per_launch_us: f64,
        items: f64,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<EnergySummary>, ExecError> {
        let (Some(meter), Some(min)) = (self.meter.as_mut(), opts.energy_window_s) else {
            return Ok(None);
        };
        let batch =
            ((BATCH_NS / 1000.0 / per_launch_us.max(0.001)).ceil() as usize).clamp(1, 100_000);
        let first = self.windows.len();
        let mut got = Vec::new();
        for _ in 0..opts.energy_repeats.max(1) {
            let mut feeder = Feeder::new(gpu, graph, batch)?;
            let spec = WindowSpec {
                label,
                min_seconds: min,
                poll_seconds: 0.002,
                stall_seconds: 3.0,
            };
            let mut gpu_err = None;
            let w = energy::measure(
                meter as &mut dyn PowerMeter,
                &self.clock,
                &spec,
                &mut || {
                    feeder.pump(gpu).map_err(|e| {
                        let m = e.to_string();
                        gpu_err = Some(e);
                        m
                    })
                },
            );
            // In a job, the ranks first agree on how many replays each launches and top
            // up to that, and only then wait: a rank that launched more would otherwise
            // wait forever for partners that stopped earlier.
            let launched = feeder.launched();
            drop(feeder);
            if gpu_err.is_none() {
                even_out(self.job.as_mut(), gpu, graph, launched, label)?;
            }
            gpu.synchronize()?;
            if let Some(e) = gpu_err {
                return Err(e);
            }
            match w {
                Ok(w) => got.push(w),
                Err(e) => {
                    notes.push(format!("{label}: energy window failed: {e}"));
                    return Ok(None);
                }
            }
        }
        let s = energy_summary(&got, first, self.idle_w, items);
        self.windows.extend(got);
        Ok(Some(s))
    }
}

/// A phase of a job's rank, on its log (a hang shows where it stopped).
fn job_phase(opts: &ExecOptions, what: &str) {
    if let Some(j) = &opts.job {
        eprintln!("rank {}: {what}", j.rank);
    }
}

/// How long a rank waits for the others at any agreement of a job (rendezvous, barriers,
/// launch counts) before it gives up with an error naming the rank it waited for.
const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

pub fn execute(plan: &Plan, opts: &ExecOptions) -> Result<Results, ExecError> {
    let clock = SystemClock::default();
    let started = energy::iso8601_ms(clock.unix_ms());
    let mut notes = Vec::new();
    let nvml = match nvml::init() {
        Ok(n) => Some(n),
        Err(e) => {
            notes.push(e);
            None
        }
    };
    // A job's rank replays its trace rank on its own GPU (LOCAL_RANK).
    let ordinal = opts.job.as_ref().map_or(0, |j| j.local_rank);
    let nvml_dev = nvml.as_ref().and_then(|n| n.device_by_index(ordinal).ok());
    let mut device = DeviceInfo::default();
    if let Some(n) = &nvml {
        device.driver_version = n.sys_driver_version().unwrap_or_default();
        device.cuda_driver_version = n.sys_cuda_driver_version().ok();
    }
    if let Some(d) = &nvml_dev {
        device.before = nvml::state(d);
        device.power_limit_w = nvml::power_limit_w(d);
    }
    // Joining the job comes first: a rank that cannot even open its GPU still arrives at
    // the rendezvous' deadline with the others, which then end with a clear error.
    let (mut job, nccl_id, trace_rank) = match &opts.job {
        Some(env) => {
            let ranks = plan.ranks();
            if ranks.len() != env.world_size as usize {
                return Err(ExecError::Unsupported(format!(
                    "the plan holds {} ranks, the job has WORLD_SIZE={}: one process per traced rank",
                    ranks.len(),
                    env.world_size
                )));
            }
            let id = if env.rank == 0 {
                super::nccl::unique_id()?
            } else {
                Vec::new()
            };
            let (job, blob) = super::rendezvous::Job::join(env, JOB_TIMEOUT, move || id)?;
            eprintln!(
                "rank {} of {}: joined the job (trace rank {}, GPU {})",
                env.rank, env.world_size, ranks[env.rank as usize], env.local_rank
            );
            (Some(job), blob, Some(ranks[env.rank as usize]))
        }
        None => (None, Vec::new(), None),
    };
    let mut gpu = Gpu::open_on(ordinal, plan.streams.len())?;
    if let (Some(j), Some(_)) = (&job, trace_rank) {
        gpu.join_collectives(&nccl_id, j.env.world_size, j.env.rank)?;
        eprintln!("rank {}: NCCL communicator ready", j.env.rank);
    }
    let phase = |what: &str| job_phase(opts, what);
    device.name = gpu.facts.name.clone();
    device.total_memory_bytes = gpu.facts.total_memory;
    device.sm_count = Some(gpu.facts.sm_count);
    device.cublas_version = gpu.facts.cublas_version;
    if device.cuda_driver_version.is_none() {
        device.cuda_driver_version = Some(gpu.facts.driver_version);
    }
    gpu.allocate(plan)?;

    // Every executable unit runs once eagerly: it initialises the libraries outside any
    // capture and finds units that fail, which are then left out and reported.
    // Tier-3 units are also captured once on their own: an op that cannot run inside a
    // capture (a host sync) is found here and left
    // out, instead of failing the capture of the whole plan.
    let mut failed: HashMap<u32, String> = HashMap::new();
    gpu.load_calls(&plan.aten_calls);
    if !plan.binaries.is_empty() {
        if let Err(e) = gpu.load_binaries(&plan.binaries) {
            for u in &plan.units {
                if let kc_core::plan::types::UnitCall::Kernel { .. } = u.call {
                    failed.insert(u.id, format!("failed: {e}"));
                }
            }
        }
    }
    let bar = opts
        .progress
        .then(|| units_bar("prepare", plan.units.len()));
    for u in plan.units.iter() {
        if let Some(b) = &bar {
            b.inc(1);
            b.set_message(u.label.clone());
        }
        if !runs_unit(u, gpu.has_collectives()) || failed.contains_key(&u.id) {
            continue;
        }
        if matches!(u.call, kc_core::plan::types::UnitCall::Collective { .. }) {
            phase(&format!("unit {} ({}): first eager run", u.id, u.label));
        }
        let r = gpu
            .prepare(u)
            .and_then(|_| gpu.enqueue(u, 0, At::Slots(0)))
            .and_then(|_| gpu.synchronize());
        match r {
            Err(e) => {
                failed.insert(u.id, format!("failed: {e}"));
                continue;
            }
            Ok(()) => {}
        }
        if u.tier == kc_core::plan::types::PlanTier::AtenOp {
            let captured = gpu.capture(|gpu| gpu.enqueue(u, 0, At::Slots(0)));
            if let Err(e) = captured.and_then(|g| {
                gpu.launch(&g)?;
                gpu.synchronize()
            }) {
                let _ = gpu.synchronize();
                failed.insert(u.id, format!("failed: cannot be captured: {e}"));
            }
        }
    }
    notes.append(&mut gpu.gemm_choices);
    phase("every unit ran once");
    // A collective that failed on one rank is left out on every rank (partners would wait
    // for it forever).
    if let Some(job) = job.as_mut() {
        for u in &plan.units {
            if let kc_core::plan::types::UnitCall::Collective { .. } = u.call {
                let bad = job.agree_max(
                    &format!("unit {} ok", u.id),
                    u64::from(failed.contains_key(&u.id)),
                )?;
                if bad > 0 && !failed.contains_key(&u.id) {
                    failed.insert(u.id, "failed on another rank of the job".into());
                }
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    let mut en = Energy {
        meter: nvml_dev.map(|device| nvml::NvmlMeter { device }),
        clock: SystemClock::default(),
        windows: Vec::new(),
        idle_w: None,
        job,
    };
    let mut idle = None;
    if let (Some(meter), Some(min)) = (en.meter.as_mut(), opts.energy_window_s) {
        gpu.synchronize()?;
        let spec = WindowSpec {
            label: "idle",
            min_seconds: min,
            poll_seconds: 0.002,
            stall_seconds: 3.0,
        };
        match energy::measure(meter, &en.clock, &spec, &mut || Ok(0)) {
            Ok(w) => {
                en.idle_w = Some(w.avg_power_w);
                en.windows.push(w.clone());
                idle = Some(w);
            }
            Err(e) => notes.push(format!("idle window failed: {e}")),
        }
    }

    let rank = match trace_rank {
        Some(r) => r,
        None => super::replay_rank(plan, opts.rank)?,
    };
    let ranks = plan.ranks().len();
    if ranks > 1 && trace_rank.is_none() {
        notes.push(format!(
            "the plan holds {ranks} ranks; this run replays rank {rank} (--rank), its collectives not executed (`--ranks all` replays every rank together)"
        ));
    }
    let mut results = Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        kc_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: if opts.isolated { "isolated" } else { "graph" }.to_string(),
        started,
        plan: PlanIdentity {
            file: opts.plan_path.clone(),
            crc32: opts.plan_crc32,
            sources: plan.header.sources.iter().map(|s| s.file.clone()).collect(),
            units: plan.units.len(),
            steps: plan.steps.len(),
            iterations: plan.iterations.count,
            iterations_found_by: plan.iterations.found_by.clone(),
        },
        idle,
        ..Default::default()
    };
    let replay = if opts.isolated { isolated } else { graph_mode };
    replay(Replay {
        plan,
        rank,
        opts,
        gpu: &mut gpu,
        en: &mut en,
        failed: &failed,
        results: &mut results,
        notes: &mut notes,
    })?;
    if let Some(m) = &en.meter {
        device.after = nvml::state(&m.device);
    }
    results.device = device;
    if let (Some(j), Some(tr)) = (en.job.take(), trace_rank) {
        results.job = Some(kc_core::results::JobRank {
            rank: j.env.rank,
            world_size: j.env.world_size,
            local_rank: j.env.local_rank,
            trace_rank: tr,
        });
        j.finish()?;
    }
    results.windows = std::mem::take(&mut en.windows);
    results.notes = notes;
    results.finished = energy::iso8601_ms(clock.unix_ms());
    Ok(results)
}

/// A progress bar over a plan's units, labelled with the phase.
fn units_bar(phase: &str, units: usize) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(units as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {phase} [{{bar:30}}] {{pos}}/{{len}} units {{msg}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b
}

fn unit_row(u: &PlanUnit, status: String) -> UnitResult {
    UnitResult {
        id: u.id,
        label: u.label.clone(),
        tier: u.tier.as_str().to_string(),
        family: u.family.clone(),
        call: call_str(&u.call),
        invocations: u.invocations,
        traced_mean_us: u.traced_ns_mean() / 1000.0,
        status,
        ..Default::default()
    }
}

fn status_of(u: &PlanUnit, failed: &HashMap<u32, String>, collectives: bool) -> String {
    if !runs_unit(u, collectives) {
        not_executed_reason(u)
    } else if let Some(f) = failed.get(&u.id) {
        f.clone()
    } else {
        "ok".into()
    }
}

fn graph_mode(r: Replay<'_, '_>) -> Result<(), ExecError> {
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
    let collectives = gpu.has_collectives();
    let runs_step = |s: &Step| {
        let unit = &plan.units[s.unit as usize];
        on_rank(s) && runs_unit(unit, collectives) && !failed.contains_key(&s.unit)
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
        return Err(ExecError::Unsupported(format!(
            "none of rank {rank}'s {on} steps is executed here ({}): nothing to replay",
            if collective {
                "its collectives need every rank together: `kc exec --ranks all`"
            } else {
                "see `kc plan show` for why each unit is not replayed"
            }
        )));
    }
    let mut step_event = HashMap::new();
    for op in &prog.ops {
        if let ProgramOp::Record { step, .. } = op {
            step_event.insert(*step, gpu.event(false)?);
        }
    }
    let fork = gpu.event(false)?;
    let joins = (1..gpu.streams.len())
        .map(|_| gpu.event(false))
        .collect::<Result<Vec<_>, _>>()?;
    // The model's memory image: tiers 1 and 2 address the arena directly, tier-3 steps
    // are prepared once each with their tensors as views over it.
    // Only this rank's regions, in an arena of this rank's size.
    let image_of_rank = plan.dataflow_of_rank(rank).filter(|_| opts.dataflow);
    let image = image_of_rank.as_ref();
    let mut memory_image = None;
    if let Some(df) = image {
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
            if !runs_step(s) || unit.tier != kc_core::plan::types::PlanTier::AtenOp {
                continue;
            }
            mi.results_planned += df.steps[i].outputs.iter().flatten().count() as u64;
            match gpu
                .prepare_step(unit, i as u32, &df.steps[i])
                .and_then(|n| gpu.synchronize().map(|_| n))
            {
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
        memory_image = Some(mi);
    }
    let capture = |gpu: &mut Gpu, image: Option<&kc_core::plan::types::PlanDataflow>| {
        gpu.capture(|gpu| {
            gpu.record(fork, 0)?;
            for s in 1..gpu.streams.len() {
                gpu.wait(s, fork)?;
            }
            for op in &prog.ops {
                match *op {
                    ProgramOp::Wait { stream, step } => {
                        gpu.wait(stream as usize, step_event[&step])?
                    }
                    ProgramOp::Launch { unit, stream, step } => {
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
                        gpu.record(step_event[&step], stream as usize)?
                    }
                }
            }
            for (k, s) in (1..gpu.streams.len()).enumerate() {
                gpu.record(joins[k], s)?;
                gpu.wait(0, joins[k])?;
            }
            Ok(())
        })
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
    job_phase(opts, "captured; warm-up replays");
    for _ in 0..opts.warmup {
        gpu.launch(&graph)?;
    }
    gpu.synchronize()?;
    job_phase(opts, "timing replays");
    let timed_start = unix_ms_now();
    let samples = gpu.time_launches(&graph, opts.runs.max(1))?;
    let timed_end = unix_ms_now();
    let replay = Stats::of(&samples);
    job_phase(opts, "energy windows");
    let energy = en.windows_of(gpu, &graph, "graph", replay.mean, 1.0, opts, notes)?;
    job_phase(opts, "timed");
    // One more replay under CUPTI, before anything else touches the image.
    let fidelity = if opts.verify {
        let steps = kc_core::results::fidelity::traced_steps(
            plan,
            prog.ops.iter().filter_map(|op| match *op {
                ProgramOp::Launch { unit, step, .. } => Some((unit, step)),
                _ => None,
            }),
        );
        match super::cupti::record(|| {
            gpu.launch(&graph)?;
            gpu.synchronize()
        }) {
            Ok(records) => {
                if let Some(path) = &opts.kernels_out {
                    let text = serde_json::to_vec(&records).unwrap_or_default();
                    if let Err(e) = kc_core::files::write_atomic(std::path::Path::new(path), &text)
                    {
                        notes.push(format!("{path}: cannot write the kernel records: {e}"));
                    }
                }
                Some(kc_core::results::fidelity::measure(&steps, &records))
            }
            Err(e) => {
                notes.push(format!("--verify: {e}"));
                None
            }
        }
    } else {
        None
    };
    if let (Some(mi), Some(df)) = (memory_image.as_mut(), image) {
        mi.nonfinite_share = gpu.arena_nonfinite_share(df)?;
        if let Some(share) = mi.nonfinite_share.filter(|&x| x > 0.01) {
            notes.push(format!(
                "{:.1} % of the memory image's float values are NaN or infinite after the replay: its power is not the model's",
                share * 100.0
            ));
            // The search replays steps one by one; in a job that would need every rank.
            if en.job.is_none() {
                mi.nonfinite_producers = nonfinite_producers(plan, df, gpu, &runs_step, 5)?;
            }
            if let Some(first) = mi.nonfinite_producers.first() {
                notes.push(format!("the first non-finite values come from {first}"));
            }
        }
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
        timed_start_unix_ms: Some(timed_start),
        timed_end_unix_ms: Some(timed_end),
        energy,
        memory_image,
        fidelity,
    });
    notes.push(format!(
        "graph mode: captured graph has {} nodes",
        graph.nodes
    ));
    results.units = plan
        .units
        .iter()
        .map(|u| unit_row(u, status_of(u, failed, collectives)))
        .collect();
    Ok(())
}

/// Replays the steps one at a time, in plan order on stream 0, from the memory image's
/// starting values, and names the first `limit` steps that leave non-finite values in a
/// place they read or write while every value there was finite before them: where a NaN
/// chain starts, as opposed to the steps that only carry it on. Values are sampled as in
/// the self-check (the first 64 KiB of each place).
fn nonfinite_producers(
    plan: &Plan,
    df: &kc_core::plan::types::PlanDataflow,
    gpu: &mut Gpu,
    runs_step: &dyn Fn(&Step) -> bool,
    limit: usize,
) -> Result<Vec<String>, ExecError> {
    gpu.fill_arena(df)?;
    let mut found = Vec::new();
    for (i, s) in plan.steps.iter().enumerate() {
        if !runs_step(s) {
            continue;
        }
        let unit = &plan.units[s.unit as usize];
        let places = &df.steps[i];
        // Each place is read with the element type this step uses there (memory the
        // allocator reused holds other types at other times); places whose type the step
        // does not state are not sampled.
        let (operand_types, result_type) = step_types(unit);
        let mut spots: Vec<(u64, u64, ElemType)> = places
            .operands
            .iter()
            .zip(&unit.slots)
            .zip(&operand_types)
            .filter_map(|((o, slot), d)| {
                Some((o.as_ref().copied()?, plan.buffers[*slot as usize].bytes, *d))
            })
            .collect();
        if let Some(d) = result_type {
            spots.extend(places.outputs.iter().flatten().map(|&(o, b)| (o, b, d)));
        }
        let bad = |gpu: &Gpu| -> Result<u64, ExecError> {
            let mut n = 0;
            for &(off, bytes, d) in &spots {
                n += gpu.nonfinite_at(off, bytes, d)?.0;
            }
            Ok(n)
        };
        let before = bad(gpu)?;
        gpu.enqueue(
            unit,
            0,
            At::Step {
                step: i as u32,
                places,
            },
        )?;
        gpu.synchronize()?;
        let after = bad(gpu)?;
        if before == 0 && after > 0 {
            found.push(format!(
                "step {i} (unit {} {}): {after} non-finite values sampled in its places after it ran, none before",
                unit.id, unit.label
            ));
            if found.len() >= limit {
                break;
            }
        }
    }
    Ok(found)
}

/// The element type a step uses at each operand (the unit's slot order; `Unknown` where
/// the call does not say) and at its tier-3 results (the first floating-point input's, for
/// ops that keep their input's type; `None` for conversions and ops without one).
fn step_types(unit: &PlanUnit) -> (Vec<ElemType>, Option<ElemType>) {
    use kc_core::plan::types::UnitCall;
    let mut types = vec![ElemType::Unknown; unit.slots.len()];
    let mut set = |slot: u32, d: ElemType| {
        if let Some(k) = unit.slots.iter().position(|&s| s == slot) {
            types[k] = d;
        }
    };
    let mut result = None;
    match &unit.call {
        UnitCall::Kernel { args, .. } => {
            for a in args {
                if let kc_core::plan::types::KernelArgValue::Pointer { slot, dtype } = a {
                    set(*slot, *dtype);
                }
            }
        }
        UnitCall::Gemm(g) => {
            set(g.a, g.a_type);
            set(g.b, g.b_type);
            set(g.c, g.c_type);
            if let Some(bias) = g.bias {
                set(bias, g.c_type);
            }
        }
        UnitCall::AtenOp { op, args } => {
            if let Ok(c) = kc_core::plan::aten_call::build(op, args, &unit.kernels) {
                for a in &c.args {
                    match a {
                        kc_core::plan::aten_call::CallArg::Tensor(t) => set(t.slot, t.dtype),
                        kc_core::plan::aten_call::CallArg::TensorList(ts)
                        | kc_core::plan::aten_call::CallArg::OptionalTensorList(ts) => {
                            ts.iter().for_each(|t| set(t.slot, t.dtype))
                        }
                        _ => {}
                    }
                }
                let converts = matches!(
                    c.op.as_str(),
                    "_to_copy" | "to" | "type_as" | "_softmax" | "_log_softmax" | "view_as_real"
                );
                if !converts {
                    result = c.args.iter().find_map(|a| match a {
                        kc_core::plan::aten_call::CallArg::Tensor(t)
                            if kc_core::plan::aten_call::is_float(t.dtype) =>
                        {
                            Some(t.dtype)
                        }
                        _ => None,
                    });
                }
            }
        }
        _ => {}
    }
    (types, result)
}

fn isolated(r: Replay<'_, '_>) -> Result<(), ExecError> {
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
    // Context: the units' invocations run at their places in the memory image, so the
    // image is allocated and every tier-3 step prepared over it, as in graph mode.
    let image_of_rank = plan
        .dataflow_of_rank(rank)
        .filter(|_| opts.cache == CachePolicy::Context && opts.dataflow);
    let image = image_of_rank.as_ref();
    let mut steps_of: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Some(df) = image {
        gpu.allocate_arena(df)?;
        for (i, s) in plan.steps.iter().enumerate() {
            let unit = &plan.units[s.unit as usize];
            if plan.streams[s.stream as usize].rank != rank
                || !runs_unit(unit, gpu.has_collectives())
                || failed.contains_key(&s.unit)
            {
                continue;
            }
            if unit.tier == kc_core::plan::types::PlanTier::AtenOp {
                // A step that cannot be placed runs on its unit's own tensors (enqueue
                // falls back to them), as in graph mode.
                let _ = gpu
                    .prepare_step(unit, i as u32, &df.steps[i])
                    .and_then(|_| gpu.synchronize());
            }
            steps_of.entry(s.unit).or_default().push(i as u32);
        }
    } else if opts.cache == CachePolicy::Context {
        notes.push(
            "cache context needs the plan's memory image (dataflow); measured warm instead".into(),
        );
    }
    // What the results say is what was measured: context without a memory image is warm.
    let measured_cache = if opts.cache == CachePolicy::Context && image.is_none() {
        CachePolicy::Warm
    } else {
        opts.cache
    };
    let bar = opts
        .progress
        .then(|| units_bar("isolated", plan.units.len()));
    let counts = super::invocations_on_rank(plan, rank);
    let mut rows = Vec::with_capacity(plan.units.len());
    for u in &plan.units {
        if let Some(b) = &bar {
            b.set_message(u.label.clone());
            b.inc(1);
        }
        let n = counts[u.id as usize];
        if n == 0 {
            continue;
        }
        let status = status_of(u, failed, gpu.has_collectives());
        if status != "ok" {
            let mut row = unit_row(u, status);
            row.invocations = n;
            rows.push(row);
            continue;
        }
        let places = image.zip(steps_of.get(&u.id).map(Vec::as_slice));
        // A collective runs alone on every rank at once: the ranks meet first.
        let collective = matches!(u.call, kc_core::plan::types::UnitCall::Collective { .. });
        if let (true, Some(job)) = (collective, en.job.as_mut()) {
            job.barrier(&format!("unit {}", u.id))?;
        }
        match measure_unit(plan, u, n, places, opts, gpu, en, notes) {
            Ok(row) => rows.push(row),
            Err(e) => {
                // A unit that fails is named and the run goes on with the rest.
                let _ = gpu.synchronize();
                let mut row = unit_row(u, format!("failed: {e}"));
                row.invocations = n;
                rows.push(row);
            }
        }
    }
    gpu.free_copies()?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
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
    results.isolated = Some(IsolatedSummary {
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
    });
    results.units = rows;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn measure_unit(
    plan: &Plan,
    u: &PlanUnit,
    invocations: u64,
    places: Option<(&kc_core::plan::types::PlanDataflow, &[u32])>,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    notes: &mut Vec<String>,
) -> Result<UnitResult, ExecError> {
    // Tier-3 ops replay on their own tensors, so their buffers are not rotated.
    let rotation = match opts.cache {
        _ if places.is_some() => 1,
        _ if u.tier == kc_core::plan::types::PlanTier::AtenOp => 1,
        CachePolicy::Warm | CachePolicy::Context => 1,
        CachePolicy::Cold => u.cold_rotation.max(1),
    };
    gpu.make_copies(plan, u, rotation)?;
    // In context every step of the unit runs once per cycle, in model order.
    let cycle = places.map_or(rotation, |(_, steps)| steps.len().max(1) as u32);
    let unroll = schedule::unroll_count(u.traced_ns_mean(), opts.unroll_target_ns, opts.max_unroll)
        .max(cycle.min(opts.max_unroll));
    let graph = gpu.capture(|gpu| {
        for i in 0..unroll {
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
            gpu.enqueue(u, 0, at)?;
        }
        Ok(())
    })?;
    for _ in 0..2 {
        gpu.launch(&graph)?;
    }
    gpu.synchronize()?;
    // What one launch of the unit's graph ran, before it is timed (CUPTI, --verify).
    let launches_verified = if opts.verify {
        match super::cupti::record(|| {
            gpu.launch(&graph)?;
            gpu.synchronize()
        }) {
            Ok(records) => {
                let traced: Vec<&str> = u
                    .kernels
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !kc_core::results::fidelity::is_runtime_copy(k))
                    .collect();
                Some(kc_core::results::fidelity::unit_launches(
                    &traced, &records, unroll,
                ))
            }
            Err(e) => {
                notes.push(format!("unit {} --verify: {e}", u.id));
                None
            }
        }
    } else {
        None
    };
    let probe = Stats::of(&gpu.time_launches(&graph, 3)?);
    let mut launches = ((opts.min_unit_time_s * 1e6 / probe.mean.max(0.001)).ceil() as usize)
        .clamp(10, opts.runs.max(10) * 20);
    // Every rank times a collective the same number of times (the job's most).
    if let (kc_core::plan::types::UnitCall::Collective { .. }, Some(job)) =
        (&u.call, en.job.as_mut())
    {
        launches = job.agree_max(&format!("unit {} launches", u.id), launches as u64)? as usize;
    }
    let timed_start = unix_ms_now();
    let samples = gpu.time_launches(&graph, launches)?;
    let timed_end = unix_ms_now();
    let per_launch = Stats::of(&samples);
    let time = per_launch.scaled(f64::from(unroll));
    let label = format!("unit {} {}", u.id, u.label);
    let energy = en.windows_of(
        gpu,
        &graph,
        &label,
        per_launch.mean,
        f64::from(unroll),
        opts,
        notes,
    )?;
    let mut row = unit_row(u, "ok".into());
    row.invocations = invocations;
    row.unroll = unroll;
    row.launches = samples.len();
    row.predicted_us = Some(time.mean * invocations as f64);
    row.predicted_energy_j = energy
        .as_ref()
        .map(|e| e.per_item_j.mean * invocations as f64);
    row.time_us = Some(time);
    row.energy = energy;
    row.measured_start_unix_ms = Some(timed_start);
    row.measured_end_unix_ms = Some(timed_end);
    row.launches_verified = launches_verified;
    Ok(row)
}
