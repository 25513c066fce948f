//! The lowering pipeline, in order. Reading this file tells the whole middle of the
//! compiler: each pass is one call, and the graph is verified after every one.
//! Invariant: a pass that breaks the graph stops the pipeline with the pass's name.

use super::{LowerCtx, LowerError};
use crate::diag::Diagnostics;
use kc_ir::KernelGraph;

type Pass = fn(&mut KernelGraph, &mut LowerCtx) -> Vec<crate::diag::Diagnostic>;

/// The passes, in the order they run.
pub const PASSES: &[(&str, Pass)] = &[
    ("family", super::family::run),
    ("group_units", super::group_units::run),
    ("recover_gemm", super::recover_gemm::run),
    ("assign_tiers", super::assign_tiers::run),
    ("calling_stream", super::calling_stream::run),
    ("dedupe_units", super::dedupe_units::run),
    ("dataflow", super::dataflow::run),
];

pub fn run(
    g: &mut KernelGraph,
    ctx: &mut LowerCtx,
    diags: &mut Diagnostics,
) -> Result<(), LowerError> {
    for (name, pass) in PASSES {
        diags.extend(pass(g, ctx));
        kc_ir::verify(g).map_err(|e| LowerError::Verify {
            pass: name,
            source: e,
        })?;
    }
    Ok(())
}
