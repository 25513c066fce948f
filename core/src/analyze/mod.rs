//! Trace analysis, the tables a researcher reaches for first (`kc analyze`, `kc.Graph`'s
//! `kernel_stats()`, `iterations()`, `launch_latency()`): per kernel name, count and
//! duration statistics; per profiled iteration, what the GPU did with its time (busy, idle,
//! kernels, copies, fills, collectives, compute overlapping communication, streams running
//! side by side, the traced span and the kernel sum); per launch API, how long a launch
//! waited before its kernel started. Everything is computed from the ingested graph in
//! whole nanoseconds.
//!
//! Invariants: per iteration, busy + idle = span and busy <= the kernel sum; the kernel
//! table's total is the graph's GPU time; durations are never rounded before they are
//! summed.

pub mod diff;
pub mod roofline;

use kc_ir::{KernelGraph, NodeKind};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Duration statistics of one kernel name (microseconds; percentiles by nearest rank).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct KernelStat {
    pub name: String,
    /// kernel, memcpy, memset or collective.
    pub kind: &'static str,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Share of the trace's GPU time (the sum of every activity's duration).
    pub share_pct: f64,
}

/// What one rank's GPU did in one profiled iteration (microseconds).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IterationRow {
    pub rank: u32,
    /// `ProfilerStep#N`'s N; `None` for GPU work outside any step (or a trace without).
    pub iteration: Option<u32>,
    pub activities: u64,
    pub streams: usize,
    /// First start to last end.
    pub span_us: f64,
    /// Time at least one activity ran (the union of their intervals).
    pub busy_us: f64,
    /// span - busy.
    pub idle_us: f64,
    pub idle_pct: f64,
    /// Sum of all activities' durations (what Σ kernel time counts).
    pub kernel_sum_us: f64,
    /// Busy time by kind (union within the kind).
    pub kernel_us: f64,
    pub memcpy_us: f64,
    pub memset_us: f64,
    pub collective_us: f64,
    /// Time a collective ran while compute (a kernel, copy or fill) ran too.
    pub compute_comm_overlap_us: f64,
    /// Time two or more streams ran at once: Σ per-stream busy - busy.
    pub concurrent_us: f64,
}

/// How long launches through one API waited: kernel start - the launch call's start.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LaunchLatency {
    pub api: String,
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub max_us: f64,
    /// Mean duration of the launch call itself on the CPU.
    pub call_mean_us: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Analysis {
    pub kernels: Vec<KernelStat>,
    /// Per launching op name: each invocation's GPU time (the sum of the activities it
    /// launched), with the same statistics (`kind` "op"; "(no op)" for unlinked activities,
    /// one row per activity).
    pub ops: Vec<KernelStat>,
    pub iterations: Vec<IterationRow>,
    /// Per rank over the whole trace (first start to last end, gaps between iterations
    /// included), as HolisticTraceAnalysis's temporal breakdown counts; `iteration` is None.
    pub ranks: Vec<IterationRow>,
    pub launch_latency: Vec<LaunchLatency>,
    /// Mean span of the profiled iterations (`ProfilerStep` ones; none without steps):
    /// the traced time per iteration to set beside the model's measured time.
    pub traced_iteration_mean_us: Option<f64>,
    pub gpu_time_us: f64,
    /// Work per kernel under the GPU's roofline (rows only for a lowered graph:
    /// [`analyze_lowered`]).
    pub roofline: roofline::Roofline,
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The union of intervals `(start, end)`, merged and sorted.
pub fn union(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn length(u: &[(i64, i64)]) -> i64 {
    u.iter().map(|(s, e)| e - s).sum()
}

/// The length of the intersection of two unions (each merged and sorted).
pub fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        total += (e - s).max(0);
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

fn kind_of(k: &NodeKind) -> &'static str {
    k.kind_str()
}

/// The statistics of one row's durations (sorted here), as a share of `total_ns`.
fn stat_of(name: String, kind: &'static str, mut d: Vec<i64>, total_ns: i64) -> KernelStat {
    d.sort_unstable();
    let sum: i64 = d.iter().sum();
    KernelStat {
        name,
        kind,
        count: d.len() as u64,
        total_us: us(sum),
        mean_us: us(sum) / d.len().max(1) as f64,
        p50_us: us(pct(&d, 50.0)),
        p90_us: us(pct(&d, 90.0)),
        min_us: us(d.first().copied().unwrap_or(0)),
        max_us: us(d.last().copied().unwrap_or(0)),
        share_pct: if total_ns > 0 {
            100.0 * sum as f64 / total_ns as f64
        } else {
            0.0
        },
    }
}

/// Largest total first, then by name.
fn by_total(rows: &mut [KernelStat]) {
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.name.cmp(&b.name))
    });
}

