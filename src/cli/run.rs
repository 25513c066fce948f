//! `kc run [TRACE] [--shapes F] [-o DIR]`: the whole pipeline in one command. Ingests,
//! lowers and plans; replays on the GPU when this build has the `cuda` feature and a GPU
//! is present; otherwise stops after the plan and prints the trace-side analysis and what
//! it would run. Without TRACE it runs on the embedded BLOOM-560M fixture.

use crate::{ingest, lower, plan};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The default input: BLOOM-560M inference (seq 5) on an H100, 3 profiled iterations.
pub const FIXTURE_NAME: &str = "bloom560m_seq5.pt.trace.json.gz";
/// The graph replay's kernel records (CUPTI), written beside the results where `--verify`
/// ran ([`kc_core::results::fidelity::KernelRecord`], as `kc exec --kernels-out`).
pub const GRAPH_KERNELS: &str = kc_core::report::bundle::GRAPH_KERNELS;
pub const FIXTURE: &[u8] = include_bytes!("../../fixtures/bloom560m_seq5.pt.trace.json.gz");

#[derive(clap::Args)]
pub struct Args {
    /// A Kineto trace (.json or .json.gz); without it, the embedded BLOOM-560M H100 trace.
    pub trace: Option<PathBuf>,
    /// Shapes for ops the trace recorded without them: the Execution Trace recorded in the
    /// same run, or a kc JSONL shape log.
    #[arg(long)]
    pub shapes: Option<PathBuf>,
    /// The values the model's integer tensors held, recorded beside the Execution Trace (as
    /// `kc ingest --values`).
    #[arg(long, value_name = "VALUES", requires = "shapes")]
    pub values: Option<PathBuf>,
    /// For a trace of CUDA-graph replays: the eager trace of the same step that lends its
    /// ops (as `kc ingest --eager`).
    #[arg(long, value_name = "EAGER_TRACE")]
    pub eager: Option<PathBuf>,
    /// For a trace of CUDA-graph replays: the profiled capture of that graph (as `kc ingest
    /// --capture`; `--shapes` then names the capture's Execution Trace).
    #[arg(long, value_name = "CAPTURE_TRACE", conflicts_with = "eager")]
    pub capture: Option<PathBuf>,
    /// For a torch.compile'd trace: the Inductor cache of its Triton kernels (as `kc ingest
    /// --inductor-cache`).
    #[arg(long, value_name = "DIR")]
    pub inductor_cache: Option<PathBuf>,
    /// Output directory (default: kc-out/<trace name>).
    #[arg(short, long, alias = "out")]
    pub output: Option<PathBuf>,
    /// Cache state of the isolated replay (GPU builds): context (each invocation at its place
    /// in the model's memory image; the default when the plan has one), warm or cold. Only
    /// that one is measured unless --all-caches.
    #[arg(long, value_enum)]
    pub cache: Option<crate::results::CachePolicy>,
    /// Also replay every unit in the other cache states (context, warm and cold), their sums
    /// beside the first (--cache, or the default): three isolated passes instead of one.
    #[arg(long)]
    pub all_caches: bool,
    /// Timed graph replays (and the base for launches per unit in isolation), as `kc exec`.
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Timed graph replays stop after this many seconds of them if --runs takes longer (at
    /// least 20 replays; 0: always --runs). Half a second of EfficientNet-V2-S's 12.4 ms
    /// replays leaves their mean's standard error near 0.02 %.
    #[arg(long, default_value_t = 0.5)]
    pub timed_seconds: f64,
    /// Untimed replays or launches before timing starts, as `kc exec`.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Energy windows per measured item on the GPU (the same default as `kc exec`).
    #[arg(long, default_value_t = 3)]
    pub energy_repeats: usize,
    /// Time only (as `--energy-repeats 0`).
    #[arg(long)]
    pub no_energy: bool,
    /// Minimum energy window of the graph replay and of the idle GPU, seconds. Five of the
    /// counter's ticks measure a window's energy exactly and its duration to ~0.1 %; the
    /// graph gets --energy-repeats of them.
    #[arg(long, default_value_t = 0.5)]
    pub graph_energy_window: f64,
    /// Minimum energy window per unit in isolation, seconds. Windows start and end at the
    /// NVML counter's ticks (~0.1 s apart on an H100) and follow one another without a gap,
    /// so the default makes each window one tick. The graph's are --graph-energy-window.
    #[arg(long, default_value_t = 0.05)]
    pub unit_energy_window: f64,
    /// Energy windows per unit in isolation, at most (at least two).
    #[arg(long, default_value_t = 10)]
    pub unit_energy_windows: usize,
    /// A unit's windows end (after two) once the units' summed energy can be known to
    /// this relative standard error, percent: each unit stops at the target / √(its share
    /// of the traced time). A unit whose clock the power cap held down ends after that
    /// window (its duty cycle gives its energy). 0 always measures --unit-energy-windows.
    #[arg(long, default_value_t = 0.5)]
    pub unit_energy_target: f64,
    /// A unit whose target (--unit-energy-target / √(its share)) is at least this, percent,
    /// ends after one window: one window's spread meets it (a report gives such a unit the
    /// run's pooled spread of one window). 0: every unit at least two windows.
    #[arg(long, default_value_t = 100.0 * crate::exec::ONE_WINDOW_REL_SD)]
    pub one_window_spread: f64,
    /// A diagnostic, as `kc exec --duty-energy-all`: every unit's energy measured at a duty
    /// cycle (a spin kernel after each launch, its power taken off), not only a unit that
    /// alone drew past the power limit; the report gives both figures.
    #[arg(long)]
    pub duty_energy_all: bool,
    /// A diagnostic, as `kc exec --energy-full-queue`: each energy series keeps its full
    /// queue of launches past the tick that ends it (up to session 54's way).
    #[arg(long)]
    pub energy_full_queue: bool,
    /// A diagnostic, as `kc exec --duty-shares-both`: a unit measured at a duty cycle is
    /// measured at both shares, a third and a fifth, the other kept beside its answer.
    #[arg(long)]
    pub duty_shares_both: bool,
    /// A diagnostic, as `kc exec --round-energy`: also measure the round's own energy,
    /// which `kc report --switch-energy-from-round` prices the switches at (the prediction
    /// does not take it).
    #[arg(long)]
    pub round_energy: bool,
    /// As `kc exec --no-lead-in-units`: skip the units' producers (the units that hold
    /// the first --lead-in-share of the units' energy, each measured after the model's steps
    /// leading up to each of its invocations, less those steps alone; the prediction takes
    /// their energy in place of alone). They took 5-64 s of `kc run` on sessions 35-36's
    /// eighteen models (13-202 units).
    #[arg(long)]
    pub no_lead_in_units: bool,
    /// As `kc exec --lead-in-share`: the share of the units' summed energy whose units are
    /// measured after their lead-ins (1: every unit).
    #[arg(long, default_value_t = kc_core::results::LEAD_IN_SHARE, value_parser = super::exec::share_in_unit_interval, conflicts_with = "no_lead_in_units")]
    pub lead_in_share: f64,
    /// A diagnostic, as `kc exec --units-restoring-all`: every unit measured again with
    /// every launch from the model's values at its places (the prediction takes it).
    #[arg(long)]
    pub units_restoring_all: bool,
    /// As `kc exec --units-as-they-run`: keep every unit as its launch ran it, with no
    /// invocation given the model's values again where it read another's result.
    #[arg(long)]
    pub units_as_they_run: bool,
    /// A diagnostic, as `kc exec --each-invocation-cold-control`: the control keeps each
    /// invocation's own values beforehand, read from memory as the model's are.
    #[arg(long, conflicts_with = "units_as_they_run")]
    pub each_invocation_cold_control: bool,
    /// As `kc exec --round-as-recorded`: keep every unit's kernels in the round as
    /// recorded, also where the round ran its places to non-finite values, ran its
    /// kernels slower than alone, or ran them another time after each launch's first cycle.
    #[arg(long)]
    pub round_as_recorded: bool,
    /// A diagnostic, as `kc exec --round-bound-reads-as-alone`: the round's float reads of
    /// allocated results read their stand-ins too.
    #[arg(long)]
    pub round_bound_reads_as_alone: bool,
    /// What each unit alone reads at its places, as `kc exec --unit-values`: the values its
    /// steps read in the model (`at-steps`, the default) or what one pass of every step
    /// left there (`after-pass`).
    #[arg(long, value_enum, default_value_t = kc_core::results::UnitValuesFrom::AtSteps)]
    pub unit_values: kc_core::results::UnitValuesFrom,
    /// A diagnostic, as `kc exec --round-runs`: rounds of every unit, each at other runs
    /// of every unit spread over its runs (1, the default: each unit's first run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub round_runs: u32,
    /// A diagnostic, as `kc exec --round-cycles`: the round's cycles per launch (by
    /// default about 0.5 ms of units a launch, or ten times a restoring round's copy). On an
    /// H100 the compiled ConvNeXt-T's round read −3.8 % at its 3 and −1.5 % at 12 (session
    /// 30); on the H200, 12 or 32 cycles moved four models' answers by 0.2 points at most
    /// (session 31).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cycles: Option<u32>,
    /// A diagnostic, as `kc exec --kinds-left-out`: the program of every unit measured
    /// whole, without each kind of unit and with it doubled (the prediction does not take
    /// it; steps that write integers in place run once in every program).
    #[arg(long)]
    pub kinds_left_out: bool,
    /// A diagnostic, as `kc exec --lead-in-kernels`: both launches of each unit measured
    /// after its lead-ins also recorded with CUPTI (the prediction does not take it).
    #[arg(long)]
    pub lead_in_kernels: bool,
    /// As `kc exec --no-alone-in-model-cache`: do not record each unit once more in the
    /// model's cache state (its kernels alone, each invocation after L2 is turned over as
    /// the model's steps before it leave it; set against kc's graph per unit in the report).
    #[arg(long)]
    pub no_alone_in_model_cache: bool,
    /// Do not record the graph replay's kernels with CUPTI (kc run verifies what its
    /// replay launched by default, as `kc exec --verify`).
    #[arg(long)]
    pub no_verify: bool,
    /// Also write the graph replay as a Chrome trace (opens in Perfetto), as `kc exec`.
    #[arg(long)]
    pub trace_out: Option<PathBuf>,
    /// The model's own measurement (reference.json of traces/capture.py): on a GPU, the
    /// report compares it with kc's replay and prediction per iteration. Without a GPU it
    /// is read and its entry checked, and the summary says nothing was compared.
    #[arg(long, value_name = "REFERENCE.json")]
    pub reference: Option<PathBuf>,
    /// The entry of the reference file to compare with (default: the one whose trace is
    /// the replayed trace); an entry of another trace is refused.
    #[arg(long, value_name = "NAME", requires = "reference")]
    pub reference_entry: Option<String>,
    /// As `kc report --method-spread`: other models' answers, whose errors give the
    /// method's own spread beside the prediction's error bar (read and checked before the
    /// replay).
    #[arg(long, value_name = "ANSWERS.json")]
    pub method_spread: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct RunSummary {
    trace: String,
    out_dir: String,
    ingest: ingest::summary::IngestSummary,
    lower: lower::summary::LowerSummary,
    plan: plan::show::PlanSummary,
    /// Traced GPU time of the replayable units (tiers 1-4): what a replay is checked
    /// against. Not a prediction: kc predicts with the sum of isolated replays on a GPU.
    traced_replayable_us: f64,
    gpu: String,
    /// Without a GPU: the reference was read, and nothing compared with it.
    reference: Option<String>,
    report: Option<crate::report::model::Report>,
}

fn stem(p: &Path) -> String {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    n.split(".pt.trace")
        .next()
        .unwrap_or(&n)
        .trim_end_matches(".json.gz")
        .trim_end_matches(".json")
        .to_string()
}

pub fn run(a: Args) -> i32 {
    let out_base = a.output.clone().unwrap_or_else(|| PathBuf::from("kc-out"));
    let (trace, out_dir) = match a.trace {
        Some(t) => {
            let d = out_base.join(stem(&t));
            (t, d)
        }
        None => {
            let d = out_base.join(stem(Path::new(FIXTURE_NAME)));
            if let Err(e) = std::fs::create_dir_all(&d) {
                return super::fail(format!("{}: cannot create: {e}", d.display()));
            }
            let t = d.join(FIXTURE_NAME);
            if let Err(e) = std::fs::write(&t, FIXTURE) {
                return super::fail(format!("{}: cannot write the fixture: {e}", t.display()));
            }
            (t, d)
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        return super::fail(format!("{}: cannot create: {e}", out_dir.display()));
    }
    let opts = ingest::IngestOptions {
        shapes: a.shapes,
        values: a.values,
        eager: a.eager,
        capture: a.capture,
        inductor_cache: a.inductor_cache,
        default_inductor_cache: true,
        progress: !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..Default::default()
    };
    let (mut g, diags) = match ingest::ingest(std::slice::from_ref(&trace), &opts) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    let ingest_summary = ingest::summary::summarize(&g, &diags);
    let graph_path = out_dir.join("graph.kcir");
    if let Err(e) = ingest::write_graph(&g, &graph_path) {
        return super::fail(e);
    }
    let (_ctx, ldiags) = match lower::lower(&mut g) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    let lower_summary = lower::summary::summarize(&g, &ldiags);
    let lowered_path = out_dir.join("graph.lowered.kcir");
    if let Err(e) = ingest::write_graph(&g, &lowered_path) {
        return super::fail(e);
    }
    let p = plan::build::build(&g);
    let plan_path = out_dir.join("plan.kcplan");
    let bytes = match plan::write(&p, &plan_path) {
        Ok(b) => b,
        Err(e) => return super::fail(e),
    };
    let plan_summary = plan::show::summarize(&p, bytes);
    // The reference is read and its entry checked here, GPU or not: a wrong file or another
    // model's entry is said now, not after minutes of replay (or never, without a GPU).
    let mut reference_note = None;
    if let Some(r) = &a.reference {
        let sources: Vec<String> = p.header.sources.iter().map(|s| s.file.clone()).collect();
        if let Err(e) = crate::report::read_reference(r, &sources, a.reference_entry.as_deref()) {
            return super::fail(e);
        }
        if !crate::exec::gpu_present() {
            reference_note = Some(format!(
                "reference: {} read; nothing compared (no GPU replay here: the comparison needs kc's replay, on a GPU)",
                r.display()
            ));
        }
    }
    let method_spread = match a
        .method_spread
        .as_deref()
        .map(crate::report::read_method_spread)
    {
        Some(Err(e)) => return super::fail(e),
        Some(Ok(m)) => Some(m),
        None => None,
    };
    let settings = ReplaySettings {
        cache: a.cache,
        all_caches: a.all_caches,
        runs: a.runs,
        timed_seconds: (a.timed_seconds > 0.0).then_some(a.timed_seconds),
        warmup: a.warmup,
        energy_repeats: if a.no_energy { 0 } else { a.energy_repeats },
        graph_energy_window: a.graph_energy_window.max(0.05),
        unit_energy_window: a.unit_energy_window.max(0.01),
        unit_energy_windows: a
            .unit_energy_windows
            .max(crate::exec::MIN_WINDOWS_WITH_TARGET),
        unit_energy_target: a.unit_energy_target.max(0.0) / 100.0,
        one_window_rel_sd: a.one_window_spread.max(0.0) / 100.0,
        duty_energy_all: a.duty_energy_all,
        energy_full_queue: a.energy_full_queue,
        duty_shares_both: a.duty_shares_both,
        round_energy: a.round_energy,
        lead_in_units: !a.no_lead_in_units,
        lead_in_share: a.lead_in_share,
        units_restoring_all: a.units_restoring_all,
        units_as_they_run: a.units_as_they_run,
        each_invocation_cold_control: a.each_invocation_cold_control,
        round_as_recorded: a.round_as_recorded,
        round_bound_reads_as_alone: a.round_bound_reads_as_alone,
        unit_values: a.unit_values,
        round_runs: a.round_runs,
        round_cycles: a.round_cycles,
        kinds_left_out: a.kinds_left_out,
        lead_in_kernels: a.lead_in_kernels,
        alone_in_model_cache: !a.no_alone_in_model_cache,
        verify: !a.no_verify,
        trace_out: a.trace_out.clone(),
        progress: !a.json,
        reference: a.reference.clone(),
        reference_entry: a.reference_entry.clone(),
        method_spread,
    };
    let (gpu, report) = if crate::exec::gpu_present() {
        match replay(&p, &plan_path, &out_dir, &settings) {
            Ok(r) => (
                format!(
                    "GPU replay: done; report in {}",
                    out_dir.join("report").display()
                ),
                Some(r),
            ),
            Err(e) => return super::fail(e),
        }
    } else {
        (gpu_status(), None)
    };
    let s = RunSummary {
        trace: trace.display().to_string(),
        out_dir: out_dir.display().to_string(),
        traced_replayable_us: p.header.replayable_traced_ns as f64 / 1000.0,
        ingest: ingest_summary,
        lower: lower_summary,
        plan: plan_summary,
        gpu: gpu.clone(),
        reference: reference_note.clone(),
        report,
    };
    if a.json {
        super::print_json(&s);
        return 0;
    }
    println!("kc run: {}\n", s.trace);
    println!(
        "ingest  {} GPU ops ({} kernels, {} memcpys, {} memsets) in {} unique signatures, {:.1} us of GPU time, {:.1} % linked to their op",
        s.ingest.gpu_ops,
        s.ingest.kernels,
        s.ingest.memcpys,
        s.ingest.memsets,
        s.ingest.unique_signatures,
        s.ingest.gpu_time_us,
        100.0 * s.ingest.linked_to_op as f64 / s.ingest.gpu_ops.max(1) as f64
    );
    println!(
        "traced  {:.1} us of GPU time in the replayable units (tiers 1-4), as the profiler recorded it: \
         the figure a replay is checked against, not a prediction (kc's prediction is the sum of \
         isolated replays, measured on a GPU)",
        s.traced_replayable_us
    );
    println!("lower   replay tiers:\n");
    print!("{}", lower::summary::render_text(&s.lower));
    println!();
    print!("{}", plan::show::render_text(&s.plan));
    println!(
        "\n  files in {}: graph.kcir, graph.lowered.kcir, plan.kcplan",
        s.out_dir
    );
    if let Some(r) = &s.report {
        let md = crate::report::render::markdown(r);
        println!();
        print!("{}", md.split("## By tier").next().unwrap_or(&md));
    }
    println!("\n{gpu}");
    if let Some(n) = &reference_note {
        println!("{n}");
    }
    0
}

/// What `kc run` measures on a GPU, from its options.
struct ReplaySettings {
    cache: Option<crate::results::CachePolicy>,
    all_caches: bool,
    runs: usize,
    timed_seconds: Option<f64>,
    warmup: usize,
    energy_repeats: usize,
    graph_energy_window: f64,
    unit_energy_window: f64,
    unit_energy_windows: usize,
    /// Relative standard error of the units' summed energy that ends a unit's windows
    /// early (0: never).
    unit_energy_target: f64,
    /// A unit whose energy target is at least this ends after one window (0: never).
    one_window_rel_sd: f64,
    duty_energy_all: bool,
    energy_full_queue: bool,
    duty_shares_both: bool,
    round_energy: bool,
    lead_in_units: bool,
    lead_in_share: f64,
    units_restoring_all: bool,
    units_as_they_run: bool,
    each_invocation_cold_control: bool,
    round_as_recorded: bool,
    round_bound_reads_as_alone: bool,
    unit_values: kc_core::results::UnitValuesFrom,
    round_runs: u32,
    round_cycles: Option<u32>,
    kinds_left_out: bool,
    lead_in_kernels: bool,
    alone_in_model_cache: bool,
    verify: bool,
    trace_out: Option<PathBuf>,
    progress: bool,
    reference: Option<PathBuf>,
    reference_entry: Option<String>,
    method_spread: Option<crate::report::method_spread::Answers>,
}

/// The GPU half of `kc run`: the plan as one graph, every unit in isolation, and the
/// report comparing them, all written into `out_dir`.
fn replay(
    p: &plan::Plan,
    plan_path: &Path,
    out_dir: &Path,
    settings: &ReplaySettings,
) -> Result<crate::report::model::Report, String> {
    let (cache, energy_repeats, progress) =
        (settings.cache, settings.energy_repeats, settings.progress);
    use crate::exec::{self, CachePolicy, ExecOptions};
    // The answer needs the graph and one isolated pass: context where the plan has the
    // model's memory image, else warm. --all-caches adds the others, their sums beside.
    let first = cache.unwrap_or(if p.dataflow.is_some() {
        CachePolicy::Context
    } else {
        CachePolicy::Warm
    });
    let mut caches = vec![first];
    if settings.all_caches {
        for c in [CachePolicy::Context, CachePolicy::Warm, CachePolicy::Cold] {
            if !caches.contains(&c) && (c != CachePolicy::Context || p.dataflow.is_some()) {
                caches.push(c);
            }
        }
    }
    let bytes = crate::envelope::read_bytes(&crate::plan::PLAN_FILE, plan_path)
        .map_err(|e| e.to_string())?;
    let base = ExecOptions {
        // kc run checks what its replay launched (CUPTI), where CUPTI loads, unless told not to,
        // and keeps the records beside the results: which kernel a step ran where the
        // alignment with the trace breaks is then read afterwards, not run again (BLOOM's
        // training step lined up only to step 173 in sessions 37-46, and no records were kept).
        verify: settings.verify,
        kernels_out: settings
            .verify
            .then(|| out_dir.join(GRAPH_KERNELS).display().to_string()),
        runs: settings.runs.max(1),
        timed_seconds: settings.timed_seconds,
        warmup: settings.warmup,
        energy_window_s: (energy_repeats > 0).then_some(settings.graph_energy_window),
        energy_repeats: energy_repeats.max(1),
        energy_full_queue: settings.energy_full_queue,
        progress,
        plan_path: plan_path.display().to_string(),
        plan_crc32: crc32fast::hash(&bytes),
        ..Default::default()
    };
    if progress {
        eprintln!("kc run: replaying the plan as one CUDA graph");
    }
    let graph = exec::execute(p, &base).map_err(|e| e.to_string())?;
    // The graph's results are on disk before the isolated passes start, and each pass
    // writes its results so far before an opt-in diagnostic: a fault later loses only what
    // it was measuring. The files are written again, whole, at the end.
    let graph_path = out_dir.join(super::exec::results_name("plan", false, ""));
    crate::report::write_all(&[(graph_path.clone(), pretty(&graph))]).map_err(|e| e.to_string())?;
    let mut isolated_runs = Vec::with_capacity(caches.len());
    for cache in &caches {
        if progress {
            eprintln!(
                "kc run: replaying every unit in isolation ({} cache)",
                cache.as_str()
            );
        }
        let iso_opts = ExecOptions {
            isolated: true,
            cache: *cache,
            // At least two contiguous windows per unit give its energy a spread (the
            // prediction's error bar); more until they agree to the target.
            energy_repeats: settings.unit_energy_windows,
            energy_target_rel_sem: settings.unit_energy_target,
            one_window_rel_sd: settings.one_window_rel_sd,
            energy_window_s: base.energy_window_s.map(|_| settings.unit_energy_window),
            duty_energy_all: settings.duty_energy_all,
            energy_full_queue: settings.energy_full_queue,
            duty_shares_both: settings.duty_shares_both,
            round_energy: settings.round_energy,
            lead_in_units: settings.lead_in_units,
            lead_in_share: settings.lead_in_share,
            unit_restoring_all: settings.units_restoring_all,
            each_invocation_values: !settings.units_as_they_run,
            each_invocation_cold_control: settings.each_invocation_cold_control,
            round_values_check: !settings.round_as_recorded,
            round_bound_reads_as_alone: settings.round_bound_reads_as_alone,
            unit_values: settings.unit_values,
            round_runs: settings.round_runs as usize,
            round_cycles: settings.round_cycles,
            kinds_left_out: settings.kinds_left_out,
            lead_in_kernels: settings.lead_in_kernels,
            alone_in_model_cache: settings.alone_in_model_cache,
            checkpoint: Some(super::exec::results_checkpoint(
                out_dir.join(super::exec::results_name("plan", true, cache.as_str())),
            )),
            ..base.clone()
        };
        isolated_runs.push(exec::execute(p, &iso_opts).map_err(|e| e.to_string())?);
    }
    let isolated = &isolated_runs[0];
    let mut rep = crate::report::model::build(Some(&graph), Some(isolated));
    for other in &isolated_runs[1..] {
        rep.add_isolated_sum(other);
    }
    rep.use_plan(p);
    if let Some(r) = &settings.reference {
        crate::report::add_reference(&mut rep, r, settings.reference_entry.as_deref())
            .map_err(|e| e.to_string())?;
        // kc's graph beside the model's, kernel by kernel, where capture.py kept the
        // model's graph replays and the graph replay was recorded.
        let kernels = out_dir.join(GRAPH_KERNELS);
        // A comparison that cannot be made is a note: the replay's results are written
        // whatever it says.
        if let (Some(m), true) = (
            crate::report::model_graph_of_reference(&rep, r),
            kernels.is_file(),
        ) {
            if let Err(e) = crate::report::add_side_by_side(&mut rep, &m, &kernels, Some(p)) {
                rep.notes
                    .push(format!("kc's graph not set beside the model's: {e}"));
            }
        }
    }
    // Last: the side-by-side above builds the prediction again.
    if let Some(m) = &settings.method_spread {
        rep.add_method_spread(m);
    }
    let rdir = out_dir.join("report");
    std::fs::create_dir_all(&rdir).map_err(|e| format!("{}: {e}", rdir.display()))?;
    let mut files = vec![(graph_path, pretty(&graph))];
    files.extend(crate::report::bundle::files(&rep, &graph, Some(p), &rdir));
    for (cache, r) in caches.iter().zip(&isolated_runs) {
        files.push((
            out_dir.join(super::exec::results_name("plan", true, cache.as_str())),
            pretty(r),
        ));
    }
    if let Some(t) = &settings.trace_out {
        files.push((
            t.clone(),
            pretty(&crate::report::trace_out::chrome_trace(&graph, None)),
        ));
    }
    crate::report::write_all(&files).map_err(|e| e.to_string())?;
    Ok(rep)
}

fn pretty<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

fn gpu_status() -> String {
    let why = if cfg!(feature = "cuda") {
        "no GPU answered (no CUDA driver or no device)"
    } else {
        "this build has no GPU executor (build with --features cuda for tiers 1, 2 and 4, or \
         --features torch for tiers 1-4)"
    };
    let tiers = if cfg!(feature = "torch") {
        "tiers 1-4"
    } else if cfg!(feature = "cuda") {
        "tiers 1, 2 and 4; tier 3 needs a --features torch build"
    } else {
        "tiers 1, 2 and 4 with --features cuda, 1-4 with --features torch"
    };
    format!(
        "GPU replay: skipped, {why}. On a GPU machine kc run replays the plan as one CUDA graph \
         and every unit in isolation ({tiers}), timing with CUDA events and measuring energy \
         with NVML, and writes a report; the numbers above are traced, not replayed."
    )
}
