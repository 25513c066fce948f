//! kc's integration tests, one test binary: each file of `tests/` is a module here, so
//! the workspace links one test executable instead of one per file (a clean `cargo test
//! --release` then needed 703 MB of `target/`, not 1.5 GB; session 27). `common` holds the
//! shared helpers.

mod common;

mod analyze;
mod capture;
mod cli;
mod compiled;
mod dataflow;
mod fidelity;
mod first_hour;
mod hostile;
mod ingest;
mod job;
mod lower;
mod modern;
mod plan;
mod rendezvous;
mod report;
mod schemas;
mod tier3;
mod trust;
mod twin;
mod values;
mod verdict;
