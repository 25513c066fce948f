//! Bounds on drawn integer data that the model only moves into an index: a tier-3 index
//! operand (`Fill::Indices { high }`) that reads an earlier step's result (a bound read)
//! takes whatever that step wrote, and where that step only moved integer data (a gather,
//! a copy, a concatenation), the data it moved ends up indexing a table of `high` rows.
//! Drawn as small integers (0-7), such data indexes past a smaller table and the kernel's
//! device-side assertion ends the CUDA context: BERT's embeddings gather its
//! `token_type_ids` buffer (never written in the step) at the positions, copy the result
//! to the batch, and index the two-row token-type table with it (session 20, without its
//! values file). So the drawn data a movement reads is drawn below the `high` of every index
//! it reaches, through any chain of movements.
//!
//! Invariant: only `Fill::SmallInts` and `Fill::Indices` tensors of movement ops change,
//! and only to `Fill::Indices` with a `high` no larger than before (at least 1); a tensor
//! the op writes is never changed; recorded values, where a plan has them, still win.

use super::aten_call::{AtenCall, CallArg, Fill, TensorInput};
use super::types::{BoundRead, PlanUnit, Step};
use std::collections::HashMap;

/// Ops whose integer results are their integer inputs' elements, moved: what such an op
/// wrote into an index is what it read.
const MOVEMENT_OPS: &[&str] = &[
    "gather",
    "index_select",
    "copy_",
    "clone",
    "_to_copy",
    "contiguous",
    "cat",
    "stack",
    "repeat",
    "take",
    "index",
];

/// Bounds the drawn integer data that reaches an index through movements (module docs).
/// `calls` are the plan's tier-3 calls by unit id; `bound` its bound reads.
pub fn bound_moved_indices(
    calls: &mut [Option<AtenCall>],
    steps: &[Step],
    units: &[PlanUnit],
    bound: &[BoundRead],
) {
    let producer: HashMap<(u32, u32), u32> = bound
        .iter()
        .map(|b| ((b.step, b.operand), b.producer_step))
        .collect();
    // (unit, slot) → the smallest `high` an index it reaches asked for.
    let mut limits: HashMap<(u32, u32), i64> = HashMap::new();
    for b in bound {
        let Some(high) = index_high(calls, steps, units, b.step, b.operand) else {
            continue;
        };
        // Depth-first over the chain of movements, each step at most once per index.
        let mut todo = vec![b.producer_step];
        let mut seen = Vec::new();
        while let Some(p) = todo.pop() {
            if seen.contains(&p) {
                continue;
            }
            seen.push(p);
            let Some(step) = steps.get(p as usize) else {
                continue;
            };
            let u = step.unit;
            let Some(Some(call)) = calls.get(u as usize) else {
                continue;
            };
            if !MOVEMENT_OPS.contains(&call.op.as_str()) {
                continue;
            }
            let slots = &units[u as usize].slots;
            for (i, t) in moved_inputs(call) {
                let Some(k) = slots.iter().position(|&s| s == t.slot) else {
                    continue;
                };
                match producer.get(&(p, k as u32)) {
                    Some(&q) => todo.push(q),
                    None if matches!(t.fill, Fill::SmallInts | Fill::Indices { .. })
                        && !call.writes(i) =>
                    {
                        let e = limits.entry((u, t.slot)).or_insert(high);
                        *e = (*e).min(high);
                    }
                    None => {}
                }
            }
        }
    }
    for ((u, slot), high) in limits {
        let Some(Some(call)) = calls.get_mut(u as usize) else {
            continue;
        };
        for t in call
            .args
            .iter_mut()
            .flat_map(CallArg::tensors_mut)
            .filter(|t| t.slot == slot)
        {
            t.fill = match t.fill {
                Fill::SmallInts => Fill::Indices { high: high.max(1) },
                Fill::Indices { high: h } => Fill::Indices {
                    high: h.min(high).max(1),
                },
                ref f => f.clone(),
            };
        }
    }
}

/// The `high` of the index operand `operand` of step `step`, where its tensor is drawn as
/// indices.
fn index_high(
    calls: &[Option<AtenCall>],
    steps: &[Step],
    units: &[PlanUnit],
    step: u32,
    operand: u32,
) -> Option<i64> {
    let u = steps.get(step as usize)?.unit;
    let slot = *units.get(u as usize)?.slots.get(operand as usize)?;
    let call = calls.get(u as usize)?.as_ref()?;
    tensors(call)
        .find(|(_, t)| t.slot == slot)
        .and_then(|(_, t)| match t.fill {
            Fill::Indices { high } => Some(high),
            _ => None,
        })
}

/// The tensors of a call with their argument positions.
fn tensors(call: &AtenCall) -> impl Iterator<Item = (usize, &TensorInput)> {
    call.args
        .iter()
        .enumerate()
        .flat_map(|(i, a)| a.tensors().into_iter().map(move |t| (i, t)))
}

