//! Tier 4, compiled (Triton) kernels: a torch.compile'd trace with the part of its Inductor
//! cache it needs (`fixtures/compiled`, a Qwen2-shaped 4-layer model captured on an H100
//! with `traces/capture.py --compile`, cache cut down by `tools/inductor_subset.py`), the
//! shared example with its whole cache, and the public corpus's compiled traces, which come
//! without a cache.

mod common;
use common::*;
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
    let meta = read_meta(&json.1).expect("Triton metadata");
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
            let at = at % (b.len() + 1);
            let end = (at + len).min(b.len());
            if cut {
                b.truncate(at);
            } else {
                b.splice(at..end, with);
            }
            let _ = kc::fuzzing::inductor_cache(&b);
        }
    }
}
