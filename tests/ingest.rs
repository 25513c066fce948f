//! `kc ingest` on real traces: counts against an independent census, 100 % linking on the
//! H100 traces, every corpus file read (or refused with the expected reason), bad input
//! refused with a clear one-line error and exit code 2, and summary snapshots.

use crate::common::*;
use kc::ingest::summary::summarize;
use std::io::Write;

/// Counts from a census of each trace with Python's `json` module (kernels, memcpys,
/// memsets, distinct kernel names, sum of GPU durations in µs as exact decimals, streams).
const CENSUS: [(&str, u64, u64, u64, usize, &str, usize); 5] = [
    ("bloom560m_seq5", 2031, 3, 3, 36, "5147.334", 1),
    ("gpt2_train_bf16", 3402, 0, 219, 61, "62012.270", 1),
    ("llama7b8l_decode", 1161, 0, 0, 25, "6609.174", 1),
    ("resnet50_b32", 696, 0, 21, 21, "8651.548", 1),
    ("multistream_gemm_bf16", 15, 3, 3, 4, "1829.464", 3),
];

#[test]
fn h100_counts_match_the_census_and_all_gpu_ops_are_linked() {
    for (name, kernels, memcpys, memsets, names, gpu_us, streams) in CENSUS {
        let (g, diags) = ingest(&[h100(name)]);
        let s = summarize(&g, &diags);
        assert_eq!(s.kernels, kernels, "{name} kernels");
        assert_eq!(s.memcpys, memcpys, "{name} memcpys");
        assert_eq!(s.memsets, memsets, "{name} memsets");
        assert_eq!(s.unique_kernel_names, names, "{name} names");
        assert_eq!(s.streams, streams, "{name} streams");
        assert_eq!(s.devices, 1);
        // Exact: durations are summed as integer nanoseconds.
        let want_ns: i64 = gpu_us.replace('.', "").parse().unwrap();
        assert_eq!(g.gpu_time_ns(), want_ns, "{name} GPU time");
        assert_eq!(
            s.linked_to_op, s.gpu_ops,
            "{name}: every GPU op is linked to its cpu_op"
        );
        assert_eq!(s.diagnostics.total, 0, "{name}: {:?}", s.diagnostics);
        kc_ir::verify(&g).unwrap();
    }
}

#[test]
fn multistream_keeps_its_cross_stream_waits() {
    let (g, _) = ingest(&[h100("multistream_gemm_bf16")]);
    use petgraph::visit::EdgeRef;
    let cross: Vec<_> = g
        .graph
        .edge_references()
        .filter(|e| e.weight().kind.is_cross_stream())
        .map(|e| (&g.graph[e.source()], &g.graph[e.target()]))
        .collect();
    assert!(!cross.is_empty());
    for (a, b) in cross {
        assert_ne!(a.stream, b.stream);
        // A wait never points back in time.
        assert!(a.end_ns() <= b.start_ns, "{} > {}", a.end_ns(), b.start_ns);
    }
}

#[test]
fn timestamps_are_exact_nanoseconds_from_the_base() {
    let (g, _) = ingest(&[h100("bloom560m_seq5")]);
    let base = g.meta.ranks[0].base_time_ns;
    assert_eq!(base, 1_790_857_026_000_000_000);
    // The first kernel in the file is at ts 4410133510007.856 µs after the base.
    let first = g
        .graph
        .node_weights()
        .find(|n| n.correlation == 17)
        .expect("correlation 17");
    assert_eq!(first.start_ns, base + 4_410_133_510_007_856);
    assert_eq!(first.dur_ns, 4_544);
}

