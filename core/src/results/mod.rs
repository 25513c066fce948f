//! The results file `kc exec` writes (schema in docs/FORMATS.md): the device and its state
//! before and after, the plan's identity, graph-mode replay statistics, per-unit isolated
//! statistics with the prediction sum(time × count), every energy window with ISO-8601
//! millisecond stamps, and what was not executed. Invariant: every figure is a measurement
//! or is derived from measurements by the formula its field documents.

pub mod energy;
pub mod fidelity;
pub mod stats;

use energy::EnergyWindow;
use serde::{Deserialize, Serialize};
use stats::Stats;

/// The cache state of an isolated replay (`--cache`): one value, resolved once
/// ([`CachePolicy::resolve`]), recorded in the results as what was measured.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CachePolicy {
    /// Every invocation reuses the same buffers (what a model's own replay does).
    Warm,
    /// Invocations rotate through copies of their buffers spanning twice L2.
    Cold,
    /// Each invocation runs on its own place in the plan's memory image (needs dataflow):
    /// the unit's invocations in one unrolled graph read the parameters they read in the
    /// model (distinct per layer, so not L2-resident from the invocation before, as in the
    /// model) and the activations at the model's places, which its neighbouring
    /// invocations keep warm. Without dataflow it is `warm`.
    Context,
}

impl CachePolicy {
    /// The policy a run uses: the one asked for, else context where the plan has the
    /// model's memory image and it is used, else warm. The one rule, for `kc exec` and
    /// `kc run` alike.
    pub fn resolve(asked: Option<CachePolicy>, has_image: bool) -> CachePolicy {
        asked.unwrap_or(if has_image {
            CachePolicy::Context
        } else {
            CachePolicy::Warm
        })
    }

    /// What a run actually measured: context needs a memory image, and without one it is
    /// warm (and said so).
    pub fn measured(self, has_image: bool) -> CachePolicy {
        if self == CachePolicy::Context && !has_image {
            CachePolicy::Warm
        } else {
            self
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CachePolicy::Warm => "warm",
            CachePolicy::Cold => "cold",
            CachePolicy::Context => "context",
        }
    }
}

/// What each unit alone reads at its places in the memory image (context cache,
/// `--unit-values`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum UnitValuesFrom {
    /// The values its steps read in the model: the bytes a later step wrote again are
    /// given back from passes of the model's steps before the unit is measured.
    #[default]
    AtSteps,
    /// What one pass of every step left at its places (each place's last writer): kc's
    /// behaviour before session 29, kept for comparison.
    AfterPass,
}

/// Bumped when a field changes meaning or disappears.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceState {
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub driver_version: String,
    pub cuda_driver_version: Option<i32>,
    pub cublas_version: Option<i32>,
    pub sm_count: Option<i32>,
    pub total_memory_bytes: u64,
    pub power_limit_w: Option<f64>,
    pub before: DeviceState,
    pub after: DeviceState,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanIdentity {
    pub file: String,
    pub crc32: u32,
    pub sources: Vec<String>,
    pub units: usize,
    pub steps: usize,
    /// Profiled iterations the plan's steps cover (0: none found, or an older kc).
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub iterations_found_by: String,
}

/// Energy of repeated windows of the same work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergySummary {
    /// Indices into `Results::windows`.
    pub windows: Vec<usize>,
    /// Joules per work item (graph replay or unit invocation), one value per window:
    /// window energy / items completed in it.
    pub per_item_j: Stats,
    /// The same above idle: (window energy − idle power × duration) / items.
    pub per_item_above_idle_j: Stats,
    pub avg_power_w: Stats,
}

impl EnergySummary {
    /// The windows of `results` this summary averages.
    pub fn windows_in<'a>(
        &'a self,
        results: &'a Results,
    ) -> impl Iterator<Item = &'a EnergyWindow> {
        self.windows.iter().filter_map(|&k| results.windows.get(k))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphResult {
    pub runs: usize,
    pub warmup: usize,
    pub streams: usize,
    /// Steps (unit invocations) captured in the graph.
    pub steps_replayed: usize,
    /// Steps left out because their tier is not executed yet, and their traced time.
    pub steps_not_executed: usize,
    pub not_executed_traced_us: f64,
    /// Traced time of the replayed steps (sum of their traced durations).
    pub replayed_traced_us: f64,
    /// Longest chain of replayed steps through stream order and waits, traced durations.
    pub replayed_traced_critical_path_us: f64,
    /// The same over every step of the plan, executed or not.
    pub traced_critical_path_us: f64,
    /// The trace's own GPU time per iteration, first start to last end
    /// ([`super::schedule::iteration_span_ns`]).
    #[serde(default)]
    pub traced_iteration_span_us: Option<f64>,
    /// Time of one replay of the whole graph, microseconds, back to back (the event after
    /// one replay is the start of the next).
    pub replay_us: Stats,
    pub replay_samples_us: Vec<f64>,
    /// One synchronized replay at a time (the GPU idle before each, as a latency-bound
    /// caller sees it): the graph's launch latency included, which back-to-back replays
    /// hide. The like-with-like partner of a model timed one synchronized iteration at a
    /// time.
    #[serde(default)]
    pub latency_us: Option<Stats>,
    /// Host wall clock around the timed replays, Unix milliseconds.
    #[serde(default)]
    pub timed_start_unix_ms: Option<i64>,
    #[serde(default)]
    pub timed_end_unix_ms: Option<i64>,
    pub energy: Option<EnergySummary>,
    /// The memory image the graph replayed over (`None`: every unit on its own buffers).
    #[serde(default)]
    pub memory_image: Option<MemoryImage>,
    /// `--verify`: the kernels one replay launched (CUPTI) against the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<fidelity::Fidelity>,
}

/// What graph mode's memory image held and how much of the replay used it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryImage {
    /// "execution trace" or "heuristic".
    pub derivation: String,
    pub arena_bytes: u64,
    /// Operands of replayed steps in the arena, and on private buffers.
    pub operands_placed: u64,
    pub operands_private: u64,
    /// Tier-3 results written into the arena (out variants), of those the plan placed.
    pub results_placed: u64,
    pub results_planned: u64,
    /// Tier-3 steps that could not run in place and ran on their unit's own tensors.
    pub tier3_steps_unplaced: u64,
    /// Share of NaN and infinite values in the image's float regions after the timed
    /// replays (sampled: the first 64 KiB of each region).
    #[serde(default)]
    pub nonfinite_share: Option<f64>,
    /// When the image went non-finite: the first steps that wrote non-finite values while
    /// every value they read was finite ("step N unit U LABEL: what"), found by replaying
    /// the steps one by one from the starting values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nonfinite_producers: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitResult {
    pub id: u32,
    pub label: String,
    pub tier: String,
    pub family: String,
    pub call: String,
    pub invocations: u64,
    pub traced_mean_us: f64,
    /// "ok", "not executed: …" or "failed: …".
    pub status: String,
    /// Repetitions captured in one graph.
    pub unroll: u32,
    /// Graph launches timed.
    pub launches: usize,
    /// Per-invocation time, microseconds: each graph launch's time / unroll.
    pub time_us: Option<Stats>,
    /// time_us.mean × invocations.
    pub predicted_us: Option<f64>,
    pub energy: Option<EnergySummary>,
    /// Per-invocation energy mean × invocations, joules.
    pub predicted_energy_j: Option<f64>,
    /// Host wall clock around this unit's timed launches, Unix milliseconds.
    #[serde(default)]
    pub measured_start_unix_ms: Option<i64>,
    #[serde(default)]
    pub measured_end_unix_ms: Option<i64>,
    /// `--isolated --verify`: what the unit's unrolled launches ran (CUPTI): three back to
    /// back after a first from an idle GPU, left out (from session 22; one launch, from
    /// idle, before it). For a unit measured again from the model's values (`restoring`),
    /// its restoring graph's own kernels, the snapshot's copies left out (from session 30;
    /// before it, and where the unit's own kernels are the driver's copies too, the first
    /// graph's, over the values its repeats drove away).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches_verified: Option<fidelity::UnitLaunches>,
    /// Context cache: what the unit's places held before its measurement and after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<UnitValues>,
    /// Where the unit alone drew past the power limit (NVML saw the power cap in its
    /// windows, its clock held below the one the model runs it at): its energy was measured
    /// again with a spin after each launch, and `energy` is that measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_at_duty: Option<DutyEnergy>,
    /// Where the unit's repeats alone ran its values away ([`UnitValues::ran_away`]): it
    /// was measured again with every launch starting from the model's values at its
    /// places, and `time_us`, `energy` and `values` are that measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restoring: Option<UnitRestoring>,
    /// Isolated mode: the host's milliseconds before the unit's timed launches, by step
    /// (kc's own cost, what `kc run`'s time is spent on; not a figure of the unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_ms: Option<UnitSetupMs>,
    /// Isolated mode: the host's milliseconds the unit's whole measurement took, from
    /// giving the image the model's values to its last energy window (kc's own cost; since
    /// session 31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<f64>,
    /// The unit measured again with the model's steps leading up to each of its invocations
    /// ahead of it, as the model runs it (kc's default where the unit holds the energy;
    /// `--no-lead-in-units` skips it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_lead_in: Option<UnitAfterLeadIn>,
}

/// A unit measured after the model's steps leading up to each of its invocations (`kc exec
/// --isolated`, by default where it holds the energy; the prediction takes its energy):
/// back to the nearest of the 4 steps before it that shares a place with it, else the one
/// step before it. Alone, each invocation reads its inputs at its places from memory; in
/// the model its producer has just run and left what it wrote in L2. One launch runs the
/// unit's invocations as alone, each after its lead-ins where the launch does not end with
/// them already; a second launch runs the lead-ins alone, in the same order. The unit's figures are the
/// first's less the second's, per invocation, both from the model's values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitAfterLeadIn {
    /// Of the `unroll` invocations one launch runs, those with a lead-in ahead of them.
    pub led: u32,
    /// The lead-in steps one launch runs (from session 25's call 4: each invocation's
    /// lead-ins reach back to the nearest of the 4 steps before it that shares a place
    /// with it; before, the one step before it).
    #[serde(default)]
    pub lead_in_steps: u32,
    /// Per invocation: the launch with lead-ins less the lead-ins alone, microseconds, and
    /// its standard error.
    pub time_us: f64,
    pub time_sem_us: f64,
    /// The same in energy, joules, where both launches' windows were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_sem_j: Option<f64>,
    /// The lead-ins alone, per invocation of the unit: microseconds and joules.
    pub lead_ins_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_ins_energy_j: Option<f64>,
    /// Windows of either launch held down by the power cap ([`held_down_by_cap`]): the
    /// energy is then not at the clock the model runs the unit at. For launches measured at
    /// a duty cycle (`duty_share`), those still held down there.
    pub capped_windows: usize,
    /// Where the unit alone was held down by the power cap and priced at a duty cycle
    /// ([`UnitResult::energy_at_duty`]), both launches were measured at a duty cycle too
    /// (from session 36): the share of each launch the unit and its lead-ins took in the
    /// first. Absent where they ran back to back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty_share: Option<f64>,
    /// A launch's energy came from one window, both launches' as a rule (from session 38):
    /// the unit's target, 0.5 % / √(its share of the traced time), was at least one
    /// window's spread (`kc exec --one-window-spread`), as for its windows alone. One
    /// window gives no spread, so `energy_sem_j` is then absent and the report gives each
    /// launch the run's pooled spread of one window.
    #[serde(default, skip_serializing_if = "is_false")]
    pub one_window: bool,
    /// With `--lead-in-kernels` (a diagnostic, CUPTI): what the two launches' time is made
    /// of, kernel by kernel, so that the difference can be read apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernels: Option<LeadInKernels>,
}

