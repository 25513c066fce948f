//! `kc ingest TRACE... [--shapes F [--values V]] [--eager T | --capture T] [-o graph.kcir] [--json]`.

use crate::ingest::{self, summary, IngestOptions};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Kineto/CUPTI traces (.json or .json.gz): one file per rank, a directory of them, or
    /// `-` for standard input.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Shapes for ops the trace recorded without them: a PyTorch Execution Trace
    /// (.json/.json.gz) or a kc JSONL shape log.
    #[arg(long)]
    pub shapes: Option<PathBuf>,
    /// The values the model's integer tensors held (indices, MoE routing), recorded beside
    /// the Execution Trace by `traces/capture.py` (NAME.values.bin): the replay fills those
    /// inputs with them instead of drawn values. Needs `--shapes` (the same run's ET).
    #[arg(long, value_name = "VALUES", requires = "shapes")]
    pub values: Option<PathBuf>,
    /// For a trace profiled while replaying a CUDA graph (its kernels have no op): an eager
    /// trace of the same model and step, whose kernels' ops and shapes the graph trace's
    /// kernels take where their sequences align (name and launch geometry).
    #[arg(long, value_name = "EAGER_TRACE")]
    pub eager: Option<PathBuf>,
    /// For a trace profiled while replaying a CUDA graph: the profiled capture of that same
    /// graph (`traces/capture.py --cuda-graph` writes NAME_capture.pt.trace.json.gz), whose
    /// launches lend each replayed kernel the op that launched it: the exact program. Give
    /// the capture's Execution Trace with `--shapes`.
    #[arg(long, value_name = "CAPTURE_TRACE", conflicts_with = "eager")]
    pub capture: Option<PathBuf>,
    /// For a torch.compile'd trace: the Inductor cache its Triton kernels were compiled
    /// into (`TORCHINDUCTOR_CACHE_DIR`; a directory or a `.tar.gz` of one). Default:
    /// `$TORCHINDUCTOR_CACHE_DIR` or `/tmp/torchinductor_$USER` when it exists.
    #[arg(long, value_name = "DIR")]
    pub inductor_cache: Option<PathBuf>,
    /// Read several traces as the ranks of one run although they do not say so (no
    /// `distributedInfo`, another world size or GPU model); without it they are refused.
    #[arg(long)]
    pub as_ranks: bool,
    /// Graph file to write (default: `NAME.kcir` in the working directory, NAME from the
    /// first trace or the directory).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> i32 {
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| ingest::default_graph_path(&a.traces[0]));
    let mut inputs: Vec<&std::path::Path> = a.traces.iter().map(|p| p.as_path()).collect();
    inputs.extend(a.shapes.as_deref());
    inputs.extend(a.values.as_deref());
    inputs.extend(a.eager.as_deref());
    inputs.extend(a.capture.as_deref());
    inputs.extend(a.inductor_cache.as_deref());
    if let Err(e) = super::check_output(&out, &inputs) {
        return super::fail(e);
    }
    let opts = IngestOptions {
        shapes: a.shapes,
        values: a.values,
        eager: a.eager,
        capture: a.capture,
        as_ranks: a.as_ranks,
        inductor_cache: a.inductor_cache,
        default_inductor_cache: true,
        progress: std::io::stderr().is_terminal(),
        ..Default::default()
    };
    let (graph, diags) = match ingest::ingest(&a.traces, &opts) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    if let Err(e) = ingest::write_graph(&graph, &out) {
        return super::fail(e);
    }
    let s = summary::summarize(&graph, &diags);
    if a.json {
        super::print_json(&serde_json::json!({ "graph": out.display().to_string(), "summary": s }));
    } else {
        print!("{}", summary::render_text(&s));
        println!("\n  graph written to {}", out.display());
    }
    0
}
