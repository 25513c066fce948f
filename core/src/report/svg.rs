//! SVG charts of a report, written by hand (no plotting dependency): stacked tier bars
//! (traced, predicted, actual), a per-unit scatter of isolated against traced time, and a
//! replay timeline with one row per stream, laid out from the plan's steps and waits with
//! each step's isolated time. Invariant: a chart draws only the numbers it is given, and
//! says in its title where they came from.

use super::model::Report;
use crate::plan::types::Plan;
use std::collections::HashMap;
use std::fmt::Write;

const W: f64 = 900.0;

fn tier_color(t: &str) -> &'static str {
    match t {
        "1" => "#4e79a7",
        "2" => "#f28e2b",
        "3" => "#59a14f",
        "4" => "#e15759",
        "collective" => "#b07aa1",
        _ => "#9c9c9c",
    }
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn header(o: &mut String, h: f64, title: &str) {
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        W / 2.0,
        esc(title)
    );
}

/// A legend of the tiers in `tiers` (plus extra named swatches), in one row from (x, y).
fn legend(o: &mut String, x: f64, y: f64, tiers: &[&str], extra: &[(&str, &str)]) {
    let mut at = x;
    let mut items: Vec<(String, &str)> = Vec::new();
    for t in ["1", "2", "3", "4", "collective"] {
        if tiers.contains(&t) {
            let name = if t == "collective" {
                "collective".to_string()
            } else {
                format!("tier {t}")
            };
            items.push((name, tier_color(t)));
        }
    }
    for (name, color) in extra {
        items.push((name.to_string(), color));
    }
    for (name, color) in items {
        let _ = writeln!(
            o,
            r#"<rect x="{at:.1}" y="{y:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            at + 16.0,
            y + 10.5,
            esc(&name)
        );
        at += 30.0 + 6.5 * name.len() as f64;
    }
}

/// Text cut to `n` characters with an ellipsis, for chart labels (hover text keeps it whole).
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// A "nice" axis step for a range.
/// Tick positions 0, step, 2 step, ... up to `max`: at most a dozen, and none when `max`
/// is not a finite positive number, so no input can make an axis loop without end.
fn axis_ticks(max: f64, ticks: f64) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0];
    }
    let step = nice_step(max, ticks);
    (0..=(ticks as usize * 2 + 2))
        .map(|k| k as f64 * step)
        .take_while(|t| *t <= max * 1.0001)
        .collect()
}

fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The error budget as a waterfall: the prediction, each measured part as a step from the
/// running total (right: adds time, left: removes it), and what was predicted. Empty
/// without a budget.
pub fn waterfall(r: &Report) -> String {
    let Some(b) = &r.error_budget else {
        return String::new();
    };
    let mut rows: Vec<(String, f64, f64, &str)> = Vec::new();
    rows.push(("Σ isolated × count".into(), 0.0, b.prediction_us, "#4c72b0"));
    let mut at = b.prediction_us;
    for p in &b.parts {
        let color = if p.us >= 0.0 { "#dd8452" } else { "#55a868" };
        rows.push((p.what.clone(), at, at + p.us, color));
        at += p.us;
    }
    if b.unexplained_us.abs() > 1e-6 {
        rows.push(("unexplained".into(), at, at + b.unexplained_us, "#9c9c9c"));
    }
    rows.push((b.target.clone(), 0.0, b.target_us, "#4c72b0"));
    let row_h = 30.0;
    let h = 70.0 + row_h * rows.len() as f64 + 40.0;
    let mut o = String::new();
    header(
        &mut o,
        h,
        "Error budget per replay: from the prediction to what it predicts (us)",
    );
    let max = rows.iter().map(|r| r.1.max(r.2)).fold(1e-9, f64::max);
    // The parts are a few percent of the totals: the axis starts below the smallest
    // running total (said on the chart), so the steps are visible.
    let low = rows
        .iter()
        .skip(1)
        .take(rows.len().saturating_sub(2))
        .flat_map(|r| [r.1, r.2])
        .chain([b.prediction_us, b.target_us])
        .fold(f64::INFINITY, f64::min);
    let span = (max - low).max(max * 0.02);
    let origin = (low - span * 0.5).max(0.0);
    let (x0, x1) = (330.0, W - 90.0);
    let scale = (x1 - x0) / (max - origin).max(1e-9);
    for (i, (label, from, to, color)) in rows.iter().enumerate() {
        let y = 50.0 + row_h * i as f64;
        let (a, z) = (
            from.min(*to).max(origin) - origin,
            from.max(*to).max(origin) - origin,
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            x0 - 8.0,
            y + 17.0,
            esc(label)
        );
        let _ = writeln!(
            o,
            r#"<rect x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{color}"><title>{}: {:+.1} us</title></rect>"#,
            x0 + a * scale,
            y + 4.0,
            ((z - a) * scale).max(1.0),
            row_h - 10.0,
            esc(label),
            to - from
        );
        let value = if i == 0 || i + 1 == rows.len() {
            format!("{to:.1} us")
        } else {
            format!("{:+.1}", to - from)
        };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{}">{}</text>"#,
            x0 + z * scale + 6.0,
            y + 17.0,
            value
        );
    }
    let y = 50.0 + row_h * rows.len() as f64 + 20.0;
    let _ = writeln!(
        o,
        r##"<text x="{}" y="{y}" fill="#555">axis from {origin:.0} us. Orange adds time, green removes it; the parts are differences of measured figures and add up.</text>"##,
        x0 - 300.0
    );
    o.push_str("</svg>\n");
    o
}

