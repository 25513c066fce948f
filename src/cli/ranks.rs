//! `kc exec PLAN --ranks all`: one process per rank of a multi-rank plan on this machine,
//! bootstrapped the way torchrun does it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
//! MASTER_PORT in each child's environment; rank 0 serves the store), then the job's
//! summary: per rank and for the whole job, with collective time as its own row.
//!
//! Invariant: the command ends. A rank that exits with an error ends the job: the other
//! ranks are killed (they may be waiting in a collective for it) and the error names the
//! rank and ends with its last lines; every rank's own waits have deadlines besides.

use super::exec::Args;
use crate::exec::results::Results;
use crate::plan::Plan;
use serde::Serialize;
use std::fmt::Write as _;
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

/// The child's command line: the same options, this rank's output, `--ranks env`.
fn child_args(a: &Args, out: &Path) -> Vec<String> {
    let mut v = vec!["exec".to_string(), a.plan.display().to_string()];
    if a.isolated {
        v.push("--isolated".into());
    }
    v.extend(["--runs".into(), a.runs.to_string()]);
    v.extend(["--warmup".into(), a.warmup.to_string()]);
    if let Some(c) = &a.cache {
        v.extend(["--cache".into(), c.clone()]);
    }
    v.extend(["--energy-window".into(), a.energy_window.to_string()]);
    v.extend(["--energy-repeats".into(), a.energy_repeats.to_string()]);
    if a.no_energy {
        v.push("--no-energy".into());
    }
    if a.no_dataflow {
        v.push("--no-dataflow".into());
    }
    if a.verify {
        v.push("--verify".into());
    }
    v.extend(["-o".into(), out.display().to_string()]);
    v.extend(["--ranks".into(), "env".into()]);
    v
}

/// One rank's figures in the job summary.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RankSummary {
    pub rank: u32,
    pub trace_rank: u32,
    pub results: String,
    pub device: String,
    /// Graph mode: mean replay time and energy per replay on this rank's GPU.
    pub replay_us: Option<f64>,
    pub energy_j: Option<f64>,
    /// Isolated mode: Σ isolated × count, all units and the collectives alone.
    pub predicted_us: Option<f64>,
    pub predicted_energy_j: Option<f64>,
    pub collective_predicted_us: Option<f64>,
    pub collective_traced_us: f64,
    pub traced_us: f64,
}

/// The whole job.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct JobSummary {
    pub mode: String,
    pub world_size: u32,
    pub ranks: Vec<RankSummary>,
    /// The job's time is its slowest rank's; its energy the sum over the ranks' GPUs.
    pub replay_us: Option<f64>,
    pub energy_j: Option<f64>,
    pub predicted_us: Option<f64>,
    pub predicted_energy_j: Option<f64>,
}

