//! `kc report` and `kc energy`: turn exec results into the answer — does
//! sum(isolated time × count) and sum(isolated energy × count) predict the graph replay? —
//! as JSON, Markdown, CSV and SVG; compare two results files for regressions; integrate
//! external power logs over the measured windows.
//!
//! Invariant: a report holds only figures read from the results files or derived from
//! them by the formula its field names; nothing is written until every input has been read
//! and checked, and files are written whole (temporary file, then rename).

pub mod baseline;
pub mod bundle;
pub mod exec_summary;
pub mod job;
pub mod kinds;
pub mod method_spread;
pub mod model;
pub mod powerlog;
pub mod predict;
pub mod reference;
pub mod render;
pub mod side_by_side;
pub mod svg;
pub mod trace_out;

use crate::results::{Results, RESULTS_SCHEMA_VERSION};
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
    /// A refusal that already names its file.
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {message}")]
    PowerLog { path: String, message: String },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Results files are a few MB even for plans of thousands of units.
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// The text of a file expected to be text, or an error that names what it is instead.
pub fn read_text<'a>(bytes: &'a [u8], path: &str, expected: &str) -> Result<&'a str, ReportError> {
    if let Some(kind) = crate::files::binary_kind(bytes) {
        return Err(ReportError::Input {
            path: path.to_string(),
            why: format!("this is {kind}, not a {expected}"),
        });
    }
    std::str::from_utf8(bytes).map_err(|e| ReportError::Input {
        path: path.to_string(),
        why: format!(
            "not text (invalid UTF-8 at byte {}); expected a {expected}",
            e.valid_up_to()
        ),
    })
}

/// A report input's bytes, at most `limit` (`what` names it in the refusal); a failure
/// names the file.
fn read_input(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, ReportError> {
    crate::files::read_capped(path, limit, what).map_err(|source| ReportError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Reads a results file, checking its schema version before anything else.
pub fn read_results(path: &Path) -> Result<Results, ReportError> {
    let p = path.display().to_string();
    let bytes = read_input(path, MAX_RESULTS_BYTES, "results file")?;
    let text = read_text(&bytes, &p, "results file (the JSON `kc exec` writes)")?;
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| ReportError::NotResults {
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
    if let Some((at, x)) = first_absurd_number(&v, &mut String::new()) {
        return Err(ReportError::Input {
            path: p,
            why: format!(
                "`{at}` is {x:e}: no measurement is that large (limit {MAX_FIGURE:e}); the file is corrupt or was edited"
            ),
        });
    }
    let mut r: Results = serde_json::from_value(v).map_err(|e| ReportError::NotResults {
        path: p,
        why: e.to_string(),
    })?;
    // Older results' duty-cycle energies are mended on reading, and say so.
    if let Some((n, j)) = r.mend_duty_spin() {
        r.mended_on_reading.push(format!(
            "the energy of {} measured at a duty cycle was mended on reading: kc before session 32 took off the spin's power over the launch less the unit alone, short of the spin's own time, so {} kept {j:.4} J per replay of the spin's energy, taken off now",
            crate::words::count(n as u64, "unit"),
            if n == 1 { "it" } else { "they" },
        ));
    }
    Ok(r)
}

/// The largest magnitude a figure in a results file may have. Microseconds, joules,
/// watts, bytes and Unix milliseconds all stay far below it (1e15 us is 31 years); a larger
/// value can only be corruption, and would overflow the sums and chart axes built from it.
pub const MAX_FIGURE: f64 = 1e15;

/// The JSON path and value of the first number beyond [`MAX_FIGURE`], if any.
fn first_absurd_number(v: &serde_json::Value, path: &mut String) -> Option<(String, f64)> {
    use serde_json::Value;
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::INFINITY);
            (!x.is_finite() || x.abs() > MAX_FIGURE).then(|| (path.clone(), x))
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let r = first_absurd_number(x, path);
            path.truncate(len);
            r
        }),
        Value::Object(map) => map.iter().find_map(|(k, x)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(k);
            let r = first_absurd_number(x, path);
            path.truncate(len);
            r
        }),
        _ => None,
    }
}

