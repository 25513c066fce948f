//! How far back, in the model's order, each unit's kernels last ran before each of its
//! steps: the steps between and the bytes the model touched between
//! (`ModelTouches::bytes_between`, summed, at most twice L2), from the nearest earlier step
//! (through the end of the iteration where none is earlier) whose unit launches a kernel of
//! the same name. A kernel's code lies in device memory and goes through L2 as data does,
//! so where more than L2 passed its code comes from memory; where any other kernel ran, the
//! SM that runs it may no longer hold it. One JSON line per unit: the plan's path, the unit,
//! its label, its steps, and over them the median steps between, the median bytes between,
//! and the share of steps with more than L2 of bytes between (`KC_L2_BYTES`, 60 MiB unless
//! set: the H200's).
//!
//!   cargo run --release --example code_distance -- PLAN.kcplan [...]
use kc::plan::cache_state::ModelTouches;
use std::io::Write;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

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
        let n = plan.steps.len();
        let names = |s: usize| &plan.units[plan.steps[s].unit as usize].kernels;
        let mut by_unit: std::collections::BTreeMap<u32, Vec<(u64, u64)>> = Default::default();
        for s in 0..n {
            let mine = names(s);
            // The nearest earlier step, cyclically, sharing a kernel name; itself a whole
            // iteration back where none does.
            let back = (1..=n)
                .find(|&d| {
                    let p = (s + n - d) % n;
                    names(p).iter().any(|k| mine.contains(k))
                })
                .unwrap_or(n);
            let from = ((s + n - back) % n) as u32;
            let bytes = if back == n {
                touches.bytes_between(s as u32, s as u32, 2 * l2)
            } else {
                touches.bytes_between(from, s as u32, 2 * l2)
            };
            by_unit
                .entry(plan.steps[s].unit)
                .or_default()
                .push((back as u64 - 1, bytes));
        }
        for (unit, v) in by_unit {
            let u = &plan.units[unit as usize];
            let far = v.iter().filter(|x| x.1 >= l2).count() as f64 / v.len() as f64;
            let line = serde_json::json!({"plan": path, "unit": unit, "label": u.label, "steps": v.len(),
                "steps_between": median(v.iter().map(|x| x.0).collect()),
                "bytes_between": median(v.iter().map(|x| x.1).collect()), "far_share": far});
            // A closed pipe (`| head`) ends the listing, not with a panic.
            if writeln!(out, "{line}").is_err() {
                return;
            }
        }
    }
}
