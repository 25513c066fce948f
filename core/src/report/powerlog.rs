//! External power logs: WattsUp (`time,id,pm1,pm2,sum`, about 1 Hz) and nvidia-smi CSV
//! (`--query-gpu=timestamp,power.draw --format=csv`), matched to the measured windows of
//! a results file and integrated with the trapezoid rule.
//!
//! Clocks: log times are read as the meter wrote them and shifted by `clock_offset_s`
//! (added to every log time) before comparison with the results' UTC window stamps. Times
//! without a zone are taken as UTC plus that offset, so a log written in local time UTC+1
//! needs `--clock-offset -3600`. Invariant: a window is integrated only when the log covers
//! it from start to end; its edges are interpolated between the samples around them.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Seconds since the Unix epoch, after the clock offset.
    pub t: f64,
    pub watts: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    WattsUp,
    NvidiaSmi,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LogError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `1790857026.5`, `2026-11-21 14:05:03.123`, `2026/11/21 14:05:03.123` or
/// `2026-11-21T14:05:03.123Z` into Unix seconds (zone-less times as UTC).
pub fn parse_time(s: &str) -> Option<f64> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    let s = s.trim_end_matches('Z');
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut dp = date.split(['-', '/']);
    let (y, m, d): (i64, i64, i64) = (
        dp.next()?.parse().ok()?,
        dp.next()?.parse().ok()?,
        dp.next()?.parse().ok()?,
    );
    if dp.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut tp = time.split(':');
    let (hh, mm): (i64, i64) = (tp.next()?.parse().ok()?, tp.next()?.parse().ok()?);
    let ss: f64 = tp.next()?.parse().ok()?;
    if tp.next().is_some() || hh > 23 || mm > 59 || !(0.0..61.0).contains(&ss) {
        return None;
    }
    Some((days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60) as f64 + ss)
}

/// Power above this is no reading of one device (the largest GPUs draw about 1 kW, a
/// whole node a few kW): a value beyond it is a corrupt row, not a measurement.
pub const MAX_WATTS: f64 = 100_000.0;

fn watts(s: &str) -> Option<f64> {
    let v: f64 = s.trim().trim_end_matches('W').trim().parse().ok()?;
    (v.is_finite() && (0.0..=MAX_WATTS).contains(&v)).then_some(v)
}

/// Decides the format from the header line.
pub fn detect(text: &str) -> Option<LogFormat> {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())?
        .to_ascii_lowercase();
    if first.contains("power.draw") {
        Some(LogFormat::NvidiaSmi)
    } else if first.replace(' ', "").starts_with("time,id,pm1,pm2,sum") {
        Some(LogFormat::WattsUp)
    } else {
        None
    }
}

/// Where the fields of a row are: taken from the header by name for nvidia-smi (which
/// writes whatever `--query-gpu` asked for, in that order), fixed for WattsUp.
#[derive(Debug, Clone, Copy)]
struct Columns {
    count: usize,
    time: usize,
    power: usize,
    gpu: Option<usize>,
}

fn smi_columns(header: &str, line: usize) -> Result<Columns, LogError> {
    let names: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let find = |want: &dyn Fn(&str) -> bool| names.iter().position(|n| want(n));
    let time = find(&|n| n == "timestamp").ok_or_else(|| LogError {
        line,
        message: "the nvidia-smi header has no `timestamp` column".into(),
    })?;
    // `power.draw [W]` (also `power.draw.instant [W]`, `power.draw.average [W]`); the
    // plain reading is preferred when several are logged.
    let power = find(&|n| n == "power.draw [w]" || n == "power.draw")
        .or_else(|| find(&|n| n.starts_with("power.draw")))
        .ok_or_else(|| LogError {
            line,
            message: "the nvidia-smi header has no `power.draw` column".into(),
        })?;
    let gpu = find(&|n| n == "index" || n == "gpu" || n == "pci.bus_id" || n == "uuid");
    Ok(Columns {
        count: names.len(),
        time,
        power,
        gpu,
    })
}

