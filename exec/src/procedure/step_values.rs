//! Gives each unit measured alone the values its steps read in the model. After one pass of
//! the model's steps a place holds what its last writer left, and the image packs tensors
//! whose lives do not overlap into the same bytes, so most bytes a step reads hold another
//! tensor's values by then ([`kc_core::plan::step_values`]). Those bytes are kept, as each
//! step reads them, from a pass of the model's steps into scratch memory (for as many units
//! at once as fit beside the image), and swapped into the image's snapshot while the unit
//! is measured: the restore before the unit and a restoring launch's copies then give them.
//!
//! Invariant: whenever no unit is being measured the snapshot holds the pass's values (a
//! unit's values are swapped in before it and out after it), so the round and the
//! diagnostics start from the same image as before.

use crate::backends::Gpu;
use crate::device::ImageAt;
use crate::ExecError;
use cudarc::driver::sys as cu;
use kc_core::plan::step_values::UnitStepValues;
use kc_core::plan::step_values::{reads_rewritten_later, unit_step_values, StepSpans};
use kc_core::plan::types::{Plan, PlanDataflow};
use kc_core::results::UnitValuesGiven;
use std::collections::{HashMap, HashSet};

/// The most scratch memory one group of units takes (their values and the snapshot's
/// bytes they replace): the free memory less the snapshot's headroom caps it first. Each
/// group costs a pass of the model's steps: GPT-2's 4-layer training step gave 11 GiB back
/// to 53 units in 4 passes of 8 GiB groups, 2.5 s of its `kc run` (session 29, call 1).
const GROUP_BYTES_MAX: u64 = 32 << 30;

pub(super) struct ValuesAtSteps {
    /// Each unit's spans, only of steps the pass runs.
    of_unit: HashMap<u32, UnitStepValues>,
    /// The units with spans, in the order they are measured.
    order: Vec<u32>,
    group: Option<Group>,
    /// The unit whose values the snapshot holds now.
    given: Option<u32>,
    /// After a failure ([`Self::stop`]) no unit is given values; those with spans are
    /// counted as left out.
    stopped: bool,
    summary: UnitValuesGiven,
}

/// Scratch memory holding the values of some units: per unit, its spans' values as its
/// steps read them, then room for the snapshot's bytes they replace.
struct Group {
    scratch: cu::CUdeviceptr,
    at: HashMap<u32, u64>,
}

impl ValuesAtSteps {
    /// Each unit's spans over the steps its graph runs (`graph_steps`, in launch order),
    /// of the steps `pass` runs, from what every step reads and writes in the image
    /// (`spans`, [`kc_core::plan::step_values::step_spans`]).
    pub(super) fn new(
        plan: &Plan,
        spans: &[StepSpans],
        graph_steps: &HashMap<u32, Vec<u32>>,
        pass: &[u32],
    ) -> ValuesAtSteps {
        let rewritten = reads_rewritten_later(spans);
        let in_pass: HashSet<u32> = pass.iter().copied().collect();
        let mut of_unit = HashMap::new();
        let mut order = Vec::new();
        for u in &plan.units {
            let Some(steps) = graph_steps.get(&u.id) else {
                continue;
            };
            let steps: Vec<u32> = steps
                .iter()
                .copied()
                .filter(|s| in_pass.contains(s))
                .collect();
            let v = unit_step_values(&rewritten, &steps);
            if !v.spans.is_empty() {
                order.push(u.id);
                of_unit.insert(u.id, v);
            }
        }
        ValuesAtSteps {
            of_unit,
            order,
            group: None,
            given: None,
            stopped: false,
            summary: UnitValuesGiven {
                at_steps: true,
                ..Default::default()
            },
        }
    }

    /// Swaps `unit`'s values into the snapshot, keeping them first (a pass of the model's
    /// steps) where no group holds them. Returns whether the snapshot changed: the caller
    /// then restores the image from it. A unit with no rewritten reads, or whose values do
    /// not fit, changes nothing (the latter counted).
    pub(super) fn give(
        &mut self,
        plan: &Plan,
        df: &PlanDataflow,
        gpu: &mut Gpu,
        pass: &[u32],
        unit: u32,
    ) -> Result<bool, ExecError> {
        if !self.of_unit.contains_key(&unit) {
            return Ok(false);
        }
        if self.stopped || !gpu.has_arena_snapshot() {
            self.summary.units_left_out += 1;
            return Ok(false);
        }
        let held = self
            .group
            .as_ref()
            .is_some_and(|g| g.at.contains_key(&unit));
        if !held && !self.keep_from(plan, df, gpu, pass, unit)? {
            self.summary.units_left_out += 1;
            return Ok(false);
        }
        let g = self.group.as_ref().expect("a group holds the unit");
        let v = &self.of_unit[&unit];
        let base = g.scratch + g.at[&unit];
        let bytes = v.bytes();
        let mut k = 0u64;
        for &(_, off, len) in &v.spans {
            gpu.enqueue_image_copy(
                ImageAt::Snapshot(off),
                ImageAt::Scratch(base + bytes + k),
                len,
            )?;
            gpu.enqueue_image_copy(ImageAt::Scratch(base + k), ImageAt::Snapshot(off), len)?;
            k += len;
        }
        self.given = Some(unit);
        self.summary.units += 1;
        self.summary.bytes += bytes;
        self.summary.shared_bytes += v.shared_bytes;
        Ok(true)
    }