pub fn analyze(g: &KernelGraph) -> Analysis {
    let total_ns: i64 = g.graph.node_weights().map(|n| n.dur_ns).sum();
    // Per kernel name.
    let mut by_name: HashMap<(kc_ir::StrId, &'static str), Vec<i64>> = HashMap::new();
    for n in g.graph.node_weights() {
        by_name
            .entry((n.kind.name(), kind_of(&n.kind)))
            .or_default()
            .push(n.dur_ns);
    }
    let mut kernels: Vec<KernelStat> = by_name
        .into_iter()
        .map(|((name, kind), d)| stat_of(g.str(name).to_string(), kind, d, total_ns))
        .collect();
    by_total(&mut kernels);
    let ops = op_stats(g, total_ns);
    // Per (rank, iteration).
    let mut by_rank: BTreeMap<u32, Vec<&kc_ir::Node>> = BTreeMap::new();
    for n in g.graph.node_weights() {
        by_rank.entry(n.rank).or_default().push(n);
    }
    let ranks: Vec<IterationRow> = by_rank
        .into_iter()
        .map(|(rank, nodes)| iteration_row(rank, None, &nodes))
        .collect();
    let iterations = iteration_rows(g);
    Analysis {
        kernels,
        ops,
        launch_latency: launch_latency(g),
        traced_iteration_mean_us: traced_iteration_mean(&iterations),
        iterations,
        ranks,
        gpu_time_us: us(total_ns),
        roofline: roofline::roofline(g),
    }
}

/// What each rank's GPU did in each profiled iteration ([`Analysis::iterations`]).
pub fn iteration_rows(g: &KernelGraph) -> Vec<IterationRow> {
    let mut groups: BTreeMap<(u32, Option<u32>), Vec<&kc_ir::Node>> = BTreeMap::new();
    for n in g.graph.node_weights() {
        groups.entry((n.rank, n.iteration)).or_default().push(n);
    }
    groups
        .into_iter()
        .map(|((rank, iteration), nodes)| iteration_row(rank, iteration, &nodes))
        .collect()
}

/// The mean span of the profiled (`ProfilerStep`) iterations among `rows`.
pub fn traced_iteration_mean(rows: &[IterationRow]) -> Option<f64> {
    let stepped: Vec<f64> = rows
        .iter()
        .filter(|r| r.iteration.is_some())
        .map(|r| r.span_us)
        .collect();
    (!stepped.is_empty()).then(|| stepped.iter().sum::<f64>() / stepped.len() as f64)
}

/// Lowers `g` (GEMMs recovered, units built) when it is not lowered yet, then analyses it,
/// so the roofline knows each kernel's work. A graph lowering refuses is analysed as is.
pub fn analyze_lowered(g: &mut KernelGraph) -> Analysis {
    if g.instances.is_empty() {
        let _ = crate::lower::lower(g);
    }
    analyze(g)
}

/// Per launching op name, the GPU time of each invocation ([`Analysis::ops`]).
fn op_stats(g: &KernelGraph, total_ns: i64) -> Vec<KernelStat> {
    let mut per_op: HashMap<kc_ir::OpId, i64> = HashMap::new();
    let mut unlinked: Vec<i64> = Vec::new();
    for n in g.graph.node_weights() {
        match n.op {
            Some(op) => *per_op.entry(op).or_default() += n.dur_ns,
            None => unlinked.push(n.dur_ns),
        }
    }
    let mut by_name: HashMap<&str, Vec<i64>> = HashMap::new();
    for (op, ns) in per_op {
        let name = g
            .ops
            .get(op.0 as usize)
            .map_or("(unknown op)", |o| g.str(o.name));
        by_name.entry(name).or_default().push(ns);
    }
    if !unlinked.is_empty() {
        by_name.insert("(no op)", unlinked);
    }
    let mut rows: Vec<KernelStat> = by_name
        .into_iter()
        .map(|(name, d)| stat_of(name.to_string(), "op", d, total_ns))
        .collect();
    by_total(&mut rows);
    rows
}

fn iteration_row(rank: u32, iteration: Option<u32>, nodes: &[&kc_ir::Node]) -> IterationRow {
    let iv = |f: &dyn Fn(&NodeKind) -> bool| {
        union(
            nodes
                .iter()
                .filter(|n| f(&n.kind))
                .map(|n| (n.start_ns, n.end_ns()))
                .collect(),
        )
    };
    let all = iv(&|_| true);
    let compute = iv(&|k| !matches!(k, NodeKind::Collective { .. }));
    let collective = iv(&|k| matches!(k, NodeKind::Collective { .. }));
    let kernel = iv(&|k| matches!(k, NodeKind::Kernel { .. }));
    let memcpy = iv(&|k| matches!(k, NodeKind::Memcpy { .. }));
    let memset = iv(&|k| matches!(k, NodeKind::Memset { .. }));
    let mut per_stream: BTreeMap<u64, Vec<(i64, i64)>> = BTreeMap::new();
    for n in nodes {
        per_stream
            .entry(n.stream)
            .or_default()
            .push((n.start_ns, n.end_ns()));
    }
    let streams = per_stream.len();
    let stream_busy: i64 = per_stream.into_values().map(|v| length(&union(v))).sum();
    let start = all.first().map_or(0, |x| x.0);
    let end = all.iter().map(|x| x.1).max().unwrap_or(0);
    let (span, busy) = (end - start, length(&all));
    IterationRow {
        rank,
        iteration,
        activities: nodes.len() as u64,
        streams,
        span_us: us(span),
        busy_us: us(busy),
        idle_us: us(span - busy),
        idle_pct: if span > 0 {
            100.0 * (span - busy) as f64 / span as f64
        } else {
            0.0
        },
        kernel_sum_us: us(nodes.iter().map(|n| n.dur_ns).sum()),
        kernel_us: us(length(&kernel)),
        memcpy_us: us(length(&memcpy)),
        memset_us: us(length(&memset)),
        collective_us: us(length(&collective)),
        compute_comm_overlap_us: us(overlap(&compute, &collective)),
        concurrent_us: us(stream_busy - busy),
    }
}

fn launch_latency(g: &KernelGraph) -> Vec<LaunchLatency> {
    let mut by_api: BTreeMap<&str, (Vec<i64>, i64)> = BTreeMap::new();
    for n in g.graph.node_weights() {
        if let Some(l) = &n.launch {
            let e = by_api.entry(g.str(l.api)).or_default();
            e.0.push(n.start_ns - l.start_ns);
            e.1 += l.dur_ns;
        }
    }
    by_api
        .into_iter()
        .map(|(api, (mut d, call))| {
            d.sort_unstable();
            let n = d.len() as f64;
            LaunchLatency {
                api: api.to_string(),
                count: d.len() as u64,
                mean_us: us(d.iter().sum()) / n,
                p50_us: us(pct(&d, 50.0)),
                p90_us: us(pct(&d, 90.0)),
                max_us: us(d[d.len() - 1]),
                call_mean_us: us(call) / n,
            }
        })
        .collect()
}

/// The tables as CSV files, by file name: kernels.csv, ops.csv, iterations.csv,
/// launch_latency.csv, roofline.csv and the roofline chart roofline.svg (`kc analyze --csv`).
pub fn csv_tables(a: &Analysis) -> Vec<(String, Vec<u8>)> {
    use crate::report::render::csv_field;
    // Kernel and op rows are one statistics table.
    let stats = |rows: &[KernelStat]| {
        let mut k = String::from(
            "name,kind,count,total_us,mean_us,p50_us,p90_us,min_us,max_us,share_pct\n",
        );
        for r in rows {
            k += &format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&r.name),
                r.kind,
                r.count,
                r.total_us,
                r.mean_us,
                r.p50_us,
                r.p90_us,
                r.min_us,
                r.max_us,
                r.share_pct
            );
        }
        k
    };
    let mut i = String::from("rank,iteration,activities,streams,span_us,busy_us,idle_us,idle_pct,kernel_sum_us,kernel_us,memcpy_us,memset_us,collective_us,compute_comm_overlap_us,concurrent_us\n");
    for r in &a.iterations {
        i += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.rank,
            r.iteration.map_or(String::new(), |x| x.to_string()),
            r.activities,
            r.streams,
            r.span_us,
            r.busy_us,
            r.idle_us,
            r.idle_pct,
            r.kernel_sum_us,
            r.kernel_us,
            r.memcpy_us,
            r.memset_us,
            r.collective_us,
            r.compute_comm_overlap_us,
            r.concurrent_us
        );
    }
    let mut l = String::from("api,count,mean_us,p50_us,p90_us,max_us,call_mean_us\n");
    for r in &a.launch_latency {
        l += &format!(
            "{},{},{},{},{},{},{}\n",
            csv_field(&r.api),
            r.count,
            r.mean_us,
            r.p50_us,
            r.p90_us,
            r.max_us,
            r.call_mean_us
        );
    }
    let mut r = String::from("name,family,invocations,total_us,flops,bytes,tflops,gb_s,intensity,against,fraction_of_roof\n");
    for x in &a.roofline.rows {
        r += &format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&x.name),
            x.family,
            x.invocations,
            x.total_us,
            x.flops,
            x.bytes,
            x.tflops,
            x.gb_s,
            x.intensity,
            x.against,
            x.fraction_of_roof.map_or(String::new(), |f| f.to_string())
        );
    }
    vec![
        ("roofline.csv".into(), r.into_bytes()),
        (
            "roofline.svg".into(),
            roofline::svg(&a.roofline).into_bytes(),
        ),
        ("kernels.csv".into(), stats(&a.kernels).into_bytes()),
        ("ops.csv".into(), stats(&a.ops).into_bytes()),
        ("iterations.csv".into(), i.into_bytes()),
        ("launch_latency.csv".into(), l.into_bytes()),
    ]
}