#[test]
fn the_graph_file_round_trips_and_rejects_corruption() {
    let (g, diags) = ingest(&[h100("multistream_gemm_bf16")]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.kcir");
    kc::ingest::write_graph(&g, &p).unwrap();
    let back = kc::ingest::read_graph(&p).unwrap();
    assert_eq!(kc_ir::text::to_text(&back), kc_ir::text::to_text(&g));
    assert_eq!(summarize(&back, &diags), summarize(&g, &diags));
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    std::fs::write(&p, &bytes).unwrap();
    let e = kc::ingest::read_graph(&p).unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    // A graph from another format version.
    let mut other = std::fs::read(dir.path().join("g.kcir")).unwrap();
    other[8] = 99;
    std::fs::write(&p, &other).unwrap();
    let e = kc::ingest::read_graph(&p).unwrap_err().to_string();
    assert!(e.contains("format version 99"), "{e}");
}

#[test]
fn two_ranks_make_one_graph_with_per_rank_nodes() {
    let d = shared().join("traces/h200x2");
    let (g, _) = ingest(std::slice::from_ref(&d));
    assert_eq!(g.meta.ranks.len(), 2);
    let ranks: std::collections::BTreeSet<u32> = g.graph.node_weights().map(|n| n.rank).collect();
    assert_eq!(ranks.into_iter().collect::<Vec<_>>(), vec![0, 1]);
    // The all_reduce kernels carry the collective metadata of record_param_comms.
    let coll: Vec<_> = g
        .graph
        .node_weights()
        .filter_map(|n| match &n.kind {
            kc_ir::NodeKind::Collective { info, .. } => Some(info),
            _ => None,
        })
        .collect();
    assert!(!coll.is_empty());
    assert!(
        coll.iter()
            .all(|i| i.collective == "allreduce" && i.group_size == Some(2)),
        "{coll:?}"
    );
    assert_eq!(coll[0].in_nelems, Some(2_097_152));
}

#[test]
fn the_dlrm_directory_ingests_as_eight_ranks() {
    let d = shared().join("traces/public/facebookresearch__param/dlrm_kineto");
    let (g, _) = ingest(&[d]);
    assert_eq!(g.meta.ranks.len(), 8);
    let mut ranks: Vec<u32> = g.meta.ranks.iter().map(|r| r.rank).collect();
    ranks.sort();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
}

/// Every file in the corpus ingests, except those with no GPU activity at all, which are
/// refused with a message that says so.
#[test]
fn every_corpus_trace_ingests_or_is_refused_for_having_no_gpu_activity() {
    let mut ok = 0;
    let mut refused = Vec::new();
    for p in corpus_traces() {
        match kc::ingest::ingest(std::slice::from_ref(&p), &Default::default()) {
            Ok((g, _)) => {
                kc_ir::verify(&g).unwrap();
                assert!(g.node_count() > 0);
                ok += 1;
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("no GPU activity"), "{}: {msg}", rel(&p));
                refused.push(rel(&p));
            }
        }
    }
    assert_eq!(
        refused,
        vec![
            "public/facebookresearch__HolisticTraceAnalysis/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
            "public/facebookresearch__HolisticTraceAnalysis/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
            "public/facebookresearch__HolisticTraceAnalysis/mtia_inference_trace/mtia_inference_rank_0.json.gz",
            "public/facebookresearch__HolisticTraceAnalysis/rank_unavailable/rank_not_found.json.gz",
        ],
        "the CPU-only trace, the CUPTI range-profiler trace (no kernel events), the MTIA trace (no CUDA activity) and the CPU-op-only trace"
    );
    assert!(ok >= 55, "{ok}");
}

