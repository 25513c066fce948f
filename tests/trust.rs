//! The trust defects of the second hostile battery (../shared/examples/hostile2, issue 29),
//! each as a test that failed before its fix: shape files read by their size, Execution
//! Trace strides that overflow, ranks that do not fit, rank logs checked as outputs, each
//! rank's GPU holding only its own image, and an untrusted default Inductor cache.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::Command;

fn shared() -> std::path::PathBuf {
    common::shared()
}

/// A gzip of more spaces than the shape-file cap holds, then `{"nodes": []}`: refused at
/// the cap with the byte, memory bounded by the cap (it was read whole, then parsed).
#[test]
fn a_shape_file_past_the_cap_is_refused_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("spaces.json.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&p).unwrap(),
        flate2::Compression::fast(),
    );
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..(kc::ingest::MAX_SHAPES_BYTES >> 20) + 8 {
        gz.write_all(&chunk).unwrap();
    }
    gz.write_all(br#"{"nodes": []}"#).unwrap();
    gz.finish().unwrap();
    let e = kc::ingest::ingest(
        &[shared().join("examples/h100t2/resnet18_b8_cl_et.pt.trace.json.gz")],
        &kc::ingest::IngestOptions {
            shapes: Some(p),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("spaces.json.gz") && e.contains("larger than 192 MiB"),
        "{e}"
    );
}

/// The recorded ET with two output strides made absurd (hostile2 case 10): ingest refuses
/// it naming the node, instead of the planner finding a region outside the arena.
#[test]
fn execution_trace_strides_that_overflow_are_refused_at_ingest() {
    let e = kc::ingest::ingest(
        &[shared().join("examples/h100t2/resnet18_b8_cl_et.pt.trace.json.gz")],
        &kc::ingest::IngestOptions {
            shapes: Some(shared().join("examples/hostile2/et_plan_invalid.json.gz")),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("node 668") && e.contains("2^63"), "{e}");
}

/// A JSONL shape record of rank 2^32 is refused, never truncated into rank 0 (case 11c).
#[test]
fn a_rank_that_does_not_fit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.jsonl");
    std::fs::write(
        &p,
        r#"{"external_id": 2, "rank": 4294967296, "name": "aten::mm", "dims": [[4096, 4096], [4096, 4096]], "types": ["c10::BFloat16", "c10::BFloat16"]}"#,
    )
    .unwrap();
    let e = kc::ingest::ingest(
        &[shared().join("traces/h100/multistream_gemm_bf16.pt.trace.json.gz")],
        &kc::ingest::IngestOptions {
            shapes: Some(p),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 1") && e.contains("4294967296"), "{e}");
}

/// A multi-rank plan lays each rank out from offset 0: one GPU holds its own rank's image,
/// not the sum over ranks (case 11a/11e).
#[test]
fn each_rank_holds_only_its_own_memory_image() {
    let (mut g, _) =
        kc::ingest::ingest(&[shared().join("traces/h200x2")], &Default::default()).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let p = kc::plan::build::build(&g);
    let whole = p.dataflow.as_ref().unwrap().arena_bytes;
    let r0 = p.dataflow_of_rank(0).unwrap();
    let r1 = p.dataflow_of_rank(1).unwrap();
    assert!(whole <= r0.arena_bytes.max(r1.arena_bytes), "{whole}");
    assert!(!r0.regions.is_empty() && !r1.regions.is_empty());
    assert_eq!(
        r0.regions.len() + r1.regions.len(),
        p.dataflow.as_ref().unwrap().regions.len()
    );
    // Each rank's regions lie inside its own arena.
    for df in [&r0, &r1] {
        assert!(df
            .regions
            .iter()
            .all(|r| r.offset + r.bytes <= df.arena_bytes));
    }
}

/// `kc exec --ranks all` checks every rank's log and results path before anything starts:
/// a log named like the input plan, or a symlink at a log's place, is refused and left as
/// it is (cases 9a, 9b).
#[test]
fn rank_logs_are_checked_like_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let kc = env!("CARGO_BIN_EXE_kc");
    let run = |args: &[&str]| {
        Command::new(kc)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let h = shared().join("traces/h200x2");
    assert!(run(&["ingest", h.to_str().unwrap(), "-o", "tp.kcir"])
        .status
        .success());
    assert!(run(&["lower", "--tiers", "tp.kcir", "-o", "tp.l.kcir"])
        .status
        .success());
    assert!(run(&["plan", "tp.l.kcir", "-o", "tp.kcplan"])
        .status
        .success());
    let plan = std::fs::read(dir.path().join("tp.kcplan")).unwrap();
    std::fs::write(dir.path().join("victim.rank0.log"), &plan).unwrap();
    let out = run(&[
        "exec",
        "victim.rank0.log",
        "--ranks",
        "all",
        "-o",
        "victim.x",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read(dir.path().join("victim.rank0.log")).unwrap(),
        plan
    );
    std::fs::write(dir.path().join("precious.txt"), b"precious").unwrap();
    std::os::unix::fs::symlink("precious.txt", dir.path().join("tp.rank0.graph.log")).unwrap();
    let out = run(&["exec", "tp.kcplan", "--ranks", "all"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("precious.txt")).unwrap(),
        b"precious"
    );
}

/// A default Inductor cache that others may write (or another user owns) is not trusted
/// (case 6a); one of the user's own, writable only by them, is.
#[cfg(unix)]
#[test]
fn an_untrusted_default_cache_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("torchinductor_me");
    std::fs::create_dir_all(cache.join("triton/0")).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(cache.join("triton"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(kc::ingest::inductor::untrusted_why(&cache), None);
    std::fs::set_permissions(
        cache.join("triton/0"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let why = kc::ingest::inductor::untrusted_why(&cache).unwrap();
    assert!(why.contains("written by others"), "{why}");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&cache, &link).unwrap();
    assert!(kc::ingest::inductor::untrusted_why(Path::new(&link))
        .unwrap()
        .contains("symbolic link"));
}
