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
//! never linked by guess. The one exception is fills and copies the graph holds no node for
//! (a zero-byte fill: BERT's capture launched 13 fills, its graph replays 12): they are left
//! out where exactly one way of leaving them out aligns the rest kind for kind, and a
//! diagnostic counts them.

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

/// Which of the capture's launches (their coarse kinds, in capture order: 0 kernel, 1
/// copy, 2 fill) the graph keeps, given one iteration's replayed activities' kinds: all
/// where the iteration holds whole replays of them; else the capture with some fills and
/// copies left out (a zero-byte fill or copy makes no graph node), where that alignment is
/// the only one: kernels are never left out, and aligning from the front and from the back
/// must leave out the same launches. `None` where no such alignment exists or it is not
/// unique. The iteration may replay the graph more than once (`k` copies of the kept
/// launches, alike).
pub fn kept_launches(cap: &[u8], rep: &[u8]) -> Option<Vec<usize>> {
    if cap.is_empty() || rep.is_empty() {
        return None;
    }
    if rep.len() % cap.len() == 0 {
        return Some((0..cap.len()).collect());
    }
    let droppable = cap.iter().filter(|&&k| k != 0).count();
    // Left out from the front (or, reversed, from the back): match whenever the kinds
    // agree, else leave out a fill or copy. Matching early is never worse: a fill or copy
    // skipped for a later one of its kind can be swapped with it.
    let align = |cap: &[u8], rep: &[u8]| -> Option<Vec<usize>> {
        let (mut j, mut out) = (0, Vec::new());
        for (i, &k) in cap.iter().enumerate() {
            if j < rep.len() && rep[j] == k {
                j += 1;
            } else if k != 0 {
                out.push(i);
            } else {
                return None;
            }
        }
        (j == rep.len()).then_some(out)
    };
    for k in 1..=rep.len() {
        if rep.len() % k != 0 {
            continue;
        }
        let m = rep.len() / k;
        if m > cap.len() || cap.len() - m > droppable {
            continue;
        }
        let one = &rep[..m];
        if (1..k).any(|r| rep[r * m..(r + 1) * m] != *one) {
            continue;
        }
        let front = align(cap, one)?;
        let rc: Vec<u8> = cap.iter().rev().copied().collect();
        let ro: Vec<u8> = one.iter().rev().copied().collect();
        let mut back: Vec<usize> = align(&rc, &ro)?
            .into_iter()
            .map(|i| cap.len() - 1 - i)
            .collect();
        back.sort_unstable();
        return (front == back).then(|| {
            (0..cap.len())
                .filter(|i| front.binary_search(i).is_err())
                .collect()
        });
    }
    None
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
    // The captured launches the graph keeps, fixed by the first iteration that replays any.
    let mut kept: Option<Vec<NodeId>> = None;
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
            let launches = match &kept {
                Some(k) => k,
                None => {
                    let cap: Vec<u8> = launches
                        .iter()
                        .map(|&i| coarse(&capture.graph[i].kind))
                        .collect();
                    let rep: Vec<u8> = replayed
                        .iter()
                        .map(|&i| coarse(&graph.graph[i].kind))
                        .collect();
                    let keep = kept_launches(&cap, &rep).ok_or_else(|| {
                        format!(
                            "graph iteration {it} of rank {rank} replays {} GPU activities, the \
                             capture launched {}: not the capture of this graph, or a capture that \
                             launched work its graph does not keep, where no one way of leaving \
                             out fills and copies pairs the rest kind for kind (its calls name no \
                             kernel, so they are not paired by guess); the step's eager trace \
                             (capture.py --cuda-graph writes NAME_eager.pt.trace.json.gz) ingests \
                             without it",
                            replayed.len(),
                            launches.len()
                        )
                    })?;
                    let dropped: Vec<usize> = (0..launches.len())
                        .filter(|k| keep.binary_search(k).is_err())
                        .collect();
                    if !dropped.is_empty() {
                        diags.add(
                            "captured_launch_not_replayed",
                            capture_name.to_string(),
                            format!(
                                "{} of the capture's {} launches (fills or copies: {}) have no \
                                 activity in the graph's replays (a graph keeps no node for a \
                                 zero-byte fill or copy): left out, the rest paired kind for kind \
                                 the one way they align",
                                dropped.len(),
                                launches.len(),
                                dropped
                                    .iter()
                                    .map(|&k| format!(
                                        "#{k} ({})",
                                        capture.graph[launches[k]].kind.kind_str()
                                    ))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                    kept.insert(keep.into_iter().map(|k| launches[k]).collect())
                }
            };
            // An iteration may replay the graph more than once; each replay is the capture.
            if replayed.len() % launches.len() != 0 {
                return Err(format!(
                    "graph iteration {it} of rank {rank} replays {} GPU activities, the capture \
                     launched {} that its graph keeps: not the capture of this graph",
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

#[cfg(test)]
mod tests {
    use super::kept_launches;

    /// Kinds from a string: k kernel, c copy, f fill.
    fn kinds(s: &str) -> Vec<u8> {
        s.bytes()
            .map(|b| match b {
                b'k' => 0,
                b'c' => 1,
                _ => 2,
            })
            .collect()
    }

    #[test]
    fn whole_replays_keep_every_launch() {
        assert_eq!(
            kept_launches(&kinds("kfk"), &kinds("kfk")),
            Some(vec![0, 1, 2])
        );
        assert_eq!(
            kept_launches(&kinds("kfk"), &kinds("kfkkfk")),
            Some(vec![0, 1, 2])
        );
    }

    #[test]
    fn a_fill_the_graph_dropped_is_left_out_where_the_alignment_is_unique() {
        // BERT's shape: fills between kernels, the last one without a node in the graph.
        let cap = kinds("kkfkkkfkkkfkk");
        let rep = kinds("kkfkkkfkkkkk");
        assert_eq!(
            kept_launches(&cap, &rep),
            Some(vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12])
        );
        // Twice per iteration, alike.
        let twice: Vec<u8> = rep.iter().chain(rep.iter()).copied().collect();
        assert_eq!(kept_launches(&cap, &twice).map(|k| k.len()), Some(12));
    }

    #[test]
    fn kernels_are_never_left_out_and_ambiguity_is_refused() {
        // A kernel more in the capture than in the replay: not a dropped fill.
        assert_eq!(kept_launches(&kinds("kkfk"), &kinds("kfk")), None);
        // Two fills side by side and one replayed: which one is not known.
        assert_eq!(kept_launches(&kinds("kffk"), &kinds("kfk")), None);
        // A copy where the replay has a fill: no alignment.
        assert_eq!(kept_launches(&kinds("kckf"), &kinds("kfk")), None);
        // Counts that divide keep every launch: the caller checks them kind for kind.
        assert_eq!(
            kept_launches(&kinds("kck"), &kinds("kfk")),
            Some(vec![0, 1, 2])
        );
        // More activities than launches and not whole replays.
        assert_eq!(kept_launches(&kinds("kf"), &kinds("kfk")), None);
        assert_eq!(kept_launches(&kinds("f"), &[]), None);
    }

    proptest::proptest! {
        /// Whatever is kept pairs kind for kind with the replay and leaves out no kernel; one
        /// fill between kernels, dropped, is found.
        #[test]
        fn kept_launches_pair_kind_for_kind(
            cap in proptest::collection::vec(0u8..3, 1..60),
            drop_at in 0usize..60,
        ) {
            let dropped_one: Vec<u8> = cap
                .iter()
                .enumerate()
                .filter(|&(i, &k)| !(i == drop_at && k != 0))
                .map(|(_, &k)| k)
                .collect();
            if let Some(keep) = kept_launches(&cap, &dropped_one) {
                let m = keep.len();
                proptest::prop_assert!(dropped_one.len() % m == 0);
                for (r, &i) in keep.iter().enumerate() {
                    proptest::prop_assert_eq!(cap[i], dropped_one[r]);
                }
                proptest::prop_assert!((0..cap.len())
                    .filter(|i| keep.binary_search(i).is_err())
                    .all(|i| cap[i] != 0));
            }
            let isolated = drop_at < cap.len()
                && cap[drop_at] != 0
                && (drop_at == 0 || cap[drop_at - 1] == 0)
                && cap.get(drop_at + 1).is_none_or(|&k| k == 0);
            if isolated && dropped_one.len() % cap.len() != 0 {
                let keep = kept_launches(&cap, &dropped_one);
                proptest::prop_assert!(keep.is_some());
                proptest::prop_assert!(keep.unwrap().binary_search(&drop_at).is_err());
            }
        }
    }
}
