//! Pass 1, family: what each GPU node does (gemm, conv, elementwise, ...), from its parsed
//! kernel name by ordered rules, falling back on the launching op's name. Invariant: every
//! node gets exactly one family and the name of the rule that gave it.

use super::name::ParsedName;
use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::{Family, KernelGraph, NodeKind};

/// Name rules in priority order: the first whose needle occurs in the kernel name wins.
/// Attention and norm come before conv and gemm because cuDNN attention and batch-norm
/// kernels carry library words ("cudnn", "xmma") that would otherwise claim them.
#[rustfmt::skip]
pub const NAME_RULES: &[(&str, &[&str], Family)] = &[
    ("name-triton", &["triton_"], Family::Triton),
    ("name-attention", &["flash", "fmha", "sdpa", "attention", "mem_efficient", "_attn", "attn_fwd", "attn_bwd", "kvcache"], Family::Attention),
    ("name-norm", &["layer_norm", "layernorm", "batch_norm", "batchnorm", "bn_fw", "bn_bw", "group_norm", "rms_norm", "rmsnorm", "rowwisemoments", "computefusedparams", "gammabeta", "welford"], Family::Norm),
    ("name-softmax", &["softmax"], Family::Softmax),
    ("name-optimizer", &["multi_tensor_apply", "fused_adam", "fusedadam", "foreach", "adam_", "sgd_"], Family::Optimizer),
    ("name-conv", &["implicit_gemm", "fprop", "dgrad", "wgrad", "conv", "winograd", "cudnn::", "im2col", "col2im", "im2d2col", "scudnn", "fft2d", "fft1d", "flip_filter", "cask_cudnn", "nchwtonhwc", "nhwctonchw", "nhwcaddpadding"], Family::Conv),
    ("name-gemm", &["gemm", "nvjet", "gemv", "splitkreduce", "cublas", "cutlass", "xmma", "dot_kernel", "matmul", "_mma_", "cijk_", "epilogue::impl::globalkernel"], Family::Gemm),
    ("name-embedding", &["indexselect", "index_select", "gather", "scatter", "embedding", "index_elementwise", "indexing", "indexfunc", "index_put", "take_", "nonzero", "masked_", "bounds_check_indices", "linearize_index", "to_dense"], Family::Embedding),
    ("name-copy", &["catarraybatchedcopy", "cat_", "copy", "transpose", "permute", "contiguous", "cast", "convert"], Family::Copy),
    ("name-reduction", &["reduce", "reduction", "cumsum", "scan", "argmax", "argmin", "nll_loss", "nllcriterion", "cross_entropy", "pool", "topk", "sort", "radix", "histogram", "norm_kernel"], Family::Reduction),
    ("name-elementwise", &["elementwise", "functor", "fill", "pointwise", "unrolled", "vectorized", "dropout", "fused_", "launch_kernel", "arange", "range_", "where", "clamp", "activation", "upsample"], Family::Elementwise),
];

/// Op-name fallbacks for names no rule matched.
#[rustfmt::skip]
pub const OP_RULES: &[(&str, &[&str], Family)] = &[
    ("op-gemm", &["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul"], Family::Gemm),
    ("op-conv", &["aten::convolution", "aten::cudnn_convolution", "aten::_convolution", "aten::conv"], Family::Conv),
    ("op-attention", &["scaled_dot_product", "attention"], Family::Attention),
    ("op-norm", &["norm"], Family::Norm),
    ("op-softmax", &["softmax"], Family::Softmax),
    ("op-optimizer", &["_foreach", "optimizer"], Family::Optimizer),
    ("op-embedding", &["embedding", "index", "gather", "scatter"], Family::Embedding),
    ("op-copy", &["copy_", "aten::to", "aten::cat", "contiguous", "clone"], Family::Copy),
    ("op-reduction", &["sum", "mean", "max", "min", "cumsum", "nll_loss", "pool"], Family::Reduction),
    ("op-elementwise", &["aten::"], Family::Elementwise),
];

/// The family of a kernel from its name, or `None` when no name rule matches.
pub fn family_from_name(name: &str, parsed: &ParsedName) -> Option<(&'static str, Family)> {
    if let Some(v) = &parsed.vendor {
        match v.library.as_str() {
            "nccl" => return Some(("vendor-nccl", Family::Collective)),
            "triton" => return Some(("name-triton", Family::Triton)),
            "flash" => return Some(("vendor-flash", Family::Attention)),
            "nvjet" | "cublas" | "cutlass" if !name.contains("fprop") && !name.contains("grad") => {
                return Some(("vendor-gemm", Family::Gemm))
            }
            _ => {}
        }
    }
    let lower = name.to_ascii_lowercase();
    // Only the kernel's own name and template arguments count, not the parameter list,
    // which names types such as `cublasGemvParams` for unrelated kernels.
    let subject = if parsed.opaque {
        lower
    } else {
        format!(
            "{}::{}<{}>",
            parsed.scope.join("::"),
            parsed.base,
            parsed.template_args.join(",")
        )
        .to_ascii_lowercase()
    };
    NAME_RULES
        .iter()
        .find(|(_, needles, _)| needles.iter().any(|n| subject.contains(n)))
        .map(|(rule, _, f)| (*rule, *f))
}

pub fn family_from_op(op: &str) -> (&'static str, Family) {
    OP_RULES
        .iter()
        .find(|(_, needles, _)| needles.iter().any(|n| op.contains(n)))
        .map(|(rule, _, f)| (*rule, *f))
        .unwrap_or(("fallback-other", Family::Other))
}

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    ctx.family = Vec::with_capacity(g.node_count());
    ctx.family_rule = Vec::with_capacity(g.node_count());
    // The family by name depends on the name alone: decided once per distinct name (a
    // trace repeats a few hundred names a million times).
    let mut by_name: std::collections::HashMap<kc_ir::StrId, Option<(&'static str, Family)>> =
        std::collections::HashMap::new();
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        let (rule, fam) = match &n.kind {
            NodeKind::Memcpy { .. } => ("kind-memcpy", Family::Memcpy),
            NodeKind::Memset { .. } => ("kind-memset", Family::Memset),
            NodeKind::Collective { .. } => ("kind-collective", Family::Collective),
            NodeKind::Kernel { name, .. } => {
                let from_name = match by_name.get(name) {
                    Some(x) => *x,
                    None => {
                        let parsed = ctx.parsed(g, *name);
                        let x = family_from_name(g.str(*name), parsed);
                        by_name.insert(*name, x);
                        x
                    }
                };
                match from_name {
                    Some(x) => x,
                    None => family_from_op(g.op_name(n.op)),
                }
            }
        };
        ctx.family.push(fam);
        ctx.family_rule.push(rule);
    }
    Vec::new()
}
