//! What lowering decides: per node a [`Classification`] (family, tier, rule), per launching
//! op a [`UnitInstance`], and the deduplicated [`ReplayUnit`]s with invocation counts.
//! Invariant: every node with a tier in 1..=3 belongs to exactly one unit instance, and a
//! unit instance's nodes all share its unique unit's tier.

use crate::{CollectiveInfo, DType, MemcpyKind, NodeId, OpArg, OpId, StrId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a kernel does, decided from its parsed name and, failing that, its op.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Family {
    Gemm,
    Conv,
    Elementwise,
    Reduction,
    Norm,
    Softmax,
    Attention,
    Embedding,
    Copy,
    Optimizer,
    Collective,
    Memcpy,
    Memset,
    Triton,
    Other,
}

impl Family {
    pub const ALL: [Family; 15] = [
        Family::Gemm,
        Family::Conv,
        Family::Elementwise,
        Family::Reduction,
        Family::Norm,
        Family::Softmax,
        Family::Attention,
        Family::Embedding,
        Family::Copy,
        Family::Optimizer,
        Family::Collective,
        Family::Memcpy,
        Family::Memset,
        Family::Triton,
        Family::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Gemm => "gemm",
            Family::Conv => "conv",
            Family::Elementwise => "elementwise",
            Family::Reduction => "reduction",
            Family::Norm => "norm",
            Family::Softmax => "softmax",
            Family::Attention => "attention",
            Family::Embedding => "embedding",
            Family::Copy => "copy",
            Family::Optimizer => "optimizer",
            Family::Collective => "collective",
            Family::Memcpy => "memcpy",
            Family::Memset => "memset",
            Family::Triton => "triton",
            Family::Other => "other",
        }
    }
}

/// How a node will be replayed.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Tier {
    /// Tier 1: a CUDA runtime call (memcpy, memset).
    Runtime,
    /// Tier 2: a cuBLAS/cuBLASLt GEMM with fully recovered parameters.
    Gemm,
    /// Tier 3: the libtorch op that launched the kernel, rebuilt from its recorded args.
    Op,
    /// NCCL/RCCL collectives, replayed by a dedicated executor.
    Collective,
    /// Cannot be replayed; the classification carries the reason.
    Unreplayable,
    /// Tier 4: a compiled kernel (Triton) the trace's op launched, replayed from its
    /// binary with one driver launch (added last, so graphs written before it decode
    /// unchanged).
    Compiled,
}

impl Tier {
    pub const ALL: [Tier; 6] = [
        Tier::Runtime,
        Tier::Gemm,
        Tier::Op,
        Tier::Compiled,
        Tier::Collective,
        Tier::Unreplayable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Runtime => "1",
            Tier::Gemm => "2",
            Tier::Op => "3",
            Tier::Compiled => "4",
            Tier::Collective => "collective",
            Tier::Unreplayable => "unreplayable",
        }
    }

    /// The API a tier replays through, as reports name it.
    pub fn api(self) -> &'static str {
        match self {
            Tier::Runtime => "CUDA runtime",
            Tier::Gemm => "cuBLAS/cuBLASLt",
            Tier::Op => "libtorch (aten op)",
            Tier::Compiled => "compiled kernel",
            Tier::Collective => "NCCL",
            Tier::Unreplayable => "-",
        }
    }

    /// The API a tier maps to on the vendor the trace was recorded on: an AMD (ROCm) trace's
    /// GEMMs ran in hipBLASLt/rocBLAS and its collectives in RCCL, not cuBLAS and NCCL.
    pub fn api_on(self, rocm: bool) -> &'static str {
        match (self, rocm) {
            (Tier::Runtime, true) => "HIP runtime",
            (Tier::Gemm, true) => "hipBLASLt/rocBLAS",
            (Tier::Collective, true) => "RCCL",
            (t, _) => t.api(),
        }
    }

    pub fn is_replayable(self) -> bool {
        matches!(self, Tier::Runtime | Tier::Gemm | Tier::Op | Tier::Compiled)
    }
}

/// Why a node cannot be replayed.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Unreplayable {
    /// Not attributed to any CPU op, so there is nothing to rebuild.
    NoLaunchingOp,
    /// The launching op's argument shapes were not recorded.
    NoShapes { op: String },
    /// The op's arguments could not be turned into a call.
    BadArgs { op: String, why: String },
    /// A memcpy whose direction or size is unknown.
    UnknownCopy,
    /// Host-side or Python-level code with no aten op underneath (e.g. a Triton kernel
    /// launched from Python).
    NoAtenOp { op: String },
    /// Launched by a CUDA graph replay, which records no op (added last, so graphs written
    /// before it decode unchanged).
    GraphLaunched,
    /// Launched by a CUDA graph replay, and the eager twin or capture given with the trace
    /// lent it no op (no kernel of its name at its place in the twin, or a captured launch
    /// without an enclosing op). Added after `GraphLaunched`, for the same reason.
    GraphLaunchedNotLent,
    /// A compiled (Triton) kernel whose binary kc does not have: no compiler cache was
    /// given, or the cache does not hold it (`why`).
    NoCompiledBinary { op: String, why: String },
}

