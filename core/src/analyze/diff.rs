//! Two traces of the same model compared (`kc diff A B`, `kc.diff`): per iteration (the
//! mean span, busy and idle time, the kernel sum), per launching op and per kernel name
//! (count and time per iteration on each side, the change), and the kernels only one side
//! launched. Figures are per profiled iteration, so traces of 3 and 5 steps compare. Then
//! launch by launch ([`Launches`]): one iteration's activities of A aligned with B's by
//! name and launch geometry (as an eager twin is aligned with its graph), each launch's
//! duration the median over the iterations that ran the same sequence, with how far the
//! aligned launches differ — the comparison that says whether the same kernels took the
//! same time on both sides, and how many of A's started back to back, as a graph runs them.
//!
//! Invariant: every GPU activity of either trace counts in exactly one op row and one
//! kernel row of its side; a launch is compared at most once.

use super::{iteration_rows, traced_iteration_mean, IterationRow};
use crate::ingest::twin::{align, iterations_of, key, LaunchShape};
use crate::report::svg::esc;
use crate::results::fidelity::BACK_TO_BACK_IDLE_NS;
use crate::results::stats::{median, weighted_median};
use kc_ir::{KernelGraph, NodeId};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Side {
    pub label: String,
    /// Profiled iterations the per-iteration figures divide by (1 without steps).
    pub iterations: u32,
    pub traced_iteration_mean_us: Option<f64>,
    pub busy_per_iteration_us: f64,
    pub idle_per_iteration_us: f64,
    pub kernel_sum_per_iteration_us: f64,
}

/// One op or kernel name on both sides, per iteration.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub name: String,
    pub count_a: f64,
    pub count_b: f64,
    pub us_a: f64,
    pub us_b: f64,
    pub delta_us: f64,
    /// (b - a) / a; `None` where a is 0 (new on B).
    pub delta_pct: Option<f64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Diff {
    pub a: Side,
    pub b: Side,
    /// By launching op name ("(no op)" for activities without one), largest change first.
    pub ops: Vec<Row>,
    /// By kernel name, largest change first.
    pub kernels: Vec<Row>,
    /// By kernel family (gemm, conv, attention, elementwise, ...), largest change first;
    /// empty unless both graphs are lowered ([`diff_lowered`]).
    pub families: Vec<Row>,
    /// Kernel names only B launched, and only A.
    pub new_kernels: Vec<String>,
    pub vanished_kernels: Vec<String>,
    /// Launch by launch; `None` when either side has no activity.
    pub launches: Option<Launches>,
}

/// One iteration of A against one of B, launch by launch (the first rank of each).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Launches {
    /// Activities of the iteration compared, and how many iterations ran that same
    /// sequence of names (their median durations are compared).
    pub per_iteration_a: usize,
    pub per_iteration_b: usize,
    pub iterations_a: usize,
    pub iterations_b: usize,
    /// Launches aligned by name, and of those, launched with the same grid and block.
    pub aligned: usize,
    pub same_geometry: usize,
    /// Σ of the aligned launches' durations, microseconds.
    pub aligned_us_a: f64,
    pub aligned_us_b: f64,
    /// Over the aligned launches, |B / A − 1| in percent: the median, the median with each
    /// launch weighted by A's duration, and the median of the signed error.
    pub median_abs_pct: Option<f64>,
    pub time_weighted_median_abs_pct: Option<f64>,
    pub signed_median_pct: Option<f64>,
    /// Aligned launches that A ran back to back (A's GPU idle at most
    /// [`BACK_TO_BACK_IDLE_NS`] before them), and the median |error| over those.
    pub back_to_back_a: usize,
    pub back_to_back_median_abs_pct: Option<f64>,
    /// The same for B.
    pub back_to_back_b: usize,
    /// The median idle time before A's and B's aligned launches, microseconds.
    pub idle_before_median_us_a: Option<f64>,
    pub idle_before_median_us_b: Option<f64>,
}

