//! Pass 2, group units: which nodes replay together. All kernels one op invocation launched
//! form one unit instance (a layer_norm's two kernels, a split-K GEMM and its reduce, a
//! cuDNN conv's helpers); every memcpy, memset and collective is an instance of its own, as
//! is every kernel with no launching op.
//!
//! A kernel is grouped under the op whose replay launches it. Kineto links a kernel to the
//! innermost op around its launch, but when an aten op launches kernels of its own and also
//! calls other aten ops that launch kernels (nll_loss_backward zeroes its gradient through
//! `zero_` -> `fill_`, then runs its own kernel), replaying the outer op launches them all:
//! such inner kernels join the outer op's instance, so they are replayed and counted once.
//! GEMM-family kernels never move, and a GEMM op (mm, addmm, bmm, ..., the ops tier 2 calls
//! cuBLAS for) never takes other kernels in, so that tier 2 keeps its one-GEMM units; a
//! memset made directly under a GEMM op (the BLAS library's own, which tier 2's call makes
//! again) joins the GEMM's instance. An op that is not a GEMM op but whose library launches
//! GEMM-named kernels (cuDNN's convolution_backward runs CUTLASS and nvjet kernels, then
//! sums the bias gradient through a nested `aten::sum`) takes its inner ops' kernels in like
//! any other op: its replay launches them all. Copies and fills an op makes inside another op that replays its kernels
//! (the copies `sort` makes of its input before sorting) join that op's instance too: the
//! op's replay makes them again, so replaying them on their own as well would run them
//! twice.
//!
//! One nesting is not the op's own: autograd's. An in-place op whose derivative needs its
//! input (`silu_`, `hardswish_`, `mul_` by a tensor that requires grad) first saves that
//! input, `original_self = self.clone()` in PyTorch's generated autograd kernel, so a
//! training trace records an `aten::clone` (and its copy) under the in-place op. Tier 3
//! calls the op below autograd and makes no such copy: the clone's work is replayed on its
//! own (a memcpy as tier 1, a copy kernel through its own op), never folded into the
//! in-place op's unit, where it was traced but not run (EfficientNet-B0's training step:
//! 49 copies an iteration, 3 % of its time, session 48).
//!
//! Invariant: each node is in exactly one instance, and an instance's nodes are in graph
//! (start) order.

use super::{LowerCtx, PendingInstance};
use crate::diag::Diagnostic;
use kc_ir::{Family, KernelGraph, NodeKind};
use std::collections::HashMap;

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    // Ops that launch kernels themselves, and whether any of those is a GEMM.
    let mut launches: HashMap<kc_ir::OpId, bool> = HashMap::new();
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        if let (NodeKind::Kernel { .. }, Some(op)) = (&n.kind, n.op) {
            let gemm = ctx.family[id.index()] == Family::Gemm;
            *launches.entry(op).or_insert(false) |= gemm;
        }
    }
    // Ops that launch GEMM kernels and are GEMM ops, or sit right under one (a cuBLAS call
    // recorded under its own annotation): the ops tier 2 may replay by one cuBLAS call,
    // which makes nothing else. The same three-op reach as `recover_gemm`'s.
    let gemm_call = |op: kc_ir::OpId| -> bool {
        launches.get(&op) == Some(&true)
            && g.op_chain(op)
                .take(3)
                .any(|o| super::gemm::is_gemm_op(g.str(g.op(o).name)))
    };
    // The aten ancestors whose replay may make what `op` launched: up the op chain while
    // the ops are aten ops, and not past an autograd clone (see the module's note).
    let replay_chain = |op: kc_ir::OpId| -> Vec<kc_ir::OpId> {
        let mut chain = vec![op];
        for a in g.op_chain(op).skip(1) {
            let child = *chain.last().expect("starts with op");
            if !g.is_aten_op(a) || autograd_saves_input(g, child, a) {
                break;
            }
            chain.push(a);
        }
        chain
    };
    // The op whose replay launches a kernel linked to `op`: the outermost aten ancestor that
    // launches kernels itself, below any GEMM op; a GEMM kernel stays with its own op.
    let replayed_by = |op: kc_ir::OpId| -> kc_ir::OpId {
        if launches.get(&op).copied().unwrap_or(true) {
            return op;
        }
        let mut best = op;
        for &a in &replay_chain(op)[1..] {
            if gemm_call(a) {
                break;
            }
            if launches.contains_key(&a) {
                best = a;
            }
        }
        best
    };
    // The ops that replay kernels, and whether a copy or fill runs inside one (its op or an
    // aten ancestor of it replays kernels and is no GEMM call): then that op's replay makes
    // it.
    let replaying: std::collections::HashSet<kc_ir::OpId> = g
        .graph
        .node_indices()
        .filter_map(|id| match (&g.graph[id].kind, g.graph[id].op) {
            (NodeKind::Kernel { .. }, Some(op)) => Some(replayed_by(op)),
            _ => None,
        })
        .collect();
    let made_by_replay = |op: kc_ir::OpId| -> Option<kc_ir::OpId> {
        if !g.is_aten_op(op) {
            return None;
        }
        replay_chain(op)
            .into_iter()
            .find(|&a| replaying.contains(&a) && !gemm_call(a))
    };
    let mut by_op: HashMap<kc_ir::OpId, usize> = HashMap::new();
    let mut instances: Vec<PendingInstance> = Vec::new();
    let mut instance_of = vec![0u32; g.node_count()];
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        let runtime_work = matches!(n.kind, NodeKind::Memcpy { .. } | NodeKind::Memset { .. });
        let inside = if runtime_work {
            n.op.and_then(made_by_replay).or_else(|| {
                // A memset directly under a GEMM op is the BLAS library's own (cuBLASLt
                // zeroes a 4-byte semaphore for some kernels): tier 2's call of the same
                // GEMM makes it again, so it goes with the GEMM's instance.
                n.op.filter(|op| {
                    matches!(n.kind, NodeKind::Memset { .. }) && launches.get(op) == Some(&true)
                })
            })
        } else {
            None
        };
        let alone =
            inside.is_none() && (!matches!(n.kind, NodeKind::Kernel { .. }) || n.op.is_none());
        let k = if alone {
            instances.push(PendingInstance {
                op: n.op,
                nodes: vec![id],
            });
            instances.len() - 1
        } else {
            let op = inside.unwrap_or_else(|| replayed_by(n.op.expect("checked above")));
            *by_op.entry(op).or_insert_with(|| {
                instances.push(PendingInstance {
                    op: Some(op),
                    nodes: Vec::new(),
                });
                instances.len() - 1
            })
        };
        if !alone {
            instances[k].nodes.push(id);
        }
        instance_of[id.index()] = k as u32;
    }
    ctx.instances = instances;
    ctx.instance_of = instance_of;
    Vec::new()
}

/// Whether `child` is the clone PyTorch's autograd kernel makes of an in-place op's input
/// before the op runs (`original_self = self.clone()`, for a derivative that needs the
/// input): `aten::clone` directly under an in-place aten op (a name ending in one `_`).
/// The op's own replay, below autograd, makes no such clone.
fn autograd_saves_input(g: &KernelGraph, child: kc_ir::OpId, parent: kc_ir::OpId) -> bool {
    if g.str(g.op(child).name) != "aten::clone" || g.op(child).parent != Some(parent) {
        return false;
    }
    let name = g.str(g.op(parent).name);
    name.starts_with("aten::") && name.ends_with('_') && !name.ends_with("__")
}
