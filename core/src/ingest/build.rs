//! Builds the kernel graph from per-file records: nests ops into a parent tree per thread,
//! links every GPU activity to its runtime call (correlation) and launching op (External
//! id, else time nesting of the runtime call), orders nodes, adds stream-order,
//! cross-stream and host-sync edges, assigns iterations and counts unique signatures.
//!
//! Invariant: nodes are numbered in (rank, start, device, stream, correlation) order, the
//! graph keeps only the ops some node links to plus their ancestors, and every kept op's
//! parent has a smaller id.

use super::args::typed_args_from_text;
use super::kineto::{FileRecords, GpuKind, GpuRec, HostCallKind, OpRec};
use crate::diag::Diagnostics;
use kc_ir::graph::Iteration;
use kc_ir::text::tensor_str;
use kc_ir::{
    ArgsSource, CollectiveInfo, CpuOp, Edge, EdgeKind, Interner, KernelGraph, Launch, LinkStatus,
    Node, NodeId, NodeKind, OpArg, OpId, RankInfo, Signature, StrId,
};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;

/// One input file's records and metadata.
pub struct RankInput {
    pub info: RankInfo,
    pub recs: FileRecords,
    /// File name for diagnostics.
    pub location: String,
}

/// Op nesting and lookup tables of one rank.
struct OpIndex<'a> {
    ops: &'a [OpRec],
    parent: Vec<Option<usize>>,
    by_external: HashMap<u64, usize>,
    /// Per thread, op indices sorted by (start, longest first).
    by_tid: HashMap<u64, Vec<usize>>,
}

impl<'a> OpIndex<'a> {
    fn new(ops: &'a [OpRec]) -> Self {
        let mut by_tid: HashMap<u64, Vec<usize>> = HashMap::default();
        for (i, o) in ops.iter().enumerate() {
            by_tid.entry(o.tid).or_default().push(i);
        }
        let mut parent = vec![None; ops.len()];
        for list in by_tid.values_mut() {
            list.sort_by_key(|&i| (ops[i].ts_ns, std::cmp::Reverse(ops[i].dur_ns), ops[i].index));
            let mut stack: Vec<usize> = Vec::new();
            for &i in list.iter() {
                let (s, e) = (ops[i].ts_ns, ops[i].ts_ns + ops[i].dur_ns);
                while let Some(&top) = stack.last() {
                    let top_end = ops[top].ts_ns + ops[top].dur_ns;
                    if s >= ops[top].ts_ns && e <= top_end {
                        break;
                    }
                    stack.pop();
                }
                parent[i] = stack.last().copied();
                stack.push(i);
            }
        }
        let mut by_external = HashMap::with_capacity_and_hasher(ops.len(), Default::default());
        for (i, o) in ops.iter().enumerate() {
            if o.external_id != 0 {
                // The first op in the file with an id wins when ids repeat.
                by_external
                    .entry(o.external_id)
                    .and_modify(|e: &mut usize| {
                        if o.index < ops[*e].index {
                            *e = i;
                        }
                    })
                    .or_insert(i);
            }
        }
        Self {
            ops,
            parent,
            by_external,
            by_tid,
        }
    }

    /// The innermost op on `tid` whose range contains `t`.
    fn innermost(&self, tid: u64, t: i64) -> Option<usize> {
        let list = self.by_tid.get(&tid)?;
        let k = list.partition_point(|&i| self.ops[i].ts_ns <= t);
        let mut cur = list.get(k.checked_sub(1)?).copied();
        while let Some(i) = cur {
            let o = &self.ops[i];
            if o.ts_ns <= t && t <= o.ts_ns + o.dur_ns {
                return Some(i);
            }
            cur = self.parent[i];
        }
        None
    }

    fn collective_in_chain(&self, mut cur: Option<usize>) -> Option<CollectiveInfo> {
        while let Some(i) = cur {
            if let Some(c) = &self.ops[i].collective {
                return Some((**c).clone());
            }
            cur = self.parent[i];
        }
        None
    }
}

