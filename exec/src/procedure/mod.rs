//! The measurement procedure on the GPU: join the job (ranks replaying together), open the
//! GPU with its back ends, an eager check of every unit, the idle GPU's power, then graph
//! mode ([`graph`]) or isolated mode ([`isolated`]), and the results. It sees the device core
//! and [`Gpu`], never a back end's insides.
//!
//! Invariant: every window and every timed sample in the results was measured in this run;
//! derived figures say how they were derived.

mod diagnose;
mod graph;
mod isolated;
mod kinds_left_out;
mod lead_in;
mod step_values;
mod transitions;

use crate::backends::{At, Gpu};
use crate::device::nvml;
use crate::device::{Feeder, Graph};
use crate::energy::{self, Clock, SeriesSpec, SystemClock, WindowSpec};
use crate::{not_executed_reason, ExecError, ExecOptions};
use kc_core::plan::show::call_str;
use kc_core::plan::types::{Plan, PlanUnit};
use kc_core::results::*;
use std::collections::HashMap;

/// Target GPU time of one feeder batch: the count of completed launches advances by one
/// batch, so a one-tick window counts them to ~2 %.
const BATCH_NS: f64 = 2_000_000.0;
/// GPU time the feeder keeps queued (in as many batches, 2 to 16), so that host launch
/// overhead never starves the GPU and the queue left after a window stays short. 12 ms
/// (tried in session 23, so that a unit's next windows start a tick sooner) starved it:
/// 13 of ResNeXt-50's units completed 5-18 % fewer launches in their windows than their
/// timed duration, and the energy fell with them.
const QUEUED_NS: f64 = 32_000_000.0;

pub(super) struct Energy<'a> {
    meter: Option<nvml::NvmlMeter<'a>>,
    clock: SystemClock,
    windows: Vec<energy::EnergyWindow>,
    idle_w: Option<f64>,
    /// The spin kernel's power and its standard error, once measured
    /// ([`Energy::spin_power`]).
    spin_w: Option<(f64, f64)>,
    /// The job, when ranks replay together: windows launch as many replays as the time
    /// takes, which differs by rank, so each rank tops its launches up to the job's most
    /// (a rank that stopped early would leave its partners waiting in a collective).
    job: Option<crate::rendezvous::Job>,
}

/// A series as the host ran it ([`SeriesHow::tail`], `UnitSetupMs`): when it began waiting
/// for the counter's first tick, and at its end, ms, the launches it still held queued
/// (estimated, of the device's time), the wait for them and the end of its tick watcher.
#[derive(Clone, Copy)]
pub(super) struct SeriesTail {
    pub began: std::time::Instant,
    pub queued_ms: f64,
    pub drain_ms: f64,
    pub join_ms: f64,
}

/// Every rank of a job ends a phase with the same number of launches of its graph: each
/// tops its own up to the job's most (without waiting: the caller synchronises after).
/// Without a job, nothing to do.
fn even_out(
    job: Option<&mut crate::rendezvous::Job>,
    gpu: &mut Gpu,
    graph: &Graph,
    launched: u64,
    what: &str,
) -> Result<(), ExecError> {
    let Some(job) = job else {
        return Ok(());
    };
    let most = job.agree_max(what, launched)?;
    for _ in launched..most {
        gpu.launch(graph)?;
    }
    Ok(())
}

/// Launches of a graph recorded back to back (CUPTI) to tell its kernels: the first starts
/// from an idle GPU, unlike timed launches, which run back to back, and is kept apart.
pub(super) const RECORDED_LAUNCHES: usize = 4;

/// Records [`RECORDED_LAUNCHES`] launches of `graph` back to back and keeps those after the
/// first; where the records do not split evenly by launch (a launch that ran another
/// number of kernels), every record stands as the launches' together.
pub(super) fn record_launches(
    gpu: &mut Gpu,
    graph: &Graph,
) -> Result<kc_core::results::fidelity::RecordedLaunches, ExecError> {
    record_launches_n(gpu, graph, RECORDED_LAUNCHES)
}

/// Records `n` launches of `graph` back to back and keeps those after the first where
/// there are two or more (one launch is kept as it ran, from whatever state the GPU and
/// the image were in).
pub(super) fn record_launches_n(
    gpu: &mut Gpu,
    graph: &Graph,
    n: usize,
) -> Result<kc_core::results::fidelity::RecordedLaunches, ExecError> {
    record_launches_keeping(gpu, graph, n, |records| records)
}

/// [`record_launches`] of a graph that runs the device core's own kernels besides a unit's
/// (the unit in the model's cache state: the touch kernel, and where asked the
/// code-evicting and shared-memory kernels): their records left out before the launches
/// are split.
pub(super) fn record_launches_leaving_out_touches(
    gpu: &mut Gpu,
    graph: &Graph,
) -> Result<kc_core::results::fidelity::RecordedLaunches, ExecError> {
    record_launches_keeping(gpu, graph, RECORDED_LAUNCHES, |mut records| {
        records.retain(|k| !crate::device::OWN_KERNELS.contains(&k.name.as_str()));
        records
    })
}

