//! The record of one energy window as results files keep it (what ran, when, the energy
//! and average power NVML's counter gave, the ticks it spanned), and the UTC time stamps
//! they are written with. Measuring them is the executor's (`kc_exec::energy`).
//!
//! Invariant: times are the host's UTC wall clock in milliseconds, written ISO-8601.

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
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(b: &u64) -> bool {
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