/// Three horizontal bars: traced time by tier, predicted (isolated) by tier, actual.
pub fn tier_bars(r: &Report) -> String {
    let mut o = String::new();
    header(
        &mut o,
        260.0,
        "Time per replay by tier: traced, predicted (Σ isolated × count), actual (graph replay)",
    );
    let traced: Vec<(String, f64)> = r
        .tiers
        .iter()
        .map(|t| (t.tier.clone(), t.traced_us))
        .collect();
    let predicted: Vec<(String, f64)> = r
        .tiers
        .iter()
        .filter_map(|t| t.predicted_us.map(|p| (t.tier.clone(), p)))
        .collect();
    let actual: Vec<(String, f64)> = r
        .time
        .actual_us
        .map(|a| vec![("graph".to_string(), a)])
        .unwrap_or_default();
    let total = |v: &[(String, f64)]| v.iter().map(|x| x.1).sum::<f64>();
    let max = total(&traced)
        .max(total(&predicted))
        .max(total(&actual))
        .max(1e-9);
    // Room on the right for the total written after the longest bar.
    let (x0, x1) = (120.0, W - 100.0);
    let scale = (x1 - x0) / max;
    let rows = [
        ("traced", &traced),
        ("predicted", &predicted),
        ("actual", &actual),
    ];
    for (k, (name, segs)) in rows.iter().enumerate() {
        let y = 50.0 + k as f64 * 50.0;
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="end">{name}</text>"#,
            x0 - 8.0,
            y + 20.0
        );
        let mut x = x0;
        for (tier, v) in segs.iter() {
            let w = v * scale;
            let color = if tier == "graph" {
                "#333333"
            } else {
                tier_color(tier)
            };
            let _ = writeln!(
                o,
                r#"<rect x="{x:.1}" y="{y}" width="{w:.1}" height="30" fill="{color}"><title>{} {}: {v:.1} us</title></rect>"#,
                name,
                esc(tier)
            );
            x += w;
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{}" font-size="11">{:.1} us</text>"#,
            x + 4.0,
            y + 20.0,
            total(segs)
        );
    }
    for t in axis_ticks(max, 6.0) {
        let x = x0 + t * scale;
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="200" x2="{x:.1}" y2="205" stroke="#555"/><text x="{x:.1}" y="218" text-anchor="middle" font-size="10">{t}</text>"##
        );
    }
    let _ = writeln!(
        o,
        r##"<line x1="{x0}" y1="200" x2="{x1}" y2="200" stroke="#555"/><text x="{}" y="235" text-anchor="middle" font-size="11">microseconds</text>"##,
        (x0 + x1) / 2.0
    );
    let mut lx = x0;
    for t in &r.tiers {
        let _ = writeln!(
            o,
            r#"<rect x="{lx}" y="240" width="12" height="12" fill="{}"/><text x="{}" y="250" font-size="11">tier {}</text>"#,
            tier_color(&t.tier),
            lx + 16.0,
            esc(&t.tier)
        );
        lx += 110.0;
    }
    o.push_str("</svg>\n");
    o
}