/// Parses a log. Rows must be in time order; a malformed row is an error naming it.
///
/// A log of several GPUs (nvidia-smi with an `index`, `uuid` or `pci.bus_id` column) is
/// split by that column: `gpu` picks one (`--gpu N`), and without it a log of more than one
/// GPU is refused rather than averaged. Rows with the same time and no GPU column are
/// several GPUs interleaved without saying which, and are refused too.
pub fn parse(
    text: &str,
    format: LogFormat,
    clock_offset_s: f64,
    gpu: Option<&str>,
) -> Result<Vec<Sample>, LogError> {
    if !clock_offset_s.is_finite() {
        return Err(LogError {
            line: 0,
            message: format!(
                "the clock offset must be a finite number of seconds, not {clock_offset_s}"
            ),
        });
    }
    let mut out: Vec<Sample> = Vec::new();
    let mut gpus_seen: Vec<String> = Vec::new();
    let mut rows = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    let cols = match format {
        LogFormat::NvidiaSmi => {
            let (line, header) = rows.next().unwrap_or((1, ""));
            if detect(header) != Some(LogFormat::NvidiaSmi) {
                return Err(LogError {
                    line,
                    message: format!(
                        "expected the nvidia-smi header (`timestamp, power.draw [W]`, as \
                         --format=csv writes it), found {header:?}"
                    ),
                });
            }
            smi_columns(header, line)?
        }
        LogFormat::WattsUp => {
            // The header is optional: a log without one starts with data.
            if rows
                .peek()
                .is_some_and(|(_, h)| detect(h) == Some(LogFormat::WattsUp))
            {
                rows.next();
            }
            Columns {
                count: 5,
                time: 0,
                power: 4,
                gpu: None,
            }
        }
    };
    for (line, l) in rows {
        parse_row(l, line, cols, clock_offset_s, gpu, &mut gpus_seen, &mut out)?;
    }
    if let (Some(want), false) = (gpu, gpus_seen.is_empty()) {
        if out.is_empty() {
            return Err(LogError {
                line: 0,
                message: format!(
                    "no rows of GPU {want:?}; the log holds GPU {}",
                    gpus_seen.join(", ")
                ),
            });
        }
    }
    if gpus_seen.len() > 1 && gpu.is_none() {
        return Err(LogError {
            line: 0,
            message: format!(
                "the log holds {} GPUs ({}); pick the one that ran the replay with --gpu",
                gpus_seen.len(),
                gpus_seen.join(", ")
            ),
        });
    }
    if gpu.is_some() && cols.gpu.is_none() {
        return Err(LogError {
            line: 0,
            message: "--gpu needs a log with an `index` (or `uuid`, `pci.bus_id`) column: \
                      nvidia-smi --query-gpu=timestamp,index,power.draw"
                .into(),
        });
    }
    if out.len() < 2 {
        return Err(LogError {
            line: text.lines().count(),
            message: "fewer than two samples".into(),
        });
    }
    Ok(out)
}

fn parse_row(
    l: &str,
    line: usize,
    c: Columns,
    clock_offset_s: f64,
    gpu: Option<&str>,
    gpus_seen: &mut Vec<String>,
    out: &mut Vec<Sample>,
) -> Result<(), LogError> {
    let cells: Vec<&str> = l.split(',').map(str::trim).collect();
    if cells.len() != c.count {
        return Err(LogError {
            line,
            message: format!(
                "{} fields where the header has {} (a decimal comma, or a cut row?): {l:?}",
                cells.len(),
                c.count
            ),
        });
    }
    if let Some(g) = c.gpu {
        let id = cells[g];
        if !gpus_seen.iter().any(|s| s == id) {
            gpus_seen.push(id.to_string());
        }
        if gpu.is_some_and(|want| want != id) {
            return Ok(());
        }
    }
    let (t, w) = (cells[c.time], cells[c.power]);
    let t = parse_time(t).ok_or_else(|| LogError {
        line,
        message: format!("unreadable time {t:?}"),
    })? + clock_offset_s;
    let w = watts(w).ok_or_else(|| LogError {
        line,
        message: format!("unreadable power {w:?} (a number of watts from 0 to {MAX_WATTS})"),
    })?;
    if let Some(prev) = out.last() {
        if t < prev.t {
            return Err(LogError {
                line,
                message: format!("time goes backwards ({t:.3} after {:.3})", prev.t),
            });
        }
        if t == prev.t && c.gpu.is_none() {
            return Err(LogError {
                line,
                message: "two rows at the same time: several GPUs interleaved? Log with \
                          `nvidia-smi --query-gpu=timestamp,index,power.draw` and pick one \
                          with --gpu"
                    .into(),
            });
        }
    }
    out.push(Sample { t, watts: w });
    Ok(())
}

