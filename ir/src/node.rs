//! GPU activity nodes: what ran, where, when, and how it was launched. Invariant: `dur_ns`
//! is non-negative and `op`, when present, names an op of the same rank.

use crate::{OpId, StrId};
use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};

/// Nodes are petgraph indices into [`crate::KernelGraph::graph`].
pub type NodeId = NodeIndex<u32>;

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct KernelGeometry {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers_per_thread: u32,
    /// Dynamic plus static shared memory per block, in bytes.
    pub shared_memory: u32,
}

impl KernelGeometry {
    pub fn threads(&self) -> u64 {
        self.grid
            .iter()
            .chain(&self.block)
            .map(|&x| u64::from(x.max(1)))
            .product()
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum MemcpyKind {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    PtoP,
    Unknown,
}

impl MemcpyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemcpyKind::HtoD => "HtoD",
            MemcpyKind::DtoH => "DtoH",
            MemcpyKind::DtoD => "DtoD",
            MemcpyKind::HtoH => "HtoH",
            MemcpyKind::PtoP => "PtoP",
            MemcpyKind::Unknown => "unknown",
        }
    }
}

/// What a collective moved, from the `record_param_comms` op that launched it.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Default)]
pub struct CollectiveInfo {
    /// "allreduce", "allgather", ... as recorded; empty when unknown.
    pub collective: String,
    pub dtype: String,
    pub in_nelems: Option<u64>,
    pub out_nelems: Option<u64>,
    pub group_size: Option<u32>,
    pub process_group: String,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum NodeKind {
    Kernel {
        name: StrId,
        geometry: KernelGeometry,
    },
    Memcpy {
        name: StrId,
        kind: MemcpyKind,
        bytes: u64,
    },
    Memset {
        name: StrId,
        bytes: u64,
    },
    /// An NCCL/RCCL kernel, with the collective metadata when the trace has it.
    Collective {
        name: StrId,
        geometry: KernelGeometry,
        info: CollectiveInfo,
    },
}

impl NodeKind {
    pub fn name(&self) -> StrId {
        match self {
            NodeKind::Kernel { name, .. }
            | NodeKind::Memcpy { name, .. }
            | NodeKind::Memset { name, .. }
            | NodeKind::Collective { name, .. } => *name,
        }
    }

    pub fn geometry(&self) -> Option<&KernelGeometry> {
        match self {
            NodeKind::Kernel { geometry, .. } | NodeKind::Collective { geometry, .. } => {
                Some(geometry)
            }
            _ => None,
        }
    }

    pub fn kind_str(&self) -> &'static str {
        match self {
            NodeKind::Kernel { .. } => "kernel",
            NodeKind::Memcpy { .. } => "memcpy",
            NodeKind::Memset { .. } => "memset",
            NodeKind::Collective { .. } => "collective",
        }
    }
}

/// The host call that launched a GPU activity, found through its correlation id.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Launch {
    /// `cudaLaunchKernel`, `cuLaunchKernelEx`, `cudaGraphLaunch`, `hipMemcpyWithStream`...
    pub api: StrId,
    pub tid: u64,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// Whether and how a node was attributed to its launching op.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum LinkStatus {
    /// Through the "External id" the activity or its runtime call carried.
    ExternalId,
    /// Through time nesting of the runtime call inside an op on the launching thread.
    TimeNesting,
    /// No runtime/driver call with this correlation id is in the trace.
    NoRuntimeCall,
    /// The runtime call was found but no op encloses it.
    NoEnclosingOp,
    /// Launched by a CUDA graph replay (no op of its own), and matched to the kernel of an
    /// eager trace of the same step, whose op it takes (`kc ingest --eager`). Added last,
    /// so graphs written before it decode unchanged.
    EagerTwin,
    /// Launched by a CUDA graph replay, and linked to the op that launched it while the
    /// graph was captured (`kc ingest --capture`): the exact program. Added after
    /// `EagerTwin`, for the same reason.
    Capture,
}

impl LinkStatus {
    pub fn is_linked(self) -> bool {
        matches!(
            self,
            LinkStatus::ExternalId
                | LinkStatus::TimeNesting
                | LinkStatus::EagerTwin
                | LinkStatus::Capture
        )
    }

    /// Whether the op was lent by another trace of the same step (the eager twin or the
    /// graph's capture), so that it does launch this kernel although a graph replayed it.
    pub fn is_lent(self) -> bool {
        matches!(self, LinkStatus::EagerTwin | LinkStatus::Capture)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LinkStatus::ExternalId => "external_id",
            LinkStatus::TimeNesting => "time_nesting",
            LinkStatus::NoRuntimeCall => "no_runtime_call",
            LinkStatus::NoEnclosingOp => "no_enclosing_op",
            LinkStatus::EagerTwin => "eager_twin",
            LinkStatus::Capture => "capture",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Node {
    pub kind: NodeKind,
    pub rank: u32,
    pub device: u32,
    pub stream: u64,
    /// Absolute start, nanoseconds since the Unix epoch where the trace gives a base,
    /// otherwise in the trace's own clock.
    pub start_ns: i64,
    pub dur_ns: i64,
    pub correlation: u64,
    pub launch: Option<Launch>,
    pub op: Option<OpId>,
    pub link: LinkStatus,
    /// `ProfilerStep#N` this node's launch fell in, when the trace has steps.
    pub iteration: Option<u32>,
    /// Index into [`crate::KernelGraph::signatures`].
    pub signature: u32,
}

impl Node {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}
