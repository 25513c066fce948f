//! `kc plan`: the bridge between the compiler and the executor. Turns a lowered graph into
//! a compact, versioned, checksummed replay plan (bincode 2 inside kc's file envelope) and
//! shows what a plan holds.
//!
//! Invariant: a plan file is only ever decoded after its magic, format version, length and
//! CRC32 match, and a decoded plan is only returned after [`types::Plan::check`] proves
//! every index in it is in range.

pub mod aten_call;
pub mod build;
pub mod cache_state;
pub mod calls;
pub mod carry;
pub mod collectives;
pub mod detach;
pub mod index_bounds;
pub mod integer_reads;
pub mod math;
pub mod memory;
pub mod schedule;
pub mod show;
pub mod spans;
pub mod step_values;
pub mod types;
pub mod values;

use crate::envelope::{self, EnvelopeError, Kind};
use std::path::Path;
pub use types::Plan;

pub const PLAN_FILE: Kind = Kind {
    magic: *b"KCPLAN\0\0",
    version: types::PLAN_FORMAT_VERSION,
    what: "plan",
};

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    File(#[from] EnvelopeError),
    #[error("{path}: the graph is not lowered; run `kc lower --tiers` on it first")]
    NotLowered { path: String },
    #[error("{path}: invalid plan: {why}")]
    Invalid { path: String, why: String },
    #[error("{path}: cannot write: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub fn encode(plan: &Plan) -> Result<Vec<u8>, PlanError> {
    Ok(envelope::encode(&PLAN_FILE, plan)?)
}

/// Version-1 plans (before [`types::PlanIterations`]) are still read.
const PLAN_FILE_V1: Kind = Kind {
    magic: *b"KCPLAN\0\0",
    version: 1,
    what: "plan",
};

pub fn decode(bytes: &[u8], path: &str) -> Result<Plan, PlanError> {
    // Version 3 appended `dataflow`, version 4 `binaries`, version 5 `kernel_geometry`,
    // version 6 `aten_calls`: older plans are ones without them.
    let mut no_calls = envelope::encode_fragment(&Vec::<Option<aten_call::AtenCall>>::new());
    no_calls.extend_from_slice(&envelope::encode_fragment(&math::MathModes::default()));
    let mut no_geometry = envelope::encode_fragment(&Vec::<Vec<Option<types::LaunchDims>>>::new());
    no_geometry.extend_from_slice(&no_calls);
    let mut no_binaries = envelope::encode_fragment(&Vec::<types::KernelBinary>::new());
    no_binaries.extend_from_slice(&no_geometry);
    let mut no_dataflow = envelope::encode_fragment(&None::<types::PlanDataflow>);
    no_dataflow.extend_from_slice(&no_binaries);
    // Version 7 appended a variant (`RegionKind::Detached`): a version-6 body reads as is
    // but for the recorded values, which version 8 appended.
    let no_values = envelope::encode_fragment(&values::PlanValues::default());
    // Version 10 appended the bound reads: every older body lacks them.
    let no_bound = envelope::encode_fragment(&Vec::<types::BoundRead>::new());
    let no_values = [no_values, no_bound.clone()].concat();
    let with_values = |mut v: Vec<u8>| {
        v.extend_from_slice(&no_values);
        v
    };
    let (no_dataflow, no_binaries, no_geometry, no_calls) = (
        with_values(no_dataflow),
        with_values(no_binaries),
        with_values(no_geometry),
        with_values(no_calls),
    );
    // Version 9 appended a variant (`RegionKind::CarriedIn`): a version-8 body reads as is.
    // Version 11 appended a variant (`Fill::Offsets`): a version-10 body reads as is.
    let older: [(u32, &[u8]); 9] = [
        (2, &no_dataflow),
        (3, &no_binaries),
        (4, &no_geometry),
        (5, &no_calls),
        (6, &no_values),
        (7, &no_values),
        (8, &no_bound),
        (9, &no_bound),
        (10, &[]),
    ];
    let mut plan: Plan = match envelope::decode_appended(&PLAN_FILE, bytes, path, &older) {
        Err(EnvelopeError::Version { found: 1, .. }) => {
            envelope::decode::<types::PlanV1>(&PLAN_FILE_V1, bytes, path)?.into()
        }
        other => other?,
    };
    // A plan written before calls were stored gets them now, by the same builder; a call
    // it can no longer build leaves its unit not replayable, with the reason.
    if plan.aten_calls.is_empty() {
        plan.store_calls();
    }
    plan.check().map_err(|why| PlanError::Invalid {
        path: path.to_string(),
        why,
    })?;
    Ok(plan)
}

pub fn read(path: &Path) -> Result<Plan, PlanError> {
    let bytes = envelope::read_bytes(&PLAN_FILE, path)?;
    decode(&bytes, &path.display().to_string())
}

pub fn write(plan: &Plan, path: &Path) -> Result<u64, PlanError> {
    let bytes = encode(plan)?;
    crate::files::write_atomic(path, &bytes).map_err(|source| PlanError::Io {
        path: path.display().to_string(),
        source,
    })?;
    Ok(bytes.len() as u64)
}
