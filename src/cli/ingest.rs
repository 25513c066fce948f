//! `kc ingest TRACE... [--shapes F] [-o graph.kcir] [--json]`.

use crate::ingest::{self, summary, IngestOptions};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Shapes for ops the trace recorded without them: a PyTorch Execution Trace
    /// (.json/.json.gz) or a kc JSONL shape log.
    #[arg(long)]
    pub shapes: Option<PathBuf>,
    /// Graph file to write (default: beside the first trace, `.kcir`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> i32 {
    let opts = IngestOptions {
        shapes: a.shapes,
        progress: std::io::stderr().is_terminal(),
    };
    let (graph, diags) = match ingest::ingest(&a.traces, &opts) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    let out = a
        .output
        .unwrap_or_else(|| ingest::default_graph_path(&a.traces[0]));
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
