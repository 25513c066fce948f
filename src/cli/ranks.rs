//! `kc exec PLAN --ranks all`: one process per rank of a multi-rank plan on this machine,
//! bootstrapped the way torchrun does it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
//! MASTER_PORT in each child's environment; rank 0 serves the store), then the job's
//! summary: per rank and for the whole job, with collective time as its own row.
//!
//! Invariant: the command ends. A rank that exits with an error ends the job: the other
//! ranks are killed (they may be waiting in a collective for it) and the error names the
//! rank and ends with its last lines; every rank's own waits have deadlines besides.

use super::exec::Args;
use crate::plan::Plan;
use crate::report::job::{render, summarize, summarize_rank};
use crate::results::Results;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `OUT` with `.rankN` before its extension: `x.graph.json` -> `x.rank1.graph.json`.
pub fn rank_path(out: &Path, rank: u32) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let (stem, ext) = match name.find('.') {
        Some(i) => (&name[..i], &name[i..]),
        None => (name.as_str(), ""),
    };
    out.with_file_name(format!("{stem}.rank{rank}{ext}"))
}

/// `OUT` with its extension replaced by `.job.json`.
pub fn job_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("kc");
    let kind = if name.contains(".isolated.") {
        "isolated"
    } else {
        "graph"
    };
    out.with_file_name(format!("{stem}.job.{kind}.json"))
}

