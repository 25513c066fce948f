//! The `kc` command line: the verbs and their dispatch. Each verb's arguments are declared,
//! with their help, beside the verb in `kc::cli`, so every flag is written once. Both the
//! `kc` binary (`main.rs`) and the Python package's `kc` command run [`main_with`].

use clap::{Parser, Subcommand};
use std::ffi::OsString;
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
    Ingest(super::ingest::Args),
    /// Per-kernel statistics, per-iteration GPU busy/idle/overlap and launch latency of a
    /// trace (or a .kcir graph), as tables, JSON or CSV.
    Analyze(super::analyze::Args),
    /// Compare two traces of the same model per iteration, per op and per kernel: time,
    /// count, new and vanished kernels (Markdown or JSON).
    Diff(super::analyze::DiffArgs),
    /// Classify every node, assign replay tiers and build deduplicated replay units.
    Lower(super::lower::Args),
    /// The whole pipeline: ingest, lower, plan (and replay, on a GPU build with a GPU).
    /// Without TRACE, runs on the embedded BLOOM-560M H100 trace.
    Run(super::run::Args),
    /// Replay a plan on the GPU: as one CUDA graph, or each unit in isolation.
    Exec(super::exec::Args),
    /// Report predicted (isolated) against actual (graph) time and energy as JSON, Markdown,
    /// CSV and SVG; or, with --baseline OLD NEW, find regressions (exit code 1 if any).
    Report(super::report::Args),
    /// Integrate an external power log (WattsUp or nvidia-smi CSV) over the measured windows.
    Energy(super::report::EnergyArgs),
    /// Build a replay plan from a lowered graph, or show what a plan holds.
    Plan {
        #[command(subcommand)]
        action: Option<PlanAction>,
        /// The lowered graph `kc lower --tiers` wrote.
        graph: Option<PathBuf>,
        /// Plan file to write (default: NAME.kcplan in the working directory).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Where reads that come before the replay writes their bytes live: `own` (a
        /// region that keeps the storage's starting values, read alike by every replay)
        /// or `shared` (the storage itself: each replay reads what the previous one left).
        #[arg(long, value_enum, default_value = "own")]
        carried_in: CarriedInArg,
        /// Print the summary as JSON (every unit with its tier, call and reason).
        #[arg(long, global = true)]
        json: bool,
    },
}

#[derive(Copy, Clone, Debug, clap::ValueEnum)]
pub enum CarriedInArg {
    Own,
    Shared,
}

impl From<CarriedInArg> for crate::plan::build::CarriedIn {
    fn from(a: CarriedInArg) -> Self {
        match a {
            CarriedInArg::Own => Self::Own,
            CarriedInArg::Shared => Self::Shared,
        }
    }
}

#[derive(Subcommand)]
enum PlanAction {
    /// Print what a plan holds: units per tier, memory, streams, largest units.
    Show {
        /// The plan file (.kcplan).
        plan: PathBuf,
        /// Also the round of every unit the isolated pass measures, entry by entry: each
        /// unit's first run and the lead-ins before them (the steps `kc exec
        /// --round-lead-ins-only` takes), on the plan's lowest rank.
        #[arg(long)]
        round: bool,
    },
}

/// Parses `args` (the program name first) and runs the verb; returns the exit code. Usage
/// errors and `--help` print as clap prints them (exit 2 and 0).
pub fn main_with(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    match cli.command {
        Command::Ingest(args) => super::ingest::run(args),
        Command::Analyze(args) => super::analyze::run(args),
        Command::Diff(args) => super::analyze::run_diff(args),
        Command::Lower(args) => super::lower::run(args),
        Command::Run(args) => super::run::run(args),
        Command::Exec(args) => super::exec::run(args),
        Command::Report(args) => super::report::run(args),
        Command::Energy(args) => super::report::energy(args),
        Command::Plan {
            action: Some(PlanAction::Show { plan, round }),
            json,
            ..
        } => super::plan::show_file(&plan, json, round),
        Command::Plan {
            action: None,
            graph: Some(graph),
            output,
            carried_in,
            json,
        } => super::plan::make(&graph, output, carried_in.into(), json),
        Command::Plan { .. } => {
            super::fail("usage: kc plan LOWERED.kcir [-o PLAN] | kc plan show PLAN")
        }
    }
}
