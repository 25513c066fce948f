//! The back ends, one per tier, behind one trait, and [`Gpu`]: the device core with the back
//! ends registered on it. A unit's call goes to the back end that makes it ([`Backend::makes`]);
//! nothing else in the executor looks at a call's kind. A new back end (HIP, another
//! collective library) is one new file implementing [`Backend`] plus a line in [`Gpu::open_on`]
//! (or, for one joined later as NCCL is, in its joining function).
//!
//! Layering: a back end imports only the device core (`crate::device`) and the plan's types
//! (`kc_core::plan`); the core imports no back end; the measurement procedure
//! (`crate::procedure`) sees the core and this module's [`Gpu`], never a back end's insides.

mod blas;
mod compiled;
mod runtime;

#[cfg(feature = "torch")]
mod aten;
pub mod nccl;

use crate::device::{CaptureOwner, Device, Graph};
use crate::ExecError;
use kc_core::plan::types::{Plan, PlanUnit, StepPlaces, UnitCall};
#[cfg(feature = "torch")]
use std::ffi::c_void;

pub use crate::device::At;

/// Where a capture's integer and boolean reads of a result another step allocated (group
/// offsets, indices, masks: values that steer what kernels do) take their values from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SteeringReads {
    /// From the result the capture's own producer computed, when it is live: a pass of the
    /// model's steps (kc's graph), whose producers compute what the model's did.
    #[default]
    FromProducers,
    /// From the stand-in the model pass filled with the model's producer's values, as the
    /// unit alone read them: captures that cycle units out of the model's dataflow (the
    /// pairs and the round), whose producers compute over what the cycle before left.
    AsAlone,
    /// Every bound read, float ones too, from its stand-in: a diagnostic of the pairs and
    /// the round (`--round-bound-reads-as-alone`).
    AllAsAlone,
}

/// One tier's way of running units. Every method but `name`, `makes` and `enqueue` has a
/// default that does nothing.
pub trait Backend {
    /// The back end's name, for messages ("cuBLAS", "libtorch", ...).
    fn name(&self) -> &'static str;
    /// Whether this back end makes `call`.
    fn makes(&self, call: &UnitCall) -> bool;
    /// Takes what it needs of the plan before any unit runs (binaries, built calls).
    fn load(&mut self, _dev: &mut Device, _plan: &Plan) -> Result<(), ExecError> {
        Ok(())
    }
    /// Prepares a unit before any capture (descriptors, scratch memory, one eager run).
    fn prepare(&mut self, _dev: &mut Device, _unit: &PlanUnit) -> Result<(), ExecError> {
        Ok(())
    }
    /// Prepares one graph step whose operands live in the memory image; returns how many
    /// of its results moved into the image.
    fn prepare_step(
        &mut self,
        _dev: &mut Device,
        _unit: &PlanUnit,
        _step: u32,
        _places: &StepPlaces,
    ) -> Result<usize, ExecError> {
        Ok(0)
    }
    /// Enqueues one invocation of `unit` on stream `s`, its operands `at`.
    fn enqueue(&self, dev: &Device, unit: &PlanUnit, s: usize, at: At<'_>)
        -> Result<(), ExecError>;
    /// The address of a result this back end allocated outside the memory image that
    /// operand `operand` of graph step `step` (another back end's unit) reads, when the
    /// plan bound that read to it and the result is live and holds `bytes` from there.
    fn bound_address(&self, _step: u32, _operand: u32, _bytes: u64) -> Option<u64> {
        None
    }
    /// The operands its prepared call for graph step `step` of `unit` (else the unit's own
    /// call) holds outside the memory image `[image.0, image.1)`, as (buffer slot, address,
    /// bytes): tensors of its own (indices, masks, recorded values). Each span lies inside
    /// an allocation the back end keeps while the call stays prepared.
    fn held_outside_image(
        &self,
        _unit: &PlanUnit,
        _step: u32,
        _image: (u64, u64),
    ) -> Vec<(u32, u64, u64)> {
        Vec::new()
    }
    /// Sets where later captures' integer and boolean bound reads take their values from.
    fn steer_reads(&self, _from: SteeringReads) {}
    /// Gives memory it caches for graphs already freed back to the driver; called
    /// outside any capture, between large captures (libtorch frees a freed graph's
    /// private pool only outside a capture).
    fn release_cached_memory(&self) {}
    /// Begins the capture itself when it must (libtorch's CUDAGraph); `None` leaves it to
    /// the device core.
    fn begin_capture(&self, _dev: &Device) -> Result<Option<CaptureOwner>, ExecError> {
        Ok(None)
    }
    /// Ends a capture this back end began; returns the captured graph.
    fn end_capture(
        &self,
        _dev: &Device,
        _owner: &CaptureOwner,
    ) -> Result<cudarc::driver::sys::CUgraph, ExecError> {
        Err(ExecError::NoCapture {
            backend: self.name(),
        })
    }
    /// Whether each unit it makes is captured once on its own before the whole plan is
    /// (an op that cannot run inside a capture is then found and left out alone).
    fn captures_alone_first(&self) -> bool {
        false
    }
    /// Whether it prepares graph steps over the memory image ([`Backend::prepare_step`]).
    fn prepares_steps(&self) -> bool {
        false
    }
    /// Device memory it holds besides the plan's (workspaces), for the memory check.
    fn reserved_bytes(&self) -> u64 {
        0
    }
    /// What it found worth saying in the results' notes (and drains them).
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Non-finite values (count, largest finite magnitude) in what graph step `step` reads
    /// outside the memory image (results an earlier op allocated, read where they are) and,
    /// with `returned`, in what it allocated for later readers: for the diagnosis, which
    /// otherwise sees only the image.
    fn nonfinite_outside_image(&self, _unit: &PlanUnit, _step: u32, _returned: bool) -> (u64, f64) {
        (0, 0.0)
    }
}

/// The device core with its back ends. Back ends drop before the core (they use its
/// streams and memory); libtorch's goes first of all (its caching allocator may record
/// events on a tensor's streams when it frees it).
pub struct Gpu {
    backends: Vec<Box<dyn Backend>>,
    pub dev: Device,
}

impl std::ops::Deref for Gpu {
    type Target = Device;
    fn deref(&self) -> &Device {
        &self.dev
    }
}

impl std::ops::DerefMut for Gpu {
    fn deref_mut(&mut self) -> &mut Device {
        &mut self.dev
    }
}

impl Gpu {
    /// Opens device `ordinal` (a rank's `LOCAL_RANK`) with `streams` streams, and registers
    /// every back end this build has, libtorch's first.
    pub fn open_on(ordinal: u32, streams: usize) -> Result<Gpu, ExecError> {
        #[cfg(feature = "torch")]
        aten::set_device(ordinal);
        let mut dev = Device::open_on(ordinal, streams)?;
        // The registration list: libtorch's first (it drops first), then one per tier.
        let blas = blas::Blas::new(&mut dev)?;
        let backends: Vec<Box<dyn Backend>> = vec![
            #[cfg(feature = "torch")]
            Box::new(aten::Aten::default()),
            Box::new(runtime::Runtime),
            Box::new(blas),
            Box::new(compiled::Compiled::default()),
        ];
        Ok(Gpu { backends, dev })
    }

