//! Hostile inputs (issue 18): every reproducer in ../shared/examples/hostile gets one clear
//! error line and exit code 2 (or the documented correct result), never a panic, a hang or
//! unbounded memory; oddities become counted diagnostics; nothing already written is lost.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hostile(name: &str) -> PathBuf {
    shared().join("examples/hostile").join(name)
}

fn results(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/results")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// kc under a wall-clock limit and an address-space limit, as `ulimit -v` sets it.
fn kc_limited(args: &[&str], max_kib: u64, secs: u32) -> Output {
    let mut cmd = format!("ulimit -v {max_kib}; exec timeout {secs} \"$0\"");
    for i in 1..=args.len() {
        cmd.push_str(&format!(" \"${i}\""));
    }
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .arg(env!("CARGO_BIN_EXE_kc"))
        .args(args)
        .output()
        .expect("run kc")
}

/// Exit code 2 with one `error:` line naming `needle`, and no panic.
fn refused(o: &Output, needle: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in {err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    err
}

fn ingest_json(path: &Path) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let o = kc(&[
        "ingest",
        s(path),
        "-o",
        s(&dir.path().join("g.kcir")),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn d1_absurd_figures_in_results_are_refused_not_looped_on() {
    let dir = tempfile::tempdir().unwrap();
    let o = kc_limited(
        &[
            "report",
            s(&results("bloom560m_seq5.graph.json")),
            "--isolated",
            s(&hostile("report_hang_iso_traced_mean_1e308.json")),
            "-o",
            s(&dir.path().join("r")),
        ],
        2_000_000,
        20,
    );
    refused(&o, "traced_mean_us");
    assert!(!dir.path().join("r").exists());
}

#[test]
fn d2_non_finite_clock_offsets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for offset in ["NaN", "inf", "-inf"] {
        let o = kc(&[
            "energy",
            "--power-log",
            s(&hostile("smi_ok.csv")),
            &format!("--clock-offset={offset}"),
            s(&results("bloom560m_seq5.graph.json")),
            "-o",
            s(&dir.path().join("e.json")),
        ]);
        refused(&o, "clock offset must be a finite");
    }
}

#[test]
fn d3_string_ids_beyond_the_interner_fail_verification() {
    let dir = tempfile::tempdir().unwrap();
    let o = kc(&[
        "plan",
        s(&hostile("plan_panic_interner_crcvalid.lowered.kcir")),
        "-o",
        s(&dir.path().join("p.kcplan")),
    ]);
    refused(&o, "out of range");
    // The fuzz target's crashes: raw graph bodies, sealed with a valid CRC.
    for f in [
        "kcir_crcvalid_bad_strid_1.kcir",
        "kcir_crcvalid_bad_strid_2.kcir",
    ] {
        let body = std::fs::read(hostile(f)).unwrap();
        assert!(!kc::fuzzing::graph_body(&body), "{f} must not verify");
        assert!(!kc::fuzzing::plan_body(&body));
    }
    // And a real lowered graph still goes all the way to a checked plan.
    let (g, _, _) = lowered("multistream_gemm_bf16");
    let sealed = kc::envelope::encode(&kc::ingest::GRAPH_FILE, &g).unwrap();
    let writer_len = u16::from_le_bytes([sealed[12], sealed[13]]) as usize;
    assert!(kc::fuzzing::graph_body(&sealed[14 + writer_len + 12..]));
}

#[test]
fn d4_d5_bombs_stay_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // 2 GiB string under an unused top-level key: skipped while streaming, trace ingested.
    let o = kc_limited(
        &[
            "ingest",
            s(&hostile("bomb_header2g.json.gz")),
            "-o",
            s(&dir.path().join("a.kcir")),
        ],
        1_000_000,
        120,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One 4 GiB event: refused at the documented limit, with its byte offset.
    let o = kc_limited(
        &[
            "ingest",
            s(&hostile("bomb_event4g.json.gz")),
            "-o",
            s(&dir.path().join("b.kcir")),
        ],
        1_000_000,
        120,
    );
    let err = refused(&o, "larger than 64 MiB");
    assert!(err.contains("byte 20508"), "{err}");
    assert!(!dir.path().join("b.kcir").exists());
}

/// Energy of every window of a log read from `log` with `extra` arguments.
fn energy(log: &Path, extra: &[&str]) -> Result<serde_json::Value, Output> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e.json");
    let mut args = vec!["energy", "--power-log", s(log), "--json", "-o", s(&out)];
    let graph = results("bloom560m_seq5.graph.json");
    args.extend_from_slice(extra);
    args.push(s(&graph));
    let o = kc(&args);
    if o.status.success() {
        Ok(serde_json::from_slice(&o.stdout).unwrap())
    } else {
        Err(o)
    }
}

#[test]
fn d6_power_columns_are_found_by_header_and_several_gpus_refused() {
    // `timestamp, index, power.draw [W]`: 250 W, not the index.
    let v = energy(&hostile("smi_extra_index_col.csv"), &[]).unwrap();
    let graph_window = &v["windows"][1];
    assert!((graph_window["avg_power_w"].as_f64().unwrap() - 250.0).abs() < 1e-9);
    let same = energy(&hostile("smi_ok.csv"), &[]).unwrap();
    assert_eq!(
        graph_window["energy_j"], same["windows"][1]["energy_j"],
        "the same readings with or without an index column"
    );
    // Two GPUs interleaved without an index column.
    refused(
        &energy(&hostile("smi_two_gpus.csv"), &[]).unwrap_err(),
        "several GPUs interleaved",
    );
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(hostile("smi_ok.csv")).unwrap();
    // With an index column, two GPUs need --gpu; with it, one is picked.
    let mut two = String::from("timestamp, index, power.draw [W]\n");
    for l in text.lines().skip(1) {
        let (t, w) = l.split_once(',').unwrap();
        two.push_str(&format!("{t}, 0,{w}\n{t}, 1, 400.00 W\n"));
    }
    let p = dir.path().join("two.csv");
    std::fs::write(&p, &two).unwrap();
    refused(&energy(&p, &[]).unwrap_err(), "--gpu");
    let v = energy(&p, &["--gpu", "1"]).unwrap();
    assert!((v["windows"][1]["avg_power_w"].as_f64().unwrap() - 400.0).abs() < 1e-9);
    // A decimal comma and an absurd power are refused by line.
    for (bad, needle) in [
        ("250,5 W", "fields where the header has"),
        ("1e308 W", "unreadable power"),
    ] {
        let p = dir.path().join("bad.csv");
        std::fs::write(&p, text.replacen("250.00 W", bad, 1)).unwrap();
        refused(&energy(&p, &[]).unwrap_err(), needle);
    }
}

#[test]
fn d7_report_directories_change_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let rd = dir.path().join("rd");
    let args = |graph: &Path| {
        vec![
            "report".to_string(),
            s(graph).to_string(),
            "--isolated".into(),
            s(&results("bloom560m_seq5.iso.json")).to_string(),
            "-o".into(),
            s(&rd).to_string(),
        ]
    };
    let run = |a: Vec<String>| kc(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run(args(&results("bloom560m_seq5.graph.json")))
        .status
        .success());
    let before = std::fs::read(rd.join("report.md")).unwrap();
    std::fs::remove_file(rd.join("tiers.svg")).unwrap();
    std::fs::create_dir(rd.join("tiers.svg")).unwrap();
    let o = run(args(&hostile("graph_variant.json")));
    refused(&o, "tiers.svg");
    assert_eq!(
        std::fs::read(rd.join("report.md")).unwrap(),
        before,
        "old files kept"
    );
    let names: Vec<String> = std::fs::read_dir(&rd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
}

#[test]
fn d8_no_temporaries_are_left_and_stale_ones_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = h100("multistream_gemm_bf16");
    let outdir = dir.path().join("outdir");
    std::fs::create_dir(&outdir).unwrap();
    let o = kc(&["ingest", s(&trace), "-o", s(&outdir)]);
    refused(&o, "cannot write");
    // A temporary of a killed run (its pid is not alive) is removed by the next write.
    let stale = dir.path().join(".g.kcir.kc-tmp-4294967000");
    std::fs::write(&stale, b"half").unwrap();
    let o = kc(&["ingest", s(&trace), "-o", s(&dir.path().join("g.kcir"))]);
    assert!(o.status.success());
    assert!(!stale.exists());
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn d8_sigint_ends_kc_with_130_and_nothing_written() {
    // kc waits on a FIFO for its input and is interrupted there: it exits as the shell
    // expects (130) and writes nothing. (That the handler removes live temporaries is
    // tested on the mechanism itself, in src/files.rs.)
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kc"))
        .args(["ingest", s(&fifo), "-o", s(&dir.path().join("g.kcir"))])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["in.json".to_string()]);
}

#[test]
fn d9_stdin_and_pipes_are_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let trace = h100("multistream_gemm_bf16");
    let direct = ingest_json(&trace);
    for (arg, gz) in [("-", false), ("/dev/stdin", false), ("-", true)] {
        let out = dir.path().join("s.kcir");
        let cmd = format!(
            "{} \"$1\" | \"$0\" ingest {arg} -o \"$2\" --json",
            if gz { "cat" } else { "zcat" }
        );
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .arg(env!("CARGO_BIN_EXE_kc"))
            .arg(&trace)
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["summary"]["gpu_ops"], direct["summary"]["gpu_ops"]);
        assert_eq!(
            v["summary"]["gpu_time_us"],
            direct["summary"]["gpu_time_us"]
        );
    }
}

