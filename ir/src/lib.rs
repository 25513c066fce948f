//! kc-ir: the kernel execution graph that every kc stage reads and writes.
//!
//! # What the IR means
//! A [`KernelGraph`] is one profiled workload. Its nodes are GPU activities exactly as a
//! profiler recorded them: kernels, memory copies, memsets and NCCL collectives, each on a
//! (rank, device, stream) with an exact start and duration in integer nanoseconds. A node
//! remembers how it was launched: the runtime or driver call (via the CUPTI correlation id)
//! and the innermost CPU operator that issued it ([`CpuOp`], an aten op with its recorded
//! argument shapes, strides, dtypes and concrete scalar values).
//!
//! Edges say what must happen before what on the GPU: program order on a stream,
//! cross-stream waits (event record / stream wait) and host synchronisations.
//!
//! Lowering adds, per node, a [`Classification`] (family, replay tier and the rule that
//! decided it) and groups nodes into [`ReplayUnit`]s: one unit per launching op, accounting
//! for every kernel that op launched.
//!
//! # Architecture invariants
//! - This crate does no I/O and knows no file format: no JSON, no CUDA, no files.
//!   Front ends (`kc::ingest`) build it and back ends (`kc::plan`) read it.
//! - Strings that repeat (kernel names, op names) are interned once in [`Interner`]; nodes
//!   hold [`StrId`]s.
//! - Times are `i64` nanoseconds, never floats.
//! - [`verify`] holds after ingest and after every lowering pass.
//! - Tensor identities ([`OpTensors`]) and the replay's memory image ([`Dataflow`]) are
//!   data like any other: ingest records the first, lowering derives the second.

pub mod compiled;
pub mod dataflow;
pub mod dtype;
pub mod graph;
pub mod interner;
pub mod lowering;
pub mod node;
pub mod op;
pub mod text;
pub mod values;
pub mod verify;

pub use compiled::{
    CompiledCall, CompiledKernel, CompiledLaunch, KernelArg, KernelParam, ParamSource, Resolution,
};
pub use dataflow::{
    ArgRefs, Dataflow, DataflowSource, InstancePlaces, OpTensors, Operand, OperandMemory, Place,
    Storage, StorageKind, TensorRef,
};
pub use dtype::DType;
pub use graph::{Edge, EdgeKind, KernelGraph, RankInfo, Signature, TraceMeta};
pub use interner::{Interner, StrId};
pub use lowering::{
    Classification, Family, GemmCall, GemmEpilogue, ReplayUnit, Tier, Transpose, UnitId,
    UnitInstance, UnitParams, Unreplayable,
};
pub use node::{
    CollectiveInfo, KernelGeometry, Launch, LinkStatus, MemcpyKind, Node, NodeId, NodeKind,
};
pub use op::{ArgsSource, CpuOp, OpArg, OpId, OpKind, TensorSpec};
pub use values::{RecordedInput, RecordedValues};
pub use verify::{verify, VerifyError};
