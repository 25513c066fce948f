//! The record of one energy window as results files keep it (what ran, when, the energy
//! and average power NVML's counter gave, the ticks it spanned), the UTC time stamps
//! they are written with, and the counter's period over a run's windows, on which the
//! executor takes each window's duration and which reports name. Measuring them is the
//! executor's (`kc_exec::energy`).
//!
//! Invariant: times are the host's UTC wall clock in milliseconds, written ISO-8601; a
//! window taken on the period keeps its duration as seen.

use super::stats::Stats;
use serde::{Deserialize, Serialize};

/// One measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyWindow {
    /// What ran: "idle", "graph", "unit 12"...
    pub label: String,
    pub start: String,
    pub end: String,
    pub start_unix_ms: i64,
    pub end_unix_ms: i64,
    pub duration_s: f64,
    pub energy_j: f64,
    pub avg_power_w: f64,
    /// Instantaneous power samples taken while the window ran.
    pub power_w: Stats,
    /// Counter ticks observed inside the window (start and end included).
    pub ticks: u32,
    /// Work items (graph replays) completed between the two ticks.
    pub completed: u64,
    /// The GPU's temperature at the window's start and end, degrees Celsius (NVML). A hotter
    /// chip leaks more power at the same work, so energies measured apart in time compare
    /// only at like temperatures; absent where the meter cannot read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<[u32; 2]>,
    /// The SM clock read beside power while the window ran, MHz (NVML); absent where the
    /// meter cannot read it and in results of kc before session 17.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<Stats>,
    /// NVML's clock event reasons seen while the window ran, OR-ed
    /// (`nvmlClocksEventReason*` bits; [`clock_events`] names them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clock_event_bits: u64,
    /// A window at the head of a series that ran while the GPU settled from the work
    /// before it (a unit at a duty cycle after its windows at the power cap, the clock
    /// still held down): kept here, never summarised.
    #[serde(default, skip_serializing_if = "is_false")]
    pub settling: bool,
    /// Within how long each of the window's two ticks was seen, milliseconds: the span
    /// since the counter was last read unchanged. Its duration is good to about these.
    /// Absent in results of kc before session 33.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks_seen_within_ms: Option<[f64; 2]>,
    /// The duration the window's two ticks were seen to span, seconds, where `duration_s`
    /// is taken on the counter's period instead (its ticks × the period over the run's
    /// windows; kc from session 33). Absent where `duration_s` is as seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_duration_s: Option<f64>,
    /// The counter's period over every tick the window's series saw, seconds
    /// ([`ticks_period_s`]; the same on each window of the series), where it saw
    /// [`MIN_SERIES_TICKS`] or more at even steps. Absent otherwise and in results of kc
    /// before session 34.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_period_s: Option<f64>,
    /// On the first window of a series that has `series_period_s`: every tick the series
    /// saw, as seen, milliseconds after its first (kc from session 35). The record from
    /// which session 36 set the ticks' lower envelope against the least-squares slope that
    /// `series_period_s` was before (on ten graph runs 99.99-100.02 ms on nine, against
    /// 99.67-100.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_ticks_ms: Option<Vec<f64>>,
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero(b: &u64) -> bool {
    *b == 0
}

/// The reasons in NVML's clock event bits that hold the SM clock below what the work asks
/// (idle and the application clock setting left out: they are no limit on busy work).
pub fn clock_events(bits: u64) -> Vec<&'static str> {
    const NAMES: [(u64, &str); 6] = [
        (0x4, "power cap"),
        (0x8, "hardware slowdown"),
        (0x10, "sync boost"),
        (0x20, "thermal (software)"),
        (0x40, "thermal (hardware)"),
        (0x80, "power brake"),
    ];
    NAMES
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|&(_, n)| n)
        .collect()
}

/// The least and greatest of the windows' median SM clocks, MHz, where they record any.
pub fn sm_clock_range<'a>(windows: impl IntoIterator<Item = &'a EnergyWindow>) -> Option<[f64; 2]> {
    let cs: Vec<f64> = windows
        .into_iter()
        .filter_map(|w| w.sm_clock_mhz.as_ref().map(|c| c.p50))
        .collect();
    let lo = cs.iter().copied().reduce(f64::min)?;
    let hi = cs.iter().copied().reduce(f64::max)?;
    Some([lo, hi])
}

/// The least and greatest temperature read at the ends of `windows`, where they record
/// any.
pub fn temperature_range<'a>(
    windows: impl IntoIterator<Item = &'a EnergyWindow>,
) -> Option<[u32; 2]> {
    let ts: Vec<u32> = windows
        .into_iter()
        .filter_map(|w| w.temperature_c)
        .flatten()
        .collect();
    Some([*ts.iter().min()?, *ts.iter().max()?])
}

