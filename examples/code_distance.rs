//! How far back the model last ran each unit's code before its steps
//! (`kc::plan::cache_state::code_distance`: the bytes the model's steps touched since the
//! nearest earlier step that launched one of its kernels, at most twice L2): the record in
//! the model's cache state evicts a step's code where that passes L2. One JSON line per
//! unit: the plan's path, the unit, its label, its steps, the median bytes between over
//! them, and the share of its steps with more than L2 between (`KC_L2_BYTES`, 60 MiB unless
//! set: the H200's).
//!
//!   cargo run --release --example code_distance -- PLAN.kcplan [...]
use kc::plan::cache_state::{code_distance, ModelTouches};
use std::io::Write;

fn main() {
    let mut out = std::io::stdout().lock();
    for path in std::env::args().skip(1) {
        let plan = match kc::report::read_plan_with_crc(std::path::Path::new(&path)) {
            Ok((p, _)) => p,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let Some(df) = plan.dataflow.as_ref() else {
            eprintln!("{path}: no memory image");
            continue;
        };
        let l2: u64 = std::env::var("KC_L2_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60 << 20);
        let touches = ModelTouches::of(&kc::plan::step_values::step_spans(&plan, df));
        let mut by_unit: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
        for s in 0..plan.steps.len().min(df.steps.len()) {
            by_unit
                .entry(plan.steps[s].unit)
                .or_default()
                .push(code_distance(&plan, &touches, s as u32, 2 * l2));
        }
        for (unit, mut v) in by_unit {
            v.sort_unstable();
            let far = v.iter().filter(|&&b| b >= l2).count() as f64 / v.len() as f64;
            let line = serde_json::json!({"plan": path, "unit": unit,
                "label": plan.units[unit as usize].label, "steps": v.len(),
                "bytes_between": v[v.len() / 2], "far_share": far});
            // A closed pipe (`| head`) ends the listing, not with a panic.
            if writeln!(out, "{line}").is_err() {
                return;
            }
        }
    }
}
