//! `kc exec PLAN [--isolated] [--runs N] [--cache context|warm|cold] [--energy-window S] [-o R.json]`.

use crate::exec::{self, CachePolicy, ExecOptions};
use crate::plan;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The plan `kc plan` wrote (.kcplan).
    pub plan: PathBuf,
    /// Time every unique unit alone (unrolled in a graph) instead of the whole graph.
    #[arg(long)]
    pub isolated: bool,
    /// Timed replays (graph mode) or the base for launches per unit (isolated).
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Untimed replays (graph mode) or launches (isolated) before timing starts.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Isolated cache state. context: each invocation at its place in the model's memory
    /// image (the default when the plan has one); warm: reuse one set of buffers; cold:
    /// rotate buffer copies spanning twice L2.
    #[arg(long, value_enum)]
    pub cache: Option<CachePolicy>,
    /// Minimum energy window in seconds, aligned to the NVML counter's ticks.
    #[arg(long, default_value_t = 1.0)]
    pub energy_window: f64,
    /// Energy windows per measured item (the same default as `kc run`), contiguous: each
    /// begins at the counter tick that ended the last. With --energy-target, at most.
    #[arg(long, default_value_t = 3)]
    pub energy_repeats: usize,
    /// End an item's windows early (after two) once its energy is known to this relative
    /// standard error, percent: the graph's in graph mode; in isolated mode the sum over
    /// units', each unit stopping at the target / √(its share of the traced time). A unit
    /// whose clock the power cap held down ends after that window (its duty cycle gives
    /// its energy). 0 always measures --energy-repeats windows.
    #[arg(long, default_value_t = 0.0)]
    pub energy_target: f64,
    /// Isolated mode, with --energy-target: a unit whose target is at least this, percent,
    /// ends after one window (one window's spread meets it). 0: at least two.
    #[arg(long, default_value_t = 100.0 * crate::exec::ONE_WINDOW_REL_SD)]
    pub one_window_spread: f64,
    /// Time only.
    #[arg(long)]
    pub no_energy: bool,
    /// Isolated mode: do not measure the terms of the prediction from parts (the round of
    /// every unit with its energy windows, and one graph launch's overhead: 0.9-1.1 s on
    /// the H100 models in docs/MEASUREMENTS.md, 0.8-1.0 s of it the round's windows).
    #[arg(long)]
    pub no_parts: bool,
    /// Isolated mode: also measure the N most frequent transitions between different
    /// units, each pair alternated alone in one graph (a diagnostic beside the round of
    /// every unit, which the prediction from parts uses). 0 measures none.
    #[arg(long, default_value_t = 0)]
    pub transitions: usize,
    /// Isolated mode: also measure rounds of 2, 4, 8, ... units (consecutive groups of the
    /// replay's order, each cycled alone), a diagnostic of what a switch costs by how far
    /// back it reaches; `kc report --switches-by-reach` prices switches with them.
    #[arg(long)]
    pub round_sizes: bool,
    /// Isolated mode: the round of every unit without lead-ins (each unit after whatever
    /// unit's first run precedes it, as kc did before session 16), for comparison. By
    /// default a unit whose step before it in the model is not the round's previous entry
    /// runs after that step, so it finds in L2 what the model leaves there for it.
    #[arg(long)]
    pub round_no_lead_in: bool,
    /// Isolated mode: how many of the model's steps before a unit the round runs ahead of it
    /// (a diagnostic: 1, the default, is what was measured on 21 models; more reproduces
    /// more of what the model leaves in L2, for models whose activations are small).
    #[arg(long, default_value_t = 1, conflicts_with = "round_no_lead_in")]
    pub round_lead_in_steps: usize,
    /// Isolated mode, a diagnostic: keep only the round's lead-ins that are these model
    /// steps (step indices, comma- or space-separated; given with none, no lead-in is kept), to find
    /// which lead-in changes a later unit's kernels in the round. BLOOM's fused AdamW ran
    /// 2046 us an invocation in a round with its 18 lead-ins, 1601 without (session 45).
    #[arg(long, value_delimiter = ',', num_args = 0.., conflicts_with = "round_no_lead_in")]
    pub round_lead_ins_only: Option<Vec<u32>>,
    /// Isolated mode, a diagnostic: how many rounds of every unit to measure, each at
    /// other runs of every unit, spread over its runs (round k of N counts the run in the
    /// middle of the k-th of N equal parts of a unit's runs); the switches' cost and each
    /// unit's kernels in the round are their mean. 1, the default, counts each unit's
    /// first run. On the H100 four rounds read T5's graph +3.7 % where the first runs read
    /// +1.5 %, and EfficientNet-V2-S +3.8 against +3.2 % (the same captures, session 30).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub round_runs: u32,
    /// Isolated mode: time the round as it runs, each launch from what the launch before
    /// left (and again restoring the model's values only where it ran them to zeros or
    /// non-finite values). By default, where the image's snapshot fits, every launch of the
    /// round starts from the model's values (a copy of the snapshot first, its own time
    /// and energy taken off).
    #[arg(long)]
    pub round_plain: bool,
    /// Isolated mode, a diagnostic: also measure the round's own energy (its windows, and
    /// a restoring round's copy's), which `kc report --switch-energy-from-round` prices
    /// the switches at. The prediction does not take it, so by default it is not measured.
    #[arg(long)]
    pub round_energy: bool,
    /// Isolated mode: keep the energy of a unit whose windows alone saw the power cap as
    /// those windows measured it, at the capped clock. By default such a unit is measured
    /// again at a duty cycle (the unit, then a spin kernel, its own power taken off), so
    /// that it runs at the clock it runs at in the model.
    #[arg(long)]
    pub no_duty_energy: bool,
    /// Isolated mode, a diagnostic: measure every unit's energy at a duty cycle (the unit,
    /// then a spin kernel, its own power taken off), not only a unit that alone drew past
    /// the power limit. The report gives these units' energy beside what back to back
    /// gave; the prediction takes the duty cycle's.
    #[arg(long, conflicts_with = "no_duty_energy")]
    pub duty_energy_all: bool,
    /// A diagnostic: keep each energy series' full queue of launches (32 ms) past the tick
    /// that ends it, as up to session 54; by default the last window of a series queues
    /// work only to 10 ms past its predicted tick, so that the next unit starts sooner.
    #[arg(long)]
    pub energy_full_queue: bool,
    /// Isolated mode, a diagnostic: measure a unit at a duty cycle at both shares (a third
    /// of each launch and a fifth), keeping the one that is not its answer beside it. The
    /// two agree where the spin's power taken off is what the spin drew between the
    /// unit's launches. About three more windows for each such unit.
    #[arg(long, conflicts_with = "no_duty_energy")]
    pub duty_shares_both: bool,
    /// Isolated mode, context cache: skip the units' producers. By default the units that
    /// hold the first --lead-in-share of the units' energy are measured once more with the
    /// model's steps leading up to each of their invocations ahead of them (back to the
    /// nearest of the 4 before it that shares a place with it: as the model runs it, its
    /// input just written), less those steps alone; the prediction takes their energy in
    /// place of alone. A unit priced at a duty cycle alone (the power cap) is measured so
    /// at a duty cycle too. About four more windows a unit. The results so far are written
    /// first (the file says what had not run), so that a fault there loses only that part.
    #[arg(long)]
    pub no_lead_in_units: bool,
    /// The share of the units' summed energy whose units are measured after their
    /// lead-ins, the largest first (1: every unit). On ConvNeXt-S's training step the 40
    /// of 154 units that held 0.84 of it held all of the units' saving after their lead-ins
    /// (docs/MEASUREMENTS.md, session 34).
    #[arg(long, default_value_t = kc_core::results::LEAD_IN_SHARE, value_parser = share_in_unit_interval, conflicts_with = "no_lead_in_units")]
    pub lead_in_share: f64,
    /// Isolated mode, context cache, a diagnostic: measure every unit again with every
    /// launch from the model's values at its places (a copy of them from the image's
    /// snapshot first, its own time and energy taken off), as a unit whose repeats ran its
    /// values away is. The report gives both sums; the prediction takes the second.
    #[arg(long, conflicts_with = "units_plain")]
    pub units_restoring_all: bool,
    /// Isolated mode, context cache, a diagnostic: measure the program of every unit
    /// measured (one replay's steps in the plan's order, on one stream, from the model's
    /// values) whole, and once without and once with each kind of unit doubled (each label
    /// of at least 2 % of the plain sum; the rest together). The report sets what each kind costs in the
    /// program beside its units alone, and with each kind doubled in its place what a
    /// second run of it costs there; the prediction does not take it. Steps that write
    /// integer or boolean data in place or lead to indices another step reads run once in
    /// every program, left out or doubled: on T5's graph the program with its int64 `aten::add_`
    /// doubled (session 26), and with only the in-place writers kept, the program without
    /// its float `copy_`s (session 28), ended the process by SIGSEGV.
    #[arg(long)]
    pub kinds_left_out: bool,
    /// Isolated mode, a diagnostic: each unit measured after its lead-ins has both its
    /// launches recorded with CUPTI as well, their difference told apart into the unit's
    /// kernels, the lead-ins' kernels and the gaps between kernels (`after_lead_in.kernels`
    /// in the results); the prediction does not take it.
    #[arg(long)]
    pub lead_in_kernels: bool,
    /// Isolated mode, a diagnostic: the units after their lead-ins read their integer and
    /// boolean bound reads (indices, masks) from the result their lead-in computed, as kc's
    /// graph does, not from their stand-ins holding the model's values, as alone.
    #[arg(long)]
    pub lead_in_reads_from_producers: bool,
    /// Isolated mode, a diagnostic: each unit recorded by step (with --verify) is recorded
    /// again from a launch of its steps in the same order starting at its second, so that
    /// every step runs at another place of its launch (`by_step_rotated` in the results):
    /// whether a step's record alone follows its data or the launch's first place. The
    /// prediction does not take it.
    #[arg(long)]
    pub by_step_rotated: bool,
    /// Isolated mode, context cache, with --verify: do not record each unit once more in
    /// the model's cache state (`in_model_cache` in the results, recorded by default):
    /// every invocation after L2 is turned over, left as dirty as the model's steps before
    /// it leave it, and the reads the model left in L2 touched again (those with fewer
    /// bytes than L2 touched by the model's steps since their last touch), so that the rest
    /// come from memory as in the model. The report sets it against kc's graph per unit;
    /// the prediction does not take it.
    #[arg(long)]
    pub no_alone_in_model_cache: bool,
    /// Isolated mode, the record in the model's cache state: how a read's distance from
    /// its last touch in the model is counted: every step's bytes summed, each read whole
    /// (the default), or the distinct bytes the model's steps touched between, piece by
    /// piece of the read (a diagnostic; 0.1-0.6 points further from kc's graph on four
    /// models of four, session 52).
    #[arg(long, value_enum, default_value = "summed")]
    pub model_cache_distance: kc_core::results::fidelity::ReuseDistance,
    /// Isolated mode, the record in the model's cache state: leave the operands libtorch
    /// holds outside the memory image evicted (session 51's way; a diagnostic). By default
    /// those the plan binds to a step less than L2 of bytes before are touched just before
    /// each invocation (indices and masks the steps just before make); the rest, made once
    /// an iteration, stay evicted.
    #[arg(long)]
    pub model_cache_held_evicted: bool,
    /// Isolated mode, the record in the model's cache state: touch the operands libtorch
    /// holds that the model leaves in L2 as written (each sector's word read and stored
    /// back unchanged), as their producer left them, not as read (a diagnostic).
    #[arg(long, conflicts_with = "model_cache_held_evicted")]
    pub model_cache_held_written: bool,
    /// Isolated mode, the record in the model's cache state: touch those held operands
    /// from the SMs `LO:HI` only (by `%smid`, four one-warp blocks an SM launched), so that
    /// only those SMs last touched them (a diagnostic: whether where a line was last
    /// touched sets how fast a one-block kernel reads it).
    #[arg(long, value_name = "LO:HI", value_parser = parse_sm_range, conflicts_with = "model_cache_held_evicted")]
    pub model_cache_held_on_sms: Option<(u32, u32)>,
    /// Isolated mode, the record in the model's cache state: what runs between the
    /// turnover of L2 (with the unit's reads touched) and the unit. `producers` (the
    /// default): the model's steps leading up to each invocation (as the units after their
    /// lead-ins take them: back to the nearest of the 4 steps before it that shares a place
    /// with it), then a marker kernel, the unit's kernels those after it; their and the
    /// unit's integer and boolean reads take the lead-ins' results, as kc's graph does,
    /// except in invocations one of whose lead-ins writes integers in place (run before
    /// every invocation, it would bump the indices again each time). `stand-ins`: those
    /// lead-ins, every integer and boolean read on its stand-in (the model's values);
    /// `none`: no lead-ins (sessions 51-54's way). Both others are diagnostics.
    #[arg(long, value_enum, default_value_t = kc_core::results::fidelity::RecordLeadIns::Producers)]
    pub model_cache_lead_ins: kc_core::results::fidelity::RecordLeadIns,
    /// Isolated mode, the record in the model's cache state: end each invocation's
    /// lead-up with a touch of one sector, so that the kernel just before the unit is a
    /// small one (a diagnostic: how much a unit's kernels depend on the kernel before).
    #[arg(long)]
    pub model_cache_small_predecessor: bool,
    /// Isolated mode, the record in the model's cache state: where the unit's code is
    /// before each invocation. `far` (the default): evicted (a kernel of long straight-line
    /// code on every SM, then L2 turned over) before the invocations whose step's code the
    /// model last ran more than L2 of bytes before, so that it comes from memory as in the
    /// model; `evicted`: before every invocation; `kept`: never, the unit's repeats leaving
    /// it in the SMs' instruction caches (session 52's way). Both others are diagnostics.
    #[arg(long, value_enum, default_value_t = kc_core::results::fidelity::CodeCache::Far)]
    pub model_cache_code: kc_core::results::fidelity::CodeCache,
    /// Isolated mode, the record in the model's cache state: start each invocation's
    /// lead-up with a read of one word in each 2 MiB page of a scratch of 16 GiB (a quarter
    /// of the free memory where less), so that the GPU's address translation caches hold
    /// other pages than the unit's (a diagnostic).
    #[arg(long)]
    pub model_cache_tlb_evicted: bool,
    /// Isolated mode, the record in the model's cache state: end each invocation's lead-up
    /// with a kernel that takes all the shared memory a block may have on every SM, so that
    /// the unit starts on SMs whose L1 split a GEMM or an attention kernel left (a
    /// diagnostic).
    #[arg(long)]
    pub model_cache_smem_predecessor: bool,
    /// Isolated mode: keep the measurement of a unit whose repeats alone ran its values to
    /// zeros or non-finite values. By default, where the image's snapshot fits, such a unit
    /// is measured again with every launch starting from the model's values at its places
    /// (a copy of them from the snapshot first, its own time and energy taken off).
    #[arg(long)]
    pub units_plain: bool,
    /// Isolated mode, context cache: keep every unit as its launch ran it. By default (with
    /// --verify) a unit whose launch reads at one invocation what another invocation wrote
    /// (its places chain, or it writes in place) is recorded twice more, each invocation
    /// after a copy of the bytes it reads that the launch writes: from scratch memory
    /// holding its own values, then from the snapshot (the model's values). Where the
    /// model's values change its kernels (5 % and 0.5 us), it is measured so: its time as
    /// it ran plus that change, its energy less the copies' own. Swin3D-T's shifted-window
    /// softmax reads its own output as it runs, 29 us, and 48 us an invocation over the
    /// model's masked logits (sessions 42-43).
    #[arg(long)]
    pub units_as_they_run: bool,
    /// Isolated mode, a diagnostic (from session 43): the control that a unit's record over
    /// the model's values is set against keeps each invocation's own values beforehand,
    /// from a launch as it runs, so that its copies read them from memory as the copies of
    /// the model's values read the snapshot. By default each invocation's reads are copied
    /// out to scratch just before, and back: Swin's window copies read 5-9 % slower over
    /// the model's values than over their own so. On Swin-B (session 44, same capture) this
    /// control left three of its four such copies unchanged and moved the prediction +1.4 →
    /// +1.6 % in time, −0.6 → −1.7 % in energy.
    #[arg(long, conflicts_with = "units_as_they_run")]
    pub each_invocation_cold_control: bool,
    /// Isolated mode: keep every unit's kernels in the round as recorded. By default (with
    /// --verify) a unit whose places held non-finite values after the round's launches,
    /// where the model's values at them are finite, or whose kernels ran at least 5 % and
    /// 20 us longer in the round than alone, is recorded alone over both the values the
    /// round left and the model's (its reads copied in from scratch, then from the
    /// snapshot; in place where its reads do not fit); where those values take its kernels
    /// another time (5 % and 0.5 us), its kernels in the round are not the model's and the
    /// prediction takes it alone. A fused AdamW step ran 11 % longer with 1 % of its
    /// gradients NaN, 48 % with half (session 44), and Mixtral's training step's round ran
    /// half its places to NaN. And where the round ran its values away, a unit whose
    /// kernels in each launch's first cycle (from the model's values, the results its steps
    /// allocate too) and over all cycles differ by 5 % and 20 us is taken at its first
    /// cycles' (session 50: Qwen3-MoE's fused AdamW, whose gradients the round serves from
    /// its own pool).
    #[arg(long)]
    pub round_as_recorded: bool,
    /// Isolated mode, a diagnostic: the round's (and the pairs') float reads of a result
    /// another step allocates read their stand-ins too, as the unit alone did, not the
    /// result the cycle's own producer computed (integer and boolean ones always do). Asks
    /// whether what a fused AdamW read from the round's memory pool slows it there
    /// (Qwen3-MoE's, 3.0 GB of gradients, session 45).
    #[arg(long)]
    pub round_bound_reads_as_alone: bool,
    /// Isolated mode, context cache: what each unit alone reads at its places. `at-steps`
    /// (the default): the values its steps read in the model; the bytes a later step of the
    /// model wrote again (the image packs tensors whose lives do not overlap into the same
    /// bytes) are kept from a pass of the model's steps and given back before the unit.
    /// `after-pass`: what one pass of every step left there, each place's last writer
    /// (kc before session 29), for comparison.
    #[arg(long, value_enum, default_value_t = kc_core::results::UnitValuesFrom::AtSteps)]
    pub unit_values: kc_core::results::UnitValuesFrom,
    /// Isolated mode: the round's cycles per launch (a diagnostic; by default about 0.5 ms
    /// of units per launch, or ten times a restoring round's copy).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub round_cycles: Option<u32>,
    /// Results file (default: PLAN.graph.json, or PLAN.isolated.CACHE.json so that warm and
    /// cold runs do not overwrite each other).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also write the replay as a Chrome trace (opens in Perfetto).
    #[arg(long)]
    pub trace_out: Option<PathBuf>,
    /// The rank to replay when the plan holds several (default: the lowest).
    #[arg(long)]
    pub rank: Option<u32>,
    /// Graph mode without the plan's memory image: every unit on its own buffers (the
    /// replay before dataflow, for comparison).
    #[arg(long)]
    pub no_dataflow: bool,
    /// Graph mode: record one more replay's kernels with CUPTI (name, grid, block,
    /// registers, shared memory, in-context duration) and measure them against the trace.
    #[arg(long)]
    pub verify: bool,
    /// With --verify: also write the kernel records CUPTI returned for the launches
    /// measured (JSON; the launches back to back after the first) to this file.
    #[arg(long, requires = "verify")]
    pub kernels_out: Option<PathBuf>,
    /// Graph mode: one more replay after the timed ones inside a profiler range, so that
    /// `ncu --profile-from-start off` or `nsys --capture-range=cudaProfilerApi` record
    /// exactly one replay of the graph and none of the setup.
    #[arg(long, conflicts_with = "isolated")]
    pub profile_replay: bool,
    /// Replay every rank of a multi-rank plan together, one GPU per rank, with the traced
    /// collectives through NCCL. `all`: spawn one process per rank on this machine
    /// (GPU i replays rank i; results in OUT.rankN.json and a job summary OUT.job.json);
    /// `env`: this process is one rank of a job launched by torchrun, Slurm or mpirun
    /// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
    #[arg(long, value_parser = ["all", "env"], conflicts_with = "rank")]
    pub ranks: Option<String>,
    /// Print the results as JSON instead of the summary table.
    #[arg(long)]
    pub json: bool,
}