/// One side's reference iteration: its activities' keys, each one's median duration (ns)
/// and idle time before it (ns) over the iterations that ran the same sequence.
struct LaunchSeq<'g> {
    keys: Vec<(&'g str, LaunchShape)>,
    dur_ns: Vec<f64>,
    idle_ns: Vec<f64>,
    iterations: usize,
}

fn launch_seq(g: &KernelGraph) -> Option<LaunchSeq<'_>> {
    let rank = g.graph.node_weights().map(|n| n.rank).min()?;
    // Idle time before each activity: its start less the latest end of every activity
    // of its rank that started before it (any stream).
    let mut order: Vec<NodeId> = g
        .graph
        .node_indices()
        .filter(|&i| g.graph[i].rank == rank)
        .collect();
    order.sort_by_key(|&i| (g.graph[i].start_ns, i.index()));
    let mut idle: HashMap<NodeId, i64> = HashMap::with_capacity(order.len());
    let mut busy_until = i64::MIN;
    for &i in &order {
        let n = &g.graph[i];
        idle.insert(
            i,
            if busy_until == i64::MIN {
                0
            } else {
                (n.start_ns - busy_until).max(0)
            },
        );
        busy_until = busy_until.max(n.start_ns + n.dur_ns);
    }
    let iters = iterations_of(g, rank);
    // The sequence most iterations ran (the first of them on a tie); an iteration cut by
    // the profiler's window has another.
    let names = |it: &[NodeId]| -> Vec<&str> { it.iter().map(|&i| key(g, i).0).collect() };
    let seqs: Vec<Vec<&str>> = iters.iter().map(|it| names(it)).collect();
    let best = (0..iters.len())
        .filter(|&k| !iters[k].is_empty())
        .max_by_key(|&k| {
            (
                seqs.iter().filter(|s| **s == seqs[k]).count(),
                std::cmp::Reverse(k),
            )
        })?;
    let same: Vec<&Vec<NodeId>> = iters
        .iter()
        .zip(&seqs)
        .filter(|(_, s)| **s == seqs[best])
        .map(|(it, _)| it)
        .collect();
    let per_position = |f: &dyn Fn(NodeId) -> f64| -> Vec<f64> {
        (0..iters[best].len())
            .map(|p| {
                let mut v: Vec<f64> = same.iter().map(|it| f(it[p])).collect();
                median(&mut v).unwrap_or(0.0)
            })
            .collect()
    };
    Some(LaunchSeq {
        keys: iters[best].iter().map(|&i| key(g, i)).collect(),
        dur_ns: per_position(&|i| g.graph[i].dur_ns as f64),
        idle_ns: per_position(&|i| idle[&i] as f64),
        iterations: same.len(),
    })
}

/// A's reference iteration against B's, launch by launch.
pub fn launches(a: &KernelGraph, b: &KernelGraph) -> Option<Launches> {
    let (sa, sb) = (launch_seq(a)?, launch_seq(b)?);
    let pairs = align(&sa.keys, &sb.keys);
    let back_to_back = |idle: f64| idle <= BACK_TO_BACK_IDLE_NS as f64;
    let (mut abs, mut signed, mut weighted, mut b2b) = (vec![], vec![], vec![], vec![]);
    let (mut us_a, mut us_b, mut same_geometry, mut b2b_b) = (0.0, 0.0, 0, 0);
    let (mut idle_a, mut idle_b) = (vec![], vec![]);
    for &(i, j) in &pairs {
        let (da, db) = (sa.dur_ns[i], sb.dur_ns[j]);
        us_a += da / 1000.0;
        us_b += db / 1000.0;
        same_geometry += usize::from(sa.keys[i].1 == sb.keys[j].1);
        idle_a.push(sa.idle_ns[i] / 1000.0);
        idle_b.push(sb.idle_ns[j] / 1000.0);
        b2b_b += usize::from(back_to_back(sb.idle_ns[j]));
        if da <= 0.0 {
            continue;
        }
        let e = 100.0 * (db / da - 1.0);
        abs.push(e.abs());
        signed.push(e);
        weighted.push((e.abs(), da));
        if back_to_back(sa.idle_ns[i]) {
            b2b.push(e.abs());
        }
    }
    Some(Launches {
        per_iteration_a: sa.keys.len(),
        per_iteration_b: sb.keys.len(),
        iterations_a: sa.iterations,
        iterations_b: sb.iterations,
        aligned: pairs.len(),
        same_geometry,
        aligned_us_a: us_a,
        aligned_us_b: us_b,
        back_to_back_a: b2b.len(),
        back_to_back_b: b2b_b,
        median_abs_pct: median(&mut abs),
        time_weighted_median_abs_pct: weighted_median(&mut weighted),
        signed_median_pct: median(&mut signed),
        back_to_back_median_abs_pct: median(&mut b2b),
        idle_before_median_us_a: median(&mut idle_a),
        idle_before_median_us_b: median(&mut idle_b),
    })
}