/// [`record_launches`] of a graph that runs other work before each of a unit's invocations,
/// then a marker kernel (`--model-cache-lead-ins`): the unit's records are those after a
/// marker ([`kc_core::results::fidelity::after_markers`]), the device core's own left out.
pub(super) fn record_launches_after_markers(
    gpu: &mut Gpu,
    graph: &Graph,
) -> Result<kc_core::results::fidelity::RecordedLaunches, ExecError> {
    record_launches_keeping(gpu, graph, RECORDED_LAUNCHES, |records| {
        kc_core::results::fidelity::after_markers(
            records,
            &crate::device::OWN_KERNELS,
            crate::device::MARK_KERNEL,
        )
    })
}

/// [`record_launches_n`] keeping the records `keep` gives of all the launches' records,
/// before the launches are split.
fn record_launches_keeping(
    gpu: &mut Gpu,
    graph: &Graph,
    n: usize,
    keep: impl FnOnce(
        Vec<kc_core::results::fidelity::KernelRecord>,
    ) -> Vec<kc_core::results::fidelity::KernelRecord>,
) -> Result<kc_core::results::fidelity::RecordedLaunches, ExecError> {
    let records = crate::device::cupti::record(|| launch_n(gpu, graph, n))?;
    Ok(kc_core::results::fidelity::RecordedLaunches::after_first(
        keep(records),
        n,
    ))
}

/// `n` launches of `graph` back to back, then the device synchronised: what the recorders
/// above record.
fn launch_n(gpu: &mut Gpu, graph: &Graph, n: usize) -> Result<(), ExecError> {
    for _ in 0..n {
        gpu.launch(graph)?;
    }
    gpu.synchronize()
}

/// [`record_launches`], with the copies and fills the launches ran, per launch (CUPTI's
/// copy and fill activity too, [`kc_core::results::fidelity::copies_in`]).
pub(super) fn record_launches_with_copies(
    gpu: &mut Gpu,
    graph: &Graph,
) -> Result<(kc_core::results::fidelity::RecordedLaunches, f64), ExecError> {
    let n = RECORDED_LAUNCHES;
    let (records, copies) = crate::device::cupti::record_with_copies(|| launch_n(gpu, graph, n))?;
    let per_launch = kc_core::results::fidelity::copies_in(&records, &copies) as f64 / n as f64;
    Ok((
        kc_core::results::fidelity::RecordedLaunches::after_first(records, n),
        per_launch,
    ))
}

/// What both replay modes read and fill: the plan and the rank replayed, the options, the
/// GPU, the energy meter, the units that failed their trial run (left out and reported), the
/// results being written and the notes that go with them.
pub(super) struct Replay<'a, 'm> {
    plan: &'a Plan,
    rank: u32,
    opts: &'a ExecOptions,
    gpu: &'a mut Gpu,
    en: &'a mut Energy<'m>,
    failed: &'a HashMap<u32, String>,
    results: &'a mut Results,
    notes: &'a mut Vec<String>,
}

