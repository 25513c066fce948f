//! Pass 6, dedupe: unit instances with the same tier, parameters and kernel names become
//! one [`ReplayUnit`] with an invocation count and the total traced time. Invariant: unit
//! ids follow first appearance in graph order, so the same graph always yields the same
//! numbering, and every instance points at its unit.

use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::text::args_str;
use kc_ir::{KernelGraph, ReplayUnit, StrId, UnitId, UnitParams};
use std::collections::HashMap;

/// A stable text key for a unit's parameters.
fn params_key(g: &KernelGraph, p: &UnitParams) -> String {
    match p {
        UnitParams::Memcpy { kind, bytes } => format!("memcpy {} {bytes}", kind.as_str()),
        UnitParams::Memset { bytes, value } => format!("memset {bytes} {value}"),
        UnitParams::Gemm(c) => format!("gemm {}", c.describe()),
        UnitParams::Op { name, args } => format!("op {}({})", g.str(*name), args_str(args)),
        UnitParams::Collective(c) => format!("coll {c:?}"),
        UnitParams::None(r) => format!("none {r}"),
        UnitParams::Compiled(c) => format!("compiled {}", c.describe(&g.compiled_kernels)),
    }
}

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    let mut index: HashMap<(kc_ir::Tier, String, Vec<StrId>), UnitId> = HashMap::new();
    let mut units: Vec<ReplayUnit> = Vec::new();
    for i in 0..g.instances.len() {
        let first = g.instances[i].nodes[0];
        let tier = g.classes[first.index()].tier;
        // An op's instance may begin with a copy it made: its first kernel names the family.
        let lead = g.instances[i]
            .nodes
            .iter()
            .copied()
            .find(|n| matches!(g.graph[*n].kind, kc_ir::NodeKind::Kernel { .. }))
            .unwrap_or(first);
        let family = g.classes[lead.index()].family;
        let kernels: Vec<StrId> = g.instances[i]
            .nodes
            .iter()
            .map(|n| g.graph[*n].kind.name())
            .collect();
        let params = std::mem::replace(
            &mut ctx.params[i],
            UnitParams::None(kc_ir::Unreplayable::NoLaunchingOp),
        );
        let key = (tier, params_key(g, &params), kernels.clone());
        let id = match index.get(&key) {
            Some(&id) => id,
            None => {
                let id = UnitId(units.len() as u32);
                let label = match (&params, g.instances[i].op) {
                    (UnitParams::Memcpy { .. } | UnitParams::Memset { .. }, _) | (_, None) => {
                        g.graph[first].kind.name()
                    }
                    (_, Some(op)) => g.op(op).name,
                };
                units.push(ReplayUnit {
                    id,
                    tier,
                    family,
                    params,
                    label,
                    kernels,
                    invocations: 0,
                    traced_ns_total: 0,
                });
                index.insert(key, id);
                id
            }
        };
        let u = &mut units[id.0 as usize];
        u.invocations += 1;
        u.traced_ns_total += g.instances[i].traced_ns;
        g.instances[i].unit = id;
    }
    g.units = units;
    Vec::new()
}