/// The one naming scheme of results files, here and in `kc run`: `STEM.graph.json` for a
/// graph replay, `STEM.isolated.CACHE.json` for an isolated one (CACHE = warm or cold).
/// Writes a run's results to `out` as its results file: pretty JSON, atomically (a reader
/// sees the old file or the new one, never a part).
fn write_results(out: &Path, r: &exec::Results) -> Result<(), String> {
    let text = serde_json::to_vec_pretty(r).map_err(|e| format!("cannot render results: {e}"))?;
    crate::files::write_atomic(out, &text)
        .map_err(|e| format!("{}: cannot write: {e}", out.display()))
}

/// The checkpoint of a run ([`ExecOptions::checkpoint`]): writes the results so far to
/// `out` with [`write_results`] (the run's own file, which the run's end replaces) and says
/// so on stderr, so that a fault in what follows leaves them on disk.
pub fn results_checkpoint(out: PathBuf) -> exec::Checkpoint {
    exec::Checkpoint(std::sync::Arc::new(move |r| match write_results(&out, r) {
        Ok(()) => eprintln!(
            "kc: the results so far written to {}: {}",
            out.display(),
            r.unfinished.as_deref().unwrap_or("the rest had not run")
        ),
        Err(e) => eprintln!("kc: the results so far not written: {e}"),
    }))
}