/// A movement's integer inputs: its integer tensors but the indices it reads by (a
/// gather's `index` moves nothing).
fn moved_inputs(call: &AtenCall) -> impl Iterator<Item = (usize, &TensorInput)> {
    let by = match call.op.as_str() {
        "gather" => Some(2),
        "index_select" => Some(2),
        "take" => Some(1),
        "index" => Some(1),
        _ => None,
    };
    tensors(call).filter(move |&(i, t)| {
        Some(i) != by
            && !super::aten_call::is_float(t.dtype)
            && t.dtype != super::types::ElemType::Bool
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::aten_call::Outputs;
    use crate::plan::types::{ElemType, PlanTier, UnitCall};

    fn int(slot: u32, fill: Fill) -> CallArg {
        CallArg::Tensor(TensorInput {
            dims: vec![4],
            strides: vec![1],
            dtype: ElemType::I64,
            slot,
            fill,
            host_scalar: false,
        })
    }

    fn call(op: &str, args: Vec<CallArg>) -> Option<AtenCall> {
        Some(AtenCall {
            op: op.into(),
            overload: String::new(),
            args,
            outputs: Outputs::InPlace,
            assumed: Vec::new(),
        })
    }

    fn unit(id: u32, slots: Vec<u32>) -> PlanUnit {
        PlanUnit {
            id,
            tier: PlanTier::AtenOp,
            family: String::new(),
            label: String::new(),
            call: UnitCall::NotReplayable {
                reason: String::new(),
            },
            kernels: Vec::new(),
            invocations: 1,
            traced_ns_total: 0,
            slots,
            cold_rotation: 1,
        }
    }

    fn step(unit: u32) -> Step {
        Step {
            unit,
            stream: 0,
            waits_on: Vec::new(),
            traced_ns: 0,
            traced_start_ns: 0,
        }
    }

    fn read(step: u32, operand: u32, producer_step: u32) -> BoundRead {
        BoundRead {
            step,
            operand,
            producer_step,
            output: 0,
            byte_offset: 0,
        }
    }

    fn fills(c: &Option<AtenCall>) -> Vec<Fill> {
        tensors(c.as_ref().unwrap())
            .map(|(_, t)| t.fill.clone())
            .collect()
    }

    /// BERT's shape: gather(buffer, 1, positions) → copy_(dst, gathered) → gather(table,
    /// 0, copied) over 2 rows; beside it an `add` whose result indexes a 3-row table.
    #[test]
    fn drawn_data_moved_into_an_index_is_drawn_below_it_and_nothing_else_changes() {
        let mut calls = vec![
            call(
                "gather",
                vec![
                    int(0, Fill::SmallInts),
                    CallArg::Int(1),
                    int(1, Fill::Indices { high: 512 }),
                ],
            ),
            call(
                "copy_",
                vec![int(2, Fill::SmallInts), int(3, Fill::SmallInts)],
            ),
            call(
                "gather",
                vec![
                    int(4, Fill::SmallInts),
                    CallArg::Int(0),
                    int(5, Fill::Indices { high: 2 }),
                ],
            ),
            call(
                "add",
                vec![int(6, Fill::SmallInts), int(7, Fill::SmallInts)],
            ),
            call(
                "gather",
                vec![
                    int(8, Fill::SmallInts),
                    CallArg::Int(0),
                    int(9, Fill::Indices { high: 3 }),
                ],
            ),
        ];
        let units = vec![
            unit(0, vec![0, 1]),
            unit(1, vec![2, 3]),
            unit(2, vec![4, 5]),
            unit(3, vec![6, 7]),
            unit(4, vec![8, 9]),
        ];
        let steps: Vec<Step> = (0..5).map(step).collect();
        // The copy reads the first gather's result; the table gather reads the copy's;
        // the last gather reads the add's.
        let bound = vec![read(1, 1, 0), read(2, 1, 1), read(4, 1, 3)];
        let before = calls.clone();
        bound_moved_indices(&mut calls, &steps, &units, &bound);
        assert_eq!(
            fills(&calls[0]),
            vec![Fill::Indices { high: 2 }, Fill::Indices { high: 512 }]
        );
        // The copy's destination is written, its source read from the gather: unchanged.
        assert_eq!(calls[1], before[1]);
        assert_eq!(calls[2], before[2]);
        // An add computes its result: what it reads is not bounded.
        assert_eq!(calls[3], before[3]);
        assert_eq!(calls[4], before[4]);
    }

    /// Two indices reached through one movement: the smaller table bounds it. An index
    /// already drawn lower keeps its bound.
    #[test]
    fn the_smallest_table_bounds_and_no_bound_grows() {
        let take = |data: u32, index: u32, high: i64| {
            call(
                "take",
                vec![
                    int(data, Fill::SmallInts),
                    int(index, Fill::Indices { high }),
                ],
            )
        };
        let mut calls = vec![
            call("clone", vec![int(0, Fill::Indices { high: 1 })]),
            call("clone", vec![int(1, Fill::SmallInts)]),
            take(2, 3, 5),
            take(4, 5, 3),
            take(6, 7, 5),
        ];
        let units = vec![
            unit(0, vec![0]),
            unit(1, vec![1]),
            unit(2, vec![2, 3]),
            unit(3, vec![4, 5]),
            unit(4, vec![6, 7]),
        ];
        let steps: Vec<Step> = (0..5).map(step).collect();
        // The second clone feeds indices into tables of 5 and 3 rows; the first, into one
        // of 5.
        let bound = vec![read(2, 1, 1), read(3, 1, 1), read(4, 1, 0)];
        bound_moved_indices(&mut calls, &steps, &units, &bound);
        assert_eq!(fills(&calls[0]), vec![Fill::Indices { high: 1 }]);
        assert_eq!(fills(&calls[1]), vec![Fill::Indices { high: 3 }]);
    }
}
