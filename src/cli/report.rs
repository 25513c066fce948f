//! `kc report RESULTS [--isolated ISO] [--plan P] [-o DIR]`, `kc report --baseline OLD NEW`
//! and `kc energy --power-log LOG RESULTS`.

use crate::report::{self, baseline, powerlog, render, ReportError};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// RESULTS.json (graph or isolated); with --baseline: OLD.json NEW.json.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The isolated-mode results to compare a graph-mode RESULTS.json against.
    #[arg(long)]
    pub isolated: Option<PathBuf>,
    /// The plan that was executed, for the replay timeline chart.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// The model's own measurement: a reference.json of traces/capture.py; the report then
    /// compares the model, kc's graph replay, the prediction and the traced sum per iteration.
    #[arg(long, value_name = "REFERENCE.json")]
    pub reference: Option<PathBuf>,
    /// The entry of --reference to use (default: the one recorded with the results' trace).
    #[arg(long, value_name = "NAME")]
    pub reference_entry: Option<String>,
    /// Output directory.
    #[arg(short, long, alias = "out", default_value = "kc-report")]
    pub output: PathBuf,
    /// The prediction from parts prices each switch between units by how far back it
    /// reaches in the plan, from rounds of several sizes (`kc exec --isolated
    /// --round-sizes`; needs --plan), not at the round of every unit. Measured worse on
    /// transformers (docs/MEASUREMENTS.md): a diagnostic.
    #[arg(long)]
    pub switches_by_reach: bool,
    /// The prediction's energy prices the switches between units at the round of every
    /// unit's own energy (its windows beyond the units alone), not at the idle power over
    /// the time they add. Measured worse on seven inference models (+3.8 … +8.0 % where
    /// the idle power gave +0.6 … +2.7 %) and on T5 (+7.4 against −3.5 %), better on two
    /// training steps (docs/MEASUREMENTS.md, session 14): a diagnostic.
    #[arg(long)]
    pub switch_energy_from_round: bool,
    /// Take every unit's kernels in the round as recorded (with --isolated), also where
    /// the round ran the unit's places to non-finite values (or, from session 45, ran its
    /// kernels slower than alone) and its kernels over the round's values ran another time
    /// alone, so that kc took it alone, or (from session 50) its kernels in the round's
    /// later cycles ran another time than in each launch's first, so that kc took the
    /// first cycles' (`kc exec --round-as-recorded` did not record them): a diagnostic.
    #[arg(long)]
    pub round_as_recorded: bool,
    /// The model's profiled CUDA-graph replays (capture.py's NAME.graph_replays.trace.json.gz)
    /// to set kc's graph beside, kernel by kernel; default: the one --reference names, where
    /// it is there.
    #[arg(long, value_name = "TRACE")]
    pub model_graph: Option<PathBuf>,
    /// kc's CUPTI record of its graph (`kc exec --kernels-out`); default:
    /// plan.graph.kernels.json beside RESULTS, where it is there.
    #[arg(long, value_name = "KERNELS.json")]
    pub graph_kernels: Option<PathBuf>,
    /// Other models' answers (tools/prediction_residuals.py writes them from reports):
    /// their prediction errors give the method's own spread, 1.4826 × their median |error|,
    /// set beside the prediction's error bar with the target judged against both (this
    /// model's own answers, by its reference entry, left out).
    #[arg(long, value_name = "ANSWERS.json")]
    pub method_spread: Option<PathBuf>,
    /// Compare two results files (OLD NEW) and exit 1 if NEW regressed beyond the
    /// thresholds; runs that differ in cache policy, device, kc version or plan are refused.
    #[arg(long)]
    pub baseline: bool,
    /// The files are the results of a job's ranks (`kc exec --ranks`), graph and/or
    /// isolated: writes the job report (per rank, the whole job, the collectives) to
    /// OUT/job.md and OUT/job.json. Needs --plan.
    #[arg(long, conflicts_with = "baseline")]
    pub job: bool,
    /// Latency regression threshold, percent.
    #[arg(long, default_value_t = 10.0)]
    pub threshold_time: f64,
    /// Energy regression threshold, percent.
    #[arg(long, default_value_t = 10.0)]
    pub threshold_energy: f64,
    /// Print the report (or the baseline comparison) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> i32 {
    if a.baseline {
        return run_baseline(&a);
    }
    if a.job {
        return run_job(&a);
    }
    let [first] = a.files.as_slice() else {
        return super::fail(
            "usage: kc report RESULTS.json [--isolated ISO.json] [--plan P.kcplan] [-o DIR]",
        );
    };
    let inputs = report::bundle::Inputs {
        results: first.clone(),
        isolated: a.isolated.clone(),
        plan: a.plan.clone(),
        reference: a.reference.clone(),
        reference_entry: a.reference_entry.clone(),
        output: a.output.clone(),
        switches_by_reach: a.switches_by_reach,
        switch_energy_from_round: a.switch_energy_from_round,
        round_as_recorded: a.round_as_recorded,
        model_graph: a.model_graph.clone(),
        graph_kernels: a.graph_kernels.clone(),
        method_spread: a.method_spread.clone(),
    };
    let (rep, files) = match report::bundle::make(&inputs) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    if a.json {
        super::print_json(&rep);
    } else {
        let md = render::markdown(&rep);
        let head: String = md.split("## By tier").next().unwrap_or(&md).to_string();
        print!("{head}");
        println!(
            "written to {}: {}",
            a.output.display(),
            files
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    0
}

fn run_baseline(a: &Args) -> i32 {
    let [old, new] = a.files.as_slice() else {
        return super::fail("usage: kc report --baseline OLD.json NEW.json");
    };
    let (o, n) = match (report::read_results(old), report::read_results(new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => return super::fail(e),
    };
    let c = match baseline::compare(&o, &n, a.threshold_time, a.threshold_energy) {
        Ok(c) => c,
        Err(why) => return super::fail(format!("{} vs {}: {why}", old.display(), new.display())),
    };
    if a.json {
        super::print_json(&c);
    } else {
        print!("{}", baseline::render(&c));
    }
    if c.regressions > 0 {
        1
    } else {
        0
    }
}

#[derive(clap::Args)]
pub struct EnergyArgs {
    /// The power meter's log: WattsUp (`time,id,pm1,pm2,sum`) or nvidia-smi CSV
    /// (`--query-gpu=timestamp,power.draw --format=csv`, optionally with `index`).
    #[arg(long, required = true)]
    pub power_log: PathBuf,
    /// The results file (`kc exec`) whose measured windows the log is integrated over.
    pub results: PathBuf,
    /// auto, wattsup or nvidia-smi.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Seconds added to every log time to put it on the results' UTC clock.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub clock_offset: f64,
    /// The GPU to read from a log of several (its `index`, `uuid` or `pci.bus_id` value, as
    /// the log writes it); a log of more than one GPU is refused without it.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Where to write the integrated energies (default: RESULTS.powerlog.json).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the integrated energies as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn energy(a: EnergyArgs) -> i32 {
    match energy_inner(&a) {
        Ok(code) => code,
        Err(e) => super::fail(e),
    }
}

fn energy_inner(a: &EnergyArgs) -> Result<i32, ReportError> {
    let lp = a.power_log.display().to_string();
    let bytes =
        crate::files::read_capped(&a.power_log, 256 << 20, "power log").map_err(|source| {
            ReportError::Io {
                path: lp.clone(),
                source,
            }
        })?;
    let text = report::read_text(&bytes, &lp, "power log (WattsUp or nvidia-smi CSV)")?.to_string();
    let results = report::read_results(&a.results)?;
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| default_energy_out(&a.results));
    super::check_output(&out, &[&a.results, &a.power_log]).map_err(ReportError::Refused)?;
    let format = match a.format.as_str() {
        "wattsup" => powerlog::LogFormat::WattsUp,
        "nvidia-smi" => powerlog::LogFormat::NvidiaSmi,
        "auto" => powerlog::detect(&text).ok_or_else(|| ReportError::PowerLog {
            path: lp.clone(),
            message: "line 1: unknown header; expected `time,id,pm1,pm2,sum` (WattsUp) or `timestamp, power.draw [W]` (nvidia-smi), or pass --format".into(),
        })?,
        other => {
            return Err(ReportError::Input {
                path: lp,
                why: format!("--format must be auto, wattsup or nvidia-smi, not {other:?}"),
            })
        }
    };
    let rep = powerlog::report(
        &text,
        format,
        a.clock_offset,
        a.gpu.as_deref(),
        &results,
        &lp,
    )?;
    report::write_all(&[(
        out.clone(),
        serde_json::to_vec_pretty(&rep).unwrap_or_default(),
    )])?;
    if a.json {
        super::print_json(&rep);
    } else {
        println!(
            "kc energy: {} ({} samples, {}) against {}\n",
            rep.power_log,
            rep.samples,
            rep.format,
            a.results.display()
        );
        print!("{}", powerlog::render_table(&rep));
        for w in rep
            .windows
            .iter()
            .filter_map(|w| w.warning.as_ref().map(|m| (w, m)))
        {
            eprintln!("warning: window {:?}: {}", w.0.label, w.1);
        }
        println!("\nwritten to {}", out.display());
    }
    Ok(0)
}

/// In the working directory, as every verb's default output.
fn default_energy_out(results: &Path) -> PathBuf {
    PathBuf::from(format!(
        "{}.powerlog.json",
        super::stem_here(results, ".json")
    ))
}

/// `kc report --job R0.json R1.json ... --plan P -o DIR`.
fn run_job(a: &Args) -> i32 {
    let Some(plan_path) = &a.plan else {
        return super::fail("kc report --job needs --plan (the job's plan)");
    };
    let job = match report::job::summarize_files(&a.files, plan_path) {
        Ok(j) => j,
        Err(e) => return super::fail(e),
    };
    let mut inputs: Vec<&Path> = a.files.iter().map(PathBuf::as_path).collect();
    inputs.push(plan_path);
    for name in ["job.md", "job.json"] {
        if let Err(e) = super::check_output(&a.output.join(name), &inputs) {
            return super::fail(e);
        }
    }
    if let Err(e) = std::fs::create_dir_all(&a.output) {
        return super::fail(format!("{}: cannot create: {e}", a.output.display()));
    }
    let md = report::job::render_markdown(&job);
    let json = serde_json::to_vec_pretty(&job).unwrap_or_default();
    for (name, bytes) in [("job.md", md.as_bytes()), ("job.json", json.as_slice())] {
        let p = a.output.join(name);
        if let Err(e) = crate::files::write_atomic(&p, bytes) {
            return super::fail(format!("{}: cannot write: {e}", p.display()));
        }
    }
    if a.json {
        super::print_json(&job);
    } else {
        print!("{}", report::job::render(&job));
        println!("\n  job report written to {}", a.output.display());
    }
    0
}
