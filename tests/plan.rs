//! Replay plans: built from the H100 traces, round-tripped, every byte of a small plan
//! flipped and each rejected, other format versions rejected, random plans round-tripped.

use crate::common::*;
use kc::plan::{self, types::*};
use proptest::prelude::*;

fn plan_of(name: &str) -> Plan {
    let (g, _, _) = lowered(name);
    let p = plan::build::build(&g);
    p.check().unwrap();
    p
}

#[test]
fn plans_account_for_every_invocation() {
    for name in H100 {
        let (g, _, _) = lowered(name);
        let p = plan::build::build(&g);
        p.check().unwrap();
        assert_eq!(p.units.len(), g.units.len());
        let inv: u64 = p.units.iter().map(|u| u.invocations).sum();
        assert_eq!(inv as usize, p.steps.len(), "{name}");
        let traced: i64 = p.steps.iter().map(|s| s.traced_ns).sum();
        assert_eq!(traced, g.gpu_time_ns(), "{name}");
        assert_eq!(p.header.traced_gpu_ns, g.gpu_time_ns());
        // Steps are in trace order.
        assert!(p
            .steps
            .windows(2)
            .all(|w| w[0].traced_start_ns <= w[1].traced_start_ns));
        assert!(p.memory.device_bytes > 0);
    }
}

#[test]
fn gemm_operands_get_buffers_large_enough() {
    let p = plan_of("bloom560m_seq5");
    let mut seen = 0;
    for u in &p.units {
        if let UnitCall::Gemm(g) = &u.call {
            let a = &p.buffers[g.a as usize];
            let (rows, cols) = if g.transa == Op::N {
                (g.m, g.k)
            } else {
                (g.k, g.m)
            };
            assert!(
                a.bytes >= (rows * cols * 2) as u64,
                "unit {}: A {} bytes",
                u.id,
                a.bytes
            );
            let c = &p.buffers[g.c as usize];
            assert!(c.bytes >= (g.m * g.n * 2) as u64);
            seen += 1;
        }
    }
    assert_eq!(seen, 7);
}

#[test]
fn multistream_plan_keeps_three_streams_and_waits() {
    let p = plan_of("multistream_gemm_bf16");
    assert_eq!(p.streams.len(), 3);
    let waits: usize = p.steps.iter().map(|s| s.waits_on.len()).sum();
    assert!(waits >= 3, "{waits}");
    // The DtoH copy lands in pinned host memory.
    let copy = p
        .units
        .iter()
        .find(|u| {
            matches!(
                u.call,
                UnitCall::Memcpy {
                    kind: CopyKind::DtoH,
                    ..
                }
            )
        })
        .unwrap();
    if let UnitCall::Memcpy { dst, bytes, .. } = copy.call {
        assert_eq!(p.buffers[dst as usize].location, Location::PinnedHost);
        assert_eq!(bytes, 8 << 20);
    }
}

/// cuDNN runs RegNetX's grouped convolutions on its own streams, forked from the calling
/// stream and joined back inside the op. Replayed whole (tier 3), the op forks again, so
/// its step goes on the calling stream: the plan has the one stream the model's program
/// has, and no waits of its own around the library's fork.
#[test]
fn a_librarys_fork_replays_on_its_calling_stream() {
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/modern/regnetx32gf_b32_cl.pt.trace.json.gz");
    let (mut g, _) = ingest(&[trace]);
    let streams: std::collections::BTreeSet<u64> =
        g.graph.node_weights().map(|n| n.stream).collect();
    assert_eq!(streams.len(), 5, "{streams:?}");
    let (_, diags) = kc::lower::lower(&mut g).expect("lower");
    let forks: Vec<_> = diags
        .iter()
        .filter(|d| d.kind == "library_fork_on_calling_stream")
        .collect();
    assert_eq!(forks.len(), 1);
    assert_eq!(forks[0].count, 21, "{}", forks[0].message);
    assert!(forks[0].message.contains("aten::cudnn_convolution"));
    // Every instance, the forked ones among them, on the stream the model launched from.
    assert!(g.instances.iter().all(|i| i.stream == 7));
    let p = plan::build::build(&g);
    assert_eq!(p.streams.len(), 1);
    assert_eq!(p.steps.iter().map(|s| s.waits_on.len()).sum::<usize>(), 0);
}

