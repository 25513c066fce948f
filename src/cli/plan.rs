//! `kc plan LOWERED [-o plan.kcplan] [--json]` and `kc plan show PLAN [--round] [--json]`.

use crate::ingest;
use crate::plan::{self, show};
use std::path::{Path, PathBuf};

/// `DIR/x.lowered.kcir` -> `x.kcplan`, in the working directory.
pub fn default_plan_path(p: &Path) -> PathBuf {
    let name = super::stem_here(p, "");
    let stem = name
        .strip_suffix(".lowered.kcir")
        .or_else(|| name.strip_suffix(".kcir"))
        .unwrap_or(&name);
    PathBuf::from(format!("{stem}.kcplan"))
}

pub fn make(
    graph: &Path,
    output: Option<PathBuf>,
    carried_in: plan::build::CarriedIn,
    json: bool,
) -> i32 {
    let out = output.unwrap_or_else(|| default_plan_path(graph));
    if let Err(e) = super::check_output(&out, &[graph]) {
        return super::fail(e);
    }
    let g = match ingest::read_graph(graph) {
        Ok(g) => g,
        Err(e) => return super::fail(e),
    };
    if !g.is_lowered() {
        return super::fail(plan::PlanError::NotLowered {
            path: graph.display().to_string(),
        });
    }
    let p = plan::build::build_with(&g, carried_in);
    if let Err(why) = p.check() {
        return super::fail(format!("internal error: built plan is invalid: {why}"));
    }
    let bytes = match plan::write(&p, &out) {
        Ok(b) => b,
        Err(e) => return super::fail(e),
    };
    print_summary(&p, bytes, json, &out, false);
    0
}

pub fn show_file(path: &Path, json: bool, round: bool) -> i32 {
    let bytes = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => return super::fail(format!("{}: cannot read: {e}", path.display())),
    };
    match plan::read(path) {
        Ok(p) => {
            print_summary(&p, bytes, json, path, round);
            0
        }
        Err(e) => super::fail(e),
    }
}

fn print_summary(p: &plan::Plan, bytes: u64, json: bool, path: &Path, round: bool) {
    let s = show::summarize(p, bytes);
    let rank = p.ranks().first().copied().unwrap_or(0);
    let rows = round.then(|| show::round_rows(p, rank));
    if json {
        let mut v = serde_json::json!({
            "plan": path.display().to_string(),
            "summary": s,
            "units": show::unit_rows(p),
        });
        if let Some(r) = &rows {
            v["round"] = serde_json::json!({ "rank": rank, "entries": r });
        }
        super::print_json(&v);
    } else {
        print!("{}", show::render_text(&s));
        if let Some(r) = &rows {
            print!("\n{}", show::render_round(r, rank));
        }
        println!("\n  plan: {}", path.display());
    }
}