impl Energy<'_> {
    /// Measures energy windows while `graph` is replayed back to back and summarises them:
    /// `items` work items (unit invocations) per replay of `per_launch_us`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn windows_of(
        &mut self,
        gpu: &mut Gpu,
        graph: &Graph,
        label: &str,
        per_launch_us: f64,
        items: f64,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<EnergySummary>, ExecError> {
        let target = opts.energy_target_rel_sem;
        let got = self.series(gpu, graph, label, per_launch_us, target, opts, notes)?;
        Ok(got.map(|w| self.summarise(w, label, per_launch_us, items, notes)))
    }

    /// A series of contiguous energy windows while `graph` is replayed back to back
    /// (`opts.energy_window_s` each, `opts.energy_repeats` at most, fewer once their powers
    /// agree to `target_rel_sem`); `None` without a meter or when a window failed (named
    /// in the notes). The stream is synchronised after.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn series(
        &mut self,
        gpu: &mut Gpu,
        graph: &Graph,
        label: &str,
        per_launch_us: f64,
        target_rel_sem: f64,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<Vec<energy::EnergyWindow>>, ExecError> {
        let how = SeriesHow {
            per_launch_us,
            target_rel_sem,
            ..Default::default()
        };
        self.series_how(gpu, graph, label, how, opts, notes)
    }

    /// [`Energy::series`] as `how` says: also ending after a window `stop_after` holds
    /// of, and leaving out the leading windows that ran before the GPU
    /// settled (kept in the results, marked, and not returned).
    pub(super) fn series_how(
        &mut self,
        gpu: &mut Gpu,
        graph: &Graph,
        label: &str,
        how: SeriesHow<'_>,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<Vec<energy::EnergyWindow>>, ExecError> {
        let SeriesHow {
            per_launch_us,
            target_rel_sem,
            stop_after,
            settled,
            batch_times,
            one_window,
            mut timed,
            tail,
        } = how;
        let (Some(meter), Some(min)) = (self.meter.as_ref(), opts.energy_window_s) else {
            // No windows: the timed launches alone.
            if let Some(t) = timed.as_mut() {
                gpu.continue_timed(graph, t)?;
            }
            return Ok(None);
        };
        let batch = batch_of(per_launch_us);
        let max_windows = opts.energy_repeats.max(1);
        let spec = SeriesSpec {
            window: WindowSpec {
                label,
                min_seconds: min,
                poll_seconds: POLL_S,
                stall_seconds: 3.0,
            },
            min_windows: match (
                target_rel_sem > 0.0,
                one_window && one_window_enough(opts, target_rel_sem),
            ) {
                (false, _) => max_windows,
                (true, true) => 1,
                (true, false) => crate::MIN_WINDOWS_WITH_TARGET.min(max_windows),
            },
            max_windows,
            target_rel_sem,
            stop_after,
            settled,
            max_settling: MAX_SETTLING_WINDOWS,
            // The run's counter period, where its windows so far keep one: the series' last
            // window then needs its work only to a margin past the tick that ends it.
            period_s: energy::counter_period_s(&self.windows)
                .filter(|&p| energy::counter_is_periodic(&self.windows, p))
                .filter(|_| !opts.energy_full_queue),
        };
        let batch_ns = batch as f64 * per_launch_us.max(0.001) * 1000.0;
        let in_flight = ((QUEUED_NS / batch_ns).ceil() as usize).clamp(2, 16);
        let mut feeder = Feeder::new(
            gpu,
            graph,
            batch,
            batch_ns / 1e9,
            in_flight,
            batch_times.is_some(),
        )?;
        let mut gpu_err = None;
        // The batches are stamped by the clock the windows are, so the two compare.
        let clock = &self.clock;
        // The counter's ticks are watched by a thread of their own, so that this thread's
        // launches and other NVML queries add nothing to how late a tick is seen; the
        // reads themselves take 3-5 ms (session 33), which taking each window on the
        // counter's period (below) takes out of its duration.
        let read = || meter.energy_now_mj();
        let (mut began, mut ended) = (None, None);
        let w = energy::watch_ticks(&read, clock, POLL_S, |ticks| {
            began = Some(std::time::Instant::now());
            let series =
                energy::measure_series(&mut meter.reading(), ticks, clock, &spec, &mut |until| {
                    // The timed launches' rest first, once: the windows' launches queue
                    // behind them.
                    if let Some(t) = timed.as_mut().filter(|t| !t.all_enqueued()) {
                        gpu.continue_timed(graph, t).map_err(|e| {
                            let m = e.to_string();
                            gpu_err = Some(e);
                            m
                        })?;
                    }
                    let for_s = until.map(|u| u - clock.now_s());
                    feeder.pump(gpu, clock.unix_ms(), for_s).map_err(|e| {
                        let m = e.to_string();
                        gpu_err = Some(e);
                        m
                    })
                });
            ended = Some(std::time::Instant::now());
            series
        });
        // The watcher ends after the read of the counter under way.
        let join_ms = ended.map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3);
        // In a job, the ranks first agree on how many replays each launches and top up to
        // that, and only then wait: a rank that launched more would otherwise wait
        // forever for partners that stopped earlier.
        let launched = feeder.launched();
        let queued_ms = feeder.queued_s() * 1e3;
        if let (Some(out), Some(times)) = (batch_times, feeder.batch_times.as_mut()) {
            out.append(times);
        }
        drop(feeder);
        // The series' first work enqueues the timed launches; one that returned before it
        // (no such path today) would leave them to be enqueued here, so that they are read
        // whole.
        if let (None, Some(t)) = (&gpu_err, timed.as_mut()) {
            gpu.continue_timed(graph, t)?;
        }
        let drain_from = std::time::Instant::now();
        if gpu_err.is_none() {
            even_out(self.job.as_mut(), gpu, graph, launched, label)?;
        }
        gpu.synchronize()?;
        if let (Some(t), Some(began)) = (tail, began) {
            *t = Some(SeriesTail {
                began,
                queued_ms,
                drain_ms: drain_from.elapsed().as_secs_f64() * 1e3,
                join_ms,
            });
        }
        if let Some(e) = gpu_err {
            return Err(e);
        }
        match w {
            Ok(mut w) => {
                // Each window's duration on the counter's period, over this run's windows,
                // where its ticks keep one.
                let all = || self.windows.iter().chain(&w);
                let period = energy::counter_period_s(all())
                    .filter(|&p| energy::counter_is_periodic(all(), p));
                if let Some(p) = period {
                    w.iter_mut().for_each(|x| energy::on_counter_period(x, p));
                }
                // The settling windows stay in the results, ahead of those summarised.
                let counted = w.iter().position(|x| !x.settling).unwrap_or(w.len());
                self.windows.extend(w.drain(..counted));
                Ok(Some(w))
            }
            Err(e) => {
                notes.push(format!("{label}: energy window failed: {e}"));
                Ok(None)
            }
        }
    }

    /// Seconds until the energy counter's next tick, predicted from this run's last window
    /// (each ends at a tick, as seen) and the counter's period over the run's windows
    /// ([`energy::counter_period_s`]); `None` without a
    /// meter or windows, or a second or more after the last (the period's drift would
    /// then outgrow a caller's margin).
    pub(super) fn until_next_tick_s(&self) -> Option<f64> {
        self.meter.as_ref()?;
        let last = self.windows.last()?;
        let period = energy::counter_period_s(&self.windows)?;
        let now = self.clock.unix_ms();
        (now - last.end_unix_ms < 1000)
            .then(|| energy::until_next_tick_s(last.end_unix_ms, period, now))
    }

    /// How many windows this run has kept so far.
    pub(super) fn windows_so_far(&self) -> usize {
        self.windows.len()
    }

    /// The highest median SM clock of this run's windows so far (the idle GPU's among
    /// them), MHz: what a window at a clock held down is set against.
    pub(super) fn top_clock_mhz(&self) -> Option<f64> {
        kc_core::results::top_clock_mhz(&self.windows)
    }

    /// Keeps a series' windows in the results and summarises them: energy per item is
    /// each window's power × the item's timed duration. Where the launches counted in the
    /// windows after the first are fine enough to check that duration and stray more than
    /// 5 % from it (the GPU did not run as it was timed: throttled, or clocked differently
    /// at low power), a note says so.
    pub(super) fn summarise(
        &mut self,
        got: Vec<energy::EnergyWindow>,
        label: &str,
        per_launch_us: f64,
        items: f64,
        notes: &mut Vec<String>,
    ) -> EnergySummary {
        let launch_s = per_launch_us / 1e6;
        self.summarise_with(got, label, per_launch_us, notes, |w, first, idle| {
            energy_summary(w, first, idle, launch_s / items.max(1e-9))
        })
    }

    /// [`Energy::summarise`] with the summary computed by `summary` (windows, the index
    /// of the first in the results, idle power).
    pub(super) fn summarise_with(
        &mut self,
        got: Vec<energy::EnergyWindow>,
        label: &str,
        per_launch_us: f64,
        notes: &mut Vec<String>,
        summary: impl FnOnce(&[energy::EnergyWindow], usize, Option<f64>) -> EnergySummary,
    ) -> EnergySummary {
        let launch_s = per_launch_us / 1e6;
        let batch_s = batch_of(per_launch_us) as f64 * launch_s;
        // The first window may begin while launches the feeder did not make (a unit's timed
        // launches, queued ahead of it) still run: it is left out of the check.
        let checked = if got.len() > 1 { &got[1..] } else { &got[..] };
        if let Some(m) = completion_mismatch(checked, launch_s, batch_s).filter(|m| m.abs() > 0.05)
        {
            notes.push(format!(
                "{label}: the energy windows completed {:+.1} % launches against their timed duration",
                m * 100.0
            ));
        }
        let first = self.windows.len();
        let s = summary(&got, first, self.idle_w);
        self.windows.extend(got);
        s
    }

    /// The spin kernel's power, watts, and its standard error: measured once per run, in
    /// windows of its own (a spin of 1 ms per launch), and kept.
    pub(super) fn spin_power(
        &mut self,
        gpu: &mut Gpu,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<(f64, f64)>, ExecError> {
        if self.spin_w.is_none() {
            self.spin_now(gpu, "spin", opts, notes)?;
        }
        Ok(self.spin_w)
    }

    /// The spin's power now, in windows of its own (a spin of 1 ms per launch), measured
    /// afresh: watts, its standard error and the windows' mean end temperature, °C
    /// (`None` where they record none); the first such measurement is kept as the spin's
    /// power ([`Energy::spin_power`]). `None` without a meter.
    pub(super) fn spin_now(
        &mut self,
        gpu: &mut Gpu,
        label: &str,
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<Option<(f64, f64, Option<f64>)>, ExecError> {
        if self.meter.is_none() || opts.energy_window_s.is_none() {
            return Ok(None);
        }
        gpu.load_spin()?;
        let enqueue = |gpu: &Gpu| gpu.enqueue_spin(0, SPIN_NS);
        // Its windows stop at [`SPIN_WINDOWS`]: on ResNeXt-50's step ten did not agree to
        // the target (session 23), and its standard error is carried into every unit it
        // is taken off.
        let spin_opts = ExecOptions {
            energy_repeats: opts.energy_repeats.min(SPIN_WINDOWS),
            ..opts.clone()
        };
        let first = self.windows.len();
        let target = opts.energy_target_rel_sem;
        let how = (target, false);
        let (_, energy) = self.alone(gpu, &enqueue, label, how, &spin_opts, notes)?;
        let Some(s) = energy else { return Ok(None) };
        let power = (s.avg_power_w.mean, s.avg_power_w.sem());
        if self.spin_w.is_none() {
            self.spin_w = Some(power);
        }
        let t = kc_core::results::mean_end_temperature_c(self.windows[first..].iter());
        Ok(Some((power.0, power.1, t)))
    }

    /// What `enqueue` issues, alone (the spin, a unit's copy from the snapshot): captured,
    /// warmed, timed over 20 launches, then measured in energy windows of its own, to
    /// `target_rel_sem` (over one window where `one_window` is asked and the target allows,
    /// [`SeriesHow::one_window`]); its time per launch and its energy summary per launch
    /// (`None` without a meter).
    pub(super) fn alone(
        &mut self,
        gpu: &mut Gpu,
        enqueue: &dyn Fn(&Gpu) -> Result<(), ExecError>,
        label: &str,
        (target_rel_sem, one_window): (f64, bool),
        opts: &ExecOptions,
        notes: &mut Vec<String>,
    ) -> Result<(stats::Stats, Option<EnergySummary>), ExecError> {
        let graph = gpu.capture(enqueue)?;
        gpu.warm(&graph)?;
        let t = stats::Stats::of(&gpu.time_launches(&graph, 20)?);
        let how = SeriesHow {
            per_launch_us: t.mean,
            target_rel_sem,
            one_window,
            ..Default::default()
        };
        let got = self.series_how(gpu, &graph, label, how, opts, notes)?;
        let energy = got.map(|w| self.summarise(w, label, t.mean, 1.0, notes));
        Ok((t, energy))
    }
}

/// How a series of energy windows runs ([`Energy::series_how`]): the launch's time, us
/// (sizes the feeder's batches), the target, what ends it after the window it holds of,
/// whether a window ran with the GPU settled, and where the feeder's batches, each timed
/// from the one before it, are kept (untimed without).
#[derive(Default)]
pub(super) struct SeriesHow<'a> {
    pub per_launch_us: f64,
    pub target_rel_sem: f64,
    pub stop_after: Option<&'a dyn Fn(&energy::EnergyWindow) -> bool>,
    pub settled: Option<&'a dyn Fn(&energy::EnergyWindow) -> bool>,
    pub batch_times: Option<&'a mut Vec<BatchTime>>,
    /// One window may meet the item's target: where the target is at least the spread of
    /// one window kc takes (`opts.one_window_rel_sd`, [`crate::ONE_WINDOW_REL_SD`]; 0 asks
    /// for two or more always), the series ends after its first counted window. The rule
    /// is applied here, once, for every series that asks.
    pub one_window: bool,
    /// Timed launches begun ahead of the series ([`crate::device::Device::begin_timed`]),
    /// the rest enqueued inside it, ahead of the windows' launches: where the device's
    /// queue is full the host waits in that enqueue, and the counter's ticks are then
    /// already watched (ConvNeXt-T's step, session 55: the enqueue held 15 of its 134
    /// units 29-46 ms before their series began, the ticks unwatched). All are enqueued
    /// when the series returns.
    pub timed: Option<&'a mut crate::device::TimedLaunches>,
    /// Where the series' own times are kept ([`SeriesTail`]); left `None` where no series
    /// ran (no meter, no windows asked).
    pub tail: Option<&'a mut Option<SeriesTail>>,
}

