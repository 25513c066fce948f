//! The job report of ranks replayed together (`kc report --job`), from the results of a
//! real run: the LLaMA-shaped TP=2 plan of ../shared/traces/h200x2 replayed on two H200s
//! with `kc exec --ranks all` (docs/results/h200x2-2026-11-24-nccl, with its plan).

use std::path::{Path, PathBuf};

fn run_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/h200x2-2026-11-24-nccl")
}

#[test]
fn the_job_report_has_every_rank_the_whole_job_and_the_collectives() {
    let d = run_dir();
    let plan = kc::plan::read(&d.join("tp2_llama7b4l_s512.kcplan")).unwrap();
    let files: Vec<PathBuf> = [
        "tp.rank1.isolated.context.json",
        "tp.rank0.graph.json",
        "tp.rank1.graph.json",
        "tp.rank0.isolated.context.json",
    ]
    .iter()
    .map(|f| d.join(f))
    .collect();
    let j = kc::cli::ranks::summarize_files(&files, &plan).unwrap();
    assert_eq!(j.world_size, 2);
    assert_eq!(j.mode, "graph and isolated");
    assert_eq!(
        j.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        vec![0, 1]
    );
    // The job's time is the slowest rank's, its energy the sum of the GPUs'.
    let slowest = j
        .ranks
        .iter()
        .filter_map(|r| r.replay_us)
        .fold(0.0, f64::max);
    assert_eq!(j.replay_us, Some(slowest));
    let energy: f64 = j.ranks.iter().filter_map(|r| r.energy_j).sum();
    assert!((j.energy_j.unwrap() - energy).abs() < 1e-12);
    // 24 all_reduces per rank: each rank's own traced time (rank 1's includes waiting for
    // rank 0), and the isolated collective the same on both ranks (they start together).
    let (r0, r1) = (&j.ranks[0], &j.ranks[1]);
    assert!(
        (r0.collective_traced_us - 823.0).abs() < 1.0,
        "{}",
        r0.collective_traced_us
    );
    assert!(r1.collective_traced_us > 3000.0);
    let (c0, c1) = (
        r0.collective_predicted_us.unwrap(),
        r1.collective_predicted_us.unwrap(),
    );
    assert!((c0 - c1).abs() / c0 < 0.05, "{c0} {c1}");
    let md = kc::cli::ranks::render_markdown(&j);
    assert!(md.contains("| **job** |") && md.contains("Collectives (NCCL)"));
    // Results of a single-GPU run are not a job's.
    let e =
        kc::cli::ranks::summarize_files(&[d.join("tp.rank0alone.graph.json")], &plan).unwrap_err();
    assert!(e.contains("not the results of a job's rank"), "{e}");
}
