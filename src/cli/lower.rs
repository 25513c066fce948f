//! `kc lower --tiers GRAPH [-o lowered.kcir] [--json] [--explain NAME]`.

use crate::ingest;
use crate::lower::{self, summary};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The graph `kc ingest` wrote.
    pub graph: PathBuf,
    /// Assign replay tiers (the only lowering there is; accepted for clarity).
    #[arg(long)]
    pub tiers: bool,
    /// Lowered graph to write (default: `NAME.lowered.kcir` in the working directory).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the summary as JSON (every unit with its tier, rule, call and reason).
    #[arg(long)]
    pub json: bool,
    /// Show how kernels whose name contains NAME were parsed and classified.
    #[arg(long, value_name = "NAME")]
    pub explain: Option<String>,
}

/// `DIR/x.kcir` -> `x.lowered.kcir`, in the working directory.
pub fn default_lowered_path(p: &std::path::Path) -> PathBuf {
    PathBuf::from(format!("{}.lowered.kcir", super::stem_here(p, ".kcir")))
}

pub fn run(a: Args) -> i32 {
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| default_lowered_path(&a.graph));
    if a.explain.is_none() {
        if let Err(e) = super::check_output(&out, &[&a.graph]) {
            return super::fail(e);
        }
    }
    let mut g = match ingest::read_graph(&a.graph) {
        Ok(g) => g,
        Err(e) => return super::fail(e),
    };
    let (ctx, diags) = match lower::lower(&mut g) {
        Ok(x) => x,
        Err(e) => return super::fail(e),
    };
    if let Some(needle) = &a.explain {
        print!("{}", summary::explain(&g, &ctx, needle));
        return 0;
    }
    if let Err(e) = ingest::write_graph(&g, &out) {
        return super::fail(e);
    }
    let s = summary::summarize(&g, &diags);
    if a.json {
        super::print_json(&serde_json::json!({
            "graph": out.display().to_string(),
            "summary": s,
            "units": summary::unit_rows(&g),
        }));
    } else {
        println!("kc lower --tiers: {}\n", a.graph.display());
        print!("{}", summary::render_text(&s));
        println!("\n  lowered graph written to {}", out.display());
    }
    0
}
