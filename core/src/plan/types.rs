//! The replay plan's own serialised types: what `kc exec` needs and nothing else. They
//! mirror, but never reuse, the IR's types, so the IR can change without breaking plan
//! files and a plan can be read without the IR. Invariant: every index in a plan (unit,
//! stream, buffer slot, step) points inside the plan; [`Plan::check`] proves it.

use serde::{Deserialize, Serialize};

/// Bumped whenever the encoding of any type in this file changes. Version 2 added
/// [`Plan::iterations`]; version 3 appended [`Plan::dataflow`]; version 4 appended
/// [`Plan::binaries`] (and tier 4's [`UnitCall::Kernel`]); version 5 appended
/// [`Plan::kernel_geometry`]; version 6 appended [`Plan::aten_calls`] (each tier-3 unit's
/// call, built once here) and [`Plan::math`] (the model's math modes); version 7 appended
/// [`RegionKind::Detached`]; version 8 appended [`Plan::values`]; version 9 appended
/// [`RegionKind::CarriedIn`]; version 10 appended [`Plan::bound_reads`]; version 11 appended
/// the variant [`crate::plan::aten_call::Fill::Offsets`]. Version 1 plans are still read
/// ([`PlanV1`]), versions 2-10 as plans without what later versions appended (their calls
/// are built as they are read).
pub const PLAN_FORMAT_VERSION: u32 = 11;

/// How many profiled iterations the plan's steps cover, so reports can give figures per
/// model iteration beside figures per replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PlanIterations {
    /// Iterations on the replayed rank; 0 when none were found.
    pub count: u32,
    /// "ProfilerStep markers", "repeating kernel sequence" or "none".
    pub found_by: String,
}

/// A version-1 plan: the same as [`Plan`] without `iterations`, read so that plans
/// results were measured with stay usable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanV1 {
    pub header: PlanHeader,
    pub streams: Vec<PlanStream>,
    pub buffers: Vec<Buffer>,
    pub units: Vec<PlanUnit>,
    pub steps: Vec<Step>,
    pub memory: MemoryPlan,
}

impl From<PlanV1> for Plan {
    fn from(p: PlanV1) -> Self {
        Plan {
            header: p.header,
            streams: p.streams,
            buffers: p.buffers,
            units: p.units,
            steps: p.steps,
            memory: p.memory,
            iterations: PlanIterations {
                count: 0,
                found_by: "not recorded (a version 1 plan)".into(),
            },
            dataflow: None,
            binaries: Vec::new(),
            kernel_geometry: Vec::new(),
            aten_calls: Vec::new(),
            math: Default::default(),
            values: Default::default(),
            bound_reads: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub header: PlanHeader,
    pub streams: Vec<PlanStream>,
    pub buffers: Vec<Buffer>,
    /// Unique units, each with its parameters and invocation count.
    pub units: Vec<PlanUnit>,
    /// Every invocation in replay (trace start) order, for graph mode.
    pub steps: Vec<Step>,
    pub memory: MemoryPlan,
    pub iterations: PlanIterations,
    /// The model's memory image for graph mode: one arena holding every placed operand.
    /// `None` in plans without dataflow; graph mode then gives each unit its own slots.
    pub dataflow: Option<PlanDataflow>,
    /// Compiled kernels' binaries, which tier-4 units launch ([`UnitCall::Kernel`]).
    pub binaries: Vec<KernelBinary>,
    /// Per unit, parallel to its `kernels`: the traced launch geometry (grid, block) of its
    /// first invocation's kernels (`None` for copies and fills), which `--verify` compares
    /// with what the replay launched. Empty in plans before version 5.
    pub kernel_geometry: Vec<Vec<Option<LaunchDims>>>,
    /// Per unit (by id), the call a tier-3 unit makes, built once when the plan was:
    /// `Some` exactly for the units of tier 3 ([`PlanTier::AtenOp`]). The executor runs
    /// this call; it never builds or refuses one.
    pub aten_calls: Vec<Option<crate::plan::aten_call::AtenCall>>,
    /// The math modes the model ran under, as its traced kernels show them (TF32 for fp32
    /// matmuls and convolutions); the back ends replay under them. Plans before format 6
    /// take PyTorch's defaults.
    pub math: crate::plan::math::MathModes,
    /// The recorded values tier-3 tensors are filled with (indices and routing the model
    /// computed), per step and per unit (appended in plan format 8; empty without a values
    /// file, and in older plans).
    pub values: crate::plan::values::PlanValues,
    /// Tier-3 reads of a result that an earlier tier-3 step allocates (an op without an
    /// `.out` form: `_foreach_sqrt`, cuDNN attention): the executor hands the reader the
    /// producer's own result instead of the detached region the read's place points at
    /// (appended in plan format 10; empty in older plans, whose reads stay detached).
    pub bound_reads: Vec<BoundRead>,
}

/// One read bound to the result it reads: operand `operand` of step `step` is the tensor
/// at `byte_offset` inside result `output` (flattened, as the op returns its tensors) of
/// step `producer_step`, an earlier step on the same stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundRead {
    pub step: u32,
    pub operand: u32,
    pub producer_step: u32,
    pub output: u32,
    pub byte_offset: u64,
}

/// A kernel launch's grid and block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// A compiled kernel's binary: a cubin and the entry to launch in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelBinary {
    pub name: String,
    pub cubin: Vec<u8>,
    /// The architecture it was compiled for (90 = sm_90); it loads only on that one.
    pub arch: u32,
    /// Dynamic shared memory each launch needs.
    pub shared_bytes: u32,
    pub num_warps: u32,
    /// Where it came from (the compiler cache's directory of it).
    pub origin: String,
}