fn is_collective_kernel(name: &str) -> bool {
    let lower = name.as_bytes();
    lower.windows(4).any(|w| w.eq_ignore_ascii_case(b"nccl"))
        || name.starts_with("rccl")
        || name.contains("rcclKernel")
}

/// One rank's ops, their parents, and the kept ops in (thread, start, longest first) order.
type RankOps = (Vec<OpRec>, Vec<Option<usize>>, Vec<usize>);

/// A node before numbering, with the rank-local op index it links to.
struct PendingNode {
    node: Node,
    event_index: u64,
    local_op: Option<usize>,
    launch_ts: i64,
    launch_tid: Option<u64>,
}

struct RankTables {
    base: i64,
}

fn abs(t: &RankTables, ts: i64, diags: &mut Diagnostics, location: &str) -> i64 {
    t.base.checked_add(ts).unwrap_or_else(|| {
        diags.add(
            "time_overflow",
            location,
            "timestamp + baseTimeNanoseconds overflows i64",
        );
        ts
    })
}

pub fn build(inputs: Vec<RankInput>, strings: Interner, diags: &mut Diagnostics) -> KernelGraph {
    let mut pending: Vec<PendingNode> = Vec::new();
    let mut collective_name: Vec<Option<bool>> = Vec::new();
    // Per rank: kept ops as (rank position, local index).
    let mut rank_ops: Vec<RankOps> = Vec::new();
    let mut meta = Vec::new();
    let mut host_calls = Vec::new();
    let mut cuda_syncs = Vec::new();
    let mut arg_blobs = Vec::new();
    let mut iterations = Vec::new();

    for (pos, input) in inputs.into_iter().enumerate() {
        let RankInput {
            info,
            recs,
            location,
        } = input;
        let FileRecords {
            gpu,
            runtime,
            host_calls: calls,
            ops,
            cuda_syncs: syncs,
            arg_blobs: blobs,
            rocm,
            ..
        } = recs;
        // Absolute Unix-epoch microsecond timestamps (legacy traces) ignore the base.
        let base = if gpu
            .first()
            .is_some_and(|g| g.ts_ns > 1_000_000_000_000_000_000)
        {
            0
        } else {
            info.base_time_ns
        };
        let tables = RankTables { base };
        let index = OpIndex::new(&ops);
        let mut referenced = vec![false; ops.len()];
        if runtime.is_empty() && !gpu.is_empty() {
            diags.add(
                "no_runtime_events",
                location.clone(),
                "the trace holds no CUDA runtime events: GPU work is linked to ops by External \
                 id only, and launch APIs and host-side waits are unknown",
            );
        }
        let mut correlations: rustc_hash::FxHashMap<u64, u64> = Default::default();
        for g in &gpu {
            let rt = runtime.get(&g.correlation);
            if rt.is_none() && !runtime.is_empty() {
                diags.add(
                    "gpu_op_without_runtime_call",
                    format!("{location} event {}", g.event_index),
                    format!(
                        "correlation {} matches no runtime call: its launch is unknown",
                        g.correlation
                    ),
                );
            }
            // One runtime call launches one GPU activity, except a graph launch.
            if let Some(first) = correlations.insert(g.correlation, g.event_index) {
                let graph_launch = rt.is_some_and(|r| {
                    let api = strings.get(r.api);
                    api.contains("GraphLaunch")
                });
                if !graph_launch {
                    diags.add(
                        "duplicate_correlation",
                        format!("{location} event {}", g.event_index),
                        format!(
                            "correlation {} already used by event {first}, and its call is no \
                             graph launch: the two are linked to the same launch",
                            g.correlation
                        ),
                    );
                }
            }
            let ext = g.external_id.or(rt.and_then(|r| r.external_id));
            let (local_op, link) = match ext.and_then(|e| index.by_external.get(&e)) {
                Some(&i) => (Some(i), LinkStatus::ExternalId),
                None => match rt {
                    None => (None, LinkStatus::NoRuntimeCall),
                    Some(r) => match index.innermost(r.tid, r.ts_ns) {
                        Some(i) => (Some(i), LinkStatus::TimeNesting),
                        None => (None, LinkStatus::NoEnclosingOp),
                    },
                },
            };
            if let Some(i) = local_op {
                referenced[i] = true;
            }
            // Whether a name is a collective is decided once per distinct name.
            let id = g.name.0 as usize;
            if collective_name.len() <= id {
                collective_name.resize(strings.len().max(id + 1), None);
            }
            let is_collective = *collective_name[id]
                .get_or_insert_with(|| is_collective_kernel(strings.get(g.name)));
            let kind = node_kind(g, is_collective, rt.and_then(|r| r.size), &index, local_op);
            let launch = rt.map(|r| Launch {
                api: r.api,
                tid: r.tid,
                start_ns: abs(&tables, r.ts_ns, diags, &location),
                dur_ns: r.dur_ns,
            });
            let start_ns = abs(&tables, g.ts_ns, diags, &location);
            pending.push(PendingNode {
                event_index: g.event_index,
                launch_ts: launch.as_ref().map_or(start_ns, |l| l.start_ns),
                launch_tid: launch.as_ref().map(|l| l.tid),
                node: Node {
                    kind,
                    rank: info.rank,
                    device: g.device,
                    stream: g.stream,
                    start_ns,
                    dur_ns: g.dur_ns,
                    correlation: g.correlation,
                    launch,
                    op: None,
                    link,
                    iteration: None,
                    signature: 0,
                },
                local_op: local_op.map(|i| i + (pos << 40)),
            });
        }
        // Keep referenced ops and their ancestors.
        let mut keep = referenced.clone();
        for (i, _) in referenced.iter().enumerate().filter(|(_, r)| **r) {
            let mut cur = index.parent[i];
            while let Some(p) = cur {
                if keep[p] {
                    break;
                }
                keep[p] = true;
                cur = index.parent[p];
            }
        }
        for (i, o) in ops.iter().enumerate() {
            if o.kind == kc_ir::OpKind::Annotation {
                if let Some(step) = strings
                    .get(o.name)
                    .strip_prefix("ProfilerStep#")
                    .and_then(|s| s.parse::<u32>().ok())
                {
                    // Kept, so the graph says where its iterations came from.
                    keep[i] = true;
                    iterations.push(Iteration {
                        rank: info.rank,
                        step,
                        start_ns: abs(&tables, o.ts_ns, diags, &location),
                        end_ns: abs(&tables, o.ts_ns + o.dur_ns, diags, &location),
                    });
                }
            }
        }
        for c in calls {
            host_calls.push((
                info.rank,
                c.kind,
                c.tid,
                abs(&tables, c.ts_ns, diags, &location),
                abs(&tables, c.end_ns, diags, &location),
            ));
        }
        for s in syncs {
            let bound = s
                .record_correlation
                .and_then(|c| runtime.get(&c))
                .map(|r| r.ts_ns)
                .unwrap_or(s.ts_ns);
            let wait_at = runtime
                .get(&s.correlation)
                .map(|r| r.ts_ns + r.dur_ns)
                .unwrap_or(s.ts_ns);
            if s.kind.contains("Wait") {
                if let (Some(stream), Some(src)) = (s.stream, s.wait_on_stream) {
                    cuda_syncs.push((
                        info.rank,
                        src,
                        abs(&tables, bound, diags, &location),
                        stream,
                        abs(&tables, wait_at, diags, &location),
                    ));
                }
            }
        }
        // The per-thread start order is kept: it numbers the kept ops without a second sort.
        let mut tids: Vec<u64> = index.by_tid.keys().copied().collect();
        tids.sort_unstable();
        let op_order: Vec<usize> = tids
            .iter()
            .flat_map(|t| index.by_tid[t].iter().copied())
            .filter(|&i| keep[i])
            .collect();
        let parent = index.parent.clone();
        drop(index);
        let mut m = info;
        m.rocm |= rocm;
        meta.push((m, tables.base));
        arg_blobs.push(blobs);
        rank_ops.push((ops, parent, op_order));
    }

    // Number the kept ops: per rank, per thread, by (start, longest first).
    let mut op_ids: Vec<Vec<Option<OpId>>> = Vec::new();
    let mut cpu_ops: Vec<CpuOp> = Vec::new();
    let mut arg_lists: Vec<Vec<OpArg>> = vec![Vec::new()];
    let mut compiled_launches: Vec<kc_ir::CompiledLaunch> = Vec::new();
    for (pos, (ops, parent, order)) in rank_ops.iter().enumerate() {
        let (info, base) = &meta[pos];
        let mut ids = vec![None; ops.len()];
        // Each distinct argument text is parsed once and shared by the ops that have it.
        let mut list_of_blob: HashMap<u32, (u32, ArgsSource)> = HashMap::default();
        for &i in order {
            let o = &ops[i];
            let id = OpId(cpu_ops.len() as u32);
            ids[i] = Some(id);
            let (args, args_source) = match o.args_blob {
                Some(b) => *list_of_blob.entry(b).or_insert_with(|| {
                    let t = &arg_blobs[pos][b as usize];
                    let args = typed_args_from_text(&t.dims, &t.strides, &t.types, &t.concrete);
                    let has_shapes = args.iter().any(|a| !matches!(a, OpArg::None));
                    arg_lists.push(args);
                    (
                        (arg_lists.len() - 1) as u32,
                        if has_shapes {
                            ArgsSource::Trace
                        } else {
                            ArgsSource::None
                        },
                    )
                }),
                None => (0, ArgsSource::None),
            };
            if let Some(c) = &o.compiled {
                compiled_launches.push(kc_ir::CompiledLaunch {
                    op: id,
                    ..(**c).clone()
                });
            }
            cpu_ops.push(CpuOp {
                name: o.name,
                kind: o.kind,
                rank: info.rank,
                tid: o.tid,
                start_ns: base.saturating_add(o.ts_ns),
                dur_ns: o.dur_ns,
                external_id: o.external_id,
                record_function_id: o.record_function_id,
                sequence_number: o.sequence_number,
                parent: parent[i].and_then(|p| ids[p]),
                args,
                args_source,
            });
        }
        op_ids.push(ids);
    }

    // Number nodes.
    pending.sort_by_key(|p| {
        (
            p.node.rank,
            p.node.start_ns,
            p.node.device,
            p.node.stream,
            p.node.correlation,
            p.event_index,
        )
    });
    // Host calls and sync records in time order, whatever order they were collected in.
    host_calls.sort_by_key(|c| (c.0, c.3, c.4, c.2, c.1));
    cuda_syncs.sort();
    let mut graph = KernelGraph {
        meta: kc_ir::TraceMeta {
            ranks: meta.into_iter().map(|(m, _)| m).collect(),
        },
        ..Default::default()
    };
    let mut launch_info = Vec::with_capacity(pending.len());
    for p in pending {
        let mut node = p.node;
        if let Some(packed) = p.local_op {
            let (pos, i) = (packed >> 40, packed & ((1 << 40) - 1));
            node.op = op_ids[pos][i];
        }
        launch_info.push((p.launch_ts, p.launch_tid));
        graph.graph.add_node(node);
    }
    graph.ops = cpu_ops;
    graph.arg_lists = arg_lists;
    compiled_launches.sort_by_key(|l| l.op);
    graph.compiled_launches = compiled_launches;
    iterations.sort_by_key(|it: &Iteration| (it.rank, it.start_ns));
    if iterations.is_empty() {
        iterations = repeating_iterations(&graph, &launch_info);
    }
    assign_iterations(&mut graph, &iterations, &launch_info);
    graph.iterations = iterations;
    add_edges(&mut graph, &launch_info, &host_calls, &cuda_syncs);
    graph.strings = strings;
    diagnose_stream_overlaps(&graph, diags);
    reassign_signatures(&mut graph);
    graph
}

