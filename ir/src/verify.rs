//! The graph verifier, run after ingest and after every lowering pass. It checks structure,
//! not meaning: ids in range, non-negative durations, stream-order edges that go forward
//! in time on one stream, parents that enclose their children, and side tables that cover
//! every node. Invariant: `verify` never panics, whatever the graph holds.

use crate::{EdgeKind, KernelGraph, NodeKind, Tier};
use petgraph::visit::EdgeRef;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    pub problems: Vec<String>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "graph failed verification: ")?;
        for (i, p) in self.problems.iter().take(10).enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            write!(f, "{p}")?;
        }
        if self.problems.len() > 10 {
            write!(f, "; and {} more", self.problems.len() - 10)?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyError {}

pub fn verify(g: &KernelGraph) -> Result<(), VerifyError> {
    let mut problems = Vec::new();
    let nstr = g.strings.len() as u32;
    let nops = g.ops.len() as u32;
    let mut bad = |p: String| {
        if problems.len() < 1000 {
            problems.push(p);
        }
    };
    for (i, op) in g.ops.iter().enumerate() {
        if op.name.0 >= nstr {
            bad(format!("op{i}: name id {} out of range", op.name.0));
        }
        if op.dur_ns < 0 {
            bad(format!("op{i}: negative duration"));
        }
        if op.args as usize >= g.arg_lists.len().max(1) {
            bad(format!("op{i}: argument list {} out of range", op.args));
        }
        if let Some(p) = op.parent {
            if p.0 as usize >= i {
                bad(format!("op{i}: parent {p} is not an earlier op"));
            } else {
                let parent = &g.ops[p.0 as usize];
                if parent.start_ns > op.start_ns || parent.end_ns() < op.end_ns() {
                    bad(format!("op{i}: parent {p} does not enclose it"));
                }
            }
        }
    }
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        if n.kind.name().0 >= nstr {
            bad(format!("node{}: name id out of range", id.index()));
        }
        if n.dur_ns < 0 {
            bad(format!(
                "node{}: negative duration {}",
                id.index(),
                n.dur_ns
            ));
        }
        if let Some(op) = n.op {
            if op.0 >= nops {
                bad(format!("node{}: {op} out of range", id.index()));
            } else if g.ops[op.0 as usize].rank != n.rank {
                bad(format!("node{}: {op} is on another rank", id.index()));
            }
        }
        if n.op.is_some() != n.link.is_linked() {
            bad(format!("node{}: link status disagrees with op", id.index()));
        }
        if n.signature as usize >= g.signatures.len() {
            bad(format!("node{}: signature out of range", id.index()));
        }
        if let Some(l) = &n.launch {
            if l.api.0 >= nstr {
                bad(format!("node{}: launch api id out of range", id.index()));
            }
        }
        if let NodeKind::Memcpy { .. } | NodeKind::Memset { .. } = n.kind {
            if n.kind.geometry().is_some() {
                bad(format!("node{}: copy with geometry", id.index()));
            }
        }
    }
    for (k, sig) in g.signatures.iter().enumerate() {
        for id in [Some(sig.name), sig.op_name, Some(sig.op_shapes)]
            .into_iter()
            .flatten()
        {
            if id.0 >= nstr {
                bad(format!("signature{k}: string id {} out of range", id.0));
            }
        }
    }
    for e in g.graph.edge_references() {
        let (a, b) = (&g.graph[e.source()], &g.graph[e.target()]);
        if e.weight().kind == EdgeKind::StreamOrder {
            if (a.rank, a.device, a.stream) != (b.rank, b.device, b.stream) {
                bad(format!(
                    "edge node{}->node{}: stream order across streams",
                    e.source().index(),
                    e.target().index()
                ));
            }
            if a.start_ns > b.start_ns {
                bad(format!(
                    "edge node{}->node{}: stream order goes back in time",
                    e.source().index(),
                    e.target().index()
                ));
            }
        }
        if e.source() == e.target() {
            bad(format!("edge node{}: self loop", e.source().index()));
        }
    }
    if !g.classes.is_empty() {
        if g.classes.len() != g.graph.node_count() {
            bad(format!(
                "classification table has {} entries for {} nodes",
                g.classes.len(),
                g.graph.node_count()
            ));
        }
        for (i, c) in g.classes.iter().enumerate() {
            if c.rule.0 >= nstr {
                bad(format!("node{i}: rule id out of range"));
            }
            match g.instances.get(c.instance as usize) {
                None => bad(format!("node{i}: instance {} out of range", c.instance)),
                Some(inst) => {
                    if !inst.nodes.iter().any(|n| n.index() == i) {
                        bad(format!(
                            "node{i}: not listed by its instance {}",
                            c.instance
                        ));
                    }
                    match g.units.get(inst.unit.0 as usize) {
                        // Units are built by the last lowering pass.
                        None if g.units.is_empty() => {}
                        None => bad(format!("instance {}: unit out of range", c.instance)),
                        Some(u) if u.tier != c.tier && c.tier != Tier::Unreplayable => bad(
                            format!("node{i}: tier {:?} but its unit is {:?}", c.tier, u.tier),
                        ),
                        _ => {}
                    }
                }
            }
        }
        let mut seen = vec![false; g.graph.node_count()];
        for (k, inst) in g.instances.iter().enumerate() {
            for n in &inst.nodes {
                match seen.get_mut(n.index()) {
                    None => bad(format!("instance {k}: node out of range")),
                    Some(s) if *s => bad(format!("node{}: in two instances", n.index())),
                    Some(s) => *s = true,
                }
            }
        }
        for (k, inst) in g.instances.iter().enumerate() {
            if let Some(op) = inst.op {
                if op.0 >= nops {
                    bad(format!("instance {k}: {op} out of range"));
                }
            }
            if !g.units.is_empty() && inst.unit.0 as usize >= g.units.len() {
                bad(format!("instance {k}: unit {} out of range", inst.unit.0));
            }
        }
        for (k, u) in g.units.iter().enumerate() {
            if u.id.0 as usize != k {
                bad(format!(
                    "unit{k}: id {} does not match its position",
                    u.id.0
                ));
            }
            if u.label.0 >= nstr {
                bad(format!("unit{k}: label id {} out of range", u.label.0));
            }
            if let Some(id) = u.kernels.iter().find(|id| id.0 >= nstr) {
                bad(format!("unit{k}: kernel name id {} out of range", id.0));
            }
            if let crate::UnitParams::Op { name, .. } = &u.params {
                if name.0 >= nstr {
                    bad(format!("unit{k}: op name id {} out of range", name.0));
                }
            }
            if let crate::UnitParams::Compiled(c) = &u.params {
                if c.kernel as usize >= g.compiled_kernels.len() {
                    bad(format!(
                        "unit{k}: compiled kernel {} out of range",
                        c.kernel
                    ));
                }
            }
        }
    } else if !g.instances.is_empty() || !g.units.is_empty() {
        bad(format!(
            "{} unit instances and {} units without a classification table",
            g.instances.len(),
            g.units.len()
        ));
    }
    for (k, t) in g.tensor_refs.iter().enumerate() {
        if t.op.0 as usize >= g.ops.len() {
            bad(format!("tensor refs {k}: op {} out of range", t.op.0));
        }
        if k > 0 && g.tensor_refs[k - 1].op >= t.op {
            bad(format!("tensor refs {k}: ops not strictly increasing"));
        }
    }
    let rv = &g.recorded_values;
    for (k, r) in rv.inputs.iter().enumerate() {
        if r.op.0 >= nops {
            bad(format!("recorded values {k}: {} out of range", r.op));
            continue;
        }
        if k > 0 {
            let p = &rv.inputs[k - 1];
            if (p.op, p.input, p.element) >= (r.op, r.input, r.element) {
                bad(format!(
                    "recorded values {k}: inputs not strictly increasing"
                ));
            }
        }
        match rv.blobs.get(r.blob as usize) {
            None => bad(format!("recorded values {k}: blob {} out of range", r.blob)),
            Some(b) => {
                if crate::RecordedValues::expected_bytes(r.dtype, &r.dims) != Some(b.len() as u64) {
                    bad(format!(
                        "recorded values {k}: {} bytes for {:?} of {:?}",
                        b.len(),
                        r.dims,
                        r.dtype
                    ));
                }
            }
        }
    }
    for (k, l) in g.compiled_launches.iter().enumerate() {
        if l.op.0 >= nops {
            bad(format!("compiled launch {k}: {} out of range", l.op));
            continue;
        }
        if k > 0 && g.compiled_launches[k - 1].op >= l.op {
            bad(format!("compiled launch {k}: ops not strictly increasing"));
        }
        if let crate::Resolution::Binary(b) = l.resolution {
            match g.compiled_kernels.get(b as usize) {
                None => bad(format!("compiled launch {k}: kernel {b} out of range")),
                Some(kernel) => {
                    let nargs = g.args(l.op).len() as u32;
                    for p in &kernel.params {
                        if let crate::ParamSource::Arg(a) = p.source {
                            if a >= nargs {
                                bad(format!(
                                    "compiled launch {k}: parameter {} takes argument {a} of {nargs}",
                                    p.name
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    let df = &g.dataflow;
    if df.source != crate::DataflowSource::None {
        if df.instances.len() != g.instances.len() {
            bad(format!(
                "dataflow: {} instance entries for {} instances",
                df.instances.len(),
                g.instances.len()
            ));
        }
        // Operands per unit, computed once (a unit has thousands of instances).
        let unit_operands: Vec<Vec<crate::Operand>> = g
            .units
            .iter()
            .map(|u| {
                let label = if (u.label.0 as usize) < g.strings.len() {
                    g.strings.get(u.label)
                } else {
                    ""
                };
                u.params.operands(label)
            })
            .collect();
        for (k, (places, inst)) in df.instances.iter().zip(&g.instances).enumerate() {
            let Some(operands) = unit_operands.get(inst.unit.0 as usize) else {
                continue;
            };
            if places.operands.len() != operands.len() {
                bad(format!(
                    "dataflow: instance {k} has {} operand places, its unit {} operands",
                    places.operands.len(),
                    operands.len()
                ));
                continue;
            }
            for (p, o) in places.operands.iter().zip(operands) {
                let Some(p) = p else { continue };
                match df.storages.get(p.storage as usize) {
                    None => bad(format!(
                        "dataflow: instance {k}: storage {} out of range",
                        p.storage
                    )),
                    Some(s) if p.offset_bytes.saturating_add(o.bytes) > s.bytes => bad(format!(
                        "dataflow: instance {k}: an operand of {} bytes at {} exceeds storage {} ({} bytes)",
                        o.bytes, p.offset_bytes, p.storage, s.bytes
                    )),
                    _ => {}
                }
            }
            for p in places.outputs.iter().flatten() {
                if p.storage as usize >= df.storages.len() {
                    bad(format!(
                        "dataflow: instance {k}: output storage {} out of range",
                        p.storage
                    ));
                }
            }
        }
    } else if !df.instances.is_empty() || !df.storages.is_empty() {
        bad("dataflow: places without a source".to_string());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(VerifyError { problems })
    }
}