/// One value a tier-4 launch passes, in the entry's parameter order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum KernelArgValue {
    /// The address of a buffer slot (or the step's place in the memory image).
    Pointer {
        slot: u32,
        dtype: ElemType,
    },
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// Scratch memory of this many bytes; a null pointer when 0.
    Scratch {
        bytes: u64,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RegionKind {
    /// Read but never written by the replay: its own bytes for the whole replay.
    Parameter,
    /// Written by the replay: shares bytes with regions whose lifetimes do not overlap.
    Activation,
    /// A result a tier-3 op allocates outside the image, as its readers see it: its own
    /// bytes, finite starting values in the readers' element type ([`crate::plan::detach`]).
    /// Appended in plan format 7.
    Detached,
    /// Bytes a storage holds before the replay writes them, as the reads that come first see
    /// them: its own bytes, never written, the storage's starting values
    /// ([`crate::plan::carry`]). Appended in plan format 9.
    CarriedIn,
}

/// The values a region starts with. Data flows through the replay, so values matter: a
/// normalisation dividing by a negative variance, or weights that grow activations layer
/// after layer, turn the model's numbers into NaN and infinities, and the GPU draws less
/// power on them than on the model's data. Parameters therefore start as PyTorch
/// initialises them, by the role their first reader gives them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RegionInit {
    /// Uniform in [-1, 1): inputs, and activations before their producer writes them.
    Uniform,
    /// A weight with this fan-in: uniform in +-1/sqrt(fan_in) (PyTorch's default for
    /// linear and convolution weights and biases).
    Weight { fan_in: u64 },
    /// A normalisation's scale or running variance.
    Ones,
    /// A normalisation's shift or running mean.
    Zeros,
    /// A small positive constant (1e-3): a learning rate held in a tensor.
    Small,
}

/// One storage of the model, at its place in the arena.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub offset: u64,
    pub bytes: u64,
    pub kind: RegionKind,
    /// The element type its first reader or writer uses (`Unknown` for copies only).
    pub dtype: ElemType,
    pub init: RegionInit,
    /// First and last step (inclusive) that touch it.
    pub first_step: u32,
    pub last_step: u32,
}