/// Work on one stream runs in order: an activity that starts before its predecessor on the
/// same stream ends means clock skew, a merged or edited trace, or programmatic dependent
/// launch. Counted, with the first few named; overlaps under a microsecond are clock noise.
fn diagnose_stream_overlaps(g: &KernelGraph, diags: &mut Diagnostics) {
    const TOLERANCE_NS: i64 = 1000;
    let mut last_end: HashMap<StreamKey, (i64, usize)> = HashMap::default();
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        let key = (n.rank, n.device, n.stream);
        if let Some(&(end, prev)) = last_end.get(&key) {
            if n.start_ns + TOLERANCE_NS < end {
                diags.add(
                    "overlap_on_stream",
                    format!("rank {} stream {} node {}", n.rank, n.stream, id.index()),
                    format!(
                        "starts {} ns before node {prev} on the same stream ends",
                        end - n.start_ns
                    ),
                );
            }
        }
        let end = n.start_ns + n.dur_ns;
        let e = last_end.entry(key).or_insert((end, id.index()));
        if end >= e.0 {
            *e = (end, id.index());
        }
    }
}

/// Recomputes unique signatures, e.g. after shapes were merged in.
pub fn reassign_signatures(g: &mut KernelGraph) {
    let mut strings = std::mem::take(&mut g.strings);
    assign_signatures(g, &mut strings);
    g.strings = strings;
}