/// Both launches of a unit after its lead-ins recorded with CUPTI (`--lead-in-kernels`),
/// per invocation of the unit, microseconds. The launches' event-timed difference
/// ([`UnitAfterLeadIn::time_us`]) is the unit's kernels in the launch with lead-ins, plus
/// the lead-ins' kernels there less alone, plus the gaps between kernels there less
/// alone: the unit's own share of it is `unit_us`, the rest is what the unit's presence
/// did to the steps around it and to the launch's gaps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadInKernels {
    /// The unit's kernels in the launch with its lead-ins; absent where a step launched
    /// another count of kernels than alone, so that no kernel could be told as whose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_us: Option<f64>,
    /// The same kernels' busy time (the union of their intervals), absent as `unit_us`
    /// is and in results before session 40: under `unit_us` where they ran side by side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_busy_us: Option<f64>,
    /// The lead-ins' kernels in that launch (absent as `unit_us` is), and in the launch of
    /// the lead-ins alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_ins_us: Option<f64>,
    pub lead_ins_alone_us: f64,
    /// The launch's gaps between kernels (each kernel's start after the last end), with
    /// lead-ins and of the lead-ins alone.
    pub led_gaps_us: f64,
    pub lead_ins_alone_gaps_us: f64,
}

/// The host's milliseconds a unit's isolated measurement spent before its timed launches:
/// giving the image the model's values, the unit's own buffers, the census of its places,
/// the capture of its graph, its warm-up launches and the CUPTI record of its kernels; and
/// (since session 55) of its measurement as it ran: `enqueue_timed`, the enqueue of its
/// timed launches (the host waits where the device's queue is full), `to_series`, from
/// that enqueue's start to its energy series' wait for the counter's first tick, `queued`,
/// the launches the series still held queued when it ended (estimated, ms of the device's
/// time), `drain`, the wait for them, and `after`, from the series' return to the end of
/// the unit's measurement (its look at its values, a measurement again, summaries); and
/// (after session 55's calls) `between`, from the end of the unit before's measurement to
/// this unit's start (the values' take-back, the pass's own bookkeeping), `probe`, its
/// three launches timed to size its timed launches, and `join`, the end of its series'
/// tick watcher (a read of the counter under way). kc's own cost, not a figure of the unit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitSetupMs {
    pub restore: f64,
    pub copies: f64,
    pub census: f64,
    pub capture: f64,
    pub warm: f64,
    pub record: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enqueue_timed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_series: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<f64>,
}

/// A unit measured again with each launch of its graph starting from the model's values: a
/// copy of its places (every operand and result of the invocations one launch runs,
/// spans merged) from the image's snapshot at the head of the graph, the copy's own time
/// and energy, measured alone, taken off each launch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitRestoring {
    /// Bytes copied per launch, in how many spans.
    pub bytes: u64,
    pub spans: usize,
    /// The copy alone, per launch: microseconds and joules (where measured).
    pub copy_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_energy_j: Option<f64>,
    /// The copy's energy per launch: its standard error, joules, where measured over two
    /// windows or more (from session 38; before, the copy's spread was not kept and the
    /// report took none), or whether it was measured over one (the unit's share asked no
    /// more: the report gives it the run's pooled spread of one window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_energy_sem_j: Option<f64>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub copy_one_window: bool,
    /// The measurement as the unit ran (the first): its values, and its time and energy
    /// per invocation.
    pub values_as_it_ran: UnitValues,
    pub as_it_ran_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_it_ran_energy_j: Option<f64>,
    /// Measured so on request (`--units-restoring-all`), its values not run away.
    #[serde(default)]
    pub asked: bool,
    /// Its values were found run away after its timed launches (its launch writes bytes
    /// it reads, so it is looked at there), before its windows: its energy as it ran was
    /// not measured (`as_it_ran_energy_j` is none). From session 30.
    #[serde(default)]
    pub found_after_timing: bool,
    /// From session 43: set where each invocation, not each launch, started from the
    /// model's values ([`EachInvocation`]); the copy's figures above are then the
    /// launch's copies, one before each invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each_invocation: Option<EachInvocation>,
}

/// A unit whose launch reads at one invocation what another wrote (its places chain, or
/// an invocation writes in place what the next one reads) measured with each invocation
/// from the model's values. Its launch is recorded (CUPTI) twice more, each invocation
/// after two copies of the bytes it reads that the launch writes, out to scratch memory and
/// back into the image: back from the scratch (its own values as it runs, the control) or
/// from the image's snapshot (the model's values). The two differ only in the values, so
/// the difference of their kernels is what the values change, the copies' own effect on
/// the kernels being in both. The unit's time is its time as it ran plus that difference
/// per invocation; its kernels as it ran plus it, at each step (for the round); its energy
/// that of launches with one copy before each invocation, from the snapshot, less those
/// copies alone (their windows). Where the difference is under
/// [`EACH_INVOCATION_CHANGE`], the unit's measurement as it ran stands and none is kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EachInvocation {
    /// The unit's kernels per invocation (their durations summed, CUPTI), microseconds: as
    /// it ran, after the copies over its own values, and after them over the model's.
    pub kernels_as_it_ran_us: f64,
    pub own_values_kernels_us: f64,
    pub model_values_kernels_us: f64,
    /// The restoring launches' time less the copies' alone, per invocation: what the
    /// unit's time would be taking the copies off by time (a diagnostic beside it).
    pub less_copies_us: f64,
    /// The control's own values were kept beforehand, from a launch as it runs, and its
    /// copies read them from memory as the model's read the snapshot
    /// (`--each-invocation-cold-control`, a diagnostic from session 43, measured on Swin-B in
    /// session 44); false: each invocation's reads copied out to scratch just before, and
    /// back.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cold_control: bool,
}

/// The least relative change (of its kernels as it ran) that the model's values make in a
/// unit's kernels for the unit to be measured with each invocation from them, and the
/// least absolute change, microseconds per invocation: under it the values do not set the
/// kernels' time, and the unit is measured as it ran, without copies.
pub const EACH_INVOCATION_CHANGE: f64 = 0.05;
pub const EACH_INVOCATION_CHANGE_US: f64 = 0.5;

/// A unit's energy measured at a duty cycle: each launch is the unit's graph and then a
/// spin kernel that keeps the GPU waiting (one warp on the global timer), so that the
/// windows' mean power stays under the power limit and the unit runs at the clock it runs
/// at in the model. Per window, the unit's energy per launch is the window's power × the
/// launch's time − the spin's own power (its windows) × the spin's time (the launch's time
/// − the unit's graph's time alone).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DutyEnergy {
    /// The unit's share of each launch asked for.
    pub unit_share: f64,
    /// One launch (unit and spin) and the unit's graph alone, microseconds (timed); a unit
    /// measured from the model's values counts its graph's copy in both.
    pub launch_us: f64,
    pub unit_launch_us: f64,
    /// The spin's power, watts, and its standard error.
    pub spin_w: f64,
    pub spin_sem_w: f64,
    /// Of the windows of the unit alone, those that saw the power cap, and all.
    pub capped_windows: usize,
    pub windows_alone: usize,
    /// The energy per invocation the windows alone gave (at the capped clock).
    pub alone_per_item_j: f64,
    /// Of the windows at this duty (after those settling), those held down by the power
    /// cap ([`held_down_by_cap`]); before session 23, those that saw the cap's reason.
    pub duty_capped_windows: usize,
    /// Windows at this duty left out while the GPU settled from the windows alone (the
    /// clock still held down by the cap); from session 23.
    #[serde(default)]
    pub settling_windows: usize,
    /// Batches of launches back to back, timed inside the counted windows, whose median
    /// gave `launch_us` ([`launch_from_batches`]); 0 where `launch_us` was timed over
    /// launches after the windows (too few batches; before session 24, always).
    #[serde(default)]
    pub launch_batches: usize,
    /// The spin's own time per launch that was taken off the energy, microseconds (since
    /// session 32: [`DutyEnergy::spin_time_us`]). Absent in older results, which took off
    /// the launch less the unit's graph alone: short of the spin by as much as the unit ran
    /// faster at the duty cycle than alone at the cap ([`Results::mend_duty_spin`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<f64>,
    /// A diagnostic (`--duty-shares-both`): the unit measured at the other share too, not
    /// its answer. Where the two shares' energies part, the spin's power taken off is not
    /// what the spin drew between the unit's launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_share: Option<Box<DutyAtShare>>,
}

/// A unit's energy at one duty share, measured beside its answer (`--duty-shares-both`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DutyAtShare {
    pub unit_share: f64,
    /// One launch (unit and spin), timed, and the spin's own time, microseconds.
    pub launch_us: f64,
    pub spin_us: f64,
    /// The unit's energy per invocation at this share, joules, and its standard error.
    pub per_item_j: f64,
    pub per_item_sem_j: f64,
    /// Windows held down by the power cap, and those left out while the GPU settled.
    pub duty_capped_windows: usize,
    pub settling_windows: usize,
}

impl DutyEnergy {
    /// The spin a duty cycle asks for after a unit's graph of `unit_launch_us`, for the unit
    /// to be `share` of each launch, microseconds: the graph × (1 − share) / share. It waits
    /// on the GPU's global timer, so it takes that long at any clock.
    pub fn spin_for_us(unit_launch_us: f64, share: f64) -> f64 {
        unit_launch_us * (1.0 - share) / share.max(1e-9)
    }

    /// The spin's time per launch, microseconds: as recorded (`spin_us`), else as it was
    /// asked for ([`Self::spin_for_us`]).
    pub fn spin_time_us(&self) -> f64 {
        self.spin_us
            .unwrap_or_else(|| Self::spin_for_us(self.unit_launch_us, self.unit_share))
    }

    /// How much longer an invocation of the unit ran at the duty cycle than alone back to
    /// back, microseconds (negative where the power cap held the unit down alone): the
    /// launch less the spin, less the unit's graph alone, per invocation.
    pub fn time_shift_us(&self, unroll: u32) -> f64 {
        (self.launch_us - self.spin_time_us() - self.unit_launch_us) / f64::from(unroll.max(1))
    }
}

/// A cycle's time and its standard error from launches of `cycles` cycles (`long`) and of
/// one (`short`), each after the same restoring copy: what the copy takes in a launch,
/// and the launch's own cost, cancel in the difference. `None` under two cycles.
pub fn cycle_by_difference(long: &Stats, short: &Stats, cycles: u32) -> Option<(f64, f64)> {
    let k = f64::from(cycles.checked_sub(1).filter(|&k| k > 0)?);
    Some((
        (long.mean - short.mean) / k,
        long.sem().hypot(short.sem()) / k,
    ))
}

/// One batch of a feeder's launches back to back, timed on the GPU from the batch before
/// it (the events that end them): its time per launch, us, and when the host saw it
/// retired (unix ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchTime {
    pub retired_unix_ms: i64,
    pub launch_us: f64,
}