/// One side's per-iteration figures, from its iteration rows (nothing else of the
/// analysis is needed here).
fn side(label: &str, rows: &[IterationRow]) -> Side {
    let n = (rows.iter().filter(|r| r.iteration.is_some()).count() as u32).max(1);
    let sum = |f: &dyn Fn(&IterationRow) -> f64| -> f64 {
        rows.iter().map(f).sum::<f64>() / f64::from(n)
    };
    Side {
        label: label.to_string(),
        iterations: n,
        traced_iteration_mean_us: traced_iteration_mean(rows),
        busy_per_iteration_us: sum(&|r| r.busy_us),
        idle_per_iteration_us: sum(&|r| r.idle_us),
        kernel_sum_per_iteration_us: sum(&|r| r.kernel_sum_us),
    }
}

/// (count, ns) per op name and per kernel name.
type Tally = BTreeMap<String, (u64, i64)>;

fn tallies(g: &KernelGraph) -> (Tally, Tally, Tally) {
    let (mut ops, mut kernels, mut families) = (Tally::new(), Tally::new(), Tally::new());
    let lowered = g.classes.len() == g.graph.node_count();
    for (i, n) in g.graph.node_weights().enumerate() {
        if lowered {
            let e = families
                .entry(g.classes[i].family.as_str().to_string())
                .or_default();
            e.0 += 1;
            e.1 += n.dur_ns;
        }
        // A graph replay's kernels have no op of their own (at most the step marker
        // around the replay), and step markers carry their number: both are named so
        // that the two sides line up.
        let op = match n.op.and_then(|o| g.ops.get(o.0 as usize)) {
            Some(o) if !g.is_graph_launched(n) || n.link.is_lent() => {
                let name = g.str(o.name);
                match name.split_once('#') {
                    Some((stem, num)) if num.chars().all(|c| c.is_ascii_digit()) => {
                        format!("{stem}#N")
                    }
                    _ => name.to_string(),
                }
            }
            _ if g.is_graph_launched(n) => "(CUDA graph replay)".to_string(),
            _ => "(no op)".to_string(),
        };
        let e = ops.entry(op).or_default();
        e.0 += 1;
        e.1 += n.dur_ns;
        let e = kernels.entry(g.str(n.kind.name()).to_string()).or_default();
        e.0 += 1;
        e.1 += n.dur_ns;
    }
    (ops, kernels, families)
}

