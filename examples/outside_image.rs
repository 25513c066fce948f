//! Which units of a plan have operands the memory image does not hold
//! (`kc::plan::cache_state::operands_outside_image`), over the steps a unit's launch in the
//! model's cache state runs: for setting session 51's records (made before the results
//! said so) apart by it. One JSON line per unit: the plan's path, the unit, its label, its
//! steps, the operands outside the image over them, and of its tier-3 tensors outside the
//! image those the model leaves within L2 (`held_operand_distance` under `KC_L2_BYTES`,
//! 60 MiB unless set: the H200's).
//!
//!   cargo run --release --example outside_image -- PLAN.kcplan [...]
use kc::plan::cache_state::{held_operand_distance, operands_outside_image};
use std::io::Write;

mod plans;

fn main() {
    let mut out = std::io::stdout().lock();
    let l2 = plans::l2_from_env();
    for plans::PlanTouches {
        path,
        plan,
        touches,
        steps_by_unit: steps,
    } in plans::each(std::env::args().skip(1))
    {
        let Some(df) = plan.dataflow.as_ref() else {
            continue;
        };
        for (unit, st) in steps {
            let u = &plan.units[unit as usize];
            let outside: u32 = st
                .iter()
                .map(|&s| operands_outside_image(&plan, df, u, s))
                .sum();
            // Its tier-3 tensors outside the image, as the executor holds them.
            let (mut held, mut held_near) = (0u32, 0u32);
            if let Some(Some(call)) = plan.aten_calls.get(unit as usize) {
                for &s in &st {
                    let places = &df.steps[s as usize];
                    for t in call.args.iter().flat_map(|a| a.tensors()) {
                        if kc::plan::aten_call::placeable(t)
                            && places.operand_of(u, t.slot).is_some()
                        {
                            continue;
                        }
                        held += 1;
                        if held_operand_distance(&plan, df, &touches, u, s, t.slot, l2) < l2 {
                            held_near += 1;
                        }
                    }
                }
            }
            let line = serde_json::json!({"plan": path, "unit": unit, "label": u.label, "steps": st.len(), "first_step": st[0], "of_steps": plan.steps.len(), "outside": outside, "held": held, "held_near": held_near});
            // A closed pipe (`| head`) ends the listing, not with a panic.
            if writeln!(out, "{line}").is_err() {
                return;
            }
        }
    }
}
