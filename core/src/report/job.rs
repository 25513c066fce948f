//! The job report of ranks replayed together (`kc exec --ranks all`, `kc report --job`):
//! per rank, the whole job (its slowest rank's time, every GPU's energy) and collective
//! time as its own row, as JSON, text and Markdown.
//!
//! Invariant: results are combined only when they are ranks of one job measured with the
//! plan given (its CRC), agree on the world size, which is the plan's, and are distinct
//! ranks inside it; anything else is refused naming the file.

use super::ReportError;
use crate::plan::Plan;
use crate::results::Results;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
pub fn summarize_files(files: &[PathBuf], plan_path: &Path) -> Result<JobSummary, ReportError> {
    let mut by_rank: std::collections::BTreeMap<u32, (Option<RankFile>, Option<RankFile>)> =
        Default::default();
    let refuse = |f: &Path, why: String| ReportError::Input {
        path: f.display().to_string(),
        why,
    };
    // The plan is read once; every rank's results must have been measured with it (by
    // its CRC), as plain `kc report --plan` requires of one results file.
    let (plan, crc) = super::read_plan_with_crc(plan_path)?;
    let ranks = plan.ranks().len() as u32;
    for f in files {
        let r = super::read_results(f)?;
        let job = r.job.clone().ok_or_else(|| {
            refuse(
                f,
                "not the results of a job's rank (kc exec --ranks)".into(),
            )
        })?;
        super::check_measured_with(plan_path, crc, &r, f)?;
        // Each file's world is the plan's, so all files agree on it.
        if job.world_size != ranks {
            return Err(refuse(
                f,
                format!(
                    "a rank of a job of {} ranks, but the plan {} holds {ranks}",
                    job.world_size,
                    plan_path.display()
                ),
            ));
        }
        if job.rank >= job.world_size {
            return Err(refuse(
                f,
                format!("rank {} outside a world of {}", job.rank, job.world_size),
            ));
        }
        let rank = job.rank;
        let slot = by_rank.entry(rank).or_default();
        let which = if r.mode == "graph" {
            &mut slot.0
        } else {
            &mut slot.1
        };
        if which.is_some() {
            return Err(refuse(
                f,
                format!("a second {} results file of rank {rank}", r.mode),
            ));
        }
        *which = Some((r, f.clone()));
    }
    if by_rank.is_empty() {
        return Err(ReportError::Refused(
            "kc report --job: no results given".into(),
        ));
    }
    let plan = &plan;
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

#[cfg(test)]
mod tests {
    use super::*;

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