fn rows(a: &Tally, b: &Tally, na: u32, nb: u32) -> Vec<Row> {
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<Row> = names
        .into_iter()
        .map(|name| {
            let (ca, ta) = a.get(name).copied().unwrap_or((0, 0));
            let (cb, tb) = b.get(name).copied().unwrap_or((0, 0));
            let us_a = ta as f64 / 1000.0 / f64::from(na);
            let us_b = tb as f64 / 1000.0 / f64::from(nb);
            Row {
                name: name.clone(),
                count_a: ca as f64 / f64::from(na),
                count_b: cb as f64 / f64::from(nb),
                us_a,
                us_b,
                delta_us: us_b - us_a,
                delta_pct: (us_a > 0.0).then(|| 100.0 * (us_b - us_a) / us_a),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.delta_us
            .abs()
            .total_cmp(&x.delta_us.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

pub fn diff(a: &KernelGraph, a_label: &str, b: &KernelGraph, b_label: &str) -> Diff {
    let (sa, sb) = (
        side(a_label, &iteration_rows(a)),
        side(b_label, &iteration_rows(b)),
    );
    let ((ops_a, k_a, f_a), (ops_b, k_b, f_b)) = (tallies(a), tallies(b));
    let new_kernels = k_b
        .keys()
        .filter(|k| !k_a.contains_key(*k))
        .cloned()
        .collect();
    let vanished_kernels = k_a
        .keys()
        .filter(|k| !k_b.contains_key(*k))
        .cloned()
        .collect();
    Diff {
        ops: rows(&ops_a, &ops_b, sa.iterations, sb.iterations),
        kernels: rows(&k_a, &k_b, sa.iterations, sb.iterations),
        families: if f_a.is_empty() || f_b.is_empty() {
            Vec::new()
        } else {
            rows(&f_a, &f_b, sa.iterations, sb.iterations)
        },
        new_kernels,
        vanished_kernels,
        launches: launches(a, b),
        a: sa,
        b: sb,
    }
}

/// Lowers both graphs (when not lowered yet) so that the diff has kernel families too.
pub fn diff_lowered(
    a: &mut KernelGraph,
    a_label: &str,
    b: &mut KernelGraph,
    b_label: &str,
) -> Diff {
    for g in [&mut *a, &mut *b] {
        if g.instances.is_empty() {
            let _ = crate::lower::lower(g);
        }
    }
    diff(a, a_label, b, b_label)
}

fn short(s: &str) -> String {
    super::cut(s, 80)
}

/// The diff as Markdown: the iteration figures, the `top` largest op and kernel changes,
/// and the kernels only one side launched.
pub fn markdown(d: &Diff, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "# kc diff\n\nA: `{}`  \nB: `{}`\n", d.a.label, d.b.label);
    let _ = writeln!(
        o,
        "Per profiled iteration (A: {}, B: {} iterations).\n",
        d.a.iterations, d.b.iterations
    );
    let _ = writeln!(o, "| | A | B | change |\n|---|---|---|---|");
    let line = |o: &mut String, what: &str, x: Option<f64>, y: Option<f64>| {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} us"));
        let c = match (x, y) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:+.1} %", 100.0 * (y - x) / x),
            _ => "-".into(),
        };
        let _ = writeln!(o, "| {what} | {} | {} | {c} |", f(x), f(y));
    };
    line(
        &mut o,
        "traced time (first start to last end)",
        d.a.traced_iteration_mean_us,
        d.b.traced_iteration_mean_us,
    );
    line(
        &mut o,
        "GPU busy",
        Some(d.a.busy_per_iteration_us),
        Some(d.b.busy_per_iteration_us),
    );
    line(
        &mut o,
        "GPU idle",
        Some(d.a.idle_per_iteration_us),
        Some(d.b.idle_per_iteration_us),
    );
    line(
        &mut o,
        "Σ kernel time",
        Some(d.a.kernel_sum_per_iteration_us),
        Some(d.b.kernel_sum_per_iteration_us),
    );
    if let Some(l) = &d.launches {
        launches_markdown(&mut o, l);
    }
    for (title, rows) in [
        ("kernel family", &d.families),
        ("launching op", &d.ops),
        ("kernel", &d.kernels),
    ] {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "\n## By {title}, largest changes\n\n| {title} | count A | count B | A us | B us | change us | change |\n|---|---|---|---|---|---|---|"
        );
        for r in rows.iter().take(top) {
            let _ = writeln!(
                o,
                "| `{}` | {:.1} | {:.1} | {:.1} | {:.1} | {:+.1} | {} |",
                short(&r.name),
                r.count_a,
                r.count_b,
                r.us_a,
                r.us_b,
                r.delta_us,
                r.delta_pct
                    .map_or("new".to_string(), |p| format!("{p:+.1} %"))
            );
        }
    }
    for (title, v) in [
        ("only in B (new)", &d.new_kernels),
        ("only in A (vanished)", &d.vanished_kernels),
    ] {
        let _ = writeln!(o, "\n## Kernels {title}: {}\n", v.len());
        for k in v.iter().take(top) {
            let _ = writeln!(o, "- `{}`", short(k));
        }
        if v.len() > top {
            let _ = writeln!(o, "- … and {} more", v.len() - top);
        }
    }
    o
}

