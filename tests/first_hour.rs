//! The first-hour defects of issue 26, each reproduced as a newcomer met it: messages that
//! point the wrong way now say what the file is and where it goes.

use crate::common::*;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn refused(o: &std::process::Output, want: &str) {
    assert_eq!(o.status.code(), Some(2), "exit code");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(want), "wanted {want:?} in: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn a_plan_or_a_tarball_given_as_a_trace_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.kcir");
    // A plan (it said "found 'K'" before).
    let plan = dir.path().join("m.kcplan");
    let lowered = dir.path().join("m.lowered.kcir");
    assert!(
        kc(&["ingest", s(&h100("multistream_gemm_bf16")), "-o", s(&out)])
            .status
            .success()
    );
    assert!(kc(&["lower", "--tiers", s(&out), "-o", s(&lowered)])
        .status
        .success());
    assert!(kc(&["plan", s(&lowered), "-o", s(&plan)]).status.success());
    refused(
        &kc(&["ingest", s(&plan), "-o", s(&dir.path().join("y.kcir"))]),
        "this is a kc plan (.kcplan), not a profiler trace",
    );
    // A gzipped tar archive (an Inductor cache given as the trace).
    let tar = shared().join("examples/h100t2/llama2l_compiled_b2s128.inductor_cache.tar.gz");
    refused(
        &kc(&["ingest", s(&tar), "-o", s(&dir.path().join("y.kcir"))]),
        "this is a tar archive, not a profiler trace",
    );
}

#[test]
fn a_reference_given_as_shapes_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let reference = shared().join("examples/h100t2/reference.json");
    // It said "EOF while parsing an object" before.
    refused(
        &kc(&[
            "ingest",
            s(&h100("multistream_gemm_bf16")),
            "--shapes",
            s(&reference),
            "-o",
            s(&dir.path().join("y.kcir")),
        ]),
        "not a PyTorch Execution Trace, nor a kc JSONL shape log",
    );
}

#[test]
fn a_trace_given_as_the_inductor_cache_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let trace = shared().join("examples/h100t2/llama2l_compiled_b2s128.pt.trace.json.gz");
    // It printed a tar checksum error with the trace's text before.
    let o = kc(&[
        "ingest",
        s(&trace),
        "--inductor-cache",
        s(&trace),
        "-o",
        s(&dir.path().join("y.kcir")),
    ]);
    refused(&o, "not a tar archive inside the gzip");
    refused(&o, "it looks like a profiler trace");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains("schemaVersion"), "the trace's text echoed: {e}");
}

