//! Tier 4, compiled (Triton) kernels: a torch.compile'd trace with the part of its Inductor
//! cache it needs (`fixtures/compiled`, a Qwen2-shaped 4-layer model captured on an H100
//! with `traces/capture.py --compile`, cache cut down by `tools/inductor_subset.py`), the
//! shared example with its whole cache, and the public corpus's compiled traces, which come
//! without a cache.

use crate::common::*;
use kc_ir::{ParamSource, Resolution, Tier, UnitParams};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/compiled")
        .join(name)
}

fn with_cache(trace: &Path, cache: Option<&Path>) -> kc_ir::KernelGraph {
    let (g, _) = kc::ingest::ingest(
        &[trace.to_path_buf()],
        &kc::ingest::IngestOptions {
            inductor_cache: cache.map(Path::to_path_buf),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("ingest: {e}"));
    g
}

const QWEN: &str = "qwen2_4l_compiled_b4s256";

#[test]
fn every_triton_launch_finds_its_binary_and_lowers_to_tier_4() {
    let trace = fixture(&format!("{QWEN}.pt.trace.json.gz"));
    let cache = fixture(&format!("{QWEN}.inductor_cache.tar.gz"));
    let mut g = with_cache(&trace, Some(&cache));
    // 35 Triton launches per iteration, 3 iterations, 16 distinct binaries.
    assert_eq!(g.compiled_launches.len(), 105);
    assert!(g
        .compiled_launches
        .iter()
        .all(|l| matches!(l.resolution, Resolution::Binary(_))));
    assert_eq!(g.compiled_kernels.len(), 16);
    for k in &g.compiled_kernels {
        // sm_90 cubins (ELF), Triton 3.6's two trailing scratch pointers, and the launch
        // parameters named as Inductor names them.
        assert_eq!(&k.cubin[..4], b"\x7fELF", "{}", k.name);
        assert_eq!(k.arch, 90);
        let scratch: Vec<_> = k
            .params
            .iter()
            .filter(|p| p.source == ParamSource::Scratch)
            .collect();
        assert_eq!(scratch.len(), 2, "{}", k.name);
        assert!(k
            .params
            .iter()
            .any(|p| p.name.starts_with("out_ptr") || p.name.starts_with("in_out_ptr")));
        assert!(k.params.iter().all(|p| p.source == ParamSource::Scratch
            || p.name.contains("ptr")
            || p.name.ends_with("numel")));
    }
    kc_ir::verify(&g).unwrap();
    kc::lower::lower(&mut g).unwrap();
    let s = kc::lower::summary::summarize(&g, &[]);
    assert!(s.pct_replayable_time >= 99.0, "{}", s.pct_replayable_time);
    assert_eq!(s.tiers["4"].invocations, 105);
    assert_eq!(s.tiers["unreplayable"].invocations, 0);
    // Every tier-4 call passes one argument per parameter, tensors where the kernel takes
    // pointers, and writes only through out_ptr/in_out_ptr.
    for u in g.units.iter().filter(|u| u.tier == Tier::Compiled) {
        let UnitParams::Compiled(c) = &u.params else {
            panic!("tier-4 unit without a compiled call")
        };
        let k = &g.compiled_kernels[c.kernel as usize];
        assert_eq!(c.args.len(), k.params.len());
        for (a, p) in c.args.iter().zip(&k.params) {
            match a {
                kc_ir::KernelArg::Tensor { writes, .. } => {
                    assert!(p.is_pointer());
                    assert_eq!(*writes, p.writes());
                }
                kc_ir::KernelArg::Int { bits, value } => {
                    assert_eq!(*bits, 32);
                    assert!(*value > 0);
                }
                kc_ir::KernelArg::Scratch { bytes } => assert_eq!(*bytes, 0),
                kc_ir::KernelArg::Float { .. } => {}
            }
        }
        assert!(c.grid.iter().all(|&x| x > 0));
        assert_eq!(c.block[0], k.num_warps * 32);
    }
    // The plan carries the binaries, and survives its own encoding.
    let plan = kc::plan::build::build(&g);
    plan.check().unwrap();
    assert_eq!(plan.binaries.len(), 16);
    let bytes = kc::plan::encode(&plan).unwrap();
    let back = kc::plan::decode(&bytes, "test").unwrap();
    assert_eq!(back, plan);
    // Its dataflow places the Triton kernels' float tensors in the memory image.
    let df = plan.dataflow.as_ref().expect("dataflow");
    assert_eq!(df.derivation, "heuristic");
}

#[test]
fn the_same_cache_as_a_directory_resolves_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let tar = std::fs::File::open(fixture(&format!("{QWEN}.inductor_cache.tar.gz"))).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(tar))
        .unpack(dir.path())
        .unwrap();
    let trace = fixture(&format!("{QWEN}.pt.trace.json.gz"));
    let a = with_cache(
        &trace,
        Some(&fixture(&format!("{QWEN}.inductor_cache.tar.gz"))),
    );
    let b = with_cache(&trace, Some(dir.path()));
    assert_eq!(a.compiled_kernels, b.compiled_kernels);
    assert_eq!(a.compiled_launches, b.compiled_launches);
}

