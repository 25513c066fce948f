//! Op linkage for CUDA-graph traces from the graph's own capture (`kc ingest GRAPH
//! --capture CAPTURE`). Kernels a `cudaGraphLaunch` replays carry no op. A profiler trace of
//! the capture of that same graph (`traces/capture.py --cuda-graph` writes one) holds every
//! launch the graph recorded, in capture order, inside the op that made it, with the
//! Execution Trace of the capture giving the ops' shapes and tensors; no kernel runs during
//! a capture, so it holds the runtime calls without GPU activities. Each graph iteration's
//! GPU activities, in start order, are the capture's launches in order: the exact program,
//! where an eager twin may take another path (masks, attention kernels) than the capture.
//!
//! Invariants: the graph trace's own timings are kept; one copy of a captured op per graph
//! iteration, with its arguments and tensors; a graph iteration whose activities do not
//! pair one to one, kind for kind, with the capture's launches is refused with both counts,
//! never linked by guess.

use super::kineto::{FileRecords, GpuKind, GpuRec};
use super::twin::{iterations_of, lend_with_ancestors, wants_op, Lent};
use crate::diag::Diagnostics;
use kc_ir::{Interner, KernelGraph, LinkStatus, NodeId, NodeKind, OpId};
use std::collections::HashMap;

/// The recorded values of the capture's ops (`--values` keyed by the capture ET's nodes)
/// go with every copy of those ops, so a graph replay's integer tensors hold what the
/// captured program's did.
fn lend_values(graph: &mut KernelGraph, capture: &KernelGraph, lent: &[(OpId, OpId)]) {
    let rv = &capture.recorded_values;
    if rv.is_empty() {
        return;
    }
    let mut of_op: HashMap<OpId, Vec<&kc_ir::values::RecordedInput>> = HashMap::new();
    for r in &rv.inputs {
        of_op.entry(r.op).or_default().push(r);
    }
    let mut inputs: Vec<kc_ir::values::RecordedInput> = lent
        .iter()
        .flat_map(|&(cop, op)| {
            of_op.get(&cop).into_iter().flatten().map(move |r| {
                let mut r = (*r).clone();
                r.op = op;
                r
            })
        })
        .collect();
    inputs.sort_by_key(|r| (r.op, r.input, r.element));
    graph.recorded_values = kc_ir::values::RecordedValues {
        source: rv.source.clone(),
        blobs: rv.blobs.clone(),
        inputs,
    };
}

/// The name given to a launch recorded during a capture (the trace does not name the
/// kernel: it did not run).
pub const CAPTURED_LAUNCH: &str = "(launched during capture)";

/// What a launch API puts into a graph under capture, by the API's name.
fn captured_kind(api: &str) -> Option<GpuKind> {
    if api.contains("LaunchKernel") || api.contains("LaunchCooperativeKernel") {
        Some(GpuKind::Kernel)
    } else if api.contains("Memcpy") && api.contains("Async") {
        Some(GpuKind::Memcpy)
    } else if api.contains("Memset") && api.contains("Async") {
        Some(GpuKind::Memset)
    } else {
        None
    }
}

/// Turns each launch, copy and fill call of a capture trace that has no GPU activity into
/// one (named [`CAPTURED_LAUNCH`], at the call's time, on stream 0), so the graph builder
/// links it to the op that made the call like any other. Returns how many it made.
pub fn synthesize_launches(recs: &mut FileRecords, strings: &mut Interner) -> usize {
    let ran: std::collections::HashSet<u64> = recs.gpu.iter().map(|g| g.correlation).collect();
    // Between the capture's begin and end calls where the trace has them (kernels that ran
    // around the capture, to zero a pool or warm up, are not in the graph).
    let at = |api: &str| {
        recs.runtime
            .values()
            .filter(|r| strings.get(r.api).contains(api))
            .map(|r| r.ts_ns)
            .collect::<Vec<_>>()
    };
    let begin = at("StreamBeginCapture")
        .into_iter()
        .min()
        .unwrap_or(i64::MIN);
    let end = at("StreamEndCapture").into_iter().max().unwrap_or(i64::MAX);
    let name = strings.intern(CAPTURED_LAUNCH);
    let mut made: Vec<GpuRec> = recs
        .runtime
        .iter()
        .filter(|(c, rt)| !ran.contains(c) && (begin..=end).contains(&rt.ts_ns))
        .filter_map(|(&correlation, rt)| {
            let kind = captured_kind(strings.get(rt.api))?;
            Some(GpuRec {
                kind,
                name,
                device: 0,
                stream: 0,
                ts_ns: rt.ts_ns,
                dur_ns: 0,
                correlation,
                external_id: rt.external_id,
                geometry: None,
                bytes: rt.size,
                memcpy_kind: kc_ir::MemcpyKind::Unknown,
                event_index: rt.index,
            })
        })
        .collect();
    made.sort_by_key(|g| (g.ts_ns, g.event_index));
    let n = made.len();
    recs.gpu.extend(made);
    n
}

/// What the linkage achieved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaptureSummary {
    /// Launches the capture recorded, and graph iterations linked to them.
    pub captured_launches: usize,
    pub iterations: usize,
    /// GPU activities that took a captured op.
    pub linked: usize,
}