/// One rank's row from its graph and/or isolated results.
pub fn summarize_rank(
    graph: Option<(&Results, &Path)>,
    isolated: Option<(&Results, &Path)>,
    plan: &Plan,
) -> RankSummary {
    let any = graph.or(isolated).map(|(r, _)| r);
    let job = any.and_then(|r| r.job.clone()).unwrap_or_default();
    let collective_ids: Vec<u32> = plan
        .units
        .iter()
        .filter(|u| matches!(u.call, crate::plan::types::UnitCall::Collective { .. }))
        .map(|u| u.id)
        .collect();
    // This rank's own traced time (a unit's mean spans every rank's invocations, and a
    // rank that waits in a collective for its partners records the wait).
    let traced_on = |collective_only: bool| -> f64 {
        plan.steps
            .iter()
            .filter(|st| plan.streams[st.stream as usize].rank == job.trace_rank)
            .filter(|st| !collective_only || collective_ids.contains(&st.unit))
            .map(|st| st.traced_ns as f64)
            .sum::<f64>()
            / 1000.0
    };
    let g = graph.map(|(r, _)| r);
    let i = isolated.map(|(r, _)| r);
    RankSummary {
        rank: job.rank,
        trace_rank: job.trace_rank,
        results: [graph, isolated]
            .iter()
            .flatten()
            .map(|(_, p)| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        device: any.map(|r| r.device.name.clone()).unwrap_or_default(),
        replay_us: g.and_then(|r| r.graph.as_ref()).map(|g| g.replay_us.mean),
        energy_j: g
            .and_then(|r| r.graph.as_ref())
            .and_then(|g| g.energy.as_ref())
            .map(|e| e.per_item_j.mean),
        predicted_us: i.and_then(|r| r.isolated.as_ref()).map(|x| x.predicted_us),
        predicted_energy_j: i
            .and_then(|r| r.isolated.as_ref())
            .and_then(|x| x.predicted_energy_j),
        collective_predicted_us: i.filter(|_| !collective_ids.is_empty()).map(|r| {
            r.units
                .iter()
                .filter(|u| collective_ids.contains(&u.id) && u.status == "ok")
                .filter_map(|u| u.predicted_us)
                .sum()
        }),
        collective_traced_us: traced_on(true),
        traced_us: traced_on(false),
    }
}

/// A rank's results and the file they came from.
type RankFile = (Results, PathBuf);

/// The job summary of ranks' results files (graph and/or isolated, any order), for
/// `kc report --job`.
pub fn summarize_files(files: &[PathBuf], plan: &Plan) -> Result<JobSummary, String> {
    let mut by_rank: std::collections::BTreeMap<u32, (Option<RankFile>, Option<RankFile>)> =
        Default::default();
    for f in files {
        let r = crate::report::read_results(f).map_err(|e| e.to_string())?;
        let rank = r
            .job
            .as_ref()
            .ok_or_else(|| {
                format!(
                    "{}: not the results of a job's rank (kc exec --ranks)",
                    f.display()
                )
            })?
            .rank;
        let slot = by_rank.entry(rank).or_default();
        let which = if r.mode == "graph" {
            &mut slot.0
        } else {
            &mut slot.1
        };
        if which.is_some() {
            return Err(format!(
                "{}: a second {} results file of rank {rank}",
                f.display(),
                r.mode
            ));
        }
        *which = Some((r, f.clone()));
    }
    let rows = by_rank
        .values()
        .map(|(g, i)| {
            summarize_rank(
                g.as_ref().map(|(r, p)| (r, p.as_path())),
                i.as_ref().map(|(r, p)| (r, p.as_path())),
                plan,
            )
        })
        .collect();
    let modes = (
        by_rank.values().any(|x| x.0.is_some()),
        by_rank.values().any(|x| x.1.is_some()),
    );
    Ok(summarize(
        match modes {
            (true, true) => "graph and isolated",
            (false, true) => "isolated",
            _ => "graph",
        },
        rows,
    ))
}

pub fn summarize(mode: &str, ranks: Vec<RankSummary>) -> JobSummary {
    let max = |f: &dyn Fn(&RankSummary) -> Option<f64>| -> Option<f64> {
        let v: Option<Vec<f64>> = ranks.iter().map(f).collect();
        v.and_then(|v| v.into_iter().reduce(f64::max))
    };
    let sum = |f: &dyn Fn(&RankSummary) -> Option<f64>| -> Option<f64> {
        let v: Option<Vec<f64>> = ranks.iter().map(f).collect();
        v.map(|v| v.into_iter().sum())
    };
    JobSummary {
        mode: mode.to_string(),
        world_size: ranks.len() as u32,
        replay_us: max(&|r| r.replay_us),
        energy_j: sum(&|r| r.energy_j),
        predicted_us: max(&|r| r.predicted_us),
        predicted_energy_j: sum(&|r| r.predicted_energy_j),
        ranks,
    }
}

pub fn render(j: &JobSummary) -> String {
    let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |v| format!("{v:.d$}"));
    let mut o = String::new();
    let _ = writeln!(
        o,
        "job of {} ranks, one GPU each ({})",
        j.world_size, j.mode
    );
    let _ = writeln!(
        o,
        "  {:>4} {:>5} {:>12} {:>10} {:>13} {:>10} {:>15} {:>15}  device",
        "rank",
        "trace",
        "replay us",
        "J/replay",
        "Σ isolated us",
        "Σ iso J",
        "collectives us",
        "coll. traced us"
    );
    for r in &j.ranks {
        let _ = writeln!(
            o,
            "  {:>4} {:>5} {:>12} {:>10} {:>13} {:>10} {:>15} {:>15.1}  {}",
            r.rank,
            r.trace_rank,
            f(r.replay_us, 1),
            f(r.energy_j, 4),
            f(r.predicted_us, 1),
            f(r.predicted_energy_j, 4),
            f(r.collective_predicted_us, 1),
            r.collective_traced_us,
            r.device
        );
    }
    let _ = writeln!(
        o,
        "  job: replay {} us (slowest rank), energy {} J (all GPUs); Σ isolated {} us, {} J",
        f(j.replay_us, 1),
        f(j.energy_j, 4),
        f(j.predicted_us, 1),
        f(j.predicted_energy_j, 4)
    );
    o
}

