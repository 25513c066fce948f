//! The reads of each unit's steps and where the model leaves them in L2, two ways: the
//! summed distance (`ModelTouches::reads_at`, what the record in the model's cache state
//! has used) and the distinct bytes between (`ModelTouches::reads_at_distinct`). One JSON
//! line per unit: its steps, the bytes its steps read, and the bytes each way puts within
//! a quarter, half, three quarters and the whole of the L2 given, per step.
//!
//!   cargo run --release --example reuse_distance -- L2_BYTES PLAN.kcplan [...]
use std::io::Write;

mod plans;

fn main() {
    let mut args = std::env::args().skip(1);
    let l2: u64 = match args.next().and_then(|a| a.parse().ok()) {
        Some(b) => b,
        None => {
            eprintln!("usage: reuse_distance L2_BYTES PLAN.kcplan [...]");
            std::process::exit(2);
        }
    };
    let mut out = std::io::stdout().lock();
    for plans::PlanTouches {
        path,
        plan,
        touches,
        steps_by_unit: steps,
    } in plans::each(args)
    {
        let shares = [0.25, 0.5, 0.75, 1.0];
        for (unit, st) in steps {
            let (mut read, mut summed, mut distinct) = (0u64, [0u64; 4], [0u64; 4]);
            for &s in &st {
                let a = touches.reads_at(s, 2 * l2);
                let b = touches.reads_at_distinct(s, 2 * l2);
                read += a.iter().map(|r| r.span.1).sum::<u64>();
                for (i, f) in shares.iter().enumerate() {
                    let lim = (l2 as f64 * f) as u64;
                    summed[i] += a
                        .iter()
                        .filter(|r| r.bytes_between < lim)
                        .map(|r| r.span.1)
                        .sum::<u64>();
                    distinct[i] += b
                        .iter()
                        .filter(|r| r.bytes_between < lim)
                        .map(|r| r.span.1)
                        .sum::<u64>();
                }
            }
            let n = st.len() as u64;
            let per = |v: [u64; 4]| v.map(|x| x / n);
            let line = serde_json::json!({"plan": path, "unit": unit, "label": plan.units[unit as usize].label,
                "steps": n, "read": read / n, "summed": per(summed), "distinct": per(distinct)});
            if writeln!(out, "{line}").is_err() {
                return;
            }
        }
    }
}