/// The time per launch of the batches seen retired inside `windows`' span (the first
/// window's start to the last's end), `None` under `min_batches` of them: the launches the
/// windows' energy was measured over, timed while they ran rather than after. Each batch
/// follows the one before it on a queue kept full, so its time is its launches' back to
/// back; a batch after the host fell behind would carry the GPU's wait, so the summary's
/// median, not its mean, is what to take.
pub fn launch_from_batches(
    batches: &[BatchTime],
    windows: &[EnergyWindow],
    min_batches: usize,
) -> Option<Stats> {
    let from = windows.iter().map(|w| w.start_unix_ms).min()?;
    let to = windows.iter().map(|w| w.end_unix_ms).max()?;
    let inside: Vec<f64> = batches
        .iter()
        .filter(|b| b.retired_unix_ms > from && b.retired_unix_ms <= to)
        .map(|b| b.launch_us)
        .collect();
    (inside.len() >= min_batches.max(1)).then(|| Stats::of(&inside))
}

/// NVML's clock event reason bit for the software power cap.
pub const CLOCK_EVENT_POWER_CAP: u64 = 0x4;

/// A window's median SM clock at or above this share of the run's top clock is the clock
/// the work asks for: the H100's steps are 15 MHz, under 1 % of 1980 MHz.
pub const TOP_CLOCK_SHARE: f64 = 0.99;

/// The highest median SM clock among `windows` (the idle GPU's among them), MHz: what
/// [`held_down_by_cap`] sets a window against.
pub fn top_clock_mhz<'a>(windows: impl IntoIterator<Item = &'a EnergyWindow>) -> Option<f64> {
    windows
        .into_iter()
        .filter_map(|w| w.sm_clock_mhz.as_ref().map(|c| c.p50))
        .reduce(f64::max)
}

/// Whether the power cap held a window's clock down: NVML gave the cap's reason and the
/// window's median SM clock stayed under [`TOP_CLOCK_SHARE`] of `top_clock_mhz` (the run's
/// highest). A unit at a duty cycle, its bursts past the limit, raises the reason in
/// windows averaging 200-440 W at 1965-1980 MHz (ResNeXt-50's step, session 23): the
/// reason alone would call every such window capped. Without a clock, the reason decides.
pub fn held_down_by_cap(w: &EnergyWindow, top_clock_mhz: Option<f64>) -> bool {
    if w.clock_event_bits & CLOCK_EVENT_POWER_CAP == 0 {
        return false;
    }
    match (&w.sm_clock_mhz, top_clock_mhz) {
        (Some(c), Some(top)) => c.p50 < TOP_CLOCK_SHARE * top,
        _ => true,
    }
}

/// What each launch of a unit's graph holds besides the unit's invocations: its energy,
/// joules, and its time, seconds (a duty cycle's spin, a restoring launch's copy), taken
/// off each window's energy per launch and off the unit's own time at idle power.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Besides {
    pub j: f64,
    pub s: f64,
}

impl Besides {
    /// Both parts: a launch that holds a copy and a spin.
    pub fn and(self, o: Besides) -> Besides {
        Besides {
            j: self.j + o.j,
            s: self.s + o.s,
        }
    }
}

/// The energy summary of a unit whose every launch (`launch_s`) holds `besides` as well as
/// its `items` invocations: per window, the launch's energy (power × `launch_s`) less
/// `besides.j`, over `items`; above idle, less idle power over the unit's own time
/// (`launch_s` − `besides.s`).
pub fn energy_summary_besides(
    windows: &[EnergyWindow],
    first_index: usize,
    idle_w: Option<f64>,
    launch_s: f64,
    besides: Besides,
    items: f64,
) -> EnergySummary {
    let items = items.max(1e-9);
    let usable: Vec<&EnergyWindow> = windows.iter().filter(|w| w.duration_s > 0.0).collect();
    let per: Vec<f64> = usable
        .iter()
        .map(|w| (w.avg_power_w * launch_s - besides.j) / items)
        .collect();
    let idle_j = idle_w.unwrap_or(0.0) * (launch_s - besides.s).max(0.0) / items;
    let above: Vec<f64> = per.iter().map(|j| j - idle_j).collect();
    EnergySummary {
        windows: (first_index..first_index + windows.len()).collect(),
        per_item_j: Stats::of(&per),
        per_item_above_idle_j: Stats::of(&above),
        avg_power_w: Stats::of(&windows.iter().map(|w| w.avg_power_w).collect::<Vec<_>>()),
    }
}

/// A duty cycle's spin ([`DutyEnergy`]): its own time (`spin_s`, [`DutyEnergy::spin_time_us`])
/// at the spin's power `spin_w`.
pub fn spin_besides(spin_s: f64, spin_w: f64) -> Besides {
    let s = spin_s.max(0.0);
    Besides { j: spin_w * s, s }
}

/// How far a share of zeros may rise over a unit's measurement alone, in points, and a
/// share of non-finite values, before its figures are said to stand on values the model
/// never held.
pub const ZEROS_RAN_AWAY_POINTS: f64 = 20.0;
pub const NONFINITE_RAN_AWAY_POINTS: f64 = 1.0;

/// The floating-point values at a unit's places in the memory image (sampled as the
/// image's self-check samples them) before its measurement alone and after it. Alone, a
/// unit runs thousands of times on the same places: an in-place update that the model
/// balances with another op in the same step (an optimizer's moment decayed by one op and
/// fed by the next) drives its data to zeros or to infinity, and its power is then that
/// of the values it ran to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitValues {
    /// Values sampled (each time).
    pub sampled: u64,
    pub zero_before_pct: f64,
    pub zero_after_pct: f64,
    pub nonfinite_before_pct: f64,
    pub nonfinite_after_pct: f64,
}

impl UnitValues {
    /// Whether the unit's own repeats drove its data to zeros or non-finite values.
    pub fn ran_away(&self) -> bool {
        self.zero_after_pct - self.zero_before_pct > ZEROS_RAN_AWAY_POINTS
            || self.nonfinite_after_pct - self.nonfinite_before_pct > NONFINITE_RAN_AWAY_POINTS
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IsolatedSummary {
    pub cache: String,
    /// Sum over executed units of time × count.
    pub predicted_us: f64,
    /// Traced time of the executed units' invocations.
    pub executed_traced_us: f64,
    /// Traced time of units not executed (their tier is not replayed yet, or they failed).
    pub not_executed_traced_us: f64,
    pub predicted_energy_j: Option<f64>,
    pub units_ok: usize,
    pub units_not_executed: usize,
    pub units_failed: usize,
    /// The transitions between different units, measured as pairs (`kc exec --isolated
    /// --transitions N`): what the prediction from parts adds to Σ isolated × count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transitions: Option<TransitionsSummary>,
    /// The spin kernel's power at the start of the pass and at its end (since session 25):
    /// the GPU's power at the clock the units ran at, with next to no work, at two
    /// temperatures: how much more a hotter chip leaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leakage: Option<Leakage>,
    /// `--kinds-left-out` (a diagnostic): the program of every unit measured, and the same
    /// program with each kind of unit left out and doubled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds_left_out: Option<KindsLeftOut>,
    /// How the units alone were given the values their steps read in the model (context
    /// cache, since session 29); absent where the image was not restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_values: Option<UnitValuesGiven>,
    /// The pass's phases in the order they ran and the host's seconds each took (kc's own
    /// cost, what `kc run`'s time goes to; not a figure of the model; since session 31).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PassPhase>,
}

/// One phase of an isolated pass (the memory image, the units alone, the round, a
/// diagnostic, ...) and the host's seconds it took.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PassPhase {
    pub phase: String,
    pub seconds: f64,
}

/// What the units alone read at their places (context cache). After one pass of the
/// model's steps a place holds what its last writer left, and the image packs tensors
/// whose lives do not overlap into the same bytes: `at_steps` gives each unit, before it
/// is measured, the bytes its steps read that a later step wrote again, as those steps
/// read them in the model (kept from passes of the model's steps,
/// [`crate::plan::step_values`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitValuesGiven {
    /// `false`: every unit read what the pass left (`--unit-values after-pass`).
    pub at_steps: bool,
    /// Units given values back, and the bytes given to them in all.
    pub units: u32,
    pub bytes: u64,
    /// Bytes two of a unit's steps read at different times: the earlier step's values
    /// served both.
    pub shared_bytes: u64,
    /// Passes of the model's steps run to keep the values.
    pub passes: u32,
    /// Units with rewritten reads that read what the pass left: their values did not fit
    /// beside the image, no snapshot of it was held, or giving them failed (a note says).
    pub units_left_out: u32,
}

/// The model's program of one replay (every step of the units the isolated pass measured,
/// in the plan's order, on one stream, from the model's values) timed and measured as a
/// whole at the start and at the end, and between them for each kind of unit once with
/// the kind left out and once with each of its steps run twice in its place (a
/// diagnostic, `kc exec --isolated --kinds-left-out`). What a kind costs inside the
/// program is the whole less the program without it, and what a second run of it costs
/// there the doubled program less the whole; set beside the kind's units alone (Σ time ×
/// invocations, Σ energy × invocations) they say which kinds the units alone overdraw or
/// overrun, where the sum over all units alone and the model disagree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindsLeftOut {
    /// The whole program, measured first and last (its drift over the diagnostic).
    pub whole_first: ProgramMeasure,
    pub whole_last: ProgramMeasure,
    /// Each kind, in the order measured (without it, then doubled).
    pub kinds: Vec<KindLeftOut>,
}

/// One launch of a program graph: its steps, the mean of its timed launches and their
/// standard error (us), its energy per launch and that energy's standard error (J, where
/// its windows were measured), and how many of its windows the power cap held down.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramMeasure {
    pub steps: u32,
    pub time_us: f64,
    pub time_sem_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_sem_j: Option<f64>,
    pub capped_windows: usize,
    /// The windows' mean end temperature, °C, where recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    /// The energy windows counted (from session 38; 0 where none were measured, and in
    /// results before).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub windows: usize,
}

/// Whether a count is zero (a field left out of the file when it is).
pub(crate) fn is_zero_count(n: &usize) -> bool {
    *n == 0
}

use energy::is_false;

/// One kind of unit (a unit label, or "every other kind" for the labels each under the
/// share [`crate::plan::schedule::kind_groups`] keeps apart), its units, and the program
/// without it and with it doubled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindLeftOut {
    pub kind: String,
    pub units: Vec<u32>,
    pub without: ProgramMeasure,
    /// The program with each of the kind's steps run twice in its place, measured right
    /// after the program without it (since session 26's second call; `None` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubled: Option<ProgramMeasure>,
    /// The kind's steps its programs ran once all the same, left out or doubled: those
    /// that write integer or boolean data in place or lead to indices another step reads
    /// ([`crate::plan::schedule::steps_run_once`]), whose second run (or none) would leave
    /// indices the model never held (since session 28; from session 26's review to it,
    /// only those that write integer or boolean data in place; 0 before).
    #[serde(default)]
    pub doubled_once: u32,
}

/// The spin kernel's power (one warp waiting on the global timer: the clock held up, next
/// to no work) measured in windows of its own at the start of the isolated pass and at
/// its end, when the units have heated the chip: watts, their standard errors, and the
/// windows' mean end temperature, °C.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Leakage {
    pub start_w: f64,
    pub start_sem_w: f64,
    pub start_c: f64,
    pub end_w: f64,
    pub end_sem_w: f64,
    pub end_c: f64,
}

/// Two spin measurements closer in temperature than this give no slope.
pub const LEAKAGE_MIN_SPAN_C: f64 = 2.0;

