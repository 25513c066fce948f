//! The summary `kc ingest` prints: GPU ops by kind, unique names and signatures, devices,
//! streams, top kernels by traced time, linking counts with reasons, edges and diagnostics,
//! as a table or as JSON. Invariant: every figure is computed from the graph itself, so the
//! summary of a graph read back from its `.kcir` file is identical.

use crate::diag::{Diagnostic, DiagnosticSummary};
use kc_ir::{KernelGraph, NodeKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TopKernel {
    pub name: String,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub pct_gpu_time: f64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct IngestSummary {
    pub files: Vec<String>,
    pub ranks: usize,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub collectives: u64,
    pub gpu_ops: u64,
    pub unique_kernel_names: usize,
    pub unique_signatures: usize,
    /// Sum of all GPU op durations, microseconds.
    pub gpu_time_us: f64,
    /// GPU ops attributed to a CPU op.
    pub linked_to_op: u64,
    pub linked_by: BTreeMap<String, u64>,
    pub unlinked: BTreeMap<String, u64>,
    pub devices: usize,
    pub streams: usize,
    pub device_names: Vec<String>,
    pub iterations: usize,
    /// "ProfilerStep markers", "repeating kernel sequence" or "none".
    pub iterations_found_by: String,
    pub ops_kept: usize,
    pub ops_with_shapes: usize,
    /// Where the shaped ops' arguments came from: "trace" (Kineto's own), "execution
    /// trace" or "shape log" (`--shapes`), so a run with and without an ET differ here.
    pub ops_shaped_by: BTreeMap<String, usize>,
    /// Ops whose tensors carry identities (an Execution Trace's tensor and storage ids):
    /// what the replay's memory image is derived from.
    pub ops_with_tensor_identities: usize,
    /// Op inputs that carry the values the model's run held (a values file); 0 without.
    #[serde(skip_serializing_if = "is_zero")]
    pub inputs_with_recorded_values: usize,
    pub edges: BTreeMap<String, u64>,
    pub top_kernels: Vec<TopKernel>,
    pub diagnostics: DiagnosticSummary,
    /// Compiled (Triton) kernel launches and how many found their binary; absent for
    /// traces without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiled: Option<CompiledIngest>,
}

/// Compiled-kernel launches of a trace and the binaries found for them.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct CompiledIngest {
    pub launches: usize,
    pub with_binary: usize,
    pub binaries: usize,
    /// Traced GPU time of the launches' kernels, and of those with a binary (us).
    pub gpu_time_us: f64,
    pub with_binary_us: f64,
}

fn compiled_summary(g: &KernelGraph) -> Option<CompiledIngest> {
    if g.compiled_launches.is_empty() {
        return None;
    }
    let mut time: HashMap<kc_ir::OpId, i64> = HashMap::new();
    for n in g.graph.node_weights() {
        if let Some(op) = n.op {
            if g.compiled_launch(op).is_some() {
                *time.entry(op).or_default() += n.dur_ns;
            }
        }
    }
    let with: Vec<_> = g
        .compiled_launches
        .iter()
        .filter(|l| matches!(l.resolution, kc_ir::Resolution::Binary(_)))
        .collect();
    Some(CompiledIngest {
        launches: g.compiled_launches.len(),
        with_binary: with.len(),
        binaries: g.compiled_kernels.len(),
        gpu_time_us: time.values().sum::<i64>() as f64 / 1e3,
        with_binary_us: with
            .iter()
            .map(|l| time.get(&l.op).copied().unwrap_or(0))
            .sum::<i64>() as f64
            / 1e3,
    })
}

pub fn summarize(g: &KernelGraph, diags: &[Diagnostic]) -> IngestSummary {
    let (mut kernels, mut memcpys, mut memsets, mut collectives) = (0, 0, 0, 0);
    let mut names = BTreeSet::new();
    let mut devices = BTreeSet::new();
    let mut streams = BTreeSet::new();
    let mut linked_by = BTreeMap::new();
    let mut unlinked = BTreeMap::new();
    let mut per_name: HashMap<kc_ir::StrId, (u64, i64)> = HashMap::new();
    let mut total_ns: i64 = 0;
    for n in g.graph.node_weights() {
        match n.kind {
            NodeKind::Kernel { .. } => kernels += 1,
            NodeKind::Memcpy { .. } => memcpys += 1,
            NodeKind::Memset { .. } => memsets += 1,
            NodeKind::Collective { .. } => collectives += 1,
        }
        if matches!(
            n.kind,
            NodeKind::Kernel { .. } | NodeKind::Collective { .. }
        ) {
            names.insert(n.kind.name());
        }
        devices.insert((n.rank, n.device));
        streams.insert((n.rank, n.device, n.stream));
        let bucket = if n.link.is_linked() {
            &mut linked_by
        } else {
            &mut unlinked
        };
        *bucket.entry(n.link.as_str().to_string()).or_insert(0u64) += 1;
        let e = per_name.entry(n.kind.name()).or_insert((0, 0));
        e.0 += 1;
        e.1 += n.dur_ns;
        total_ns += n.dur_ns;
    }
    let mut top: Vec<_> = per_name.into_iter().collect();
    top.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(g.str(a.0).cmp(g.str(b.0))));
    let top_kernels = top
        .into_iter()
        .take(10)
        .map(|(name, (count, ns))| TopKernel {
            name: g.str(name).to_string(),
            count,
            total_us: ns as f64 / 1000.0,
            mean_us: ns as f64 / 1000.0 / count as f64,
            pct_gpu_time: if total_ns > 0 {
                100.0 * ns as f64 / total_ns as f64
            } else {
                0.0
            },
        })
        .collect();
    let mut edges = BTreeMap::new();
    for e in g.graph.edge_references() {
        *edges
            .entry(e.weight().kind.as_str().to_string())
            .or_insert(0u64) += 1;
    }
    let mut device_names: Vec<String> = g
        .meta
        .ranks
        .iter()
        .flat_map(|r| r.devices.iter().map(|d| d.name.clone()))
        .collect();
    device_names.sort();
    device_names.dedup();
    IngestSummary {
        files: g.meta.ranks.iter().map(|r| r.source.clone()).collect(),
        ranks: g.meta.ranks.len(),
        kernels,
        memcpys,
        memsets,
        collectives,
        gpu_ops: g.graph.node_count() as u64,
        unique_kernel_names: names.len(),
        unique_signatures: g.signatures.len(),
        gpu_time_us: total_ns as f64 / 1000.0,
        linked_to_op: linked_by.values().sum(),
        linked_by,
        unlinked,
        devices: devices.len(),
        streams: streams.len(),
        device_names,
        iterations: g.iterations.len(),
        iterations_found_by: g.iterations_found_by().to_string(),
        ops_kept: g.ops.len(),
        ops_with_shapes: g
            .ops
            .iter()
            .filter(|o| o.args_source != kc_ir::ArgsSource::None)
            .count(),
        ops_shaped_by: {
            let mut by = BTreeMap::new();
            for o in &g.ops {
                let k = match o.args_source {
                    kc_ir::ArgsSource::None => continue,
                    kc_ir::ArgsSource::Trace => "trace",
                    kc_ir::ArgsSource::ExecutionTrace => "execution trace",
                    kc_ir::ArgsSource::ShapeLog => "shape log",
                };
                *by.entry(k.to_string()).or_insert(0) += 1;
            }
            by
        },
        ops_with_tensor_identities: g.tensor_refs.len(),
        inputs_with_recorded_values: g.recorded_values.inputs.len(),
        edges,
        top_kernels,
        diagnostics: DiagnosticSummary::of(diags),
        compiled: compiled_summary(g),
    }
}