/// Energy over one window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Integral {
    pub energy_j: f64,
    pub avg_power_w: f64,
    /// Samples strictly inside the window.
    pub samples: usize,
    /// The longest time between consecutive points used, seconds.
    pub max_gap_s: f64,
}

fn interp(a: &Sample, b: &Sample, t: f64) -> f64 {
    if b.t == a.t {
        return a.watts;
    }
    a.watts + (b.watts - a.watts) * (t - a.t) / (b.t - a.t)
}

/// Trapezoid integral of power over [t0, t1], edges interpolated. `None` when the log does
/// not cover the window.
pub fn integrate(samples: &[Sample], t0: f64, t1: f64) -> Option<Integral> {
    if !(t0.is_finite() && t1.is_finite())
        || t1 <= t0
        || samples.first()?.t > t0
        || samples.last()?.t < t1
    {
        return None;
    }
    // Points: the interpolated start, the samples inside, the interpolated end.
    let i0 = samples.partition_point(|s| s.t <= t0);
    let i1 = samples.partition_point(|s| s.t < t1);
    let start = Sample {
        t: t0,
        watts: interp(&samples[i0 - 1], &samples[i0.min(samples.len() - 1)], t0),
    };
    let end = Sample {
        t: t1,
        watts: interp(&samples[i1 - 1], &samples[i1.min(samples.len() - 1)], t1),
    };
    let mut pts = Vec::with_capacity(i1 - i0 + 2);
    pts.push(start);
    pts.extend_from_slice(&samples[i0..i1]);
    pts.push(end);
    let mut e = 0.0;
    let mut gap: f64 = 0.0;
    for w in pts.windows(2) {
        e += 0.5 * (w[0].watts + w[1].watts) * (w[1].t - w[0].t);
        gap = gap.max(w[1].t - w[0].t);
    }
    Some(Integral {
        energy_j: e,
        avg_power_w: e / (t1 - t0),
        samples: i1 - i0,
        max_gap_s: gap,
    })
}

/// One measured window integrated over the power log.
#[derive(serde::Serialize, Debug, Clone)]
pub struct WindowEnergy {
    pub label: String,
    pub start: String,
    pub end: String,
    pub duration_s: f64,
    pub samples: usize,
    pub max_gap_s: f64,
    pub energy_j: f64,
    pub avg_power_w: f64,
    /// Energy per completed item (graph replay, or unit invocation × unroll).
    pub per_item_j: Option<f64>,
    /// The NVML figure for the same window, for comparison.
    pub nvml_energy_j: f64,
    pub warning: Option<String>,
}

#[derive(serde::Serialize, Debug, Clone)]
pub struct PowerLogReport {
    pub power_log: String,
    pub format: String,
    pub clock_offset_s: f64,
    pub samples: usize,
    pub windows: Vec<WindowEnergy>,
    /// Σ over units of (log energy per invocation × invocations), isolated results only.
    pub predicted_energy_j: Option<f64>,
}