impl Leakage {
    /// Watts per degree between the two measurements, and its standard error; `None`
    /// where their temperatures lie within [`LEAKAGE_MIN_SPAN_C`], or where the slope is
    /// not above twice its standard error (a chip does not leak less hotter: such a
    /// slope is noise).
    pub fn w_per_c(&self) -> Option<(f64, f64)> {
        let span = self.end_c - self.start_c;
        let slope = (self.end_w - self.start_w) / span;
        let u = self.end_sem_w.hypot(self.start_sem_w) / span.abs();
        (span.abs() >= LEAKAGE_MIN_SPAN_C && slope > 2.0 * u).then_some((slope, u))
    }
}

/// The mean end temperature of `windows`, °C, where any records one.
pub fn mean_end_temperature_c<'a>(windows: impl Iterator<Item = &'a EnergyWindow>) -> Option<f64> {
    let t: Vec<f64> = windows
        .filter_map(|w| Some(f64::from(w.temperature_c?[1])))
        .collect();
    (!t.is_empty()).then(|| t.iter().sum::<f64>() / t.len() as f64)
}

/// One transition between two different units (the one runs right after the other on a
/// stream of the replay), measured alone: the two units alternated in one graph, at the
/// places of the transition's occurrences (context) or on their own buffers (warm).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransitionResult {
    pub from_unit: u32,
    pub to_unit: u32,
    /// How often one replay of the plan makes this transition.
    pub count: u64,
    /// (from, to) cycles in one launch of the pair's graph.
    pub cycles: u32,
    pub launches: usize,
    /// One cycle, microseconds (per launch / cycles).
    pub cycle_us: Stats,
    /// What one transition adds beyond the two units alone, microseconds:
    /// (cycle − from alone − to alone) / 2, the units alone from the same pass.
    pub extra_us: f64,
    /// The standard error of `extra_us` from the spread of the timed launches.
    pub extra_sem_us: f64,
}

/// One unit's kernels, per invocation, in the round and alone (CUPTI), microseconds: their
/// durations summed, and from session 40 their busy time (the union of their intervals),
/// under the durations where they ran side by side (absent in earlier results).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundUnitKernels {
    pub unit: u32,
    pub round_us: f64,
    pub alone_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_busy_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_busy_us: Option<f64>,
    /// From session 43: alone is the unit's kernels at the step the round ran it at
    /// ([`fidelity::UnitLaunches::at_step`]), not its mean over its steps, whose data can
    /// take its kernels other times. Sessions 43-48 recorded steps only for a unit
    /// measured with each invocation from the model's values; from session 49 every unit
    /// measured at its places in the memory image is.
    #[serde(default, skip_serializing_if = "is_false")]
    pub alone_at_step: bool,
    /// From session 44: the unit's places held non-finite values after the round's
    /// launches where the model's values at them are finite, and it was recorded alone
    /// over both ([`RoundValues`]). Where those values took its kernels another time, its
    /// kernels in the round are not the model's, and `round_us` (and `round_busy_us`) are
    /// its kernels alone ([`RoundUnitKernels::set_by_values`]); the round's stand in
    /// `values.round_as_recorded_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<RoundValues>,
    /// From session 50: its kernels in each launch's first cycle of a restoring round,
    /// which starts from the model's values (the results its earlier steps allocate in
    /// that cycle too), against the round's cycles as recorded
    /// ([`RoundUnitKernels::set_by_first_cycle`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_cycle: Option<RoundFirstCycle>,
}

impl RoundFirstCycle {
    /// The first cycles differ from all of the round's cycles by at least
    /// [`EACH_INVOCATION_CHANGE`] of the first and [`ROUND_VALUES_EXCESS_US`] (durations).
    pub fn differs(&self) -> bool {
        let change = (self.round_as_recorded_us - self.kernels_us).abs();
        change >= EACH_INVOCATION_CHANGE * self.kernels_us && change >= ROUND_VALUES_EXCESS_US
    }
}

/// A unit's kernels per invocation in the first cycle of each launch of a restoring round
/// (CUPTI), microseconds. That cycle starts from the model's values: the image restored,
/// and every result an earlier step allocates computed from them in the same cycle, so
/// it also holds the operands the round serves from its own memory pool
/// ([`RoundValues::bound_operands`]), which no record over the image holds. Where the
/// round ran its values away and the cycles after the first ran this unit's kernels
/// another time, those cycles are not the model's (Qwen3-MoE's fused AdamW read its
/// gradients so, session 46).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundFirstCycle {
    /// How many first cycles it was recorded in (one per recorded launch).
    pub cycles: u32,
    pub kernels_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<f64>,
    /// Its kernels over all the recorded cycles (durations, busy time).
    pub round_as_recorded_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_as_recorded_busy_us: Option<f64>,
    /// The round ran its values away and the first cycles differed from all by at least
    /// [`EACH_INVOCATION_CHANGE`] and [`ROUND_VALUES_EXCESS_US`]: its kernels in the
    /// round were set to the first cycles'.
    pub set: bool,
}

/// A unit of the round whose places held non-finite values after the round's launches
/// where the model's values at them are finite: its one invocation at the step the round
/// ran it at, recorded alone (CUPTI) after its reads were copied in from the values the
/// round left and from the model's (the image's snapshot), per invocation, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundValues {
    pub step: u32,
    /// Non-finite values among those sampled at its places (its operands and results),
    /// percent: the model's (the snapshot) and after the round's launches.
    pub nonfinite_model_pct: f64,
    pub nonfinite_round_pct: f64,
    /// Its kernels (durations summed) and busy time over the round's values and over the
    /// model's.
    pub round_values_kernels_us: f64,
    pub model_values_kernels_us: f64,
    pub round_values_busy_us: f64,
    pub model_values_busy_us: f64,
    /// Its kernels in the round as recorded (durations, busy time).
    pub round_as_recorded_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_as_recorded_busy_us: Option<f64>,
    /// The values changed its kernels by at least [`EACH_INVOCATION_CHANGE`] and
    /// [`EACH_INVOCATION_CHANGE_US`]: its kernels in the round were set to alone.
    pub set: bool,
    /// Recorded in place, its reads too large to keep beside the image: one launch over
    /// the image as the round left it, then one over the model's values restored, each
    /// from an idle GPU with no copies (else, copies of its reads before each launch,
    /// three recorded after a first).
    #[serde(default, skip_serializing_if = "is_false")]
    pub in_place: bool,
    /// Checked for its kernels in the round beyond alone
    /// ([`RoundUnitKernels::slower_in_round`]), whatever the non-finite share the round
    /// left at its places (from session 45; before, only that share chose units).
    #[serde(default, skip_serializing_if = "is_false")]
    pub slower_in_round: bool,
    /// Operands of its step that the plan binds to a result an earlier step allocates
    /// (`Plan::bound_reads`; from session 45). Where the round ran that producer, the unit
    /// read the result from the round's own memory pool, not the image: neither the census
    /// nor the record over the round's values holds those (Qwen3-MoE's AdamW reads the
    /// embedding's 622 MB gradient so).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub bound_operands: usize,
}

/// The least excess of a unit's kernels in the round over alone, per invocation, that has
/// it recorded alone over the values the round left and over the model's whatever its
/// places' non-finite share ([`RoundUnitKernels::slower_in_round`]), microseconds: fused
/// AdamW steps ran 14-33 % longer in the round than alone (Qwen3-MoE's and BLOOM's
/// training steps, session 45), and only a record over both tells whether the values did
/// it.
pub const ROUND_VALUES_EXCESS_US: f64 = 20.0;

/// The least share of non-finite values (percent of those sampled) at a unit's places
/// after the round, beyond the model's values there, for the unit to be recorded over
/// both: one per cent of its gradients non-finite took a fused AdamW step 11 % longer
/// (session 44, `adamw_values.py`).
pub const ROUND_VALUES_NONFINITE_PCT: f64 = 1.0;

impl RoundUnitKernels {
    /// Its kernels in the round (durations) exceed alone by at least
    /// [`EACH_INVOCATION_CHANGE`] of alone and [`ROUND_VALUES_EXCESS_US`], per invocation.
    pub fn slower_in_round(&self) -> bool {
        let excess = self.round_us - self.alone_us;
        excess >= EACH_INVOCATION_CHANGE * self.alone_us && excess >= ROUND_VALUES_EXCESS_US
    }

    /// Takes the record of the unit alone over the round's values and the model's
    /// (`check`, its round kernels as recorded filled in here): where the values changed
    /// its kernels by at least [`EACH_INVOCATION_CHANGE`] of them over the model's values
    /// and [`EACH_INVOCATION_CHANGE_US`], its kernels in the round are not the model's,
    /// and kc takes them at its kernels alone (the round adds nothing for it); else the
    /// round's stand.
    pub fn set_by_values(&mut self, mut check: RoundValues) {
        let change = check.round_values_kernels_us - check.model_values_kernels_us;
        let least =
            (EACH_INVOCATION_CHANGE * check.model_values_kernels_us).max(EACH_INVOCATION_CHANGE_US);
        check.round_as_recorded_us = self.round_us;
        check.round_as_recorded_busy_us = self.round_busy_us;
        check.set = change.abs() >= least;
        if check.set {
            self.round_us = self.alone_us;
            self.round_busy_us = self.alone_busy_us;
        }
        self.values = Some(check);
    }

    /// Takes its kernels in each launch's first cycle of a restoring round (`first`, over
    /// `cycles` first cycles): where the round ran its values away (`ran_away`), it was
    /// not set alone by its values already, and the first cycles differ from all of the
    /// round's cycles by at least [`EACH_INVOCATION_CHANGE`] of the first and
    /// [`ROUND_VALUES_EXCESS_US`], its kernels in the round are the first cycles' (the
    /// model's values, in the round's context); else the round's stand and the first
    /// cycles are kept as a record.
    pub fn set_by_first_cycle(
        &mut self,
        first: fidelity::PositionKernels,
        cycles: u32,
        ran_away: bool,
    ) {
        let set_alone = self.values.as_ref().is_some_and(|v| v.set);
        let busy_us = self.round_busy_us.map(|_| first.busy_us);
        let mut record = RoundFirstCycle {
            cycles,
            kernels_us: first.kernels_us,
            busy_us,
            round_as_recorded_us: self.round_us,
            round_as_recorded_busy_us: self.round_busy_us,
            set: false,
        };
        record.set = ran_away && !set_alone && record.differs();
        let set = record.set;
        self.first_cycle = Some(record);
        if set {
            self.round_us = first.kernels_us;
            self.round_busy_us = busy_us;
        }
    }

    /// Its kernels in the round as recorded beyond the first cycles', per invocation,
    /// where they were set to the first cycles' ([`Self::set_by_first_cycle`]): by busy
    /// time where both were recorded, else by durations; `None` where they were not set.
    pub fn excess_set_by_first_cycle_us(&self) -> Option<f64> {
        let f = self.first_cycle.as_ref().filter(|f| f.set)?;
        Some(match (f.round_as_recorded_busy_us, f.busy_us) {
            (Some(r), Some(b)) => r - b,
            _ => f.round_as_recorded_us - f.kernels_us,
        })
    }