#[test]
fn plans_round_trip_through_the_file() {
    for name in H100 {
        let p = plan_of(name);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.kcplan");
        plan::write(&p, &f).unwrap();
        assert_eq!(plan::read(&f).unwrap(), p, "{name}");
    }
}

/// A flipped byte anywhere (the low and the high bit of every byte) is caught by the magic,
/// the version, the length or the checksum, and never decoded into a different plan (a
/// version flipped to an older one whose bodies read the same is the one flip accepted).
#[test]
fn every_flipped_byte_is_rejected() {
    let p = plan_of("multistream_gemm_bf16");
    let bytes = plan::encode(&p).unwrap();
    assert!(bytes.len() < 4096, "a small plan: {}", bytes.len());
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match plan::decode(&b, "flipped.kcplan") {
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.starts_with("flipped.kcplan: "), "{m}");
                }
                // Version 7 only appended an enum variant, so a version-7 body labelled
                // version 6 reads as the same plan: accepted, but never as another plan.
                Ok(q) if (8..12).contains(&i) => {
                    assert_eq!(q, p, "byte {i} flipped with {mask:#x} decoded another plan")
                }
                Ok(_) => panic!("byte {i} flipped with {mask:#x} was accepted"),
            }
        }
    }
    // Truncation and trailing garbage.
    assert!(plan::decode(&bytes[..bytes.len() - 1], "t").is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(plan::decode(&longer, "t").is_err());
}

/// The plan the committed results were measured with is a version-1 plan: still read,
/// with its iterations marked as not recorded.
#[test]
fn version_1_plans_are_still_read() {
    let p = plan::read(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/results/bloom560m_seq5.kcplan"),
    )
    .unwrap();
    assert_eq!(p.units.len(), 44);
    assert_eq!(p.iterations.count, 0);
    assert!(p.iterations.found_by.contains("version 1"));
    // A current plan of the same trace records its 3 iterations.
    let now = plan_of("bloom560m_seq5");
    assert_eq!(now.iterations.count, 3);
    assert_eq!(now.iterations.found_by, "repeating kernel sequence");
}

#[test]
fn other_format_versions_are_refused_by_name() {
    let p = plan_of("multistream_gemm_bf16");
    let mut bytes = plan::encode(&p).unwrap();
    bytes[8..12].copy_from_slice(&(PLAN_FORMAT_VERSION + 1).to_le_bytes());
    let e = plan::decode(&bytes, "old.kcplan").unwrap_err().to_string();
    assert!(
        e.contains(&format!("format version {}", PLAN_FORMAT_VERSION + 1)),
        "{e}"
    );
    assert!(
        e.contains(&format!("reads version {PLAN_FORMAT_VERSION}")),
        "{e}"
    );
    // Version 11 only appended a fill variant: a version-10 plan reads as it is.
    let mut v10 = plan::encode(&p).unwrap();
    v10[8..12].copy_from_slice(&10u32.to_le_bytes());
    assert_eq!(plan::decode(&v10, "v10.kcplan").unwrap(), p);
    // A graph file is not a plan.
    let (g, _) = ingest(&[h100("multistream_gemm_bf16")]);
    let gbytes = kc::envelope::encode(&kc::ingest::GRAPH_FILE, &g).unwrap();
    let e = plan::decode(&gbytes, "g.kcir").unwrap_err().to_string();
    assert!(e.contains("not a kc plan file"), "{e}");
}

#[test]
fn a_plan_with_an_out_of_range_index_is_refused() {
    let mut p = plan_of("multistream_gemm_bf16");
    p.steps[3].unit = 999;
    let bytes = plan::encode(&p).unwrap();
    let e = plan::decode(&bytes, "bad.kcplan").unwrap_err().to_string();
    assert!(e.contains("unit 999 out of range"), "{e}");
}

