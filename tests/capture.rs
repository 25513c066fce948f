//! `kc ingest GRAPH --capture CAPTURE --shapes CAPTURE_ET` on a committed pair recorded in
//! one run (fixtures/capture): every kernel the graph replays takes the op that launched it
//! during the capture, with the capture's shapes and tensors, so the whole graph replays
//! over its own memory image; a capture of another graph is refused with both counts.

use kc::plan::types::PlanTier;
use kc_ir::LinkStatus;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/capture")
        .join(name)
}

fn with_capture(graph: &Path) -> Result<kc_ir::KernelGraph, String> {
    let opts = kc::ingest::IngestOptions {
        shapes: Some(fixture("gpt2s4l_decode_b4_capture.et.json.gz")),
        capture: Some(fixture("gpt2s4l_decode_b4_capture.pt.trace.json.gz")),
        ..Default::default()
    };
    kc::ingest::ingest(&[graph.to_path_buf()], &opts)
        .map(|(g, _)| g)
        .map_err(|e| e.to_string())
}

#[test]
fn every_replayed_kernel_takes_the_op_that_launched_it_during_the_capture() {
    let mut g = with_capture(&fixture("gpt2s4l_decode_b4.pt.trace.json.gz")).unwrap();
    let nodes: Vec<_> = g.graph.node_weights().collect();
    assert_eq!(nodes.len(), 318, "3 replays of 106 kernels");
    assert!(
        nodes.iter().all(|n| n.link == LinkStatus::Capture),
        "every replayed kernel linked by the capture"
    );
    // The linked ops carry the capture's shapes and tensors.
    assert!(
        !g.tensor_refs.is_empty(),
        "the capture's Execution Trace tensors"
    );
    kc::lower::lower(&mut g).unwrap();
    assert_eq!(g.dataflow.source, kc_ir::DataflowSource::ExecutionTrace);
    let p = kc::plan::build::build(&g);
    p.check().unwrap();
    assert_eq!(
        p.header.replayable_traced_ns, p.header.traced_gpu_ns,
        "the whole graph replays"
    );
    assert!(p.units.iter().all(|u| u.tier != PlanTier::NotReplayable));
    // One copy of the captured ops per replay: each replay is its own set of instances.
    assert_eq!(p.iterations.count, 3);
    assert_eq!(p.steps.len() % 3, 0);
}

#[test]
fn a_capture_of_another_graph_is_refused_with_both_counts() {
    // The shared decode example is a graph of 120 kernels per replay, recorded in another
    // run: the 106 captured launches cannot be its program.
    let other = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/examples/h100t2/gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz");
    if !other.exists() {
        eprintln!("skipped: ../shared is not beside the checkout");
        return;
    }
    let e = with_capture(&other).unwrap_err();
    assert!(
        e.contains("replays 120 GPU activities, the capture launched 106"),
        "{e}"
    );
    assert!(
        e.contains("gpt2s4l_decode_b4_capture.pt.trace.json.gz"),
        "{e}"
    );
}

#[test]
fn a_trace_whose_kernels_ran_is_no_capture() {
    // The graph trace itself: its kernels ran, so it recorded no captured launch.
    let opts = kc::ingest::IngestOptions {
        capture: Some(fixture("gpt2s4l_decode_b4.pt.trace.json.gz")),
        ..Default::default()
    };
    let e = kc::ingest::ingest(&[fixture("gpt2s4l_decode_b4.pt.trace.json.gz")], &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds no launch"), "{e}");
}
