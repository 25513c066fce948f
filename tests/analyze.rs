//! `kc analyze` and `kc diff` on real traces: the tables add up (per iteration busy + idle
//! = span, busy <= the kernel sum, the kernel table's total = the trace's GPU time), a
//! graph file analyses as its trace does, and two decode traces of different runs name the
//! attention kernels one launched and the other did not.

use crate::common::*;

#[test]
fn the_tables_add_up_on_every_shared_h100_trace() {
    for name in H100 {
        let (g, _) = ingest(&[h100(name)]);
        let a = kc::analyze::analyze(&g);
        let total: f64 = a.kernels.iter().map(|k| k.total_us).sum();
        assert!(
            (total - g.gpu_time_ns() as f64 / 1000.0).abs() < 1e-3,
            "{name}"
        );
        let count: u64 = a.kernels.iter().map(|k| k.count).sum();
        assert_eq!(count as usize, g.graph.node_count(), "{name}");
        for r in &a.iterations {
            assert!(
                (r.busy_us + r.idle_us - r.span_us).abs() < 1e-6,
                "{name} {r:?}"
            );
            assert!(r.busy_us <= r.kernel_sum_us + 1e-6, "{name} {r:?}");
            assert!(r.concurrent_us >= 0.0 && r.compute_comm_overlap_us >= 0.0);
            assert!(r.kernel_us + r.memcpy_us + r.memset_us >= r.busy_us - 1e-6);
        }
        for k in a.kernels.iter().chain(&a.ops) {
            assert!(k.min_us <= k.p50_us && k.p50_us <= k.p90_us && k.p90_us <= k.max_us);
        }
        // Every activity's time counts in exactly one op row.
        let ops_total: f64 = a.ops.iter().map(|k| k.total_us).sum();
        assert!((ops_total - total).abs() < 1e-3, "{name}");
        assert_eq!(
            a.iterations
                .iter()
                .filter(|r| r.iteration.is_some())
                .count(),
            3,
            "{name}"
        );
        assert!(a.traced_iteration_mean_us.is_some());
    }
    // The three-stream pipeline runs streams side by side.
    let (g, _) = ingest(&[h100("multistream_gemm_bf16")]);
    let a = kc::analyze::analyze(&g);
    assert!(a
        .iterations
        .iter()
        .any(|r| r.streams == 3 && r.concurrent_us > 0.0));
}

#[test]
fn collectives_and_their_overlap_are_broken_out_per_rank() {
    let opts = kc::ingest::IngestOptions::default();
    let (g, _) = kc::ingest::ingest(&[shared().join("traces/h200x2")], &opts).unwrap();
    let a = kc::analyze::analyze(&g);
    let ranks: Vec<u32> = a.iterations.iter().map(|r| r.rank).collect();
    assert!(ranks.contains(&0) && ranks.contains(&1));
    assert!(a.iterations.iter().all(|r| r.collective_us > 0.0));
}

#[test]
fn two_decode_runs_differ_by_their_attention_kernels() {
    let a = shared().join("examples/h100t2/gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz");
    let b = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/capture/gpt2s4l_decode_b4.pt.trace.json.gz");
    let (mut ga, _) = ingest(&[a]);
    let (mut gb, _) = ingest(&[b]);
    let d = kc::analyze::diff::diff_lowered(&mut ga, "A", &mut gb, "B");
    // By family: attention's kernels changed (cuDNN SDPA for memory-efficient attention).
    let att = d.families.iter().find(|r| r.name == "attention").unwrap();
    assert!(att.us_a > 0.0 && att.us_b > 0.0, "{att:?}");
    let fam_a: f64 = d.families.iter().map(|r| r.us_a).sum();
    let k_a: f64 = d.kernels.iter().map(|r| r.us_a).sum();
    assert!(
        (fam_a - k_a).abs() < 1e-6,
        "every activity in one family row"
    );
    assert!(
        d.new_kernels.iter().any(|k| k.contains("sdpa")),
        "{:?}",
        d.new_kernels
    );
    assert!(
        d.vanished_kernels.iter().any(|k| k.contains("fmha")),
        "{:?}",
        d.vanished_kernels
    );
    // Graph replays line up as one op row on both sides.
    let replay = d
        .ops
        .iter()
        .find(|r| r.name == "(CUDA graph replay)")
        .unwrap();
    assert_eq!((replay.count_a, replay.count_b), (120.0, 106.0));
    let same = kc::analyze::diff::diff(&ga, "A", &ga, "A");
    assert!(same.new_kernels.is_empty() && same.vanished_kernels.is_empty());
    assert!(same.kernels.iter().all(|r| r.delta_us == 0.0));
}