/// The child's command line: the same options, this rank's outputs, `--ranks env`.
fn child_args(a: &Args, rank: u32, out: &Path) -> Vec<String> {
    let mut v = vec!["exec".to_string(), a.plan.display().to_string()];
    if a.isolated {
        v.push("--isolated".into());
    }
    v.extend(["--runs".into(), a.runs.to_string()]);
    v.extend(["--warmup".into(), a.warmup.to_string()]);
    if let Some(c) = &a.cache {
        v.extend(["--cache".into(), c.as_str().to_string()]);
    }
    v.extend(["--energy-window".into(), a.energy_window.to_string()]);
    v.extend(["--energy-repeats".into(), a.energy_repeats.to_string()]);
    v.extend(["--energy-target".into(), a.energy_target.to_string()]);
    v.extend([
        "--one-window-spread".into(),
        a.one_window_spread.to_string(),
    ]);
    if a.no_energy {
        v.push("--no-energy".into());
    }
    v.extend(["--transitions".into(), a.transitions.to_string()]);
    if a.no_parts {
        v.push("--no-parts".into());
    }
    if a.round_sizes {
        v.push("--round-sizes".into());
    }
    if a.round_no_lead_in {
        v.push("--round-no-lead-in".into());
    } else {
        v.extend([
            "--round-lead-in-steps".into(),
            a.round_lead_in_steps.to_string(),
        ]);
    }
    if let Some(only) = &a.round_lead_ins_only {
        v.push("--round-lead-ins-only".into());
        v.extend(only.iter().map(|s| s.to_string()));
    }
    v.extend(["--round-runs".into(), a.round_runs.to_string()]);
    if a.round_plain {
        v.push("--round-plain".into());
    }
    if a.round_energy {
        v.push("--round-energy".into());
    }
    if a.no_duty_energy {
        v.push("--no-duty-energy".into());
    }
    if a.energy_full_queue {
        v.push("--energy-full-queue".into());
    }
    if a.duty_energy_all {
        v.push("--duty-energy-all".into());
    }
    if a.duty_shares_both {
        v.push("--duty-shares-both".into());
    }
    if a.no_lead_in_units {
        v.push("--no-lead-in-units".into());
    } else {
        v.push(format!("--lead-in-share={}", a.lead_in_share));
    }
    if a.units_restoring_all {
        v.push("--units-restoring-all".into());
    }
    if a.kinds_left_out {
        v.push("--kinds-left-out".into());
    }
    if a.lead_in_reads_from_producers {
        v.push("--lead-in-reads-from-producers".into());
    }
    if a.lead_in_kernels {
        v.push("--lead-in-kernels".into());
    }
    if a.by_step_rotated {
        v.push("--by-step-rotated".into());
    }
    if a.no_alone_in_model_cache {
        v.push("--no-alone-in-model-cache".into());
    }
    if a.model_cache_held_evicted {
        v.push("--model-cache-held-evicted".into());
    }
    if let Some((lo, hi)) = a.model_cache_held_on_sms {
        v.extend(["--model-cache-held-on-sms".into(), format!("{lo}:{hi}")]);
    }
    if a.model_cache_lead_ins != kc_core::results::fidelity::RecordLeadIns::Producers {
        use clap::ValueEnum;
        if let Some(value) = a.model_cache_lead_ins.to_possible_value() {
            v.extend(["--model-cache-lead-ins".into(), value.get_name().into()]);
        }
    }
    if a.model_cache_held_written {
        v.push("--model-cache-held-written".into());
    }
    if a.model_cache_small_predecessor {
        v.push("--model-cache-small-predecessor".into());
    }
    if a.model_cache_smem_predecessor {
        v.push("--model-cache-smem-predecessor".into());
    }
    if a.model_cache_tlb_evicted {
        v.push("--model-cache-tlb-evicted".into());
    }
    if a.model_cache_code != kc_core::results::fidelity::CodeCache::Far {
        use clap::ValueEnum;
        if let Some(value) = a.model_cache_code.to_possible_value() {
            v.extend(["--model-cache-code".into(), value.get_name().into()]);
        }
    }
    if a.model_cache_distance != kc_core::results::fidelity::ReuseDistance::Summed {
        v.extend(["--model-cache-distance".into(), "distinct".into()]);
    }
    if a.units_plain {
        v.push("--units-plain".into());
    }
    if a.units_as_they_run {
        v.push("--units-as-they-run".into());
    }
    if a.each_invocation_cold_control {
        v.push("--each-invocation-cold-control".into());
    }
    if a.round_as_recorded {
        v.push("--round-as-recorded".into());
    }
    if a.round_bound_reads_as_alone {
        v.push("--round-bound-reads-as-alone".into());
    }
    if a.profile_replay {
        v.push("--profile-replay".into());
    }
    if a.unit_values != kc_core::results::UnitValuesFrom::AtSteps {
        v.extend(["--unit-values".into(), "after-pass".into()]);
    }
    if let Some(c) = a.round_cycles {
        v.extend(["--round-cycles".into(), c.to_string()]);
    }
    if a.no_dataflow {
        v.push("--no-dataflow".into());
    }
    if a.verify {
        v.push("--verify".into());
    }
    // The files beside the results: each rank's own, as its results are.
    if let Some(t) = &a.trace_out {
        v.extend([
            "--trace-out".into(),
            rank_path(t, rank).display().to_string(),
        ]);
    }
    if let Some(k) = &a.kernels_out {
        v.extend([
            "--kernels-out".into(),
            rank_path(k, rank).display().to_string(),
        ]);
    }
    v.extend(["-o".into(), out.display().to_string()]);
    v.extend(["--ranks".into(), "env".into()]);
    v
}