#[test]
fn kernels_the_eager_twin_cannot_lend_an_op_do_not_ask_for_the_twin_again() {
    let h = shared().join("examples/h100t2");
    let opts = kc::ingest::IngestOptions {
        eager: Some(h.join("gpt2s4l_decode_b4_eager.pt.trace.json.gz")),
        ..Default::default()
    };
    let (mut g, _) = kc::ingest::ingest(
        &[h.join("gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz")],
        &opts,
    )
    .unwrap();
    kc::lower::lower(&mut g).unwrap();
    let reasons: Vec<String> = g
        .units
        .iter()
        .filter_map(|u| match &u.params {
            kc_ir::UnitParams::None(why) => Some(why.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        !reasons.is_empty(),
        "the shared twin leaves some kernels without an op"
    );
    for r in &reasons {
        assert!(!r.contains("with `--eager`"), "{r}");
    }
    assert!(
        reasons.iter().any(|r| r.contains("lent it no op")),
        "{reasons:?}"
    );
}

#[test]
fn gpu_events_under_another_category_spelling_are_counted_and_named() {
    // A copy of a real trace whose kernel events carry another `cat` spelling (two of every
    // three): it lost them with "diagnostics: none" and exit 0 before.
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/capture/gpt2s4l_decode_b4.pt.trace.json.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&src).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut n = 0;
    let renamed: Vec<String> = text
        .split("\"cat\": \"kernel\"")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part.to_string()
            } else {
                n += 1;
                let cat = if n % 3 == 0 { "kernel" } else { "cuda_kernel" };
                format!("\"cat\": \"{cat}\"{part}")
            }
        })
        .collect();
    assert_eq!(n, 318, "the fixture's kernel events");
    let t = dir.path().join("renamed.json");
    std::fs::write(&t, renamed.concat()).unwrap();
    let o = kc(&[
        "ingest",
        s(&t),
        "-o",
        s(&dir.path().join("x.kcir")),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &v["summary"]["diagnostics"]["by_kind"]["unclassified_gpu_event"];
    // Every one counted, across the reader's workers.
    assert_eq!(d["count"].as_u64(), Some(212), "{d}");
    assert!(
        d["example"].as_str().unwrap().contains("cuda_kernel"),
        "{d}"
    );
}

#[test]
fn the_reports_chrome_trace_has_one_time_base() {
    // Energy windows stood at Unix time (1.8e15 us), the laid-out replay at 0: 57 years
    // apart in Perfetto.
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results");
    let r = kc::report::read_results(&f.join("gpt2s_b4s128_et.iso.json")).unwrap();
    let plan = kc::plan::read(&f.join("gpt2s_b4s128_et.kcplan")).unwrap();
    let measured = std::collections::HashMap::new();
    let t = kc::report::trace_out::chrome_trace(&r, Some((&plan, &measured)));
    let ts: Vec<(i64, f64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["pid"].as_i64()?, e["ts"].as_f64()?)))
        .collect();
    let (measurements, laid_out): (Vec<_>, Vec<_>) = ts.iter().partition(|(pid, _)| *pid == 1);
    assert!(!measurements.is_empty() && !laid_out.is_empty());
    let first = |v: &[&(i64, f64)]| v.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    assert_eq!(first(&measurements), 0.0, "measurements start at 0");
    assert_eq!(first(&laid_out), 0.0, "the laid-out replay starts at 0");
    let last = measurements.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(
        last < 3.6e9,
        "within an hour of the first measurement: {last} us"
    );
    assert!(t["otherData"]["measurements_t0_unix_ms"].as_i64().unwrap() > 1_700_000_000_000);
}

#[test]
fn ingest_says_what_the_execution_trace_added() {
    // `kc ingest --json` was identical with and without `--shapes ET`.
    let dir = tempfile::tempdir().unwrap();
    let h = shared().join("examples/h100t2");
    let trace = h.join("gpt2s_b4s128_et.pt.trace.json.gz");
    let et = h.join("gpt2s_b4s128_et.et.json.gz");
    let summary = |extra: &[&str]| -> serde_json::Value {
        let out = dir.path().join("x.kcir");
        let mut args = vec!["ingest", s(&trace), "-o", s(&out), "--json"];
        args.extend_from_slice(extra);
        let o = kc(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["summary"].clone()
    };
    let without = summary(&[]);
    let with = summary(&["--shapes", s(&et)]);
    assert_eq!(without["ops_with_tensor_identities"], 0);
    assert!(
        with["ops_with_tensor_identities"].as_u64().unwrap() > 400,
        "{with}"
    );
    assert_ne!(without, with);
}

#[test]
fn run_reads_the_reference_without_a_gpu_and_refuses_another_models_entry() {
    let dir = tempfile::tempdir().unwrap();
    let reference = shared().join("traces/h100/reference.json");
    let trace = h100("multistream_gemm_bf16");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", s(&trace), "-o", s(dir.path())];
        args.extend_from_slice(extra);
        kc(&args)
    };
    // It was ignored in silence before.
    let o = run(&["--reference", s(&reference), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if v["report"].is_null() {
        let note = v["reference"].as_str().unwrap();
        assert!(note.contains("nothing compared"), "{note}");
        // One sentence, no run of spaces from a broken line in the source.
        assert!(
            note.ends_with("the comparison needs kc's replay, on a GPU)") && !note.contains("  "),
            "{note}"
        );
    }
    // Another model's entry was accepted without a word.
    refused(
        &run(&[
            "--reference",
            s(&reference),
            "--reference-entry",
            "bloom560m_seq5",
        ]),
        "another model's",
    );
    // The options kc exec has are kc run's too.
    let help = String::from_utf8(kc(&["run", "--help"]).stdout).unwrap();
    for flag in [
        "--runs",
        "--warmup",
        "--no-energy",
        "--no-verify",
        "--trace-out",
    ] {
        assert!(help.contains(flag), "kc run --help lacks {flag}");
    }
}