#[test]
fn without_the_cache_the_reason_names_the_flag() {
    let trace = fixture(&format!("{QWEN}.pt.trace.json.gz"));
    let mut g = with_cache(&trace, None);
    assert!(g
        .compiled_launches
        .iter()
        .all(|l| l.resolution == Resolution::NoCache));
    kc::lower::lower(&mut g).unwrap();
    let s = kc::lower::summary::summarize(&g, &[]);
    assert_eq!(s.tiers["4"].invocations, 0);
    let reasons: Vec<String> = g
        .units
        .iter()
        .filter_map(|u| match &u.params {
            UnitParams::None(r) => Some(r.to_string()),
            _ => None,
        })
        .collect();
    assert!(!reasons.is_empty());
    assert!(
        reasons.iter().all(|r| r.contains("--inductor-cache")),
        "{reasons:?}"
    );
}

#[test]
fn a_cache_of_another_model_resolves_nothing_and_says_why() {
    // The shared LLaMA example's cache holds other modules: no launch takes a binary of a
    // kernel with the same name from another model.
    let cache = shared().join("examples/h100t2/llama2l_compiled_b2s128.inductor_cache.tar.gz");
    let trace = fixture(&format!("{QWEN}.pt.trace.json.gz"));
    let g = with_cache(&trace, Some(&cache));
    assert!(g.compiled_kernels.is_empty());
    let Resolution::Missing(why) = &g.compiled_launches[0].resolution else {
        panic!("{:?}", g.compiled_launches[0].resolution)
    };
    assert!(why.contains("holds no compiled"), "{why}");
    // Not a cache at all: an error naming the file.
    let e = kc::ingest::ingest(
        std::slice::from_ref(&trace),
        &kc::ingest::IngestOptions {
            inductor_cache: Some(trace.clone()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&trace.display().to_string()), "{e}");
}

#[test]
fn the_shared_compiled_example_replays_whole_with_its_cache() {
    let e = shared().join("examples/h100t2");
    let mut g = with_cache(
        &e.join("llama2l_compiled_b2s128.pt.trace.json.gz"),
        Some(&e.join("llama2l_compiled_b2s128.inductor_cache.tar.gz")),
    );
    assert_eq!(g.compiled_launches.len(), 57);
    assert_eq!(g.compiled_kernels.len(), 12);
    kc::lower::lower(&mut g).unwrap();
    let s = kc::lower::summary::summarize(&g, &[]);
    assert!(s.pct_replayable_time >= 99.0, "{}", s.pct_replayable_time);
    assert_eq!(s.tiers["4"].invocations, 57);
}

#[test]
fn public_compiled_traces_without_a_cache_name_the_flag() {
    for t in [
        "AMD-AGI__TraceLens/torch_compile_triton/trace.json.gz",
        "facebookresearch__HolisticTraceAnalysis/triton_example/triton_example.json.gz",
    ] {
        let mut g = with_cache(&shared().join("traces/public").join(t), None);
        assert!(!g.compiled_launches.is_empty(), "{t}");
        kc::lower::lower(&mut g).unwrap();
        let triton: Vec<String> = g
            .units
            .iter()
            .filter(|u| g.str(u.label).starts_with("triton_"))
            .map(|u| match &u.params {
                UnitParams::None(r) => r.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert!(!triton.is_empty(), "{t}");
        assert!(
            triton.iter().all(|r| r.contains("--inductor-cache")),
            "{t}: {triton:?}"
        );
    }
}

#[test]
fn ingest_summary_counts_launches_and_binaries() {
    let trace = fixture(&format!("{QWEN}.pt.trace.json.gz"));
    let g = with_cache(
        &trace,
        Some(&fixture(&format!("{QWEN}.inductor_cache.tar.gz"))),
    );
    let s = kc::ingest::summary::summarize(&g, &[]);
    let c = s.compiled.clone().expect("compiled summary");
    assert_eq!((c.launches, c.with_binary, c.binaries), (105, 105, 16));
    assert!((c.gpu_time_us - c.with_binary_us).abs() < 1e-6);
    assert!(kc::ingest::summary::render_text(&s).contains("105 with their binary"));
}

/// The real files of the fixture's cache, by name: the Triton readers' seeds.
fn cache_members() -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let tar = std::fs::File::open(fixture(&format!("{QWEN}.inductor_cache.tar.gz"))).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(tar));
    let mut out = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().to_string();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        out.push((name, b));
    }
    out
}

