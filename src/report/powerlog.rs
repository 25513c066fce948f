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
        write!(f, "line {}: {}", self.line, self.message)
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

fn watts(s: &str) -> Option<f64> {
    let v: f64 = s.trim().trim_end_matches('W').trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
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

/// Parses a log. Rows must be in time order; a malformed row is an error naming it.
pub fn parse(text: &str, format: LogFormat, clock_offset_s: f64) -> Result<Vec<Sample>, LogError> {
    let mut out: Vec<Sample> = Vec::new();
    let mut header_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if !header_seen {
            header_seen = true;
            if detect(l).is_some() {
                continue;
            }
        }
        let cols: Vec<&str> = l.split(',').map(str::trim).collect();
        let (t, w) = match format {
            LogFormat::NvidiaSmi => {
                if cols.len() < 2 {
                    return Err(LogError {
                        line,
                        message: format!("expected `timestamp, power.draw`, found {l:?}"),
                    });
                }
                (cols[0], cols[1])
            }
            LogFormat::WattsUp => {
                if cols.len() < 5 {
                    return Err(LogError {
                        line,
                        message: format!("expected `time,id,pm1,pm2,sum`, found {l:?}"),
                    });
                }
                (cols[0], cols[4])
            }
        };
        let t = parse_time(t).ok_or_else(|| LogError {
            line,
            message: format!("unreadable time {t:?}"),
        })? + clock_offset_s;
        let w = watts(w).ok_or_else(|| LogError {
            line,
            message: format!("unreadable power {w:?}"),
        })?;
        if let Some(prev) = out.last() {
            if t < prev.t {
                return Err(LogError {
                    line,
                    message: format!("time goes backwards ({t:.3} after {:.3})", prev.t),
                });
            }
        }
        out.push(Sample { t, watts: w });
    }
    if out.len() < 2 {
        return Err(LogError {
            line: text.lines().count(),
            message: "fewer than two samples".into(),
        });
    }
    Ok(out)
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
    if t1 <= t0 || samples.first()?.t > t0 || samples.last()?.t < t1 {
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
        let p = parse(smi, LogFormat::NvidiaSmi, -3600.0).unwrap();
        assert_eq!(p.len(), 2);
        assert!((p[0].t - (parse_time("2026-11-21T14:05:03Z").unwrap() - 3600.0)).abs() < 1e-6);
        assert!((p[1].t - p[0].t - 0.04).abs() < 1e-6);
        let wu = "time,id,pm1,pm2,sum\n1790857026,1,50,60,110\n1790857027,1,50,61,111\n";
        assert_eq!(detect(wu), Some(LogFormat::WattsUp));
        let p = parse(wu, LogFormat::WattsUp, 0.0).unwrap();
        assert_eq!(p[1].watts, 111.0);
        let bad = "time,id,pm1,pm2,sum\n1790857026,1,50,60,110\n1790857027,1,50\n";
        let e = parse(bad, LogFormat::WattsUp, 0.0).unwrap_err();
        assert_eq!(e.line, 3);
        let back = "time,id,pm1,pm2,sum\n5,1,1,1,1\n4,1,1,1,1\n";
        assert!(parse(back, LogFormat::WattsUp, 0.0)
            .unwrap_err()
            .message
            .contains("backwards"));
        assert_eq!(parse_time("2026-11-21 00:00:00"), Some(1_795_219_200.0));
        assert!(parse_time("2026-13-01 00:00:00").is_none());
    }
}
