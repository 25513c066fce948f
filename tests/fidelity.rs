//! `kc exec --verify` without a GPU: kernel records CUPTI returned in a real H100 replay
//! (fixtures/cupti, written by `kc exec --verify --kernels-out`, with the plan they were
//! measured with) are matched against the trace's steps: counts, names, kernels the
//! replay added (cuDNN's workspace memsets), and in-context durations.

use kc::results::fidelity::{self, KernelRecord};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/cupti")
        .join(name)
}

fn load(stem: &str) -> (kc::plan::types::Plan, Vec<KernelRecord>) {
    let bytes = std::fs::read(fixture(&format!("{stem}.kcplan"))).unwrap();
    let plan = kc::plan::decode(&bytes, stem).unwrap();
    let f = std::fs::File::open(fixture(&format!("{stem}.kernels.json.gz"))).unwrap();
    let records: Vec<KernelRecord> =
        serde_json::from_reader(flate2::read::GzDecoder::new(f)).unwrap();
    (plan, records)
}

fn measure(stem: &str) -> fidelity::Fidelity {
    let (plan, records) = load(stem);
    // One stream: capture order is plan order.
    let steps = fidelity::traced_steps(
        &plan,
        plan.steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.unit, i as u32)),
    );
    fidelity::measure(&steps, &records)
}

#[test]
fn a_transformer_replay_launches_exactly_the_traced_kernels() {
    let f = measure("gpt2s4l_decode_b4_eager");
    assert_eq!((f.kernels_launched, f.kernels_traced), (261, 261));
    assert_eq!(
        (f.kernels_aligned, f.kernels_name_matched, f.kernels_extra),
        (261, 261, 0)
    );
    assert_eq!(f.steps_aligned, f.steps_with_kernels);
    assert!(f.cut.is_none() && f.first_mismatch.is_none());
    // As kc exec printed it on the H100: 773.7 us of kernels in context, 787.3 traced.
    assert!(
        (f.in_context_kernels_us - 773.7).abs() < 0.1,
        "{}",
        f.in_context_kernels_us
    );
    assert!(
        (f.aligned_traced_us - 787.3).abs() < 0.1,
        "{}",
        f.aligned_traced_us
    );
    assert!((f.step_median_abs_error_pct.unwrap() - 5.4).abs() < 0.1);
}

#[test]
fn a_cnn_replay_adds_cudnn_memsets_that_stay_with_their_convolutions() {
    let f = measure("resnet18_b8_cl_et");
    // The 12 memsets run as driver kernels: copies, not extra kernels.
    assert_eq!((f.kernels_launched, f.kernels_traced), (330, 330));
    assert_eq!((f.kernels_name_matched, f.kernels_extra), (330, 0));
    assert_eq!(f.copy_kernels, 12);
    let (_, records) = load("resnet18_b8_cl_et");
    assert_eq!(records.iter().filter(|r| r.name == "memset32").count(), 12);
    assert!((f.in_context_kernels_us - 1403.3).abs() < 0.1);
    // Every kernel is timed with a step, but the memsets that steps of their own (tier 1)
    // took: those are timed with no kernel step.
    let memsets_us: f64 = records
        .iter()
        .filter(|r| r.name == "memset32")
        .map(|r| (r.end_ns - r.start_ns) as f64 / 1000.0)
        .sum();
    let untimed = f.in_context_kernels_us - f.aligned_in_context_us;
    assert!(
        untimed > -1e-6 && untimed <= memsets_us + 1e-6,
        "{untimed} {memsets_us}"
    );
    // The CNN's kernels run longer in kc's graph than traced (batch norm the most).
    assert!(f.aligned_in_context_us > f.aligned_traced_us * 1.04);
    assert_eq!(f.worst_units[0].label, "aten::native_batch_norm");
}

/// The plan today's kc makes from the same trace has the same kernel steps as the one the records
/// were measured with, and records each kernel's traced launch geometry (plan version 5):
/// the replay's kernels are then matched by name and by grid and block.
#[test]
fn kernels_match_by_name_and_launch_geometry() {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/examples/h100t2");
    for (stem, want_matched) in [
        ("gpt2s4l_decode_b4_eager", 0.99),
        ("resnet18_b8_cl_et", 0.99),
    ] {
        let (old, records) = load(stem);
        let et = examples.join(format!("{stem}.et.json.gz"));
        let opts = kc::ingest::IngestOptions {
            shapes: et.exists().then_some(et),
            ..Default::default()
        };
        let (mut g, _) =
            kc::ingest::ingest(&[examples.join(format!("{stem}.pt.trace.json.gz"))], &opts)
                .unwrap();
        kc::lower::lower(&mut g).unwrap();
        let plan = kc::plan::build::build(&g);
        // The same kernel steps (copies an op made inside a replayed op now belong to that
        // op's step, where they were steps of their own when the records were measured).
        let kernel_steps = |p: &kc::plan::types::Plan| -> Vec<Vec<String>> {
            p.steps
                .iter()
                .map(|s| {
                    p.units[s.unit as usize]
                        .kernels
                        .iter()
                        .filter(|k| !fidelity::is_runtime_copy(k))
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .filter(|k| !k.is_empty())
                .collect()
        };
        assert_eq!(kernel_steps(&plan), kernel_steps(&old), "{stem}");
        assert_eq!(plan.kernel_geometry.len(), plan.units.len());
        let steps = fidelity::traced_steps(
            &plan,
            plan.steps
                .iter()
                .enumerate()
                .map(|(i, s)| (s.unit, i as u32)),
        );
        let f = fidelity::measure(&steps, &records);
        assert_eq!(f.kernels_geometry_known, f.kernels_name_matched, "{stem}");
        let share = f.kernels_geometry_matched as f64 / f.kernels_geometry_known as f64;
        println!(
            "{stem}: {} of {} name-matched kernels launched with the traced grid and block ({:.1} %)",
            f.kernels_geometry_matched,
            f.kernels_geometry_known,
            100.0 * share
        );
        assert!(share >= want_matched, "{stem}: {share}");
        // Without the geometry (an older plan), nothing is claimed about it.
        assert_eq!(measure(stem).kernels_geometry_known, 0);
    }
}