/// How this process starts itself as a rank: the `kc` binary, or, under the Python
/// package (where the executable is the interpreter), the command the package registered
/// with [`set_rank_launcher`].
fn rank_launcher() -> Result<(PathBuf, Vec<String>), String> {
    if let Some(l) = RANK_LAUNCHER.get() {
        return Ok(l.clone());
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find kc's own executable: {e}"))?;
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.starts_with("python") {
        return Err(
            "--ranks all cannot start ranks from this Python process: run it with the `kc` command"
                .into(),
        );
    }
    Ok((exe, Vec::new()))
}

static RANK_LAUNCHER: std::sync::OnceLock<(PathBuf, Vec<String>)> = std::sync::OnceLock::new();

/// Registers the command that starts this program again as a rank (the Python package
/// passes its interpreter and `-m kc._cli`).
pub fn set_rank_launcher(program: PathBuf, args: Vec<String>) {
    let _ = RANK_LAUNCHER.set((program, args));
}

fn kill_all(children: &mut [(u32, Child)]) {
    for (_, c) in children.iter_mut() {
        let _ = c.kill();
    }
    for (_, c) in children.iter_mut() {
        let _ = c.wait();
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = text.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

pub fn run_all(a: &Args, plan: &Plan, out: &Path) -> i32 {
    let world = plan.ranks().len() as u32;
    if world < 2 {
        return super::fail(format!(
            "{}: the plan holds one rank; --ranks all replays multi-rank plans (drop --ranks)",
            a.plan.display()
        ));
    }
    let (exe, exe_args) = match rank_launcher() {
        Ok(e) => e,
        Err(e) => return super::fail(e),
    };
    // Every path a rank writes is checked before anything starts, as the single-rank path
    // checks its output: never the input plan, never a symlink, FIFO or device.
    let paths: Vec<(PathBuf, PathBuf)> = (0..world)
        .map(|r| (rank_path(out, r), rank_path(out, r).with_extension("log")))
        .collect();
    for p in paths
        .iter()
        .flat_map(|(o, l)| [o, l])
        .chain(std::iter::once(&job_path(out)))
    {
        if let Err(e) = super::check_output(p, &[&a.plan]) {
            return super::fail(e);
        }
    }
    // Rank 0's store listens on a socket bound here and handed to rank 0 alone (no other
    // program can take the port in between); the job's secret and id are fresh.
    let listener = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => return super::fail(format!("cannot open a port for the rank store: {e}")),
    };
    let port = match listener.local_addr() {
        Ok(a) => a.port(),
        Err(e) => return super::fail(format!("cannot open a port for the rank store: {e}")),
    };
    let secret = crate::exec::rendezvous::JobKey::fresh_secret();
    let job_id = format!("kc-{}-{port}", std::process::id());
    let mut children: Vec<(u32, Child)> = Vec::new();
    let mut logs = Vec::new();
    for (r, (rout, log)) in (0..world).zip(paths) {
        let file = match std::fs::File::create(&log) {
            Ok(f) => f,
            Err(e) => {
                kill_all(&mut children);
                return super::fail(format!("{}: cannot write: {e}", log.display()));
            }
        };
        let err = match file.try_clone() {
            Ok(f) => f,
            Err(e) => {
                kill_all(&mut children);
                return super::fail(format!("{}: {e}", log.display()));
            }
        };
        let mut cmd = Command::new(&exe);
        cmd.args(&exe_args);
        // CUDA's device numbers follow the PCI bus, as NVML's do, so that rank r's GPU
        // and the GPU whose energy it reads are the same one.
        if std::env::var_os("CUDA_DEVICE_ORDER").is_none() {
            cmd.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        }
        // A rank dies with this process (killed, or interrupted before it could stop its
        // children): a rank left behind would hold its GPU inside a collective forever.
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe and touches only the child's own state.
            let store_fd = (r == 0).then(|| std::os::unix::io::AsRawFd::as_raw_fd(&listener));
            unsafe {
                cmd.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    // Rank 0 alone inherits the store's socket (std opens it close-on-exec).
                    if let Some(fd) = store_fd {
                        if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            if let Some(fd) = store_fd {
                cmd.env(crate::exec::rendezvous::STORE_FD_VAR, fd.to_string());
            }
        }
        let spawned = cmd
            .args(child_args(a, r, &rout))
            .env("RANK", r.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("LOCAL_RANK", r.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env(crate::exec::rendezvous::SECRET_VAR, &secret)
            .env(crate::exec::rendezvous::JOB_ID_VAR, &job_id)
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .spawn();
        match spawned {
            Ok(c) => children.push((r, c)),
            Err(e) => {
                kill_all(&mut children);
                return super::fail(format!("cannot start rank {r}: {e}"));
            }
        }
        logs.push((rout, log));
    }
    drop(listener); // rank 0 holds its own copy
    eprintln!(
        "kc exec --ranks all: {world} ranks started (store 127.0.0.1:{port}); logs in {}",
        logs.iter()
            .map(|(_, l)| l.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Wait for all; the first failure ends the job.
    let mut done = vec![false; world as usize];
    loop {
        let mut failure = None;
        for (r, c) in children.iter_mut() {
            if done[*r as usize] {
                continue;
            }
            match c.try_wait() {
                Ok(Some(status)) if status.success() => done[*r as usize] = true,
                Ok(Some(status)) => {
                    failure = Some((*r, status.to_string()));
                    break;
                }
                Ok(None) => {}
                Err(e) => {
                    failure = Some((*r, e.to_string()));
                    break;
                }
            }
        }
        if let Some((r, why)) = failure {
            kill_all(&mut children);
            return super::fail(format!(
                "rank {r} of {world} failed ({why}); the job was stopped. Its log ({}):\n{}",
                logs[r as usize].1.display(),
                tail(&logs[r as usize].1, 8)
            ));
        }
        if done.iter().all(|&d| d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut rows = Vec::new();
    for (r, (rout, _)) in logs.iter().enumerate() {
        let res: Results = match std::fs::read(rout)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(x) => x,
            Err(e) => {
                return super::fail(format!("rank {r}: {}: {e}", rout.display()));
            }
        };
        let me = (&res, rout.as_path());
        rows.push(if a.isolated {
            summarize_rank(None, Some(me), plan)
        } else {
            summarize_rank(Some(me), None, plan)
        });
    }
    let job = summarize(if a.isolated { "isolated" } else { "graph" }, rows);
    let jp = job_path(out);
    let text = serde_json::to_vec_pretty(&job).unwrap_or_default();
    if let Err(e) = crate::files::write_atomic(&jp, &text) {
        return super::fail(format!("{}: cannot write: {e}", jp.display()));
    }
    if a.json {
        super::print_json(&job);
    } else {
        print!("{}", render(&job));
        println!("\n  job summary written to {}", jp.display());
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank's process measures what the job was asked to: `--unit-values` goes to each
    /// rank when it is not the default, the rounds and the units' producers always.
    #[test]
    fn each_rank_is_asked_for_the_same_unit_values() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Exec {
            #[command(flatten)]
            a: Args,
        }
        let args = |extra: &[&str]| {
            let e =
                Exec::try_parse_from(["kc", "p.kcplan", "--isolated"].iter().chain(extra)).unwrap();
            child_args(&e.a, 1, Path::new("o.json"))
        };
        let v = args(&["--unit-values", "after-pass"]);
        assert!(
            v.windows(2).any(|w| w == ["--unit-values", "after-pass"]),
            "{v:?}"
        );
        assert!(!args(&[]).iter().any(|x| x == "--unit-values"));
        // And for the same rounds of every unit.
        let v = args(&["--round-runs", "4"]);
        assert!(v.windows(2).any(|w| w == ["--round-runs", "4"]), "{v:?}");
        assert!(args(&[]).windows(2).any(|w| w == ["--round-runs", "1"]));
        // And for the units' producers: measured by default at kc's share, or skipped.
        let v = args(&[]);
        assert!(v.iter().any(|x| x == "--lead-in-share=0.9"), "{v:?}");
        assert!(!v.iter().any(|x| x == "--no-lead-in-units"), "{v:?}");
        let v = args(&["--lead-in-share", "0.5"]);
        assert!(v.iter().any(|x| x == "--lead-in-share=0.5"), "{v:?}");
        let v = args(&["--no-lead-in-units"]);
        assert!(v.iter().any(|x| x == "--no-lead-in-units"), "{v:?}");
        assert!(!v.iter().any(|x| x.starts_with("--lead-in-share")), "{v:?}");
    }

    /// Every switch of `kc exec` reaches each rank's process, but the ones that only say
    /// how this process prints or runs the job: a rank measuring with another switch
    /// than the job's would label its figures with what it did not measure (before
    /// session 46 six switches, `--round-as-recorded` among them, and the two files beside
    /// the results stayed behind).
    #[test]
    fn every_switch_reaches_each_rank() {
        use clap::{CommandFactory, Parser};
        #[derive(clap::Parser)]
        struct Exec {
            #[command(flatten)]
            a: Args,
        }
        // Printing and the job itself: the parent's, not the rank's.
        let parents = ["json", "ranks"];
        let cmd = Exec::command();
        let mut checked = 0;
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            let takes_value = arg.get_action().takes_values();
            let Some(long) = arg.get_long() else { continue };
            if takes_value || parents.contains(&id) || id == "help" {
                continue;
            }
            let flag = format!("--{long}");
            // Graph mode's switches, and the mode itself, with the plan only.
            let base: &[&str] = if ["profile-replay", "isolated"].contains(&long) {
                &["kc", "p.kcplan"]
            } else {
                &["kc", "p.kcplan", "--isolated"]
            };
            let e = Exec::try_parse_from(base.iter().copied().chain([flag.as_str()]))
                .unwrap_or_else(|e| panic!("{flag}: {e}"));
            let v = child_args(&e.a, 1, Path::new("o.json"));
            assert!(v.contains(&flag), "{flag} does not reach the ranks: {v:?}");
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} switches checked");
        // The options with a value: each with one it does not have by default.
        let mut valued = 0;
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            let Some(long) = arg.get_long() else { continue };
            if !arg.get_action().takes_values() || ["output", "ranks", "rank"].contains(&id) {
                continue;
            }
            let value = match id {
                "cache" => "cold",
                "unit_values" => "after-pass",
                "model_cache_distance" => "distinct",
                "model_cache_held_on_sms" => "0:66",
                "model_cache_code" => "evicted",
                "model_cache_lead_ins" => "stand-ins",
                "lead_in_share" | "energy_window" | "energy_target" | "one_window_spread" => "0.25",
                "trace_out" | "kernels_out" => "t.json",
                "round_lead_ins_only"
                | "runs"
                | "warmup"
                | "energy_repeats"
                | "transitions"
                | "round_lead_in_steps"
                | "round_runs"
                | "round_cycles" => "7",
                _ => panic!("--{long}: give the test a value for it"),
            };
            let flag = format!("--{long}");
            let mut argv = vec![
                "kc",
                "p.kcplan",
                "--isolated",
                "--verify",
                flag.as_str(),
                value,
            ];
            if ["trace_out", "kernels_out"].contains(&id) {
                argv.retain(|&x| x != "--isolated");
            }
            let e = Exec::try_parse_from(&argv).unwrap_or_else(|e| panic!("{flag}: {e}"));
            let v = child_args(&e.a, 1, Path::new("o.json"));
            let i = v.iter().position(|x| *x == flag);
            let given = i.and_then(|i| v.get(i + 1)).map(|x| x.as_str());
            let want = match id {
                // A rank's own file, as its results are.
                "trace_out" | "kernels_out" => "t.rank1.json",
                _ => value,
            };
            let inline = format!("{flag}={value}");
            assert!(
                given == Some(want) || v.contains(&inline),
                "{flag} {value} does not reach the ranks: {v:?}"
            );
            valued += 1;
        }
        assert!(valued >= 15, "only {valued} options with a value checked");
        // And a diagnostic's list, whole.
        let e = Exec::try_parse_from([
            "kc",
            "p.kcplan",
            "--isolated",
            "--round-lead-ins-only",
            "17,361",
        ])
        .unwrap();
        let v = child_args(&e.a, 1, Path::new("o.json"));
        assert!(
            v.windows(3)
                .any(|w| w == ["--round-lead-ins-only", "17", "361"]),
            "{v:?}"
        );
    }

    #[test]
    fn rank_and_job_paths() {
        assert_eq!(
            rank_path(Path::new("d/x.graph.json"), 1),
            PathBuf::from("d/x.rank1.graph.json")
        );
        assert_eq!(
            job_path(Path::new("d/x.isolated.context.json")),
            PathBuf::from("d/x.job.isolated.json")
        );
    }
}