    /// Its kernels beyond alone in the round as recorded, per invocation, where they were
    /// set alone by the values the round left ([`Self::set_by_values`]): by busy time where
    /// both were recorded, else by durations; `None` where they were not set.
    pub fn excess_set_by_values_us(&self) -> Option<f64> {
        let v = self.values.as_ref().filter(|v| v.set)?;
        Some(match (v.round_as_recorded_busy_us, self.alone_busy_us) {
            (Some(r), Some(a)) => r - a,
            _ => v.round_as_recorded_us - self.alone_us,
        })
    }

    /// Its kernels in the round as recorded, where they were set alone by the values the
    /// round left ([`Self::set_by_values`]) or to its first cycles'
    /// ([`Self::set_by_first_cycle`]); both records are dropped (the diagnostic `kc report
    /// --round-as-recorded`).
    pub fn as_recorded(&mut self) {
        if let Some(v) = self.values.take().filter(|v| v.set) {
            self.round_us = v.round_as_recorded_us;
            self.round_busy_us = v.round_as_recorded_busy_us;
        }
        // Every first-cycle record goes, set or not: as recorded, nothing is said of them.
        if let Some(f) = self.first_cycle.take().filter(|f| f.set) {
            self.round_us = f.round_as_recorded_us;
            self.round_busy_us = f.round_as_recorded_busy_us;
        }
    }

    /// A unit's kernels in the round at `step` (`round`, one position's) against its
    /// kernels alone: at the same step where it was recorded by step (a unit whose steps'
    /// data take its kernels other times, [`EachInvocation`]), else its mean; busy times
    /// only where alone recorded one.
    pub fn against(
        unit: u32,
        step: u32,
        round: fidelity::PositionKernels,
        alone: &fidelity::UnitLaunches,
    ) -> RoundUnitKernels {
        let at_step = alone.at_step(step);
        let (alone_us, alone_busy_us) = match at_step {
            Some(s) => (s.kernels_us, alone.busy_us.map(|_| s.busy_us)),
            None => (alone.kernels_us, alone.busy_us),
        };
        RoundUnitKernels {
            unit,
            round_us: round.kernels_us,
            alone_us,
            round_busy_us: alone.busy_us.map(|_| round.busy_us),
            alone_busy_us,
            alone_at_step: at_step.is_some(),
            values: None,
            first_cycle: None,
        }
    }
}

/// Each unit's kernels over several rounds (each at another of its runs): per unit, the
/// mean of its kernels in the rounds that told them apart, in the order the units first
/// appear; its busy times only where every one of those rounds recorded them.
pub fn round_unit_kernels_mean(rounds: &[Vec<RoundUnitKernels>]) -> Vec<RoundUnitKernels> {
    let mut order: Vec<u32> = Vec::new();
    let mut by_unit: std::collections::HashMap<u32, Vec<&RoundUnitKernels>> = Default::default();
    for k in rounds.iter().flatten() {
        by_unit
            .entry(k.unit)
            .or_insert_with(|| {
                order.push(k.unit);
                Vec::new()
            })
            .push(k);
    }
    let mean = |of: &[&RoundUnitKernels], f: fn(&RoundUnitKernels) -> Option<f64>| {
        let v: Option<Vec<f64>> = of.iter().map(|k| f(k)).collect();
        v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
    };
    order
        .into_iter()
        .map(|unit| {
            let of = &by_unit[&unit];
            RoundUnitKernels {
                unit,
                round_us: mean(of, |k| Some(k.round_us)).unwrap_or(0.0),
                alone_us: mean(of, |k| Some(k.alone_us)).unwrap_or(0.0),
                round_busy_us: mean(of, |k| k.round_busy_us),
                alone_busy_us: mean(of, |k| k.alone_busy_us),
                alone_at_step: of.iter().any(|k| k.alone_at_step),
                // Only the first round's units are recorded over its values and by its
                // first cycles.
                values: of.iter().find_map(|k| k.values.clone()),
                first_cycle: of.iter().find_map(|k| k.first_cycle.clone()),
            }
        })
        .collect()
}

/// The copy that starts each launch of a restoring round from the model's values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundRestoring {
    /// Bytes copied (the whole image).
    pub bytes: u64,
    /// Cycles of the round per launch, after each copy.
    pub cycles: u32,
    /// The copy alone, per launch, microseconds (taken off each launch's time).
    pub copy_us: f64,
    /// The copy alone, per launch, joules (taken off each launch's energy), where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_energy_j: Option<f64>,
    /// Whether the round restored the values from its first timing (the default since
    /// session 17), not only after a timing as it ran had run them away.
    #[serde(default)]
    pub from_the_start: bool,
}

/// The transitions a replay makes, and what was measured of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransitionsSummary {
    /// Transitions per replay between different units, all of them.
    pub total: u64,
    /// Whether the extras below are against each unit's time at the clock the model runs
    /// it at ([`UnitResult::time_at_model_clock`]: at its duty cycle where it drew past the
    /// power limit alone; since session 32). Before, against its time alone, where the
    /// cap's cost to a unit alone came out of the round's gaps.
    #[serde(default)]
    pub alone_at_model_clock: bool,
    /// Of them, those whose pair was measured.
    pub covered: u64,
    /// Distinct pairs, and how many were measured (the most frequent first).
    pub pairs: usize,
    pub pairs_measured: usize,
    pub measured: Vec<TransitionResult>,
    /// One graph launch beyond the node it holds, microseconds: a one-node graph launched
    /// back to back, minus the node alone (the shortest unit's graph).
    pub launch_extra_us: Option<f64>,
    pub launch_extra_sem_us: Option<f64>,
    /// The round: every executed unit once per cycle, in the order the replay first runs
    /// them (with lead-ins, below), cycles repeated in one graph; what one switch from a
    /// unit to the next adds beyond the units alone (cycle − Σ entries alone) / switches,
    /// and its standard error.
    #[serde(default)]
    pub round_units: usize,
    /// Of the round's entries, the lead-ins: the model's steps before a unit's first run
    /// (`round_lead_in_steps` of them), run first where the round does not already end with
    /// them, so the unit finds in L2 what the model leaves there; their kernels are not the
    /// unit's. 0 in results of kc before session 16 (no lead-ins) and with
    /// `--round-no-lead-in`.
    #[serde(default)]
    pub round_lead_ins: usize,
    /// How many of the model's steps before a unit its lead-ins hold at most
    /// (`--round-lead-in-steps`); 0 where results do not say (before d93e712: one, where
    /// `round_lead_ins` is not 0).
    #[serde(default)]
    pub round_lead_in_steps: usize,
    /// Switches between different units in one cycle of the round (entries of one unit back
    /// to back are none): what `round_extra_us` and `round_gap_extra_us` are per. 0 in
    /// results of kc before session 16, whose rounds switched at every one of
    /// `round_units` entries.
    #[serde(default)]
    pub round_switches: usize,
    /// The round's cycles per launch; 0 in results of kc before session 17.
    #[serde(default)]
    pub round_cycles: u32,
    /// Rounds measured, each at other runs of every unit, spread over its runs in
    /// `round_runs_of` parts ([`crate::plan::schedule::RoundAt`], `--round-runs`): the
    /// per-switch figures (`round_extra_us`, `round_gap_extra_us`) and each unit's kernels
    /// in the round are the mean of the `round_runs` measured (fewer where one failed:
    /// `failed` names it); the rest (cycles, recorded kernels and gaps, energy, values, the
    /// smaller rounds) are the first round's. Both 0: one round, of each unit's first run
    /// (results of kc before session 30, and `--round-runs 1`).
    #[serde(default)]
    pub round_runs: u32,
    #[serde(default)]
    pub round_runs_of: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_extra_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_extra_sem_us: Option<f64>,
    /// With `--verify`: the kernels' durations in one cycle of the round (CUPTI), and the
    /// part of a switch's extra that is gap between kernels rather than slower kernels:
    /// ((cycle − its kernels) − Σ units' (alone − their kernels)) / units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_kernels_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_gap_extra_us: Option<f64>,
    /// With `--verify`, from session 40: the same part by busy time (the union of the
    /// kernels' intervals) rather than durations: ((cycle − (recorded span − recorded
    /// gaps)) − Σ units' (alone − their busy time alone)) / switches. It parts from
    /// `round_gap_extra_us` only where kernels ran side by side, whose durations sum past
    /// the time they take (ResNeXt-101 32x8d's grouped convolutions, session 39).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_gap_extra_busy_us: Option<f64>,
    /// With `--verify`, a diagnostic: the recorded launches' own gaps between kernels and
    /// their span (first kernel's start to the last one's end), per cycle (CUPTI). Beside
    /// `round_kernels_us` they say whether the recorded launch ran as the event-timed ones
    /// (whose cycle less the recorded kernels is the gap term's residual); none in results
    /// of kc before session 21.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_recorded_gaps_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_recorded_span_us: Option<f64>,
    /// The round's cycle as its event-timed launches gave it (a launch less its copy, over
    /// its cycles), microseconds: what less `round_kernels_us` the gap term's residual
    /// starts from. None in results of kc before session 21.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_cycle_us: Option<f64>,
    /// With `--verify`, a diagnostic: the round's launches recorded back to back (CUPTI),
    /// the first among them, and the first one's kernels per cycle, microseconds. The
    /// first starts from an idle GPU, unlike the timed launches, and is left out of
    /// `round_kernels_us`, the kernels by unit and the recorded gaps where the records
    /// split by launch (its kernels are then set here; where they do not, every launch
    /// stands in the figures). From session 22; results before it recorded one launch,
    /// from idle.
    #[serde(default)]
    pub round_recorded_launches: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_first_recorded_kernels_us: Option<f64>,
    /// A restoring round's cycle from two lengths after the same copy, a diagnostic from
    /// session 23: (a launch of all its cycles − a launch of one) / (cycles − 1), and its
    /// standard error, microseconds ([`cycle_by_difference`]). The copy cancels however
    /// long it takes in a launch, where `round_cycle_us` takes off its time alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_cycle_by_difference_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_cycle_by_difference_sem_us: Option<f64>,
    /// With energy: what one switch adds in energy, joules, from the round's own energy
    /// windows: (energy of one cycle − Σ units' energy alone) / units, and its standard
    /// error; and the round's power, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_extra_energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_extra_energy_sem_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_power_w: Option<f64>,
    /// The values at the round's places once the model's values were restored before its
    /// energy windows, and after them: whether cycling the units out of the model's dataflow
    /// drove them to zeros or non-finite values (then the round's energy, which prices the
    /// switches, is not the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_values: Option<UnitValues>,
    /// The values at the round's places before and after its first timing (from the
    /// model's values): a round that ran them away there is timed again restoring them
    /// ([`Self::round_restoring`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_timed_values: Option<UnitValues>,
    /// Set when the round's figures (time, energy, values) come from the round that
    /// starts every launch from the model's values: its graph begins with a copy of the
    /// image's snapshot, whose own time and energy, measured alone, are taken off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_restoring: Option<RoundRestoring>,
    /// With `--verify`: each unit's kernels in the round against the same unit's alone
    /// (per invocation, CUPTI), where every unit launched as many kernels as alone. A
    /// kernel slower in the round is then priced by its own unit's invocations, not by the
    /// switches: one long unit that runs slower there (a fused optimizer, once per
    /// iteration) is not multiplied by every switch of the iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_unit_kernels: Vec<RoundUnitKernels>,
    /// From session 44: the round's units whose places held non-finite values after it
    /// where the model's values are finite, but that were not recorded over both (beyond
    /// the most recorded, or whose records could not be set against each other): their
    /// kernels in the round stand as recorded.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub round_values_unchecked: usize,
    /// From session 41: the units of one cycle's entries in the round's order, lead-ins
    /// included (the first round's, with `--round-runs`): what the gap part's Σ over
    /// entries runs over, so that a report can take a unit's term out of it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_entry_units: Vec<u32>,
    /// Smaller rounds: consecutive groups of `units` units of the same order (at most a
    /// few groups per size), each cycled alone as the round is. A switch in a round of k
    /// units reaches back k − 1 distinct units, so these price a switch by how far back it
    /// reaches; ascending sizes, each below `round_units`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_by_size: Vec<RoundBySize>,
    /// Pairs that could not be measured, with why (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