    /// Joins the job's NCCL communicator (`id` from rank 0, through the rendezvous): the
    /// collectives' back end.
    pub fn join_collectives(&mut self, id: &[u8], world: u32, rank: u32) -> Result<(), ExecError> {
        // SAFETY: this device's context is current on this thread.
        let n = unsafe { nccl::Nccl::init(id, world, rank)? };
        self.backends.push(Box::new(n));
        Ok(())
    }

    /// Whether collectives run here (a communicator was joined).
    pub fn has_collectives(&self) -> bool {
        self.backends.iter().any(|b| b.name() == nccl::NAME)
    }

    /// Lets every back end take what it needs of the plan (binaries, built calls).
    /// Returns each back end's failure with its name; the others are loaded.
    pub fn load(&mut self, plan: &Plan) -> Vec<(&'static str, ExecError)> {
        let mut failed = Vec::new();
        for b in &mut self.backends {
            if let Err(e) = b.load(&mut self.dev, plan) {
                failed.push((b.name(), e));
            }
        }
        failed
    }

    /// The back end that makes `call`, if this build has one.
    fn backend_of(&self, call: &UnitCall) -> Option<usize> {
        self.backends.iter().position(|b| b.makes(call))
    }

    /// The name of the back end that makes `call` ("" when none does).
    pub fn backend_name(&self, call: &UnitCall) -> &'static str {
        self.backend_of(call)
            .map_or("", |i| self.backends[i].name())
    }

    /// Whether the back end of `call` wants each unit captured alone first.
    pub fn captures_alone_first(&self, call: &UnitCall) -> bool {
        self.backend_of(call)
            .is_some_and(|i| self.backends[i].captures_alone_first())
    }

    /// Whether the back end of `call` prepares graph steps over the memory image.
    pub fn prepares_steps(&self, call: &UnitCall) -> bool {
        self.backend_of(call)
            .is_some_and(|i| self.backends[i].prepares_steps())
    }

    /// Whether this build runs `call` (a back end makes it).
    pub fn runs(&self, call: &UnitCall) -> bool {
        self.backend_of(call).is_some()
    }

    /// Allocates every buffer slot of the plan.
    pub fn allocate(&mut self, plan: &Plan) -> Result<(), ExecError> {
        let reserved = self.backends.iter().map(|b| b.reserved_bytes()).sum();
        self.dev.allocate(plan, reserved)
    }

    /// Prepares what a unit needs before capture (its back end's part).
    pub fn prepare(&mut self, unit: &PlanUnit) -> Result<(), ExecError> {
        match self.backend_of(&unit.call) {
            Some(i) => self.backends[i].prepare(&mut self.dev, unit),
            None => Ok(()),
        }
    }

    /// Prepares a step whose operands live in the memory image (tier 3's views).
    pub fn prepare_step(
        &mut self,
        unit: &PlanUnit,
        step: u32,
        places: &StepPlaces,
    ) -> Result<usize, ExecError> {
        match self.backend_of(&unit.call) {
            Some(i) => self.backends[i].prepare_step(&mut self.dev, unit, step, places),
            None => Ok(0),
        }
    }

