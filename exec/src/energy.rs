//! Energy windows aligned to the counter's ticks. NVML's total-energy counter on the H100
//! advances only every ~100 ms, so a window starts at an observed tick (the first change
//! after polling begins) and ends at the first tick after the minimum duration, with the
//! GPU kept busy throughout; energy over the window is then exact to the counter, and
//! power is that energy over the time between the two ticks. A series of windows is
//! contiguous (each begins at the tick that ended the last) and can stop as soon as the
//! windows' powers agree to a target relative standard error.
//!
//! The meter and the clock are traits so the window logic is tested without a GPU.
//! Invariant: a window's energy is the difference of two counter readings taken at tick
//! changes, and its duration is at least the requested minimum; windows of a series share
//! their boundary ticks and never overlap.

use kc_core::results::stats::Stats;

/// A source of energy and power readings (NVML on the GPU machine).
pub trait PowerMeter {
    /// The device's total-energy counter, millijoules.
    fn energy_mj(&mut self) -> Result<u64, String>;
    /// Instantaneous power, milliwatts.
    fn power_mw(&mut self) -> Result<u32, String>;
    /// The GPU's temperature, degrees Celsius, where the meter can read it.
    fn temperature_c(&mut self) -> Option<u32> {
        None
    }
    /// The SM clock now, MHz, where the meter can read it.
    fn sm_clock_mhz(&mut self) -> Option<u32> {
        None
    }
    /// NVML's clock event reasons now (`nvmlClocksEventReason*` bits), where the meter can
    /// read them.
    fn clock_event_bits(&mut self) -> Option<u64> {
        None
    }
}

/// Wall time and pauses, seconds.
pub trait Clock {
    fn now_s(&self) -> f64;
    fn pause(&self, seconds: f64);
    /// Milliseconds since the Unix epoch, for ISO-8601 window stamps.
    fn unix_ms(&self) -> i64;
    /// The Unix milliseconds at `t_s` of this clock's seconds (a tick seen earlier than
    /// the stamp is taken).
    fn unix_ms_at(&self, t_s: f64) -> i64 {
        self.unix_ms() - ((self.now_s() - t_s) * 1000.0).round() as i64
    }
}

pub struct SystemClock {
    origin: std::time::Instant,
    origin_unix_ms: i64,
}

impl Default for SystemClock {
    fn default() -> Self {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Self {
            origin: std::time::Instant::now(),
            origin_unix_ms: unix,
        }
    }
}

impl Clock for SystemClock {
    fn now_s(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
    fn pause(&self, seconds: f64) {
        if seconds > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
        }
    }
    fn unix_ms(&self) -> i64 {
        self.origin_unix_ms + (self.now_s() * 1000.0) as i64
    }
}

pub use kc_core::results::energy::{
    counter_is_periodic, counter_period_s, iso8601_ms, on_counter_period, ticks_period_s,
    EnergyWindow,
};

/// Parameters of a window.
pub struct WindowSpec<'a> {
    pub label: &'a str,
    pub min_seconds: f64,
    /// Time between polls of the counter: a tick is seen at most this late, so it bounds
    /// the error of a window's duration (both ends are seen alike late, on average).
    pub poll_seconds: f64,
    /// Give up when the counter does not move for this long.
    pub stall_seconds: f64,
}

/// Parameters of a series of contiguous windows over the same work.
pub struct SeriesSpec<'a> {
    /// Each window: its label, its minimum duration (it ends at the first tick after it),
    /// the poll and the stall limit.
    pub window: WindowSpec<'a>,
    pub min_windows: usize,
    pub max_windows: usize,
    /// Stop after `min_windows` once the windows' mean power has this relative standard
    /// error (0: always `max_windows`). A minimum of one window is met by the first
    /// counted window: the caller judged one window's spread to meet the target.
    pub target_rel_sem: f64,
    /// Stop after the first window of which this holds, whatever `min_windows`: a unit
    /// held down by the power cap is measured again at a duty cycle, whose windows then
    /// give its energy, so more windows at the cap buy nothing.
    pub stop_after: Option<&'a dyn Fn(&EnergyWindow) -> bool>,
    /// Whether a window ran with the GPU settled; where given, the series' leading windows
    /// that did not (at most `max_settling`) are marked `settling` and counted toward
    /// neither its minimum, its maximum nor its target.
    pub settled: Option<&'a dyn Fn(&EnergyWindow) -> bool>,
    pub max_settling: usize,
    /// The counter's period, seconds, where the run's earlier windows gave it: the window
    /// that surely ends the series then tells `work` when its last tick comes
    /// ([`series_end_s`]), so that no more work is queued past a margin after it.
    pub period_s: Option<f64>,
}

/// How long past the predicted tick that ends a series the device is kept busy
/// ([`series_end_s`]): the prediction counts from a tick seen late, never early, so the
/// actual tick comes no later; the margin covers the period's drift over a window and a
/// batch's estimate. Without the bound the queue held 32 ms of launches past the tick,
/// which the next unit's changeover waited for (session 54's `ticks.py`: 90 ms median from
/// a window's end to the next unit's timed launches on ConvNeXt-T's step).
pub const TAIL_MARGIN_S: f64 = 0.010;

/// Slack on a window's minimum before its end is predicted at a tick: a tick seen less
/// late than the one that began the window may fall short of the minimum, and the window
/// then runs to the tick after, which a bounded queue would leave idle.
const TICK_JITTER_S: f64 = 0.02;

/// Where the window begun at `t0_s` (a tick as seen) surely ends the series: its tick
/// that will (the first whose distance from `t0_s` surely meets the window's minimum, 1
/// the first after `t0_s`), and the clock's seconds by which the device must still be busy,
/// [`TAIL_MARGIN_S`] past it. `None` where the counter's period is not known, or where the
/// window may not end the series: it may be a settling window, or more windows may follow
/// it (`counted_before` windows already count). Past that tick, where it did not end the
/// window after all, the caller keeps its queue full again.
pub fn series_end_s(
    spec: &SeriesSpec<'_>,
    t0_s: f64,
    counted_before: usize,
    may_settle: bool,
) -> Option<(u32, f64)> {
    let period = spec.period_s.filter(|p| *p > 0.0)?;
    let ends = counted_before + 1 >= spec.max_windows.max(1) || spec.min_windows <= 1;
    if !ends || may_settle {
        return None;
    }
    let ticks = ((spec.window.min_seconds + TICK_JITTER_S) / period)
        .ceil()
        .max(1.0);
    Some((ticks as u32, t0_s + ticks * period + TAIL_MARGIN_S))
}