/// Isolated mean time against traced mean time per unit, log-log, with the y = x line.
pub fn scatter(r: &Report) -> String {
    let mut o = String::new();
    let h = 600.0;
    header(
        &mut o,
        h,
        "Per unit: isolated replay time against traced time (log-log; on the line = exact)",
    );
    let units: Vec<&super::model::UnitRow> = r
        .units
        .iter()
        .filter(|u| {
            u.measured_mean_us.is_some_and(|m| {
                m > 0.0 && m.is_finite() && u.traced_mean_us > 0.0 && u.traced_mean_us.is_finite()
            })
        })
        .collect();
    let pts: Vec<(f64, f64, &str, u32)> = units
        .iter()
        .filter_map(|u| {
            u.measured_mean_us
                .map(|m| (u.traced_mean_us, m, u.tier.as_str(), u.id))
        })
        .collect();
    let (x0, x1, y0, y1) = (80.0, W - 40.0, h - 60.0, 50.0);
    if pts.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle">no isolated measurements</text>"#,
            W / 2.0,
            h / 2.0
        );
        o.push_str("</svg>\n");
        return o;
    }
    let lo = pts
        .iter()
        .map(|p| p.0.min(p.1))
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let hi = pts
        .iter()
        .map(|p| p.0.max(p.1))
        .fold(0.0, f64::max)
        .log10()
        .ceil()
        .max(lo + 1.0);
    let sx = |v: f64| x0 + (v.log10() - lo) / (hi - lo) * (x1 - x0);
    let sy = |v: f64| y0 - (v.log10() - lo) / (hi - lo) * (y0 - y1);
    let _ = writeln!(
        o,
        r##"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="none" stroke="#555"/>"##,
        x1 - x0,
        y0 - y1
    );
    let mut e = lo;
    while e <= hi {
        let v = 10f64.powf(e);
        let _ = writeln!(
            o,
            r##"<line x1="{:.1}" y1="{y0}" x2="{:.1}" y2="{}" stroke="#555"/><text x="{:.1}" y="{}" text-anchor="middle" font-size="10">{v}</text>"##,
            sx(v),
            sx(v),
            y0 + 5.0,
            sx(v),
            y0 + 18.0
        );
        let _ = writeln!(
            o,
            r##"<line x1="{}" y1="{:.1}" x2="{x0}" y2="{:.1}" stroke="#555"/><text x="{}" y="{:.1}" text-anchor="end" font-size="10">{v}</text>"##,
            x0 - 5.0,
            sy(v),
            sy(v),
            x0 - 8.0,
            sy(v) + 3.0
        );
        e += 1.0;
    }
    let (a, b) = (10f64.powf(lo), 10f64.powf(hi));
    let _ = writeln!(
        o,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-dasharray="4,3"/>"##,
        sx(a),
        sy(a),
        sx(b),
        sy(b)
    );
    // Every unit is a point with its numbers as hover text; only the units that weigh
    // most in the prediction (traced time × invocations) are labelled, and a label that
    // would cover another moves down instead of piling up.
    const LABELLED: usize = 8;
    let mut by_weight: Vec<&&super::model::UnitRow> = units.iter().collect();
    by_weight.sort_by(|a, b| {
        let w = |u: &super::model::UnitRow| u.traced_mean_us * u.invocations as f64;
        w(b).total_cmp(&w(a))
    });
    let labelled: Vec<u32> = by_weight.iter().take(LABELLED).map(|u| u.id).collect();
    let mut placed: Vec<(f64, f64, f64)> = Vec::new();
    for u in &units {
        let (t, m) = (u.traced_mean_us, u.measured_mean_us.unwrap_or(0.0));
        let _ = writeln!(
            o,
            r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{}" fill-opacity="0.8"><title>unit {} {}: traced {t:.2} us, isolated {m:.2} us, x{} invocations</title></circle>"#,
            sx(t),
            sy(m),
            tier_color(&u.tier),
            u.id,
            esc(&u.label),
            u.invocations
        );
    }
    for u in units.iter().filter(|u| labelled.contains(&u.id)) {
        let (t, m) = (u.traced_mean_us, u.measured_mean_us.unwrap_or(0.0));
        let text = format!("{} {}", u.id, short(&u.label, 22));
        let width = 5.5 * text.chars().count() as f64;
        let (x, mut y) = (sx(t) + 6.0, sy(m) - 5.0);
        for _ in 0..12 {
            let clash = placed
                .iter()
                .any(|&(px, py, pw)| (py - y).abs() < 11.0 && x < px + pw && px < x + width);
            if !clash {
                break;
            }
            y += 11.0;
        }
        placed.push((x, y, width));
        if y > sy(m) - 5.0 {
            // Moved off its point: a leader line says whose label it is.
            let _ = writeln!(
                o,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-width="0.6"/>"##,
                sx(t) + 3.0,
                sy(m) + 2.0,
                x - 1.0,
                y - 3.0
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="10">{}</text>"#,
            esc(&text)
        );
    }
    let tiers: Vec<&str> = units.iter().map(|u| u.tier.as_str()).collect();
    legend(&mut o, x0 + 10.0, y1 + 10.0, &tiers, &[]);
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">labelled: the {} units weighing most (traced time × count); hover a point for any unit</text>"#,
        x1 - 6.0,
        y0 - 8.0,
        labelled.len()
    );
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">traced mean per invocation (us)</text>"#,
        (x0 + x1) / 2.0,
        h - 20.0
    );
    let _ = writeln!(
        o,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">isolated mean per invocation (us)</text>"#,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0
    );
    o.push_str("</svg>\n");
    o
}

