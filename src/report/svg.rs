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
        "collective" => "#b07aa1",
        _ => "#9c9c9c",
    }
}

fn esc(s: &str) -> String {
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
    let pts: Vec<(f64, f64, &str, u32)> = r
        .units
        .iter()
        .filter_map(|u| {
            u.measured_mean_us
                .map(|m| (u.traced_mean_us, m, u.tier.as_str(), u.id))
        })
        .filter(|(t, m, _, _)| *t > 0.0 && *m > 0.0 && t.is_finite() && m.is_finite())
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
    for (t, m, tier, id) in &pts {
        let _ = writeln!(
            o,
            r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{}" fill-opacity="0.8"><title>unit {id}: traced {t:.2} us, isolated {m:.2} us</title></circle>"#,
            sx(*t),
            sy(*m),
            tier_color(tier)
        );
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="9">{id}</text>"#,
            sx(*t) + 5.0,
            sy(*m) - 4.0
        );
    }
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

/// A Gantt chart of one replay, one row per stream: steps laid out in plan order, each
/// starting when its stream and the steps it waits on are done, lasting its unit's isolated
/// mean time (or its traced time, drawn grey, when the unit was not measured).
pub fn timeline(plan: &Plan, r: &Report) -> String {
    let measured: HashMap<u32, f64> = r
        .units
        .iter()
        .filter_map(|u| u.measured_mean_us.map(|m| (u.id, m)))
        .collect();
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
            .map(|&w| end[w as usize])
            .fold(ready[s.stream as usize], f64::max);
        start[i] = t;
        end[i] = t + dur;
        ready[s.stream as usize] = end[i];
    }
    let total = end.iter().copied().fold(0.0, f64::max).max(1e-9);
    let rows = plan.streams.len().max(1);
    let h = 90.0 + rows as f64 * 40.0;
    let mut o = String::new();
    header(&mut o, h, &format!("Replay timeline from isolated unit times ({:.1} us; grey = traced time, unit not measured)", total));
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
    for (i, s) in plan.steps.iter().enumerate() {
        let y = 45.0 + s.stream as f64 * 40.0;
        let unit = &plan.units[s.unit as usize];
        let color = if measured.contains_key(&s.unit) {
            tier_color(unit.tier.as_str())
        } else {
            "#c8c8c8"
        };
        let w = ((end[i] - start[i]) * scale).max(0.3);
        let _ = writeln!(
            o,
            r#"<rect x="{:.2}" y="{y}" width="{w:.2}" height="26" fill="{color}" stroke="white" stroke-width="0.2"><title>step {i}: unit {} {} ({:.2} us)</title></rect>"#,
            x0 + start[i] * scale,
            unit.id,
            esc(&unit.label),
            end[i] - start[i]
        );
    }
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