fn node_kind(
    g: &GpuRec,
    is_collective: bool,
    runtime_size: Option<u64>,
    index: &OpIndex<'_>,
    op: Option<usize>,
) -> NodeKind {
    match g.kind {
        GpuKind::Memcpy => NodeKind::Memcpy {
            name: g.name,
            kind: g.memcpy_kind,
            bytes: g.bytes.or(runtime_size).unwrap_or(0),
        },
        GpuKind::Memset => NodeKind::Memset {
            name: g.name,
            bytes: g.bytes.or(runtime_size).unwrap_or(0),
        },
        GpuKind::Kernel => {
            let geometry = g.geometry.unwrap_or(kc_ir::KernelGeometry {
                grid: [1; 3],
                block: [1; 3],
                registers_per_thread: 0,
                shared_memory: 0,
            });
            if is_collective {
                NodeKind::Collective {
                    name: g.name,
                    geometry,
                    info: index.collective_in_chain(op).unwrap_or_default(),
                }
            } else {
                NodeKind::Kernel {
                    name: g.name,
                    geometry,
                }
            }
        }
    }
}

/// Iterations of a trace without `ProfilerStep#N` markers, where the GPU work repeats: per
/// rank, the sequence of kernel, copy and memset names in launch order is `k >= 2` exact
/// repetitions of a period; each repetition becomes an iteration spanning its launches.
/// When several periods fit (a stack of identical layers repeats with every layer too), the
/// iteration is the shortest one the host paused between: every launch gap at its
/// boundaries at least twice the median gap inside (a profiling loop steps the profiler
/// between iterations, while one layer follows another at the launch rate). When none
/// fits, or several fit and none shows the pause, no iterations are found and `kc ingest`
/// says so rather than guess.
pub fn repeating_iterations(g: &KernelGraph, launch: &[(i64, Option<u64>)]) -> Vec<Iteration> {
    let mut by_rank: BTreeMap<u32, Vec<(i64, usize)>> = BTreeMap::new();
    for id in g.graph.node_indices() {
        by_rank
            .entry(g.graph[id].rank)
            .or_default()
            .push((launch[id.index()].0, id.index()));
    }
    let mut out = Vec::new();
    for (rank, mut seq) in by_rank {
        seq.sort_unstable();
        let names: Vec<u32> = seq
            .iter()
            .map(|&(_, i)| g.graph[NodeId::new(i)].kind.name().0)
            .collect();
        let n = names.len();
        let gap = |i: usize| seq[i].0 - seq[i - 1].0;
        let paused_between = |p: usize| {
            let mut inside: Vec<i64> = (1..n).filter(|i| i % p != 0).map(gap).collect();
            if inside.is_empty() {
                return false;
            }
            inside.sort_unstable();
            let median = inside[inside.len() / 2];
            (p..n).step_by(p).map(gap).all(|g| g >= 2 * median.max(1))
        };
        let periods: Vec<usize> = (1..=n / 2)
            .filter(|p| n % p == 0)
            .filter(|&p| (p..n).all(|i| names[i] == names[i - p]))
            .collect();
        let p = match periods.as_slice() {
            [] => continue,
            [only] => *only,
            several => match several.iter().copied().find(|&p| paused_between(p)) {
                Some(p) => p,
                None => continue,
            },
        };
        for (k, block) in seq.chunks(p).enumerate() {
            out.push(Iteration {
                rank,
                step: k as u32,
                start_ns: block[0].0,
                end_ns: block[block.len() - 1].0,
            });
        }
    }
    out
}

