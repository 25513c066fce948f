//! Pass 3, GEMM recovery: for every unit instance whose kernels are all GEMM-family (beside
//! the memsets the BLAS library made in the call) and
//! whose launching op is mm/addmm/bmm/baddbmm/linear/matmul, recover the full cuBLAS call
//! (see [`super::gemm`]). Invariant: `ctx.gemm[i]` is `Some` exactly for those instances,
//! holding the call or the reason it could not be recovered.

use super::{gemm, LowerCtx};
use crate::diag::Diagnostic;
use kc_ir::{Family, KernelGraph, NodeKind};

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    ctx.gemm = vec![None; ctx.instances.len()];
    for (i, inst) in ctx.instances.iter().enumerate() {
        let Some(op_id) = inst.op else { continue };
        // The library's own memsets (grouped with their GEMM) are not GEMM kernels: the
        // call is recovered from the kernels.
        let kernel_nodes: Vec<kc_ir::NodeId> = inst
            .nodes
            .iter()
            .copied()
            .filter(|n| matches!(g.graph[*n].kind, NodeKind::Kernel { .. }))
            .collect();
        if kernel_nodes.is_empty()
            || !kernel_nodes
                .iter()
                .all(|n| ctx.family[n.index()] == Family::Gemm)
        {
            continue;
        }
        // The launching op, or the nearest GEMM op enclosing it (a cuBLAS call recorded
        // under its own annotation).
        let Some(gemm_op) = g
            .op_chain(op_id)
            .take(3)
            .find(|o| gemm::is_gemm_op(g.str(g.op(*o).name)))
        else {
            continue;
        };
        let op = g.op(gemm_op);
        let kernels: Vec<&str> = kernel_nodes
            .iter()
            .map(|n| g.str(g.graph[*n].kind.name()))
            .collect();
        let result = gemm::recover(g.str(op.name), g.args(gemm_op), &kernels);
        if let Err(why) = &result {
            diags.push(Diagnostic::new(
                "gemm_not_recovered",
                format!("node{}", inst.nodes[0].index()),
                format!("{}: {why}", g.str(op.name)),
            ));
        }
        ctx.gemm[i] = Some((gemm_op, result));
    }
    diags
}