/// How often instantaneous power is read inside a window (NVML updates it every ~50 ms;
/// reading it at every poll would slow the polls that find the ticks).
const POWER_READ_S: f64 = 0.01;

/// Measures one window, the counter's ticks from `ticks`. `work` is called between polls
/// to keep the device busy and returns how many work items have completed so far; its
/// argument is [`measure_series`]'s.
pub fn measure(
    meter: &mut dyn PowerMeter,
    ticks: &mut dyn TickSource,
    clock: &dyn Clock,
    spec: &WindowSpec<'_>,
    work: &mut dyn FnMut(Option<f64>) -> Result<u64, String>,
) -> Result<EnergyWindow, String> {
    let series = SeriesSpec {
        window: WindowSpec { ..*spec },
        min_windows: 1,
        max_windows: 1,
        target_rel_sem: 0.0,
        stop_after: None,
        settled: None,
        max_settling: 0,
        period_s: None,
    };
    let mut w = measure_series(meter, ticks, clock, &series, work)?;
    Ok(w.remove(0))
}

/// A change of the energy counter: its new value, millijoules; when it was first seen,
/// in the clock's seconds; and how long before that the counter was last read unchanged
/// (the tick came within that span).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    pub mj: u64,
    pub seen_s: f64,
    pub within_s: f64,
}

/// Where a series learns of the counter's ticks, in order.
pub trait TickSource {
    /// The counter's value now; the ticks before now are passed over.
    fn now_mj(&mut self, meter: &mut dyn PowerMeter, clock: &dyn Clock) -> Result<u64, String>;
    /// As [`TickSource::now_mj`], but a source that saw the counter's ticks on its own
    /// keeps those that surely came after `from_s` (seen then, less within how long), so
    /// that a caller held up since then still starts at the first of them. A source that
    /// reads the counter only when asked has seen none.
    fn now_mj_after(
        &mut self,
        meter: &mut dyn PowerMeter,
        clock: &dyn Clock,
        from_s: f64,
    ) -> Result<u64, String> {
        let _ = from_s;
        self.now_mj(meter, clock)
    }
    /// The counter's next change not yet returned; `None` while there is none.
    fn next_tick(
        &mut self,
        meter: &mut dyn PowerMeter,
        clock: &dyn Clock,
    ) -> Result<Option<Tick>, String>;
}

/// Ticks seen by reading the counter at each call: a tick is seen as late as the next
/// call comes, so a caller held up between calls sees it late.
#[derive(Default)]
pub struct ReadTicks {
    last: Option<(u64, f64)>,
}

impl TickSource for ReadTicks {
    fn now_mj(&mut self, meter: &mut dyn PowerMeter, clock: &dyn Clock) -> Result<u64, String> {
        let e = meter.energy_mj()?;
        self.last = Some((e, clock.now_s()));
        Ok(e)
    }
    fn next_tick(
        &mut self,
        meter: &mut dyn PowerMeter,
        clock: &dyn Clock,
    ) -> Result<Option<Tick>, String> {
        let e = meter.energy_mj()?;
        let t = clock.now_s();
        Ok(match self.last.replace((e, t)) {
            Some((v, at)) if v != e => Some(Tick {
                mj: e,
                seen_s: t,
                within_s: t - at,
            }),
            _ => None,
        })
    }
}

/// What the watching thread has seen: the counter's first value, every change since, and
/// the error that stopped it.
#[derive(Default)]
struct Watched {
    first: Option<u64>,
    ticks: Vec<Tick>,
    err: Option<String>,
}

/// Ticks seen by a thread of their own that reads the counter every `poll_s`
/// ([`watch_ticks`]).
struct WatchedTicks<'s> {
    seen: &'s std::sync::Mutex<Watched>,
    next: usize,
}

/// The watching thread's record, locked; a thread that panicked holding the lock left
/// what it had seen intact.
fn lock(seen: &std::sync::Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
    seen.lock().unwrap_or_else(|p| p.into_inner())
}

impl TickSource for WatchedTicks<'_> {
    fn now_mj(&mut self, meter: &mut dyn PowerMeter, clock: &dyn Clock) -> Result<u64, String> {
        self.now_mj_after(meter, clock, f64::INFINITY)
    }
    fn now_mj_after(
        &mut self,
        _: &mut dyn PowerMeter,
        clock: &dyn Clock,
        from_s: f64,
    ) -> Result<u64, String> {
        let from = clock.now_s();
        loop {
            {
                let w = lock(self.seen);
                if let Some(e) = &w.err {
                    return Err(e.clone());
                }
                if let Some(first) = w.first {
                    // The ticks that surely came after `from_s` are kept; the counter's
                    // value is the one before the first of them.
                    self.next = w
                        .ticks
                        .iter()
                        .position(|t| t.seen_s - t.within_s >= from_s)
                        .unwrap_or(w.ticks.len());
                    let before = self.next.checked_sub(1).map(|i| w.ticks[i].mj);
                    return Ok(before.unwrap_or(first));
                }
            }
            if clock.now_s() - from > 1.0 {
                return Err("the thread that reads the energy counter did not read it".into());
            }
            clock.pause(0.0002);
        }
    }
    fn next_tick(&mut self, _: &mut dyn PowerMeter, _: &dyn Clock) -> Result<Option<Tick>, String> {
        let w = lock(self.seen);
        if let Some(t) = w.ticks.get(self.next).copied() {
            drop(w);
            self.next += 1;
            return Ok(Some(t));
        }
        match &w.err {
            Some(e) => Err(e.clone()),
            None => Ok(None),
        }
    }
}

