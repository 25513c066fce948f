//! Pass 4, tiers: decides how each unit instance replays, by the ordered rules in
//! [`RULES`] (highest priority first; the first that matches wins), and records per node
//! its family, tier and rule. Invariant: an instance gets a replayable tier only with every
//! parameter its replay needs (a runtime call's size, a recovered GEMM, an aten op's shapes).

use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::{
    ArgsSource, Classification, KernelGraph, MemcpyKind, NodeKind, OpKind, Tier, UnitId,
    UnitInstance, UnitParams, Unreplayable,
};

/// One tier rule: its name (shown by `kc lower --explain`), priority, tier and meaning.
pub struct Rule {
    pub name: &'static str,
    pub priority: i32,
    pub tier: Tier,
    pub doc: &'static str,
}

/// Every rule, in the order they are tried.
pub const RULES: &[Rule] = &[
    Rule { name: "runtime-memcpy", priority: 100, tier: Tier::Runtime, doc: "a memcpy of known direction replays as cudaMemcpyAsync of the same size" },
    Rule { name: "runtime-memcpy-unknown", priority: 100, tier: Tier::Unreplayable, doc: "a memcpy whose direction is not recorded" },
    Rule { name: "runtime-memset", priority: 100, tier: Tier::Runtime, doc: "a memset replays as cudaMemsetAsync of the same size" },
    Rule { name: "nccl-collective", priority: 90, tier: Tier::Collective, doc: "NCCL/RCCL kernels replay through the collective executor" },
    Rule { name: "graph-launched", priority: 85, tier: Tier::Unreplayable, doc: "a kernel a CUDA graph replay launched has no op of its own; `kc ingest --eager EAGER` lends it the op of its eager twin" },
    Rule { name: "no-launching-op", priority: 80, tier: Tier::Unreplayable, doc: "a kernel not attributed to any CPU op has nothing to rebuild" },
    Rule { name: "cublas-gemm", priority: 70, tier: Tier::Gemm, doc: "GEMM kernels of mm/addmm/bmm/baddbmm/linear/matmul with every cuBLAS parameter recovered" },
    Rule { name: "aten-op-gemm-unrecovered", priority: 60, tier: Tier::Op, doc: "GEMM kernels whose cuBLAS call could not be recovered replay through their aten op" },
    Rule { name: "aten-op", priority: 50, tier: Tier::Op, doc: "kernels replay through the aten op that launched them, rebuilt from its recorded args" },
    Rule { name: "aten-op-unbound", priority: 45, tier: Tier::Unreplayable, doc: "the recorded call resolves to no overload of libtorch's operator registry, or an argument it needs was not recorded (decided here, so exec never finds it out)" },
    Rule { name: "no-shapes", priority: 40, tier: Tier::Unreplayable, doc: "the launching aten op's argument shapes were not recorded (profile with record_shapes=True or pass --shapes)" },
    Rule { name: "not-an-aten-op", priority: 30, tier: Tier::Unreplayable, doc: "the launching op is not an aten op (user annotation, autograd node, Python launch)" },
];