pub fn results_name(stem: &str, isolated: bool, cache: &str) -> String {
    if isolated {
        format!("{stem}.isolated.{cache}.json")
    } else {
        format!("{stem}.graph.json")
    }
}

/// In the working directory, as every verb's default output.
fn default_out(p: &Path, isolated: bool, cache: &str) -> PathBuf {
    PathBuf::from(results_name(
        &super::stem_here(p, ".kcplan"),
        isolated,
        cache,
    ))
}

pub fn run(a: Args) -> i32 {
    let bytes = match crate::envelope::read_bytes(&plan::PLAN_FILE, &a.plan) {
        Ok(b) => b,
        Err(e) => return super::fail(e),
    };
    let p = match plan::decode(&bytes, &a.plan.display().to_string()) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    // Context is the default where the plan knows the model's memory image.
    let cache = CachePolicy::resolve(a.cache, p.dataflow.is_some() && !a.no_dataflow);
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| default_out(&a.plan, a.isolated, cache.as_str()));
    if a.ranks.as_deref() == Some("all") {
        return super::ranks::run_all(&a, &p, &out);
    }
    let job = match a.ranks.as_deref() {
        Some("env") => match exec::rendezvous::RankEnv::from_env(|k| std::env::var(k).ok()) {
            Ok(e) => Some(e),
            Err(e) => return super::fail(e),
        },
        _ => None,
    };
    // Every rank of a job writes its own file (under torchrun or srun they share one
    // command line, and often one file system).
    let out = match &job {
        Some(j)
            if !out
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".rank")) =>
        {
            super::ranks::rank_path(&out, j.rank)
        }
        _ => out,
    };
    let mut outs = vec![out.as_path()];
    outs.extend(a.trace_out.as_deref());
    for o in outs {
        if let Err(e) = super::check_output(o, &[&a.plan]) {
            return super::fail(e);
        }
    }
    let opts = ExecOptions {
        isolated: a.isolated,
        runs: a.runs,
        warmup: a.warmup,
        cache,
        energy_window_s: (!a.no_energy).then_some(a.energy_window),
        energy_repeats: a.energy_repeats,
        energy_target_rel_sem: a.energy_target.max(0.0) / 100.0,
        one_window_rel_sd: a.one_window_spread.max(0.0) / 100.0,
        progress: !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        rank: a.rank,
        plan_path: a.plan.display().to_string(),
        plan_crc32: crc32fast::hash(&bytes),
        dataflow: !a.no_dataflow,
        verify: a.verify,
        parts: !a.no_parts,
        transitions: a.transitions,
        round_sizes: a.round_sizes,
        round_runs: a.round_runs as usize,
        round_lead_in: if a.round_no_lead_in {
            0
        } else {
            a.round_lead_in_steps
        },
        round_lead_ins_only: a.round_lead_ins_only.clone(),
        round_restoring: !a.round_plain,
        round_energy: a.round_energy,
        duty_energy: !a.no_duty_energy,
        duty_energy_all: a.duty_energy_all,
        energy_full_queue: a.energy_full_queue,
        duty_shares_both: a.duty_shares_both,
        lead_in_units: !a.no_lead_in_units,
        lead_in_share: a.lead_in_share,
        unit_restoring_all: a.units_restoring_all,
        kinds_left_out: a.kinds_left_out,
        lead_in_kernels: a.lead_in_kernels,
        lead_in_reads_from_producers: a.lead_in_reads_from_producers,
        by_step_rotated: a.by_step_rotated,
        alone_in_model_cache: !a.no_alone_in_model_cache,
        model_cache_distance: a.model_cache_distance,
        model_cache_touches_held: !a.model_cache_held_evicted,
        model_cache_held_written: a.model_cache_held_written,
        model_cache_held_on_sms: a.model_cache_held_on_sms,
        model_cache_lead_ins: a.model_cache_lead_ins,
        model_cache_small_predecessor: a.model_cache_small_predecessor,
        model_cache_code: a.model_cache_code,
        model_cache_tlb_evicted: a.model_cache_tlb_evicted,
        model_cache_smem_predecessor: a.model_cache_smem_predecessor,
        unit_restoring: !a.units_plain,
        each_invocation_values: !a.units_as_they_run,
        each_invocation_cold_control: a.each_invocation_cold_control,
        round_values_check: !a.round_as_recorded,
        round_bound_reads_as_alone: a.round_bound_reads_as_alone,
        unit_values: a.unit_values,
        round_cycles: a.round_cycles,
        kernels_out: a.kernels_out.as_ref().map(|p| p.display().to_string()),
        profile_replay: a.profile_replay,
        job,
        checkpoint: Some(results_checkpoint(out.clone())),
        ..Default::default()
    };
    let r = match exec::execute(&p, &opts) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    if let Err(e) = write_results(&out, &r) {
        return super::fail(e);
    }
    if let Some(t) = &a.trace_out {
        let trace = serde_json::to_vec(&crate::report::trace_out::chrome_trace(
            &r,
            Some((&p, &crate::report::exec_summary::isolated_means(&r))),
        ))
        .unwrap_or_default();
        if let Err(e) = crate::files::write_atomic(t, &trace) {
            return super::fail(format!("{}: cannot write: {e}", t.display()));
        }
    }
    if a.json {
        super::print_json(&r);
    } else {
        print!("{}", crate::report::exec_summary::render(&r));
        println!("\n  results written to {}", out.display());
    }
    0
}

/// A share in (0, 1]: `--lead-in-share`.
pub(crate) fn share_in_unit_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a share in (0, 1]"))
    }
}

/// `LO:HI`, a range of SM ids, `LO < HI`.
fn parse_sm_range(s: &str) -> Result<(u32, u32), String> {
    let (lo, hi) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: give LO:HI, SM ids"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|e| format!("{x:?} in {s:?}: {e}"))
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo >= hi {
        return Err(format!("{s:?}: LO must be under HI"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::parse_sm_range;

    #[test]
    fn an_sm_range_is_two_ids_the_first_under_the_second() {
        assert_eq!(parse_sm_range("0:66"), Ok((0, 66)));
        assert_eq!(parse_sm_range(" 66 : 132 "), Ok((66, 132)));
        for bad in ["66", "66:66", "70:10", "a:3", "1:-2", ":"] {
            assert!(parse_sm_range(bad).is_err(), "{bad:?} was taken");
        }
    }
}
