//! `kc report` and `kc energy`: turn exec results into the answer — does
//! sum(isolated time × count) and sum(isolated energy × count) predict the graph replay? —
//! as JSON, Markdown, CSV and SVG; compare two results files for regressions; integrate
//! external power logs over the measured windows.
//!
//! Invariant: a report holds only figures read from the results files or derived from
//! them by the formula its field names; nothing is written until every input has been read
//! and checked, and files are written whole (temporary file, then rename).

pub mod baseline;
pub mod model;
pub mod powerlog;
pub mod render;
pub mod svg;
pub mod trace_out;

use crate::exec::results::{Results, RESULTS_SCHEMA_VERSION};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a kc results file: {why}")]
    NotResults { path: String, why: String },
    #[error("{path}: results schema version {found}, this kc reads version {expected}")]
    Schema {
        path: String,
        found: u64,
        expected: u32,
    },
    #[error("{path}: {why}")]
    Input { path: String, why: String },
    #[error("{path}: {message}")]
    PowerLog { path: String, message: String },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Reads a results file, checking its schema version before anything else.
pub fn read_results(path: &Path) -> Result<Results, ReportError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: p.clone(),
        source,
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ReportError::NotResults {
            path: p.clone(),
            why: e.to_string(),
        })?;
    let version = v
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| ReportError::NotResults {
            path: p.clone(),
            why: "no `schema_version`".into(),
        })?;
    if version != u64::from(RESULTS_SCHEMA_VERSION) {
        return Err(ReportError::Schema {
            path: p,
            found: version,
            expected: RESULTS_SCHEMA_VERSION,
        });
    }
    serde_json::from_value(v).map_err(|e| ReportError::NotResults {
        path: p,
        why: e.to_string(),
    })
}

/// Writes every file or none: each goes to a temporary name first, and all are renamed
/// only once all were written.
pub fn write_all(files: &[(std::path::PathBuf, Vec<u8>)]) -> Result<(), ReportError> {
    let mut tmps = Vec::new();
    for (path, bytes) in files {
        let tmp = path.with_extension(format!(
            "{}.tmp",
            path.extension().and_then(|e| e.to_str()).unwrap_or("")
        ));
        if let Err(source) = std::fs::write(&tmp, bytes) {
            for t in &tmps {
                let _ = std::fs::remove_file(t);
            }
            return Err(ReportError::Write {
                path: path.display().to_string(),
                source,
            });
        }
        tmps.push(tmp);
    }
    for ((path, _), tmp) in files.iter().zip(&tmps) {
        std::fs::rename(tmp, path).map_err(|source| ReportError::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(())
}
