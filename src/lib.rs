//! kc: a trace-ingest-and-replay compiler for GPU ML workloads. The library holds the
//! pipeline stages as modules named like the CLI verbs; `main.rs` only parses arguments.
//!
//! - [`ingest`]: Kineto/CUPTI traces (+ shapes) -> kernel graph (`.kcir`)
//! - [`lower`]: graph -> classified graph with replay tiers and units
//! - [`plan`]: lowered graph -> versioned, checksummed replay plan
//! - [`report`]: results -> JSON, Markdown, CSV, SVG
#![deny(clippy::print_stdout, clippy::dbg_macro)]

pub mod cli;
pub mod diag;
pub mod envelope;
pub mod exec;
pub mod files;
pub mod fuzzing;
pub mod ingest;
pub mod lower;
pub mod plan;
pub mod report;
pub mod words;