/// Runs `body` with the counter's ticks seen by a thread of their own, which reads it
/// (`read`) every `poll_s`: a caller held up between its own reads (a launch that blocks,
/// its own NVML queries) adds nothing to how late a tick is seen, and each tick comes with
/// within how long it was seen. Where the thread cannot be started, `body` reads the
/// counter itself ([`ReadTicks`]).
///
/// Measured (Wide ResNet-50-2's and ResNeXt-50's steps on the H200, session 33): 21-24 %
/// of the units' windows were 3 ms or more off the counter's 100 ms period, two windows in
/// a row off by as much either way (0.123 and 0.078 s) while their energies agreed: the
/// shared tick was seen 12-27 ms late. Watched so, the ticks were seen no sooner: the
/// reads themselves took 3-5 ms, at times 20-36 ms. So the windows are taken on the
/// counter's period ([`on_counter_period`]), and this thread says how late each tick was.
pub fn watch_ticks<R>(
    read: &(dyn Fn() -> Result<u64, String> + Sync),
    clock: &(dyn Clock + Sync),
    poll_s: f64,
    body: impl FnOnce(&mut dyn TickSource) -> R,
) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let seen = std::sync::Mutex::new(Watched::default());
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = std::thread::Builder::new()
            .name("kc energy ticks".into())
            .spawn_scoped(s, || {
                let mut last: Option<(u64, f64)> = None;
                while !stop.load(Ordering::Relaxed) {
                    let e = read();
                    let t = clock.now_s();
                    let mut w = lock(&seen);
                    match e {
                        Ok(e) => {
                            match last {
                                None => w.first = Some(e),
                                Some((v, at)) if v != e => w.ticks.push(Tick {
                                    mj: e,
                                    seen_s: t,
                                    within_s: t - at,
                                }),
                                _ => {}
                            }
                            last = Some((e, t));
                        }
                        Err(e) => {
                            w.err = Some(e);
                            return;
                        }
                    }
                    drop(w);
                    clock.pause(poll_s);
                }
            });
        match watcher {
            Ok(handle) => {
                let out = body(&mut WatchedTicks {
                    seen: &seen,
                    next: 0,
                });
                stop.store(true, Ordering::Relaxed);
                let _ = handle.join();
                out
            }
            Err(_) => body(&mut ReadTicks::default()),
        }
    })
}

/// Measures contiguous windows while `work` keeps the device busy: one wait for a tick,
/// then each window ends at the first tick at least `min_seconds` after it began and the
/// next begins at that same tick, so no time is spent waiting between windows. A window's
/// ends are the ticks as `ticks` saw them (each window records within how long). Leading
/// windows that were not `settled` are marked settling and do not count; of the rest, it
/// ends after `min_windows` once their powers reach `target_rel_sem`, after a window that
/// `stop_after` holds of, or after `max_windows`. `work` is given, during the window that
/// surely ends the series, the clock's seconds past which it need not keep the device busy
/// ([`series_end_s`]); `None` asks it to keep its queue full.
pub fn measure_series(
    meter: &mut dyn PowerMeter,
    ticks: &mut dyn TickSource,
    clock: &dyn Clock,
    spec: &SeriesSpec<'_>,
    work: &mut dyn FnMut(Option<f64>) -> Result<u64, String>,
) -> Result<Vec<EnergyWindow>, String> {
    let w = &spec.window;
    // Wait for a tick: the counter's first change after the work first kept the device
    // busy (a work whose first call waits, a full queue, does not cost its ticks).
    let busy_from = clock.now_s();
    work(None)?;
    ticks.now_mj_after(meter, clock, busy_from)?;
    let wait_from = clock.now_s();
    let (mut t0, mut e0, mut done0, mut unix0, mut temp0, mut within0) = loop {
        work(None)?;
        clock.pause(w.poll_seconds);
        if let Some(tick) = ticks.next_tick(meter, clock)? {
            let temp = meter.temperature_c();
            let done = work(None)?;
            break (
                tick.seen_s,
                tick.mj,
                done,
                clock.unix_ms_at(tick.seen_s),
                temp,
                tick.within_s,
            );
        }
        if clock.now_s() - wait_from > w.stall_seconds {
            return Err(format!(
                "the energy counter did not change in {:.1} s",
                w.stall_seconds
            ));
        }
    };
    let mut out: Vec<EnergyWindow> = Vec::new();
    // How many leading windows ran before the GPU settled.
    let mut settling = 0;
    let mut power = Vec::new();
    // The SM clock and its event reasons, read beside power while the window runs.
    let mut clocks: Vec<f64> = Vec::new();
    let mut events = 0u64;
    let mut ticks_in = 1;
    // Every tick the series sees (the last is when the counter last changed), for the
    // counter's period over all of them.
    let mut seen_all = vec![t0];
    let mut last_power_at = f64::NEG_INFINITY;
    // Whether the window now running may be a settling one.
    let may_settle = |settling: usize, out: &[EnergyWindow]| {
        spec.settled.is_some() && settling == out.len() && settling < spec.max_settling
    };
    let mut end = series_end_s(spec, t0, 0, may_settle(settling, &out));
    loop {
        // Up to the tick that surely ends the series, the work need not run past it.
        work(end.filter(|&(tick, _)| ticks_in <= tick).map(|(_, s)| s))?;
        clock.pause(w.poll_seconds);
        let now = clock.now_s();
        if now - last_power_at >= POWER_READ_S {
            last_power_at = now;
            if let Ok(p) = meter.power_mw() {
                power.push(f64::from(p) / 1000.0);
            }
            if let Some(c) = meter.sm_clock_mhz() {
                clocks.push(f64::from(c));
            }
            events |= meter.clock_event_bits().unwrap_or(0);
        }
        let Some(tick) = ticks.next_tick(meter, clock)? else {
            if now - seen_all.last().copied().unwrap_or(t0) > w.stall_seconds {
                return Err(format!(
                    "the energy counter stopped changing for {:.1} s",
                    w.stall_seconds
                ));
            }
            continue;
        };
        ticks_in += 1;
        seen_all.push(tick.seen_s);
        if tick.seen_s - t0 < w.min_seconds {
            continue;
        }
        let done1 = work(None)?;
        let unix1 = clock.unix_ms_at(tick.seen_s);
        let temp1 = meter.temperature_c();
        let duration = tick.seen_s - t0;
        let energy_j = (tick.mj - e0) as f64 / 1000.0;
        out.push(EnergyWindow {
            label: w.label.to_string(),
            start: iso8601_ms(unix0),
            end: iso8601_ms(unix1),
            start_unix_ms: unix0,
            end_unix_ms: unix1,
            duration_s: duration,
            energy_j,
            avg_power_w: energy_j / duration,
            power_w: Stats::of(&power),
            ticks: ticks_in,
            completed: done1.saturating_sub(done0),
            temperature_c: temp0.zip(temp1).map(|(a, b)| [a, b]),
            sm_clock_mhz: (!clocks.is_empty()).then(|| Stats::of(&clocks)),
            clock_event_bits: events,
            settling: false,
            ticks_seen_within_ms: Some([within0 * 1e3, tick.within_s * 1e3]),
            seen_duration_s: None,
            series_period_s: None,
            series_ticks_ms: None,
        });
        // A leading window that ran before the GPU settled does not count.
        let last = out.len() - 1;
        if let Some(settled) = spec.settled {
            if settling == last && settling < spec.max_settling && !settled(&out[last]) {
                out[last].settling = true;
                settling += 1;
            }
        }
        let counted = &out[settling..];
        let stop = spec.stop_after.is_some_and(|f| counted.iter().any(f));
        if !counted.is_empty()
            && (counted.len() >= spec.max_windows.max(1)
                || stop
                || (counted.len() >= spec.min_windows.max(1)
                    && (spec.min_windows <= 1 || reached(counted, spec.target_rel_sem))))
        {
            let period = ticks_period_s(&seen_all);
            out.iter_mut().for_each(|w| w.series_period_s = period);
            // The ticks themselves, once, where the series gave a period.
            if let (Some(_), Some(first), Some(&t0)) = (period, out.first_mut(), seen_all.first()) {
                first.series_ticks_ms = Some(seen_all.iter().map(|t| (t - t0) * 1e3).collect());
            }
            return Ok(out);
        }
        // The next window begins at this tick.
        (t0, e0, done0, unix0, temp0, within0) =
            (tick.seen_s, tick.mj, done1, unix1, temp1, tick.within_s);
        power.clear();
        clocks.clear();
        events = 0;
        ticks_in = 1;
        end = series_end_s(spec, t0, out.len() - settling, may_settle(settling, &out));
    }
}

