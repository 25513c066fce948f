//! The model's own measurement, from the `reference.json` that `traces/capture.py` writes
//! (format in docs/FORMATS.md): eager and CUDA-graph time and energy per model iteration.
//! A report compares kc's numbers with these, per iteration, so a reader sees how far kc's
//! replay and prediction are from the model itself, not only from each other.
//! Invariant: an entry is matched to results by the trace file it names; a figure the
//! reference does not hold (a CUDA graph that could not be captured, energy without NVML)
//! stays `None` with the reason kept, never zero.

use serde::Serialize;
use serde_json::Value;

/// One way the model was measured (eager or CUDA graph), per iteration.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct ModelRun {
    /// Time per iteration as kc times its own replays: back to back, when the reference
    /// holds it (`back_to_back_us`), else one synchronized iteration (`median_us`), which
    /// includes the launch latency back-to-back runs hide; `timing` says which.
    pub time_us: Option<f64>,
    /// Energy per iteration over back-to-back runs (`back_to_back_energy_per_run_mj`,
    /// tick-aligned windows) or, in older references, over one >= 2 s loop.
    pub energy_j: Option<f64>,
    /// "back to back" or "one synchronized iteration".
    pub timing: String,
    /// One synchronized iteration's time, kept beside the back-to-back figure.
    pub latency_us: Option<f64>,
    /// The spread of the back-to-back windows, percent ((max - min) / median).
    pub time_spread_pct: Option<f64>,
    pub energy_spread_pct: Option<f64>,
    /// The sum of the GPU's kernel, copy and fill durations per iteration, from a profiler
    /// trace of the run (capture.py records it for the CUDA graph).
    pub kernel_time_us: Option<f64>,
    /// GPU activities per iteration in the model's run (capture.py's profile of its graph).
    pub kernels_per_replay: Option<f64>,
    /// Why the figures are missing (the capture's error), if they are.
    pub missing: Option<String>,
}

/// A reference entry as read.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct ModelReference {
    /// The entry's name in reference.json and the trace it was recorded with.
    pub entry: String,
    pub trace: String,
    pub profiled_iterations: Option<u32>,
    pub eager: ModelRun,
    pub cuda_graph: ModelRun,
}

fn run(v: Option<&Value>) -> ModelRun {
    let Some(v) = v else {
        return ModelRun {
            missing: Some("not measured".into()),
            ..Default::default()
        };
    };
    let num = |k: &str| {
        v.get(k)
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite() && *x > 0.0)
    };
    let b2b = num("back_to_back_us");
    ModelRun {
        time_us: b2b.or_else(|| num("median_us")),
        energy_j: num("back_to_back_energy_per_run_mj")
            .or_else(|| num("energy_per_run_mj"))
            .map(|mj| mj / 1000.0),
        timing: if b2b.is_some() {
            "back to back".into()
        } else {
            "one synchronized iteration".into()
        },
        latency_us: num("median_us"),
        time_spread_pct: num("back_to_back_spread_pct"),
        energy_spread_pct: num("back_to_back_energy_spread_pct"),
        kernel_time_us: num("kernel_time_us"),
        kernels_per_replay: num("kernels_per_replay"),
        missing: v
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                v.get("energy_error")
                    .and_then(Value::as_str)
                    .map(|e| format!("energy: {e}"))
            }),
    }
}

/// `trace.pt.trace.json.gz` -> `trace`.
fn stem(file: &str) -> &str {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.split(".pt.trace")
        .next()
        .unwrap_or(name)
        .trim_end_matches(".json.gz")
        .trim_end_matches(".json")
}

/// Finds the entry recorded with one of `sources` (by its `trace` file name, else by an
/// entry named like the trace), or the one named `entry`.
pub fn find(text: &str, sources: &[String], entry: Option<&str>) -> Result<ModelReference, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let results = doc
        .get("results")
        .and_then(Value::as_object)
        .ok_or("no `results` object: not a reference.json of traces/capture.py")?;
    let wanted: Vec<&str> = sources.iter().map(|s| stem(s)).collect();
    let hit = results.iter().find(|(name, v)| match entry {
        Some(e) => name.as_str() == e,
        None => {
            let trace = v.get("trace").and_then(Value::as_str).unwrap_or("");
            wanted.contains(&stem(trace)) || wanted.contains(&name.as_str())
        }
    });
    // A named entry must describe the replayed trace: another model's figures would make
    // a comparison that means nothing.
    if let (Some(e), Some((_, v))) = (entry, hit) {
        let trace = v.get("trace").and_then(Value::as_str).unwrap_or("");
        if !trace.is_empty() && !wanted.contains(&stem(trace)) && !wanted.contains(&e) {
            return Err(format!(
                "entry {e:?} describes the trace {trace}, not the replayed {}: its figures are \
                 another model's",
                sources.join(", ")
            ));
        }
    }
    let Some((name, v)) = hit else {
        let names: Vec<&str> = results.keys().map(String::as_str).collect();
        return Err(match entry {
            Some(e) => format!("no entry {e:?} (entries: {})", names.join(", ")),
            None => format!(
                "no entry for {} (entries: {}); name one with --reference-entry",
                sources.join(", "),
                names.join(", ")
            ),
        });
    };
    Ok(ModelReference {
        entry: name.clone(),
        trace: v
            .get("trace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        profiled_iterations: v
            .get("profiled_iterations")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        eager: run(v.get("eager")),
        cuda_graph: run(v.get("cuda_graph")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_entry_of_another_model_is_refused() {
        let text = r#"{"results": {
            "a": {"trace": "a.pt.trace.json.gz", "eager": {"median_us": 100.0}},
            "b": {"trace": "b.pt.trace.json.gz", "eager": {"median_us": 200.0}}}}"#;
        let sources = vec!["a.pt.trace.json.gz".to_string()];
        assert_eq!(find(text, &sources, Some("a")).unwrap().entry, "a");
        let e = find(text, &sources, Some("b")).unwrap_err();
        assert!(e.contains("another model's"), "{e}");
    }

    #[test]
    fn entries_are_found_by_trace_and_missing_figures_keep_their_reason() {
        let text = r#"{"results": {
            "a": {"trace": "a.pt.trace.json.gz", "profiled_iterations": 3,
                  "eager": {"median_us": 100.0, "energy_per_run_mj": 50.0},
                  "cuda_graph": {"error": "RuntimeError('no capture')"}},
            "b": {"trace": "b.pt.trace.json.gz", "eager": {"median_us": 7.0, "energy_error": "no NVML"}}}}"#;
        let r = find(text, &["a.pt.trace.json.gz".into()], None).unwrap();
        assert_eq!(r.entry, "a");
        assert_eq!(r.profiled_iterations, Some(3));
        assert_eq!(r.eager.time_us, Some(100.0));
        assert_eq!(r.eager.energy_j, Some(0.05));
        assert_eq!(r.cuda_graph.time_us, None);
        assert!(r
            .cuda_graph
            .missing
            .as_deref()
            .unwrap()
            .contains("no capture"));
        let b = find(text, &["b.pt.trace.json.gz".into()], Some("b")).unwrap();
        assert_eq!(b.eager.energy_j, None);
        assert!(b.eager.missing.as_deref().unwrap().contains("NVML"));
        assert!(find(text, &["zzz.json".into()], None)
            .unwrap_err()
            .contains("entries: a, b"));
        assert!(find("[]", &[], None).is_err());
    }
}