fn assign_iterations(g: &mut KernelGraph, its: &[Iteration], launch: &[(i64, Option<u64>)]) {
    if its.is_empty() {
        return;
    }
    for (k, n) in g.graph.node_weights_mut().enumerate() {
        let t = launch[k].0;
        let i = its.partition_point(|it| (it.rank, it.start_ns) <= (n.rank, t));
        if let Some(it) = i.checked_sub(1).map(|i| &its[i]) {
            if it.rank == n.rank && t <= it.end_ns {
                n.iteration = Some(it.step);
            }
        }
    }
}

type StreamKey = (u32, u32, u64);

fn add_edges(
    g: &mut KernelGraph,
    launch: &[(i64, Option<u64>)],
    host_calls: &[(u32, HostCallKind, u64, i64, i64)],
    cuda_syncs: &[(u32, u64, i64, u64, i64)],
) {
    let mut streams: HashMap<StreamKey, Vec<NodeId>> = HashMap::default();
    for id in g.graph.node_indices() {
        let n = &g.graph[id];
        streams
            .entry((n.rank, n.device, n.stream))
            .or_default()
            .push(id);
    }
    let mut keys: Vec<StreamKey> = streams.keys().copied().collect();
    keys.sort();
    let mut seen: HashSet<(u32, u32)> = HashSet::default();
    let mut edges: Vec<(NodeId, NodeId, EdgeKind)> = Vec::new();
    for k in &keys {
        for w in streams[k].windows(2) {
            edges.push((w[0], w[1], EdgeKind::StreamOrder));
            seen.insert((w[0].index() as u32, w[1].index() as u32));
        }
    }
    // Launch times per stream, for "last launched before" / "first launched after".
    let launch_ts = |id: NodeId| launch[id.index()].0;
    let last_before = |list: &[NodeId], t: i64| -> Option<NodeId> {
        let k = list.partition_point(|&id| launch_ts(id) < t);
        k.checked_sub(1).map(|k| list[k])
    };
    let first_after = |list: &[NodeId], t: i64| -> Option<NodeId> {
        let k = list.partition_point(|&id| launch_ts(id) <= t);
        list.get(k).copied()
    };
    let rank_streams = |rank: u32| keys.iter().filter(move |k| k.0 == rank);

    // Host synchronisations order everything launched before after everything after.
    for &(rank, kind, _tid, t0, t1) in host_calls {
        if kind != HostCallKind::Synchronize {
            continue;
        }
        let srcs: Vec<NodeId> = rank_streams(rank)
            .filter_map(|k| last_before(&streams[k], t0))
            .collect();
        let dsts: Vec<NodeId> = rank_streams(rank)
            .filter_map(|k| first_after(&streams[k], t1))
            .collect();
        for &s in &srcs {
            for &d in &dsts {
                let (a, b) = (&g.graph[s], &g.graph[d]);
                if (a.device, a.stream) != (b.device, b.stream) {
                    edges.push((s, d, EdgeKind::HostSync));
                }
            }
        }
    }
    // CUPTI cuda_sync "Stream Wait Event" records name both streams.
    let ranks_with_sync: HashSet<u32> = cuda_syncs.iter().map(|s| s.0).collect();
    for &(rank, src_stream, bound, dst_stream, wait_at) in cuda_syncs {
        let src = rank_streams(rank)
            .filter(|k| k.2 == src_stream)
            .filter_map(|k| last_before(&streams[k], bound))
            .max_by_key(|id| launch_ts(*id));
        let dst = rank_streams(rank)
            .filter(|k| k.2 == dst_stream)
            .filter_map(|k| first_after(&streams[k], wait_at))
            .min_by_key(|id| launch_ts(*id));
        if let (Some(s), Some(d)) = (src, dst) {
            if src_stream != dst_stream {
                edges.push((s, d, EdgeKind::CudaSyncEvent));
            }
        }
    }
    // Without cuda_sync records: a host cudaStreamWaitEvent makes the next launch on its
    // thread wait for the latest-ending earlier launch on another stream that it could
    // have waited for (the one that ends last before it starts).
    let mut by_tid: HashMap<(u32, u64), Vec<NodeId>> = HashMap::default();
    for id in g.graph.node_indices() {
        if let Some(tid) = launch[id.index()].1 {
            by_tid.entry((g.graph[id].rank, tid)).or_default().push(id);
        }
    }
    for list in by_tid.values_mut() {
        list.sort_by_key(|&id| (launch_ts(id), id.index()));
    }
    let mut records: HashMap<(u32, u64), Vec<i64>> = HashMap::default();
    for &(rank, kind, tid, t0, _) in host_calls {
        if kind == HostCallKind::EventRecord {
            records.entry((rank, tid)).or_default().push(t0);
        }
    }
    for v in records.values_mut() {
        v.sort();
    }
    for &(rank, kind, tid, t0, t1) in host_calls {
        if kind != HostCallKind::StreamWaitEvent || ranks_with_sync.contains(&rank) {
            continue;
        }
        let Some(list) = by_tid.get(&(rank, tid)) else {
            continue;
        };
        let Some(dst) = first_after(list, t1) else {
            continue;
        };
        let record_at = records
            .get(&(rank, tid))
            .and_then(|r| r.partition_point(|&x| x < t0).checked_sub(1).map(|k| r[k]))
            .unwrap_or(t0);
        let d = &g.graph[dst];
        let before = &list[..list.partition_point(|&id| launch_ts(id) < record_at)];
        let src = before
            .iter()
            .rev()
            .take(64)
            .filter(|&&id| {
                let s = &g.graph[id];
                (s.device, s.stream) != (d.device, d.stream) && s.end_ns() <= d.start_ns
            })
            .max_by_key(|&&id| g.graph[id].end_ns());
        if let Some(&s) = src {
            edges.push((s, dst, EdgeKind::StreamWaitEvent));
        }
    }
    for (a, b, kind) in edges {
        if a == b {
            continue;
        }
        if kind != EdgeKind::StreamOrder && !seen.insert((a.index() as u32, b.index() as u32)) {
            continue;
        }
        g.graph.add_edge(a, b, Edge { kind });
    }
}