/// Isolated mean time per unit id, for the units that were measured.
pub fn measured_means(r: &Report) -> HashMap<u32, f64> {
    r.units
        .iter()
        .filter_map(|u| u.measured_mean_us.map(|m| (u.id, m)))
        .collect()
}

/// Start and end (us) of every plan step in one replay: each starts when its stream and
/// the steps it waits on are done and lasts its unit's isolated mean time, or its traced
/// time when the unit was not measured.
pub fn lay_out(plan: &Plan, measured: &HashMap<u32, f64>) -> (Vec<f64>, Vec<f64>) {
    let n = plan.steps.len();
    let mut start = vec![0.0f64; n];
    let mut end = vec![0.0f64; n];
    let mut ready = vec![0.0f64; plan.streams.len()];
    for (i, s) in plan.steps.iter().enumerate() {
        let dur = measured
            .get(&s.unit)
            .copied()
            .unwrap_or(s.traced_ns as f64 / 1000.0);
        let t = s
            .waits_on
            .iter()
            .map(|&w| end.get(w as usize).copied().unwrap_or(0.0))
            .fold(
                ready.get(s.stream as usize).copied().unwrap_or(0.0),
                f64::max,
            );
        start[i] = t;
        end[i] = t + dur;
        if let Some(r) = ready.get_mut(s.stream as usize) {
            *r = end[i];
        }
    }
    (start, end)
}

