//! Two traces of the same model compared (`kc diff A B`, `kc.diff`): per iteration (the
//! mean span, busy and idle time, the kernel sum), per launching op and per kernel name
//! (count and time per iteration on each side, the change), and the kernels only one side
//! launched. Figures are per profiled iteration, so traces of 3 and 5 steps compare.
//!
//! Invariant: every GPU activity of either trace counts in exactly one op row and one
//! kernel row of its side.

use super::{iteration_rows, traced_iteration_mean, IterationRow};
use crate::report::svg::esc;
use kc_ir::KernelGraph;
use serde::Serialize;
use std::collections::BTreeMap;

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
