//! `kc run [TRACE] [--shapes F] [--out DIR]`: the whole pipeline in one command. Ingests,
//! lowers and plans; replays on the GPU when this build has the `cuda` feature and a GPU
//! is present; otherwise stops after the plan and prints the trace-side analysis and what
//! it would run. Without TRACE it runs on the embedded BLOOM-560M fixture.

use crate::{ingest, lower, plan};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The default input: BLOOM-560M inference (seq 5) on an H100, 3 profiled iterations.
pub const FIXTURE_NAME: &str = "bloom560m_seq5.pt.trace.json.gz";
pub const FIXTURE: &[u8] = include_bytes!("../../fixtures/bloom560m_seq5.pt.trace.json.gz");

pub struct Args {
    pub trace: Option<PathBuf>,
    pub shapes: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub json: bool,
}

#[derive(Serialize)]
struct RunSummary {
    trace: String,
    out_dir: String,
    ingest: ingest::summary::IngestSummary,
    lower: lower::summary::LowerSummary,
    plan: plan::show::PlanSummary,
    /// Traced GPU time per replayable tier, i.e. what a perfect isolated replay predicts.
    traced_prediction_us: f64,
    gpu: String,
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
    let out_base = a.out.unwrap_or_else(|| PathBuf::from("kc-out"));
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
        progress: !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr()),
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
    let gpu = gpu_status();
    let s = RunSummary {
        trace: trace.display().to_string(),
        out_dir: out_dir.display().to_string(),
        traced_prediction_us: p.header.replayable_traced_ns as f64 / 1000.0,
        ingest: ingest_summary,
        lower: lower_summary,
        plan: plan_summary,
        gpu: gpu.clone(),
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
    println!("lower   replay tiers:\n");
    print!("{}", lower::summary::render_text(&s.lower));
    println!();
    print!("{}", plan::show::render_text(&s.plan));
    println!(
        "\n  files in {}: graph.kcir, graph.lowered.kcir, plan.kcplan",
        s.out_dir
    );
    println!("\n{gpu}");
    0
}

fn gpu_status() -> String {
    format!(
        "GPU replay: this build has no GPU executor. On a GPU machine, `kc exec {}` replays the {} as one CUDA graph and each unique unit in isolation, measuring time with CUDA events and energy with NVML; the numbers above are traced, not replayed.",
        "PLAN",
        "plan"
    )
}