#[test]
fn an_eager_twin_against_its_graph_launch_by_launch() {
    // The same decode step of one run, eager and as the model's own CUDA graph: the eager
    // trace's kernels all start after the GPU sat idle, the graph's back to back, and the
    // same kernels take less time back to back.
    let e = shared().join("examples/h100t2");
    let (ga, _) = ingest(&[e.join("gpt2s4l_decode_b4_eager.pt.trace.json.gz")]);
    let (gb, _) = ingest(&[e.join("gpt2s4l_decode_b4_graphreplay.pt.trace.json.gz")]);
    let d = kc::analyze::diff::diff(&ga, "eager", &gb, "graph");
    let l = d.launches.clone().expect("both sides launch");
    assert_eq!((l.iterations_a, l.iterations_b), (3, 3), "{l:?}");
    assert!(l.aligned * 10 >= l.per_iteration_a * 9, "{l:?}");
    assert!(l.aligned <= l.per_iteration_a.min(l.per_iteration_b));
    assert_eq!(l.same_geometry, l.aligned, "a twin launches alike");
    assert_eq!(l.back_to_back_a, 0, "{l:?}");
    assert!(l.back_to_back_b * 10 >= l.aligned * 9, "{l:?}");
    assert!(l.signed_median_pct.unwrap() < -2.0, "{l:?}");
    assert!(l.median_abs_pct.unwrap() >= l.signed_median_pct.unwrap().abs() - 1e-9);
    assert!(l.aligned_us_a <= d.a.kernel_sum_per_iteration_us * 1.5);
    // A trace against itself: every launch aligned, none changed.
    let same = kc::analyze::diff::diff(&ga, "eager", &ga, "eager")
        .launches
        .unwrap();
    assert_eq!(same.aligned, same.per_iteration_a);
    assert_eq!(same.median_abs_pct, Some(0.0));
    assert_eq!(same.back_to_back_median_abs_pct, None);
    let md = kc::analyze::diff::markdown(&d, 3);
    assert!(md.contains("## Launch by launch"), "{md}");
}

#[test]
fn cli_writes_csv_tables_and_a_markdown_diff_and_reads_graph_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = h100("multistream_gemm_bf16");
    let csv = dir.path().join("tables");
    let o = kc(&[
        "analyze",
        t.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let from_trace: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for f in ["kernels.csv", "iterations.csv", "launch_latency.csv"] {
        let text = std::fs::read_to_string(csv.join(f)).unwrap();
        assert!(text.lines().count() > 1, "{f}");
    }
    let g = dir.path().join("m.kcir");
    assert!(
        kc(&["ingest", t.to_str().unwrap(), "-o", g.to_str().unwrap()])
            .status
            .success()
    );
    let o = kc(&["analyze", g.to_str().unwrap(), "--json"]);
    let from_graph: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(from_trace, from_graph);
    let md = dir.path().join("diff.md");
    let svg = dir.path().join("diff.svg");
    let o = kc(&[
        "diff",
        t.to_str().unwrap(),
        g.to_str().unwrap(),
        "-o",
        md.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("# kc diff") && text.contains("Kernels only in B (new): 0"));
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("<rect"));
}

#[test]
fn gemms_sit_under_the_roofline_with_the_work_their_shapes_say() {
    let (mut g, _) = ingest(&[h100("gpt2_train_bf16")]);
    let a = kc::analyze::analyze_lowered(&mut g);
    let r = &a.roofline;
    assert!(r.peak.is_some(), "the H100's peaks are known: {}", r.device);
    assert!(
        r.covered_pct > 50.0 && r.covered_pct <= 100.0,
        "{}",
        r.covered_pct
    );
    let gemms: Vec<_> = r.rows.iter().filter(|k| k.against == "tensor16").collect();
    assert!(!gemms.is_empty());
    for k in &gemms {
        assert!(k.flops > 0.0 && k.intensity > 1.0, "{k:?}");
        let f = k.fraction_of_roof.unwrap();
        assert!(f > 0.0 && f <= 1.0, "a GEMM above its compute roof: {k:?}");
    }
    // The work is the recovered M, N, K: every GEMM unit's FLOPs add up to the rows'.
    let unit_flops: f64 = g
        .instances
        .iter()
        .filter_map(|i| match &g.units[i.unit.0 as usize].params {
            kc_ir::UnitParams::Gemm(c) => Some(2.0 * (c.m * c.n * c.k * c.batch.max(1)) as f64),
            _ => None,
        })
        .sum();
    // The rows hold those and the attention ops' (4 b h s_q s_k d, the only other work).
    let row_flops: f64 = r.rows.iter().map(|k| k.flops).sum();
    let attention_flops = row_flops - unit_flops;
    assert!(
        attention_flops >= 0.0 && attention_flops < 0.1 * row_flops,
        "{unit_flops} GEMM FLOPs of {row_flops}"
    );
    // Convolutions carry their work too (ResNet-50's fprop kernels).
    let (mut g50, _) = ingest(&[h100("resnet50_b32")]);
    let r50 = kc::analyze::analyze_lowered(&mut g50).roofline;
    assert!(
        r50.rows.iter().any(|k| k.name.contains("fprop")
            && k.flops > 0.0
            && k.fraction_of_roof.unwrap() <= 1.0),
        "no convolution with FLOPs"
    );
    let svg = kc::analyze::roofline::svg(r);
    assert!(svg.starts_with("<svg") && svg.contains("<circle"));
}
