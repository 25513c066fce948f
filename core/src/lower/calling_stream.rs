//! Pass 5, calling streams: a tier-3 op whose kernels the trace shows on several streams
//! forked inside the library it called (cuDNN's grouped convolutions run on cuDNN's own
//! streams, forked from the caller's stream and joined back before the op returns). Its
//! replay calls the same op, which forks again, so its step belongs on the stream the op
//! was called on, not on the first of the library's streams: there the plan would fork and
//! join once more around a fork of its own, a side stream in kc's graph that the model's
//! program does not have. The calling stream is not in the trace (runtime calls carry no
//! stream), so it is read off the launching thread: the stream of the last instance that
//! thread launched on one stream before the op (or, for a thread's first op, the first
//! after it).
//!
//! Invariant: only tier-3 instances whose nodes span two or more streams move, each to a
//! stream their rank and device already have; every other instance keeps its first
//! node's stream.

use super::LowerCtx;
use crate::diag::Diagnostic;
use kc_ir::{KernelGraph, Tier};
use std::collections::{BTreeSet, HashMap};

pub fn run(g: &mut KernelGraph, _ctx: &mut LowerCtx) -> Vec<Diagnostic> {
    // Per instance: its launching thread and first launch, and its one stream (None when
    // its nodes span several).
    let launch: Vec<Option<(u64, i64)>> = g
        .instances
        .iter()
        .map(|inst| {
            inst.nodes
                .iter()
                .filter_map(|n| g.graph[*n].launch.as_ref())
                .map(|l| (l.tid, l.start_ns))
                .min_by_key(|&(_, t)| t)
        })
        .collect();
    let stream: Vec<Option<u64>> = g
        .instances
        .iter()
        .map(|inst| {
            let streams: BTreeSet<u64> = inst.nodes.iter().map(|n| g.graph[*n].stream).collect();
            (streams.len() == 1).then_some(inst.stream)
        })
        .collect();
    let forked: Vec<usize> = (0..g.instances.len())
        .filter(|&i| {
            let first = g.instances[i].nodes[0];
            g.classes[first.index()].tier == Tier::Op && stream[i].is_none()
        })
        .collect();
    if forked.is_empty() {
        return Vec::new();
    }
    // The single-stream instances of each launching thread, in launch order.
    let mut by_thread: HashMap<(u32, u32, u64), Vec<(i64, u64)>> = HashMap::new();
    for i in 0..g.instances.len() {
        if let (Some((tid, t)), Some(s)) = (launch[i], stream[i]) {
            let inst = &g.instances[i];
            by_thread
                .entry((inst.rank, inst.device, tid))
                .or_default()
                .push((t, s));
        }
    }
    for list in by_thread.values_mut() {
        list.sort_unstable();
    }
    let mut moved = 0u64;
    let mut example = None;
    for &i in &forked {
        let Some((tid, t)) = launch[i] else {
            continue;
        };
        let inst = &g.instances[i];
        let Some(list) = by_thread.get(&(inst.rank, inst.device, tid)) else {
            continue;
        };
        let k = list.partition_point(|&(at, _)| at < t);
        let calling = k
            .checked_sub(1)
            .map(|k| list[k].1)
            .or_else(|| list.get(k).map(|&(_, s)| s));
        if let Some(to) = calling {
            if to != inst.stream {
                example.get_or_insert_with(|| {
                    (
                        inst.nodes[0].index(),
                        inst.op.map(|op| g.str(g.op(op).name).to_string()),
                        inst.stream,
                        to,
                    )
                });
                g.instances[i].stream = to;
                moved += 1;
            }
        }
    }
    let Some((node, op, from, to)) = example else {
        return Vec::new();
    };
    let mut d = Diagnostic::new(
        "library_fork_on_calling_stream",
        format!("node{node}"),
        format!(
            "{} (its kernels on several streams: the library it called forked) replays on its \
             calling stream {to}, not the library's stream {from}; {moved} such steps in all",
            op.as_deref().unwrap_or("an op")
        ),
    );
    d.count = moved;
    vec![d]
}
