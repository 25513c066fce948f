//! Which units of a plan have operands the memory image does not hold
//! (`kc::plan::cache_state::operands_outside_image`), over the steps a unit's launch in the
//! model's cache state runs: for setting session 51's records (made before the results
//! said so) apart by it. One JSON line per unit: the plan's path, the unit, its label, its
//! steps and the operands outside the image over them.
//!
//!   cargo run --release --example outside_image -- PLAN.kcplan [...]
use kc::plan::cache_state::operands_outside_image;
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
        let mut steps: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (i, s) in plan.steps.iter().enumerate() {
            steps.entry(s.unit).or_default().push(i as u32);
        }
        for (unit, st) in steps {
            let u = &plan.units[unit as usize];
            let outside: u32 = st
                .iter()
                .map(|&s| operands_outside_image(&plan, df, u, s))
                .sum();
            let line = serde_json::json!({"plan": path, "unit": unit, "label": u.label, "steps": st.len(), "outside": outside});
            // A closed pipe (`| head`) ends the listing, not with a panic.
            if writeln!(out, "{line}").is_err() {
                return;
            }
        }
    }
}