fn assign_signatures(g: &mut KernelGraph, strings: &mut Interner) {
    let mut index: HashMap<(StrId, Option<kc_ir::KernelGeometry>, Option<StrId>, StrId), u32> =
        HashMap::default();
    let mut shapes_cache: HashMap<u32, StrId> = HashMap::default();
    let mut sigs: Vec<Signature> = Vec::new();
    let ids: Vec<NodeId> = g.graph.node_indices().collect();
    for id in ids {
        let n = &g.graph[id];
        let (op_name, shapes) = match n.op {
            Some(o) => {
                let op = &g.ops[o.0 as usize];
                let shapes = *shapes_cache.entry(op.args).or_insert_with(|| {
                    let parts: Vec<String> = g.arg_lists[op.args as usize]
                        .iter()
                        .filter_map(|a| match a {
                            OpArg::Tensor(t) => Some(tensor_str(t)),
                            OpArg::TensorList(_) | OpArg::OptionalTensorList(_) => {
                                Some(kc_ir::text::arg_str(a))
                            }
                            _ => None,
                        })
                        .collect();
                    strings.intern(&parts.join(" "))
                });
                (Some(op.name), shapes)
            }
            None => (None, strings.intern("")),
        };
        let key = (n.kind.name(), n.kind.geometry().copied(), op_name, shapes);
        let dur = n.dur_ns;
        let k = *index.entry(key).or_insert_with(|| {
            sigs.push(Signature {
                name: key.0,
                geometry: key.1,
                op_name,
                op_shapes: shapes,
                count: 0,
                total_ns: 0,
            });
            (sigs.len() - 1) as u32
        });
        sigs[k as usize].count += 1;
        sigs[k as usize].total_ns += dur;
        g.graph[id].signature = k;
    }
    g.signatures = sigs;
}
