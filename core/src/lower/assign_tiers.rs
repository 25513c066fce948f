//! Pass 4, tiers: decides how each unit instance replays, by walking the rules in
//! [`RULES`] (highest priority first; the first that applies wins), and records per node
//! its family, tier and rule. Tier 3 and collectives are given only when the plan's own call
//! builder accepts the call ([`crate::plan::calls::verdict`]): one verdict, made here. Invariant: an instance gets a replayable tier only with every
//! parameter its replay needs (a runtime call's size, a recovered GEMM, an aten op's shapes).

use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::{
    ArgsSource, Classification, CompiledCall, KernelArg, KernelGraph, MemcpyKind, NodeKind, OpArg,
    ParamSource, Resolution, Tier, UnitId, UnitInstance, UnitParams, Unreplayable,
};

/// What a rule looks at for one unit instance: its first node, its launching op, whether a
/// CUDA graph launched it, its recovered GEMM, its kernels' names and the job's size.
pub struct Facts<'a> {
    pub g: &'a KernelGraph,
    pub node: &'a kc_ir::Node,
    pub op: Option<kc_ir::OpId>,
    pub graph_launched: bool,
    pub gemm: Option<&'a Result<kc_ir::GemmCall, String>>,
    /// The instance's nodes (their kernel names feed the verdict).
    pub nodes: &'a [kc_ir::NodeId],
    pub world: u32,
    /// The trace was given an eager twin or capture ([`super::LowerCtx::lent_ops`]).
    pub lent_ops: bool,
    /// The plan's verdict, made once per instance: an instance is a collective or an op,
    /// so every rule that asks asks about the same call.
    verdict: std::cell::OnceCell<Result<(), String>>,
}

impl Facts<'_> {
    fn is_kernel(&self) -> bool {
        matches!(self.node.kind, NodeKind::Kernel { .. })
    }

    /// The launching op, when it is an aten op with recorded arguments.
    fn aten_op_with_args(&self) -> Option<kc_ir::OpId> {
        let op = self.op?;
        (self.is_kernel()
            && self.g.compiled_launch(op).is_none()
            && self.g.is_aten_op(op)
            && self.g.op(op).args_source != ArgsSource::None)
            .then_some(op)
    }

    fn op_params(&self, op: kc_ir::OpId) -> UnitParams {
        UnitParams::Op {
            name: self.g.op(op).name,
            args: self.g.args(op).to_vec(),
        }
    }

    /// The plan's verdict on these parameters ([`crate::plan::calls::verdict`]).
    fn verdict(&self, params: &UnitParams) -> Result<(), String> {
        self.verdict
            .get_or_init(|| {
                let kernels: Vec<String> = self
                    .nodes
                    .iter()
                    .map(|&n| self.g.str(self.g.graph[n].kind.name()).to_string())
                    .collect();
                crate::plan::calls::verdict(self.g, params, &kernels, self.world)
            })
            .clone()
    }
}