/// Leading windows a series leaves out, at most, while the GPU settles: after a unit's
/// windows at the power cap, 0-2 of its windows at a duty cycle still ran with the clock
/// held down (ResNeXt-50's step, session 23, calls 3, 4 and 6).
const MAX_SETTLING_WINDOWS: usize = 6;

/// The spin whose power is measured: 1 ms per launch.
const SPIN_NS: u64 = 1_000_000;
/// The spin's energy windows, at most.
const SPIN_WINDOWS: usize = 5;

/// How often a series polls the energy counter: a tick is seen at most this late, at
/// both ends of a window, so a one-tick (~100 ms) window's duration is good to ~0.2 %.
const POLL_S: f64 = 0.0002;

/// Launches per feeder batch for a graph of `per_launch_us`.
fn batch_of(per_launch_us: f64) -> usize {
    ((BATCH_NS / 1000.0 / per_launch_us.max(0.001)).ceil() as usize).clamp(1, 100_000)
}

/// A phase of a job's rank, on its log (a hang shows where it stopped).
pub(super) fn job_phase(opts: &ExecOptions, what: &str) {
    crate::crash::doing(what);
    if let Some(j) = &opts.job {
        eprintln!("rank {}: {what}", j.rank);
    }
}

/// How long a rank waits for the others at any agreement of a job (rendezvous, barriers,
/// launch counts) before it gives up with an error naming the rank it waited for.
const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