impl TransitionsSummary {
    /// The kernels beyond alone, per cycle, of the round's units taken alone for the values
    /// the round left at their places ([`RoundUnitKernels::set_by_values`]), as recorded,
    /// microseconds: by busy time where both were recorded, else by durations.
    pub fn round_excess_set_by_values_us(&self) -> f64 {
        self.round_unit_kernels
            .iter()
            .filter_map(RoundUnitKernels::excess_set_by_values_us)
            .sum()
    }

    /// The same for the round's units set to their first cycles' kernels
    /// ([`RoundUnitKernels::set_by_first_cycle`]): what the cycles after the first ran
    /// beyond them, per cycle, microseconds.
    pub fn round_excess_set_by_first_cycle_us(&self) -> f64 {
        self.round_unit_kernels
            .iter()
            .filter_map(RoundUnitKernels::excess_set_by_first_cycle_us)
            .sum()
    }
    /// Switches between different units per cycle of the round: as recorded, or one per
    /// unit in results of kc before lead-ins (whose rounds held each unit once).
    pub fn switches_per_cycle(&self) -> usize {
        if self.round_switches > 0 {
            self.round_switches
        } else {
            self.round_units.max(1)
        }
    }

    /// Whether the round's cost is told apart by busy time: where it recorded its gap
    /// part so and every unit it told apart has its busy time in the round and alone
    /// (from session 40). Busy time is what the split means: kernels side by side are
    /// busy for the union of their intervals, and their durations' sum would count the
    /// overlap as slower kernels and take it from the gaps. Else by durations.
    pub fn split_by_busy(&self) -> bool {
        self.round_gap_extra_busy_us.is_some()
            && self
                .round_unit_kernels
                .iter()
                .all(|r| r.round_busy_us.is_some() && r.alone_busy_us.is_some())
    }

    /// What the round's cost is split into gaps and slower kernels by: "busy time" or
    /// "durations" ([`Self::split_by_busy`]); `None` where it is not split (no CUPTI).
    pub fn round_split_by(&self) -> Option<&'static str> {
        self.round_gap_split_us()?;
        Some(if self.split_by_busy() {
            "busy time"
        } else {
            "durations"
        })
    }

    /// The part of a switch's cost that is gap between kernels, by busy time where the
    /// round is split so ([`Self::split_by_busy`]), else by durations.
    pub fn round_gap_split_us(&self) -> Option<f64> {
        if self.split_by_busy() {
            self.round_gap_extra_busy_us
        } else {
            self.round_gap_extra_us
        }
    }

    /// Each unit the round told apart: (unit, its kernels in the round, alone) per
    /// invocation, microseconds, by busy time where the round is split so.
    pub fn round_unit_split(&self) -> impl Iterator<Item = (u32, f64, f64)> + '_ {
        let busy = self.split_by_busy();
        self.round_unit_kernels.iter().map(move |r| match busy {
            true => (
                r.unit,
                r.round_busy_us.unwrap_or(r.round_us),
                r.alone_busy_us.unwrap_or(r.alone_us),
            ),
            false => (r.unit, r.round_us, r.alone_us),
        })
    }
}

/// Rounds of one size: what a switch adds beyond the units alone, over its groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundBySize {
    /// Units per group (a switch reaches back `units` − 1 distinct units).
    pub units: usize,
    /// Groups measured, and the units they cover.
    pub groups: usize,
    /// Extra per switch, microseconds: Σ over groups (cycle − Σ units alone) / switches.
    pub extra_us: f64,
    pub extra_sem_us: f64,
}

impl UnitResult {
    /// Where the unit alone drew past the power limit (its windows alone saw the cap and
    /// its energy was measured at a duty cycle), its time per invocation at the duty
    /// cycle: at the clock the model runs it at, as its energy is. `None` for every other
    /// unit, and without a time.
    pub fn time_at_duty(&self) -> Option<Stats> {
        let d = self
            .energy_at_duty
            .as_ref()
            .filter(|d| d.capped_windows > 0)?;
        Some(self.time_us.as_ref()?.shifted(d.time_shift_us(self.unroll)))
    }

    /// The unit's time per invocation at the clock the model runs it at: at its duty cycle
    /// where it drew past the power limit alone ([`Self::time_at_duty`]), else alone.
    pub fn time_at_model_clock(&self) -> Option<Stats> {
        self.time_at_duty().or_else(|| self.time_us.clone())
    }

    /// Where the unit was measured at both duty shares (`--duty-shares-both`), neither
    /// held down by the cap: the power the spin drew between the unit's launches over
    /// what it drew alone, watts, read off the two shares. A launch at share s is priced
    /// E·unroll + spin power × spin time, so an excess ΔW the spin drew beside the unit
    /// lands in the unit's energy as ΔW × the spin's time, twice as much at a fifth as at
    /// a third: ΔW = (E₂ − E₁)·unroll / (t₂ − t₁).
    pub fn duty_spin_excess_w(&self) -> Option<f64> {
        let d = self.energy_at_duty.as_ref()?;
        let other = d.other_share.as_deref()?;
        if d.duty_capped_windows > 0 || other.duty_capped_windows > 0 {
            return None;
        }
        let answer_j = self.energy.as_ref()?.per_item_j.mean;
        let dt_s = (other.spin_us - d.spin_time_us()) / 1e6;
        (dt_s.abs() > 1e-9)
            .then(|| (other.per_item_j - answer_j) * f64::from(self.unroll.max(1)) / dt_s)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub kc_version: String,
    pub mode: String,
    pub started: String,
    pub finished: String,
    pub device: DeviceInfo,
    pub plan: PlanIdentity,
    pub idle: Option<EnergyWindow>,
    pub graph: Option<GraphResult>,
    pub units: Vec<UnitResult>,
    pub isolated: Option<IsolatedSummary>,
    /// Every energy window measured, in order.
    pub windows: Vec<EnergyWindow>,
    pub notes: Vec<String>,
    /// Where this run stood in a job of ranks replayed together (`kc exec --ranks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobRank>,
    /// Set only in a file written part-way through a run (`kc exec`'s checkpoint before an
    /// opt-in diagnostic): what had not run when it was written. The run writes the file
    /// again, without it, when it ends; a file that still holds it is from a run that did
    /// not end (a fault in the diagnostic ended the process or its GPU context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<String>,
    /// The run's own phases in the order they ran and the host's seconds each took (from
    /// session 38; kc's own cost, not a figure of the model): opening the GPU and its
    /// memory, every unit once, the idle window, and in graph mode the memory image and its
    /// steps, the capture, the warm-up and timed replays, the energy windows, and the
    /// CUPTI replay and checks (the isolated pass keeps its own in `isolated.phases`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PassPhase>,
    /// What reading the file mended in figures an older kc wrote (not written back; the
    /// report says so in its notes).
    #[serde(skip)]
    pub mended_on_reading: Vec<String>,
}

impl Results {
    /// Mends the energy of units measured at a duty cycle by kc before session 32, which
    /// took off each launch's energy the spin's power over the launch less the unit's
    /// graph alone. Where the unit ran faster at the duty cycle than alone at the power cap
    /// (the point of the duty cycle), that is short of the spin's own time
    /// ([`DutyEnergy::spin_time_us`]), and the unit kept the rest of the spin's energy.
    /// The shortfall's energy at the spin's power (above idle: at the spin's power less the
    /// idle power) is taken off every window's figure, and `spin_us` set. Returns how many
    /// units, and the joules per invocation taken off over their invocations, where any.
    pub fn mend_duty_spin(&mut self) -> Option<(usize, f64)> {
        let idle_w = self.idle.as_ref().map_or(0.0, |w| w.avg_power_w);
        let (mut units, mut joules) = (0, 0.0);
        for u in &mut self.units {
            let (Some(d), Some(e)) = (u.energy_at_duty.as_mut(), u.energy.as_mut()) else {
                continue;
            };
            if d.spin_us.is_some() {
                continue;
            }
            let spin_us = d.spin_time_us();
            let short_s = (spin_us - (d.launch_us - d.unit_launch_us).max(0.0)).max(0.0) / 1e6;
            let items = f64::from(u.unroll.max(1));
            let j = d.spin_w * short_s / items;
            e.per_item_j = e.per_item_j.shifted(-j);
            e.per_item_above_idle_j = e
                .per_item_above_idle_j
                .shifted(-(d.spin_w - idle_w) * short_s / items);
            d.spin_us = Some(spin_us);
            if j > 0.0 {
                units += 1;
                joules += j * u.invocations as f64;
            }
        }
        if let Some(e) = self
            .isolated
            .as_mut()
            .and_then(|i| i.predicted_energy_j.as_mut())
        {
            *e -= joules;
        }
        (units > 0).then_some((units, joules))
    }
}

/// One rank's place in a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRank {
    pub rank: u32,
    pub world_size: u32,
    pub local_rank: u32,
    /// The plan's (trace's) rank this process replayed.
    pub trace_rank: u32,
}

/// The share of the units' summed energy whose units kc measures after their lead-ins by
/// default (`--lead-in-share`): on the nine models of session 35 the units so chosen
/// (41-88 % of the energy, the capped ones left out) moved the prediction's energy toward
/// the model on eight, at 13-64 s more of `kc run`.
pub const LEAD_IN_SHARE: f64 = 0.9;

/// The units that hold the first `share` of the units' summed energy (each unit's
/// `predicted_energy_j`, the largest first, until their sum reaches `share` of the whole),
/// as ids; `None` where `share` is 1 or more (every unit). A unit without an energy is not
/// among them. The units after their lead-ins (`--lead-in-share`) are so measured only
/// where they carry the energy: on ConvNeXt-S's training step (session 34) the 40 of its
/// 154 units that held 84 % of the energy held all of its units' saving after their
/// lead-ins (−0.520 of −0.508 J a replay).
pub fn units_holding_energy_share(
    rows: &[UnitResult],
    share: f64,
) -> Option<std::collections::BTreeSet<u32>> {
    if share >= 1.0 {
        return None;
    }
    let mut by_energy: Vec<(u32, f64)> = rows
        .iter()
        .filter_map(|r| r.predicted_energy_j.map(|e| (r.id, e)))
        .filter(|(_, e)| e.is_finite() && *e > 0.0)
        .collect();
    by_energy.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let whole: f64 = by_energy.iter().map(|(_, e)| e).sum();
    let mut held = 0.0;
    let mut ids = std::collections::BTreeSet::new();
    for (id, e) in by_energy {
        if held >= share.max(0.0) * whole {
            break;
        }
        held += e;
        ids.insert(id);
    }
    Some(ids)
}

