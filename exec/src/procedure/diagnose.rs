//! Diagnosis after a replay: where the memory image's non-finite values come from. The
//! steps are replayed one at a time from the image's starting values and the first that
//! leave non-finite values where every value was finite before are named.
//!
//! Invariant: the diagnosis only reads the image and replays steps the plan accepted; it
//! changes no measured figure.

use crate::backends::{At, Gpu};
use crate::ExecError;
use kc_core::plan::types::{ElemType, Plan, PlanDataflow, PlanUnit, Step, StepPlaces};

/// Replays the steps one at a time, in plan order on stream 0, from the memory image's
/// starting values, and names the first `limit` steps that leave non-finite values in a
/// place they read or write while every value there was finite before them: where a NaN
/// chain starts, as opposed to the steps that only carry it on. Values are sampled as in
/// the self-check (16 windows spread over each place); what a step reads or allocates
/// outside the image (results read where an op allocated them) is counted whole.
pub(super) fn nonfinite_producers(
    plan: &Plan,
    df: &PlanDataflow,
    gpu: &mut Gpu,
    runs_step: &dyn Fn(&Step) -> bool,
    limit: usize,
) -> Result<Vec<String>, ExecError> {
    gpu.fill_arena(df)?;
    let mut found = Vec::new();
    for (i, s) in plan.steps.iter().enumerate() {
        if !runs_step(s) {
            continue;
        }
        let unit = &plan.units[s.unit as usize];
        let places = &df.steps[i];
        let spots = step_spots(plan, unit, places);
        let bad = |gpu: &Gpu| -> Result<(u64, f64), ExecError> {
            let (mut n, mut largest) = (0, 0f64);
            for &(off, bytes, d) in &spots {
                let (b, _, l) = gpu.nonfinite_at(off, bytes, d)?;
                n += b;
                largest = largest.max(l);
            }
            Ok((n, largest))
        };
        let (mut before, mut largest_before) = bad(gpu)?;
        // What the step reads outside the image (results earlier steps allocated).
        let (outside, outside_largest) = gpu.nonfinite_outside_image(unit, i as u32, false);
        before += outside;
        largest_before = largest_before.max(outside_largest);
        gpu.enqueue(
            unit,
            0,
            At::Step {
                step: i as u32,
                places,
            },
        )?;
        gpu.synchronize()?;
        let (mut after, _) = bad(gpu)?;
        // And what it returned outside the image for later readers.
        after += gpu.nonfinite_outside_image(unit, i as u32, true).0;
        if before == 0 && after > 0 {
            found.push(format!(
                "step {i} (unit {} {}): {after} non-finite values sampled in its places after it ran, none before (largest magnitude before: {largest_before:.3e})",
                unit.id, unit.label
            ));
            if found.len() >= limit {
                break;
            }
        }
    }
    Ok(found)
}

/// The element type a step uses at each operand (the unit's slot order; `Unknown` where
/// the call does not say) and at its tier-3 results (the first floating-point input's, for
/// ops that keep their input's type; `None` for conversions and ops without one).
fn step_types(plan: &Plan, unit: &PlanUnit) -> (Vec<ElemType>, Option<ElemType>) {
    use kc_core::plan::types::UnitCall;
    let mut types = vec![ElemType::Unknown; unit.slots.len()];
    let mut set = |slot: u32, d: ElemType| {
        if let Some(k) = unit.slots.iter().position(|&s| s == slot) {
            types[k] = d;
        }
    };
    let mut result = None;
    match &unit.call {
        UnitCall::Kernel { args, .. } => {
            for a in args {
                if let kc_core::plan::types::KernelArgValue::Pointer { slot, dtype } = a {
                    set(*slot, *dtype);
                }
            }
        }
        UnitCall::Gemm(g) => {
            set(g.a, g.a_type);
            set(g.b, g.b_type);
            set(g.c, g.c_type);
            if let Some(bias) = g.bias {
                set(bias, g.c_type);
            }
        }
        UnitCall::AtenOp { .. } => {
            // The call the plan built and stored (never rebuilt here).
            if let Some(Some(c)) = plan.aten_calls.get(unit.id as usize) {
                for t in c.args.iter().flat_map(|a| a.tensors()) {
                    set(t.slot, t.dtype);
                }
                let converts = matches!(
                    c.op.as_str(),
                    "_to_copy" | "to" | "type_as" | "_softmax" | "_log_softmax" | "view_as_real"
                );
                if !converts {
                    result = c.args.iter().find_map(|a| match a {
                        kc_core::plan::aten_call::CallArg::Tensor(t)
                            if kc_core::plan::aten_call::is_float(t.dtype) =>
                        {
                            Some(t.dtype)
                        }
                        _ => None,
                    });
                }
            }
        }
        _ => {}
    }
    (types, result)
}

/// The places a step of `unit` reads and writes in the memory image, as (arena offset,
/// bytes, element type). Each place is read with the element type this step uses there
/// (memory the allocator reused holds other types at other times); places whose type the
/// step does not state are left out.
pub(super) fn step_spots(
    plan: &Plan,
    unit: &PlanUnit,
    places: &StepPlaces,
) -> Vec<(u64, u64, ElemType)> {
    let (operand_types, result_type) = step_types(plan, unit);
    let mut spots: Vec<(u64, u64, ElemType)> = places
        .operands
        .iter()
        .zip(&unit.slots)
        .zip(&operand_types)
        .filter_map(|((o, slot), d)| {
            Some((o.as_ref().copied()?, plan.buffers[*slot as usize].bytes, *d))
        })
        .collect();
    if let Some(d) = result_type {
        spots.extend(places.outputs.iter().flatten().map(|&(o, b)| (o, b, d)));
    }
    spots
}

/// The `limit` regions of the image holding the most non-finite values (sampled as in the
/// self-check), each with its element type, size and the first and last steps that touch
/// it, for the note that says where values ran away.
pub(super) fn worst_regions(
    plan: &Plan,
    df: &PlanDataflow,
    gpu: &Gpu,
    limit: usize,
) -> Result<String, ExecError> {
    let mut counted = Vec::new();
    for r in &df.regions {
        let (bad, all, _) = gpu.nonfinite_at(r.offset, r.bytes, r.dtype)?;
        if bad > 0 {
            counted.push((bad, all, r));
        }
    }
    counted.sort_by_key(|c| std::cmp::Reverse(c.0));
    let label = |step: u32| {
        plan.steps
            .get(step as usize)
            .map_or("?", |s| plan.units[s.unit as usize].label.as_str())
    };
    let parts: Vec<String> = counted
        .iter()
        .take(limit)
        .map(|(bad, all, r)| {
            format!(
                "a {:?} {:?} region of {} B ({bad} of {all} sampled non-finite; first touched by step {} {}, last by step {} {})",
                r.kind,
                r.dtype,
                r.bytes,
                r.first_step,
                label(r.first_step),
                r.last_step,
                label(r.last_step)
            )
        })
        .collect();
    Ok(if parts.is_empty() {
        "no region the self-check samples".to_string()
    } else {
        format!(
            "{} of {} regions: {}",
            parts.len(),
            counted.len(),
            parts.join("; ")
        )
    })
}
