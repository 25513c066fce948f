//! What the cache-state examples share (`reuse_distance`, `outside_image`, `code_distance`):
//! each plan named on the command line read and checked, with its memory image's touches
//! (`ModelTouches`) and its steps by unit, and the L2 they are judged against.
//!
//! Invariant: a plan that cannot be read ends the run with its error and a non-zero exit;
//! one without a memory image is named on stderr and skipped.
use kc::plan::cache_state::ModelTouches;
use kc::plan::types::Plan;
use std::collections::BTreeMap;

/// One plan with its memory image's touches and its steps by unit, in step order.
pub struct PlanTouches {
    pub path: String,
    pub plan: Plan,
    pub touches: ModelTouches,
    pub steps_by_unit: BTreeMap<u32, Vec<u32>>,
}

/// The plans at `paths`, in order, those with a memory image.
pub fn each(paths: impl Iterator<Item = String>) -> impl Iterator<Item = PlanTouches> {
    paths.filter_map(|path| {
        let plan = match kc::report::read_plan_with_crc(std::path::Path::new(&path)) {
            Ok((p, _)) => p,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let Some(df) = plan.dataflow.as_ref() else {
            eprintln!("{path}: no memory image");
            return None;
        };
        let touches = ModelTouches::of(&kc::plan::step_values::step_spans(&plan, df));
        let mut steps_by_unit: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (i, s) in plan.steps.iter().enumerate() {
            steps_by_unit.entry(s.unit).or_default().push(i as u32);
        }
        Some(PlanTouches {
            path,
            plan,
            touches,
            steps_by_unit,
        })
    })
}

/// The L2 bytes `KC_L2_BYTES` gives, 60 MiB (the H200's) unless set.
#[allow(dead_code)] // reuse_distance takes its L2 as an argument.
pub fn l2_from_env() -> u64 {
    std::env::var("KC_L2_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60 << 20)
}