/// Integrates the power log (`text`, of `format`, times shifted by `clock_offset` seconds,
/// the GPU `gpu` of a log of several) over every window `results` measured: the energy the
/// meter saw, per window and per item, beside NVML's figure; for isolated results, the
/// prediction from the log's per-item energies. `log_name` names the log in errors.
pub fn report(
    text: &str,
    format: LogFormat,
    clock_offset: f64,
    gpu: Option<&str>,
    results: &crate::results::Results,
    log_name: &str,
) -> Result<PowerLogReport, super::ReportError> {
    use super::ReportError;
    let samples = parse(text, format, clock_offset, gpu).map_err(|e| ReportError::PowerLog {
        path: log_name.to_string(),
        message: e.to_string(),
    })?;
    let mut windows = Vec::new();
    for w in &results.windows {
        let (t0, t1) = (
            w.start_unix_ms as f64 / 1000.0,
            w.end_unix_ms as f64 / 1000.0,
        );
        let i = integrate(&samples, t0, t1).ok_or_else(|| ReportError::PowerLog {
            path: log_name.to_string(),
            message: format!(
                "the log ({} to {}) does not cover window {:?} ({} to {}); check --clock-offset",
                crate::results::energy::iso8601_ms((samples[0].t * 1000.0) as i64),
                crate::results::energy::iso8601_ms((samples[samples.len() - 1].t * 1000.0) as i64),
                w.label,
                w.start,
                w.end
            ),
        })?;
        let items = if w.label.starts_with("unit ") {
            let unroll = results
                .units
                .iter()
                .find(|u| w.label.starts_with(&format!("unit {} ", u.id)))
                .map(|u| f64::from(u.unroll.max(1)))
                .unwrap_or(1.0);
            w.completed as f64 * unroll
        } else {
            w.completed as f64
        };
        windows.push(WindowEnergy {
            label: w.label.clone(),
            start: w.start.clone(),
            end: w.end.clone(),
            duration_s: t1 - t0,
            samples: i.samples,
            max_gap_s: i.max_gap_s,
            energy_j: i.energy_j,
            avg_power_w: i.avg_power_w,
            per_item_j: (items > 0.0).then(|| i.energy_j / items),
            nvml_energy_j: w.energy_j,
            warning: (i.samples < 10).then(|| format!("only {} samples in this window (fewer than 10): lengthen --energy-window or sample faster", i.samples)),
        });
    }
    let predicted = (results.mode == "isolated").then(|| {
        results
            .units
            .iter()
            .filter_map(|u| {
                windows
                    .iter()
                    .find(|w| w.label.starts_with(&format!("unit {} ", u.id)))
                    .and_then(|w| w.per_item_j)
                    .map(|e| e * u.invocations as f64)
            })
            .sum::<f64>()
    });
    let rep = PowerLogReport {
        power_log: log_name.to_string(),
        format: format!("{format:?}"),
        clock_offset_s: clock_offset,
        samples: samples.len(),
        windows,
        predicted_energy_j: predicted,
    };
    Ok(rep)
}