/// The analysis as text: per iteration, the kernel table's first `top` rows (all for 0),
/// and the launch latency.
pub fn render_text(a: &Analysis, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "GPU time {:.1} us in {} kernel names{}",
        a.gpu_time_us,
        a.kernels.len(),
        a.traced_iteration_mean_us
            .map(|t| format!(
                "; traced time per iteration (first start to last end, mean) {t:.1} us"
            ))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "\n  rank iter   span us   busy us   idle us  idle %  Σ kernel us  kernel us  memcpy us  memset us  coll us  comm∩compute us  concurrent us  streams"
    );
    for r in &a.iterations {
        let _ = writeln!(
            o,
            "  {:>4} {:>4} {:>9.1} {:>9.1} {:>9.1} {:>6.1} {:>12.1} {:>10.1} {:>10.1} {:>10.1} {:>8.1} {:>16.1} {:>14.1} {:>8}",
            r.rank,
            r.iteration.map_or("-".to_string(), |i| i.to_string()),
            r.span_us,
            r.busy_us,
            r.idle_us,
            r.idle_pct,
            r.kernel_sum_us,
            r.kernel_us,
            r.memcpy_us,
            r.memset_us,
            r.collective_us,
            r.compute_comm_overlap_us,
            r.concurrent_us,
            r.streams
        );
    }
    // `top` rows of a table (0: all of them).
    let rows = |len: usize| if top == 0 { len } else { top.min(len) };
    let n = rows(a.kernels.len());
    let _ = writeln!(
        o,
        "\n  kernels ({n} of {} by total time)\n  count   total us   mean us    p50 us    p90 us    min us    max us      %  name",
        a.kernels.len()
    );
    // Kernel and op rows are one statistics row; kernel names are cut to stay readable.
    let stat_row = |o: &mut String, k: &KernelStat, name: &str| {
        let _ = writeln!(
            o,
            "  {:>5} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>6.2}  {name}",
            k.count, k.total_us, k.mean_us, k.p50_us, k.p90_us, k.min_us, k.max_us, k.share_pct
        );
    };
    for k in a.kernels.iter().take(n) {
        stat_row(&mut o, k, &cut(&k.name, 90));
    }
    let m = rows(a.ops.len());
    let _ = writeln!(
        o,
        "\n  launching ops ({m} of {} by total GPU time; per invocation)\n  count   total us   mean us    p50 us    p90 us    min us    max us      %  op",
        a.ops.len()
    );
    for k in a.ops.iter().take(m) {
        stat_row(&mut o, k, &k.name);
    }
    let r = &a.roofline;
    if !r.rows.is_empty() {
        let _ = writeln!(
            o,
            "\n  roofline on {} ({:.1} % of GPU time with known work; peaks {})\n  count   total us    TFLOP/s      GB/s   FLOP/B  vs roof  against   name",
            if r.device.is_empty() { "an unnamed GPU" } else { &r.device },
            r.covered_pct,
            r.peak.map_or("unknown: no fraction of roof".to_string(), |p| format!(
                "{} TFLOP/s 16-bit, {} TF32, {} FP32, {} TB/s",
                p.tensor16_tflops, p.tf32_tflops, p.fp32_tflops, p.memory_tb_s
            ))
        );
        for k in r.rows.iter().take(n) {
            let name = cut(&k.name, 70);
            let _ = writeln!(
                o,
                "  {:>5} {:>10.1} {:>10.2} {:>9.1} {:>8.2} {:>8} {:<9} {name}",
                k.invocations,
                k.total_us,
                k.tflops,
                k.gb_s,
                k.intensity,
                k.fraction_of_roof
                    .map_or("-".to_string(), |f| format!("{:.0} %", f * 100.0)),
                k.against
            );
        }
    }
    if !a.launch_latency.is_empty() {
        let _ = writeln!(
            o,
            "\n  launch latency (GPU start - launch call start)\n  api                         count   mean us    p50 us    p90 us    max us  call mean us"
        );
        for l in &a.launch_latency {
            let _ = writeln!(
                o,
                "  {:<26} {:>6} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>13.2}",
                l.api, l.count, l.mean_us, l.p50_us, l.p90_us, l.max_us, l.call_mean_us
            );
        }
    }
    o
}

/// `name` cut to `max` characters, its last one an ellipsis when cut.
pub(crate) fn cut(name: &str, max: usize) -> String {
    if name.chars().count() > max {
        name.chars()
            .take(max - 1)
            .chain(std::iter::once('…'))
            .collect()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_and_overlaps_count_each_nanosecond_once() {
        let u = union(vec![(5, 10), (0, 3), (2, 4), (9, 12)]);
        assert_eq!(u, vec![(0, 4), (5, 12)]);
        assert_eq!(length(&u), 11);
        assert_eq!(overlap(&u, &union(vec![(3, 6), (11, 20)])), 3);
        assert_eq!(pct(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(pct(&[1, 2, 3, 4], 90.0), 4);
    }
}
