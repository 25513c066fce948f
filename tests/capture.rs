//! `kc ingest GRAPH --capture CAPTURE --shapes CAPTURE_ET` on a committed pair recorded in
//! one run (fixtures/capture): every kernel the graph replays takes the op that launched it
//! during the capture, with the capture's shapes and tensors, so the whole graph replays
//! over its own memory image; a capture of another graph is refused with both counts; the
//! values recorded for the capture's ops go with every replay's copy of them.

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

/// `--values` keyed by the capture ET's nodes (capture.py writes NAME_capture.values.bin):
/// every graph replay's copy of the op takes the recorded indices, so a replay gathers the
/// rows the captured program gathered.
#[test]
fn a_captures_recorded_values_go_with_every_replay_of_its_ops() {
    // The token embedding's index_select (capture ET node 21) reads four token ids.
    let ids: Vec<u8> = [7i64, 700, 7000, 50000]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let header = serde_json::json!({"format": "kc values 1", "tensors": [
        {"node": 21, "input": 2, "element": null, "dtype": "int64", "shape": [4],
         "offset": 0, "bytes": ids.len()}]})
    .to_string();
    let mut file = b"KCVALUE1".to_vec();
    file.extend_from_slice(&(header.len() as u64).to_le_bytes());
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&ids);
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("capture.values.bin");
    std::fs::write(&values, &file).unwrap();
    let opts = kc::ingest::IngestOptions {
        shapes: Some(fixture("gpt2s4l_decode_b4_capture.et.json.gz")),
        capture: Some(fixture("gpt2s4l_decode_b4_capture.pt.trace.json.gz")),
        values: Some(values),
        ..Default::default()
    };
    let (mut g, _) =
        kc::ingest::ingest(&[fixture("gpt2s4l_decode_b4.pt.trace.json.gz")], &opts).unwrap();
    assert_eq!(
        g.recorded_values.inputs.len(),
        3,
        "one copy per graph replay"
    );
    kc::lower::lower(&mut g).unwrap();
    let p = kc::plan::build::build(&g);
    p.check().unwrap();
    let with_ids: Vec<u32> = (0..p.steps.len() as u32)
        .filter(|&s| {
            let u = &p.units[p.steps[s as usize].unit as usize];
            u.slots
                .iter()
                .any(|&slot| p.values.for_slot(u.id, Some(s), slot) == Some(&ids[..]))
        })
        .collect();
    assert_eq!(with_ids.len(), 3, "the embedding's step of each replay");
}

/// A captured launch's op comes with the aten ops that enclosed it during the capture,
/// nested as there, once per graph replay: lowering then gives a kernel to the op whose
/// replay launches it, as for a trace's own ops. On Swin-T the `copy_` of a layer norm's
/// `contiguous` had stood alone, and the layer norm, replayed on its non-contiguous input,
/// copied again (one extra kernel per iteration).
#[test]
fn a_captured_ops_enclosing_aten_ops_come_with_it() {
    let g = with_capture(&fixture("gpt2s4l_decode_b4.pt.trace.json.gz")).unwrap();
    kc_ir::verify::verify(&g).unwrap();
    // Per kernel in start order, its op's aten chain (innermost first) and the chain's ids.
    let mut ids: Vec<_> = g.graph.node_indices().collect();
    ids.sort_by_key(|&i| (g.graph[i].start_ns, i.index()));
    let chains: Vec<(Vec<String>, Vec<kc_ir::OpId>)> = ids
        .iter()
        .map(|&i| {
            let op = g.graph[i].op.expect("linked by the capture");
            let mut chain = vec![op];
            chain.extend(g.op_chain(op).skip(1).take_while(|&a| g.is_aten_op(a)));
            let names = chain
                .iter()
                .map(|&a| g.str(g.op(a).name).to_string())
                .collect();
            (names, chain)
        })
        .collect();
    assert_eq!(chains.len(), 318);
    // Every replay holds the capture's program: the same chains, on ops of its own.
    let per = chains.len() / 3;
    let names = |r: &[(Vec<String>, Vec<kc_ir::OpId>)]| -> Vec<Vec<String>> {
        r.iter().map(|c| c.0.clone()).collect()
    };
    assert_eq!(names(&chains[..per]), names(&chains[per..2 * per]));
    assert_eq!(names(&chains[..per]), names(&chains[2 * per..]));
    let ops_of = |r: &[(Vec<String>, Vec<kc_ir::OpId>)]| -> std::collections::HashSet<kc_ir::OpId> {
        r.iter().flat_map(|c| c.1.iter().copied()).collect()
    };
    assert!(ops_of(&chains[..per]).is_disjoint(&ops_of(&chains[per..2 * per])));
    // Decode's kernels run inside enclosing aten ops (`linear` around `addmm`, ...).
    let nested = chains[..per].iter().filter(|c| c.0.len() > 1).count();
    assert!(nested > 0, "no captured launch inside an enclosing aten op");
}

#[test]
fn a_captured_fill_its_graph_keeps_no_node_for_is_left_out_the_one_way_it_aligns() {
    // BERT's capture launched 428 calls, 13 of them fills; its graph replays 427 activities,
    // 12 of them fills. Before, kc refused the pair; the last fill (#426) is the only one
    // whose leaving out pairs the rest kind for kind.
    let opts = kc::ingest::IngestOptions {
        capture: Some(fixture("bert12l_b32s256_capture.pt.trace.json.gz")),
        ..Default::default()
    };
    let (g, diags) =
        kc::ingest::ingest(&[fixture("bert12l_b32s256.pt.trace.json.gz")], &opts).unwrap();
    let nodes: Vec<_> = g.graph.node_weights().collect();
    assert_eq!(nodes.len(), 3 * 427, "3 replays of 427 activities");
    assert!(
        nodes.iter().all(|n| n.link == LinkStatus::Capture),
        "every replayed activity linked by the capture"
    );
    let left: Vec<_> = diags
        .iter()
        .filter(|d| d.kind == "captured_launch_not_replayed")
        .collect();
    assert_eq!(left.len(), 1, "{diags:?}");
    assert!(
        left[0].message.contains("1 of the capture's 428 launches")
            && left[0].message.contains("#426 (memset)"),
        "{}",
        left[0].message
    );
    // Each of the replay's fills took a copy of the op that launched a fill in the
    // capture (cuBLAS's workspace inside addmm): paired kind for kind, past the fill
    // left out.
    let fills: Vec<_> = nodes
        .iter()
        .filter(|n| matches!(n.kind, kc_ir::NodeKind::Memset { .. }))
        .collect();
    assert_eq!(fills.len(), 3 * 12);
    assert!(
        fills.iter().all(|n| g.op_name(n.op) == "aten::addmm"),
        "{:?}",
        fills.iter().map(|n| g.op_name(n.op)).collect::<Vec<_>>()
    );
    // The ops keep the capture's external ids: each replay's fills took the first twelve
    // captured fills' ops, in order, and none took the one left out (#426, external id
    // 8732, the pooler's addmm); leaving out another fill would shift them.
    let ext: Vec<u64> = fills
        .iter()
        .map(|n| g.op(n.op.unwrap()).external_id)
        .collect();
    assert!(!ext.contains(&8732), "{ext:?}");
    assert_eq!(ext[0], 6911, "{ext:?}");
    assert!(ext[..12].windows(2).all(|w| w[0] < w[1]), "{ext:?}");
    assert!(ext.chunks(12).all(|c| c == &ext[..12]), "{ext:?}");
}