    /// Enqueues one invocation of `unit` on stream `s`, its operands `at`.
    pub fn enqueue(&self, unit: &PlanUnit, s: usize, at: At<'_>) -> Result<(), ExecError> {
        match self.backend_of(&unit.call) {
            Some(i) => {
                // A read the plan bound to a result another back end allocated (a GEMM
                // reading a layer norm's result) takes that result's address, as the
                // model's GEMM read it: not the detached region that stands in for it.
                if let At::Step { step, .. } = at {
                    let overrides: Vec<(u32, u64)> = unit
                        .slots
                        .iter()
                        .enumerate()
                        .filter_map(|(k, &slot)| {
                            let bytes = self.dev.buffers.get(slot as usize)?.bytes;
                            self.backends
                                .iter()
                                .enumerate()
                                .filter(|(j, _)| *j != i)
                                .find_map(|(_, b)| b.bound_address(step, k as u32, bytes))
                                .map(|a| (slot, a))
                        })
                        .collect();
                    *self.dev.step_overrides.borrow_mut() = overrides;
                }
                let enqueued = self.backends[i].enqueue(&self.dev, unit, s, at);
                self.dev.step_overrides.borrow_mut().clear();
                enqueued
            }
            None => Err(ExecError::NoBackend {
                unit: unit.id,
                label: unit.label.clone(),
                tier: unit.tier.as_str(),
            }),
        }
    }

    /// Captures what `enqueue` issues on stream 0 (and on streams joined to it) into one
    /// instantiated graph, through the back end that must own captures when one does.
    /// Capture mode is always left, also when `enqueue` fails; the first error is returned.
    pub fn capture(
        &self,
        enqueue: impl FnOnce(&Gpu) -> Result<(), ExecError>,
    ) -> Result<Graph, ExecError> {
        let mut owner = None;
        for (i, b) in self.backends.iter().enumerate() {
            if let Some(o) = b.begin_capture(&self.dev)? {
                owner = Some((i, o));
                break;
            }
        }
        if owner.is_none() {
            self.dev.begin_capture()?;
        }
        let captured = enqueue(self);
        let graph = match owner {
            Some((i, o)) => match self.backends[i].end_capture(&self.dev, &o) {
                // SAFETY: `g` was captured just now and is owned by `o`.
                Ok(g) => unsafe { self.dev.instantiate(g, Some(o)) },
                Err(e) => {
                    // SAFETY: the owner's handle is freed once, here, as no graph took it.
                    unsafe { (o.free)(o.handle) };
                    Err(e)
                }
            },
            None => self
                .dev
                .end_capture()
                // SAFETY: `g` was captured just now by the device itself.
                .and_then(|g| unsafe { self.dev.instantiate(g, None) }),
        };
        captured?;
        graph
    }

    /// Sets, in every back end, where later captures' integer and boolean bound reads take
    /// their values from ([`SteeringReads`]).
    pub fn steer_reads(&self, from: SteeringReads) {
        for b in &self.backends {
            b.steer_reads(from);
        }
    }

    /// Every back end gives memory it caches for graphs already freed back to the driver
    /// ([`Backend::release_cached_memory`]); outside any capture only.
    pub fn release_cached_memory(&self) {
        for b in &self.backends {
            b.release_cached_memory();
        }
    }

    /// Every back end's count of non-finite values outside the image for `step` (see
    /// [`Backend::nonfinite_outside_image`]).
    pub fn nonfinite_outside_image(
        &self,
        unit: &PlanUnit,
        step: u32,
        returned: bool,
    ) -> (u64, f64) {
        self.backends
            .iter()
            .map(|b| b.nonfinite_outside_image(unit, step, returned))
            .fold((0, 0f64), |(n, l), (m, k)| (n + m, l.max(k)))
    }

    /// Every back end's operands of step `step` of `unit` held outside the memory image
    /// ([`Backend::held_outside_image`]).
    pub fn held_outside_image(&self, unit: &PlanUnit, step: u32) -> Vec<(u32, u64, u64)> {
        let image = (self.dev.arena, self.dev.arena + self.dev.arena_bytes);
        self.backends
            .iter()
            .flat_map(|b| b.held_outside_image(unit, step, image))
            .collect()
    }

    /// Every back end's notes (e.g. which cuBLASLt algorithm launches the traced kernel).
    pub fn take_notes(&mut self) -> Vec<String> {
        self.backends
            .iter_mut()
            .flat_map(|b| b.take_notes())
            .collect()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // The back ends go while the device's streams and memory still exist, in the order
        // they were registered (libtorch's first); then the core frees its own.
        let _ = self.dev.synchronize();
        for b in self.backends.drain(..) {
            drop(b);
        }
    }
}

/// A raw pointer to a stream, for the libraries that take `void*`.
#[cfg(feature = "torch")]
pub(crate) fn stream_ptr(dev: &Device, s: usize) -> *mut c_void {
    dev.streams[s] as *mut c_void
}