/// The job summary as the report's Markdown: per rank, the whole job, and the collectives
/// as their own row.
pub fn render_markdown(j: &JobSummary) -> String {
    let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |v| format!("{v:.d$}"));
    let mut o = String::new();
    let _ = writeln!(o, "# kc job report: {} ranks ({})\n", j.world_size, j.mode);
    let _ = writeln!(
        o,
        "Per replay of the plan (every profiled iteration of each rank). The job's time is its slowest rank's; its energy is the sum over the ranks' GPUs (NVML, each rank on its own GPU).\n"
    );
    let _ = writeln!(
        o,
        "| rank | trace rank | GPU | graph replay us | energy J | Σ isolated × count us | Σ isolated J | traced us (this rank) |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for r in &j.ranks {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            r.rank,
            r.trace_rank,
            r.device,
            f(r.replay_us, 1),
            f(r.energy_j, 4),
            f(r.predicted_us, 1),
            f(r.predicted_energy_j, 4),
            r.traced_us
        );
    }
    let _ = writeln!(
        o,
        "| **job** | | | {} | {} | {} | {} | |\n",
        f(j.replay_us, 1),
        f(j.energy_j, 4),
        f(j.predicted_us, 1),
        f(j.predicted_energy_j, 4)
    );
    let _ = writeln!(o, "Collectives (NCCL), per rank:\n");
    let _ = writeln!(
        o,
        "| rank | Σ isolated × count us | traced us | share of the rank's traced time |"
    );
    let _ = writeln!(o, "|---|---|---|---|");
    for r in &j.ranks {
        let share = if r.traced_us > 0.0 {
            format!("{:.1} %", 100.0 * r.collective_traced_us / r.traced_us)
        } else {
            "-".into()
        };
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} | {share} |",
            r.rank,
            f(r.collective_predicted_us, 1),
            r.collective_traced_us
        );
    }
    let _ = writeln!(
        o,
        "\nA rank's traced collective time includes the time its collectives waited for the other ranks to arrive; an isolated collective starts on every rank at once (a barrier first), so it measures the transfer alone."
    );
    o
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
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return super::fail(format!("cannot find kc's own executable: {e}")),
    };
    // A free port for rank 0's store (the OS picks; a race with another program taking it
    // in between ends the job with rank 0's "cannot listen", not a hang).
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => return super::fail(format!("cannot find a free port for the rank store: {e}")),
    };
    let mut children: Vec<(u32, Child)> = Vec::new();
    let mut logs = Vec::new();
    for r in 0..world {
        let rout = rank_path(out, r);
        let log = rank_path(out, r).with_extension("log");
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
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let spawned = cmd
            .args(child_args(a, &rout))
            .env("RANK", r.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("LOCAL_RANK", r.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
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

    #[test]
    fn the_job_is_its_slowest_rank_and_all_its_energy() {
        let r = |rank, t, e| RankSummary {
            rank,
            trace_rank: rank,
            results: String::new(),
            device: String::new(),
            replay_us: Some(t),
            energy_j: Some(e),
            predicted_us: None,
            predicted_energy_j: None,
            collective_predicted_us: None,
            collective_traced_us: 0.0,
            traced_us: 0.0,
        };
        let j = summarize("graph", vec![r(0, 100.0, 1.0), r(1, 120.0, 1.5)]);
        assert_eq!(j.replay_us, Some(120.0));
        assert_eq!(j.energy_j, Some(2.5));
        assert_eq!(j.predicted_us, None);
        assert!(render(&j).contains("job: replay 120.0 us"));
    }
}