pub fn execute(plan: &Plan, opts: &ExecOptions) -> Result<Results, ExecError> {
    crate::crash::install();
    crate::crash::doing("opening the GPU");
    let clock = SystemClock::default();
    let started = energy::iso8601_ms(clock.unix_ms());
    let mut notes = Vec::new();
    let nvml = match nvml::init() {
        Ok(n) => Some(n),
        Err(e) => {
            notes.push(e);
            None
        }
    };
    // A job's rank replays its trace rank on its own GPU (LOCAL_RANK).
    let ordinal = opts.job.as_ref().map_or(0, |j| j.local_rank);
    let nvml_dev = nvml.as_ref().and_then(|n| n.device_by_index(ordinal).ok());
    let mut device = DeviceInfo::default();
    if let Some(n) = &nvml {
        device.driver_version = n.sys_driver_version().unwrap_or_default();
        device.cuda_driver_version = n.sys_cuda_driver_version().ok();
    }
    if let Some(d) = &nvml_dev {
        device.before = nvml::state(d);
        device.power_limit_w = nvml::power_limit_w(d);
    }
    // Joining the job comes first: a rank that cannot even open its GPU still arrives at
    // the rendezvous' deadline with the others, which then end with a clear error.
    let mut phases = Phases::start();
    let (mut job, nccl_id, trace_rank) = join_job(plan, opts)?;
    let mut gpu = Gpu::open_on(ordinal, plan.streams.len())?;
    if let (Some(j), Some(_)) = (&job, trace_rank) {
        gpu.join_collectives(&nccl_id, j.env.world_size, j.env.rank)?;
        eprintln!("rank {}: NCCL communicator ready", j.env.rank);
    }
    device.name = gpu.facts.name.clone();
    device.total_memory_bytes = gpu.facts.total_memory;
    device.sm_count = Some(gpu.facts.sm_count);
    device.cublas_version = gpu.facts.cublas_version;
    if device.cuda_driver_version.is_none() {
        device.cuda_driver_version = Some(gpu.facts.driver_version);
    }
    gpu.allocate(plan)?;
    phases.end("opening the GPU and its memory");

    let failed = prepare_units(plan, opts, &mut gpu, job.as_mut(), &mut notes)?;
    phases.end("every unit once");
    let mut en = Energy {
        meter: nvml_dev.map(|device| nvml::NvmlMeter { device }),
        clock: SystemClock::default(),
        windows: Vec::new(),
        idle_w: None,
        spin_w: None,
        job,
    };
    let idle = measure_idle(&mut gpu, &mut en, opts, &mut notes)?;
    phases.end("the idle window");
    let rank = match trace_rank {
        Some(r) => r,
        None => crate::replay_rank(plan, opts.rank)?,
    };
    let ranks = plan.ranks().len();
    if ranks > 1 && trace_rank.is_none() {
        notes.push(format!(
            "the plan holds {ranks} ranks; this run replays rank {rank} (--rank), its collectives not executed (`--ranks all` replays every rank together)"
        ));
    }
    let mut results = Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        kc_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: if opts.isolated { "isolated" } else { "graph" }.to_string(),
        started,
        plan: PlanIdentity {
            file: opts.plan_path.clone(),
            crc32: opts.plan_crc32,
            sources: plan.header.sources.iter().map(|s| s.file.clone()).collect(),
            units: plan.units.len(),
            steps: plan.steps.len(),
            iterations: plan.iterations.count,
            iterations_found_by: plan.iterations.found_by.clone(),
        },
        idle,
        // The device as it stood before the replay, in every checkpoint too; its state
        // after is added at the end.
        device,
        phases: phases.done,
        ..Default::default()
    };
    let replay = if opts.isolated {
        isolated::isolated
    } else {
        graph::graph_mode
    };
    replay(Replay {
        plan,
        rank,
        opts,
        gpu: &mut gpu,
        en: &mut en,
        failed: &failed,
        results: &mut results,
        notes: &mut notes,
    })?;
    if let Some(m) = &en.meter {
        results.device.after = nvml::state(&m.device);
    }
    if let (Some(j), Some(tr)) = (en.job.take(), trace_rank) {
        results.job = Some(kc_core::results::JobRank {
            rank: j.env.rank,
            world_size: j.env.world_size,
            local_rank: j.env.local_rank,
            trace_rank: tr,
        });
        j.finish()?;
    }
    results.windows = std::mem::take(&mut en.windows);
    results.notes = notes;
    results.finished = energy::iso8601_ms(clock.unix_ms());
    Ok(results)
}

