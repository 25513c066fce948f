//! Helpers shared by the integration tests: where the shared traces are, running the
//! `kc` binary, and ingesting/lowering in-process.
#![allow(dead_code)]

use kc_ir::KernelGraph;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `../shared` beside the checkout, as CI lays it out.
pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    assert!(
        p.join("traces").is_dir(),
        "the shared traces are expected at {} (CI clones the project beside ../shared)",
        p.display()
    );
    p
}

pub fn h100(name: &str) -> PathBuf {
    shared()
        .join("traces/h100")
        .join(format!("{name}.pt.trace.json.gz"))
}

pub const H100: [&str; 5] = [
    "bloom560m_seq5",
    "gpt2_train_bf16",
    "llama7b8l_decode",
    "resnet50_b32",
    "multistream_gemm_bf16",
];

pub fn kc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kc"))
        .args(args)
        .output()
        .expect("run kc")
}

pub fn ingest(paths: &[PathBuf]) -> (KernelGraph, Vec<kc::diag::Diagnostic>) {
    kc::ingest::ingest(paths, &Default::default()).unwrap_or_else(|e| panic!("ingest failed: {e}"))
}

pub fn lowered(name: &str) -> (KernelGraph, kc::lower::LowerCtx, Vec<kc::diag::Diagnostic>) {
    let (mut g, _) = ingest(&[h100(name)]);
    let (ctx, d) = kc::lower::lower(&mut g).expect("lower");
    (g, ctx, d)
}

/// Every Kineto trace in the shared corpus (Execution Traces and reference files excluded).
pub fn corpus_traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![shared().join("traces")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read corpus dir") {
            let p = e.expect("dir entry").path();
            let n = p.to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if (n.ends_with(".json") || n.ends_with(".json.gz"))
                && !n.contains(".et.json")
                && !n.contains("_et.json")
                && !n.contains("dlrm_pytorch_et")
                && !n.ends_with("reference.json")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A short stable name for a corpus file: its path under `traces/`.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(shared().join("traces"))
        .unwrap_or(p)
        .display()
        .to_string()
}

pub fn insta_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s
}

/// Real bytes mutated as the fuzz-like proptests do: cut at `at`, or `len` bytes from `at`
/// replaced by `with` (`at` taken modulo the length, the span clipped to it).
pub fn mutate(b: &mut Vec<u8>, at: usize, len: usize, with: Vec<u8>, cut: bool) {
    let at = at % (b.len() + 1);
    let end = (at + len).min(b.len());
    if cut {
        b.truncate(at);
    } else {
        b.splice(at..end, with);
    }
}
