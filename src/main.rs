//! The `kc` command line: parsing only. Each verb's arguments are declared, with their help,
//! beside the verb in `kc::cli`, so every flag is written once.

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
    Ingest(kc::cli::ingest::Args),
    /// Classify every node, assign replay tiers and build deduplicated replay units.
    Lower(kc::cli::lower::Args),
    /// The whole pipeline: ingest, lower, plan (and replay, on a GPU build with a GPU).
    /// Without TRACE, runs on the embedded BLOOM-560M H100 trace.
    Run(kc::cli::run::Args),
    /// Replay a plan on the GPU: as one CUDA graph, or each unit in isolation.
    Exec(kc::cli::exec::Args),
    /// Report predicted (isolated) against actual (graph) time and energy as JSON, Markdown,
    /// CSV and SVG; or, with --baseline OLD NEW, find regressions (exit code 1 if any).
    Report(kc::cli::report::Args),
    /// Integrate an external power log (WattsUp or nvidia-smi CSV) over the measured windows.
    Energy(kc::cli::report::EnergyArgs),
    /// Build a replay plan from a lowered graph, or show what a plan holds.
    Plan {
        #[command(subcommand)]
        action: Option<PlanAction>,
        /// The lowered graph `kc lower --tiers` wrote.
        graph: Option<PathBuf>,
        /// Plan file to write (default: beside the graph, `.kcplan`).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the summary as JSON (every unit with its tier, call and reason).
        #[arg(long, global = true)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum PlanAction {
    /// Print what a plan holds: units per tier, memory, streams, largest units.
    Show {
        /// The plan file (.kcplan).
        plan: PathBuf,
    },
}

fn main() {
    kc::cli::quiet_on_closed_pipe();
    kc::files::clean_up_on_interrupt();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Ingest(args) => kc::cli::ingest::run(args),
        Command::Lower(args) => kc::cli::lower::run(args),
        Command::Run(args) => kc::cli::run::run(args),
        Command::Exec(args) => kc::cli::exec::run(args),
        Command::Report(args) => kc::cli::report::run(args),
        Command::Energy(args) => kc::cli::report::energy(args),
        Command::Plan {
            action: Some(PlanAction::Show { plan }),
            json,
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
