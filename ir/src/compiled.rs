//! Compiled kernels: GPU binaries a trace's op launched directly, not through an aten op
//! (Triton kernels that torch.compile's Inductor generated). Ingest records, per such op,
//! what the profiler said about the launch ([`CompiledLaunch`]) and, given the compiler's
//! cache, the binary it launched ([`CompiledKernel`]: the cubin, its entry's parameters and
//! what each parameter receives). Lowering turns a launch into a [`CompiledCall`] that the
//! executor replays with one driver launch on the plan's buffers.
//!
//! Invariant: a [`CompiledLaunch`] with [`Resolution::Binary`] names an entry of
//! [`crate::KernelGraph::compiled_kernels`], and every [`ParamSource::Arg`] of that kernel
//! names a position of the op's recorded arguments (the verifier checks both).

use crate::{OpId, TensorSpec};
use serde::{Deserialize, Serialize};

/// What the profiler recorded about one compiled-kernel launch (Kineto's `kernel_backend`,
/// `kernel_file`, `num_warps`, `num_stages` and `kernel_kwargs` args of the op).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CompiledLaunch {
    pub op: OpId,
    /// "triton".
    pub backend: String,
    /// The generated Python module that defines the kernel, as a path on the traced
    /// machine (`/tmp/torchinductor_USER/xx/cxx....py`).
    pub kernel_file: String,
    pub num_warps: Option<u32>,
    pub num_stages: Option<u32>,
    /// The constexpr values of the chosen config, e.g. `XBLOCK=2,R0_BLOCK=1024`.
    pub kwargs: String,
    pub resolution: Resolution,
}

/// Whether the launch's binary was found.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Resolution {
    /// No compiler cache was given.
    NoCache,
    /// Index into [`crate::KernelGraph::compiled_kernels`].
    Binary(u32),
    /// A cache was given but does not hold (or does not uniquely hold) this kernel.
    Missing(String),
}

/// Where one kernel parameter's value comes from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum ParamSource {
    /// The op's recorded argument at this position (a tensor's address or a scalar).
    Arg(u32),
    /// A scratch pointer the compiler appended (Triton's global and profile scratch).
    Scratch,
}

/// One parameter of a compiled kernel's entry, in order.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct KernelParam {
    /// The source-level name (`in_ptr0`, `xnumel`) or `global_scratch`/`profile_scratch`.
    pub name: String,
    /// Triton's type of it: `*fp16` for a pointer, `i32`, `i64`, `fp32`, ...
    pub ty: String,
    pub source: ParamSource,
}

impl KernelParam {
    pub fn is_pointer(&self) -> bool {
        self.ty.starts_with('*')
    }

    /// A pointer the kernel stores through: Inductor names written buffers `out_ptr*` and
    /// `in_out_ptr*`.
    pub fn writes(&self) -> bool {
        self.is_pointer()
            && (self.name.starts_with("out_ptr") || self.name.starts_with("in_out_ptr"))
    }
}

/// A compiled binary and how to launch it.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct CompiledKernel {
    /// The entry's name in the binary.
    pub name: String,
    /// The cubin as the compiler wrote it.
    pub cubin: Vec<u8>,
    /// The GPU architecture it was compiled for (90 for sm_90).
    pub arch: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    /// Dynamic shared memory the launch needs.
    pub shared_bytes: u32,
    pub params: Vec<KernelParam>,
    /// Bytes of global scratch per program (Triton allocates grid x this), and its alignment.
    pub global_scratch_bytes: u32,
    pub global_scratch_align: u32,
    pub profile_scratch_bytes: u32,
    pub profile_scratch_align: u32,
    /// Where in the cache it came from (relative path of its directory).
    pub origin: String,
}

/// One value a replayed launch passes.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum KernelArg {
    /// A device buffer holding this tensor; `writes` when the kernel stores through it.
    Tensor { spec: TensorSpec, writes: bool },
    /// An integer of `bits` (32 or 64) bits.
    Int { bits: u8, value: i64 },
    /// A float of `bits` (32 or 64) bits.
    Float { bits: u8, value: f64 },
    /// Scratch memory of this many bytes (a null pointer when 0).
    Scratch { bytes: u64 },
}

/// A compiled kernel's replay: the kernel, its arguments and the traced launch geometry.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CompiledCall {
    /// Index into [`crate::KernelGraph::compiled_kernels`].
    pub kernel: u32,
    pub args: Vec<KernelArg>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl CompiledCall {
    /// A stable one-line description (a dedupe key and what reports show): the kernel's
    /// entry, geometry and every argument.
    pub fn describe(&self, kernels: &[CompiledKernel]) -> String {
        let name = kernels
            .get(self.kernel as usize)
            .map_or("?", |k| k.name.as_str());
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| match a {
                KernelArg::Tensor { spec, writes } => format!(
                    "{}{:?}{:?}{}",
                    spec.dtype.short(),
                    spec.dims,
                    spec.strides,
                    if *writes { "w" } else { "" }
                ),
                KernelArg::Int { bits, value } => format!("i{bits}={value}"),
                KernelArg::Float { bits, value } => format!("f{bits}={value}"),
                KernelArg::Scratch { bytes } => format!("scratch={bytes}"),
            })
            .collect();
        format!(
            "{name}#{} grid={:?} block={:?} ({})",
            self.kernel,
            self.grid,
            self.block,
            args.join(", ")
        )
    }
}
