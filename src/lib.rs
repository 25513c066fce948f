//! kc: a trace-ingest-and-replay compiler for GPU ML workloads. This crate is the command
//! line (`cli`, run by `main.rs` and by the Python package); the compiler is `kc-core`
//! (ingest, lower, plan, results, report: no GPU) and the executor `kc-exec` (a device
//! core, one back end per tier, the measurement procedure), re-exported here under the
//! names the stages have always had.
//!
//! Layering, enforced by the crates' dependencies: kc-ir <- kc-core <- kc-exec <- kc.
#![deny(clippy::print_stdout, clippy::dbg_macro)]

pub mod cli;
pub use kc_core::{
    analyze, diag, envelope, files, fuzzing, ingest, lower, plan, report, results, words,
};
pub use kc_exec as exec;
