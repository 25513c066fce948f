//! Pass 2, group units: which nodes replay together. All kernels one op invocation launched
//! form one unit instance (a layer_norm's two kernels, a split-K GEMM and its reduce, a
//! cuDNN conv's helpers); every memcpy, memset and collective is an instance of its own, as
//! is every kernel with no launching op. Invariant: each node is in exactly one instance,
//! and an instance's nodes are in graph (start) order.

use super::{LowerCtx, PendingInstance};
use crate::diag::Diagnostic;
use kc_ir::{KernelGraph, NodeKind};
use std::collections::HashMap;

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    let mut by_op: HashMap<kc_ir::OpId, usize> = HashMap::new();
    let mut instances: Vec<PendingInstance> = Vec::new();
    let mut instance_of = vec![0u32; g.node_count()];
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        let alone = !matches!(n.kind, NodeKind::Kernel { .. }) || n.op.is_none();
        let k = if alone {
            instances.push(PendingInstance {
                op: n.op,
                nodes: vec![id],
            });
            instances.len() - 1
        } else {
            let op = n.op.expect("checked above");
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
