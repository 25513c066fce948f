//! The kernel execution graph: GPU activity nodes in a petgraph `DiGraph`, the ops that
//! launched them, interned strings, per-rank trace metadata, and (after lowering) side
//! tables of classifications and replay units keyed by node index. Invariant: node indices
//! are assigned in (rank, device, stream, start) order, so index order is a deterministic
//! replay order, and side tables are either empty or exactly one entry per node.

use crate::{
    Classification, CpuOp, Interner, KernelGeometry, Node, NodeId, OpArg, OpId, ReplayUnit, StrId,
    UnitInstance,
};
use petgraph::graph::DiGraph;
use serde::{Deserialize, Serialize};

/// Why one GPU activity must wait for another.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Consecutive activities on one stream.
    StreamOrder,
    /// A `cuda_sync` "Stream Wait Event" record naming the stream waited on.
    CudaSyncEvent,
    /// A host `cudaStreamWaitEvent` between the two launches, source found by timing.
    StreamWaitEvent,
    /// A host synchronisation (`cudaDeviceSynchronize`, `cudaStreamSynchronize`, a
    /// synchronous memcpy) between the two launches.
    HostSync,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::StreamOrder => "stream_order",
            EdgeKind::CudaSyncEvent => "cuda_sync_event",
            EdgeKind::StreamWaitEvent => "stream_wait_event",
            EdgeKind::HostSync => "host_sync",
        }
    }

    pub fn is_cross_stream(self) -> bool {
        !matches!(self, EdgeKind::StreamOrder)
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Edge {
    pub kind: EdgeKind,
}

/// One input trace file (one rank).
#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
pub struct RankInfo {
    pub rank: u32,
    /// File name the rank was read from (no directories, so graphs are portable).
    pub source: String,
    /// Size of the source file in bytes and a CRC32 of its first MiB, to identify it.
    pub source_bytes: u64,
    pub source_crc32: u32,
    pub base_time_ns: i64,
    pub world_size: Option<u32>,
    pub cuda_runtime_version: Option<u32>,
    pub cuda_driver_version: Option<u32>,
    pub devices: Vec<DeviceProps>,
    /// Set for AMD traces (hip* runtime calls).
    pub rocm: bool,
}

/// Device properties as the trace's `deviceProperties` recorded them.
#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
pub struct DeviceProps {
    pub id: u32,
    pub name: String,
    pub total_global_mem: u64,
    pub compute_major: u32,
    pub compute_minor: u32,
    pub num_sms: u32,
    pub l2_cache_bytes: Option<u64>,
}

/// Trace-level metadata.
#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
pub struct TraceMeta {
    pub ranks: Vec<RankInfo>,
}

/// A unique kernel signature: name, launch geometry and the launching op's name and
/// argument shapes/dtypes, with how often it ran and for how long.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Signature {
    pub name: StrId,
    pub geometry: Option<KernelGeometry>,
    pub op_name: Option<StrId>,
    /// Shapes and dtypes of the op's tensor arguments, e.g. `f16[5,1024] f16[1024,3072]`.
    pub op_shapes: StrId,
    pub count: u64,
    pub total_ns: i64,
}

/// A `ProfilerStep#N` range on one rank.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Iteration {
    pub rank: u32,
    pub step: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct KernelGraph {
    pub meta: TraceMeta,
    pub strings: Interner,
    pub ops: Vec<CpuOp>,
    /// Distinct argument lists of ops, shared: a model repeats the same few hundred
    /// shapes across thousands of op invocations. Entry 0 is the empty list.
    pub arg_lists: Vec<Vec<OpArg>>,
    pub graph: DiGraph<Node, Edge, u32>,
    pub signatures: Vec<Signature>,
    pub iterations: Vec<Iteration>,
    /// Lowering side table: one entry per node once lowered, empty before.
    pub classes: Vec<Classification>,
    pub instances: Vec<UnitInstance>,
    pub units: Vec<ReplayUnit>,
    /// Tensor identities of ops, from an Execution Trace (sorted by op; empty without one).
    /// Appended after `units` so that a version-1 graph decodes with both fields empty.
    pub tensor_refs: Vec<crate::OpTensors>,
    /// Where every unit instance's operands live (lowering's last pass).
    pub dataflow: crate::Dataflow,
    /// Ops that launched a compiled (Triton) kernel, sorted by op, and the binaries found
    /// for them in the compiler's cache (appended in graph format 3).
    pub compiled_launches: Vec<crate::CompiledLaunch>,
    pub compiled_kernels: Vec<crate::CompiledKernel>,
    /// Values the ops' integer inputs held when the model ran (appended in graph format 4;
    /// empty without a values file).
    pub recorded_values: crate::RecordedValues,
}

impl KernelGraph {
    pub fn op(&self, id: OpId) -> &CpuOp {
        &self.ops[id.0 as usize]
    }

    /// How the graph's iterations were found: `ProfilerStep#N` markers, or a GPU work
    /// sequence that repeats exactly (traces without markers); "none" when neither.
    pub fn iterations_found_by(&self) -> &'static str {
        if self.iterations.is_empty() {
            "none"
        } else if self
            .ops
            .iter()
            .any(|o| self.strings.get(o.name).starts_with("ProfilerStep#"))
        {
            "ProfilerStep markers"
        } else {
            "repeating kernel sequence"
        }
    }

    /// Iterations on the lowest rank (each rank profiles the same steps).
    pub fn iterations_per_rank(&self) -> u32 {
        let Some(first) = self.iterations.iter().map(|i| i.rank).min() else {
            return 0;
        };
        self.iterations.iter().filter(|i| i.rank == first).count() as u32
    }

    /// Whether an op is an aten operator (what tier 3 can call), not an annotation,
    /// autograd node or Python-level launch.
    pub fn is_aten_op(&self, id: OpId) -> bool {
        let o = self.op(id);
        o.kind == crate::OpKind::Op && self.str(o.name).starts_with("aten::")
    }

    /// Whether a CUDA graph replay launched this GPU activity (its launch call is a
    /// `cudaGraphLaunch`).
    pub fn is_graph_launched(&self, n: &crate::Node) -> bool {
        n.launch
            .as_ref()
            .is_some_and(|l| self.strings.get(l.api).contains("GraphLaunch"))
    }

    /// The compiled-kernel launch an op made, if it made one.
    pub fn compiled_launch(&self, op: OpId) -> Option<&crate::CompiledLaunch> {
        self.compiled_launches
            .binary_search_by_key(&op, |l| l.op)
            .ok()
            .map(|i| &self.compiled_launches[i])
    }

    /// The recorded arguments of an op.
    pub fn args(&self, id: OpId) -> &[OpArg] {
        self.arg_lists
            .get(self.op(id).args as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    pub fn is_lowered(&self) -> bool {
        !self.classes.is_empty() || self.graph.node_count() == 0
    }

    pub fn classification(&self, id: NodeId) -> Option<&Classification> {
        self.classes.get(id.index())
    }

    /// Sum of all node durations.
    pub fn gpu_time_ns(&self) -> i64 {
        self.graph.node_weights().map(|n| n.dur_ns).sum()
    }

    /// The op's name, or "" for none.
    pub fn op_name(&self, id: Option<OpId>) -> &str {
        id.map(|o| self.str(self.op(o).name)).unwrap_or("")
    }

    /// Ancestors of an op from innermost (itself) outwards.
    pub fn op_chain(&self, id: OpId) -> impl Iterator<Item = OpId> + '_ {
        std::iter::successors(Some(id), move |o| self.op(*o).parent)
    }
}
