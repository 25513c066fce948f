//! `kc ingest TRACE... [--shapes F] [-o graph.kcir] [--json]`.

use crate::ingest::{self, summary, IngestOptions};
use std::io::IsTerminal;
use std::path::PathBuf;

pub struct Args {
    pub traces: Vec<PathBuf>,
    pub shapes: Option<PathBuf>,
    pub output: Option<PathBuf>,
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
