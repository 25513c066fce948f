//! CUDA-graph traces linked through an eager twin (`kc ingest GRAPH --eager EAGER`), on the
//! H100 pair in ../shared/examples/h100t2: a GPT-2-shaped decode step profiled while
//! replaying its CUDA graph (360 kernels, none with an op) and the same step run eagerly.

use crate::common::*;
use std::path::{Path, PathBuf};

fn pair() -> (PathBuf, PathBuf) {
    let e = shared().join("examples/h100t2");
    (
        e.join("gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz"),
        e.join("gpt2s4l_decode_b4_eager.pt.trace.json.gz"),
    )
}

fn with_eager(trace: &Path, eager: &Path) -> Result<kc_ir::KernelGraph, String> {
    kc::ingest::ingest(
        &[trace.to_path_buf()],
        &kc::ingest::IngestOptions {
            eager: Some(eager.to_path_buf()),
            ..Default::default()
        },
    )
    .map(|(g, _)| g)
    .map_err(|e| e.to_string())
}

#[test]
fn graph_replayed_kernels_take_the_ops_of_their_eager_twins() {
    let (graph, eager) = pair();
    let (alone, _) = ingest(std::slice::from_ref(&graph));
    assert_eq!(
        alone
            .graph
            .node_weights()
            .filter(|n| n.link.is_linked())
            .count(),
        0
    );
    let mut g = with_eager(&graph, &eager).unwrap();
    // The graph trace's own timings are kept.
    let t0: i64 = alone.graph.node_weights().map(|n| n.dur_ns).sum();
    let t1: i64 = g.graph.node_weights().map(|n| n.dur_ns).sum();
    assert_eq!(t0, t1);
    let linked = g
        .graph
        .node_weights()
        .filter(|n| n.link == kc_ir::LinkStatus::EagerTwin)
        .count();
    assert_eq!(
        linked, 243,
        "81 kernels per iteration align, all with the same geometry"
    );
    kc_ir::verify(&g).unwrap();
    // Lowered: from 0 % to the share the two steps have in common.
    let (_, _) = kc::lower::lower(&mut g).unwrap();
    let s = kc::lower::summary::summarize(&g, &[]);
    assert!(s.pct_replayable_time > 78.0, "{}", s.pct_replayable_time);
    assert_eq!(s.tiers["2"].unique_units, 5);
    // Each graph iteration is its own invocation: no unit claims more invocations than
    // 3 iterations of its op allow.
    let gemm_inv: u64 = s.tiers["2"].invocations;
    assert_eq!(gemm_inv % 3, 0);
    // A twin's op comes with the aten ops that enclosed it, as a trace's own ops do: the
    // dtype copy `cumsum` makes of its input goes with `cumsum`, whose replay makes it
    // (it had been a `copy_` unit of its own, beside a `cumsum` that makes it again).
    let p = kc::plan::build::build(&g);
    let cumsum = p.units.iter().find(|u| u.label == "aten::cumsum").unwrap();
    assert_eq!(cumsum.kernels.len(), 2, "{:?}", cumsum.kernels);
    assert!(!p.units.iter().any(|u| u.label == "aten::copy_"
        && u.kernels.iter().any(|k| k.contains("unrolled_elementwise"))));
}

#[test]
fn a_trace_of_another_model_is_not_taken_for_a_twin() {
    let (graph, _) = pair();
    let e = with_eager(&graph, &h100("bloom560m_seq5")).unwrap_err();
    assert!(
        e.contains("not an eager twin") && e.contains("same grid and block"),
        "{e}"
    );
    // A trace whose kernels have no ops cannot lend any.
    let e = with_eager(&graph, &graph).unwrap_err();
    assert!(e.contains("cannot lend ops"), "{e}");
}

/// A decode step (GPT-2-shaped, 6 layers, batch 8, context 256) captured on an H100 with
/// `traces/capture.py --mode decode --cuda-graph`: the profiler's step markers enclose the
/// graph launches (so its kernels are linked, to a marker, by time), and the eager twin
/// ran the step the graph holds (Python saw a capture in progress, as under capture).
#[test]
fn a_capture_py_graph_trace_aligns_whole_with_its_twin() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/graphreplay");
    let graph = dir.join("gpt2_6l_decode_b8s256_graphreplay.pt.trace.json.gz");
    let eager = dir.join("gpt2_6l_decode_b8s256_eager.pt.trace.json.gz");
    let (mut alone, _) = ingest(std::slice::from_ref(&graph));
    kc::lower::lower(&mut alone).unwrap();
    let s = kc::lower::summary::summarize(&alone, &[]);
    assert_eq!(s.pct_replayable_time, 0.0);
    let mut g = with_eager(&graph, &eager).unwrap();
    let twin = g
        .graph
        .node_weights()
        .filter(|n| n.link == kc_ir::LinkStatus::EagerTwin)
        .count();
    assert_eq!(
        twin, 456,
        "152 kernels per replay, 3 replays, every one aligned"
    );
    kc::lower::lower(&mut g).unwrap();
    let s = kc::lower::summary::summarize(&g, &[]);
    assert!(s.pct_replayable_time >= 99.0, "{}", s.pct_replayable_time);
    assert_eq!(s.tiers["unreplayable"].invocations, 0);
}