#[test]
fn legacy_amd_and_odd_traces_read_their_special_fields() {
    // Legacy 2021: "Kernel"/"Runtime" categories, "external id", string tids "stream 7".
    let p = shared().join("traces/public/pytorch__kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz");
    let (g, _) = ingest(&[p]);
    let s = summarize(&g, &[]);
    assert_eq!(s.linked_to_op, s.gpu_ops);
    assert!(g.graph.node_weights().all(|n| n.stream == 7));
    // ROCm: hip* runtime calls, memcpy bytes from the runtime call's `size`.
    let p = shared().join("traces/public/facebookresearch__HolisticTraceAnalysis/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let (g, _) = ingest(&[p]);
    assert!(g.meta.ranks[0].rocm);
    let copy = g
        .graph
        .node_weights()
        .find_map(|n| match n.kind {
            kc_ir::NodeKind::Memcpy { bytes, kind, .. } => Some((bytes, kind)),
            _ => None,
        })
        .unwrap();
    assert_eq!(copy, (2560, kc_ir::MemcpyKind::HtoD));
    // An id beyond i64 and a kernel without args.
    let p = shared().join("traces/public/facebookresearch__HolisticTraceAnalysis/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz");
    let (g, diags) = ingest(&[p]);
    assert_eq!(g.node_count(), 1);
    assert!(diags.iter().any(|d| d.kind == "missing_field"));
    // cuda_sync events give cross-stream edges.
    let p = shared().join("traces/public/facebookresearch__HolisticTraceAnalysis/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz");
    let (g, _) = ingest(&[p]);
    assert!(g
        .graph
        .edge_weights()
        .any(|e| e.kind == kc_ir::EdgeKind::CudaSyncEvent));
    // Triton through cuLaunchKernel.
    let p = shared().join("traces/public/facebookresearch__HolisticTraceAnalysis/triton_example/triton_example.json.gz");
    let (g, _) = ingest(&[p]);
    let n = g.graph.node_weights().next().unwrap();
    assert_eq!(g.str(n.launch.as_ref().unwrap().api), "cuLaunchKernel");
    assert!(n.link.is_linked());
}

#[test]
fn shapes_merge_from_an_execution_trace() {
    let kineto = shared().join("traces/public/facebookresearch__param/linear_kineto.json.gz");
    let et = shared().join("traces/public/facebookresearch__param/linear_et.json.gz");
    let (before, _) = ingest(std::slice::from_ref(&kineto));
    assert_eq!(summarize(&before, &[]).ops_with_shapes, 0);
    let (g, _) = kc::ingest::ingest(
        &[kineto],
        &kc::ingest::IngestOptions {
            shapes: Some(et),
            progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    let s = summarize(&g, &[]);
    assert!(
        s.ops_with_shapes * 10 >= s.ops_kept * 9,
        "{} of {}",
        s.ops_with_shapes,
        s.ops_kept
    );
    // The aten::addmm ops got their shapes: input [512, 1024] in f32, as the ET records.
    let addmms: Vec<usize> = (0..g.ops.len())
        .filter(|&i| g.str(g.ops[i].name) == "aten::addmm")
        .collect();
    let shaped: Vec<usize> = addmms
        .iter()
        .copied()
        .filter(|&i| g.ops[i].args_source == kc_ir::ArgsSource::ExecutionTrace)
        .collect();
    assert!(
        shaped.len() * 10 >= addmms.len() * 9,
        "{} of {}",
        shaped.len(),
        addmms.len()
    );
    for i in shaped {
        let args = g.args(kc_ir::OpId(i as u32));
        assert_eq!(args.len(), 5, "op{i}");
        let input = args[1].tensor().unwrap();
        assert_eq!(input.dims, vec![512, 1024]);
        assert_eq!(input.dtype, kc_ir::DType::F32);
    }
}

#[test]
fn shapes_merge_from_a_jsonl_shape_log() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(
        &trace,
        r#"{"traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"External id": 7, "correlation": 99}},
 {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32_sliced1x4_nn", "pid": 0, "tid": 7, "ts": 30, "dur": 12.5, "args": {"device": 0, "stream": 7, "correlation": 99, "External id": 7, "grid": [4, 4, 1], "block": [128, 1, 1]}}
]}"#,
    )
    .unwrap();
    let shapes = dir.path().join("shapes.jsonl");
    std::fs::write(
        &shapes,
        "# kc shape log\n{\"external_id\": 7, \"name\": \"aten::mm\", \"dims\": [[64, 32], [32, 16]], \"types\": [\"float\", \"float\"], \"strides\": [[32, 1], [16, 1]]}\n",
    )
    .unwrap();
    let (mut g, _) = kc::ingest::ingest(
        &[trace],
        &kc::ingest::IngestOptions {
            shapes: Some(shapes),
            progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(g.ops[0].args_source, kc_ir::ArgsSource::ShapeLog);
    kc::lower::lower(&mut g).unwrap();
    assert_eq!(g.units[0].tier, kc_ir::Tier::Gemm);
}

fn write_temp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p.display().to_string()
}

fn refuse(path: &str, needle: &str) {
    let out = kc(&["ingest", path, "-o", &format!("{path}.kcir")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{path}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(path), "names the file: {err}");
    assert!(err.contains(needle), "{needle:?} in {err}");
    assert!(!err.contains("panicked"));
    assert!(
        !std::path::Path::new(&format!("{path}.kcir")).exists(),
        "nothing half-written"
    );
}

#[test]
fn bad_input_gets_one_clear_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    // Truncated in the middle of an event.
    let full = std::fs::read_to_string(shared().join(
        "traces/public/facebookresearch__HolisticTraceAnalysis/call_stack/backward_thread.json",
    ))
    .unwrap();
    refuse(
        &write_temp(&dir, "trunc.json", &full.as_bytes()[..full.len() / 2]),
        "byte ",
    );
    // A truncated gzip stream.
    let gz = std::fs::read(h100("multistream_gemm_bf16")).unwrap();
    refuse(
        &write_temp(&dir, "trunc.json.gz", &gz[..gz.len() / 2]),
        "truncated",
    );
    // JSON that is not a trace.
    refuse(
        &write_temp(&dir, "ref.json", br#"{"env": {}, "results": [1, 2]}"#),
        "no `traceEvents`",
    );
    // An Execution Trace given where a Kineto trace belongs is named as such.
    refuse(
        &write_temp(
            &dir,
            "linear_et.json.gz",
            &std::fs::read(
                shared().join("traces/public/facebookresearch__param/linear_et.json.gz"),
            )
            .unwrap(),
        ),
        "this is a PyTorch Execution Trace: pass it as `--shapes FILE`",
    );
    refuse(&write_temp(&dir, "text.json", b"hello world"), "byte 0");
    refuse(&write_temp(&dir, "empty.json", b""), "empty");
    refuse(
        &write_temp(&dir, "none.json", br#"{"traceEvents": []}"#),
        "no events",
    );
    // CPU-only.
    refuse(
        &write_temp(&dir, "cpu.json", br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}"#),
        "CPU-only",
    );
    // Wrong types, each naming the event.
    refuse(
        &write_temp(&dir, "events5.json", br#"{"traceEvents": 5}"#),
        "byte 16",
    );
    refuse(
        &write_temp(&dir, "ev.json", br#"{"traceEvents": [{"ph": "X"}, 7]}"#),
        "event 1",
    );
    refuse(
        &write_temp(&dir, "ts.json", br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1, "args": {"correlation": 1}}]}"#),
        "`ts` is not a number",
    );
    refuse(
        &write_temp(
            &dir,
            "name.json",
            br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": 12, "ts": 1, "dur": 1}]}"#,
        ),
        "`name` must be a string",
    );
    refuse(
        &write_temp(&dir, "args.json", br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": [1]}]}"#),
        "`args` must be an object",
    );
    refuse(
        &write_temp(
            &dir,
            "comma.json",
            br#"{"traceEvents": [{"ph": "X"} {"ph": "X"}]}"#,
        ),
        "byte 29",
    );
    // A missing file.
    let out = kc(&["ingest", "/nonexistent/trace.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn oddities_are_counted_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_temp(
        &dir,
        "odd.json",
        b"{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"bad\xff\xfename\", \"pid\": 0, \"tid\": 7, \"ts\": 5, \"dur\": 1, \"args\": {\"correlation\": 1, \"stream\": 7}},\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"neg\", \"pid\": 0, \"tid\": 7, \"ts\": 9, \"dur\": -3, \"args\": {\"correlation\": 2, \"stream\": 7}},\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nots\", \"pid\": 0, \"tid\": 7, \"dur\": 1},\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"big\", \"pid\": 0, \"tid\": 7, \"ts\": 20, \"dur\": 1, \"args\": {\"correlation\": 18446744073709551615, \"stream\": 7}}\n]}",
    );
    let (g, diags) = kc::ingest::ingest(&[p.into()], &Default::default()).unwrap();
    assert_eq!(g.node_count(), 3);
    let s = summarize(&g, &diags);
    for k in [
        "invalid_utf8",
        "negative_duration",
        "missing_field",
        "unlinked_gpu_op",
    ] {
        assert!(
            s.diagnostics.by_kind.contains_key(k),
            "{k}: {:?}",
            s.diagnostics
        );
    }
    assert!(g.strings.lookup("bad\u{fffd}\u{fffd}name").is_some());
}

#[test]
fn summary_snapshots() {
    let settings = insta_settings();
    let mut files: Vec<std::path::PathBuf> = H100.iter().map(|n| h100(n)).collect();
    for p in [
        "public/facebookresearch__HolisticTraceAnalysis/trace_file_list/inference_rank_1.json.gz",
        "public/facebookresearch__HolisticTraceAnalysis/nccl_parser_config/nccl_data.json.gz",
        "public/AMD-AGI__TraceLens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
        "public/pytorch__kineto/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
        "public/facebookresearch__HolisticTraceAnalysis/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        "h200x2/tp2_llama7b4l_s512.rank0.pt.trace.json.gz",
    ] {
        files.push(shared().join("traces").join(p));
    }
    for f in files {
        let (g, d) = ingest(std::slice::from_ref(&f));
        let s = summarize(&g, &d);
        let name = rel(&f).replace('/', "__");
        settings.bind(|| insta::assert_json_snapshot!(format!("ingest__{name}"), s));
    }
}

/// A graph launch covers many kernels with one correlation id: all of them link to the
/// launching op through it.
#[test]
fn graph_launches_link_every_kernel_they_cover() {
    let p = shared().join(
        "traces/public/AMD-AGI__TraceLens/inference/vllm_decode_full/graph_execution.json.gz",
    );
    let (g, _) = ingest(&[p]);
    let mut by_corr: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for n in g.graph.node_weights() {
        if n.launch
            .as_ref()
            .is_some_and(|l| g.str(l.api).ends_with("GraphLaunch"))
        {
            *by_corr.entry(n.correlation).or_default() += 1;
            assert!(n.link.is_linked());
        }
    }
    assert_eq!(by_corr.values().copied().max(), Some(421), "{by_corr:?}");
}

/// `ProfilerStep#N` annotations become iterations, and nodes learn which one launched them.
#[test]
fn profiler_steps_become_iterations() {
    let p = shared().join("traces/public/AMD-AGI__TraceLens/mi300/resnet_act_checkpoint.json.gz");
    let (g, _) = ingest(&[p]);
    assert_eq!(g.iterations.len(), 3);
    let steps: std::collections::BTreeSet<u32> =
        g.graph.node_weights().filter_map(|n| n.iteration).collect();
    assert_eq!(steps.len(), 3, "{steps:?}");
    let tagged = g
        .graph
        .node_weights()
        .filter(|n| n.iteration.is_some())
        .count();
    assert!(
        tagged * 10 >= g.node_count() * 9,
        "{tagged} of {}",
        g.node_count()
    );
}

/// Iterations without ProfilerStep markers: the shared traces hold 3 profiled iterations
/// each, found from their repeating kernel sequence; the tensor-parallel stack of identical
/// layers repeats with every layer too and shows no pause to tell iterations from layers,
/// so none are claimed there (rather than 12 "iterations" that would be layers).
#[test]
fn iterations_are_found_where_the_work_repeats_and_not_guessed_elsewhere() {
    for t in H100 {
        let (g, _) = ingest(&[h100(t)]);
        assert_eq!(g.iterations_per_rank(), 3, "{t}");
        assert_eq!(g.iterations_found_by(), "repeating kernel sequence");
    }
    let (g, _) = ingest(&[shared().join("traces/h200x2")]);
    assert_eq!(g.iterations_per_rank(), 0);
    assert_eq!(g.iterations_found_by(), "none");
}
