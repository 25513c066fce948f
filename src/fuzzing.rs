//! Entry points for fuzzing kc's own file formats past their checksums: arbitrary bytes are
//! sealed in a valid envelope (right magic, version, length, CRC) and pushed through
//! everything that reads such a file, so the decoder, the verifier, lowering, planning and
//! `plan show` meet bodies that no CRC would have stopped. Invariant: each returns, whatever
//! the bytes; a panic here is a defect (the `files` fuzz target and tests/hostile.rs).

use crate::envelope;
use kc_ir::KernelGraph;

/// A graph body: decoded, verified, then lowered (if not yet) and planned, as `kc lower`
/// and `kc plan` would. Returns whether it got as far as a checked plan.
pub fn graph_body(body: &[u8]) -> bool {
    let sealed = envelope::seal(&crate::ingest::GRAPH_FILE, body);
    let Ok(mut g) = envelope::decode::<KernelGraph>(&crate::ingest::GRAPH_FILE, &sealed, "fuzz")
    else {
        return false;
    };
    if kc_ir::verify(&g).is_err() {
        return false;
    }
    let _ = kc_ir::text::to_text(&g);
    if !g.is_lowered() && crate::lower::lower(&mut g).is_err() {
        return false;
    }
    let p = crate::plan::build::build(&g);
    if p.check().is_err() {
        return false;
    }
    let _ = crate::plan::show::summarize(&p, body.len() as u64);
    true
}

/// A plan body: decoded and checked as `kc plan show` and `kc exec` read it, then shown.
pub fn plan_body(body: &[u8]) -> bool {
    let sealed = envelope::seal(&crate::plan::PLAN_FILE, body);
    match crate::plan::decode(&sealed, "fuzz") {
        Ok(p) => {
            let _ = crate::plan::show::summarize(&p, body.len() as u64);
            true
        }
        Err(_) => false,
    }
}
