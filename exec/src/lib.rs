//! `kc exec`: replays a plan on the GPU, as ONE CUDA graph (every step on the plan's
//! streams with its cross-stream waits) or unit by unit in isolation (each unit unrolled
//! into a graph), timing with CUDA events and measuring energy with NVML over windows
//! aligned to the energy counter's ticks.
//!
//! The parts that need no GPU (statistics, energy windows, the capture program, the
//! results schema) are plain modules tested everywhere; the GPU back end is the `cuda`
//! feature. Invariant: units the back end cannot execute (tier 3 until it lands,
//! collectives, unreplayable units) are never silently dropped: they are listed as not
//! executed, with their traced time carried separately.

pub mod crash;
pub mod energy;
pub mod rendezvous;
pub mod torch_blas;
// The results schema lives in kc-core (reports read it without the executor).
pub use kc_core::results;

#[cfg(feature = "cuda")]
pub mod backends;
#[cfg(feature = "cuda")]
pub mod device;
#[cfg(feature = "cuda")]
mod procedure;

use kc_core::plan::types::{Plan, PlanUnit};
pub use kc_core::results::Results;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("this kc was built without the GPU executor; rebuild with `cargo build --release --features cuda`")]
    NotBuiltWithCuda,
    #[error("no CUDA driver found (libcuda.so could not be loaded): run kc exec on a machine with an NVIDIA GPU and driver")]
    NoDriver,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    #[error(
        "cuBLAS/cuBLASLt libraries not found: put the CUDA 13 library directory on LD_LIBRARY_PATH"
    )]
    NoCublas,
    #[error("{what} failed: {code}")]
    Cuda { what: String, code: String },
    #[error("{what} failed: {status}")]
    Cublas { what: String, status: String },
    /// A kernel of this unit broke the CUDA context (a device-side assertion, an illegal
    /// address): every later call of the process fails, so the run stops and names it.
    #[error("unit {unit} ({label}) broke the CUDA context {during} ({cause}); nothing more can run in this process. Its kernels read values the model did not hold there (indices, offsets or sizes drawn, not recorded, or computed from values that were not the model's) or addresses outside their buffers")]
    ContextLost {
        unit: u32,
        label: String,
        /// When: "in its first eager run", "when step 812 ran over the memory image".
        during: String,
        cause: String,
    },
    #[error("out of device memory: the plan needs {} MiB, the GPU has {} MiB free", needed >> 20, free >> 20)]
    OutOfMemory { needed: u64, free: u64 },
    #[error(
        "the plan holds {plan} ranks, the job has WORLD_SIZE={world}: one process per traced rank"
    )]
    WorldMismatch { plan: usize, world: u32 },
    #[error("the plan has no rank {rank} (ranks: {ranks:?})")]
    NoSuchRank { rank: u32, ranks: Vec<u32> },
    #[error("this rank's GPU is device {ordinal} (LOCAL_RANK), but the driver sees {count}")]
    NoSuchDevice { ordinal: u32, count: i32 },
    #[error("none of rank {rank}'s {steps} steps is executed here ({why}): nothing to replay")]
    NothingToReplay {
        rank: u32,
        steps: usize,
        why: &'static str,
    },
    #[error("unit {unit} ({label}) is not executed by this build (no back end for tier {tier})")]
    NoBackend {
        unit: u32,
        label: String,
        tier: &'static str,
    },
    #[error("unit {unit}: {what} was not prepared before it was enqueued")]
    NotPrepared { unit: u32, what: &'static str },
    #[error("compiled kernel {name} was built for sm_{built} and this GPU is sm_{gpu}: recompile the model on this GPU (its Inductor cache) to replay it here")]
    WrongArchitecture { name: String, built: u32, gpu: u32 },
    #[error("{what}: {value} does not fit the library's argument")]
    OutOfRange { what: &'static str, value: String },
    #[error("the job's NCCL id has {0} bytes, not 128")]
    BadNcclId(usize),
    #[error("NCCL could not be loaded: {0}")]
    NoNccl(String),
    #[error("CUPTI: {0}")]
    Cupti(String),
    #[error("no snapshot of the memory image to restore")]
    NoSnapshot,
    #[error(
        "a copy of {bytes} bytes at offset {offset} lies outside the {image}-byte memory image"
    )]
    OutsideImage { offset: u64, bytes: u64, image: u64 },
    #[error("the spin kernel is not loaded")]
    NoSpin,
    #[error("the touch kernel is not loaded")]
    NoTouch,
    #[error("the code-evicting kernel is not loaded")]
    NoCodeEvict,
    #[error("the shared-memory kernel is not loaded")]
    NoCarveout,
    #[error("the scratch the address translation caches are turned over with is not allocated")]
    NoTlbScratch,
    #[error("{backend} began no capture")]
    NoCapture { backend: &'static str },
    #[error("cuBLASLt found no algorithm for this epilogue GEMM")]
    NoLtAlgorithm,
    /// The plan accepted a unit this executor cannot run: a defect of the plan's verdict
    /// (`kc_core::plan::calls`), reported as a failure, never as "not executed".
    #[error("unit {unit}: the plan accepted a call this executor cannot make: {why}")]
    PlanDefect { unit: u32, why: String },
    #[error("libtorch aten::{op}: {message}")]
    Torch { op: String, message: String },
    #[error(transparent)]
    Plan(#[from] kc_core::plan::PlanError),
    #[error("{0}")]
    Job(#[from] rendezvous::RendezvousError),
    #[error("{path}: cannot write: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub use kc_core::results::CachePolicy;

/// Windows an item gets at least when a target may end its series early: two give a
/// spread (their variance is unbiased, if noisy, and the sum over a model's units averages
/// it). On session 14's thirteen runs, stopping at two instead of three where the target
/// allowed it moved no model's summed unit energy by more than 0.24 % and its standard
/// uncertainty by at most 0.04 points, with 30 % fewer windows
/// (`docs/results/h200-2026-11-26-session14/two_windows.py`; docs/MEASUREMENTS.md, session 15).
pub const MIN_WINDOWS_WITH_TARGET: usize = 2;

/// A single energy window's relative spread that kc takes as known: a unit alone whose
/// energy target (the relative standard error its share of the model's traced time asks,
/// [`ExecOptions::energy_target_rel_sem`] over the root of that share) is at least this
/// needs no second window to meet it, and ends its series after one. On session 36's nine
/// runs the relative standard deviation of one window over the units measured over two
/// or more was a median 0.7-1.3 %, root mean square 1.1-2.8 %; a report gives a unit
/// measured over one window the run's own pooled spread. On those runs 4-277 of 13-327
/// units (most of a 100-unit model's) had such targets, each a tick of about 100 ms.
pub const ONE_WINDOW_REL_SD: f64 = 0.03;

#[derive(Clone, Debug)]
pub struct ExecOptions {
    pub isolated: bool,
    pub runs: usize,
    /// Graph mode: stop timing replays once this much of them (sized by the warm-up) is
    /// timed, if before `runs`, but never under 20; `None`: always `runs`.
    pub timed_seconds: Option<f64>,
    pub warmup: usize,
    pub cache: CachePolicy,
    /// Minimum energy window, seconds; `None` disables energy.
    pub energy_window_s: Option<f64>,
    /// Energy windows per measured item (graph, or unit in isolated mode), at most; the
    /// windows of an item are contiguous.
    pub energy_repeats: usize,
    /// End an item's series after [`MIN_WINDOWS_WITH_TARGET`] once its windows' powers
    /// agree to this relative standard error (0: always `energy_repeats` windows).
    pub energy_target_rel_sem: f64,
    /// A unit alone whose energy target is at least this ends its series after one window
    /// ([`ONE_WINDOW_REL_SD`] by default; 0: every unit gets at least
    /// [`MIN_WINDOWS_WITH_TARGET`]).
    pub one_window_rel_sd: f64,
    /// GPU time one isolated graph launch should cover, nanoseconds.
    pub unroll_target_ns: f64,
    pub max_unroll: u32,
    /// Minimum total timed GPU time per isolated unit, seconds.
    pub min_unit_time_s: f64,
    /// Isolated mode: measure the terms of the prediction from parts after the units (the
    /// round of every unit, one graph launch's overhead).
    pub parts: bool,
    /// Isolated mode, with `parts`: also rounds of 2, 4, 8, ... units (a diagnostic: what a
    /// switch costs by how far back it reaches).
    pub round_sizes: bool,
    /// Isolated mode, with `parts`: the round runs the model's steps before a unit's first
    /// run (this many; 0: none) ahead of it where its last entries are not those steps
    /// (lead-ins), so that the unit finds in L2 what the model leaves there
    /// ([`kc_core::plan::schedule::round_order`]). 1 by default; more is a diagnostic.
    pub round_lead_in: usize,
    /// Isolated mode, with `parts`, a diagnostic: keep only the round's lead-ins that are
    /// these model steps (`None`: every lead-in `round_lead_in` gives). Asks which lead-in
    /// changes a later unit's kernels in the round.
    pub round_lead_ins_only: Option<Vec<u32>>,
    /// Isolated mode, with `parts`, a diagnostic: how many rounds, each at other runs of
    /// every unit, spread over its runs ([`kc_core::plan::schedule::RoundAt`]); the
    /// per-switch figures and each unit's kernels in the round are their mean. 1 (the
    /// default) counts each unit's first run only.
    pub round_runs: usize,
    /// Isolated mode, with `parts`: time the round with every launch starting from the
    /// model's values (a copy of the image's snapshot at the head of each launch, its own
    /// time and energy taken off) where the snapshot is held; `false` times the round as
    /// it runs, restoring only where it ran its values away. On T5's graph the round's
    /// kernels ran 7.2 % over kc's graph as they ran and 2.1 % restoring (session 17).
    pub round_restoring: bool,
    /// Isolated mode, with `parts`: also the round's own energy (its windows, and a
    /// restoring round's copy's), which only the report's diagnostic pricing of the
    /// switches at the round takes (`switch_energy_from_round`); about 2 s of windows on a
    /// training step, so measured on request.
    pub round_energy: bool,
    /// Isolated mode: a unit whose energy windows alone saw the power cap is measured
    /// again at a duty cycle, a spin after each launch ([`kc_core::results::DutyEnergy`]).
    pub duty_energy: bool,
    /// Whether an energy series keeps its full queue of launches (32 ms) past the tick that
    /// ends it (a diagnostic, sessions 1-54's way); by default its last window queues work
    /// only to a margin past that tick (`energy::series_end_s`), so that the next unit's
    /// changeover does not wait for the rest.
    pub energy_full_queue: bool,
    /// Isolated mode, a diagnostic: every unit's energy is measured at a duty cycle (a
    /// spin after each launch), not only a unit whose windows alone saw the power cap; the
    /// back-to-back figure is kept beside it (`DutyEnergy::alone_per_item_j`).
    pub duty_energy_all: bool,
    /// Isolated mode, a diagnostic: a unit measured at a duty cycle is measured at both of
    /// its shares (a third and a fifth), the one that is not its answer kept beside it
    /// (`DutyEnergy::other_share`): where the two part, the spin's power taken off is not
    /// what the spin drew between the unit's launches.
    pub duty_shares_both: bool,
    /// Isolated mode, context cache, where energy is measured: the units that hold the
    /// first `lead_in_share` of the units' energy measured once more with the model's steps
    /// leading up to each of their invocations (back to the nearest of the 4 before it that
    /// shares a place with it) ahead of them, less those steps alone
    /// ([`kc_core::results::UnitAfterLeadIn`]); the prediction takes their energy in place
    /// of alone (kc's default since session 35).
    pub lead_in_units: bool,
    /// With `lead_in_units`: only the units that hold the first this share of the units'
    /// summed energy are measured after their lead-ins
    /// ([`kc_core::results::units_holding_energy_share`]); 1 measures every unit.
    pub lead_in_share: f64,
    /// Isolated mode, context cache, a diagnostic: every unit measured again with every
    /// launch from the model's values at its places, as a unit whose values ran away is
    /// (with `unit_restoring`); the prediction takes that measurement.
    pub unit_restoring_all: bool,
    /// Isolated mode, context cache, a diagnostic: the program of every unit measured
    /// (one replay's steps in the plan's order on one stream) whole, and without each kind
    /// of unit ([`kc_core::results::KindsLeftOut`]); the prediction does not take it.
    pub kinds_left_out: bool,
    /// Isolated mode, a diagnostic: each unit measured after its lead-ins has both its
    /// launches recorded with CUPTI as well ([`kc_core::results::LeadInKernels`]), so that
    /// the launches' difference is told apart into the unit's kernels, the lead-ins'
    /// kernels and the gaps; the prediction does not take it.
    pub lead_in_kernels: bool,
    /// Whether the units after their lead-ins read their integer and boolean bound reads
    /// from the result their lead-in computed (kc's graph's way) rather than their
    /// stand-ins, as alone (a diagnostic).
    pub lead_in_reads_from_producers: bool,
    /// Isolated mode, a diagnostic: each unit recorded by step (CUPTI) is recorded again
    /// from a launch of its steps starting at its second
    /// ([`kc_core::results::fidelity::UnitLaunches::by_step_rotated`]); the prediction
    /// does not take it.
    pub by_step_rotated: bool,
    /// Isolated mode, context cache, with `verify` (on by default): each unit is recorded
    /// (CUPTI) once more in the model's cache state
    /// ([`kc_core::results::fidelity::UnitLaunches::in_model_cache`]); the prediction does
    /// not take it.
    pub alone_in_model_cache: bool,
    /// How that record counts a read's distance from its last touch (summed by default;
    /// distinct bytes, a diagnostic: session 52's call 2 found it 0.1-0.6 points further
    /// from kc's graph on four models of four).
    pub model_cache_distance: kc_core::results::fidelity::ReuseDistance,
    /// Whether that record touches, just before each invocation, the operands a back end
    /// holds outside the image that the model leaves in L2 (by default), or leaves them
    /// all evicted (session 51's way).
    pub model_cache_touches_held: bool,
    /// Whether those held operands are touched as written (each sector's word stored back
    /// unchanged), as their producer left them, instead of as read (a diagnostic).
    pub model_cache_held_written: bool,
    /// Where given, those held operands are touched from these SMs only (`%smid` in
    /// `LO..HI`; a diagnostic).
    pub model_cache_held_on_sms: Option<(u32, u32)>,
    /// What that record runs between the turnover of L2 and the unit: by default the
    /// model's steps leading up to each invocation (as the lead-in pass takes them), then a
    /// marker kernel, their integer and boolean reads on the lead-ins' results where no
    /// lead-in writes integers in place.
    pub model_cache_lead_ins: kc_core::results::fidelity::RecordLeadIns,
    /// Whether that record ends each invocation's lead-up with a touch of one sector of
    /// its scratch, so that the kernel just before the unit is a small one (a diagnostic).
    pub model_cache_small_predecessor: bool,
    /// Before which invocations that record evicts the unit's code (a kernel of long
    /// straight-line code on every SM, `device::code_evict`, then L2 turned over): by
    /// default where the model last ran it more than L2 of bytes before.
    pub model_cache_code: kc_core::results::fidelity::CodeCache,
    /// Whether that record starts each invocation's lead-up with a read of one word in
    /// each page of a scratch of 16 GiB, so that the GPU's address translation caches hold
    /// other pages (a diagnostic).
    pub model_cache_tlb_evicted: bool,
    /// Whether that record ends each invocation's lead-up with a kernel that takes all the
    /// shared memory a block may have on every SM, so that the unit starts after an SM
    /// whose L1 split a GEMM left (a diagnostic).
    pub model_cache_smem_predecessor: bool,
    /// Isolated mode, context cache: a unit whose repeats alone ran its values away (to
    /// zeros or non-finite values) is measured again with every launch starting from the
    /// model's values at its places ([`kc_core::results::UnitRestoring`]), where the
    /// image's snapshot is held; `false` keeps the measurement as it ran.
    pub unit_restoring: bool,
    /// Isolated mode, context cache, with `verify`: a unit whose launch reads at one
    /// invocation what another wrote is recorded twice more, each invocation after a copy
    /// of its reads the launch writes, from its own values and from the model's; where the
    /// model's values change its kernels it is measured so
    /// ([`kc_core::results::EachInvocation`]). `false` keeps every such unit as it ran.
    pub each_invocation_values: bool,
    /// With `each_invocation_values`, a diagnostic: the control's own values kept
    /// beforehand from a launch as it runs, so that its copies read them from memory as the
    /// model's copies read the snapshot (`EachInvocation::cold_control`), where the
    /// launch's reads fit in a quarter of the free memory.
    pub each_invocation_cold_control: bool,
    /// Isolated mode, with `verify` and the image's snapshot: a unit of the round whose
    /// places held non-finite values after the round's launches, where the model's values
    /// at them are finite, or whose kernels ran slower in the round than alone
    /// ([`kc_core::results::RoundUnitKernels::slower_in_round`]), is recorded alone over
    /// both; where they took its kernels another time, the round's kernels for it are not
    /// the model's and it is taken alone ([`kc_core::results::RoundValues`]); and a unit
    /// whose kernels in each launch's first cycle of a restoring round and over all its
    /// cycles differ, where the round ran its values away, is taken at its first cycles'
    /// ([`kc_core::results::RoundFirstCycle`]). `false` keeps the round's kernels as
    /// recorded, and records no first cycles.
    pub round_values_check: bool,
    /// Isolated mode, a diagnostic: the pairs' and the round's float reads of a result
    /// another step allocates read their stand-ins too
    /// ([`crate::backends::SteeringReads::AllAsAlone`]).
    pub round_bound_reads_as_alone: bool,
    /// Isolated mode, context cache: what each unit reads at its places: the values its
    /// steps read in the model (the default), or what one pass of every step left there.
    pub unit_values: kc_core::results::UnitValuesFrom,
    /// Isolated mode, with `parts`: the round's cycles per launch (a diagnostic; `None`: about
    /// 0.5 ms of units per launch, or ten times a restoring round's copy).
    pub round_cycles: Option<u32>,
    /// Isolated mode, with `parts`: also the N most frequent transitions between different
    /// units as pairs, each alternated alone (0: none).
    pub transitions: usize,
    pub progress: bool,
    /// The rank to replay when the plan holds several (one GPU replays one rank's work);
    /// `None` picks the lowest.
    pub rank: Option<u32>,
    /// Path the plan was read from, for the results' identity.
    pub plan_path: String,
    pub plan_crc32: u32,
    /// Graph mode over the plan's memory image (when it has one); `false` gives every unit
    /// its own buffers, as plans without dataflow do (for comparison).
    pub dataflow: bool,
    /// Graph mode: record one more replay's kernels with CUPTI and measure them against
    /// the trace ([`fidelity`]).
    pub verify: bool,
    /// With `verify`: also write CUPTI's kernel records (JSON) to this path.
    pub kernels_out: Option<String>,
    /// Graph mode: one more replay, after the timed ones, inside a profiler range
    /// (`cuProfilerStart`/`cuProfilerStop`) for an external profiler started with
    /// `--profile-from-start off`; not timed.
    pub profile_replay: bool,
    /// This process is one rank of a job replaying every rank together (`kc exec --ranks`):
    /// it replays the plan's rank of this job rank on GPU `LOCAL_RANK`, with the job's
    /// collectives through NCCL.
    pub job: Option<rendezvous::RankEnv>,
    /// Handed the results so far before a step that replays the model in ways no unit did
    /// (an opt-in diagnostic of an isolated run), where a fault may end the process or
    /// its GPU context: the CLI writes them, so that a fault there loses only that step.
    pub checkpoint: Option<Checkpoint>,
}

/// The caller's writer of results part-way through a run ([`ExecOptions::checkpoint`]); the
/// results it is handed carry `unfinished`, what had not run yet.
#[derive(Clone)]
pub struct Checkpoint(pub std::sync::Arc<dyn Fn(&Results) + Send + Sync>);

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checkpoint")
    }
}

impl Default for ExecOptions {
    fn default() -> Self {
        Self {
            isolated: false,
            runs: 100,
            timed_seconds: None,
            warmup: 10,
            cache: CachePolicy::Warm,
            energy_window_s: Some(1.0),
            energy_repeats: 5,
            energy_target_rel_sem: 0.0,
            one_window_rel_sd: ONE_WINDOW_REL_SD,
            unroll_target_ns: 1_000_000.0,
            max_unroll: 1000,
            min_unit_time_s: 0.05,
            parts: true,
            round_sizes: false,
            round_lead_in: 1,
            round_lead_ins_only: None,
            round_runs: 1,
            round_restoring: true,
            round_energy: false,
            duty_energy: true,
            duty_energy_all: false,
            energy_full_queue: false,
            duty_shares_both: false,
            lead_in_units: true,
            lead_in_share: kc_core::results::LEAD_IN_SHARE,
            unit_restoring_all: false,
            kinds_left_out: false,
            lead_in_kernels: false,
            lead_in_reads_from_producers: false,
            by_step_rotated: false,
            alone_in_model_cache: true,
            model_cache_distance: kc_core::results::fidelity::ReuseDistance::Summed,
            model_cache_touches_held: true,
            model_cache_held_written: false,
            model_cache_held_on_sms: None,
            model_cache_lead_ins: kc_core::results::fidelity::RecordLeadIns::Producers,
            model_cache_small_predecessor: false,
            model_cache_code: kc_core::results::fidelity::CodeCache::Far,
            model_cache_tlb_evicted: false,
            model_cache_smem_predecessor: false,
            unit_restoring: true,
            each_invocation_values: true,
            each_invocation_cold_control: false,
            round_values_check: true,
            round_bound_reads_as_alone: false,
            unit_values: kc_core::results::UnitValuesFrom::AtSteps,
            round_cycles: None,
            transitions: 0,
            progress: false,
            rank: None,
            dataflow: true,
            verify: false,
            kernels_out: None,
            profile_replay: false,
            plan_path: String::new(),
            plan_crc32: 0,
            job: None,
            checkpoint: None,
        }
    }
}

impl ExecError {
    /// [`ExecError::ContextLost`] for `unit`, `during` what ("in its first eager run"),
    /// from the sticky error `cause`.
    pub fn context_lost(unit: &PlanUnit, during: impl Into<String>, cause: &ExecError) -> Self {
        ExecError::ContextLost {
            unit: unit.id,
            label: unit.label.clone(),
            during: during.into(),
            cause: cause.to_string(),
        }
    }

    /// Whether the error leaves the CUDA context unusable (sticky errors: every later call
    /// of the process returns them).
    pub fn breaks_context(&self) -> bool {
        const STICKY: [&str; 6] = [
            "CUDA_ERROR_ASSERT",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "CUDA_ERROR_LAUNCH_FAILED",
            "CUDA_ERROR_MISALIGNED_ADDRESS",
            "CUDA_ERROR_ILLEGAL_INSTRUCTION",
            "CUDA_ERROR_HARDWARE_STACK_ERROR",
        ];
        let text = self.to_string();
        STICKY.iter().any(|s| text.contains(s))
            // libtorch reports the same through its own error text.
            || text.contains("device-side assert")
            || text.contains("an illegal memory access")
    }
}

/// The rank a run replays: the one asked for, else the plan's lowest.
pub fn replay_rank(plan: &Plan, asked: Option<u32>) -> Result<u32, ExecError> {
    let ranks = plan.ranks();
    match asked {
        Some(r) if ranks.contains(&r) => Ok(r),
        Some(r) => Err(ExecError::NoSuchRank { rank: r, ranks }),
        None => Ok(ranks.first().copied().unwrap_or(0)),
    }
}

/// Invocations of each unit on one rank.
pub fn invocations_on_rank(plan: &Plan, rank: u32) -> Vec<u64> {
    let mut n = vec![0u64; plan.units.len()];
    for s in &plan.steps {
        if plan.streams[s.stream as usize].rank == rank {
            n[s.unit as usize] += 1;
        }
    }
    n
}

/// Why a unit is not executed, for the results.
pub fn not_executed_reason(unit: &PlanUnit) -> String {
    use kc_core::plan::types::PlanTier;
    match unit.tier {
        PlanTier::AtenOp => {
            "not executed: tier 3 (libtorch op replay) needs kc built with `--features torch`"
                .into()
        }
        PlanTier::Collective => {
            "not executed: collectives replay with every rank together (`kc exec --ranks all`)"
                .into()
        }
        PlanTier::NotReplayable => "not executed: unreplayable".into(),
        _ => "not executed".into(),
    }
}

/// Whether this build can execute and a GPU answers: the driver loads and reports a device.
pub fn gpu_present() -> bool {
    #[cfg(feature = "cuda")]
    {
        device::probe()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// Runs the plan on the GPU.
pub fn execute(plan: &Plan, opts: &ExecOptions) -> Result<Results, ExecError> {
    #[cfg(feature = "cuda")]
    {
        procedure::execute(plan, opts)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (plan, opts);
        Err(ExecError::NotBuiltWithCuda)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_cuda_errors_break_the_context_and_others_do_not() {
        let cuda = |code: &str| ExecError::Cuda {
            what: "cuCtxSynchronize".into(),
            code: code.into(),
        };
        assert!(cuda("CUDA_ERROR_ASSERT").breaks_context());
        assert!(cuda("CUDA_ERROR_ILLEGAL_ADDRESS").breaks_context());
        assert!(!cuda("CUDA_ERROR_OUT_OF_MEMORY").breaks_context());
        let torch = ExecError::Torch {
            op: "index_select".into(),
            message: "CUDA error: device-side assert triggered".into(),
        };
        assert!(torch.breaks_context());
        let lost = ExecError::ContextLost {
            unit: 58,
            label: "aten::_grouped_mm".into(),
            during: "in its first eager run".into(),
            cause: cuda("CUDA_ERROR_ASSERT").to_string(),
        };
        assert!(lost.to_string().starts_with(
            "unit 58 (aten::_grouped_mm) broke the CUDA context in its first eager run (cuCtxSynchronize failed: CUDA_ERROR_ASSERT)"
        ));
        // A context broken before stays broken: the error that says so is itself one.
        assert!(lost.breaks_context());
    }
}
