//! `kc report --baseline OLD NEW`: regressions between two results files of the same mode,
//! overall and per unit, beyond a latency and an energy threshold. Invariant: only getting
//! slower or costlier counts as a regression; units whose call changed between the two
//! files are listed as not comparable rather than compared.

use crate::results::Results;
use serde::Serialize;

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Change {
    /// "overall" or "unit 12 aten::mm".
    pub item: String,
    /// "time_us" or "energy_j".
    pub metric: String,
    pub old: f64,
    pub new: f64,
    /// (new − old) / old × 100.
    pub change_pct: f64,
    pub regressed: bool,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Comparison {
    pub mode: String,
    pub threshold_time_pct: f64,
    pub threshold_energy_pct: f64,
    pub changes: Vec<Change>,
    pub regressions: usize,
    pub not_comparable: Vec<String>,
    /// How the two runs' conditions differ (device, driver, kc version, a rebuilt plan):
    /// compared all the same, but a change may come from there rather than from the work.
    pub differences: Vec<String>,
}

/// Why two runs cannot be compared at all (different work, or different cache policy), or
/// the differences in conditions to flag beside the comparison.
pub fn conditions(old: &Results, new: &Results) -> Result<Vec<String>, String> {
    if old.mode != new.mode {
        return Err(format!(
            "the baseline is a {} run and the new one a {} run",
            old.mode, new.mode
        ));
    }
    let cache = |r: &Results| r.isolated.as_ref().map(|i| i.cache.clone());
    if cache(old) != cache(new) {
        return Err(format!(
            "the runs used different cache policies ({} vs {}): a warm run is faster than a \
             cold one by design, not a regression; compare runs of one policy",
            cache(old).unwrap_or_default(),
            cache(new).unwrap_or_default()
        ));
    }
    if old.plan.sources != new.plan.sources {
        return Err(format!(
            "the runs replayed plans of different traces ({} vs {}): different work",
            old.plan.sources.join(", "),
            new.plan.sources.join(", ")
        ));
    }
    let mut d = Vec::new();
    if old.plan.crc32 != new.plan.crc32 {
        d.push(format!(
            "plan rebuilt from the same trace ({} units, {} steps -> {} units, {} steps)",
            old.plan.units, old.plan.steps, new.plan.units, new.plan.steps
        ));
    }
    let mut flag = |what: &str, a: &str, b: &str| {
        if a != b {
            d.push(format!("{what}: {a} -> {b}"));
        }
    };
    flag("device", &old.device.name, &new.device.name);
    flag(
        "driver",
        &old.device.driver_version,
        &new.device.driver_version,
    );
    flag("kc version", &old.kc_version, &new.kc_version);
    Ok(d)
}

fn change(item: &str, metric: &str, old: f64, new: f64, threshold: f64) -> Option<Change> {
    if old <= 0.0 || !old.is_finite() || !new.is_finite() {
        return None;
    }
    let pct = 100.0 * (new - old) / old;
    Some(Change {
        item: item.to_string(),
        metric: metric.to_string(),
        old,
        new,
        change_pct: pct,
        regressed: pct > threshold,
    })
}

pub fn compare(
    old: &Results,
    new: &Results,
    threshold_time_pct: f64,
    threshold_energy_pct: f64,
) -> Result<Comparison, String> {
    let differences = conditions(old, new)?;
    let mut changes = Vec::new();
    let mut not_comparable = Vec::new();
    if let (Some(a), Some(b)) = (&old.graph, &new.graph) {
        changes.extend(change(
            "overall",
            "time_us",
            a.replay_us.mean,
            b.replay_us.mean,
            threshold_time_pct,
        ));
        if let (Some(ea), Some(eb)) = (&a.energy, &b.energy) {
            changes.extend(change(
                "overall",
                "energy_j",
                ea.per_item_j.mean,
                eb.per_item_j.mean,
                threshold_energy_pct,
            ));
        }
    }
    if let (Some(a), Some(b)) = (&old.isolated, &new.isolated) {
        changes.extend(change(
            "overall",
            "time_us",
            a.predicted_us,
            b.predicted_us,
            threshold_time_pct,
        ));
        if let (Some(ea), Some(eb)) = (a.predicted_energy_j, b.predicted_energy_j) {
            changes.extend(change("overall", "energy_j", ea, eb, threshold_energy_pct));
        }
        for u in &new.units {
            let Some(o) = old.units.iter().find(|o| o.id == u.id) else {
                not_comparable.push(format!("unit {} {}: not in the baseline", u.id, u.label));
                continue;
            };
            if o.call != u.call {
                not_comparable.push(format!("unit {} {}: its call changed", u.id, u.label));
                continue;
            }
            let item = format!("unit {} {}", u.id, u.label);
            if let (Some(ta), Some(tb)) = (&o.time_us, &u.time_us) {
                changes.extend(change(
                    &item,
                    "time_us",
                    ta.mean,
                    tb.mean,
                    threshold_time_pct,
                ));
            }
            if let (Some(ea), Some(eb)) = (&o.energy, &u.energy) {
                changes.extend(change(
                    &item,
                    "energy_j",
                    ea.per_item_j.mean,
                    eb.per_item_j.mean,
                    threshold_energy_pct,
                ));
            }
        }
    }
    let regressions = changes.iter().filter(|c| c.regressed).count();
    Ok(Comparison {
        mode: new.mode.clone(),
        threshold_time_pct,
        threshold_energy_pct,
        changes,
        regressions,
        not_comparable,
        differences,
    })
}

pub fn render(c: &Comparison) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kc report --baseline ({} mode; thresholds: time {:.1} %, energy {:.1} %)\n",
        c.mode, c.threshold_time_pct, c.threshold_energy_pct
    );
    for d in &c.differences {
        let _ = writeln!(o, "note: the runs differ in {d}");
    }
    if !c.differences.is_empty() {
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "| item | metric | baseline | new | change | |\n|---|---|---|---|---|---|"
    );
    for ch in &c.changes {
        let _ = writeln!(
            o,
            "| {} | {} | {:.4} | {:.4} | {:+.1} % | {} |",
            ch.item,
            ch.metric,
            ch.old,
            ch.new,
            ch.change_pct,
            if ch.regressed { "REGRESSION" } else { "" }
        );
    }
    for n in &c.not_comparable {
        let _ = writeln!(o, "\nnot comparable: {n}");
    }
    let _ = writeln!(
        o,
        "\n{} regression{}",
        c.regressions,
        if c.regressions == 1 { "" } else { "s" }
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stats::Stats;
    use crate::results::{GraphResult, IsolatedSummary, UnitResult};

    fn graph(mean: f64) -> Results {
        Results {
            schema_version: 1,
            mode: "graph".into(),
            graph: Some(GraphResult {
                replay_us: Stats {
                    n: 10,
                    mean,
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn iso(times: &[(u32, &str, f64)]) -> Results {
        Results {
            schema_version: 1,
            mode: "isolated".into(),
            isolated: Some(IsolatedSummary {
                predicted_us: times.iter().map(|t| t.2).sum(),
                ..Default::default()
            }),
            units: times
                .iter()
                .map(|&(id, call, mean)| UnitResult {
                    id,
                    label: "aten::mm".into(),
                    call: call.into(),
                    time_us: Some(Stats {
                        n: 10,
                        mean,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn thresholds_decide_regressions() {
        let c = compare(&graph(100.0), &graph(109.0), 10.0, 10.0).unwrap();
        assert_eq!(c.regressions, 0);
        let c = compare(&graph(100.0), &graph(111.0), 10.0, 10.0).unwrap();
        assert_eq!(c.regressions, 1);
        assert!((c.changes[0].change_pct - 11.0).abs() < 1e-9);
        // Faster is never a regression.
        assert_eq!(
            compare(&graph(100.0), &graph(50.0), 10.0, 10.0)
                .unwrap()
                .regressions,
            0
        );
        assert!(compare(&graph(1.0), &iso(&[]), 10.0, 10.0).is_err());
    }

    #[test]
    fn units_are_compared_only_when_their_call_is_the_same() {
        let old = iso(&[(1, "gemm a", 10.0), (2, "gemm b", 10.0)]);
        let new = iso(&[(1, "gemm a", 12.0), (2, "gemm c", 30.0), (3, "x", 1.0)]);
        let c = compare(&old, &new, 10.0, 10.0).unwrap();
        // Overall 20 -> 43 and unit 1 10 -> 12 regress; unit 2 changed, unit 3 is new.
        assert_eq!(c.regressions, 2);
        assert_eq!(c.not_comparable.len(), 2);
    }
}
