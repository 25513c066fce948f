//! Op linkage for CUDA-graph traces from an eager twin (`kc ingest GRAPH --eager EAGER`).
//! Kernels a `cudaGraphLaunch` replays carry no op, so a trace of a graph-served model is
//! all "no launching op". An eager trace of the same model and step launches (nearly) the
//! same kernels in the same order with their ops and shapes: each graph iteration's kernel
//! sequence is aligned with an eager iteration's (a global alignment on kernel name and
//! launch geometry that tolerates the few kernels only one side has), and every matched
//! graph kernel takes a copy of its eager kernel's op, with the op's arguments.
//!
//! Invariants: the graph trace's own timings are kept (the replay is judged against them);
//! one copy of an eager op per graph iteration, so each graph invocation is its own unit
//! instance; kernels left unmatched stay unlinked and are counted.

use crate::diag::Diagnostics;
use kc_ir::{CpuOp, KernelGraph, LinkStatus, NodeId, OpArg, OpId};
use std::collections::HashMap;

/// What the alignment achieved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TwinSummary {
    /// Graph-trace GPU activities without an op before alignment, and how many got one.
    pub unlinked_before: usize,
    pub aligned: usize,
    /// Aligned pairs whose launch geometry (grid and block) is identical too: nearly all
    /// of them for a true twin, few for a trace of another model that shares kernel names.
    pub same_geometry: usize,
}

impl TwinSummary {
    /// Refuses a trace that is not a twin: another model shares kernel names (layer norm,
    /// GEMM tiles) but not launch geometry, so most aligned pairs must launch identically.
    pub fn check(&self) -> Result<(), String> {
        if self.unlinked_before > 0
            && (self.aligned == 0 || self.same_geometry * 5 < self.aligned * 4)
        {
            return Err(format!(
                "not an eager twin of this step: {} of {} kernels without an op align by name, \
                 but only {} of those launch with the same grid and block",
                self.aligned, self.unlinked_before, self.same_geometry
            ));
        }
        Ok(())
    }
}

/// Grid and block of a launch (none for copies and memsets).
pub(crate) type LaunchShape = Option<([u32; 3], [u32; 3])>;

/// A kernel as the alignment compares it: name and launch geometry.
pub(crate) fn key(g: &KernelGraph, id: NodeId) -> (&str, LaunchShape) {
    let n = &g.graph[id];
    (
        g.strings.get(n.kind.name()),
        n.kind.geometry().map(|k| (k.grid, k.block)),
    )
}

