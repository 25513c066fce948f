//! The replay as a Chrome trace (opens in Perfetto beside the original trace): one event
//! per energy window and per measured unit or graph run, on the host wall clock, with
//! power as a counter track; and, given the plan, one replay's steps on their streams.
//! Invariant: one time base: measurement events are the results' own Unix stamps less the
//! first of them (kept in `otherData.measurements_t0_unix_ms`), in microseconds, never
//! rounded to coarser than a millisecond; the steps of the laid-out replay (a separate
//! process) start at 0 too, and last their unit's isolated mean time, or the traced time
//! where the unit was not measured, and say which.

use crate::plan::types::Plan;
use crate::results::Results;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The replayed steps of one replay, on one thread per stream of a second process.
fn replay_steps(ev: &mut Vec<Value>, plan: &Plan, measured: &HashMap<u32, f64>) {
    const PID: u32 = 2;
    ev.push(json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "one replay, laid out from isolated unit times (traced where not measured)"}}));
    for (k, s) in plan.streams.iter().enumerate() {
        ev.push(json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": k + 1, "args": {"name": format!("rank {} stream {}", s.rank, s.trace_stream)}}));
    }
    let (start, end) = super::svg::lay_out(plan, measured);
    for (i, s) in plan.steps.iter().enumerate() {
        let Some(u) = plan.units.get(s.unit as usize) else {
            continue;
        };
        let isolated = measured.get(&s.unit).copied();
        ev.push(json!({
            "ph": "X", "cat": format!("tier {}", u.tier.as_str()), "name": u.label, "pid": PID, "tid": s.stream + 1,
            "ts": start[i], "dur": end[i] - start[i],
            "args": {"step": i, "unit": u.id, "call": crate::plan::show::call_str(&u.call), "traced_us": s.traced_ns as f64 / 1000.0, "isolated_us": isolated, "duration_from": if isolated.is_some() { "isolated mean" } else { "traced (not measured)" }}
        }));
    }
}

/// The Chrome trace of a results file; with `replay`, also the plan's steps laid out.
pub fn chrome_trace(r: &Results, replay: Option<(&Plan, &HashMap<u32, f64>)>) -> Value {
    // The first measurement is time 0, as the laid-out replay's first step is: Unix stamps
    // (1.8e15 us) beside steps from 0 showed 57 years apart in Perfetto.
    let t0 = r
        .windows
        .iter()
        .map(|w| w.start_unix_ms)
        .chain(r.graph.as_ref().and_then(|g| g.timed_start_unix_ms))
        .chain(r.units.iter().filter_map(|u| u.measured_start_unix_ms))
        .min()
        .unwrap_or(0);
    let us = |unix_ms: i64| unix_ms.saturating_sub(t0) as f64 * 1000.0;
    let mut ev: Vec<Value> = vec![
        json!({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": format!("kc replay ({}) on {}", r.mode, r.device.name)}}),
        json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "energy windows"}}),
        json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "measurements"}}),
    ];
    for w in &r.windows {
        ev.push(json!({
            "ph": "X", "cat": "energy_window", "name": w.label, "pid": 1, "tid": 1,
            "ts": us(w.start_unix_ms), "dur": (w.end_unix_ms - w.start_unix_ms) as f64 * 1000.0,
            "args": {"energy_j": w.energy_j, "avg_power_w": w.avg_power_w, "duration_s": w.duration_s, "completed": w.completed, "ticks": w.ticks}
        }));
        ev.push(json!({"ph": "C", "name": "power (W)", "pid": 1, "ts": us(w.start_unix_ms), "args": {"avg": w.avg_power_w}}));
        // The window's mean holds to its end; between windows the counter keeps its last
        // value rather than dropping to a 0 W nobody measured.
        ev.push(json!({"ph": "C", "name": "power (W)", "pid": 1, "ts": us(w.end_unix_ms), "args": {"avg": w.avg_power_w}}));
    }
    if let Some(g) = &r.graph {
        if let (Some(a), Some(b)) = (g.timed_start_unix_ms, g.timed_end_unix_ms) {
            ev.push(json!({
                "ph": "X", "cat": "graph", "name": format!("{} timed graph replays", g.runs), "pid": 1, "tid": 2,
                "ts": us(a), "dur": (b - a) as f64 * 1000.0,
                "args": {"replay_mean_us": g.replay_us.mean, "steps": g.steps_replayed}
            }));
        }
    }
    for u in &r.units {
        if let (Some(a), Some(b)) = (u.measured_start_unix_ms, u.measured_end_unix_ms) {
            ev.push(json!({
                "ph": "X", "cat": "unit", "name": format!("unit {} {}", u.id, u.label), "pid": 1, "tid": 2,
                "ts": us(a), "dur": (b - a) as f64 * 1000.0,
                "args": {"call": u.call, "mean_us": u.time_us.as_ref().map(|t| t.mean), "launches": u.launches, "unroll": u.unroll}
            }));
        }
    }
    if let Some((plan, measured)) = replay {
        replay_steps(&mut ev, plan, measured);
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ms", "otherData": {"kc_version": r.kc_version, "plan": r.plan.file, "measurements_t0_unix_ms": t0}})
}