/// The coarse kind a capture can tell: kernel, copy or fill.
fn coarse(k: &NodeKind) -> u8 {
    match k {
        NodeKind::Kernel { .. } | NodeKind::Collective { .. } => 0,
        NodeKind::Memcpy { .. } => 1,
        NodeKind::Memset { .. } => 2,
    }
}

/// Links every graph-launched GPU activity of `graph` to a copy of the op that launched it
/// during `capture`, iteration by iteration. Errors name the iteration and both counts.
pub fn link_from_capture(
    graph: &mut KernelGraph,
    capture: &KernelGraph,
    capture_name: &str,
    diags: &mut Diagnostics,
) -> Result<CaptureSummary, String> {
    // Only what the capture recorded: kernels the capture trace saw run were not captured.
    let captured = capture.strings.lookup(CAPTURED_LAUNCH);
    let mut launches: Vec<NodeId> = capture
        .graph
        .node_indices()
        .filter(|&i| Some(capture.graph[i].kind.name()) == captured)
        .collect();
    launches.sort_by_key(|&i| (capture.graph[i].start_ns, i.index()));
    if launches.is_empty() {
        return Err(
            "the capture trace holds no launch, copy or fill call: profile the capture \
                    itself (traces/capture.py --cuda-graph writes NAME_capture.pt.trace.json.gz)"
                .into(),
        );
    }
    let mut ranks: Vec<u32> = graph.graph.node_weights().map(|n| n.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut arg_list_of: HashMap<u32, u32> = HashMap::new();
    let mut matches: Vec<(NodeId, OpId)> = Vec::new();
    let mut summary = CaptureSummary {
        captured_launches: launches.len(),
        ..Default::default()
    };
    let mut streams_seen = 1usize;
    // Each captured op and its copies, for the values the capture's ops hold.
    let mut lent: Vec<(OpId, OpId)> = Vec::new();
    for &rank in &ranks {
        for (it, ids) in iterations_of(graph, rank).iter().enumerate() {
            let replayed: Vec<NodeId> = ids
                .iter()
                .copied()
                .filter(|&i| graph.is_graph_launched(&graph.graph[i]) && wants_op(graph, i))
                .collect();
            if replayed.is_empty() {
                continue;
            }
            // An iteration may replay the graph more than once; each replay is the capture.
            if replayed.len() % launches.len() != 0 {
                return Err(format!(
                    "graph iteration {it} of rank {rank} replays {} GPU activities, the capture \
                     launched {}: not the capture of this graph, or a capture that launched \
                     work its graph does not keep (its calls name no kernel, so they are not \
                     paired by guess); the step's eager trace (capture.py --cuda-graph writes \
                     NAME_eager.pt.trace.json.gz) ingests without it",
                    replayed.len(),
                    launches.len()
                ));
            }
            let mut streams: Vec<u64> = replayed.iter().map(|&i| graph.graph[i].stream).collect();
            streams.sort_unstable();
            streams.dedup();
            streams_seen = streams_seen.max(streams.len());
            for chunk in replayed.chunks(launches.len()) {
                if let Some(k) = (0..chunk.len()).find(|&k| {
                    coarse(&graph.graph[chunk[k]].kind) != coarse(&capture.graph[launches[k]].kind)
                }) {
                    return Err(format!(
                        "graph iteration {it} of rank {rank}: GPU activity {k} is a {} where the \
                         capture launched a {}: not the capture of this graph",
                        graph.graph[chunk[k]].kind.kind_str(),
                        capture.graph[launches[k]].kind.kind_str()
                    ));
                }
                // One copy of each captured op per graph replay.
                let mut copy_of: HashMap<OpId, OpId> = HashMap::new();
                for (k, &gid) in chunk.iter().enumerate() {
                    let Some(cop) = capture.graph[launches[k]].op else {
                        continue;
                    };
                    let op = lend_with_ancestors(
                        graph,
                        capture,
                        cop,
                        rank,
                        &mut arg_list_of,
                        true,
                        Lent {
                            copy_of: &mut copy_of,
                            all: &mut lent,
                        },
                    );
                    matches.push((gid, op));
                }
                summary.iterations += 1;
            }
        }
    }
    graph.compiled_launches.sort_by_key(|l| l.op);
    lend_values(graph, capture, &lent);
    for &(gid, op) in &matches {
        let n = &mut graph.graph[gid];
        n.op = Some(op);
        n.link = LinkStatus::Capture;
    }
    summary.linked = matches.len();
    if streams_seen > 1 {
        diags.add(
            "capture_multi_stream",
            capture_name.to_string(),
            format!(
                "the graph ran on {streams_seen} streams: its activities are paired with the \
                 capture's launches in start order, which branches running side by side may swap"
            ),
        );
    }
    let without_op = launches
        .iter()
        .filter(|&&i| capture.graph[i].op.is_none())
        .count();
    if without_op > 0 {
        diags.add(
            "captured_launch_without_op",
            capture_name.to_string(),
            format!("{without_op} of {} captured launches have no enclosing op: their graph kernels stay unlinked", launches.len()),
        );
    }
    Ok(summary)
}