impl fmt::Display for Unreplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreplayable::NoLaunchingOp => write!(f, "no launching op in the trace"),
            Unreplayable::NoShapes { op } => write!(f, "{op}: argument shapes not recorded"),
            Unreplayable::BadArgs { op, why } => write!(f, "{op}: {why}"),
            Unreplayable::UnknownCopy => write!(f, "memcpy of unknown kind or size"),
            Unreplayable::NoAtenOp { op } => write!(f, "{op}: not an aten op"),
            Unreplayable::NoCompiledBinary { op, why } => write!(f, "{op}: {why}"),
            Unreplayable::GraphLaunched => write!(
                f,
                "launched by a CUDA graph replay, which records no op: give the graph's profiled capture with `kc ingest --capture` (or the eager trace of the same step with `--eager`)"
            ),
            Unreplayable::GraphLaunchedNotLent => write!(
                f,
                "launched by a CUDA graph replay; the eager twin or capture given lent it no op (its kernel has no counterpart there)"
            ),
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Transpose {
    N,
    T,
}

impl Transpose {
    pub fn as_char(self) -> char {
        match self {
            Transpose::N => 'N',
            Transpose::T => 'T',
        }
    }
}

/// A fused epilogue the GEMM kernel applied.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum GemmEpilogue {
    None,
    /// `addmm`/`linear` bias folded into the GEMM (cuBLASLt `CUBLASLT_EPILOGUE_BIAS`).
    Bias,
    BiasGelu,
    BiasRelu,
}

/// A column-major cuBLAS call, exactly as PyTorch issues it for a row-major op.
/// `C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C`, batched `batch` times.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct GemmCall {
    pub transa: Transpose,
    pub transb: Transpose,
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
    pub a_type: DType,
    pub b_type: DType,
    pub c_type: DType,
    pub compute_type: DType,
    pub alpha: f64,
    pub beta: f64,
    pub epilogue: GemmEpilogue,
}

impl GemmCall {
    /// A stable one-line description, used as a dedupe key and in reports.
    pub fn describe(&self) -> String {
        format!(
            "{}{} m={} n={} k={} lda={} ldb={} ldc={} batch={} sA={} sB={} sC={} {}x{}->{} compute={} alpha={} beta={} epilogue={:?}",
            self.transa.as_char(),
            self.transb.as_char(),
            self.m,
            self.n,
            self.k,
            self.lda,
            self.ldb,
            self.ldc,
            self.batch,
            self.stride_a,
            self.stride_b,
            self.stride_c,
            self.a_type.short(),
            self.b_type.short(),
            self.c_type.short(),
            self.compute_type.short(),
            self.alpha,
            self.beta,
            self.epilogue
        )
    }
}

/// What a unit replays.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum UnitParams {
    Memcpy {
        kind: MemcpyKind,
        bytes: u64,
    },
    Memset {
        bytes: u64,
        value: u8,
    },
    Gemm(GemmCall),
    Op {
        name: StrId,
        args: Vec<OpArg>,
    },
    Collective(CollectiveInfo),
    /// Unreplayable units keep their reason.
    None(Unreplayable),
    /// A compiled kernel launched from its binary (added last: earlier graphs decode).
    Compiled(crate::CompiledCall),
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct UnitId(pub u32);

impl fmt::Display for UnitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unit{}", self.0)
    }
}

/// Per-node result of lowering.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Classification {
    pub family: Family,
    pub tier: Tier,
    /// The name of the rule that decided the tier (see `kc lower --explain`).
    pub rule: StrId,
    /// Index into [`crate::KernelGraph::instances`].
    pub instance: u32,
}

/// One invocation of a unit: the nodes one op launched, in launch order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnitInstance {
    pub unit: UnitId,
    pub op: Option<OpId>,
    pub nodes: Vec<NodeId>,
    pub rank: u32,
    pub device: u32,
    pub stream: u64,
    pub start_ns: i64,
    /// Sum of the traced durations of this instance's nodes.
    pub traced_ns: i64,
}

/// A deduplicated replay unit: same tier, same parameters, same kernels.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplayUnit {
    pub id: UnitId,
    pub tier: Tier,
    pub family: Family,
    pub params: UnitParams,
    /// The op that launched it ("aten::addmm"), or the node name for runtime calls.
    pub label: StrId,
    /// Kernel names one invocation is expected to launch, in order.
    pub kernels: Vec<StrId>,
    pub invocations: u64,
    pub traced_ns_total: i64,
}

impl ReplayUnit {
    pub fn traced_ns_mean(&self) -> f64 {
        if self.invocations == 0 {
            0.0
        } else {
            self.traced_ns_total as f64 / self.invocations as f64
        }
    }
}