/// A batch of launches' time on the device, seconds, as far as known: the shorter of the
/// `expected` (0 where unknown) and the seen, `seen` being the seconds between the first
/// and the last batch seen retired and the batches retired since the first (at least
/// two). The shorter, so that a queue counted at it lasts at least as long as counted.
pub fn batch_time_s(expected: f64, seen: Option<(f64, u64)>) -> f64 {
    let seen = seen
        .filter(|&(s, batches)| batches >= 2 && s > 0.0)
        .map(|(s, batches)| s / batches as f64);
    match (expected > 0.0, seen) {
        (true, Some(s)) => expected.min(s),
        (true, None) => expected,
        (false, Some(s)) => s,
        (false, None) => 0.0,
    }
}

/// Whether `in_flight` batches of `batch_s` each already cover `for_s` more seconds of
/// work: only the batches after the running one count, that one being partly done. Never
/// where no bound is given or a batch's time is not known (the queue is then kept full).
pub fn queue_covers(in_flight: usize, batch_s: f64, for_s: Option<f64>) -> bool {
    for_s.is_some_and(|need| batch_s > 0.0 && in_flight.saturating_sub(1) as f64 * batch_s >= need)
}

/// Seconds from `now_ms` until the counter's next tick, from a tick seen at
/// `last_tick_ms` and the counter's period (all on the windows' clock, Unix
/// milliseconds). Only a prediction: the counter's period drifts, so a caller keeps a
/// margin and does not lean on it long after the tick it counts from.
pub fn until_next_tick_s(last_tick_ms: i64, period_s: f64, now_ms: i64) -> f64 {
    let since = (now_ms - last_tick_ms).max(0) as f64 / 1000.0;
    let periods = (since / period_s).floor() + 1.0;
    periods * period_s - since
}

/// The head of `launches` back-to-back launches (`launch_us` each) that ends before the
/// counter's next tick (`until_tick_s` away) less `margin_s`: what can be done with the
/// head's results, before the tick, keeps the windows from starting a tick later. `None`
/// (all of them) where no tick is predicted, where the head would be all of them anyway,
/// or where it would be under ten launches or under a quarter of them: too few repeats to
/// stand for the rest (a unit's look asks whether its repeats ran its values away).
pub fn head_before_tick(
    until_tick_s: Option<f64>,
    margin_s: f64,
    launch_us: f64,
    launches: usize,
) -> Option<usize> {
    let budget_s = until_tick_s? - margin_s;
    // A hair over, so that a whole number of launches that fits exactly counts.
    let fit = (budget_s * 1e6 / launch_us.max(0.001) + 1e-6).floor();
    if !fit.is_finite() || fit < 0.0 {
        return None;
    }
    let n = (fit as usize).min(launches);
    (n >= 10 && n * 4 >= launches && n < launches).then_some(n)
}

