//! The recorded values a replay fills in: from the graph's [`kc_ir::RecordedValues`] to the
//! tier-3 tensors that take them, per graph step (each invocation its own values: layer 0
//! routes its tokens otherwise than layer 1) and per unit for isolated replay (its first
//! invocation that takes any).
//!
//! Invariant: a slot takes a blob only when the call's tensor in that slot steers its op's
//! kernels (an index, offsets, a mask, or the data of a value-dependent op: `steers`), is
//! a host scalar, or is data the model brought in that no op produced (`brought_in`), and
//! has the recorded shape and element type (so the blob holds exactly its elements); every
//! blob index in the result is in range and each step or unit lists a slot at most once.

use super::aten_call::{AtenCall, CallArg, Fill, TensorInput};
use kc_ir::{KernelGraph, RecordedInput};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One tensor of a call that takes recorded values: the plan slot its tensor names, and the
/// blob it is filled from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotValues {
    pub slot: u32,
    pub blob: u32,
}

/// What a plan fills from recorded values (empty when the graph had none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanValues {
    /// The values file they came from.
    pub source: String,
    pub blobs: Vec<Vec<u8>>,
    /// Per step, in step order (empty when no step takes values).
    pub steps: Vec<Vec<SlotValues>>,
    /// Per unit, by id: its first invocation's that takes any, for isolated replay (empty
    /// when none).
    pub units: Vec<Vec<SlotValues>>,
}

impl PlanValues {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }

    /// The blob filling `slot` at `step` (graph mode) or for `unit` alone.
    pub fn for_slot(&self, unit: u32, step: Option<u32>, slot: u32) -> Option<&[u8]> {
        let list = match step {
            Some(s) => self.steps.get(s as usize)?,
            None => self.units.get(unit as usize)?,
        };
        let v = list.iter().find(|v| v.slot == slot)?;
        self.blobs.get(v.blob as usize).map(Vec::as_slice)
    }

    /// Tensors filled from recorded values over the steps, and steps with any.
    pub fn step_counts(&self) -> (usize, usize) {
        (
            self.steps.iter().map(Vec::len).sum(),
            self.steps.iter().filter(|s| !s.is_empty()).count(),
        )
    }
}

/// The call's tensor at a recorded input's position.
fn tensor_at<'a>(call: &'a AtenCall, r: &RecordedInput) -> Option<&'a TensorInput> {
    match (call.args.get(r.input as usize)?, r.element) {
        (CallArg::Tensor(t), None) => Some(t),
        (CallArg::TensorList(l), Some(k)) => l.get(k as usize),
        (CallArg::OptionalTensorList(l), Some(k)) => l.iter().flatten().nth(k as usize),
        _ => None,
    }
}

/// Ops whose kernels' work depends on the values of their integer data, not only its shape:
/// sorts and selections (passes, ordering), histograms and counts (atomics on the same bins).
const VALUE_DEPENDENT_OPS: &[&str] = &[
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "histc",
    "bincount",
    "_unique2",
    "unique_consecutive",
    "unique_dim",
    "searchsorted",
    "bucketize",
];

/// Whether a tensor's values steer what op `op`'s kernels do: indices (which rows a gather
/// reads), group offsets (how a grouped GEMM splits its rows), masks, and the data of
/// value-dependent ops ([`VALUE_DEPENDENT_OPS`]: MoE routing's `sort` and `histc`). Only
/// these, and the Python numbers an op received (host scalars: constants of the model's
/// program), take recorded values. Other integer data (position arithmetic) is computed by
/// the replay's own steps from them, as the model computed it. Recorded arithmetic beside
/// a computed producer need not agree with it: T5's graph, given its buckets' recorded
/// starting sum (0 or 16) while the Python numbers around it stood at 1, summed 16 + 1 + 15
/// = 32 into a gather over 32 buckets, and its first launch faulted (session 19).
fn steers(op: &str, t: &TensorInput) -> bool {
    matches!(
        t.fill,
        Fill::Indices { .. } | Fill::Offsets { .. } | Fill::Bool
    ) || VALUE_DEPENDENT_OPS.contains(&op)
}

/// The storages (Execution Trace ids) some op of the graph produced: its results', an
/// in-place op's among them (the trace lists the tensor it returns).
fn produced_storages(g: &KernelGraph) -> HashSet<u64> {
    g.tensor_refs
        .iter()
        .flat_map(|r| r.outputs.iter().flat_map(|a| a.tensors()))
        .map(|t| t.storage)
        .collect()
}

/// Whether a recorded input is data the model brought in (a buffer, a parameter, an input):
/// its storage is known and no op of the graph produced it. The replay's steps cannot
/// compute such data, so it takes the recorded values wherever it is read, steering or
/// not: BERT's `token_type_ids` buffer (zeros) is a gather's data, and the gathered
/// values index a two-row embedding; drawn, they faulted its graph (session 20).
fn brought_in(g: &KernelGraph, r: &RecordedInput, produced: &HashSet<u64>) -> bool {
    let Some(op) = crate::lower::dataflow::refs_of(g, r.op) else {
        return false;
    };
    let refs = match op.inputs.get(r.input as usize) {
        Some(a) => a.tensors(),
        None => return false,
    };
    let t = match r.element {
        None if refs.len() == 1 => refs.first(),
        Some(e) => refs.get(e as usize),
        None => None,
    };
    t.is_some_and(|t| t.on_device && !produced.contains(&t.storage))
}

/// Which tensors of each step's call take recorded values. `instance_order` lists the
/// graph's instances in step order; `aten_calls` are the plan's calls by unit id.
pub fn assign(
    g: &KernelGraph,
    instance_order: &[usize],
    aten_calls: &[Option<AtenCall>],
) -> PlanValues {
    let rv = &g.recorded_values;
    if rv.is_empty() {
        return PlanValues::default();
    }
    let produced = produced_storages(g);
    let mut steps: Vec<Vec<SlotValues>> = vec![Vec::new(); instance_order.len()];
    let mut units: Vec<Vec<SlotValues>> = vec![Vec::new(); g.units.len()];
    for (step, &i) in instance_order.iter().enumerate() {
        let inst = &g.instances[i];
        let Some(op) = inst.op else { continue };
        let Some(Some(call)) = aten_calls.get(inst.unit.0 as usize) else {
            continue;
        };
        for r in rv.of_op(op) {
            let Some(t) = tensor_at(call, r) else {
                continue;
            };
            if t.dims != r.dims
                || t.dtype != super::calls::elem(r.dtype)
                || !(t.host_scalar || steers(&call.op, t) || brought_in(g, r, &produced))
            {
                continue;
            }
            if steps[step].iter().any(|v| v.slot == t.slot) {
                continue;
            }
            steps[step].push(SlotValues {
                slot: t.slot,
                blob: r.blob,
            });
        }
        let u = inst.unit.0 as usize;
        if units[u].is_empty() {
            units[u] = steps[step].clone();
        }
    }
    // Blobs no call takes are left out, the rest renumbered.
    let blobs = kc_ir::values::keep_named(
        &rv.blobs,
        steps
            .iter_mut()
            .chain(units.iter_mut())
            .flatten()
            .map(|v| &mut v.blob),
    );
    if blobs.is_empty() {
        return PlanValues::default();
    }
    PlanValues {
        source: rv.source.clone(),
        blobs,
        steps,
        units,
    }
}
