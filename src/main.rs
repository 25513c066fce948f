//! The `kc` command line: argument parsing only; every verb is implemented in `kc::cli`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "kc",
    version,
    about = "Trace-ingest-and-replay compiler for GPU ML workloads"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read Kineto/CUPTI traces (one file per rank, or a directory) into a kernel graph.
    Ingest {
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// Shapes for ops the trace recorded without them: a PyTorch Execution Trace
        /// (.json/.json.gz) or a kc JSONL shape log.
        #[arg(long)]
        shapes: Option<PathBuf>,
        /// Graph file to write (default: beside the first trace, `.kcir`).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Classify every node, assign replay tiers and build deduplicated replay units.
    Lower {
        /// The graph `kc ingest` wrote.
        graph: PathBuf,
        /// Assign replay tiers (the only lowering there is; accepted for clarity).
        #[arg(long)]
        tiers: bool,
        /// Lowered graph to write (default: `GRAPH.lowered.kcir`).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// Show how kernels whose name contains NAME were parsed and classified.
        #[arg(long, value_name = "NAME")]
        explain: Option<String>,
    },
    /// The whole pipeline: ingest, lower, plan (and replay, on a GPU build with a GPU).
    /// Without TRACE, runs on the embedded BLOOM-560M H100 trace.
    Run {
        trace: Option<PathBuf>,
        #[arg(long)]
        shapes: Option<PathBuf>,
        /// Output directory (default: kc-out/<trace name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Cache policy of the isolated replay (GPU builds): warm or cold.
        #[arg(long, default_value = "warm")]
        cache: String,
        /// Energy windows per measured item on the GPU; 0 measures time only.
        #[arg(long, default_value_t = 3)]
        energy_repeats: usize,
        #[arg(long)]
        json: bool,
    },
    /// Replay a plan on the GPU: as one CUDA graph, or each unit in isolation.
    Exec {
        plan: PathBuf,
        /// Time every unique unit alone (unrolled in a graph) instead of the whole graph.
        #[arg(long)]
        isolated: bool,
        /// Timed replays (graph mode) or the base for launches per unit (isolated).
        #[arg(long, default_value_t = 100)]
        runs: usize,
        #[arg(long, default_value_t = 10)]
        warmup: usize,
        /// warm: reuse buffers; cold: rotate buffer copies spanning twice L2.
        #[arg(long, default_value = "warm")]
        cache: String,
        /// Minimum energy window in seconds, aligned to the NVML counter's ticks.
        #[arg(long, default_value_t = 1.0)]
        energy_window: f64,
        /// Energy windows per measured item.
        #[arg(long, default_value_t = 5)]
        energy_repeats: usize,
        /// Time only.
        #[arg(long)]
        no_energy: bool,
        /// Results file (default: PLAN.graph.json or PLAN.isolated.json).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Also write the replay as a Chrome trace (opens in Perfetto).
        #[arg(long)]
        trace_out: Option<PathBuf>,
        /// The rank to replay when the plan holds several (default: the lowest).
        #[arg(long)]
        rank: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Report predicted (isolated) against actual (graph) time and energy as JSON, Markdown,
    /// CSV and SVG; or, with --baseline OLD NEW, find regressions (exit code 1 if any).
    Report {
        /// RESULTS.json (graph or isolated); with --baseline: OLD.json NEW.json.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The isolated-mode results to compare a graph-mode RESULTS.json against.
        #[arg(long)]
        isolated: Option<PathBuf>,
        /// The plan that was executed, for the replay timeline chart.
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Output directory.
        #[arg(short, long, default_value = "kc-report")]
        out: PathBuf,
        #[arg(long)]
        baseline: bool,
        /// Latency regression threshold, percent.
        #[arg(long, default_value_t = 10.0)]
        threshold_time: f64,
        /// Energy regression threshold, percent.
        #[arg(long, default_value_t = 10.0)]
        threshold_energy: f64,
        #[arg(long)]
        json: bool,
    },
    /// Integrate an external power log (WattsUp or nvidia-smi CSV) over the measured windows.
    Energy {
        #[arg(long, required = true)]
        power_log: PathBuf,
        results: PathBuf,
        /// auto, wattsup or nvidia-smi.
        #[arg(long, default_value = "auto")]
        format: String,
        /// Seconds added to every log time to put it on the results' UTC clock.
        #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
        clock_offset: f64,
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Build a replay plan from a lowered graph, or show what a plan holds.
    Plan {
        #[command(subcommand)]
        action: Option<PlanAction>,
        /// The lowered graph `kc lower --tiers` wrote.
        graph: Option<PathBuf>,
        /// Plan file to write (default: beside the graph, `.kcplan`).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum PlanAction {
    /// Print what a plan holds: units per tier, memory, streams, largest units.
    Show {
        plan: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Ingest {
            traces,
            shapes,
            output,
            json,
        } => kc::cli::ingest::run(kc::cli::ingest::Args {
            traces,
            shapes,
            output,
            json,
        }),
        Command::Lower {
            graph,
            tiers: _,
            output,
            json,
            explain,
        } => kc::cli::lower::run(kc::cli::lower::Args {
            graph,
            output,
            json,
            explain,
        }),
        Command::Run {
            trace,
            shapes,
            out,
            cache,
            energy_repeats,
            json,
        } => kc::cli::run::run(kc::cli::run::Args {
            trace,
            shapes,
            out,
            cache,
            energy_repeats,
            json,
        }),
        Command::Exec {
            plan,
            isolated,
            runs,
            warmup,
            cache,
            energy_window,
            energy_repeats,
            no_energy,
            output,
            trace_out,
            rank,
            json,
        } => kc::cli::exec::run(kc::cli::exec::Args {
            plan,
            isolated,
            runs,
            warmup,
            cache,
            energy_window,
            energy_repeats,
            no_energy,
            output,
            trace_out,
            rank,
            json,
        }),
        Command::Report {
            files,
            isolated,
            plan,
            out,
            baseline,
            threshold_time,
            threshold_energy,
            json,
        } => kc::cli::report::run(kc::cli::report::Args {
            files,
            isolated,
            plan,
            out,
            baseline,
            threshold_time,
            threshold_energy,
            json,
        }),
        Command::Energy {
            power_log,
            results,
            format,
            clock_offset,
            output,
            json,
        } => kc::cli::report::energy(kc::cli::report::EnergyArgs {
            power_log,
            results,
            format,
            clock_offset,
            output,
            json,
        }),
        Command::Plan {
            action: Some(PlanAction::Show { plan, json }),
            ..
        } => kc::cli::plan::show_file(&plan, json),
        Command::Plan {
            action: None,
            graph: Some(graph),
            output,
            json,
        } => kc::cli::plan::make(&graph, output, json),
        Command::Plan { .. } => {
            kc::cli::fail("usage: kc plan LOWERED.kcir [-o PLAN] | kc plan show PLAN")
        }
    };
    std::process::exit(code);
}
