//! `kc analyze TRACE|GRAPH [--top N] [--csv DIR] [--json]` and `kc diff A B [-o DIFF.md]
//! [--json]`: the trace analysis tables and two traces compared.

use crate::analyze::{self, diff};
use crate::ingest::{self, IngestOptions};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// A Kineto trace (.json or .json.gz; a directory of one job's ranks) or a graph `kc
    /// ingest` wrote (.kcir).
    pub input: PathBuf,
    /// Kernel rows to print, largest total time first (0: all); --json and --csv hold all.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Also write the tables as CSV into this directory (kernels.csv, iterations.csv,
    /// launch_latency.csv, roofline.csv, ops.csv) with the roofline chart (roofline.svg).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Print the tables as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    /// The first trace (or .kcir graph): the baseline.
    pub a: PathBuf,
    /// The second trace (or .kcir graph) of the same model: another GPU, batch, library
    /// version or compile mode.
    pub b: PathBuf,
    /// Rows per table in the Markdown summary.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the Markdown summary to this file as well as printing it.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also write the largest changes as an SVG bar chart.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// Print the whole comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A graph file (by its magic) is read; anything else is ingested as a trace.
fn graph_of(p: &Path) -> Result<kc_ir::KernelGraph, String> {
    let mut head = [0u8; 8];
    let is_graph = std::fs::File::open(p)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == b"KCIRGRPH";
    if is_graph {
        return ingest::read_graph(p).map_err(|e| e.to_string());
    }
    let opts = IngestOptions {
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..Default::default()
    };
    ingest::ingest(&[p.to_path_buf()], &opts)
        .map(|(g, _)| g)
        .map_err(|e| e.to_string())
}

pub fn run(a: Args) -> i32 {
    if let Some(dir) = &a.csv {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return super::fail(format!("{}: cannot create: {e}", dir.display()));
        }
    }
    let g = match graph_of(&a.input) {
        Ok(g) => g,
        Err(e) => return super::fail(e),
    };
    let mut g = g;
    let an = analyze::analyze_lowered(&mut g);
    if let Some(dir) = &a.csv {
        let files: Vec<(PathBuf, Vec<u8>)> = analyze::csv_tables(&an)
            .into_iter()
            .map(|(n, b)| (dir.join(n), b))
            .collect();
        for (p, _) in &files {
            if let Err(e) = super::check_output(p, &[a.input.as_path()]) {
                return super::fail(e);
            }
        }
        if let Err(e) = crate::report::write_all(&files) {
            return super::fail(e);
        }
    }
    if a.json {
        super::print_json(&an);
    } else {
        println!("kc analyze: {}\n", a.input.display());
        print!("{}", analyze::render_text(&an, a.top));
        if let Some(dir) = &a.csv {
            println!("\n  tables written to {}", dir.display());
        }
    }
    0
}

pub fn run_diff(a: DiffArgs) -> i32 {
    for out in a.output.iter().chain(&a.svg) {
        if let Err(e) = super::check_output(out, &[a.a.as_path(), a.b.as_path()]) {
            return super::fail(e);
        }
    }
    let (ga, gb) = match (graph_of(&a.a), graph_of(&a.b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return super::fail(e),
    };
    let (mut ga, mut gb) = (ga, gb);
    let d = diff::diff_lowered(
        &mut ga,
        &a.a.display().to_string(),
        &mut gb,
        &a.b.display().to_string(),
    );
    let md = diff::markdown(&d, a.top);
    let mut files = Vec::new();
    if let Some(out) = &a.output {
        files.push((out.clone(), md.clone().into_bytes()));
    }
    if let Some(svg) = &a.svg {
        files.push((svg.clone(), diff::svg(&d, a.top).into_bytes()));
    }
    if let Err(e) = crate::report::write_all(&files) {
        return super::fail(e);
    }
    if a.json {
        super::print_json(&d);
    } else {
        print!("{md}");
    }
    0
}
