//! kc-core: kc's compiler without the GPU. The stages are modules named like the CLI verbs;
//! the executor (`kc-exec`) sits above this crate and the command line (`kc`) above both,
//! so nothing here can reach into the executor: the compiler enforces that lowering and
//! planning decide what replays and the executor only runs it.
//!
//! - [`ingest`]: Kineto/CUPTI traces (+ shapes) -> kernel graph (`.kcir`)
//! - [`analyze`]: a graph's per-kernel, per-iteration and launch tables; two graphs compared
//! - [`lower`]: graph -> classified graph with replay tiers and units
//! - [`plan`]: lowered graph -> versioned, checksummed replay plan, with every call built
//! - [`results`]: what the executor measured (the results schema), and its analysis
//! - [`report`]: results -> JSON, Markdown, CSV, SVG
#![deny(clippy::print_stdout, clippy::dbg_macro)]

pub mod analyze;
pub mod diag;
pub mod envelope;
pub mod files;
pub mod fuzzing;
pub mod ingest;
pub mod lower;
pub mod plan;
pub mod report;
pub mod results;
pub mod words;