/// The fewest ticks a series' own period is taken over ([`ticks_period_s`]). A series'
/// first tick is at times seen later than the rest (session 33); over n ticks a
/// least-squares slope moved by that lateness × (n − 1) / 2 / Σ (i − mean)², 0.5 of it
/// over three ticks (a unit's two one-tick windows) and 0.045 over eleven; a lower
/// envelope over three ticks has hardly a line to choose. Shorter series give each window's
/// own period, whose median over a run's hundreds of windows is not moved by it: on
/// session 34's isolated runs their series' periods would read 99.89-100.00 ms (by
/// arithmetic on their recorded windows, grouped into series), their windows' 99.97-100.01.
pub const MIN_SERIES_TICKS: usize = 11;

/// The counter's period over the ticks one series saw, `seen_s` in order, seconds: the
/// slope of their lower envelope. Each tick is seen late, never early: by a read of the
/// counter (3-5 ms on the H200, session 33) and by how long the watching thread took to
/// come round, a series' first tick often by 20 ms or more. So the line under every tick
/// seen that lies closest to them (the least mean lateness, the lower convex hull's edge
/// over the series' middle tick) follows the ticks seen earliest. The least-squares slope
/// over every tick, kc's from session 34, followed the late ones: on session 36's ten
/// graph runs it read 99.67-100.15 ms, the series' ends 99.66-100.16, and this envelope
/// 99.99-100.02 on nine (100.10 on the tenth), where the isolated runs' windows read
/// 99.95-100.01 (session 35). `None` for fewer than [`MIN_SERIES_TICKS`] ticks, or where
/// a step between two lies outside half to one and a half times the median step (a tick
/// not seen, or two seen as one: the count would be wrong).
pub fn ticks_period_s(seen_s: &[f64]) -> Option<f64> {
    if seen_s.len() < MIN_SERIES_TICKS {
        return None;
    }
    let steps: Vec<f64> = seen_s.windows(2).map(|p| p[1] - p[0]).collect();
    let step = super::stats::median(&mut steps.clone())?;
    let even = |s: &f64| (0.5 * step..=1.5 * step).contains(s);
    if step.is_nan() || step <= 0.0 || !steps.iter().all(even) {
        return None;
    }
    lower_envelope_slope(seen_s)
}

