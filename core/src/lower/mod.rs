//! `kc lower --tiers`: the compiler's middle. Parses kernel names, classifies every node
//! into a family, groups nodes into replay units per launching op, recovers cuBLAS calls,
//! assigns replay tiers by ordered rules, deduplicates units and places every operand in
//! the model's memory image (dataflow). The passes are listed in
//! [`pipeline`]; each is one file.
//!
//! Invariant: lowering is a pure function of the graph: the same graph always lowers to
//! the same classifications and unit numbering, and the result passes `kc_ir::verify`.

pub mod assign_tiers;
pub mod aten_schema;
pub mod calling_stream;
pub mod dataflow;
pub mod dedupe_units;
pub mod family;
pub mod gemm;
pub mod group_units;
pub mod name;
pub mod pipeline;
pub mod recover_gemm;
pub mod summary;

use crate::diag::{Diagnostic, Diagnostics};
use kc_ir::{Family, GemmCall, KernelGraph, NodeId, OpId, StrId, UnitParams};
use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error("lowering pass `{pass}` broke the graph: {source}")]
    Verify {
        pass: &'static str,
        source: kc_ir::VerifyError,
    },
    #[error("{path}: already lowered; lower the graph `kc ingest` wrote")]
    AlreadyLowered { path: String },
}

/// Nodes one op invocation launched, before tiers are known.
#[derive(Clone, Debug)]
pub struct PendingInstance {
    pub op: Option<OpId>,
    pub nodes: Vec<NodeId>,
}

/// State the passes hand on to each other: side tables keyed by node or instance.
#[derive(Default)]
pub struct LowerCtx {
    names: HashMap<StrId, name::ParsedName>,
    pub family: Vec<Family>,
    pub family_rule: Vec<&'static str>,
    pub instances: Vec<PendingInstance>,
    pub instance_of: Vec<u32>,
    pub gemm: Vec<Option<(OpId, Result<GemmCall, String>)>>,
    pub params: Vec<UnitParams>,
    pub rule_of_instance: Vec<&'static str>,
    /// Some GPU activity took its op from an eager twin or a capture: the trace was given
    /// one, so a graph-launched kernel without an op found no counterpart there.
    pub lent_ops: bool,
}

impl LowerCtx {
    /// The parsed form of an interned kernel name, parsed once per distinct name.
    pub fn parsed(&mut self, g: &KernelGraph, name: StrId) -> &name::ParsedName {
        self.names
            .entry(name)
            .or_insert_with(|| name::parse(g.str(name)))
    }
}

/// Lowers `g` in place. Returns the context (for `--explain`) and the diagnostics.
pub fn lower(g: &mut KernelGraph) -> Result<(LowerCtx, Vec<Diagnostic>), LowerError> {
    let mut ctx = LowerCtx {
        lent_ops: g.graph.node_weights().any(|n| n.link.is_lent()),
        ..Default::default()
    };
    let mut diags = Diagnostics::default();
    g.classes.clear();
    g.instances.clear();
    g.units.clear();
    g.dataflow = kc_ir::Dataflow::default();
    pipeline::run(g, &mut ctx, &mut diags)?;
    Ok((ctx, diags.into_vec()))
}