fn short(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        let s: String = name.chars().take(max - 1).collect();
        format!("{s}…")
    }
}

pub fn render_text(s: &IngestSummary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kc ingest: {} ({} rank{})",
        s.files.join(", "),
        s.ranks,
        if s.ranks == 1 { "" } else { "s" }
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "  GPU ops            {:>10}", s.gpu_ops);
    let _ = writeln!(o, "    kernels          {:>10}", s.kernels);
    let _ = writeln!(o, "    collectives      {:>10}", s.collectives);
    let _ = writeln!(o, "    memcpys          {:>10}", s.memcpys);
    let _ = writeln!(o, "    memsets          {:>10}", s.memsets);
    let _ = writeln!(o, "  GPU time           {:>10.1} us", s.gpu_time_us);
    let _ = writeln!(o, "  unique kernel names{:>10}", s.unique_kernel_names);
    let _ = writeln!(o, "  unique signatures  {:>10}", s.unique_signatures);
    let _ = writeln!(o, "  devices / streams  {:>10} / {}", s.devices, s.streams);
    if !s.device_names.is_empty() {
        let _ = writeln!(o, "  device             {}", s.device_names.join(", "));
    }
    let _ = match s.iterations_found_by.as_str() {
        "none" => writeln!(
            o,
            "  iterations         {:>10}  (no ProfilerStep markers, and no exactly repeating kernel sequence with the host pausing between repetitions: a replay covers the whole trace)",
            0
        ),
        by => writeln!(o, "  iterations         {:>10}  (from {by})", s.iterations),
    };
    let pct = if s.gpu_ops > 0 {
        100.0 * s.linked_to_op as f64 / s.gpu_ops as f64
    } else {
        0.0
    };
    let _ = writeln!(
        o,
        "  linked to an op    {:>10} ({pct:.1} %)",
        s.linked_to_op
    );
    for (k, v) in &s.linked_by {
        let _ = writeln!(o, "    by {k:<15}{v:>10}");
    }
    for (k, v) in &s.unlinked {
        let _ = writeln!(o, "    unlinked: {k:<8}{v:>10}");
    }
    let by: Vec<String> = s
        .ops_shaped_by
        .iter()
        .map(|(k, v)| format!("{v} from the {k}"))
        .collect();
    let _ = writeln!(
        o,
        "  ops kept / shaped  {:>10} / {}{}",
        s.ops_kept,
        s.ops_with_shapes,
        if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        }
    );
    if s.ops_with_tensor_identities > 0 {
        let _ = writeln!(
            o,
            "  ops with tensor ids{:>10}  (the memory image follows them)",
            s.ops_with_tensor_identities
        );
    }
    if s.inputs_with_recorded_values > 0 {
        let _ = writeln!(
            o,
            "  inputs with values{:>10}  (recorded integer and boolean tensors: indices, masks, routing)",
            s.inputs_with_recorded_values
        );
    }
    for (k, v) in &s.edges {
        let _ = writeln!(o, "  edges {k:<17}{v:>10}");
    }
    if let Some(c) = &s.compiled {
        let _ = writeln!(
            o,
            "  compiled launches  {:>10}  ({} with their binary, {} binaries; {:.1} of {:.1} us)",
            c.launches, c.with_binary, c.binaries, c.with_binary_us, c.gpu_time_us
        );
        if c.with_binary < c.launches && c.binaries == 0 {
            let _ = writeln!(
                o,
                "                     give the Inductor cache they were compiled into: --inductor-cache DIR"
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "  top kernels by traced time");
    let _ = writeln!(
        o,
        "  {:>7} {:>11} {:>9} {:>6}  name",
        "count", "total us", "mean us", "%"
    );
    for k in &s.top_kernels {
        let _ = writeln!(
            o,
            "  {:>7} {:>11.1} {:>9.2} {:>6.2}  {}",
            k.count,
            k.total_us,
            k.mean_us,
            k.pct_gpu_time,
            short(&k.name, 90)
        );
    }
    let _ = writeln!(o);
    if s.diagnostics.total == 0 {
        let _ = writeln!(o, "  diagnostics: none");
    } else {
        let _ = writeln!(o, "  diagnostics: {}", s.diagnostics.total);
        for (k, d) in &s.diagnostics.by_kind {
            let _ = writeln!(
                o,
                "    {k:<24}{:>8}  e.g. {}",
                d.count,
                short(&d.example, 100)
            );
        }
    }
    o
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