/// The windows as a Markdown table (what `kc energy` prints).
pub fn render_table(rep: &PowerLogReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
            o,
            "| window | duration s | samples | log J | log W | per item J | NVML J |\n|---|---|---|---|---|---|---|");
    for w in &rep.windows {
        let _ = writeln!(
            o,
            "| {} | {:.3} | {} | {:.2} | {:.1} | {} | {:.2} |",
            w.label,
            w.duration_s,
            w.samples,
            w.energy_j,
            w.avg_power_w,
            w.per_item_j
                .map(|x| format!("{x:.6}"))
                .unwrap_or_else(|| "-".into()),
            w.nvml_energy_j
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, w: f64) -> Sample {
        Sample { t, watts: w }
    }

    #[test]
    fn constant_power() {
        let log: Vec<Sample> = (0..=10).map(|i| s(f64::from(i), 100.0)).collect();
        let r = integrate(&log, 2.0, 4.0).unwrap();
        assert!((r.energy_j - 200.0).abs() < 1e-9);
        assert_eq!(r.samples, 1); // t = 3 (2 and 4 are the edges)
                                  // Edges between samples: 100 W × 2.5 s.
        let r = integrate(&log, 2.25, 4.75).unwrap();
        assert!((r.energy_j - 250.0).abs() < 1e-9);
    }

    #[test]
    fn ramp() {
        // 0 W at t=0 rising to 100 W at t=1: 50 J; over [0.5, 1]: (50+100)/2 × 0.5 = 37.5 J.
        let log = vec![s(0.0, 0.0), s(1.0, 100.0)];
        assert!((integrate(&log, 0.0, 1.0).unwrap().energy_j - 50.0).abs() < 1e-9);
        assert!((integrate(&log, 0.5, 1.0).unwrap().energy_j - 37.5).abs() < 1e-9);
    }

    #[test]
    fn gaps_are_measured_and_bridged_linearly() {
        // 1 Hz log with a 3 s hole between t=2 and t=5, power 100 then 200.
        let log = vec![
            s(0.0, 100.0),
            s(1.0, 100.0),
            s(2.0, 100.0),
            s(5.0, 200.0),
            s(6.0, 200.0),
        ];
        let r = integrate(&log, 1.0, 6.0).unwrap();
        // 1..2: 100 J; 2..5: (100+200)/2 × 3 = 450 J; 5..6: 200 J.
        assert!((r.energy_j - 750.0).abs() < 1e-9);
        assert!((r.max_gap_s - 3.0).abs() < 1e-9);
    }

    #[test]
    fn uncovered_windows_are_refused() {
        let log = vec![s(10.0, 1.0), s(11.0, 1.0)];
        assert!(integrate(&log, 9.0, 10.5).is_none());
        assert!(integrate(&log, 10.5, 12.0).is_none());
        assert!(integrate(&log, 10.5, 10.5).is_none());
    }

    #[test]
    fn parses_both_formats_and_names_bad_rows() {
        let smi = "timestamp, power.draw [W]\n2026/11/21 14:05:03.000, 100.00 W\n2026/11/21 14:05:03.040, 110.00 W\n";
        assert_eq!(detect(smi), Some(LogFormat::NvidiaSmi));
        let p = parse(smi, LogFormat::NvidiaSmi, -3600.0, None).unwrap();
        assert_eq!(p.len(), 2);
        assert!((p[0].t - (parse_time("2026-11-21T14:05:03Z").unwrap() - 3600.0)).abs() < 1e-6);
        assert!((p[1].t - p[0].t - 0.04).abs() < 1e-6);
        let wu = "time,id,pm1,pm2,sum\n1790857026,1,50,60,110\n1790857027,1,50,61,111\n";
        assert_eq!(detect(wu), Some(LogFormat::WattsUp));
        let p = parse(wu, LogFormat::WattsUp, 0.0, None).unwrap();
        assert_eq!(p[1].watts, 111.0);
        let bad = "time,id,pm1,pm2,sum\n1790857026,1,50,60,110\n1790857027,1,50\n";
        let e = parse(bad, LogFormat::WattsUp, 0.0, None).unwrap_err();
        assert_eq!(e.line, 3);
        let back = "time,id,pm1,pm2,sum\n5,1,1,1,1\n4,1,1,1,1\n";
        assert!(parse(back, LogFormat::WattsUp, 0.0, None)
            .unwrap_err()
            .message
            .contains("backwards"));
        assert_eq!(parse_time("2026-11-21 00:00:00"), Some(1_795_219_200.0));
        assert!(parse_time("2026-13-01 00:00:00").is_none());
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// Whatever the text, parsing returns samples or an error naming a line.
            #[test]
            fn any_text_parses_or_is_refused(text in "[ -~\n]{0,400}", smi in any::<bool>()) {
                let f = if smi { LogFormat::NvidiaSmi } else { LogFormat::WattsUp };
                let _ = parse(&text, f, 0.0, None);
                let _ = parse(&text, f, 0.0, Some("0"));
            }

            /// Rows written by nvidia-smi, with the columns in any order and an optional
            /// index column, read back exactly (ms stamps, W with two decimals).
            #[test]
            fn smi_rows_round_trip(
                watts in proptest::collection::vec(0u32..100_000, 2..40),
                order in 0usize..6,
                with_index in any::<bool>(),
            ) {
                let mut names = vec!["timestamp", "power.draw [W]"];
                if with_index {
                    names.push("index");
                }
                let perm: Vec<usize> = match (order % 3, names.len()) {
                    (0, _) => (0..names.len()).collect(),
                    (1, _) => (0..names.len()).rev().collect(),
                    (_, 2) => vec![1, 0],
                    _ => vec![2, 0, 1],
                };
                let mut text = perm.iter().map(|&k| names[k]).collect::<Vec<_>>().join(", ");
                text.push('\n');
                for (i, w) in watts.iter().enumerate() {
                    let cells = [
                        format!("2026/11/21 14:06:{:02}.{:03}", 10 + i / 10, (i % 10) * 100),
                        format!("{}.{:02} W", w / 100, w % 100),
                        "0".to_string(),
                    ];
                    let row: Vec<&str> = perm.iter().map(|&k| cells[k].as_str()).collect();
                    text.push_str(&row.join(", "));
                    text.push('\n');
                }
                let got = parse(&text, LogFormat::NvidiaSmi, 0.0, None).unwrap();
                prop_assert_eq!(got.len(), watts.len());
                for (s, w) in got.iter().zip(&watts) {
                    prop_assert!((s.watts - f64::from(*w) / 100.0).abs() < 1e-9);
                }
            }

            /// A decimal comma in any row makes that row's field count wrong: refused, by line.
            #[test]
            fn decimal_commas_are_refused(row in 0usize..10) {
                let mut text = String::from("timestamp, power.draw [W]\n");
                for i in 0..10 {
                    let w = if i == row { "250,5 W" } else { "250.5 W" };
                    text.push_str(&format!("2026/11/21 14:06:1{i}.000, {w}\n"));
                }
                let e = parse(&text, LogFormat::NvidiaSmi, 0.0, None).unwrap_err();
                prop_assert_eq!(e.line, row + 2);
            }
        }
    }
}