/// The host wall clock, Unix milliseconds.
pub fn unix_ms_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Summarises repeated windows of the same work, run back to back through each window:
/// energy per item is the window's power × the item's timed duration, `seconds_per_item`
/// (one window per value). The items counted complete in a window are not used: the
/// count advances by whole batches, which over a one-tick window would be a coarse
/// measure; [`completion_mismatch`] checks it against the timed duration instead.
pub fn energy_summary(
    windows: &[EnergyWindow],
    first_index: usize,
    idle_w: Option<f64>,
    seconds_per_item: f64,
) -> EnergySummary {
    let usable: Vec<&EnergyWindow> = windows.iter().filter(|w| w.duration_s > 0.0).collect();
    let per: Vec<f64> = usable
        .iter()
        .map(|w| w.avg_power_w * seconds_per_item)
        .collect();
    let above: Vec<f64> = usable
        .iter()
        .map(|w| (w.avg_power_w - idle_w.unwrap_or(0.0)) * seconds_per_item)
        .collect();
    EnergySummary {
        windows: (first_index..first_index + windows.len()).collect(),
        per_item_j: Stats::of(&per),
        per_item_above_idle_j: Stats::of(&above),
        avg_power_w: Stats::of(&windows.iter().map(|w| w.avg_power_w).collect::<Vec<_>>()),
    }
}