/// Refuses a graph-mode and an isolated-mode results file that were not measured on the same
/// plan and device: their comparison would be a number about nothing ("+693 %").
pub fn check_pair(
    graph: &Results,
    graph_path: &Path,
    isolated: &Results,
    isolated_path: &Path,
) -> Result<(), ReportError> {
    let (g, i) = (&graph.plan, &isolated.plan);
    if g.crc32 != i.crc32 {
        return Err(ReportError::Input {
            path: isolated_path.display().to_string(),
            why: format!(
                "measured on another plan than {} (plan {} CRC {:08x} from {}, vs {} CRC {:08x} from {}); \
                 report runs of one plan",
                graph_path.display(),
                i.file,
                i.crc32,
                i.sources.join(", "),
                g.file,
                g.crc32,
                g.sources.join(", ")
            ),
        });
    }
    if graph.device.name != isolated.device.name {
        return Err(ReportError::Input {
            path: isolated_path.display().to_string(),
            why: format!(
                "measured on {}, the graph replay ({}) on {}: compare runs on one kind of GPU",
                isolated.device.name,
                graph_path.display(),
                graph.device.name
            ),
        });
    }
    Ok(())
}

/// Reads the plan given as `--plan`, once, refusing any other than the one the results were
/// measured with (by the CRC of its bytes): its steps and unit numbers would be drawn
/// against another plan's measurements.
pub fn read_measured_plan(
    plan_path: &Path,
    results: &Results,
    results_path: &Path,
) -> Result<crate::plan::Plan, ReportError> {
    let (plan, crc) = read_plan_with_crc(plan_path)?;
    check_measured_with(plan_path, crc, results, results_path)?;
    Ok(plan)
}

/// Reads and decodes a plan once, with the CRC of its bytes (what results record).
pub fn read_plan_with_crc(plan_path: &Path) -> Result<(crate::plan::Plan, u32), ReportError> {
    let bytes = crate::envelope::read_bytes(&crate::plan::PLAN_FILE, plan_path)
        .map_err(|e| ReportError::Refused(e.to_string()))?;
    let crc = crc32fast::hash(&bytes);
    let plan = crate::plan::decode(&bytes, &plan_path.display().to_string())
        .map_err(|e| ReportError::Refused(e.to_string()))?;
    Ok((plan, crc))
}

/// Refuses results that were not measured with the plan of CRC `crc`.
pub fn check_measured_with(
    plan_path: &Path,
    crc: u32,
    results: &Results,
    results_path: &Path,
) -> Result<(), ReportError> {
    if crc != results.plan.crc32 {
        return Err(ReportError::Input {
            path: plan_path.display().to_string(),
            why: format!(
                "not the plan {} was measured with (its CRC is {crc:08x}, the results record {} with CRC {:08x})",
                results_path.display(),
                results.plan.file,
                results.plan.crc32
            ),
        });
    }
    Ok(())
}

/// Adds the model's own measurement from a `reference.json` of `traces/capture.py` to a
/// report: the entry recorded with the report's trace, or the one named `entry`.
pub fn add_reference(
    rep: &mut model::Report,
    path: &Path,
    entry: Option<&str>,
) -> Result<(), ReportError> {
    let m = read_reference(path, &rep.sources, entry)?;
    rep.add_reference(m).map_err(|why| ReportError::Input {
        path: path.display().to_string(),
        why,
    })
}

/// The model's profiled graph replays that the reference at `reference` names for the
/// report's entry (`cuda_graph.replay_trace`, beside the reference), where that file is
/// there.
pub fn model_graph_of_reference(
    rep: &model::Report,
    reference: &Path,
) -> Option<std::path::PathBuf> {
    let name = rep
        .model
        .as_ref()?
        .reference
        .cuda_graph
        .replay_trace
        .as_ref()?;
    let p = reference.parent().unwrap_or(Path::new(".")).join(name);
    p.is_file().then_some(p)
}

/// Sets kc's graph beside the model's own, kernel by kernel: `model_graph` is a trace of
/// the model's profiled CUDA-graph replays (capture.py's `replay_trace`), `graph_kernels`
/// kc's CUPTI record of its graph (`kc exec --kernels-out`, `kc run`'s
/// plan.graph.kernels.json); `plan` gives the kernels their units.
pub fn add_side_by_side(
    rep: &mut model::Report,
    model_graph: &Path,
    graph_kernels: &Path,
    plan: Option<&crate::plan::Plan>,
) -> Result<(), ReportError> {
    let mp = model_graph.display().to_string();
    let opts = crate::ingest::IngestOptions::default();
    let (g, _) = crate::ingest::ingest(&[model_graph.to_path_buf()], &opts).map_err(|e| {
        ReportError::Input {
            path: mp.clone(),
            why: e.to_string(),
        }
    })?;
    let model = side_by_side::model_iteration(&g).map_err(|why| ReportError::Input {
        path: mp.clone(),
        why,
    })?;
    let kp = graph_kernels.display().to_string();
    let bytes = read_input(graph_kernels, side_by_side::RECORDS_CAP, "kernel records")?;
    let records = side_by_side::read_kernel_records(&bytes).map_err(|why| ReportError::Input {
        path: kp.clone(),
        why,
    })?;
    let iterations = rep.iterations_per_replay.unwrap_or(1);
    // Since session 52 the record holds every launch `--verify` measured back to back:
    // the first of them is set beside the model's.
    let records = side_by_side::first_launch(records);
    let mut s = side_by_side::compare(&model, &records, iterations, plan);
    // All of kc's copies and fills, where its verification recorded them: the driver's
    // copy kernels are in the records, the copy engine's only in the fidelity section.
    if let Some(f) = rep.fidelity.as_ref() {
        if let (Some(n), Some(us)) = (f.copies_launched, f.copies_us) {
            let its = f64::from(iterations.max(1));
            s.kc_copies = Some(n as f64 / its);
            s.kc_copy_us = Some(us / its + s.kc_driver_copy_us);
        }
    }
    rep.graphs_side_by_side = Some(s);
    rep.set_against_model_graph();
    // The sentence beside the prediction names what parts the two graphs.
    if rep.prediction.is_some() {
        rep.compute_prediction();
    }
    Ok(())
}