/// Joins the job when this process is one of its ranks: the rank store, the NCCL id (rank
/// 0 makes it), and the trace rank this process replays.
#[allow(clippy::type_complexity)]
fn join_job(
    plan: &Plan,
    opts: &ExecOptions,
) -> Result<(Option<crate::rendezvous::Job>, Vec<u8>, Option<u32>), ExecError> {
    Ok(match &opts.job {
        Some(env) => {
            let ranks = plan.ranks();
            if ranks.len() != env.world_size as usize {
                return Err(ExecError::WorldMismatch {
                    plan: ranks.len(),
                    world: env.world_size,
                });
            }
            let id = if env.rank == 0 {
                crate::backends::nccl::unique_id()?
            } else {
                Vec::new()
            };
            let (job, blob) = crate::rendezvous::Job::join(env, JOB_TIMEOUT, move || id)?;
            eprintln!(
                "rank {} of {}: joined the job (trace rank {}, GPU {})",
                env.rank, env.world_size, ranks[env.rank as usize], env.local_rank
            );
            (Some(job), blob, Some(ranks[env.rank as usize]))
        }
        None => (None, Vec::new(), None),
    })
}

/// Runs every unit this build executes once, eagerly (libraries initialise outside any
/// capture; a unit that fails is left out and reported), and returns the units that failed.
/// A back end that asks for it also has each unit captured once on its own (a tier-3 op that
/// cannot run inside a capture is found here, not in the capture of the whole plan). A
/// collective that failed on one rank is left out on every rank.
fn prepare_units(
    plan: &Plan,
    opts: &ExecOptions,
    gpu: &mut Gpu,
    job: Option<&mut crate::rendezvous::Job>,
    notes: &mut Vec<String>,
) -> Result<HashMap<u32, String>, ExecError> {
    // Every executable unit runs once eagerly: it initialises the libraries outside any
    // capture and finds units that fail, which are then left out and reported.
    // Tier-3 units are also captured once on their own: an op that cannot run inside a
    // capture (a host sync) is found here and left
    // out, instead of failing the capture of the whole plan.
    let phase = |what: &str| job_phase(opts, what);
    let mut failed: HashMap<u32, String> = HashMap::new();
    notes.push(format!(
        "math modes: fp32 matmuls {} ({}); fp32 convolutions {} ({})",
        if plan.math.tf32_matmul {
            "in TF32"
        } else {
            "in full fp32"
        },
        plan.math.matmul_from,
        if plan.math.tf32_cudnn {
            "in TF32"
        } else {
            "in full fp32"
        },
        plan.math.cudnn_from
    ));
    // Every back end takes what it needs of the plan; a back end that cannot (a binary
    // built for another GPU) fails its units, not the run.
    for (backend, e) in gpu.load(plan) {
        for u in &plan.units {
            if gpu.runs(&u.call) && backend == gpu.backend_name(&u.call) {
                failed.insert(u.id, format!("failed: {e}"));
            }
        }
    }
    let bar = opts
        .progress
        .then(|| units_bar("prepare", plan.units.len()));
    for u in plan.units.iter() {
        if let Some(b) = &bar {
            b.inc(1);
            b.set_message(u.label.clone());
        }
        if !gpu.runs(&u.call) || failed.contains_key(&u.id) {
            continue;
        }
        crate::crash::doing(&format!(
            "running unit {} ({}) once eagerly on its own tensors",
            u.id, u.label
        ));
        if matches!(u.call, kc_core::plan::types::UnitCall::Collective { .. }) {
            phase(&format!("unit {} ({}): first eager run", u.id, u.label));
        }
        let r = gpu
            .prepare(u)
            .and_then(|_| gpu.enqueue(u, 0, At::Slots(0)))
            .and_then(|_| gpu.synchronize());
        if let Err(e) = r {
            if e.breaks_context() {
                if let Some(b) = &bar {
                    b.finish_and_clear();
                }
                return Err(ExecError::context_lost(u, "in its first eager run", &e));
            }
            failed.insert(u.id, format!("failed: {e}"));
            continue;
        }
        if gpu.captures_alone_first(&u.call) {
            let captured = gpu.capture(|gpu| gpu.enqueue(u, 0, At::Slots(0)));
            if let Err(e) = captured.and_then(|g| {
                gpu.launch(&g)?;
                gpu.synchronize()
            }) {
                let _ = gpu.synchronize();
                failed.insert(u.id, format!("failed: cannot be captured: {e}"));
            }
        }
    }
    notes.extend(gpu.take_notes());
    phase("every unit ran once");
    // A collective that failed on one rank is left out on every rank (partners would wait
    // for it forever).
    if let Some(job) = job {
        for u in &plan.units {
            if let kc_core::plan::types::UnitCall::Collective { .. } = u.call {
                let bad = job.agree_max(
                    &format!("unit {} ok", u.id),
                    u64::from(failed.contains_key(&u.id)),
                )?;
                if bad > 0 && !failed.contains_key(&u.id) {
                    failed.insert(u.id, "failed on another rank of the job".into());
                }
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    Ok(failed)
}

/// One energy window of the idle GPU (the baseline reports subtract), when energy is on.
fn measure_idle(
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    opts: &ExecOptions,
    notes: &mut Vec<String>,
) -> Result<Option<energy::EnergyWindow>, ExecError> {
    let mut idle = None;
    if let (Some(meter), Some(min)) = (en.meter.as_ref(), opts.energy_window_s) {
        gpu.synchronize()?;
        let spec = WindowSpec {
            label: "idle",
            min_seconds: min,
            poll_seconds: 0.002,
            stall_seconds: 3.0,
        };
        let read = || meter.energy_now_mj();
        let measured = energy::watch_ticks(&read, &en.clock, POLL_S, |ticks| {
            energy::measure(&mut meter.reading(), ticks, &en.clock, &spec, &mut |_| {
                Ok(0)
            })
        });
        match measured {
            Ok(w) => {
                en.idle_w = Some(w.avg_power_w);
                en.windows.push(w.clone());
                idle = Some(w);
            }
            Err(e) => notes.push(format!("idle window failed: {e}")),
        }
    }
    Ok(idle)
}

/// Prepares `step` of tier-3 `unit` over the memory image and waits for it (graph mode, and
/// the isolated pass in context). `Ok(Ok(n))`: n results placed in the image; `Ok(Err(e))`:
/// the step runs on its unit's own tensors; `Err`: the step faulted on the device, which
/// ends every later call, so the run stops here, naming it, rather than capturing and
/// launching on a broken context.
pub(super) fn prepare_over_image(
    gpu: &mut Gpu,
    unit: &PlanUnit,
    step: u32,
    places: &kc_core::plan::types::StepPlaces,
) -> Result<Result<usize, ExecError>, ExecError> {
    crate::crash::doing(&format!(
        "preparing step {step} (unit {} {}) over the memory image",
        unit.id, unit.label
    ));
    match gpu
        .prepare_step(unit, step, places)
        .and_then(|n| gpu.synchronize().map(|_| n))
    {
        Err(e) if e.breaks_context() => Err(ExecError::context_lost(
            unit,
            format!("when step {step} ran over the memory image"),
            &e,
        )),
        prepared => Ok(prepared),
    }
}

/// A progress bar over a plan's units, labelled with the phase.
pub(super) fn units_bar(phase: &str, units: usize) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(units as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {phase} [{{bar:30}}] {{pos}}/{{len}} units {{msg}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b
}

pub(super) fn unit_row(u: &PlanUnit, status: String) -> UnitResult {
    UnitResult {
        id: u.id,
        label: u.label.clone(),
        tier: u.tier.as_str().to_string(),
        family: u.family.clone(),
        call: call_str(&u.call),
        invocations: u.invocations,
        traced_mean_us: u.traced_ns_mean() / 1000.0,
        status,
        ..Default::default()
    }
}

/// A unit's status in the results: not executed (with why) when this build has no back end
/// for it here (`runs`), failed when its trial run failed, else ok.
pub(super) fn status_of(u: &PlanUnit, failed: &HashMap<u32, String>, runs: bool) -> String {
    if !runs {
        not_executed_reason(u)
    } else if let Some(f) = failed.get(&u.id) {
        f.clone()
    } else {
        "ok".into()
    }
}

/// A run's or pass's phases as they end, each with the host's seconds since the one before
/// (`Results::phases`, `IsolatedSummary::phases`).
pub(super) struct Phases {
    pub done: Vec<PassPhase>,
    since: std::time::Instant,
}

impl Phases {
    pub fn start() -> Self {
        Self {
            done: Vec::new(),
            since: std::time::Instant::now(),
        }
    }

    /// The phase `what` ends now.
    pub fn end(&mut self, what: &str) {
        let now = std::time::Instant::now();
        self.done.push(PassPhase {
            phase: what.to_string(),
            seconds: now.duration_since(self.since).as_secs_f64(),
        });
        self.since = now;
    }
}

/// GPU time the timed launches of [`measure_program`] cover at least.
const PROGRAM_TIMED_US: f64 = 50_000.0;

/// Times a graph from the model's values (restored, then the graph warmed): its mean time
/// per launch and standard error, over launches back to back that cover at least
/// [`PROGRAM_TIMED_US`] of GPU time. The energy fields are left empty.
pub(super) fn time_program(
    plan: &Plan,
    gpu: &mut Gpu,
    graph: &Graph,
    df: &kc_core::plan::types::PlanDataflow,
    pass: &[u32],
) -> Result<ProgramMeasure, ExecError> {
    let (timed, _) = enqueue_program_timing(plan, gpu, graph, df, pass)?;
    Ok(program_time(&timed.read(gpu)?))
}

/// The model's values restored, the graph warmed and probed, and its timed launches
/// ([`PROGRAM_TIMED_US`] of GPU time) enqueued without waiting: what follows on the stream
/// runs behind them. Returns them and the probe's mean time per launch, microseconds.
fn enqueue_program_timing(
    plan: &Plan,
    gpu: &mut Gpu,
    graph: &Graph,
    df: &kc_core::plan::types::PlanDataflow,
    pass: &[u32],
) -> Result<(crate::device::TimedLaunches, f64), ExecError> {
    isolated::restore_model_values(plan, df, gpu, pass)?;
    gpu.warm(graph)?;
    let probe = kc_core::results::stats::Stats::of(&gpu.time_launches(graph, 3)?);
    let launches = ((PROGRAM_TIMED_US / probe.mean.max(0.001)).ceil() as usize).clamp(10, 200);
    Ok((gpu.enqueue_timed(graph, launches)?, probe.mean))
}

/// A program's mean time per launch and its standard error, from its timed launches.
fn program_time(samples: &[f64]) -> ProgramMeasure {
    let t = kc_core::results::stats::Stats::of(samples);
    ProgramMeasure {
        time_us: t.mean,
        time_sem_us: t.sem(),
        ..Default::default()
    }
}

/// Times a graph (warmed first) and measures its energy windows, from the model's values:
/// per launch, its mean time and standard error, its energy and standard error (where
/// measured), its windows held down by the power cap and their mean end temperature.
/// The timed launches go first and the windows' launches queue behind them, so that the
/// wait for the counter's first tick overlaps the timing (as a unit's alone does): timed
/// first and waited for, the lead-in phase's launches took two ticks before their windows
/// as often as one (session 36). Where `one_window` is asked and the target allows, the
/// series ends after its first counted window, as a unit's alone does
/// ([`SeriesHow::one_window`]); `windows` says how many counted.
/// `steps` is left for the caller.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure_program(
    plan: &Plan,
    gpu: &mut Gpu,
    en: &mut Energy<'_>,
    graph: &Graph,
    label: &str,
    (target, one_window): (f64, bool),
    opts: &ExecOptions,
    df: &kc_core::plan::types::PlanDataflow,
    pass: &[u32],
    notes: &mut Vec<String>,
) -> Result<ProgramMeasure, ExecError> {
    let (timed, probe_us) = enqueue_program_timing(plan, gpu, graph, df, pass)?;
    let top = en.top_clock_mhz();
    let how = SeriesHow {
        per_launch_us: probe_us,
        target_rel_sem: target,
        one_window,
        ..Default::default()
    };
    let windows = en.series_how(gpu, graph, label, how, opts, notes)?;
    let mut m = program_time(&timed.read(gpu)?);
    let Some(w) = windows else {
        return Ok(m);
    };
    m.windows = w.len();
    m.capped_windows = w.iter().filter(|x| held_down_by_cap(x, top)).count();
    m.temperature_c = mean_end_temperature_c(w.iter());
    let s = en.summarise(w, label, m.time_us, 1.0, notes);
    m.energy_j = Some(s.per_item_j.mean);
    m.energy_sem_j = Some(s.per_item_j.sem());
    Ok(m)
}

/// Whether one energy window is enough for a measurement whose target relative standard
/// error is `target`: at least the spread of one window kc takes
/// (`opts.one_window_rel_sd`, 0 asks for two or more always).
fn one_window_enough(opts: &ExecOptions, target: f64) -> bool {
    opts.one_window_rel_sd > 0.0 && target >= opts.one_window_rel_sd
}