#[test]
fn cli_plan_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("m.kcir");
    let trace = h100("multistream_gemm_bf16");
    assert!(
        kc(&["ingest", trace.to_str().unwrap(), "-o", g.to_str().unwrap()])
            .status
            .success()
    );
    let lowered = dir.path().join("m.lowered.kcir");
    assert!(kc(&[
        "lower",
        "--tiers",
        g.to_str().unwrap(),
        "-o",
        lowered.to_str().unwrap()
    ])
    .status
    .success());
    let plan_path = dir.path().join("m.kcplan");
    let out = kc(&[
        "plan",
        lowered.to_str().unwrap(),
        "-o",
        plan_path.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["streams"], 3);
    let out = kc(&["plan", "show", plan_path.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"], w["summary"]);
    // An unlowered graph is refused.
    let out = kc(&["plan", g.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not lowered"));
}

fn arb_elem() -> impl Strategy<Value = ElemType> {
    prop_oneof![
        Just(ElemType::F16),
        Just(ElemType::BF16),
        Just(ElemType::F32),
        Just(ElemType::I64)
    ]
}

fn arb_unit(id: u32, nbuf: u32) -> impl Strategy<Value = PlanUnit> {
    let call = prop_oneof![
        (1u64..1 << 30, 0..nbuf, 0..nbuf).prop_map(|(bytes, src, dst)| UnitCall::Memcpy {
            kind: CopyKind::HtoD,
            bytes,
            src,
            dst
        }),
        (1u64..1 << 20, any::<u8>(), 0..nbuf).prop_map(|(bytes, value, dst)| UnitCall::Memset {
            bytes,
            value,
            dst
        }),
        (
            1i64..5000,
            1i64..5000,
            1i64..5000,
            arb_elem(),
            0..nbuf,
            any::<f64>()
        )
            .prop_map(move |(m, n, k, t, s, alpha)| {
                UnitCall::Gemm(GemmParams {
                    transa: Op::T,
                    transb: Op::N,
                    m,
                    n,
                    k,
                    lda: k,
                    ldb: k,
                    ldc: m,
                    batch: 1,
                    stride_a: 0,
                    stride_b: 0,
                    stride_c: 0,
                    a_type: t,
                    b_type: t,
                    c_type: t,
                    compute_type: ElemType::F32,
                    alpha,
                    beta: 0.0,
                    epilogue: Epilogue::None,
                    a: s,
                    b: s,
                    c: s,
                    bias: None,
                })
            }),
        (
            "[a-z_:]{1,20}",
            proptest::collection::vec((proptest::collection::vec(1i64..64, 0..4), 0..nbuf), 0..4)
        )
            .prop_map(|(op, ts)| {
                UnitCall::AtenOp {
                    op,
                    args: ts
                        .into_iter()
                        .map(|(dims, slot)| {
                            AtenArg::Tensor(TensorArg {
                                strides: vec![1; dims.len()],
                                dims,
                                dtype: ElemType::F16,
                                slot,
                            })
                        })
                        .collect(),
                }
            }),
        ".{0,30}".prop_map(|reason| UnitCall::NotReplayable { reason }),
    ];
    (call, 1u64..1000, 0i64..1 << 40, ".{0,40}").prop_map(
        move |(call, invocations, traced, label)| PlanUnit {
            id,
            tier: PlanTier::Runtime,
            family: "x".into(),
            label,
            call,
            kernels: vec!["k".into()],
            invocations,
            traced_ns_total: traced,
            slots: vec![0],
            cold_rotation: 3,
        },
    )
}

fn arb_plan() -> impl Strategy<Value = Plan> {
    (1u32..8, 1usize..6).prop_flat_map(|(nbuf, nunits)| {
        let units: Vec<_> = (0..nunits as u32).map(|i| arb_unit(i, nbuf)).collect();
        (
            units,
            proptest::collection::vec(1u64..1 << 32, nbuf as usize),
        )
            .prop_map(move |(units, sizes)| {
                let steps = (0..units.len() as u32)
                    .map(|i| Step {
                        unit: i,
                        stream: 0,
                        waits_on: if i > 0 { vec![i - 1] } else { vec![] },
                        traced_ns: 5,
                        traced_start_ns: i as i64,
                    })
                    .collect();
                let mut p = Plan {
                    header: PlanHeader {
                        kc_version: "t".into(),
                        sources: vec![],
                        devices: vec![],
                        cuda_runtime_version: None,
                        traced_gpu_ns: 1,
                        replayable_traced_ns: 1,
                    },
                    streams: vec![PlanStream {
                        rank: 0,
                        device: 0,
                        trace_stream: 7,
                    }],
                    buffers: sizes
                        .into_iter()
                        .map(|bytes| Buffer {
                            bytes,
                            location: Location::Device,
                        })
                        .collect(),
                    units,
                    steps,
                    memory: MemoryPlan {
                        device_bytes: 1,
                        pinned_host_bytes: 0,
                        cold_extra_peak_bytes: 0,
                        l2_bytes: 50 << 20,
                    },
                    iterations: PlanIterations {
                        count: 3,
                        found_by: "ProfilerStep markers".into(),
                    },
                    dataflow: None,
                    binaries: Vec::new(),
                    kernel_geometry: Vec::new(),
                    aten_calls: vec![None; nunits],
                    math: Default::default(),
                    values: Default::default(),
                    bound_reads: Vec::new(),
                };
                // Tier-3 units carry their built call (or become not replayable).
                p.store_calls();
                p
            })
    })
}

proptest! {
    #[test]
    fn random_plans_round_trip(p in arb_plan()) {
        prop_assume!(p.units.iter().all(|u| match &u.call { UnitCall::Gemm(g) => !g.alpha.is_nan(), _ => true }));
        let bytes = plan::encode(&p).unwrap();
        prop_assert_eq!(plan::decode(&bytes, "p").unwrap(), p);
    }
}

/// A plan of two tensor-parallel ranks: one GPU replays one rank, so the executor's program
/// and invocation counts cover only the chosen rank's steps.
#[test]
fn multi_rank_plans_replay_one_rank() {
    let (mut g, _) = ingest(&[shared().join("traces/h200x2")]);
    kc::lower::lower(&mut g).unwrap();
    let p = plan::build::build(&g);
    assert_eq!(kc::exec::replay_rank(&p, None).unwrap(), 0);
    assert_eq!(kc::exec::replay_rank(&p, Some(1)).unwrap(), 1);
    assert!(kc::exec::replay_rank(&p, Some(2)).is_err());
    let streams = p.streams.clone();
    let on0 = move |s: &Step| streams[s.stream as usize].rank == 0;
    let steps0 = p.steps.iter().filter(|s| on0(s)).count();
    let steps1 = p.steps.len() - steps0;
    assert!(steps0 > 0 && steps1 > 0);
    let n0: u64 = kc::exec::invocations_on_rank(&p, 0).iter().sum();
    assert_eq!(n0 as usize, steps0);
    let prog = kc::plan::schedule::graph_program(&p, on0);
    assert_eq!(prog.launched, steps0);
    assert_eq!(prog.skipped, steps1);
}

/// Multi-rank plans prove their ranks issue the same collectives in the same order (NCCL
/// would hang otherwise), or name the first divergence.
#[test]
fn collectives_are_matched_across_ranks() {
    // Read as ranks whatever they say: the MI300 folder below is the case of files that
    // are not ranks of one run, which kc ingest refuses without --as-ranks.
    let plan_of_dir = |dir: &str| {
        let opts = kc::ingest::IngestOptions {
            as_ranks: true,
            ..Default::default()
        };
        let (mut g, _) = kc::ingest::ingest(&[shared().join(dir)], &opts).unwrap();
        kc::lower::lower(&mut g).unwrap();
        kc::plan::build::build(&g)
    };
    let tp = kc::plan::collectives::match_ranks(&plan_of_dir("traces/h200x2"))
        .unwrap()
        .unwrap();
    assert_eq!(tp.ranks, vec![0, 1]);
    assert_eq!(
        tp.per_rank, 24,
        "all_reduce after attention and MLP, 4 layers, 3 forwards"
    );
    assert!(
        tp.kinds.keys().all(|k| k.starts_with("allreduce")),
        "{:?}",
        tp.kinds
    );
    let dlrm = kc::plan::collectives::match_ranks(&plan_of_dir(
        "traces/public/facebookresearch__param/dlrm_kineto",
    ))
    .unwrap()
    .unwrap();
    assert_eq!((dlrm.ranks.len(), dlrm.per_rank), (8, 8));
    // TraceLens's MI300 folder holds single-GPU traces of different models: not one job.
    let e =
        kc::plan::collectives::match_ranks(&plan_of_dir("traces/public/AMD-AGI__TraceLens/mi300"))
            .unwrap_err();
    assert!(
        e.contains("would wait forever") || e.contains("differs"),
        "{e}"
    );
    // A single-rank plan has none to match.
    assert!(
        kc::plan::collectives::match_ranks(&plan_of("bloom560m_seq5"))
            .unwrap()
            .is_none()
    );
}

/// Every collective of a multi-rank plan is one NCCL call kc can issue on that many ranks
/// (kind, element type, counts), decided at `kc plan` time; what it cannot issue is named
/// there, so no rank finds out while its partners wait.
#[test]
fn collective_calls_are_built_and_validated_for_the_job() {
    use kc::plan::collectives::{CollectiveCall, CollectiveKind};
    // Read as ranks whatever they say: the MI300 folder below is the case of files that
    // are not ranks of one run, which kc ingest refuses without --as-ranks.
    let plan_of_dir = |dir: &str| {
        let opts = kc::ingest::IngestOptions {
            as_ranks: true,
            ..Default::default()
        };
        let (mut g, _) = kc::ingest::ingest(&[shared().join(dir)], &opts).unwrap();
        kc::lower::lower(&mut g).unwrap();
        kc::plan::build::build(&g)
    };
    let tp = plan_of_dir("traces/h200x2");
    let calls: Vec<CollectiveCall> = tp
        .units
        .iter()
        .filter(|u| u.tier == PlanTier::Collective)
        .map(|u| CollectiveCall::from_plan(&u.call, 2).unwrap())
        .collect();
    assert_eq!(calls.len(), 1, "one all_reduce unit");
    let c = &calls[0];
    assert_eq!(c.kind, CollectiveKind::AllReduce);
    assert_eq!((c.dtype.as_str(), c.elem_bytes), ("Half", 2));
    // Batch 1 x seq 512 x hidden 4096.
    assert_eq!((c.in_nelems, c.out_nelems), (2_097_152, 2_097_152));
    assert!(CollectiveCall::from_plan(&tp.units[0].call, 2).is_err());
    // The same unit on a job of 4 ranks is another communicator: refused.
    let u = tp
        .units
        .iter()
        .find(|u| u.tier == PlanTier::Collective)
        .unwrap();
    let e = CollectiveCall::from_plan(&u.call, 4).unwrap_err();
    assert!(e.contains("sub-group"), "{e}");
    // DLRM's 8 ranks (an older trace): its NCCL kernels carry no record_param_comms, so
    // the plan names every collective as not replayable, and why; the ranks' sequences
    // still match.
    let dlrm = plan_of_dir("traces/public/facebookresearch__param/dlrm_kineto");
    let named: Vec<&str> = dlrm
        .units
        .iter()
        .filter(|u| u.family == "collective")
        .map(|u| match &u.call {
            kc::plan::types::UnitCall::NotReplayable { reason } => reason.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(!named.is_empty());
    assert!(
        named.iter().all(|r| r.contains("record_param_comms")),
        "{named:?}"
    );
    assert!(kc::plan::collectives::match_ranks(&dlrm).unwrap().is_some());
    // Kinds by name, as the profiler and c10d spell them.
    for (n, k) in [
        ("allreduce", CollectiveKind::AllReduce),
        ("_allgather_base", CollectiveKind::AllGather),
        (
            "all_gather_into_tensor_coalesced",
            CollectiveKind::AllGather,
        ),
        (
            "reduce_scatter_tensor_coalesced",
            CollectiveKind::ReduceScatter,
        ),
        ("broadcast", CollectiveKind::Broadcast),
        ("all_to_all", CollectiveKind::AllToAll),
    ] {
        assert_eq!(CollectiveKind::of(n), Some(k), "{n}");
    }
    assert_eq!(CollectiveKind::of("wait"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// A bound read is accepted exactly when it names an operand of its step and an earlier
    /// producing step; any other is refused as the plan is read, never followed.
    #[test]
    fn bound_reads_out_of_range_are_refused(step in 0u32..400, operand in 0u32..8, producer in 0u32..400) {
        static PLAN: std::sync::OnceLock<Plan> = std::sync::OnceLock::new();
        let mut p = PLAN.get_or_init(|| plan_of("bloom560m_seq5")).clone();
        let slots = p.steps.get(step as usize).map_or(0, |s| p.units[s.unit as usize].slots.len());
        let ok = producer < step && (step as usize) < p.steps.len() && (operand as usize) < slots;
        p.bound_reads = vec![BoundRead { step, operand, producer_step: producer, output: 0, byte_offset: 0 }];
        let bytes = plan::encode(&p).unwrap();
        prop_assert_eq!(plan::decode(&bytes, "p").is_ok(), ok);
    }
}