#[test]
fn d10_an_output_is_never_one_of_the_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.json");
    let trace = h100("multistream_gemm_bf16");
    let o = Command::new("sh")
        .arg("-c")
        .arg("zcat \"$0\" > \"$1\"")
        .arg(&trace)
        .arg(&t)
        .status()
        .unwrap();
    assert!(o.success());
    let before = std::fs::read(&t).unwrap();
    refused(
        &kc(&["ingest", s(&t), "-o", s(&t)]),
        "refusing to write over an input",
    );
    assert_eq!(std::fs::read(&t).unwrap(), before);
    let g = dir.path().join("g.kcir");
    assert!(kc(&["ingest", s(&t), "-o", s(&g)]).status.success());
    refused(&kc(&["lower", "--tiers", s(&g), "-o", s(&g)]), "refusing");
    let l = dir.path().join("g.lowered.kcir");
    assert!(kc(&["lower", "--tiers", s(&g), "-o", s(&l)])
        .status
        .success());
    refused(&kc(&["plan", s(&l), "-o", s(&l)]), "refusing");
    let r = dir.path().join("r.json");
    std::fs::copy(results("bloom560m_seq5.graph.json"), &r).unwrap();
    refused(
        &kc(&[
            "energy",
            "--power-log",
            s(&hostile("smi_ok.csv")),
            s(&r),
            "-o",
            s(&r),
        ]),
        "refusing",
    );
    // A report directory holding its own input under an output's name.
    let rd = dir.path().join("rd");
    std::fs::create_dir(&rd).unwrap();
    let inside = rd.join("report.json");
    std::fs::copy(results("bloom560m_seq5.graph.json"), &inside).unwrap();
    refused(&kc(&["report", s(&inside), "-o", s(&rd)]), "refusing");
}