#[test]
fn the_readers_read_the_real_files() {
    use kc::ingest::inductor::*;
    let m = cache_members();
    let json = m
        .iter()
        .find(|(n, _)| n.ends_with(".json"))
        .expect("a metadata file");
    let meta = read_meta(&json.1)
        .expect("in range")
        .expect("Triton metadata");
    assert!(meta.num_warps > 0 && meta.arch == 90, "{meta:?}");
    let ttir = m.iter().find(|(n, _)| n.ends_with(".ttir")).unwrap();
    let text = String::from_utf8_lossy(&ttir.1);
    let name = ttir.0.rsplit('/').next().unwrap().trim_end_matches(".ttir");
    // File names of long kernels are cut; the IR names the entry in full.
    let entry = text
        .split("tt.func public @")
        .nth(1)
        .and_then(|r| r.split('(').next())
        .unwrap();
    assert!(entry.starts_with(name));
    assert!(ir_module(&text).unwrap().ends_with(".py"));
    assert!(!ir_params(&text, entry).unwrap().is_empty());
    // The fuzz entry point on real bytes: a whole archive indexes its binaries.
    let tar = std::fs::read(fixture(&format!("{QWEN}.inductor_cache.tar.gz"))).unwrap();
    let mut raw = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&tar[..])
        .read_to_end(&mut raw)
        .unwrap();
    assert!(kc::fuzzing::inductor_cache(&raw) >= 26);
}

mod fuzzish {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Arbitrary bytes, as every kind of cache file and as an archive: no panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let _ = kc::fuzzing::inductor_cache(&bytes);
        }

        /// Real cache files with bytes flipped, cut or spliced: no panic.
        #[test]
        fn mutated_real_files_never_panic(
            pick in 0usize..1000,
            at in 0usize..100_000,
            len in 0usize..64,
            with in proptest::collection::vec(any::<u8>(), 0..64),
            cut in any::<bool>(),
        ) {
            let m = cache_members();
            let mut b = m[pick % m.len()].1.clone();
            crate::common::mutate(&mut b, at, len, with, cut);
            let _ = kc::fuzzing::inductor_cache(&b);
        }
    }
}

/// Rebuilds the fixture cache with `edit` applied to each member (name, bytes) -> members.
fn cache_with(edit: impl Fn(&str, &[u8]) -> Vec<(String, Vec<u8>)>) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, bytes) in cache_members() {
        for (n, data) in edit(&name, &bytes) {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            b.append_data(&mut h, &n, data.as_slice()).unwrap();
        }
    }
    b.into_inner().unwrap()
}

