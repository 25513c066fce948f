//! The stable text form of a graph: one line per rank, op, node, edge and unit, in index
//! order, so two graphs can be diffed and snapshot-tested. Invariant: the output depends
//! only on the graph's contents (no hash-map iteration order, no addresses).

use crate::{KernelGraph, NodeKind, OpArg, TensorSpec, UnitParams};
use petgraph::visit::EdgeRef;
use std::fmt::Write;

/// `f16[5,1024]` or, when non-contiguous, `f16[1024,3072]{1,1024}`.
pub fn tensor_str(t: &TensorSpec) -> String {
    let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
    let mut s = format!("{}[{}]", t.dtype.short(), dims.join(","));
    if !t.strides.is_empty() && t.strides != TensorSpec::contiguous_strides(&t.dims) {
        let st: Vec<String> = t.strides.iter().map(|d| d.to_string()).collect();
        let _ = write!(s, "{{{}}}", st.join(","));
    }
    s
}

pub fn arg_str(a: &OpArg) -> String {
    match a {
        OpArg::Tensor(t) => tensor_str(t),
        OpArg::TensorList(ts) => {
            let v: Vec<String> = ts.iter().map(tensor_str).collect();
            format!("({})", v.join(","))
        }
        OpArg::Scalar { value, ty } => {
            if value.is_empty() {
                format!("<{ty}>")
            } else {
                value.clone()
            }
        }
        OpArg::ScalarList { value, .. } => value.clone(),
        OpArg::None => "None".into(),
        OpArg::Other { ty } => format!("<{ty}>"),
        OpArg::OptionalTensorList(ts) => {
            let v: Vec<String> = ts
                .iter()
                .map(|t| t.as_ref().map_or_else(|| "None".to_string(), tensor_str))
                .collect();
            format!("({})", v.join(","))
        }
    }
}

pub fn args_str(args: &[OpArg]) -> String {
    let v: Vec<String> = args.iter().map(arg_str).collect();
    v.join(" ")
}

/// Renders the whole graph.
pub fn to_text(g: &KernelGraph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "; kc-ir text v1");
    for r in &g.meta.ranks {
        let _ = writeln!(
            out,
            "rank{} = {:?} bytes={} base_ns={} devices={}",
            r.rank,
            r.source,
            r.source_bytes,
            r.base_time_ns,
            r.devices
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join("|")
        );
    }
    for (i, op) in g.ops.iter().enumerate() {
        let _ = write!(
            out,
            "op{i} = {} r{} tid{} @{}+{} ext={}",
            g.str(op.name),
            op.rank,
            op.tid,
            op.start_ns,
            op.dur_ns,
            op.external_id
        );
        if let Some(p) = op.parent {
            let _ = write!(out, " parent={p}");
        }
        let args = g.args(crate::OpId(i as u32));
        if !args.is_empty() {
            let _ = write!(out, " ({})", args_str(args));
        }
        out.push('\n');
    }
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        let _ = write!(
            out,
            "node{} = {} r{} d{} s{} @{}+{} {:?}",
            id.index(),
            n.kind.kind_str(),
            n.rank,
            n.device,
            n.stream,
            n.start_ns,
            n.dur_ns,
            g.str(n.kind.name())
        );
        match &n.kind {
            NodeKind::Kernel { geometry, .. } | NodeKind::Collective { geometry, .. } => {
                let _ = write!(
                    out,
                    " grid({},{},{}) block({},{},{}) regs={} smem={}",
                    geometry.grid[0],
                    geometry.grid[1],
                    geometry.grid[2],
                    geometry.block[0],
                    geometry.block[1],
                    geometry.block[2],
                    geometry.registers_per_thread,
                    geometry.shared_memory
                );
            }
            NodeKind::Memcpy { kind, bytes, .. } => {
                let _ = write!(out, " {} bytes={bytes}", kind.as_str());
            }
            NodeKind::Memset { bytes, .. } => {
                let _ = write!(out, " bytes={bytes}");
            }
        }
        if let NodeKind::Collective { info, .. } = &n.kind {
            let _ = write!(
                out,
                " coll={} dtype={} in={:?} out={:?} group={:?}",
                info.collective, info.dtype, info.in_nelems, info.out_nelems, info.group_size
            );
        }
        let _ = write!(out, " corr={}", n.correlation);
        if let Some(l) = &n.launch {
            let _ = write!(out, " launch={}", g.str(l.api));
        }
        if let Some(op) = n.op {
            let _ = write!(out, " {op}");
        }
        let _ = write!(out, " link={}", n.link.as_str());
        if let Some(it) = n.iteration {
            let _ = write!(out, " step={it}");
        }
        if let Some(c) = g.classification(id) {
            let _ = write!(
                out,
                " [{} tier={} rule={} inst={}]",
                c.family.as_str(),
                c.tier.as_str(),
                g.str(c.rule),
                c.instance
            );
        }
        out.push('\n');
    }
    let mut edges: Vec<_> = g
        .graph
        .edge_references()
        .map(|e| (e.source().index(), e.target().index(), e.weight().kind))
        .collect();
    edges.sort();
    for (a, b, k) in edges {
        let _ = writeln!(out, "edge node{a} -> node{b} {}", k.as_str());
    }
    for u in &g.units {
        let params = match &u.params {
            UnitParams::Memcpy { kind, bytes } => format!("memcpy {} {bytes}", kind.as_str()),
            UnitParams::Memset { bytes, value } => format!("memset {bytes} value={value}"),
            UnitParams::Gemm(c) => format!("gemm {}", c.describe()),
            UnitParams::Op { name, args } => format!("{}({})", g.str(*name), args_str(args)),
            UnitParams::Collective(i) => format!("collective {}", i.collective),
            UnitParams::None(r) => format!("unreplayable: {r}"),
            UnitParams::Compiled(c) => format!("compiled {}", c.describe(&g.compiled_kernels)),
        };
        let _ = writeln!(
            out,
            "{} = tier {} {} {:?} x{} traced={} kernels={} : {params}",
            u.id,
            u.tier.as_str(),
            u.family.as_str(),
            g.str(u.label),
            u.invocations,
            u.traced_ns_total,
            u.kernels.len()
        );
    }
    out
}