/// One tier rule: its name (shown by `kc lower --explain`), priority, tier and meaning,
/// and the test that decides whether it applies (with the unit's parameters when it does).
pub struct Rule {
    pub name: &'static str,
    pub priority: i32,
    pub tier: Tier,
    pub doc: &'static str,
    pub applies: fn(&Facts<'_>) -> Option<UnitParams>,
}

/// Every rule, highest priority first: [`decide`] walks them in this order and the first
/// that applies wins (a test proves the table is sorted and that the order decides).
pub const RULES: &[Rule] = &[
    Rule { name: "runtime-memcpy", priority: 100, tier: Tier::Runtime, doc: "a memcpy of known direction replays as cudaMemcpyAsync of the same size", applies: |f| match &f.node.kind {
        NodeKind::Memcpy { kind, bytes, .. } if *kind != MemcpyKind::Unknown => Some(UnitParams::Memcpy { kind: *kind, bytes: *bytes }),
        _ => None,
    } },
    Rule { name: "runtime-memcpy-unknown", priority: 100, tier: Tier::Unreplayable, doc: "a memcpy whose direction is not recorded", applies: |f| matches!(f.node.kind, NodeKind::Memcpy { .. }).then_some(UnitParams::None(Unreplayable::UnknownCopy)) },
    Rule { name: "runtime-memset", priority: 100, tier: Tier::Runtime, doc: "a memset replays as cudaMemsetAsync of the same size", applies: |f| match &f.node.kind {
        NodeKind::Memset { bytes, .. } => Some(UnitParams::Memset { bytes: *bytes, value: 0 }),
        _ => None,
    } },
    Rule { name: "nccl-collective", priority: 90, tier: Tier::Collective, doc: "NCCL/RCCL kernels replay through the collective executor (in a multi-rank job, when NCCL can issue the call on that many ranks)", applies: |f| match &f.node.kind {
        NodeKind::Collective { info, .. } => {
            let p = UnitParams::Collective(info.clone());
            f.verdict(&p).is_ok().then_some(p)
        }
        _ => None,
    } },
    Rule { name: "nccl-collective-unissuable", priority: 89, tier: Tier::Unreplayable, doc: "a collective of a multi-rank job that NCCL cannot issue as recorded (parameters not recorded, a sub-group communicator, counts that do not fit the ranks)", applies: |f| match &f.node.kind {
        NodeKind::Collective { info, .. } => {
            let why = f.verdict(&UnitParams::Collective(info.clone())).err()?;
            Some(UnitParams::None(Unreplayable::BadArgs { op: info.collective.clone(), why }))
        }
        _ => None,
    } },
    Rule { name: "graph-launched", priority: 85, tier: Tier::Unreplayable, doc: "a kernel a CUDA graph replay launched has no op of its own; `kc ingest --capture CAPTURE` (or `--eager EAGER`) lends it the op that launched it", applies: |f| (f.is_kernel() && f.graph_launched && f.op.is_none_or(|op| !f.g.is_aten_op(op))).then_some(UnitParams::None(if f.lent_ops { Unreplayable::GraphLaunchedNotLent } else { Unreplayable::GraphLaunched })) },
    Rule { name: "no-launching-op", priority: 80, tier: Tier::Unreplayable, doc: "a kernel not attributed to any CPU op has nothing to rebuild", applies: |f| (f.is_kernel() && f.op.is_none()).then_some(UnitParams::None(Unreplayable::NoLaunchingOp)) },
    Rule { name: "compiled-kernel", priority: 75, tier: Tier::Compiled, doc: "a Triton kernel torch.compile generated replays from its cubin in the Inductor cache (`kc ingest --inductor-cache`) with the traced grid and the recorded arguments", applies: |f| {
        let l = f.g.compiled_launch(f.op?)?;
        compiled_call(f.g, l, f.node).ok().map(UnitParams::Compiled)
    } },
    Rule { name: "compiled-kernel-no-binary", priority: 74, tier: Tier::Unreplayable, doc: "a Triton kernel whose binary kc does not have (no Inductor cache given, or the cache lacks it) or whose recorded arguments do not fit its parameters", applies: |f| {
        let op = f.op?;
        let l = f.g.compiled_launch(op)?;
        let why = compiled_call(f.g, l, f.node).err()?;
        Some(UnitParams::None(Unreplayable::NoCompiledBinary { op: f.g.str(f.g.op(op).name).to_string(), why }))
    } },
    Rule { name: "cublas-gemm", priority: 70, tier: Tier::Gemm, doc: "GEMM kernels of mm/addmm/bmm/baddbmm/linear/matmul with every cuBLAS parameter recovered", applies: |f| match f.gemm {
        Some(Ok(call)) if f.op.is_some_and(|op| f.g.compiled_launch(op).is_none()) => Some(UnitParams::Gemm(call.clone())),
        _ => None,
    } },
    Rule { name: "aten-op-gemm-unrecovered", priority: 60, tier: Tier::Op, doc: "GEMM kernels whose cuBLAS call could not be recovered replay through their aten op", applies: |f| {
        let op = f.aten_op_with_args()?;
        let p = f.op_params(op);
        (matches!(f.gemm, Some(Err(_))) && f.verdict(&p).is_ok()).then_some(p)
    } },
    Rule { name: "aten-op", priority: 50, tier: Tier::Op, doc: "kernels replay through the aten op that launched them, its call built from the recorded args (the plan builds the same call and stores it)", applies: |f| {
        let p = f.op_params(f.aten_op_with_args()?);
        f.verdict(&p).is_ok().then_some(p)
    } },
    Rule { name: "aten-op-unbound", priority: 45, tier: Tier::Unreplayable, doc: "the recorded call resolves to no overload of libtorch's operator registry, or an argument it needs was not recorded, or the executor cannot pass it (decided here, with the plan's own call builder, so plan and exec never find it out)", applies: |f| {
        let op = f.aten_op_with_args()?;
        let why = f.verdict(&f.op_params(op)).err()?;
        Some(UnitParams::None(Unreplayable::BadArgs { op: f.g.str(f.g.op(op).name).to_string(), why }))
    } },
    Rule { name: "no-shapes", priority: 40, tier: Tier::Unreplayable, doc: "the launching aten op's argument shapes were not recorded (profile with record_shapes=True or pass --shapes)", applies: |f| {
        let op = f.op?;
        (f.is_kernel() && f.g.is_aten_op(op) && f.g.op(op).args_source == ArgsSource::None)
            .then(|| UnitParams::None(Unreplayable::NoShapes { op: f.g.str(f.g.op(op).name).to_string() }))
    } },
    Rule { name: "not-an-aten-op", priority: 30, tier: Tier::Unreplayable, doc: "the launching op is not an aten op (user annotation, autograd node, Python launch)", applies: |f| {
        let op = f.op?;
        f.is_kernel().then(|| UnitParams::None(Unreplayable::NoAtenOp { op: f.g.str(f.g.op(op).name).to_string() }))
    } },
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
        let (rule, params) = decide(&facts(g, ctx, i));
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

/// The facts of pending instance `i`.
pub fn facts<'a>(g: &'a KernelGraph, ctx: &'a LowerCtx, i: usize) -> Facts<'a> {
    let inst = &ctx.instances[i];
    // A graph replay's kernels are not launched by the op around the replay call (a serving
    // loop's annotation at most), so that op cannot rebuild them.
    let graph_launched = inst.nodes.iter().any(|&n| {
        let node = &g.graph[n];
        !node.link.is_lent() && g.is_graph_launched(node)
    });
    // An op's instance may begin with a copy it made (`sort` copies its input first): its
    // first kernel says what the instance is.
    let lead = inst
        .nodes
        .iter()
        .find(|&&n| matches!(g.graph[n].kind, NodeKind::Kernel { .. }))
        .unwrap_or(&inst.nodes[0]);
    Facts {
        g,
        node: &g.graph[*lead],
        op: inst.op,
        graph_launched,
        gemm: ctx.gemm[i].as_ref().map(|(_, r)| r),
        nodes: &inst.nodes,
        world: g.meta.ranks.len().max(1) as u32,
        lent_ops: ctx.lent_ops,
        verdict: Default::default(),
    }
}

/// The first rule of [`RULES`] that applies, with the unit's parameters. Every instance
/// matches one: the last rules cover every kind of node.
pub fn decide(f: &Facts<'_>) -> (&'static Rule, UnitParams) {
    RULES
        .iter()
        .find_map(|r| (r.applies)(f).map(|p| (r, p)))
        .unwrap_or_else(|| {
            (
                rule("no-launching-op").expect("a constant rule"),
                UnitParams::None(Unreplayable::NoLaunchingOp),
            )
        })
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