#[test]
fn endless_or_foreign_files_are_refused_by_their_header() {
    let zero = Path::new("/dev/zero");
    refused(
        &kc_limited(&["lower", "--tiers", s(zero)], 1_000_000, 20),
        "not a kc graph",
    );
    refused(
        &kc_limited(&["plan", "show", s(zero)], 1_000_000, 20),
        "not a kc plan",
    );
    refused(
        &kc_limited(&["report", s(zero), "-o", "/tmp/kc-never"], 1_000_000, 20),
        "too large",
    );
    refused(
        &kc_limited(
            &[
                "energy",
                "--power-log",
                s(zero),
                s(&results("bloom560m_seq5.graph.json")),
            ],
            1_000_000,
            20,
        ),
        "too large",
    );
    // A plan given where results are expected is named as a plan.
    refused(
        &kc(&[
            "report",
            s(&results("bloom560m_seq5.kcplan")),
            "-o",
            "/tmp/kc-never",
        ]),
        "this is a kc plan",
    );
}

#[test]
fn oddities_in_traces_are_counted_diagnostics() {
    for (file, kind, count) in [
        ("orphan_kernels.json", "gpu_op_without_runtime_call", 15),
        ("dup_correlation_kernels.json", "duplicate_correlation", 14),
        ("overlap_one_stream.json", "overlap_on_stream", 16),
        ("kernel_cat_int.json", "non_string_field", 15),
        ("ts_str.json", "number_as_string", 1),
        ("dur_neg.json", "negative_duration", 1),
        ("utf8_key.json", "invalid_utf8_key", 1),
    ] {
        let v = ingest_json(&hostile(file));
        let n = &v["summary"]["diagnostics"]["by_kind"][kind]["count"];
        assert_eq!(
            n.as_u64(),
            Some(count),
            "{file}: {}",
            v["summary"]["diagnostics"]
        );
    }
    // The clean traces have none of them.
    for t in H100 {
        let v = ingest_json(&h100(t));
        assert_eq!(v["summary"]["diagnostics"]["total"], 0, "{t}");
    }
}