/// Node ids of one rank in start order, split by iteration (one group when the graph has
/// no iterations).
pub(crate) fn iterations_of(g: &KernelGraph, rank: u32) -> Vec<Vec<NodeId>> {
    let mut ids: Vec<NodeId> = g
        .graph
        .node_indices()
        .filter(|&i| g.graph[i].rank == rank)
        .collect();
    ids.sort_by_key(|&i| (g.graph[i].start_ns, i.index()));
    let steps: Vec<u32> = {
        let mut s: Vec<u32> = ids.iter().filter_map(|&i| g.graph[i].iteration).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    if steps.is_empty() {
        return vec![ids];
    }
    steps
        .iter()
        .map(|&st| {
            ids.iter()
                .copied()
                .filter(|&i| g.graph[i].iteration == Some(st))
                .collect()
        })
        .collect()
}

/// Global alignment of `a` (graph kernels) against `b` (eager kernels): pairs (i, j) of
/// matched positions. A kernel matches one of the same name; the same geometry too scores
/// higher, so the alignment prefers exact matches and skips what only one side has.
pub(crate) fn align<K: PartialEq>(a: &[(&str, K)], b: &[(&str, K)]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 || n.saturating_mul(m) > 50_000_000 {
        return Vec::new();
    }
    let score = |i: usize, j: usize| -> u32 {
        if a[i].0 != b[j].0 {
            0
        } else if a[i].1 == b[j].1 {
            3
        } else {
            1
        }
    };
    // best[i][j]: best score aligning a[i..] with b[j..].
    let w = m + 1;
    let mut best = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let s = score(i, j);
            let diag = if s > 0 {
                s + best[(i + 1) * w + j + 1]
            } else {
                0
            };
            best[i * w + j] = diag.max(best[(i + 1) * w + j]).max(best[i * w + j + 1]);
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        let s = score(i, j);
        if s > 0 && best[i * w + j] == s + best[(i + 1) * w + j + 1] {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if best[i * w + j] == best[(i + 1) * w + j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Whether a GPU activity needs an op from the twin: it has none, or a CUDA graph replay
/// launched it and the op around the replay is no aten op (the profiler's step marker or a
/// serving loop's annotation, which cannot rebuild the kernel).
pub(super) fn wants_op(g: &KernelGraph, id: NodeId) -> bool {
    let n = &g.graph[id];
    if !n.link.is_linked() {
        return true;
    }
    g.is_graph_launched(n) && n.op.is_none_or(|op| !g.is_aten_op(op))
}

/// Links the GPU activities of `graph` that need an op ([`wants_op`]) to copies of the
/// ops of the kernels they align with in `eager`, rank by rank (ranks of the eager trace
/// in file order).
pub fn link_from_eager(
    graph: &mut KernelGraph,
    eager: &KernelGraph,
    eager_name: &str,
    diags: &mut Diagnostics,
) -> TwinSummary {
    let wanting: Vec<bool> = graph
        .graph
        .node_indices()
        .map(|i| wants_op(graph, i))
        .collect();
    let unlinked_before = wanting.iter().filter(|&&w| w).count();
    let mut ranks: Vec<u32> = graph.graph.node_weights().map(|n| n.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut eager_ranks: Vec<u32> = eager.graph.node_weights().map(|n| n.rank).collect();
    eager_ranks.sort_unstable();
    eager_ranks.dedup();
    // Eager arguments copied once each into the graph's argument lists.
    let mut arg_list_of: HashMap<u32, u32> = HashMap::new();
    let mut matches: Vec<(NodeId, OpId)> = Vec::new();
    let mut same_geometry = 0usize;
    for (k, &rank) in ranks.iter().enumerate() {
        let Some(&erank) = eager_ranks.get(k).or(eager_ranks.first()) else {
            break;
        };
        let g_its = iterations_of(graph, rank);
        let e_its = iterations_of(eager, erank);
        for (it, g_ids) in g_its.iter().enumerate() {
            let e_ids = &e_its[it % e_its.len()];
            let a: Vec<_> = g_ids.iter().map(|&i| key(graph, i)).collect();
            let b: Vec<_> = e_ids.iter().map(|&i| key(eager, i)).collect();
            let pairs: Vec<(usize, usize, bool)> = align(&a, &b)
                .into_iter()
                .map(|(i, j)| (i, j, a[i] == b[j]))
                .collect();
            drop((a, b));
            // One copy of each eager op per graph iteration.
            let mut copy_of: HashMap<OpId, OpId> = HashMap::new();
            let mut lent: Vec<(OpId, OpId)> = Vec::new();
            let mut planned: Vec<(NodeId, OpId)> = Vec::new();
            for (i, j, exact) in pairs {
                let (gid, eid) = (g_ids[i], e_ids[j]);
                if !wanting[gid.index()] {
                    continue;
                }
                same_geometry += usize::from(exact);
                let Some(eop) = eager.graph[eid].op else {
                    continue;
                };
                let op = lend_with_ancestors(
                    graph,
                    eager,
                    eop,
                    rank,
                    &mut arg_list_of,
                    false,
                    Lent {
                        copy_of: &mut copy_of,
                        all: &mut lent,
                    },
                );
                planned.push((gid, op));
            }
            matches.extend(planned);
        }
    }
    graph.compiled_launches.sort_by_key(|l| l.op);
    for &(gid, op) in &matches {
        let n = &mut graph.graph[gid];
        n.op = Some(op);
        n.link = LinkStatus::EagerTwin;
    }
    let aligned = matches.len();
    if aligned < unlinked_before {
        diags.add(
            "not_in_eager_twin",
            eager_name.to_string(),
            format!(
                "{} of {unlinked_before} GPU activities without an aten op found no kernel of the same name in the eager trace",
                unlinked_before - aligned
            ),
        );
    }
    TwinSummary {
        unlinked_before,
        aligned,
        same_geometry,
    }
}

/// Where [`lend_with_ancestors`] keeps what it lent: the copies made for the current graph
/// replay (one per lender's op), and every (lender's op, copy) pair.
pub(super) struct Lent<'a> {
    pub copy_of: &'a mut HashMap<OpId, OpId>,
    pub all: &'a mut Vec<(OpId, OpId)>,
}

/// Lends `eop` with its aten ancestors (outermost first, each once per `copy_of`), nested
/// as the lender nests them, and returns the copy of `eop`: lowering then finds the op
/// whose replay launches a kernel as it does for a trace's own ops (the `copy_` of a
/// `native_layer_norm`'s `contiguous` goes with the layer norm, which makes it again when
/// it replays). `lent.all` gets each (lender's op, copy) lent here.
pub(super) fn lend_with_ancestors(
    graph: &mut KernelGraph,
    lender: &KernelGraph,
    eop: OpId,
    rank: u32,
    arg_list_of: &mut HashMap<u32, u32>,
    with_tensors: bool,
    lent: Lent<'_>,
) -> OpId {
    let Lent { copy_of, all } = lent;
    let mut chain: Vec<OpId> = vec![eop];
    chain.extend(
        lender
            .op_chain(eop)
            .skip(1)
            .take_while(|&a| lender.is_aten_op(a)),
    );
    let mut parent: Option<OpId> = None;
    for &a in chain.iter().rev() {
        let copy = match copy_of.get(&a) {
            Some(&c) => c,
            None => {
                let c = lend_op(graph, lender, a, rank, arg_list_of, with_tensors);
                graph.ops[c.0 as usize].parent = parent;
                copy_of.insert(a, c);
                all.push((a, c));
                c
            }
        };
        parent = Some(copy);
    }
    copy_of[&eop]
}

/// Copies op `eop` of `lender` into `graph` on `rank` (its arguments once per argument
/// list, via `arg_list_of`; a compiled kernel's launch record with it; with
/// `with_tensors`, its Execution Trace tensors too) and returns the copy's id.
pub(super) fn lend_op(
    graph: &mut KernelGraph,
    lender: &KernelGraph,
    eop: OpId,
    rank: u32,
    arg_list_of: &mut HashMap<u32, u32>,
    with_tensors: bool,
) -> OpId {
    let src = &lender.ops[eop.0 as usize];
    let args = *arg_list_of.entry(src.args).or_insert_with(|| {
        let list: Vec<OpArg> = lender
            .arg_lists
            .get(src.args as usize)
            .cloned()
            .unwrap_or_default();
        if list.is_empty() {
            0
        } else {
            graph.arg_lists.push(list);
            (graph.arg_lists.len() - 1) as u32
        }
    });
    graph.ops.push(CpuOp {
        name: graph.strings.intern(lender.strings.get(src.name)),
        rank,
        parent: None,
        args,
        ..src.clone()
    });
    let id = OpId((graph.ops.len() - 1) as u32);
    // A compiled kernel's launch record comes along (its binary is looked up afterwards,
    // like the graph trace's own).
    if let Some(l) = lender.compiled_launch(eop) {
        graph.compiled_launches.push(kc_ir::CompiledLaunch {
            op: id,
            resolution: kc_ir::Resolution::NoCache,
            ..l.clone()
        });
    }
    if with_tensors {
        if let Ok(k) = lender.tensor_refs.binary_search_by_key(&eop, |t| t.op) {
            let t = &lender.tensor_refs[k];
            graph.tensor_refs.push(kc_ir::OpTensors {
                op: id,
                ..t.clone()
            });
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::align;

    #[test]
    fn alignment_skips_what_one_side_has_and_prefers_same_geometry() {
        let a = [("x", 1), ("fill", 0), ("y", 1), ("z", 2), ("z", 1)];
        let b = [("x", 1), ("y", 1), ("extra", 5), ("z", 1)];
        // x-x, y-y, then z(1)-z(1) preferred over z(2).
        assert_eq!(align(&a, &b), vec![(0, 0), (2, 1), (4, 3)]);
        assert!(align::<u8>(&[], &[("a", 0)]).is_empty());
    }
}