/// Reads a reference file and finds the entry of the trace `sources` name (or `entry`,
/// which must describe that trace).
pub fn read_reference(
    path: &Path,
    sources: &[String],
    entry: Option<&str>,
) -> Result<reference::ModelReference, ReportError> {
    let p = path.display().to_string();
    let bytes = read_input(path, 64 << 20, "reference file")?;
    let text = read_text(&bytes, &p, "reference.json of traces/capture.py")?;
    reference::find(text, sources, entry).map_err(|why| ReportError::Input { path: p, why })
}

/// Reads a file of other models' answers for the method's spread
/// ([`method_spread::Answers`]), refused naming the file and where it is wrong.
pub fn read_method_spread(path: &Path) -> Result<method_spread::Answers, ReportError> {
    let p = path.display().to_string();
    let bytes = read_input(path, 16 << 20, "answers file")?;
    let text = read_text(&bytes, &p, "answers of tools/prediction_residuals.py")?;
    method_spread::parse(text).map_err(|why| ReportError::Input {
        path: p,
        why: format!("not a file of answers (tools/prediction_residuals.py): {why}"),
    })
}

/// Writes every file or none ([`crate::files::write_all`]).
pub fn write_all(files: &[(std::path::PathBuf, Vec<u8>)]) -> Result<(), ReportError> {
    crate::files::write_all(files).map_err(|(path, source)| ReportError::Write {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stats::Stats;
    use crate::results::{DutyEnergy, EnergySummary, UnitResult};

    #[test]
    fn reading_an_older_duty_energy_mends_it_once_and_says_so() {
        // A unit of 2 invocations a launch measured at half its launch: 1000 us alone, a
        // launch of 1800 us, so the spin took 1000 us where kc before session 32 took off
        // 800 us of it at 150 W: 0.015 J an invocation kept.
        let unit = UnitResult {
            id: 0,
            status: "ok".into(),
            unroll: 2,
            invocations: 4,
            time_us: Some(Stats::of(&[500.0, 500.0])),
            energy: Some(EnergySummary {
                per_item_j: Stats::of(&[0.2, 0.2]),
                per_item_above_idle_j: Stats::of(&[0.15, 0.15]),
                ..Default::default()
            }),
            energy_at_duty: Some(DutyEnergy {
                unit_share: 0.5,
                launch_us: 1800.0,
                unit_launch_us: 1000.0,
                spin_w: 150.0,
                capped_windows: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        let older = Results {
            schema_version: RESULTS_SCHEMA_VERSION,
            mode: "isolated".into(),
            units: vec![unit],
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.isolated.context.json");
        std::fs::write(&path, serde_json::to_string(&older).unwrap()).unwrap();
        let r = read_results(&path).unwrap();
        let e = r.units[0].energy.as_ref().unwrap().per_item_j.mean;
        assert!((e - (0.2 - 0.015)).abs() < 1e-12, "{e}");
        assert_eq!(r.mended_on_reading.len(), 1);
        assert!(
            r.mended_on_reading[0]
                .starts_with("the energy of 1 unit measured at a duty cycle was mended on reading")
                && r.mended_on_reading[0].contains("it kept 0.0600 J per replay"),
            "{:?}",
            r.mended_on_reading
        );
        // The report says it in its notes.
        let report = crate::report::model::build(None, Some(&r));
        assert!(report.notes.contains(&r.mended_on_reading[0]));
        // Written again by kc since (the spin's time recorded), it reads as it is.
        std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
        let again = read_results(&path).unwrap();
        assert!(again.mended_on_reading.is_empty());
        assert_eq!(again.units[0].energy, r.units[0].energy);
    }
}
