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
    let plan = d.join("tp2_llama7b4l_s512.kcplan");
    let files: Vec<PathBuf> = [
        "tp.rank1.isolated.context.json",
        "tp.rank0.graph.json",
        "tp.rank1.graph.json",
        "tp.rank0.isolated.context.json",
    ]
    .iter()
    .map(|f| d.join(f))
    .collect();
    let j = kc::report::job::summarize_files(&files, &plan).unwrap();
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
    let md = kc::report::job::render_markdown(&j);
    assert!(md.contains("| **job** |") && md.contains("Collectives (NCCL)"));
    // Results of a single-GPU run are not a job's.
    let e = kc::report::job::summarize_files(&[d.join("tp.rank0alone.graph.json")], &plan)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not the results of a job's rank"), "{e}");
}

/// Results of other plans, or ranks outside the world or disagreeing on it, never make a
/// job figure (they did, exit 0, before: hostile2 case 7).
#[test]
fn a_job_is_made_only_of_ranks_of_this_plan() {
    let d = run_dir();
    let plan = d.join("tp2_llama7b4l_s512.kcplan");
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results");
    let with_job = |src: &Path, name: &str, rank: u64, world: u64| -> PathBuf {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(src).unwrap()).unwrap();
        v["job"] = serde_json::json!({"rank": rank, "world_size": world, "local_rank": rank, "trace_rank": rank});
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        p
    };
    // Two other models' results as ranks 0 and 1 of this plan: refused by CRC.
    let j0 = with_job(&fixtures.join("bloom560m_seq5.graph.json"), "j0.json", 0, 2);
    let j1 = with_job(
        &fixtures.join("gpt2s_b4s128_et.graph.json"),
        "j1.json",
        1,
        2,
    );
    let e = kc::report::job::summarize_files(&[j0, j1], &plan)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not the plan"), "{e}");
    // This plan's own ranks, relabelled out of range or with another world size.
    let r0 = d.join("tp.rank0.graph.json");
    for (rank, world, why) in [
        (7, 2, "outside a world of 2"),
        (0, 64, "holds 2"),
        (4294967295, 2, "outside"),
    ] {
        let bad = with_job(&r0, "bad.json", rank, world);
        let e = kc::report::job::summarize_files(&[bad], &plan)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{rank}/{world}: {e}");
    }
}
