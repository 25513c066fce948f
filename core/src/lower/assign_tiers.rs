//! Pass 4, tiers: decides how each unit instance replays, by the ordered rules in
//! [`RULES`] (highest priority first; the first that matches wins), and records per node
//! its family, tier and rule. Invariant: an instance gets a replayable tier only with every
//! parameter its replay needs (a runtime call's size, a recovered GEMM, an aten op's shapes).

use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::{
    ArgsSource, Classification, CompiledCall, KernelArg, KernelGraph, MemcpyKind, NodeKind, OpArg,
    ParamSource, Resolution, Tier, UnitId, UnitInstance, UnitParams, Unreplayable,
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
    Rule { name: "compiled-kernel", priority: 75, tier: Tier::Compiled, doc: "a Triton kernel torch.compile generated replays from its cubin in the Inductor cache (`kc ingest --inductor-cache`) with the traced grid and the recorded arguments" },
    Rule { name: "compiled-kernel-no-binary", priority: 74, tier: Tier::Unreplayable, doc: "a Triton kernel whose binary kc does not have (no Inductor cache given, or the cache lacks it) or whose recorded arguments do not fit its parameters" },
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
        node.link != kc_ir::LinkStatus::EagerTwin && g.is_graph_launched(node)
    });
    if graph_launched && op.is_none_or(|op| !g.is_aten_op(op)) {
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
    if let Some(l) = g.compiled_launch(op_id) {
        return match compiled_call(g, l, node) {
            Ok(call) => (r("compiled-kernel"), UnitParams::Compiled(call)),
            Err(why) => (
                r("compiled-kernel-no-binary"),
                UnitParams::None(Unreplayable::NoCompiledBinary {
                    op: g.str(g.op(op_id).name).to_string(),
                    why,
                }),
            ),
        };
    }
    if let Some((_, result)) = &ctx.gemm[i] {
        match result {
            Ok(call) => return (r("cublas-gemm"), UnitParams::Gemm(call.clone())),
            Err(_) => {
                let o = g.op(op_id);
                if o.args_source != ArgsSource::None
                    && crate::plan::aten_call::op_supported(g.str(o.name), g.args(op_id)).is_ok()
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
    if !g.is_aten_op(op_id) {
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
    if let Err(why) = crate::plan::aten_call::op_supported(name, g.args(op_id)) {
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

/// A compiled launch's replay: its binary's parameters filled from the op's recorded
/// arguments, with the traced launch geometry; or why it cannot be made.
fn compiled_call(
    g: &KernelGraph,
    l: &kc_ir::CompiledLaunch,
    node: &kc_ir::Node,
) -> Result<CompiledCall, String> {
    let k = match &l.resolution {
        Resolution::Binary(k) => *k,
        Resolution::Missing(why) => return Err(why.clone()),
        Resolution::NoCache => {
            return Err(format!(
                "a {} kernel torch.compile generated (from {}): give the Inductor cache it was compiled into with `kc ingest --inductor-cache DIR` (TORCHINDUCTOR_CACHE_DIR, by default /tmp/torchinductor_$USER; a .tar.gz of it works too)",
                if l.backend.is_empty() { "compiled" } else { &l.backend },
                l.kernel_file.rsplit('/').next().unwrap_or(&l.kernel_file)
            ))
        }
    };
    let kernel = &g.compiled_kernels[k as usize];
    let Some(geometry) = node.kind.geometry() else {
        return Err("the kernel's launch geometry was not recorded".into());
    };
    if geometry.grid.contains(&0) || geometry.block.contains(&0) {
        return Err(format!(
            "the trace recorded an empty launch geometry (grid {:?}, block {:?})",
            geometry.grid, geometry.block
        ));
    }
    let recorded = g.args(l.op);
    let programs: u64 = geometry.grid.iter().map(|&x| u64::from(x)).product();
    let mut args = Vec::with_capacity(kernel.params.len());
    let mut scratch = 0;
    for p in &kernel.params {
        let pos = match p.source {
            ParamSource::Scratch => {
                let per = if scratch == 0 {
                    kernel.global_scratch_bytes
                } else {
                    kernel.profile_scratch_bytes
                };
                scratch += 1;
                args.push(KernelArg::Scratch {
                    bytes: u64::from(per) * programs,
                });
                continue;
            }
            ParamSource::Arg(pos) => pos as usize,
        };
        let a = recorded.get(pos).ok_or_else(|| {
            format!(
                "parameter {} takes argument {pos}, which was not recorded",
                p.name
            )
        })?;
        args.push(match (p.is_pointer(), a) {
            (true, OpArg::Tensor(spec)) => KernelArg::Tensor {
                spec: spec.clone(),
                writes: p.writes(),
            },
            (true, _) => {
                return Err(format!(
                    "parameter {} is a pointer but the trace recorded no tensor for it",
                    p.name
                ))
            }
            (false, a) => {
                let value = a.scalar_value().ok_or_else(|| {
                    format!(
                        "the value of parameter {} ({}) was not recorded",
                        p.name, p.ty
                    )
                })?;
                scalar_arg(&p.ty, value).ok_or_else(|| {
                    format!(
                        "parameter {} ({}): cannot pass the recorded value {value}",
                        p.name, p.ty
                    )
                })?
            }
        });
    }
    Ok(CompiledCall {
        kernel: k,
        args,
        grid: geometry.grid,
        block: geometry.block,
    })
}

/// A scalar parameter's value, by Triton's type of it (32- and 64-bit integers and floats:
/// the only scalars Inductor passes).
fn scalar_arg(ty: &str, value: &str) -> Option<KernelArg> {
    let v = value.trim();
    match ty {
        "i32" | "u32" => Some(KernelArg::Int {
            bits: 32,
            value: v
                .parse::<i64>()
                .ok()
                .filter(|x| i32::try_from(*x).is_ok() || ty == "u32")?,
        }),
        "i64" | "u64" => Some(KernelArg::Int {
            bits: 64,
            value: v.parse().ok()?,
        }),
        "fp32" => Some(KernelArg::Float {
            bits: 32,
            value: v.parse().ok()?,
        }),
        "fp64" => Some(KernelArg::Float {
            bits: 64,
            value: v.parse().ok()?,
        }),
        _ => None,
    }
}
