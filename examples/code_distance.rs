//! How far back the model last ran each unit's code before its steps
//! (`kc::plan::cache_state::code_distance`: the bytes the model's steps touched since the
//! nearest earlier step that launched one of its kernels, at most twice L2): the record in
//! the model's cache state evicts a step's code where that passes L2. One JSON line per
//! unit: the plan's path, the unit, its label, its steps, the median bytes between over
//! them, and the share of its steps with more than L2 between (`KC_L2_BYTES`, 60 MiB unless
//! set: the H200's).
//!
//!   cargo run --release --example code_distance -- PLAN.kcplan [...]
use kc::plan::cache_state::code_distance;
use std::io::Write;

mod plans;

fn main() {
    let mut out = std::io::stdout().lock();
    let l2 = plans::l2_from_env();
    for plans::PlanTouches {
        path,
        plan,
        touches,
        steps_by_unit,
    } in plans::each(std::env::args().skip(1))
    {
        let by_unit = steps_by_unit.into_iter().map(|(unit, steps)| {
            let v: Vec<u64> = steps
                .iter()
                .map(|&s| code_distance(&plan, &touches, s, 2 * l2))
                .collect();
            (unit, v)
        });
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