/// Where one step's operands live: arena byte offsets by operand position (the unit's
/// `slots` order); `None` keeps the unit's own slot (host memory, integer data, operands
/// without an identity).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StepPlaces {
    pub operands: Vec<Option<u64>>,
    /// A tier-3 op's results, as (arena offset, bytes available), by result position.
    pub outputs: Vec<Option<(u64, u64)>>,
}

impl StepPlaces {
    /// The arena offset of `unit`'s operand `slot` at this step, if it is placed.
    pub fn operand_of(&self, unit: &PlanUnit, slot: u32) -> Option<u64> {
        let k = unit.slots.iter().position(|&x| x == slot)?;
        self.operands.get(k).copied().flatten()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDataflow {
    /// "execution trace" or "heuristic" (see `lower::dataflow`).
    pub derivation: String,
    pub regions: Vec<Region>,
    /// Parameters (laid out first, side by side) plus the packed activations.
    pub arena_bytes: u64,
    pub parameter_bytes: u64,
    /// The most activation bytes alive at one step (the packing's lower bound).
    pub peak_activation_bytes: u64,
    /// One entry per step, in step order.
    pub steps: Vec<StepPlaces>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanHeader {
    pub kc_version: String,
    /// Trace files the plan came from: name, size, CRC32 of the first MiB.
    pub sources: Vec<SourceId>,
    pub devices: Vec<PlanDevice>,
    pub cuda_runtime_version: Option<u32>,
    /// Sum of traced durations of all GPU activities in the graph, replayable or not.
    pub traced_gpu_ns: i64,
    /// Sum of traced durations of the activities this plan replays (tiers 1-4).
    pub replayable_traced_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceId {
    pub file: String,
    pub bytes: u64,
    pub crc32_first_mib: u32,
    pub rank: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDevice {
    pub rank: u32,
    pub name: String,
    pub total_global_mem: u64,
    pub compute_capability: (u32, u32),
    pub num_sms: u32,
}

/// One CUDA stream of the replay, for one traced (rank, device, stream).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStream {
    pub rank: u32,
    pub device: u32,
    pub trace_stream: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Location {
    Device,
    /// Page-locked host memory (the host side of async copies).
    PinnedHost,
}

/// A buffer slot: `bytes` of memory the executor allocates once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    pub bytes: u64,
    pub location: Location,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
pub enum PlanTier {
    Runtime,
    Gemm,
    AtenOp,
    Collective,
    NotReplayable,
    /// Tier 4: a compiled kernel launched from its binary (last, so older plans decode).
    Compiled,
}

impl PlanTier {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanTier::Runtime => "1",
            PlanTier::Gemm => "2",
            PlanTier::AtenOp => "3",
            PlanTier::Compiled => "4",
            PlanTier::Collective => "collective",
            PlanTier::NotReplayable => "unreplayable",
        }
    }

    /// Tiers `kc exec` runs today; the others are reported as not executed.
    pub fn is_replayable(self) -> bool {
        matches!(
            self,
            PlanTier::Runtime | PlanTier::Gemm | PlanTier::AtenOp | PlanTier::Compiled
        )
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CopyKind {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    PtoP,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElemType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
    C64,
    C128,
    Unknown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    N,
    T,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Epilogue {
    None,
    Bias,
    BiasGelu,
    BiasRelu,
}

/// A complete column-major cuBLAS/cuBLASLt call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmParams {
    pub transa: Op,
    pub transb: Op,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub lda: i64,
    pub ldb: i64,
    pub ldc: i64,
    pub batch: i64,
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    pub a_type: ElemType,
    pub b_type: ElemType,
    pub c_type: ElemType,
    pub compute_type: ElemType,
    pub alpha: f64,
    pub beta: f64,
    pub epilogue: Epilogue,
    pub a: u32,
    pub b: u32,
    pub c: u32,
    pub bias: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorArg {
    pub dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub dtype: ElemType,
    pub slot: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AtenArg {
    Tensor(TensorArg),
    TensorList(Vec<TensorArg>),
    Scalar {
        ty: String,
        value: String,
    },
    ScalarList {
        ty: String,
        value: String,
    },
    None,
    Other {
        ty: String,
    },
    /// `Tensor?[]` as an Execution Trace records it, `None` where an entry is absent
    /// (appended last: plans written before it decode unchanged).
    OptionalTensorList(Vec<Option<TensorArg>>),
}

impl AtenArg {
    /// The tensors it passes, in order (a list's present entries).
    pub fn tensors(&self) -> Vec<&TensorArg> {
        match self {
            AtenArg::Tensor(t) => vec![t],
            AtenArg::TensorList(ts) => ts.iter().collect(),
            AtenArg::OptionalTensorList(ts) => ts.iter().flatten().collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UnitCall {
    Memcpy {
        kind: CopyKind,
        bytes: u64,
        src: u32,
        dst: u32,
    },
    Memset {
        bytes: u64,
        value: u8,
        dst: u32,
    },
    Gemm(GemmParams),
    AtenOp {
        op: String,
        args: Vec<AtenArg>,
    },
    Collective {
        collective: String,
        dtype: String,
        in_nelems: Option<u64>,
        out_nelems: Option<u64>,
        group_size: Option<u32>,
    },
    NotReplayable {
        reason: String,
    },
    /// Tier 4: launch `binary` (an index into [`Plan::binaries`]) with the traced grid and
    /// block and these arguments.
    Kernel {
        binary: u32,
        grid: [u32; 3],
        block: [u32; 3],
        args: Vec<KernelArgValue>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanUnit {
    pub id: u32,
    pub tier: PlanTier,
    pub family: String,
    pub label: String,
    pub call: UnitCall,
    /// Kernel names one invocation launched in the trace.
    pub kernels: Vec<String>,
    pub invocations: u64,
    pub traced_ns_total: i64,
    /// Buffer slots this unit reads or writes.
    pub slots: Vec<u32>,
    /// Copies of the unit's buffers cold-cache mode rotates through so that no invocation
    /// finds its data in L2 (1 when the unit's data alone exceeds L2).
    pub cold_rotation: u32,
}

impl PlanUnit {
    pub fn traced_ns_mean(&self) -> f64 {
        if self.invocations == 0 {
            0.0
        } else {
            self.traced_ns_total as f64 / self.invocations as f64
        }
    }
}

/// One invocation in graph mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub unit: u32,
    pub stream: u32,
    /// Earlier steps on other streams this one waits for.
    pub waits_on: Vec<u32>,
    pub traced_ns: i64,
    /// Offset of the traced start from the first replayed step's start.
    pub traced_start_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// Device memory graph mode needs (every slot once).
    pub device_bytes: u64,
    pub pinned_host_bytes: u64,
    /// Device memory isolated cold-cache mode needs at its peak (the largest unit's
    /// rotation), on top of `device_bytes`.
    pub cold_extra_peak_bytes: u64,
    /// The L2 size rotation was planned against.
    pub l2_bytes: u64,
}

impl Plan {
    /// The ranks the plan's streams belong to, ascending, each once.
    /// The memory image one rank's GPU holds: the regions its own steps touch (a region
    /// belongs to the rank of the first step that touches it), in an arena as large as
    /// they reach. Plans lay each rank out from offset 0, so no GPU allocates the others'.
    pub fn dataflow_of_rank(&self, rank: u32) -> Option<PlanDataflow> {
        let df = self.dataflow.as_ref()?;
        if self.ranks().len() <= 1 {
            return Some(df.clone());
        }
        let region_rank = |r: &Region| {
            self.steps
                .get(r.first_step as usize)
                .and_then(|s| self.streams.get(s.stream as usize))
                .map(|s| s.rank)
        };
        let regions: Vec<Region> = df
            .regions
            .iter()
            .filter(|r| region_rank(r) == Some(rank))
            .cloned()
            .collect();
        let end = |k: RegionKind| {
            regions
                .iter()
                .filter(|r| r.kind == k)
                .map(|r| r.offset + r.bytes)
                .max()
                .unwrap_or(0)
        };
        let arena_bytes = regions
            .iter()
            .map(|r| (r.offset + r.bytes).div_ceil(512) * 512)
            .max()
            .unwrap_or(0);
        Some(PlanDataflow {
            derivation: df.derivation.clone(),
            arena_bytes,
            parameter_bytes: end(RegionKind::Parameter).div_ceil(512) * 512,
            peak_activation_bytes: df.peak_activation_bytes,
            regions,
            steps: df.steps.clone(),
        })
    }

    /// Builds and stores every tier-3 unit's call (plans of format 5 and older did not
    /// store them); a unit whose call cannot be built becomes not replayable, with why.
    pub fn store_calls(&mut self) {
        let world = self.ranks().len().max(1) as u32;
        let mut calls = Vec::with_capacity(self.units.len());
        for u in &mut self.units {
            match crate::plan::calls::check(&u.call, &u.kernels, world) {
                Ok(c) => calls.push(c),
                Err(reason) => {
                    u.call = UnitCall::NotReplayable { reason };
                    u.tier = PlanTier::NotReplayable;
                    calls.push(None);
                }
            }
        }
        self.aten_calls = calls;
    }

    pub fn ranks(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self.streams.iter().map(|s| s.rank).collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// Proves every index points inside the plan. A decoded plan that fails this is
    /// rejected, never executed.
    pub fn check(&self) -> Result<(), String> {
        let nb = self.buffers.len() as u32;
        if self.aten_calls.len() != self.units.len()
            || self.units.iter().any(|u| {
                self.aten_calls
                    .get(u.id as usize)
                    .is_some_and(Option::is_some)
                    != matches!(u.call, UnitCall::AtenOp { .. })
            })
        {
            return Err("the stored tier-3 calls do not match the units".into());
        }
        let slot_ok = |s: u32, what: &str, u: u32| -> Result<(), String> {
            if s < nb {
                Ok(())
            } else {
                Err(format!(
                    "unit {u}: {what} slot {s} out of range ({nb} buffers)"
                ))
            }
        };
        for (i, u) in self.units.iter().enumerate() {
            if u.id as usize != i {
                return Err(format!("unit at position {i} has id {}", u.id));
            }
            for &s in &u.slots {
                slot_ok(s, "buffer", u.id)?;
            }
            match &u.call {
                UnitCall::Memcpy { src, dst, .. } => {
                    slot_ok(*src, "source", u.id)?;
                    slot_ok(*dst, "destination", u.id)?;
                }
                UnitCall::Memset { dst, .. } => slot_ok(*dst, "destination", u.id)?,
                UnitCall::Gemm(g) => {
                    for s in [g.a, g.b, g.c].into_iter().chain(g.bias) {
                        slot_ok(s, "GEMM operand", u.id)?;
                    }
                    if g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 {
                        return Err(format!("unit {}: empty GEMM", u.id));
                    }
                }
                UnitCall::AtenOp { args, .. } => {
                    // The stored call is this unit's, and its tensors are the unit's slots.
                    let Some(Some(call)) = self.aten_calls.get(u.id as usize) else {
                        return Err(format!("unit {}: tier 3 without its built call", u.id));
                    };
                    for t in call.args.iter().flat_map(|a| a.tensors()) {
                        slot_ok(t.slot, "call tensor", u.id)?;
                    }
                    for a in args {
                        for t in a.tensors() {
                            slot_ok(t.slot, "tensor", u.id)?;
                        }
                    }
                }
                UnitCall::Kernel {
                    binary,
                    args,
                    grid,
                    block,
                } => {
                    if *binary as usize >= self.binaries.len() {
                        return Err(format!(
                            "unit {}: kernel binary {binary} out of range ({} binaries)",
                            u.id,
                            self.binaries.len()
                        ));
                    }
                    if grid.contains(&0) || block.contains(&0) {
                        return Err(format!("unit {}: empty launch geometry", u.id));
                    }
                    for a in args {
                        if let KernelArgValue::Pointer { slot, .. } = a {
                            slot_ok(*slot, "kernel argument", u.id)?;
                        }
                    }
                }
                _ => {}
            }
        }
        let v = &self.values;
        if !v.steps.is_empty() && v.steps.len() != self.steps.len() {
            return Err(format!(
                "recorded values for {} steps of {}",
                v.steps.len(),
                self.steps.len()
            ));
        }
        if !v.units.is_empty() && v.units.len() != self.units.len() {
            return Err(format!(
                "recorded values for {} units of {}",
                v.units.len(),
                self.units.len()
            ));
        }
        for (i, sv) in v.steps.iter().chain(&v.units).flatten().enumerate() {
            if sv.slot >= nb || sv.blob as usize >= v.blobs.len() {
                return Err(format!(
                    "recorded value {i}: slot {} or blob {} out of range",
                    sv.slot, sv.blob
                ));
            }
        }
        if let Some(df) = &self.dataflow {
            if df.steps.len() != self.steps.len() {
                return Err(format!(
                    "dataflow places {} steps of {}",
                    df.steps.len(),
                    self.steps.len()
                ));
            }
            for (i, r) in df.regions.iter().enumerate() {
                if r.offset
                    .checked_add(r.bytes)
                    .is_none_or(|e| e > df.arena_bytes)
                {
                    return Err(format!("dataflow region {i} lies outside the arena"));
                }
            }
            for (i, (p, s)) in df.steps.iter().zip(&self.steps).enumerate() {
                let Some(u) = self.units.get(s.unit as usize) else {
                    continue;
                };
                if p.operands.len() != u.slots.len() && !p.operands.is_empty() {
                    return Err(format!(
                        "step {i}: {} operand places for {} operands",
                        p.operands.len(),
                        u.slots.len()
                    ));
                }
                for (k, off) in p.operands.iter().enumerate() {
                    let Some(off) = off else { continue };
                    let bytes = self.buffers.get(u.slots[k] as usize).map_or(0, |b| b.bytes);
                    if off.checked_add(bytes).is_none_or(|e| e > df.arena_bytes) {
                        return Err(format!(
                            "step {i}: operand {k} ({bytes} bytes at {off}) lies outside the arena"
                        ));
                    }
                }
                for (off, bytes) in p.outputs.iter().flatten() {
                    if off.checked_add(*bytes).is_none_or(|e| e > df.arena_bytes) {
                        return Err(format!("step {i}: a result lies outside the arena"));
                    }
                }
            }
        }
        for b in &self.bound_reads {
            let unit_of = |s: u32| self.steps.get(s as usize).map(|s| s.unit as usize);
            let ok = b.producer_step < b.step
                && unit_of(b.producer_step).is_some()
                && unit_of(b.step)
                    .and_then(|u| self.units.get(u))
                    .is_some_and(|u| (b.operand as usize) < u.slots.len());
            if !ok {
                return Err(format!(
                    "bound read of step {} operand {} from step {}: out of range",
                    b.step, b.operand, b.producer_step
                ));
            }
        }
        for (i, s) in self.steps.iter().enumerate() {
            if s.unit as usize >= self.units.len() {
                return Err(format!("step {i}: unit {} out of range", s.unit));
            }
            if s.stream as usize >= self.streams.len() {
                return Err(format!("step {i}: stream {} out of range", s.stream));
            }
            if let Some(w) = s.waits_on.iter().find(|&&w| w as usize >= i) {
                return Err(format!("step {i}: waits on later step {w}"));
            }
        }
        Ok(())
    }
}