/// The slope of the line under every point (i, `y[i]`) with the least mean height above
/// them: the lower convex hull's edge over the middle index, the mean of the two edges'
/// slopes where the middle is a vertex of it. `None` for fewer than two points.
fn lower_envelope_slope(y: &[f64]) -> Option<f64> {
    if y.len() < 2 {
        return None;
    }
    // The lower hull, left to right (Andrew's monotone chain).
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(y.len());
    for (i, &v) in y.iter().enumerate() {
        let p = (i as f64, v);
        while let [.., a, b] = hull[..] {
            // b stays only where it lies below the chord from a to p.
            if (b.1 - a.1) * (p.0 - a.0) >= (p.1 - a.1) * (b.0 - a.0) {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    let slope = |a: (f64, f64), b: (f64, f64)| (b.1 - a.1) / (b.0 - a.0);
    let middle = (y.len() - 1) as f64 / 2.0;
    // The hull starts at index 0, left of the middle (two points or more): k ≥ 1.
    let k = hull.iter().position(|p| p.0 >= middle)?;
    let edge = slope(hull[k - 1], hull[k]);
    if hull[k].0 > middle {
        return Some(edge);
    }
    Some(
        hull.get(k + 1)
            .map_or(edge, |&next| (edge + slope(hull[k], next)) / 2.0),
    )
}

/// The energy counter's period, seconds, over `windows`: the median of each one's period,
/// each window weighing as many periods as it spans (its per-period lateness is that much
/// smaller). A window's period is its series' ([`ticks_period_s`], `series_period_s`)
/// where recorded, else its seen duration over its periods. Not their sum over their
/// periods: a series' first tick was seen later than its last (by 0.7-1.9 ms a series on
/// average, a few much later; session 33's call 3), which took 0.3-0.7 % off such a sum,
/// while the median of each run's windows was 99.99-100.01 ms. `None` without a window of
/// two ticks.
pub fn counter_period_s<'w>(windows: impl IntoIterator<Item = &'w EnergyWindow>) -> Option<f64> {
    let mut periods: Vec<(f64, f64)> = windows
        .into_iter()
        .filter(|w| w.ticks >= 2)
        .map(|w| {
            let n = f64::from(w.ticks - 1);
            let own = w.seen_duration_s.unwrap_or(w.duration_s) / n;
            (w.series_period_s.unwrap_or(own), n)
        })
        .filter(|(p, _)| p.is_finite() && *p > 0.0)
        .collect();
    if periods.is_empty() {
        return None;
    }
    periods.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = periods.iter().map(|p| p.1).sum::<f64>() / 2.0;
    let mut below = 0.0;
    for (p, n) in &periods {
        below += n;
        if below >= half {
            return Some(*p);
        }
    }
    periods.last().map(|p| p.0)
}

/// Whether the counter's ticks keep `period_s` over `windows`, to within how late they
/// were seen: the median of each window's seen duration less its ticks' periods is no
/// more than the median of how late its ticks were seen (`ticks_seen_within_ms`). A
/// counter that advances on a fixed period passes with room (the H200, session 33: 0.2-1.3
/// ms against 3.3-4.6 ms); one that advances at uneven times does not, and its windows
/// then stand as seen. `false` without windows that record how late their ticks were seen.
pub fn counter_is_periodic<'w>(
    windows: impl IntoIterator<Item = &'w EnergyWindow>,
    period_s: f64,
) -> bool {
    let mut off_ms = Vec::new();
    let mut within_ms = Vec::new();
    for w in windows {
        let Some(within) = w.ticks_seen_within_ms.filter(|_| w.ticks >= 2) else {
            continue;
        };
        let seen = w.seen_duration_s.unwrap_or(w.duration_s);
        off_ms.push(1e3 * (seen - f64::from(w.ticks - 1) * period_s).abs());
        within_ms.extend(within);
    }
    if off_ms.is_empty() {
        return false;
    }
    Stats::of(&off_ms).p50 <= Stats::of(&within_ms).p50
}

/// Takes a window's duration on the counter's period: its ticks × `period_s`, keeping the
/// duration as seen (`seen_duration_s`), and its power over that. The counter advances on
/// a fixed period (100.00 ms on the H200, session 33: over 969 windows whose ticks were
/// each seen within 5 ms, the seen periods' median was 100.00 ms and their spread 1.7 ms,
/// what the reads' own 3-5 ms explain), while each tick is seen as late as an NVML read
/// takes: 3-5 ms, at times 20-36 ms. A window's power over its seen duration carried that
/// lateness, and a window's power is convex in it: pairs seen 0.123 and 0.078 s long,
/// their energies alike, read high together. Already taken, or without two ticks, the
/// window stands.
pub fn on_counter_period(w: &mut EnergyWindow, period_s: f64) {
    if w.ticks < 2 || w.seen_duration_s.is_some() || period_s <= 0.0 {
        return;
    }
    w.seen_duration_s = Some(w.duration_s);
    w.duration_s = f64::from(w.ticks - 1) * period_s;
    w.avg_power_w = w.energy_j / w.duration_s;
}

/// The sentence on how a run's windows' ticks were seen and their durations taken
/// ([`on_counter_period`]), derived from the windows where shown (`kc exec`'s summary, the
/// report's notes): the counter's period over the windows, within how long the
/// ticks were seen (median and the largest), and how far the seen durations lay from the
/// taken ones; where none was but their lateness was recorded, that the counter kept no
/// period; `None` otherwise.
pub fn ticks_note(windows: &[EnergyWindow]) -> Option<String> {
    let taken: Vec<&EnergyWindow> = windows
        .iter()
        .filter(|w| w.seen_duration_s.is_some())
        .collect();
    let period = counter_period_s(windows.iter())?;
    let within: Vec<f64> = windows
        .iter()
        .filter_map(|w| w.ticks_seen_within_ms)
        .flatten()
        .collect();
    if taken.is_empty() {
        // Windows that record how late their ticks were seen, none taken on the period:
        // the counter did not keep one.
        return (!within.is_empty()).then(|| {
            format!(
                "energy windows: durations as seen: the counter's ticks did not keep a period (their median, {:.3} ms, against ticks seen within {:.1} ms, median)",
                period * 1e3,
                Stats::of(&within).p50
            )
        });
    }
    let off_ms: Vec<f64> = taken
        .iter()
        .map(|w| 1e3 * (w.seen_duration_s.unwrap_or(w.duration_s) - w.duration_s))
        .collect();
    let within = Stats::of(&within);
    let off = Stats::of(&off_ms);
    // Which windows weighed in at their series' period over all its ticks.
    let in_series = windows
        .iter()
        .filter(|w| w.series_period_s.is_some())
        .count();
    let series = match in_series {
        0 => String::new(),
        n => format!(
            " ({n} of them at their series' period over every tick it saw, a series of {MIN_SERIES_TICKS} ticks or more)"
        ),
    };
    Some(format!(
        "energy windows: {} of the {} windows' durations taken as their ticks × the counter's period, {:.3} ms over this run's windows{series}; their ticks were seen within {:.1} ms (median; at most {:.1} ms) by a thread that reads the counter; as seen, their durations lay {:.1} ms from those taken (standard deviation; {:+.1} … {:+.1} ms)",
        taken.len(),
        windows.len(),
        period * 1e3,
        within.p50,
        within.max,
        off.std,
        off.min,
        off.max
    ))
}

/// ISO-8601 UTC with milliseconds.
pub fn iso8601_ms(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let days = secs.div_euclid(86400);
    let sod = secs.rem_euclid(86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_taken_on_the_counters_period() {
        // Four windows, their ticks seen late by a read's lateness (one 12 ms late, one 9
        // ms early against the ticks around it), the energies each 40 J a period (400 W
        // over the counter's 100 ms).
        let win = |d: f64, ticks: u32| EnergyWindow {
            duration_s: d,
            energy_j: 40.0 * f64::from(ticks - 1),
            avg_power_w: 40.0 * f64::from(ticks - 1) / d,
            ticks,
            ..Default::default()
        };
        let mut ws = vec![win(0.112, 2), win(0.091, 2), win(0.2, 3), win(0.1, 2)];
        // The median period, the window of two periods weighing two: 0.091, 0.1 (three
        // times) and 0.112 s.
        let p = counter_period_s(&ws).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        for w in &mut ws {
            on_counter_period(w, p);
        }
        for w in &ws {
            assert!((w.avg_power_w - 400.0).abs() < 1e-9, "{}", w.avg_power_w);
        }
        assert!((ws[2].duration_s - 0.2).abs() < 1e-12);
        assert!((ws[2].avg_power_w - 400.0).abs() < 1e-9);
        assert_eq!(ws[0].seen_duration_s, Some(0.112));
        // The seen durations, not the taken ones, give the period again; a window taken
        // once is not taken twice.
        assert!((counter_period_s(&ws).unwrap() - 0.1).abs() < 1e-12);
        on_counter_period(&mut ws[0], 0.2);
        assert!((ws[0].duration_s - 0.1).abs() < 1e-12);
        // Nothing to take it from: no period.
        assert_eq!(counter_period_s(&[win(0.1, 1)]), None);
        // The run's note says what was taken, over what period, and how far off as seen.
        let note = ticks_note(&ws).unwrap();
        assert!(note.starts_with("energy windows: 4 of the 4 windows' durations taken as their ticks × the counter's period, 100.000 ms"), "{note}");
        assert!(note.contains("+12.0 ms"), "{note}");
        assert_eq!(ticks_note(&[win(0.1, 2)]), None);
    }

    #[test]
    fn a_series_period_is_the_slope_of_its_ticks_lower_envelope() {
        // Session 36's BERT graph run (call 1): its 18 ticks as seen, ms after the first,
        // which was seen some 22 ms late. The least-squares slope read 99.667 ms, its ends
        // 100.121; the envelope under the ticks seen earliest reads 100.023.
        let bert = [
            0.000, 122.388, 199.518, 302.380, 402.319, 499.312, 599.649, 701.561, 801.688, 901.944,
            999.796, 1101.977, 1199.663, 1299.797, 1399.766, 1499.540, 1601.377, 1702.050,
        ];
        let seen: Vec<f64> = bert.iter().map(|t| t / 1e3).collect();
        let p = ticks_period_s(&seen).unwrap();
        assert!((p * 1e3 - 100.023).abs() < 0.001, "{p}");
        // Under every tick, and no line under them all lies closer on average.
        let b = (0..seen.len())
            .map(|i| seen[i] - p * i as f64)
            .fold(f64::INFINITY, f64::min);
        let mean_late = |q: f64, c: f64| {
            (0..seen.len())
                .map(|i| seen[i] - c - q * i as f64)
                .sum::<f64>()
                / seen.len() as f64
        };
        for dq in [-2e-5, -5e-6, 5e-6, 2e-5] {
            let q = p + dq;
            let c = (0..seen.len())
                .map(|i| seen[i] - q * i as f64)
                .fold(f64::INFINITY, f64::min);
            assert!(mean_late(q, c) > mean_late(p, b), "{dq}");
        }
        // The middle a vertex of the hull ((0, 0), (2, 1.5), (4, 4)): its two edges' mean;
        // two points, their slope.
        assert!((lower_envelope_slope(&[0.0, 1.0, 1.5, 3.0, 4.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(lower_envelope_slope(&[0.0, 2.0]), Some(2.0));
        assert_eq!(lower_envelope_slope(&[1.0]), None);
    }

    #[test]
    fn a_series_period_holds_over_ticks_seen_late_at_random() {
        // Eighteen ticks of a 100 ms counter, each seen 3-5 ms late (a read's lateness,
        // drawn evenly): the ends alone of a window of five periods read it to about
        // 0.4 %; the envelope under all eighteen to far less.
        let late = |i: usize| 0.003 + 0.002 * ((i * 7919) % 11) as f64 / 10.0;
        let seen: Vec<f64> = (0..18).map(|i| 0.1 * i as f64 + late(i)).collect();
        let p = ticks_period_s(&seen).unwrap();
        assert!((p - 0.1).abs() < 0.0001, "{p}");
        // Exact ticks give the period exactly; fewer than eleven give none (a unit's
        // series: each window's own period serves).
        let exact: Vec<f64> = (0..11).map(|i| 1.0 + 0.1 * i as f64).collect();
        assert!((ticks_period_s(&exact).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(ticks_period_s(&exact[..10]), None);
        // A tick not seen (two periods in one step) would put the count wrong: none.
        let mut skipped = exact.clone();
        skipped[5..].iter_mut().for_each(|t| *t += 0.1);
        assert_eq!(ticks_period_s(&skipped), None);
        // A graph run's windows, five periods each, seen periods 100.01-100.45 ms: the
        // median of the windows is off by 0.42 %, their series' period is not.
        let win = |seen: f64| EnergyWindow {
            duration_s: seen,
            ticks: 6,
            ..Default::default()
        };
        let mut ws = vec![win(0.50005), win(0.5021), win(0.50225)];
        assert!((counter_period_s(&ws).unwrap() - 0.10042).abs() < 1e-9);
        for w in &mut ws {
            w.series_period_s = Some(p);
        }
        assert_eq!(counter_period_s(&ws), Some(p));
        // The note says how many windows weighed in at their series' period.
        for w in &mut ws {
            w.ticks_seen_within_ms = Some([4.0, 4.0]);
            on_counter_period(w, p);
        }
        let note = ticks_note(&ws).unwrap();
        assert!(note.contains("over this run's windows (3 of them at their series' period over every tick it saw, a series of 11 ticks or more);"), "{note}");
    }

    #[test]
    fn a_counter_that_keeps_no_period_leaves_its_windows_as_seen() {
        // Ticks seen 3-5 ms late on a 100 ms counter: each window's seen duration within
        // a millisecond or two of its periods.
        let seen = |d: f64, ticks: u32, within: [f64; 2]| EnergyWindow {
            duration_s: d,
            energy_j: 30.0,
            ticks,
            ticks_seen_within_ms: Some(within),
            ..Default::default()
        };
        let periodic = [
            seen(0.1004, 2, [4.1, 4.5]),
            seen(0.0991, 2, [4.5, 3.6]),
            seen(0.2013, 3, [3.6, 4.9]),
            seen(0.1122, 2, [4.9, 16.0]),
            seen(0.0889, 2, [16.0, 4.2]),
        ];
        let p = counter_period_s(&periodic).unwrap();
        assert!((p - 0.1).abs() < 0.001, "{p}");
        assert!(counter_is_periodic(&periodic, p));
        // A counter that advances at uneven times (80-130 ms), its ticks seen as promptly:
        // the windows lie off any period by more than the reads' lateness.
        let uneven = [
            seen(0.081, 2, [4.1, 4.5]),
            seen(0.127, 2, [4.5, 3.6]),
            seen(0.093, 2, [3.6, 4.9]),
            seen(0.118, 2, [4.9, 4.0]),
            seen(0.102, 2, [4.0, 4.2]),
        ];
        let p = counter_period_s(&uneven).unwrap();
        assert!(!counter_is_periodic(&uneven, p));
        let note = ticks_note(&uneven).unwrap();
        assert!(note.contains("did not keep a period"), "{note}");
        // Without a record of how late the ticks were seen, nothing says it kept one.
        let unrecorded = [EnergyWindow {
            duration_s: 0.1,
            ticks: 2,
            ..Default::default()
        }];
        assert!(!counter_is_periodic(&unrecorded, 0.1));
    }
}