/// Whether the windows' mean power has reached the relative standard error `target`.
fn reached(windows: &[EnergyWindow], target: f64) -> bool {
    if target <= 0.0 || windows.len() < 2 {
        return false;
    }
    let p = Stats::of(&windows.iter().map(|w| w.avg_power_w).collect::<Vec<_>>());
    p.mean > 0.0 && p.sem() / p.mean <= target
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A series' spec: windows of at least `min_seconds`, the counter polled every
    /// `poll_seconds` (2 s to a stall), `min_windows` to `max_windows` of them, ending at
    /// `target_rel_sem`; no stop, no settling.
    fn spec(
        label: &str,
        min_seconds: f64,
        poll_seconds: f64,
        min_windows: usize,
        max_windows: usize,
        target_rel_sem: f64,
    ) -> SeriesSpec<'_> {
        SeriesSpec {
            window: WindowSpec {
                label,
                min_seconds,
                poll_seconds,
                stall_seconds: 2.0,
            },
            min_windows,
            max_windows,
            target_rel_sem,
            stop_after: None,
            settled: None,
            max_settling: 0,
            period_s: None,
        }
    }

    /// A counter that advances every 100 ms by `watts` × 0.1 s, like the H100's.
    struct Fake<'a> {
        clock: &'a FakeClock,
        watts: f64,
    }

    struct FakeClock {
        t: Cell<f64>,
    }

    impl Clock for FakeClock {
        fn now_s(&self) -> f64 {
            self.t.get()
        }
        fn pause(&self, s: f64) {
            self.t.set(self.t.get() + s);
        }
        fn unix_ms(&self) -> i64 {
            1_700_000_000_000 + (self.t.get() * 1000.0).round() as i64
        }
    }

    impl PowerMeter for Fake<'_> {
        fn energy_mj(&mut self) -> Result<u64, String> {
            let ticks = (self.clock.t.get() / 0.1 + 1e-9).floor();
            Ok((ticks * 0.1 * self.watts * 1000.0).round() as u64)
        }
        fn power_mw(&mut self) -> Result<u32, String> {
            Ok((self.watts * 1000.0) as u32)
        }
        fn temperature_c(&mut self) -> Option<u32> {
            // Warms one degree a second, so a window's two readings differ.
            Some(40 + self.clock.t.get() as u32)
        }
        fn sm_clock_mhz(&mut self) -> Option<u32> {
            // 1980 MHz for the first half second, 1800 after.
            Some(if self.clock.t.get() < 0.5 { 1980 } else { 1800 })
        }
        fn clock_event_bits(&mut self) -> Option<u64> {
            Some(if self.clock.t.get() < 0.5 { 0 } else { 0x4 })
        }
    }

    /// A counter whose power alternates between `watts` from one tick to the next, and
    /// whose clock event reasons hold the power cap (0x4) from `capped_from_s` on.
    struct Alternating<'a> {
        clock: &'a FakeClock,
        watts: [u64; 2],
        capped_from_s: f64,
    }

    impl PowerMeter for Alternating<'_> {
        fn energy_mj(&mut self) -> Result<u64, String> {
            let ticks = (self.clock.t.get() / 0.1 + 1e-9).floor() as u64;
            Ok((0..ticks).map(|k| self.watts[(k % 2) as usize] * 100).sum())
        }
        fn power_mw(&mut self) -> Result<u32, String> {
            Ok(((self.watts[0] + self.watts[1]) * 500) as u32)
        }
        fn clock_event_bits(&mut self) -> Option<u64> {
            Some(if self.clock.t.get() < self.capped_from_s {
                0
            } else {
                0x4
            })
        }
    }

    #[test]
    fn windows_align_to_ticks_and_are_exact() {
        let clock = FakeClock {
            t: Cell::new(0.037),
        };
        let mut meter = Fake {
            clock: &clock,
            watts: 350.0,
        };
        let mut replays = 0u64;
        let spec = WindowSpec {
            label: "graph",
            min_seconds: 1.0,
            poll_seconds: 0.001,
            stall_seconds: 2.0,
        };
        let w = measure(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &spec,
            &mut |_| {
                replays += 1;
                Ok(replays)
            },
        )
        .unwrap();
        // Starts at a tick and ends at the first tick at least 1 s later: the duration is
        // within one tick period (plus a poll) of the minimum, and the energy is exactly
        // the counter's advance over a whole number of ticks.
        assert!(
            w.duration_s >= 1.0 && w.duration_s < 1.1 + 0.0011,
            "{}",
            w.duration_s
        );
        let ticks = (w.duration_s / 0.1).round();
        assert!(
            (w.energy_j - 350.0 * 0.1 * ticks).abs() < 1e-9,
            "{}",
            w.energy_j
        );
        assert!((w.avg_power_w - 350.0).abs() < 0.5);
        assert_eq!(f64::from(w.ticks), ticks + 1.0);
        // Eleven ticks or more: the series' own period over all of them, each seen within
        // a poll.
        let p = w.series_period_s.expect("a series period");
        assert!((p - 0.1).abs() < 0.0002, "{p}");
        // The series' ticks are kept as seen, from its first: one a tick, a period apart.
        let seen = w.series_ticks_ms.as_ref().expect("the series' ticks");
        assert_eq!(seen.len(), w.ticks as usize);
        assert_eq!(seen[0], 0.0);
        assert!(
            seen.windows(2).all(|t| (t[1] - t[0] - 100.0).abs() < 1.1),
            "{seen:?}"
        );
        assert!(w.completed > 0);
        assert_eq!(w.power_w.mean, 350.0);
        assert!(w.start.ends_with('Z') && w.start.contains('T'));
        // The temperature is read at the window's two ticks.
        assert_eq!(w.temperature_c, Some([40, 41]));
        // The SM clock and its event reasons are read beside power: the power cap seen
        // after half a second is kept.
        let c = w.sm_clock_mhz.expect("clocks read");
        assert!(c.min == 1800.0 && c.max == 1980.0, "{c:?}");
        assert_eq!(w.clock_event_bits, 0x4);
    }

    #[test]
    fn the_window_that_ends_a_series_bounds_its_work_to_a_margin_past_its_tick() {
        let clock = FakeClock {
            t: Cell::new(0.037),
        };
        let mut meter = Fake {
            clock: &clock,
            watts: 300.0,
        };
        // Three windows of at least 50 ms, the counter's period known: only the third, which
        // surely ends the series, tells its work when it need no longer run.
        let mut s = spec("unit", 0.05, 0.001, 3, 3, 0.0);
        s.period_s = Some(0.1);
        let mut bounds: Vec<(f64, Option<f64>)> = Vec::new();
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &s,
            &mut |until| {
                bounds.push((clock.now_s(), until));
                Ok(0)
            },
        )
        .unwrap();
        assert_eq!(ws.len(), 3);
        let last = &ws[2];
        let (from, to) = (
            (last.start_unix_ms - 1_700_000_000_000) as f64 / 1e3,
            (last.end_unix_ms - 1_700_000_000_000) as f64 / 1e3,
        );
        let bounded: Vec<_> = bounds.iter().filter(|(_, u)| u.is_some()).collect();
        assert!(!bounded.is_empty());
        // Every bound comes inside the last window, and each lies the margin past its end.
        for (at, until) in &bounded {
            assert!(
                *at >= from - 1e-9 && *at <= to + 1e-9,
                "{at} outside {from}..{to}"
            );
            let until = until.unwrap();
            assert!(
                (until - (to + TAIL_MARGIN_S)).abs() < 0.0015,
                "{until} against {to}"
            );
        }
        // The windows before it keep the queue full throughout.
        assert!(bounds
            .iter()
            .filter(|(at, _)| *at < from - 1e-9)
            .all(|(_, u)| u.is_none()));
        // Without the period nothing is bounded.
        s.period_s = None;
        let mut any = false;
        measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &s,
            &mut |until| {
                any |= until.is_some();
                Ok(0)
            },
        )
        .unwrap();
        assert!(!any);
    }

    #[test]
    fn a_series_end_is_predicted_only_where_the_window_surely_ends_it() {
        let mut s = spec("unit", 0.05, 0.001, 1, 10, 0.01);
        s.period_s = Some(0.1);
        // One window enough: the first ends it, at the tick after its start.
        let (tick, until) = series_end_s(&s, 2.0, 0, false).unwrap();
        assert_eq!(tick, 1);
        assert!((until - (2.1 + TAIL_MARGIN_S)).abs() < 1e-12);
        // A settling window may not count.
        assert_eq!(series_end_s(&s, 2.0, 0, true), None);
        // Two windows at least, ten at most: a window that may be followed is not bounded,
        // the tenth is.
        s.min_windows = 2;
        assert_eq!(series_end_s(&s, 2.0, 1, false), None);
        assert!(series_end_s(&s, 2.0, 9, false).is_some());
        // A minimum within the ticks' jitter of a whole period waits for the tick after.
        s.min_windows = 1;
        s.window.min_seconds = 0.1;
        assert_eq!(series_end_s(&s, 2.0, 0, false).unwrap().0, 2);
        // No period known: none.
        s.period_s = None;
        assert_eq!(series_end_s(&s, 2.0, 0, false), None);
    }

    #[test]
    fn a_bounded_queue_counts_batches_at_the_shorter_time_and_not_the_running_one() {
        // The seen time (1.5 ms over 10 batches seen) is shorter than the expected 2 ms.
        assert!((batch_time_s(0.002, Some((0.015, 10))) - 0.0015).abs() < 1e-12);
        assert_eq!(batch_time_s(0.002, Some((0.030, 10))), 0.002);
        // Too few batches seen: the expected stands; neither known: 0.
        assert_eq!(batch_time_s(0.002, Some((0.001, 1))), 0.002);
        assert_eq!(batch_time_s(0.0, None), 0.0);
        // Eight batches in flight of 2 ms cover 14 ms, the running one left out.
        assert!(queue_covers(8, 0.002, Some(0.014)));
        assert!(!queue_covers(8, 0.002, Some(0.0145)));
        // Without a bound, or a batch's time, the queue is kept full.
        assert!(!queue_covers(16, 0.002, None));
        assert!(!queue_covers(16, 0.0, Some(0.001)));
    }

    #[test]
    fn a_stuck_counter_is_an_error() {
        struct Stuck;
        impl PowerMeter for Stuck {
            fn energy_mj(&mut self) -> Result<u64, String> {
                Ok(5)
            }
            fn power_mw(&mut self) -> Result<u32, String> {
                Ok(0)
            }
        }
        let clock = FakeClock { t: Cell::new(0.0) };
        let spec = WindowSpec {
            label: "x",
            min_seconds: 1.0,
            poll_seconds: 0.01,
            stall_seconds: 0.5,
        };
        let e = measure(
            &mut Stuck,
            &mut ReadTicks::default(),
            &clock,
            &spec,
            &mut |_| Ok(0),
        )
        .unwrap_err();
        assert!(e.contains("did not change"), "{e}");
    }

    #[test]
    fn a_series_is_contiguous_and_stops_at_its_target() {
        let clock = FakeClock {
            t: Cell::new(0.013),
        };
        let mut meter = Fake {
            clock: &clock,
            watts: 300.0,
        };
        let mut n = 0u64;
        let series = spec("unit 3", 0.05, 0.0005, 3, 10, 0.005);
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &series,
            &mut |_| {
                n += 1;
                Ok(n)
            },
        )
        .unwrap();
        // A steady power agrees at once: the series stops at its minimum, each window one
        // tick long, each beginning where the last ended.
        assert_eq!(ws.len(), 3);
        for w in &ws {
            assert_eq!(w.ticks, 2);
            assert!((w.duration_s - 0.1).abs() < 0.001, "{}", w.duration_s);
            assert!((w.energy_j - 30.0).abs() < 1e-9, "{}", w.energy_j);
        }
        for pair in ws.windows(2) {
            assert_eq!(pair[0].end_unix_ms, pair[1].start_unix_ms);
        }
        // Without a target the series runs to its maximum.
        let fixed = SeriesSpec {
            min_windows: 2,
            max_windows: 4,
            target_rel_sem: 0.0,
            ..series
        };
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &fixed,
            &mut |_| Ok(0),
        )
        .unwrap();
        assert_eq!(ws.len(), 4);
    }

    #[test]
    fn a_noisy_power_runs_the_series_to_its_maximum() {
        let clock = FakeClock { t: Cell::new(0.05) };
        let series = spec("unit 1", 0.05, 0.001, 3, 7, 0.005);
        // 250 and 350 W by turns: the windows never agree to 0.5 %.
        let mut meter = Alternating {
            clock: &clock,
            watts: [250, 350],
            capped_from_s: f64::INFINITY,
        };
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &series,
            &mut |_| Ok(0),
        )
        .unwrap();
        assert_eq!(ws.len(), 7);
        let powers: Vec<f64> = ws.iter().map(|w| w.avg_power_w.round()).collect();
        assert!(
            powers.contains(&250.0) && powers.contains(&350.0),
            "{powers:?}"
        );
    }

    #[test]
    fn a_minimum_of_one_window_ends_the_series_at_its_first_window() {
        // The same noisy power, whose windows never agree: a caller that judged one
        // window's spread to meet the item's target gets one window, the counted one.
        let clock = FakeClock { t: Cell::new(0.05) };
        let series = spec("unit 1", 0.05, 0.001, 1, 7, 0.005);
        let mut meter = Alternating {
            clock: &clock,
            watts: [250, 350],
            capped_from_s: f64::INFINITY,
        };
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &series,
            &mut |_| Ok(0),
        )
        .unwrap();
        assert_eq!(ws.len(), 1);
        assert_eq!(ws[0].ticks, 2);
        assert!(!ws[0].settling);
    }

    #[test]
    fn a_series_at_the_power_cap_stops_after_its_first_capped_window() {
        fn cap(w: &EnergyWindow) -> bool {
            w.clock_event_bits & 0x4 != 0
        }
        fn slowdown(w: &EnergyWindow) -> bool {
            w.clock_event_bits & 0x8 != 0
        }
        let series = |stop: Option<&'static dyn Fn(&EnergyWindow) -> bool>| SeriesSpec {
            stop_after: stop,
            ..spec("unit 4", 0.05, 0.001, 2, 10, 0.005)
        };
        let run = |spec: &SeriesSpec<'_>, t0: f64| {
            let clock = FakeClock { t: Cell::new(t0) };
            // 600 and 700 W by turns (never agreeing to 0.5 %), the power cap's reason
            // (NVML's SW power cap, 0x4) raised from 0.45 s on.
            let mut meter = Alternating {
                clock: &clock,
                watts: [600, 700],
                capped_from_s: 0.45,
            };
            measure_series(
                &mut meter,
                &mut ReadTicks::default(),
                &clock,
                spec,
                &mut |_| Ok(0),
            )
            .unwrap()
        };
        // Capped from its first window: that window alone, under its minimum of two.
        let ws = run(&series(Some(&cap)), 0.5);
        assert_eq!(ws.len(), 1);
        assert!(ws[0].clock_event_bits & 0x4 != 0);
        // Capped from its fourth window on: it ends with that window.
        let ws = run(&series(Some(&cap)), 0.05);
        assert_eq!(
            ws.len(),
            4,
            "{:?}",
            ws.iter().map(|w| w.clock_event_bits).collect::<Vec<_>>()
        );
        assert_eq!(ws[2].clock_event_bits & 0x4, 0);
        assert!(ws.iter().all(|w| !w.settling));
        // Another reason does not end it, nor does the cap where not asked: the series runs to
        // its maximum, its powers never agreeing.
        assert_eq!(run(&series(Some(&slowdown)), 0.5).len(), 10);
        assert_eq!(run(&series(None), 0.5).len(), 10);
        // Settling only leads: windows at the cap after uncapped ones count.
        let uncapped = |w: &EnergyWindow| w.clock_event_bits & 0x4 == 0;
        let spec = SeriesSpec {
            settled: Some(&uncapped),
            max_settling: 5,
            ..series(None)
        };
        let ws = run(&spec, 0.05);
        assert_eq!(ws.len(), 10);
        assert!(ws.iter().all(|w| !w.settling));
    }

    #[test]
    fn a_series_leaves_out_its_leading_windows_until_the_gpu_settled() {
        /// 300 W steady; the SM clock held down (1700 MHz) and the power cap's reason raised
        /// until 0.35 s, then 1980 MHz and no reason.
        struct Recovering<'a> {
            clock: &'a FakeClock,
        }
        impl PowerMeter for Recovering<'_> {
            fn energy_mj(&mut self) -> Result<u64, String> {
                let ticks = (self.clock.t.get() / 0.1 + 1e-9).floor();
                Ok((ticks * 30_000.0) as u64)
            }
            fn power_mw(&mut self) -> Result<u32, String> {
                Ok(300_000)
            }
            fn sm_clock_mhz(&mut self) -> Option<u32> {
                Some(if self.clock.t.get() < 0.35 {
                    1700
                } else {
                    1980
                })
            }
            fn clock_event_bits(&mut self) -> Option<u64> {
                Some(if self.clock.t.get() < 0.35 { 0x4 } else { 0 })
            }
        }
        let settled = |w: &EnergyWindow| w.clock_event_bits & 0x4 == 0;
        let series = |max_settling| SeriesSpec {
            settled: Some(&settled),
            max_settling,
            ..spec("unit 7 at a 20 % duty", 0.05, 0.001, 2, 10, 0.005)
        };
        let run = |spec: &SeriesSpec<'_>| {
            let clock = FakeClock { t: Cell::new(0.05) };
            measure_series(
                &mut Recovering { clock: &clock },
                &mut ReadTicks::default(),
                &clock,
                spec,
                &mut |_| Ok(0),
            )
            .unwrap()
        };
        // Windows 0.1-0.2, 0.2-0.3 and 0.3-0.4 s saw the cap: settling, not counted; the
        // two after them agree at once and end the series.
        let ws = run(&series(5));
        let flags: Vec<bool> = ws.iter().map(|w| w.settling).collect();
        assert_eq!(flags, [true, true, true, false, false]);
        assert!(ws[3..].iter().all(|w| w.clock_event_bits == 0));
        // At most `max_settling` are left out: then the windows count as they come.
        let ws = run(&series(1));
        let flags: Vec<bool> = ws.iter().map(|w| w.settling).collect();
        assert_eq!(flags, [true, false, false]);
        // Without a settling allowance every window counts.
        let never = |_: &EnergyWindow| false;
        let spec = SeriesSpec {
            settled: Some(&never),
            ..series(0)
        };
        assert!(run(&spec).iter().all(|w| !w.settling));
    }

    #[test]
    fn the_next_tick_is_predicted_from_the_last_and_the_period() {
        let clock = FakeClock {
            t: Cell::new(0.013),
        };
        let mut meter = Fake {
            clock: &clock,
            watts: 300.0,
        };
        let series = spec("unit 2", 0.05, 0.0005, 2, 2, 0.0);
        let ws = measure_series(
            &mut meter,
            &mut ReadTicks::default(),
            &clock,
            &series,
            &mut |_| Ok(0),
        )
        .unwrap();
        // The fake counter ticks every 100 ms; its windows say so.
        let period = counter_period_s(&ws).expect("a period");
        assert!((period - 0.1).abs() < 0.002, "{period}");
        // 37 ms after the last tick, the next is 63 ms away; 137 ms after, still 63.
        let last = ws.last().unwrap().end_unix_ms;
        assert!((until_next_tick_s(last, 0.1, last + 37) - 0.063).abs() < 1e-9);
        assert!((until_next_tick_s(last, 0.1, last + 137) - 0.063).abs() < 1e-9);
        // At the tick itself the next is a period away.
        assert!((until_next_tick_s(last, 0.1, last) - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_head_of_launches_ends_before_the_next_tick() {
        // 37 ms to the tick, 12 ms margin, 1 ms launches: 25 of 48 fit.
        assert_eq!(head_before_tick(Some(0.037), 0.012, 1000.0, 48), Some(25));
        // Without a tick predicted, or with all of them fitting, no head.
        assert_eq!(head_before_tick(None, 0.012, 1000.0, 48), None);
        assert_eq!(head_before_tick(Some(0.09), 0.012, 1000.0, 48), None);
        // Under ten, or under a quarter, is too few to stand for the rest.
        assert_eq!(head_before_tick(Some(0.021), 0.012, 1000.0, 48), None);
        assert_eq!(head_before_tick(Some(0.030), 0.012, 1000.0, 100), None);
        assert_eq!(head_before_tick(Some(0.040), 0.012, 1000.0, 100), Some(28));
        // A tick closer than the margin, or a nonsense launch time, gives none.
        assert_eq!(head_before_tick(Some(0.005), 0.012, 1000.0, 48), None);
        assert_eq!(head_before_tick(Some(0.05), 0.012, f64::NAN, 48), None);
    }

    #[test]
    fn a_caller_held_up_past_a_tick_still_measures_its_windows_from_the_tick() {
        // The fake counter ticks every 100 ms; the work blocks for 25 ms on every seventh
        // call (a launch held up by a full queue), so a tick is often read late.
        let series = spec("unit 27", 0.05, 0.001, 6, 6, 0.0);
        let run = |watched: bool| {
            let clock = FakeClock {
                t: Cell::new(0.003),
            };
            let mut meter = Fake {
                clock: &clock,
                watts: 400.0,
            };
            let mut calls = 0u64;
            let mut work = |_: Option<f64>| {
                calls += 1;
                if calls % 7 == 0 {
                    clock.pause(0.025);
                }
                Ok(calls)
            };
            // A watcher sees each tick at its own time, within its poll.
            let mut at_ticks = ExactTicks { last: None };
            let ticks: &mut dyn TickSource = if watched {
                &mut at_ticks
            } else {
                &mut ReadTicks::default()
            };
            measure_series(&mut meter, ticks, &clock, &series, &mut work).unwrap()
        };
        // Read at each poll, some windows run long and the next short, by up to the block:
        // their powers part though their energies are the counter's exact 40 J.
        let late = run(false);
        let off = late
            .iter()
            .map(|w| (w.duration_s - 0.1).abs())
            .fold(0.0, f64::max);
        assert!(off > 0.01, "{off}");
        assert!(late.iter().all(|w| (w.energy_j - 40.0).abs() < 1e-9));
        // Seen at the ticks, every window is the counter's period and 400 W.
        let watched = run(true);
        for w in &watched {
            assert!((w.duration_s - 0.1).abs() < 1e-9, "{}", w.duration_s);
            assert!((w.avg_power_w - 400.0).abs() < 1e-6);
            let within = w.ticks_seen_within_ms.unwrap();
            assert!(within.iter().all(|&ms| ms <= 1.0), "{within:?}");
        }
        // Seven ticks are too few for the series' own period: each window's serves.
        assert!(watched
            .iter()
            .chain(&late)
            .all(|w| w.series_period_s.is_none()));
        // Stamped at the ticks too, and contiguous.
        for pair in watched.windows(2) {
            assert_eq!(pair[0].end_unix_ms, pair[1].start_unix_ms);
            assert_eq!((pair[1].start_unix_ms - 1_700_000_000_000) % 100, 0);
        }
    }

    /// Ticks seen at the instant the fake counter advanced (as a watching thread sees them,
    /// to its poll): computed from the fake clock's 100 ms period.
    struct ExactTicks {
        last: Option<u64>,
    }

    impl TickSource for ExactTicks {
        fn now_mj(&mut self, meter: &mut dyn PowerMeter, _: &dyn Clock) -> Result<u64, String> {
            let e = meter.energy_mj()?;
            self.last = Some(e);
            Ok(e)
        }
        fn next_tick(
            &mut self,
            meter: &mut dyn PowerMeter,
            clock: &dyn Clock,
        ) -> Result<Option<Tick>, String> {
            let e = meter.energy_mj()?;
            let last = self.last.replace(e);
            if last == Some(e) {
                return Ok(None);
            }
            // The tick this reading is past: the last multiple of 100 ms (one tick at a
            // time is enough for this test's windows of one period).
            let at = (clock.now_s() / 0.1 + 1e-9).floor() * 0.1;
            Ok(Some(Tick {
                mj: e,
                seen_s: at,
                within_s: 0.0005,
            }))
        }
    }

    #[test]
    fn the_watching_thread_sees_each_tick_at_its_own_time_while_the_caller_sleeps() {
        // A counter that advances every 5 ms of real time.
        let clock = SystemClock::default();
        let read = || Ok((clock.now_s() / 0.005) as u64);
        let ticks = watch_ticks(&read, &clock, 0.0002, |ticks| {
            let mut meter = NoMeter;
            let first = ticks.now_mj(&mut meter, &clock).unwrap();
            // Held up for 60 ms, then every tick since is read at once.
            std::thread::sleep(std::time::Duration::from_millis(60));
            let mut got = Vec::new();
            while let Some(t) = ticks.next_tick(&mut meter, &clock).unwrap() {
                got.push(t);
            }
            (first, got)
        });
        let (first, got) = ticks;
        assert!(got.len() >= 5, "{}", got.len());
        // In order, each one count on from the one before, each seen at its own time.
        assert_eq!(got[0].mj, first + 1);
        for pair in got.windows(2) {
            assert_eq!(pair[1].mj, pair[0].mj + 1);
            assert!(pair[1].seen_s > pair[0].seen_s);
        }
        assert!(got.last().unwrap().seen_s - got[0].seen_s > 0.02);
        assert!(got.iter().all(|t| t.within_s >= 0.0));
    }

    #[test]
    fn a_series_whose_first_work_waits_starts_at_a_tick_seen_while_it_waited() {
        // A counter that advances every 20 ms of real time; the series' first work call
        // waits 50 ms (an enqueue behind a full queue), the device busy from its start.
        // Read before that call, the counter's ticks during it would count (as
        // `now_mj_after` keeps them); read after it with `now_mj`, they would be passed
        // over and the window would start after the wait (this test fails so).
        let clock = SystemClock::default();
        let read = || Ok((clock.now_s() / 0.02) as u64);
        let mut began = None;
        let mut calls = 0;
        let spec = spec("unit", 0.01, 0.0002, 1, 1, 0.0);
        let ws = watch_ticks(&read, &clock, 0.0002, |ticks| {
            measure_series(&mut NoMeter, ticks, &clock, &spec, &mut |_| {
                calls += 1;
                if calls == 1 {
                    began = Some(clock.now_s());
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Ok(calls)
            })
        })
        .unwrap();
        let began = began.unwrap();
        let start_s = (ws[0].start_unix_ms - clock.unix_ms_at(0.0)) as f64 / 1e3;
        // The window began at a tick the watcher saw while the first call waited: no sooner
        // than the work began, within the first 20 ms period after it (plus the reads'
        // own lateness), not after the wait.
        assert!(start_s >= began - 0.002, "{start_s} before {began}");
        assert!(start_s < began + 0.045, "{start_s} long after {began}");
    }

    #[test]
    fn ticks_kept_after_a_time_are_those_that_surely_came_after_it() {
        let tick = |mj, seen_s, within_s| Tick {
            mj,
            seen_s,
            within_s,
        };
        let seen = std::sync::Mutex::new(Watched {
            first: Some(100),
            ticks: vec![
                tick(101, 0.010, 0.001),
                tick(102, 0.030, 0.005),
                tick(103, 0.050, 0.001),
            ],
            err: None,
        });
        let mut w = WatchedTicks {
            seen: &seen,
            next: 0,
        };
        let clock = SystemClock::default();
        // Seen at 30 ms within 5 ms: it may have come at 25 ms, before 27 ms; the next is
        // the first kept, and the counter's value before it is the one returned.
        assert_eq!(w.now_mj_after(&mut NoMeter, &clock, 0.027).unwrap(), 102);
        assert_eq!(w.next_tick(&mut NoMeter, &clock).unwrap().unwrap().mj, 103);
        assert_eq!(w.next_tick(&mut NoMeter, &clock).unwrap(), None);
        // From before them all, all are kept; `now_mj` passes over every one seen.
        assert_eq!(w.now_mj_after(&mut NoMeter, &clock, 0.0).unwrap(), 100);
        assert_eq!(w.next_tick(&mut NoMeter, &clock).unwrap().unwrap().mj, 101);
        assert_eq!(w.now_mj(&mut NoMeter, &clock).unwrap(), 103);
        assert_eq!(w.next_tick(&mut NoMeter, &clock).unwrap(), None);
    }

    /// A meter the watched series never reads the counter of.
    struct NoMeter;

    impl PowerMeter for NoMeter {
        fn energy_mj(&mut self) -> Result<u64, String> {
            Err("read by the watching thread only".into())
        }
        fn power_mw(&mut self) -> Result<u32, String> {
            Ok(0)
        }
    }

    #[test]
    fn iso_timestamps() {
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_ms(1_790_857_026_123), "2026-10-01T12:17:06.123Z");
        assert_eq!(iso8601_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