fn launches_markdown(o: &mut String, l: &Launches) {
    use std::fmt::Write;
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} %"));
    let _ = writeln!(
        o,
        "\n## Launch by launch\n\nOne iteration of A ({} activities, the median of {} iterations that ran them) \
         aligned with one of B ({}, of {}) by kernel name and launch geometry.\n",
        l.per_iteration_a, l.iterations_a, l.per_iteration_b, l.iterations_b
    );
    let _ = writeln!(
        o,
        "| aligned | same grid and block | Σ A | Σ B | median \\|B/A − 1\\| | by A's time | signed median | A's back to back (median \\|error\\| over them) | B's back to back | idle before, median A / B |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    let _ = writeln!(
        o,
        "| {} | {} | {:.1} us | {:.1} us | {} | {} | {} | {} ({}) | {} | {:.1} / {:.1} us |",
        l.aligned,
        l.same_geometry,
        l.aligned_us_a,
        l.aligned_us_b,
        pct(l.median_abs_pct),
        pct(l.time_weighted_median_abs_pct),
        l.signed_median_pct
            .map_or("-".to_string(), |v| format!("{v:+.1} %")),
        l.back_to_back_a,
        pct(l.back_to_back_median_abs_pct),
        l.back_to_back_b,
        l.idle_before_median_us_a.unwrap_or(0.0),
        l.idle_before_median_us_b.unwrap_or(0.0),
    );
}

/// The diff as an SVG bar chart: per iteration, the `top` kernels whose time changed most,
/// A's bar beside B's, with the change.
pub fn svg(d: &Diff, top: usize) -> String {
    use std::fmt::Write;
    let rows: Vec<&Row> = d.kernels.iter().take(top).collect();
    let (w, row_h, left) = (900.0, 26.0, 380.0);
    let h = 60.0 + row_h * rows.len() as f64;
    let max = rows.iter().map(|r| r.us_a.max(r.us_b)).fold(1e-9, f64::max);
    let scale = |v: f64| v / max * (w - left - 120.0);
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        o,
        r#"<text x="10" y="16">kc diff: us per iteration, A (grey) vs B (blue), the {} largest changes</text>"#,
        rows.len()
    );
    let _ = writeln!(
        o,
        r#"<text x="10" y="32" fill="gray">A: {} | B: {}</text>"#,
        esc(&d.a.label),
        esc(&d.b.label)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 44.0 + row_h * i as f64;
        let name: String = r.name.chars().take(60).collect();
        let _ = writeln!(
            o,
            r#"<text x="10" y="{:.1}"><title>{}</title>{}</text>"#,
            y + 14.0,
            esc(&r.name),
            esc(&name)
        );
        let _ = writeln!(
            o,
            r#"<rect x="{left}" y="{y:.1}" width="{:.1}" height="10" fill="gray"/>"#,
            scale(r.us_a)
        );
        let _ = writeln!(
            o,
            r#"<rect x="{left}" y="{:.1}" width="{:.1}" height="10" fill="steelblue"/>"#,
            y + 11.0,
            scale(r.us_b)
        );
        let change = r
            .delta_pct
            .map_or("new".to_string(), |p| format!("{p:+.1} %"));
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{:+.1} us ({change})</text>"#,
            left + scale(r.us_a.max(r.us_b)) + 6.0,
            y + 14.0,
            r.delta_us
        );
    }
    o.push_str("</svg>\n");
    o
}
