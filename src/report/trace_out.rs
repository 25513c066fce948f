//! The replay as a Chrome trace (opens in Perfetto beside the original trace): one event
//! per energy window and per measured unit or graph run, on the host wall clock, with
//! power as a counter track. Invariant: event times are the results' own ISO/Unix stamps,
//! converted to microseconds without rounding to coarser than a millisecond.

use crate::exec::results::Results;
use serde_json::{json, Value};

pub fn chrome_trace(r: &Results) -> Value {
    let mut ev: Vec<Value> = vec![
        json!({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": format!("kc replay ({}) on {}", r.mode, r.device.name)}}),
        json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "energy windows"}}),
        json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "measurements"}}),
    ];
    for w in &r.windows {
        ev.push(json!({
            "ph": "X", "cat": "energy_window", "name": w.label, "pid": 1, "tid": 1,
            "ts": w.start_unix_ms as f64 * 1000.0, "dur": (w.end_unix_ms - w.start_unix_ms) as f64 * 1000.0,
            "args": {"energy_j": w.energy_j, "avg_power_w": w.avg_power_w, "duration_s": w.duration_s, "completed": w.completed, "ticks": w.ticks}
        }));
        ev.push(json!({"ph": "C", "name": "power (W)", "pid": 1, "ts": w.start_unix_ms as f64 * 1000.0, "args": {"avg": w.avg_power_w}}));
        ev.push(json!({"ph": "C", "name": "power (W)", "pid": 1, "ts": w.end_unix_ms as f64 * 1000.0, "args": {"avg": 0.0}}));
    }
    if let Some(g) = &r.graph {
        if let (Some(a), Some(b)) = (g.timed_start_unix_ms, g.timed_end_unix_ms) {
            ev.push(json!({
                "ph": "X", "cat": "graph", "name": format!("{} timed graph replays", g.runs), "pid": 1, "tid": 2,
                "ts": a as f64 * 1000.0, "dur": (b - a) as f64 * 1000.0,
                "args": {"replay_mean_us": g.replay_us.mean, "steps": g.steps_replayed}
            }));
        }
    }
    for u in &r.units {
        if let (Some(a), Some(b)) = (u.measured_start_unix_ms, u.measured_end_unix_ms) {
            ev.push(json!({
                "ph": "X", "cat": "unit", "name": format!("unit {} {}", u.id, u.label), "pid": 1, "tid": 2,
                "ts": a as f64 * 1000.0, "dur": (b - a) as f64 * 1000.0,
                "args": {"call": u.call, "mean_us": u.time_us.as_ref().map(|t| t.mean), "launches": u.launches, "unroll": u.unroll}
            }));
        }
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ms", "otherData": {"kc_version": r.kc_version, "plan": r.plan.file}})
}