fn ingest_with_cache_bytes(tar: &[u8]) -> Result<kc_ir::KernelGraph, String> {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c.tar");
    std::fs::write(&cache, tar).unwrap();
    kc::ingest::ingest(
        &[fixture(&format!("{QWEN}.pt.trace.json.gz"))],
        &kc::ingest::IngestOptions {
            inductor_cache: Some(cache),
            ..Default::default()
        },
    )
    .map(|(g, _)| g)
    .map_err(|e| e.to_string())
}

fn resolved(g: &kc_ir::KernelGraph) -> usize {
    g.compiled_launches
        .iter()
        .filter(|l| matches!(l.resolution, kc_ir::Resolution::Binary(_)))
        .count()
}

/// A cache is read by its size, not by what it claims: cubins that are not CUDA ELF files
/// never resolve, a second member of one name is refused, metadata out of range is
/// refused (never truncated into range), and extension headers are bounded (hostile2
/// cases 4b, 6b-6d).
#[test]
fn a_hostile_cache_resolves_nothing_it_should_not() {
    use kc::ingest::inductor::*;
    // The untouched cache, rebuilt the same way, resolves every launch.
    let good =
        ingest_with_cache_bytes(&cache_with(|n, b| vec![(n.to_string(), b.to_vec())])).unwrap();
    assert_eq!(resolved(&good), good.compiled_launches.len());
    assert!(good
        .compiled_kernels
        .iter()
        .all(|k| cubin_problem(&k.cubin).is_none()));
    // Cubins replaced by a shell script or nothing.
    let g = ingest_with_cache_bytes(&cache_with(|n, b| {
        let data = if n.ends_with(".cubin") {
            if n.len() % 2 == 0 {
                b"#!/bin/sh\necho hi\n".to_vec()
            } else {
                Vec::new()
            }
        } else {
            b.to_vec()
        };
        vec![(n.to_string(), data)]
    }))
    .unwrap();
    assert_eq!(resolved(&g), 0);
    assert!(g.compiled_kernels.iter().all(|k| k.cubin.is_empty()));
    // A second member of the same name (a later one would have won).
    let e = ingest_with_cache_bytes(&cache_with(|n, b| {
        let mut v = vec![(n.to_string(), b.to_vec())];
        if n.ends_with(".cubin") {
            v.push((n.to_string(), b"JUNKJUNKJUNK".to_vec()));
        }
        v
    }))
    .unwrap_err();
    assert!(e.contains("a second member named"), "{e}");
    // Metadata that does not fit the launch's 32 bits.
    let g = ingest_with_cache_bytes(&cache_with(|n, b| {
        let data = if n.ends_with(".json") && !n.ends_with("__grp__.json") {
            let mut v: serde_json::Value = match serde_json::from_slice(b) {
                Ok(v) => v,
                Err(_) => return vec![(n.to_string(), b.to_vec())],
            };
            if v.get("num_warps").is_some() {
                v["num_warps"] = serde_json::json!(1u64 << 40);
            }
            serde_json::to_vec(&v).unwrap()
        } else {
            b.to_vec()
        };
        vec![(n.to_string(), data)]
    }))
    .unwrap();
    assert_eq!(resolved(&g), 0);
    assert!(
        read_meta(br#"{"name": "k", "num_warps": 4, "target": {"arch": 4294967386}}"#).is_err()
    );
    assert!(
        read_meta(br#"{"name": "k", "num_warps": 4, "shared": 1180591620717411303424}"#).is_err()
    );
    // A GNU long name bigger than any path: refused before it is read whole.
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_entry_type(tar::EntryType::Regular);
    let long = format!("triton/{}.json", "x".repeat(200 << 10));
    b.append_data(&mut h, &long, &b"x"[..]).unwrap();
    let bytes = b.into_inner().unwrap();
    let e = CacheFiles::default()
        .read_tar(&bytes[..], None)
        .unwrap_err();
    assert!(e.contains("extension header"), "{e}");
}