/// A Gantt chart of one replay, one row per stream: steps laid out in plan order, each
/// starting when its stream and the steps it waits on are done, lasting its unit's isolated
/// mean time (or its traced time, drawn grey, when the unit was not measured).
pub fn timeline(plan: &Plan, r: &Report) -> String {
    let measured = measured_means(r);
    let n = plan.steps.len();
    let (start, end) = lay_out(plan, &measured);
    let total = end.iter().copied().fold(0.0, f64::max).max(1e-9);
    let rows = plan.streams.len().max(1);
    let h = 110.0 + rows as f64 * 40.0;
    let mut o = String::new();
    header(
        &mut o,
        h,
        &format!(
            "One replay laid out from isolated unit times: {:.1} us, {} on {}",
            total,
            crate::words::count(n as u64, "step"),
            crate::words::count(plan.streams.len() as u64, "stream")
        ),
    );
    let (x0, x1) = (110.0, W - 30.0);
    let scale = (x1 - x0) / total;
    for (k, st) in plan.streams.iter().enumerate() {
        let y = 45.0 + k as f64 * 40.0;
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="end">stream {}</text>"#,
            x0 - 8.0,
            y + 18.0,
            st.trace_stream
        );
    }
    // One bar per run of back-to-back steps of one colour on a stream: thousands of
    // microsecond steps would otherwise be hairlines. A bar's hover text says how many
    // steps it holds and which units take most of its time.
    struct Run {
        stream: u32,
        color: &'static str,
        from: f64,
        to: f64,
        steps: usize,
        by_unit: HashMap<u32, f64>,
    }
    let color_of = |unit: u32| -> &'static str {
        if measured.contains_key(&unit) {
            tier_color(plan.units[unit as usize].tier.as_str())
        } else {
            "#c8c8c8"
        }
    };
    // A gap shorter than half a pixel does not break a run.
    let join = 0.5 / scale;
    let mut runs: Vec<Run> = Vec::new();
    let mut open: HashMap<u32, usize> = HashMap::new();
    for (i, s) in plan.steps.iter().enumerate() {
        let color = color_of(s.unit);
        let dur = end[i] - start[i];
        match open.get(&s.stream).map(|&k| &mut runs[k]) {
            Some(r) if r.color == color && start[i] - r.to <= join => {
                r.to = end[i];
                r.steps += 1;
                *r.by_unit.entry(s.unit).or_default() += dur;
            }
            _ => {
                open.insert(s.stream, runs.len());
                runs.push(Run {
                    stream: s.stream,
                    color,
                    from: start[i],
                    to: end[i],
                    steps: 1,
                    by_unit: HashMap::from([(s.unit, dur)]),
                });
            }
        }
    }
    // Too many runs to see (tiers alternating step by step): each lane becomes a row of
    // time bins, each bin a stack of its colours' shares of the bin's time.
    const MAX_RUNS: usize = 300;
    if runs.len() > MAX_RUNS {
        const BINS: usize = 240;
        let bin = total / BINS as f64;
        let mut share: HashMap<(u32, usize, &'static str), f64> = HashMap::new();
        for (i, s) in plan.steps.iter().enumerate() {
            let color = color_of(s.unit);
            let (a, b) = (start[i], end[i]);
            let (first, last) = ((a / bin) as usize, ((b / bin) as usize).min(BINS - 1));
            for k in first..=last {
                let lo = a.max(k as f64 * bin);
                let hi = b.min((k + 1) as f64 * bin);
                if hi > lo {
                    *share.entry((s.stream, k, color)).or_default() += hi - lo;
                }
            }
        }
        let order = [
            "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#9c9c9c", "#c8c8c8",
        ];
        let mut keys: Vec<(u32, usize)> = share.keys().map(|&(st, k, _)| (st, k)).collect();
        keys.sort_unstable();
        keys.dedup();
        for (st, k) in keys {
            let y0 = 45.0 + st as f64 * 40.0 + 26.0;
            let mut y = y0;
            let mut parts = Vec::new();
            for c in order {
                let Some(&t) = share.get(&(st, k, c)) else {
                    continue;
                };
                let hgt = 26.0 * (t / bin).min(1.0);
                y -= hgt;
                let _ = writeln!(
                    o,
                    r#"<rect x="{:.2}" y="{y:.2}" width="{:.2}" height="{hgt:.2}" fill="{c}"/>"#,
                    x0 + k as f64 * bin * scale,
                    (bin * scale).max(0.3)
                );
                parts.push(format!("{:.0} %", 100.0 * t / bin));
            }
            let _ = writeln!(
                o,
                r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="26" fill="none"><title>{:.1} to {:.1} us: busy {}</title></rect>"#,
                x0 + k as f64 * bin * scale,
                y0 - 26.0,
                (bin * scale).max(0.3),
                k as f64 * bin,
                (k + 1) as f64 * bin,
                parts.join(" + ")
            );
        }
        runs.clear();
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{} bins of {:.1} us; a bar's height is each colour's share of its bin</text>"#,
            x1,
            h - 12.0,
            BINS,
            bin
        );
    }
    for r in &runs {
        let y = 45.0 + r.stream as f64 * 40.0;
        let w = ((r.to - r.from) * scale).max(0.3);
        let mut top: Vec<(&u32, &f64)> = r.by_unit.iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
        let names: Vec<String> = top
            .iter()
            .take(3)
            .map(|(u, t)| format!("unit {u} {} {t:.1} us", plan.units[**u as usize].label))
            .collect();
        let _ = writeln!(
            o,
            r#"<rect x="{:.2}" y="{y}" width="{w:.2}" height="26" fill="{}"><title>{} from {:.1} to {:.1} us: {}</title></rect>"#,
            x0 + r.from * scale,
            r.color,
            crate::words::count(r.steps as u64, "step"),
            r.from,
            r.to,
            esc(&names.join("; "))
        );
    }
    let tiers: Vec<&str> = plan
        .steps
        .iter()
        .filter(|s| measured.contains_key(&s.unit))
        .map(|s| plan.units[s.unit as usize].tier.as_str())
        .collect();
    let grey = plan.steps.iter().any(|s| !measured.contains_key(&s.unit));
    legend(
        &mut o,
        x0,
        h - 22.0,
        &tiers,
        if grey {
            &[("not measured (traced time)", "#c8c8c8")]
        } else {
            &[]
        },
    );
    let axis_y = 45.0 + rows as f64 * 40.0;
    for t in axis_ticks(total, 8.0) {
        let x = x0 + t * scale;
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{axis_y}" x2="{x:.1}" y2="{}" stroke="#555"/><text x="{x:.1}" y="{}" text-anchor="middle" font-size="10">{t}</text>"##,
            axis_y + 5.0,
            axis_y + 17.0
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">microseconds</text>"#,
        (x0 + x1) / 2.0,
        axis_y + 32.0
    );
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(1000.0, 5.0), 200.0);
        assert_eq!(nice_step(7.0, 7.0), 1.0);
        assert_eq!(nice_step(2300.0, 6.0), 500.0);
    }
}