#[test]
fn traces_without_runtime_events_duplicate_keys_and_negative_times_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(
        &String::from_utf8(
            flate2::read::GzDecoder::new(
                std::fs::File::open(h100("multistream_gemm_bf16")).unwrap(),
            )
            .bytes_all(),
        )
        .unwrap(),
    )
    .unwrap();
    let events = v["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["cat"] != "cuda_runtime" && e["cat"] != "cuda_driver");
    let k = events.iter().position(|e| e["cat"] == "kernel").unwrap();
    events[k]["ts"] = serde_json::json!(-5.0);
    let text = serde_json::to_string(&v).unwrap().replacen(
        "\"traceEvents\"",
        "\"deviceProperties\": [], \"traceEvents\"",
        1,
    );
    let p = dir.path().join("t.json");
    std::fs::write(&p, text).unwrap();
    let v = ingest_json(&p);
    let kinds = &v["summary"]["diagnostics"]["by_kind"];
    assert_eq!(kinds["no_runtime_events"]["count"], 1, "{kinds}");
    assert_eq!(kinds["duplicate_key"]["count"], 1, "{kinds}");
    assert_eq!(kinds["negative_timestamp"]["count"], 1, "{kinds}");
}

#[test]
fn the_same_file_twice_and_foreign_execution_traces_are_refused() {
    let t = h100("bloom560m_seq5");
    refused(
        &kc(&["ingest", s(&t), s(&t), "-o", "/tmp/kc-never.kcir"]),
        "the same file",
    );
    let e = shared().join("examples/h100t2");
    let o = kc(&[
        "ingest",
        s(&e.join("resnet18_b8_cl_et.pt.trace.json.gz")),
        "--shapes",
        s(&e.join("gpt2s_b4s128_et.et.json.gz")),
        "-o",
        "/tmp/kc-never.kcir",
    ]);
    refused(&o, "not from this trace's run");
    // A Kineto trace given as shapes is named as such.
    let o = kc(&[
        "ingest",
        s(&t),
        "--shapes",
        s(&t),
        "-o",
        "/tmp/kc-never.kcir",
    ]);
    refused(&o, "this is a Kineto (profiler) trace");
}

/// A shapes file whose 64 KiB mark falls inside a multi-byte character: read, not a panic
/// (the check for a Kineto trace given as shapes looks at the first 64 KiB).
#[test]
fn a_shapes_file_cut_inside_a_character_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("shapes.jsonl");
    std::fs::write(&p, format!("#{}\n", "é".repeat(40_000))).unwrap();
    let o = kc(&[
        "ingest",
        s(&h100("multistream_gemm_bf16")),
        "--shapes",
        s(&p),
        "-o",
        s(&dir.path().join("g.kcir")),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `Read::read_to_end` as a value.
trait BytesAll {
    fn bytes_all(self) -> Vec<u8>;
}

impl<R: std::io::Read> BytesAll for R {
    fn bytes_all(mut self) -> Vec<u8> {
        let mut v = Vec::new();
        self.read_to_end(&mut v).unwrap();
        v
    }
}

/// Inputs the `files` fuzz target found: each once made kc allocate without bound.
#[test]
fn fuzz_regressions_of_the_files_target_return_quickly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("files_")
        {
            continue;
        }
        let data = std::fs::read(&p).unwrap();
        let (k, body) = data.split_first().unwrap();
        let t = std::time::Instant::now();
        if k % 2 == 0 {
            kc::fuzzing::graph_body(body);
        } else {
            kc::fuzzing::plan_body(body);
        }
        assert!(t.elapsed().as_secs() < 5, "{}", p.display());
        n += 1;
    }
    assert!(n >= 1);
}
