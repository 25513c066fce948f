//! The summary `kc exec` prints of a results file (the graph replay, the isolated units,
//! what CUPTI saw, energy, notes), as text. Content only: the command line prints it.
//!
//! Invariant: every figure printed is read from the results file.

use crate::results::Results;
use std::fmt::Write;

pub fn render(r: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kc exec ({}) on {} (driver {}, cuBLAS {:?})",
        r.mode, r.device.name, r.device.driver_version, r.device.cublas_version
    );
    if let Some(i) = &r.idle {
        let _ = writeln!(
            o,
            "  idle power {:.1} W over {:.2} s",
            i.avg_power_w, i.duration_s
        );
    }
    if let Some(g) = &r.graph {
        let s = &g.replay_us;
        let _ = writeln!(
            o,
            "  graph replay: {} steps on {} streams; {} runs: mean {:.1} us  min {:.1}  max {:.1}  std {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}",
            g.steps_replayed, g.streams, g.runs, s.mean, s.min, s.max, s.std, s.p50, s.p90, s.p99
        );
        if let Some(l) = &g.latency_us {
            let _ = writeln!(
                o,
                "  one synchronized replay at a time ({} runs): mean {:.1} us  p50 {:.1} (launch latency included; back to back hides it)",
                l.n, l.mean, l.p50
            );
        }
        let _ = writeln!(
            o,
            "  traced time of the replayed steps {:.1} us (critical path {:.1} us); not executed: {} steps, {:.1} us traced",
            g.replayed_traced_us, g.replayed_traced_critical_path_us, g.steps_not_executed, g.not_executed_traced_us
        );
        if let Some(e) = &g.energy {
            // The GPU's temperature over the windows: energy at like work rises with it.
            let at = crate::results::energy::temperature_range(e.windows_in(r))
                .map_or(String::new(), |[lo, hi]| format!(", GPU {lo}-{hi} °C"));
            let _ = writeln!(
                o,
                "  energy per replay {:.4} J (cv {:.3}, {} windows{at}), above idle {:.4} J, avg power {:.1} W",
                e.per_item_j.mean,
                e.per_item_j.cv(),
                e.windows.len(),
                e.per_item_above_idle_j.mean,
                e.avg_power_w.mean
            );
        }
        let _ = match &g.memory_image {
            Some(m) => writeln!(
                o,
                "  memory image ({}): {:.1} MiB; operands placed {} of {}; tier-3 results written in place {} of {}; non-finite values {}",
                m.derivation,
                m.arena_bytes as f64 / (1u64 << 20) as f64,
                m.operands_placed,
                m.operands_placed + m.operands_private,
                m.results_placed,
                m.results_planned,
                m.nonfinite_share
                    .map_or("not sampled".to_string(), |x| format!("{:.2} %", x * 100.0))
            ),
            None => writeln!(o, "  memory image: none (every unit on its own buffers)"),
        };
        if let Some(f) = &g.fidelity {
            let _ = writeln!(
                o,
                "  fidelity (CUPTI, one replay): {} kernels launched, {} traced; {} aligned to steps, {} by name; in-context kernels {:.1} us of the replay's {:.1} us (span {:.1} us), traced {:.1} us for the aligned steps ({:.1} us in context); step median |error| {}",
                f.kernels_launched,
                f.kernels_traced,
                f.kernels_aligned,
                f.kernels_name_matched,
                f.in_context_kernels_us,
                g.replay_us.mean,
                f.kernel_span_us,
                f.aligned_traced_us,
                f.aligned_in_context_us,
                crate::report::render::step_medians(f)
            );
            if let Some(ran) = f.copies_launched {
                let _ = writeln!(
                    o,
                    "    copies and fills: {ran} run, {} traced for the replayed steps{}",
                    f.copies_traced,
                    if ran == f.copies_traced {
                        ""
                    } else {
                        " ⚠ the replay is not the traced program"
                    }
                );
            }
            if f.kernels_geometry_known > 0 {
                let _ = writeln!(
                    o,
                    "    launch geometry: {} of {} name-matched kernels with the traced grid and block",
                    f.kernels_geometry_matched, f.kernels_geometry_known
                );
            }
            for w in f.worst_units.iter().take(5) {
                let _ = writeln!(
                    o,
                    "    unit {} {}: {} steps, traced {:.1} us, in context {:.1} us, median {:+.1} %",
                    w.unit, w.label, w.steps, w.traced_us, w.in_context_us, w.median_error_pct
                );
            }
            for x in [&f.cut, &f.first_mismatch].into_iter().flatten() {
                let _ = writeln!(o, "    {x}");
            }
        }
    }
    if let Some(s) = &r.isolated {
        let _ = writeln!(
            o,
            "\n  {:>5} {:<4} {:<24} {:>7} {:>11} {:>11} {:>8} {:>12}  status",
            "unit", "tier", "label", "inv", "traced us", "measured us", "err %", "predicted us"
        );
        for u in &r.units {
            let (m, err, pred) = match (&u.time_us, u.predicted_us) {
                (Some(t), Some(p)) => (
                    format!("{:.2}", t.mean),
                    format!(
                        "{:+.1}",
                        100.0 * (t.mean - u.traced_mean_us) / u.traced_mean_us.max(1e-9)
                    ),
                    format!("{p:.1}"),
                ),
                _ => ("-".into(), "-".into(), "-".into()),
            };
            let label: String = u.label.chars().take(24).collect();
            let status: String = u.status.chars().take(60).collect();
            let _ = writeln!(
                o,
                "  {:>5} {:<4} {:<24} {:>7} {:>11.2} {:>11} {:>8} {:>12}  {}",
                u.id, u.tier, label, u.invocations, u.traced_mean_us, m, err, pred, status
            );
        }
        let _ = writeln!(
            o,
            "\n  predicted (sum of time x count, {} cache): {:.1} us for {}; their traced time {:.1} us; not executed: {:.1} us traced ({}), failed: {}",
            s.cache,
            s.predicted_us,
            crate::words::count(s.units_ok as u64, "unit"),
            s.executed_traced_us,
            s.not_executed_traced_us,
            crate::words::count(s.units_not_executed as u64, "unit"),
            s.units_failed
        );
        if let Some(e) = s.predicted_energy_j {
            let _ = writeln!(o, "  predicted energy (sum of energy x count): {e:.4} J");
        }
        let verified: Vec<&crate::results::UnitResult> = r
            .units
            .iter()
            .filter(|u| u.launches_verified.is_some())
            .collect();
        if !verified.is_empty() {
            let exact = verified
                .iter()
                .filter(|u| u.launches_verified.as_ref().is_some_and(|v| v.as_traced()))
                .count();
            let _ = writeln!(
                o,
                "  verify (CUPTI, one launch per unit): {exact} of {} units ran exactly the traced kernels",
                verified.len()
            );
            for u in verified
                .iter()
                .filter_map(|u| {
                    let v = u.launches_verified.as_ref()?;
                    (!v.as_traced()).then_some((u, v))
                })
                .take(8)
            {
                let not_traced = u.1.not_traced.first().map_or(String::new(), |(n, us)| {
                    format!(
                        ", not traced: {} ({us:.1} us)",
                        crate::results::fidelity::readable_name(n)
                    )
                });
                let _ = writeln!(
                    o,
                    "    unit {} {}: {:.2} kernels per invocation launched, {} traced, {:.0} % of traced names{not_traced}",
                    u.0.id,
                    u.0.label,
                    u.1.launched_per_invocation,
                    u.1.traced_per_invocation,
                    u.1.names_matched * 100.0
                );
            }
        }
    }
    // How the windows took their durations: derived from the windows, not kept as a note.
    for n in r
        .notes
        .iter()
        .cloned()
        .chain(crate::results::energy::ticks_note(&r.windows))
    {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// Isolated mean time per unit of an isolated run (empty for a graph run).
pub fn isolated_means(r: &Results) -> std::collections::HashMap<u32, f64> {
    r.units
        .iter()
        .filter_map(|u| u.time_us.as_ref().map(|t| (u.id, t.mean)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::energy::EnergyWindow;

    #[test]
    fn the_summary_says_how_the_windows_took_their_durations() {
        // Two windows taken on a 100 ms period, their ticks seen 4 ms late: said from the
        // windows themselves; results without that record say nothing of it.
        let taken = |seen: f64| EnergyWindow {
            label: "graph".into(),
            duration_s: 0.1,
            seen_duration_s: Some(seen),
            energy_j: 40.0,
            avg_power_w: 400.0,
            ticks: 2,
            ticks_seen_within_ms: Some([4.0, 4.0]),
            ..Default::default()
        };
        let r = Results {
            mode: "graph".into(),
            windows: vec![taken(0.1), taken(0.1)],
            ..Default::default()
        };
        let text = render(&r);
        assert!(
            text.contains("note: energy windows: 2 of the 2 windows' durations taken"),
            "{text}"
        );
        let older = Results {
            windows: vec![EnergyWindow {
                duration_s: 0.1,
                ticks: 2,
                ..Default::default()
            }],
            ..r
        };
        assert!(!render(&older).contains("energy windows:"));
    }
}