/// How far the launches counted complete over a series of windows stray from those its
/// duration and the timed launch time imply, as a fraction (counted / implied − 1), when
/// the count is fine enough to tell: its grain (one batch, `batch_s`: the batch under way
/// at either end is not counted) must be at most 2 % of the series. `None` when it is not.
pub fn completion_mismatch(
    windows: &[EnergyWindow],
    seconds_per_launch: f64,
    batch_s: f64,
) -> Option<f64> {
    let duration: f64 = windows.iter().map(|w| w.duration_s).sum();
    let counted: u64 = windows.iter().map(|w| w.completed).sum();
    (seconds_per_launch > 0.0 && duration >= 50.0 * batch_s && counted > 0)
        .then(|| counted as f64 * seconds_per_launch / duration - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_whose_steps_take_other_times_is_set_against_itself_alone_at_the_rounds_step() {
        use fidelity::{PositionKernels, StepKernels, UnitLaunches};
        // Swin3D-T's third-stage softmax (session 43): 28.7 us alone at its unshifted
        // steps, 70.4 at its shifted ones, 48.5 on average; the round runs its first step.
        let by_step = vec![
            StepKernels {
                step: 165,
                kernels_us: 28.7,
                busy_us: 28.7,
            },
            StepKernels {
                step: 210,
                kernels_us: 70.4,
                busy_us: 70.4,
            },
        ];
        let alone = UnitLaunches {
            kernels_us: 48.5,
            busy_us: Some(48.5),
            by_step,
            ..Default::default()
        };
        let round = PositionKernels {
            kernels_us: 28.6,
            busy_us: 28.6,
        };
        let k = RoundUnitKernels::against(108, 165, round, &alone);
        assert_eq!(
            (k.alone_us, k.alone_busy_us, k.alone_at_step),
            (28.7, Some(28.7), true)
        );
        assert!((k.round_us - k.alone_us).abs() < 0.2, "{k:?}");
        // At a step it was not recorded at, and for a unit without steps, its mean.
        let k = RoundUnitKernels::against(108, 999, round, &alone);
        assert_eq!((k.alone_us, k.alone_at_step), (48.5, false));
        let plain = UnitLaunches {
            kernels_us: 30.0,
            ..Default::default()
        };
        let k = RoundUnitKernels::against(7, 165, round, &plain);
        assert_eq!(
            (k.alone_us, k.round_busy_us, k.alone_busy_us),
            (30.0, None, None)
        );
    }

    #[test]
    fn the_units_holding_a_share_of_the_energy_are_the_largest() {
        let row = |id, e: Option<f64>| UnitResult {
            id,
            predicted_energy_j: e,
            ..Default::default()
        };
        // 10 J in all: unit 2 holds 5, unit 0 holds 3, unit 3 holds 2; unit 1 has none.
        let rows = [
            row(0, Some(3.0)),
            row(1, None),
            row(2, Some(5.0)),
            row(3, Some(2.0)),
        ];
        let ids = |share| {
            units_holding_energy_share(&rows, share).map(|s| s.into_iter().collect::<Vec<_>>())
        };
        assert_eq!(ids(1.0), None);
        assert_eq!(ids(0.5), Some(vec![2]));
        // The unit that crosses the share is among them.
        assert_eq!(ids(0.6), Some(vec![0, 2]));
        assert_eq!(ids(0.8), Some(vec![0, 2]));
        assert_eq!(ids(0.81), Some(vec![0, 2, 3]));
        assert_eq!(ids(0.0), Some(vec![]));
        assert_eq!(
            units_holding_energy_share(&[], 0.9),
            Some(Default::default())
        );
    }

    /// A unit is checked over the round's values for its kernels in the round beyond
    /// alone only where the excess is both 5 % of alone and 20 us: BLOOM's fused AdamW
    /// (1519 us alone, 2027 in the round, session 45) is; a 4 us unit 30 % slower, or a
    /// 10 ms one 19 us slower, is not.
    #[test]
    fn a_unit_is_slower_in_the_round_by_five_percent_and_twenty_microseconds() {
        let k = |round_us, alone_us| RoundUnitKernels {
            round_us,
            alone_us,
            ..Default::default()
        };
        assert!(k(2026.8, 1519.0).slower_in_round());
        assert!(!k(5.2, 4.0).slower_in_round());
        assert!(!k(10_019.0, 10_000.0).slower_in_round());
        assert!(!k(1000.0, 1519.0).slower_in_round());
        assert!(k(420.0, 400.0).slower_in_round());
    }

    #[test]
    fn each_units_kernels_over_several_rounds_are_their_mean() {
        let k = |unit, round_us, alone_us| RoundUnitKernels {
            unit,
            round_us,
            alone_us,
            ..Default::default()
        };
        // Unit 3 told apart in both rounds, unit 1 in the first only, unit 7 in the second.
        let rounds = vec![
            vec![k(3, 10.0, 8.0), k(1, 5.0, 5.0)],
            vec![k(7, 2.0, 1.0), k(3, 12.0, 8.0)],
            vec![],
        ];
        let m = round_unit_kernels_mean(&rounds);
        assert_eq!(m, vec![k(3, 11.0, 8.0), k(1, 5.0, 5.0), k(7, 2.0, 1.0)]);
        assert!(round_unit_kernels_mean(&[]).is_empty());
        // Busy times are averaged where every round that told the unit apart has them.
        let busy = |unit, round_busy, alone_busy| RoundUnitKernels {
            round_busy_us: Some(round_busy),
            alone_busy_us: Some(alone_busy),
            ..k(unit, 20.0, 18.0)
        };
        let m = round_unit_kernels_mean(&[
            vec![busy(3, 4.0, 3.0), busy(1, 5.0, 5.0)],
            vec![busy(3, 6.0, 3.0), k(1, 20.0, 18.0)],
        ]);
        assert_eq!(
            (m[0].round_busy_us, m[0].alone_busy_us),
            (Some(5.0), Some(3.0))
        );
        assert_eq!((m[1].round_busy_us, m[1].alone_busy_us), (None, None));
    }

    #[test]
    fn a_cycle_by_difference_leaves_the_copy_out() {
        // A copy that takes 1400 us in the launch (1300 alone), 16 cycles of 650 us: the
        // launch of all 16 and the launch of one differ by 15 cycles whatever the copy.
        let long = Stats::of(&[1400.0 + 16.0 * 650.0 - 3.0, 1400.0 + 16.0 * 650.0 + 3.0]);
        let short = Stats::of(&[1400.0 + 650.0 - 1.0, 1400.0 + 650.0 + 1.0]);
        let (c, u) = cycle_by_difference(&long, &short, 16).unwrap();
        assert!((c - 650.0).abs() < 1e-9, "{c}");
        assert!((u - long.sem().hypot(short.sem()) / 15.0).abs() < 1e-12);
        // Taking the copy's time alone off would give (10 800 − 1300) / 16 = 656.25 us: the
        // 100 us the copy took beyond it, over 16 cycles.
        // One cycle leaves nothing to difference.
        assert_eq!(cycle_by_difference(&long, &short, 1), None);
        assert_eq!(cycle_by_difference(&long, &short, 0), None);
    }

    #[test]
    fn the_cap_holds_a_window_down_where_its_clock_stayed_under_the_top() {
        let at = |bits: u64, clock: Option<f64>| EnergyWindow {
            clock_event_bits: bits,
            sm_clock_mhz: clock.map(|c| Stats::of(&[c, c, c])),
            ..w(30.0, 0.1, 10)
        };
        let top = Some(1980.0);
        // The reason, the clock well under the top: held down.
        assert!(held_down_by_cap(&at(0x4, Some(1770.0)), top));
        // The reason at 1965 MHz (one step under 1980): the clock the work asks for.
        assert!(!held_down_by_cap(&at(0x4, Some(1965.0)), top));
        // No reason: never, whatever the clock (idle, a light kernel).
        assert!(!held_down_by_cap(&at(0, Some(1410.0)), top));
        // Another reason (hardware slowdown) is not the cap.
        assert!(!held_down_by_cap(&at(0x8, Some(1410.0)), top));
        // Without a clock, or a top to set it against, the reason decides.
        assert!(held_down_by_cap(&at(0x4, None), top));
        assert!(held_down_by_cap(&at(0x4, Some(1965.0)), None));
    }

    #[test]
    fn a_launch_from_batches_takes_those_retired_inside_the_windows() {
        let span = |a: i64, b: i64| EnergyWindow {
            start_unix_ms: a,
            end_unix_ms: b,
            ..w(30.0, 0.1, 10)
        };
        // Two counted windows, 1000-1100 and 1100-1200 ms.
        let windows = [span(1000, 1100), span(1100, 1200)];
        let b = |at: i64, us: f64| BatchTime {
            retired_unix_ms: at,
            launch_us: us,
        };
        let batches = [
            // Before the windows (the clock still coming back): left out.
            b(990, 900.0),
            b(1000, 900.0),
            // Inside: one after the host fell behind carries the GPU's wait.
            b(1010, 300.0),
            b(1050, 302.0),
            b(1100, 301.0),
            b(1150, 700.0),
            b(1200, 300.0),
            // After the last window ended (the queue draining): left out.
            b(1230, 300.0),
        ];
        let got = launch_from_batches(&batches, &windows, 3).unwrap();
        assert_eq!(got.n, 5);
        // The median stands where the mean would carry the wait.
        assert_eq!(got.p50, 301.0);
        assert!(got.mean > 380.0, "{}", got.mean);
        // Too few batches inside, or no windows: nothing to take.
        assert_eq!(launch_from_batches(&batches, &windows, 6), None);
        assert_eq!(launch_from_batches(&batches, &[], 1), None);
    }

    fn w(e: f64, d: f64, n: u64) -> EnergyWindow {
        EnergyWindow {
            label: "g".into(),
            start: String::new(),
            end: String::new(),
            start_unix_ms: 0,
            end_unix_ms: 0,
            duration_s: d,
            energy_j: e,
            avg_power_w: e / d,
            power_w: Stats::default(),
            ticks: 11,
            completed: n,
            temperature_c: None,
            sm_clock_mhz: None,
            clock_event_bits: 0,
            settling: false,
            ticks_seen_within_ms: None,
            seen_duration_s: None,
            series_period_s: None,
            series_ticks_ms: None,
        }
    }

    #[test]
    fn a_units_energy_at_a_duty_cycle_takes_the_spins_energy_off() {
        // A launch of 2 ms: the unit's graph of 1 ms (10 invocations), then a 1 ms spin
        // drawing 150 W. Windows at 450 and 460 W: the launch's 0.9 and 0.92 J, less the
        // spin's 0.15 J, over 10 invocations.
        let ws = [w(45.0, 0.1, 50), w(46.0, 0.1, 50)];
        let spin = spin_besides(1e-3, 150.0);
        let s = energy_summary_besides(&ws, 3, Some(100.0), 2e-3, spin, 10.0);
        assert_eq!(s.windows, vec![3, 4]);
        assert!(
            (s.per_item_j.mean - 0.0760).abs() < 1e-12,
            "{:?}",
            s.per_item_j
        );
        assert!((s.per_item_j.min - 0.0750).abs() < 1e-12);
        // Above idle: less 100 W over the unit's own 0.1 ms per invocation.
        assert!((s.per_item_above_idle_j.mean - 0.0660).abs() < 1e-12);
        assert!((s.avg_power_w.mean - 455.0).abs() < 1e-9);
        // A spin of no time (or less) takes nothing off: nothing negative.
        let s = energy_summary_besides(&ws, 0, None, 1e-3, spin_besides(-1e-3, 150.0), 10.0);
        assert!((s.per_item_j.mean - 0.0455).abs() < 1e-12);
    }

    #[test]
    fn a_unit_at_the_cap_is_timed_at_its_duty_cycle_and_an_older_spin_is_mended() {
        // Qwen2's training step graph, session 32, unit 46 (aten::mm, 3 invocations a
        // launch): 457.2 us alone at the cap, a launch of 1371.46 us; at a third, launches
        // of 3895.3 us with a spin asked for 2742.92 us: 384.2 us an invocation.
        let duty = DutyEnergy {
            unit_share: 1.0 / 3.0,
            launch_us: 3895.3,
            unit_launch_us: 1371.46,
            spin_w: 137.17,
            capped_windows: 1,
            ..Default::default()
        };
        assert!((duty.spin_time_us() - 2742.92).abs() < 1e-9);
        assert!((duty.time_shift_us(3) - (3895.3 - 2742.92 - 1371.46) / 3.0).abs() < 1e-9);
        let unit = UnitResult {
            status: "ok".into(),
            unroll: 3,
            invocations: 3,
            time_us: Some(Stats::of(&[457.0, 457.4])),
            energy: Some(EnergySummary {
                per_item_j: Stats::of(&[0.30, 0.31]),
                per_item_above_idle_j: Stats::of(&[0.25, 0.26]),
                ..Default::default()
            }),
            energy_at_duty: Some(duty.clone()),
            ..Default::default()
        };
        let at = unit.time_at_duty().unwrap();
        assert!(
            (at.mean - (457.2 - 73.02666666666666)).abs() < 1e-9,
            "{at:?}"
        );
        assert_eq!(at.std, unit.time_us.as_ref().unwrap().std);
        assert_eq!(unit.time_at_model_clock(), Some(at));
        // Asked for (its windows alone under the cap) or none: its time alone.
        let mut asked = unit.clone();
        asked.energy_at_duty.as_mut().unwrap().capped_windows = 0;
        assert_eq!(asked.time_at_duty(), None);
        assert_eq!(asked.time_at_model_clock(), asked.time_us);
        // Before session 32 the launch less the unit alone, 2523.84 us, was taken off as
        // the spin: 219.08 us of spin at 137.17 W kept, per launch of 3 invocations.
        let mut r = Results {
            idle: Some(EnergyWindow {
                avg_power_w: 100.0,
                ..Default::default()
            }),
            units: vec![unit],
            isolated: Some(IsolatedSummary {
                predicted_energy_j: Some(1.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let kept = 137.17 * 219.08e-6 / 3.0;
        let (n, j) = r.mend_duty_spin().unwrap();
        assert_eq!(n, 1);
        assert!((j - 3.0 * kept).abs() < 1e-12, "{j}");
        let e = r.units[0].energy.as_ref().unwrap();
        assert!((e.per_item_j.mean - (0.305 - kept)).abs() < 1e-12);
        assert!((e.per_item_above_idle_j.mean - (0.255 - 37.17 * 219.08e-6 / 3.0)).abs() < 1e-12);
        assert!(
            (r.isolated.as_ref().unwrap().predicted_energy_j.unwrap() - (1.0 - j)).abs() < 1e-12
        );
        assert_eq!(
            r.units[0].energy_at_duty.as_ref().unwrap().spin_us,
            Some(duty.spin_time_us())
        );
        // Mended once: a second reading, or results kc wrote since, are left as they are.
        assert_eq!(r.mend_duty_spin(), None);
    }

    #[test]
    fn two_duty_shares_read_the_spins_excess_power() {
        // A unit of 1 ms a launch (2 invocations), truly 0.4 J an invocation. Its spin
        // draws 8 W more beside it than alone: 2 ms of spin at a third adds 16 mJ a
        // launch, 4 ms at a fifth 32 mJ.
        let unit = |other: Option<DutyAtShare>, capped: usize| UnitResult {
            status: "ok".into(),
            unroll: 2,
            energy: Some(EnergySummary {
                per_item_j: Stats::of(&[0.408]),
                ..Default::default()
            }),
            energy_at_duty: Some(DutyEnergy {
                unit_share: 1.0 / 3.0,
                unit_launch_us: 1000.0,
                spin_us: Some(2000.0),
                duty_capped_windows: capped,
                other_share: other.map(Box::new),
                ..Default::default()
            }),
            ..Default::default()
        };
        let fifth = DutyAtShare {
            unit_share: 0.2,
            spin_us: 4000.0,
            per_item_j: 0.416,
            ..Default::default()
        };
        let w = unit(Some(fifth.clone()), 0).duty_spin_excess_w().unwrap();
        assert!((w - 8.0).abs() < 1e-9, "{w}");
        // Not without the other share, nor where either was held down by the cap.
        assert_eq!(unit(None, 0).duty_spin_excess_w(), None);
        assert_eq!(unit(Some(fifth.clone()), 1).duty_spin_excess_w(), None);
        let capped = DutyAtShare {
            duty_capped_windows: 2,
            ..fifth
        };
        assert_eq!(unit(Some(capped), 0).duty_spin_excess_w(), None);
    }

    #[test]
    fn a_restoring_launchs_copy_is_taken_off_and_adds_to_a_spin() {
        // A launch of 1.1 ms: a copy of 0.1 ms drawing 300 W (0.03 J), then 10 invocations
        // of the unit. A window at 400 W: the launch's 0.44 J less the copy's, per
        // invocation; above idle, less 100 W over the unit's own 1 ms.
        let copy = Besides { j: 0.03, s: 1e-4 };
        let s = energy_summary_besides(&[w(40.0, 0.1, 90)], 0, Some(100.0), 1.1e-3, copy, 10.0);
        assert!(
            (s.per_item_j.mean - 0.041).abs() < 1e-12,
            "{:?}",
            s.per_item_j
        );
        assert!((s.per_item_above_idle_j.mean - 0.031).abs() < 1e-12);
        // At a duty cycle the spin comes on top: 2.2 ms launches, the copy and unit 1.1 ms.
        let both = spin_besides(1.1e-3, 150.0).and(copy);
        assert!((both.j - (0.165 + 0.03)).abs() < 1e-12);
        assert!((both.s - 1.2e-3).abs() < 1e-15);
        let d = energy_summary_besides(&[w(60.0, 0.1, 45)], 0, Some(100.0), 2.2e-3, both, 10.0);
        // 600 W × 2.2 ms = 1.32 J, less 0.195 J, over 10.
        assert!((d.per_item_j.mean - 0.1125).abs() < 1e-12);
        assert!((d.per_item_above_idle_j.mean - 0.1025).abs() < 1e-12);
    }

    #[test]
    fn energy_per_item_and_above_idle() {
        // Items of 10 ms run back to back: 100 in a 1 s window.
        let s = energy_summary(
            &[w(400.0, 1.0, 100), w(420.0, 1.05, 105)],
            3,
            Some(100.0),
            0.01,
        );
        assert_eq!(s.windows, vec![3, 4]);
        assert!((s.per_item_j.mean - 4.0).abs() < 1e-12);
        // (400 - 100) / 100 = 3 and (420 - 105) / 105 = 3.
        assert!((s.per_item_above_idle_j.mean - 3.0).abs() < 1e-12);
        // Unrolled units: a launch of 100 invocations takes 0.1 s, an invocation 1 ms.
        let u = energy_summary(&[w(10.0, 1.0, 10)], 0, None, 0.001);
        assert!((u.per_item_j.mean - 0.01).abs() < 1e-12);
    }

    #[test]
    fn completions_check_the_timed_duration_when_the_count_is_fine_enough() {
        // 105 launches of 10 ms counted in 1 s (2 ms batches): 5 % more than the time implies.
        let m = completion_mismatch(&[w(400.0, 1.0, 105)], 0.01, 0.002).unwrap();
        assert!((m - 0.05).abs() < 1e-12, "{m}");
        // Three one-tick windows counted in 20 ms batches cannot tell (the grain is 7 %).
        let ticks = [w(40.0, 0.1, 10), w(40.0, 0.1, 10), w(40.0, 0.1, 10)];
        assert_eq!(completion_mismatch(&ticks, 0.01, 0.02), None);
        assert!(completion_mismatch(&ticks, 0.01, 0.002).is_some());
    }

    #[test]
    fn values_ran_away_past_twenty_points_of_zeros_or_one_of_non_finite() {
        let v = |z: (f64, f64), n: (f64, f64)| UnitValues {
            sampled: 1000,
            zero_before_pct: z.0,
            zero_after_pct: z.1,
            nonfinite_before_pct: n.0,
            nonfinite_after_pct: n.1,
        };
        // A fill of zeros or a loss gradient's zeros stand before and after: not a runaway.
        assert!(!v((87.5, 87.5), (0.0, 0.0)).ran_away());
        assert!(!v((25.0, 44.9), (0.0, 0.9)).ran_away());
        assert!(v((25.0, 50.0), (0.0, 0.0)).ran_away());
        assert!(v((4.0, 4.0), (0.1, 27.1)).ran_away());
        // Values that came back finite are no runaway either.
        assert!(!v((0.0, 0.0), (19.0, 18.0)).ran_away());
        // Results written before the census existed read without it.
        let old = serde_json::to_string(&TransitionsSummary::default()).unwrap();
        assert!(!old.contains("round_values"), "{old}");
        let t: TransitionsSummary = serde_json::from_str(&old).unwrap();
        assert_eq!(t.round_values, None);
    }

    #[test]
    fn a_round_without_recorded_switches_switched_at_every_unit() {
        // Results of kc before lead-ins record no switches: one per unit of the round.
        let old = r#"{"total": 9, "covered": 0, "pairs": 3, "pairs_measured": 0, "measured": [], "round_units": 5}"#;
        let t: TransitionsSummary = serde_json::from_str(old).unwrap();
        assert_eq!((t.round_lead_ins, t.round_switches), (0, 0));
        assert_eq!(t.switches_per_cycle(), 5);
        let t = TransitionsSummary {
            round_units: 5,
            round_lead_ins: 2,
            round_switches: 7,
            ..Default::default()
        };
        assert_eq!(t.switches_per_cycle(), 7);
    }
}