    /// Puts the pass's values back into the snapshot where a unit's were swapped in.
    pub(super) fn take_back(&mut self, gpu: &mut Gpu) -> Result<(), ExecError> {
        let Some(unit) = self.given.take() else {
            return Ok(());
        };
        let (Some(g), Some(v)) = (self.group.as_ref(), self.of_unit.get(&unit)) else {
            return Ok(());
        };
        let base = g.scratch + g.at[&unit];
        let bytes = v.bytes();
        let mut k = 0u64;
        gpu.synchronize()?;
        for &(_, off, len) in &v.spans {
            gpu.enqueue_image_copy(
                ImageAt::Scratch(base + bytes + k),
                ImageAt::Snapshot(off),
                len,
            )?;
            k += len;
        }
        gpu.synchronize()
    }

    /// Gives no unit values from now on, after a failure to give them to `unit` (counted
    /// as left out, as every later unit with spans is): the snapshot's own bytes go back
    /// where they can, and the scratch memory is freed.
    pub(super) fn stop(&mut self, gpu: &mut Gpu, unit: u32) {
        // A unit counts as given only once its swap is enqueued whole, so `unit` was not.
        debug_assert_ne!(self.given, Some(unit));
        self.summary.units_left_out += 1;
        let _ = self.take_back(gpu);
        if let Some(g) = self.group.take() {
            let _ = gpu.free_scratch(g.scratch);
        }
        self.stopped = true;
    }

    /// Frees the scratch memory and says what was given.
    pub(super) fn finish(mut self, gpu: &mut Gpu) -> Result<UnitValuesGiven, ExecError> {
        self.take_back(gpu)?;
        if let Some(g) = self.group.take() {
            gpu.free_scratch(g.scratch)?;
        }
        Ok(self.summary)
    }

    /// A new group from `first` on, in measuring order, as many units as fit, and one pass
    /// of the model's steps from the image's starting values that keeps each unit's spans
    /// as its step reads them. The pass leaves the image as the snapshot holds it. Returns
    /// false where `first` alone does not fit.
    fn keep_from(
        &mut self,
        plan: &Plan,
        df: &PlanDataflow,
        gpu: &mut Gpu,
        pass: &[u32],
        first: u32,
    ) -> Result<bool, ExecError> {
        if let Some(g) = self.group.take() {
            gpu.free_scratch(g.scratch)?;
        }
        let budget = gpu
            .free_memory_bytes()?
            .saturating_sub(super::isolated::SNAPSHOT_HEADROOM)
            .min(GROUP_BYTES_MAX);
        let from = self.order.iter().position(|&u| u == first).unwrap_or(0);
        let mut at = HashMap::new();
        let mut total = 0u64;
        for &u in &self.order[from..] {
            // Its values and the snapshot's bytes they replace.
            let need = 2 * self.of_unit[&u].bytes();
            if total + need > budget {
                break;
            }
            at.insert(u, total);
            total += need;
        }
        if at.is_empty() {
            return Ok(false);
        }
        let scratch = gpu.alloc_scratch(total)?;
        // Where each step's spans go: (arena offset, length, scratch address).
        let mut at_step: HashMap<u32, Vec<(u64, u64, cu::CUdeviceptr)>> = HashMap::new();
        for (&u, &o) in &at {
            let mut k = 0u64;
            for &(st, off, len) in &self.of_unit[&u].spans {
                at_step
                    .entry(st)
                    .or_default()
                    .push((off, len, scratch + o + k));
                k += len;
            }
        }
        let kept = super::isolated::run_model_pass(plan, df, gpu, pass, |gpu, st| {
            for &(off, len, dst) in at_step.get(&st).map(Vec::as_slice).unwrap_or(&[]) {
                gpu.enqueue_image_copy(ImageAt::Image(off), ImageAt::Scratch(dst), len)?;
            }
            Ok(())
        });
        if let Err(e) = kept {
            let _ = gpu.free_scratch(scratch);
            return Err(e);
        }
        self.summary.passes += 1;
        self.group = Some(Group { scratch, at });
        Ok(true)
    }
}