pub fn rule(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

pub fn run(g: &mut KernelGraph, ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    let mut instances = Vec::with_capacity(ctx.instances.len());
    let mut inst_rule = Vec::with_capacity(ctx.instances.len());
    ctx.params = Vec::with_capacity(ctx.instances.len());
    for (i, inst) in ctx.instances.iter().enumerate() {
        let first = &g.graph[inst.nodes[0]];
        let (rule, params) = decide(g, ctx, i, inst.op);
        let traced_ns = inst.nodes.iter().map(|n| g.graph[*n].dur_ns).sum();
        instances.push(UnitInstance {
            unit: UnitId(0),
            op: inst.op,
            nodes: inst.nodes.clone(),
            rank: first.rank,
            device: first.device,
            stream: first.stream,
            start_ns: first.start_ns,
            traced_ns,
        });
        inst_rule.push(rule);
        ctx.params.push(params);
    }
    let mut classes = Vec::with_capacity(g.node_count());
    for id in g.graph.node_indices() {
        let k = ctx.instance_of[id.index()];
        let r = inst_rule[k as usize];
        classes.push(Classification {
            family: ctx.family[id.index()],
            tier: r.tier,
            rule: g.strings.intern(r.name),
            instance: k,
        });
    }
    g.classes = classes;
    g.instances = instances;
    ctx.rule_of_instance = inst_rule.iter().map(|r| r.name).collect();
    Vec::new()
}

fn decide(
    g: &KernelGraph,
    ctx: &LowerCtx,
    i: usize,
    op: Option<kc_ir::OpId>,
) -> (&'static Rule, UnitParams) {
    let inst = &ctx.instances[i];
    let node = &g.graph[inst.nodes[0]];
    let r = |name| rule(name).expect("rule names are constants");
    match &node.kind {
        NodeKind::Memcpy { kind, bytes, .. } => {
            return if *kind == MemcpyKind::Unknown {
                (
                    r("runtime-memcpy-unknown"),
                    UnitParams::None(Unreplayable::UnknownCopy),
                )
            } else {
                (
                    r("runtime-memcpy"),
                    UnitParams::Memcpy {
                        kind: *kind,
                        bytes: *bytes,
                    },
                )
            };
        }
        NodeKind::Memset { bytes, .. } => {
            return (
                r("runtime-memset"),
                UnitParams::Memset {
                    bytes: *bytes,
                    value: 0,
                },
            );
        }
        NodeKind::Collective { info, .. } => {
            return (r("nccl-collective"), UnitParams::Collective(info.clone()))
        }
        NodeKind::Kernel { .. } => {}
    }
    // A graph replay's kernels are not launched by the op around the replay call (a serving
    // loop's annotation at most), so that op cannot rebuild them.
    let graph_launched = inst.nodes.iter().any(|&n| {
        let node = &g.graph[n];
        node.link != kc_ir::LinkStatus::EagerTwin
            && node
                .launch
                .as_ref()
                .is_some_and(|l| g.strings.get(l.api).contains("GraphLaunch"))
    });
    let not_aten = |op: kc_ir::OpId| {
        let o = g.op(op);
        o.kind != OpKind::Op || !g.str(o.name).starts_with("aten::")
    };
    if graph_launched && op.is_none_or(not_aten) {
        return (
            r("graph-launched"),
            UnitParams::None(Unreplayable::GraphLaunched),
        );
    }
    let Some(op_id) = op else {
        return if graph_launched {
            (
                r("graph-launched"),
                UnitParams::None(Unreplayable::GraphLaunched),
            )
        } else {
            (
                r("no-launching-op"),
                UnitParams::None(Unreplayable::NoLaunchingOp),
            )
        };
    };
    if let Some((_, result)) = &ctx.gemm[i] {
        match result {
            Ok(call) => return (r("cublas-gemm"), UnitParams::Gemm(call.clone())),
            Err(_) => {
                let o = g.op(op_id);
                if o.args_source != ArgsSource::None
                    && crate::exec::aten::op_supported(g.str(o.name), g.args(op_id)).is_ok()
                {
                    return (
                        r("aten-op-gemm-unrecovered"),
                        UnitParams::Op {
                            name: o.name,
                            args: g.args(op_id).to_vec(),
                        },
                    );
                }
            }
        }
    }
    let o = g.op(op_id);
    let name = g.str(o.name);
    if o.kind != OpKind::Op || !name.starts_with("aten::") {
        return (
            r("not-an-aten-op"),
            UnitParams::None(Unreplayable::NoAtenOp {
                op: name.to_string(),
            }),
        );
    }
    if o.args_source == ArgsSource::None {
        return (
            r("no-shapes"),
            UnitParams::None(Unreplayable::NoShapes {
                op: name.to_string(),
            }),
        );
    }
    if let Err(why) = crate::exec::aten::op_supported(name, g.args(op_id)) {
        return (
            r("aten-op-unbound"),
            UnitParams::None(Unreplayable::BadArgs {
                op: name.to_string(),
                why,
            }),
        );
    }
    (
        r("aten-op"),
        UnitParams::Op {
            name: o.name,
            args: g.args(op_id).to_vec(),
        },
    )
}
