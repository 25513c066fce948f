//! The command line as a newcomer meets it (issue 17): every verb's every argument has help
//! text, every verb that prints a summary takes --json, and output flags are spelled one way.

use crate::common::*;

/// Verbs and sub-verbs, read from `kc --help` and `kc VERB --help` themselves, so a new
/// verb is walked without editing this test.
fn verbs() -> Vec<Vec<String>> {
    fn commands(help: &str) -> Vec<String> {
        help.split("Commands:")
            .nth(1)
            .map(|rest| {
                rest.lines()
                    .skip(1)
                    .take_while(|l| l.starts_with("  "))
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|v| *v != "help")
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
    let top = String::from_utf8(kc(&["--help"]).stdout).unwrap();
    let mut out = Vec::new();
    for v in commands(&top) {
        let help = String::from_utf8(kc(&[&v, "--help"]).stdout).unwrap();
        for sub in commands(&help) {
            out.push(vec![v.clone(), sub]);
        }
        out.push(vec![v]);
    }
    out
}

/// (argument, has help) for every entry under Arguments: and Options: of `-h` output.
fn arguments(help: &str) -> Vec<(String, bool)> {
    let lines: Vec<&str> = help.lines().collect();
    let mut out = Vec::new();
    let mut in_section = false;
    for (i, l) in lines.iter().enumerate() {
        if *l == "Arguments:" || *l == "Options:" {
            in_section = true;
            continue;
        }
        if l.is_empty() || !l.starts_with(' ') {
            in_section = false;
            continue;
        }
        let t = l.trim_start();
        let indent = l.len() - t.len();
        if !in_section
            || indent > 6
            || !(t.starts_with('-') || t.starts_with('<') || t.starts_with('['))
        {
            continue;
        }
        // Help follows the argument after two spaces, or on the next, deeper line.
        let same_line = t.split("  ").filter(|p| !p.trim().is_empty()).count() > 1;
        let next_line = lines
            .get(i + 1)
            .is_some_and(|n| n.len() - n.trim_start().len() > indent + 2 && !n.trim().is_empty());
        let name = t.split("  ").next().unwrap_or(t).trim().to_string();
        out.push((name, same_line || next_line));
    }
    out
}

#[test]
fn every_argument_of_every_verb_has_help() {
    // The parser itself tells an argument without help from one with it.
    assert_eq!(
        arguments("Arguments:\n  <T>  a trace\n\nOptions:\n      --json\n  -h, --help  Print help\n      --long <X>\n          Long help\n"),
        vec![
            ("<T>".to_string(), true),
            ("--json".to_string(), false),
            ("-h, --help".to_string(), true),
            ("--long <X>".to_string(), true)
        ]
    );
    let verbs = verbs();
    assert!(verbs.len() >= 8, "{verbs:?}");
    let mut missing = Vec::new();
    for v in &verbs {
        let mut args: Vec<&str> = v.iter().map(String::as_str).collect();
        args.push("-h");
        let help = String::from_utf8(kc(&args).stdout).unwrap();
        let found = arguments(&help);
        assert!(!found.is_empty(), "no arguments parsed for {v:?}:\n{help}");
        for (name, has) in found {
            if !has {
                missing.push(format!("kc {} {name}", v.join(" ")));
            }
        }
    }
    assert!(missing.is_empty(), "arguments without help: {missing:?}");
}

#[test]
fn every_summary_verb_takes_json_and_one_output_flag() {
    for v in verbs() {
        let mut args: Vec<&str> = v.iter().map(String::as_str).collect();
        args.push("-h");
        let help = String::from_utf8(kc(&args).stdout).unwrap();
        assert!(help.contains("--json"), "kc {} has no --json", v.join(" "));
        // Verbs that write take `-o, --output`, never `--out` alone.
        if help.contains("--out") {
            assert!(
                help.contains("-o, --output <"),
                "kc {} spells its output flag otherwise",
                v.join(" ")
            );
        }
    }
}

#[test]
fn plan_show_honours_json_before_and_after_the_sub_verb() {
    let dir = tempfile::tempdir().unwrap();
    let (g, _, _) = lowered("multistream_gemm_bf16");
    let p = dir.path().join("m.kcplan");
    kc::plan::write(&kc::plan::build::build(&g), &p).unwrap();
    for args in [
        vec!["plan", "--json", "show", p.to_str().unwrap()],
        vec!["plan", "show", p.to_str().unwrap(), "--json"],
    ] {
        let o = kc(&args);
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(v["units"].as_array().unwrap().len(), g.units.len());
    }
}

#[test]
fn lower_json_lists_every_unit_with_its_rule_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kcir");
    assert!(kc(&[
        "ingest",
        h100("gpt2_train_bf16").to_str().unwrap(),
        "-o",
        graph.to_str().unwrap()
    ])
    .status
    .success());
    let o = kc(&[
        "lower",
        "--tiers",
        graph.to_str().unwrap(),
        "-o",
        dir.path().join("l.kcir").to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let units = v["units"].as_array().unwrap();
    assert_eq!(
        units.len() as u64,
        v["summary"]["unique_units"].as_u64().unwrap()
    );
    assert!(units
        .iter()
        .all(|u| !u["rule"].as_str().unwrap().is_empty()));
    // Unreplayable units carry their whole reason.
    assert!(units
        .iter()
        .filter(|u| u["tier"] == "unreplayable")
        .all(|u| u["reason"].as_str().is_some_and(|r| r.len() > 10)));
}

#[test]
fn a_folder_of_unrelated_models_is_refused_unless_said_to_be_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kc"))
            .current_dir(dir.path())
            .args(["ingest", shared().join("traces/h100").to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    // Five models of five runs are not a 5-rank job (it planned one, exit 0, before).
    let o = run(&["--json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("5 files given, read as the ranks of one run"),
        "{e}"
    );
    assert!(e.contains("--as-ranks"), "{e}");
    assert!(!dir.path().join("h100.kcir").exists(), "nothing written");
    // Said to be ranks, they are read, into the working directory, with the doubt kept.
    let o = run(&["--as-ranks", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.path().join("h100.kcir").exists());
    assert!(!shared().join("traces/h100.kcir").exists());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["summary"]["diagnostics"]["by_kind"]["unrelated_ranks"]["count"].as_u64() >= Some(1),
        "{}",
        v["summary"]["diagnostics"]
    );
}

#[test]
fn lower_plan_and_exec_write_into_the_working_directory_not_the_inputs_folder() {
    let inputs = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let graph = inputs.path().join("m.kcir");
    let kc_here = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kc"))
            .current_dir(here.path())
            .args(args)
            .output()
            .unwrap()
    };
    let o = kc_here(&[
        "ingest",
        h100("multistream_gemm_bf16").to_str().unwrap(),
        "-o",
        graph.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = kc_here(&["lower", "--tiers", graph.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(here.path().join("m.lowered.kcir").exists());
    assert!(
        !inputs.path().join("m.lowered.kcir").exists(),
        "written beside its input"
    );
    // The plan from a lowered graph in another folder lands here too.
    std::fs::rename(
        here.path().join("m.lowered.kcir"),
        inputs.path().join("m.lowered.kcir"),
    )
    .unwrap();
    let o = kc_here(&[
        "plan",
        inputs.path().join("m.lowered.kcir").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(here.path().join("m.kcplan").exists());
    assert!(
        !inputs.path().join("m.kcplan").exists(),
        "written beside its input"
    );
}

#[test]
fn run_without_a_gpu_does_not_call_the_traced_sum_a_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let o = kc(&[
        "run",
        h100("multistream_gemm_bf16").to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("predict "), "{text}");
    assert!(text.contains("not a prediction"), "{text}");
    assert!(!text.contains("tiers 1-2 today"), "{text}");
    assert!(text.contains("--features torch"), "{text}");
}

/// `kc run --method-spread` reads and checks its answers before any replay: a file that is
/// not answers is refused naming it, with or without a GPU; the chart's answers are read.
#[test]
fn run_refuses_a_method_spread_that_is_not_answers() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("answers.json");
    std::fs::write(&bad, b"{\"source\": 1}").unwrap();
    let trace = h100("multistream_gemm_bf16");
    let run = |answers: &std::path::Path, out: &str| {
        kc(&[
            "run",
            trace.to_str().unwrap(),
            "--method-spread",
            answers.to_str().unwrap(),
            "-o",
            dir.path().join(out).to_str().unwrap(),
        ])
    };
    let o = run(&bad, "bad");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("answers.json") && err.contains("not a file of answers"),
        "{err}"
    );
    let good = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/results/2026-11-29-session49/answers.json");
    let o = run(&good, "good");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Runs python3 with `args` (no bytecode written); None, said on stderr, where this
/// machine has no python3.
fn python_with<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Option<std::process::Output> {
    match std::process::Command::new("python3")
        .arg("-B")
        .args(args)
        .output()
    {
        Ok(o) => Some(o),
        Err(_) => {
            eprintln!("no python3 here: skipped");
            None
        }
    }
}

/// Runs `code` with python3; None without python3.
fn python(code: &str) -> Option<std::process::Output> {
    python_with(&["-c", code])
}

/// What python3 with `args` printed, after asserting it succeeded; `None` without python3.
fn python_with_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Option<String> {
    let o = python_with(args)?;
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// What `code` printed, after asserting it succeeded; `None` without python3.
fn python_ok(code: &str) -> Option<String> {
    python_with_ok(&["-c", code])
}

/// traces/capture.py: `--help` works without torch, and a second capture into a folder
/// adds its reference entry instead of overwriting the first's.
#[test]
fn capture_help_needs_no_torch_and_reference_entries_accumulate() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/capture.py");
    let Some(help) = python_with_ok(&[script.as_os_str(), "--help".as_ref()]) else {
        return;
    };
    assert!(
        help.contains("Requirements") && help.contains("pynvml"),
        "{help}"
    );
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "import sys; sys.path.insert(0, {:?}); import capture as c\n\
         p = {:?}\n\
         assert c.merge_reference(p, {{'torch': 'x'}}, 'how', 'a', {{'eager': 1}}) is None\n\
         assert c.merge_reference(p, {{'torch': 'y'}}, 'how', 'b', {{'eager': 2}}) is None\n\
         assert c.merge_reference(p, {{'torch': 'y'}}, 'how', 'a', {{'eager': 3}}) == 'a'\n\
         import json; r = json.load(open(p))['results']\n\
         assert sorted(r) == ['a', 'b'] and r['a']['eager'] == 3 and r['b']['eager'] == 2, r\n",
        script.parent().unwrap().display().to_string(),
        dir.path().join("reference.json").display().to_string()
    );
    let o = python(&code).expect("python3 ran above");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// traces/capture.py --remeasure: the model measured again goes under the run the report
/// compares with (its CUDA graph where the capture measured one, else eager), appended to
/// `remeasured` beside the capture's own figures; without an earlier entry it is refused.
/// The GPU's parts (capture, timing, back-to-back windows) are stood in by functions that
/// return fixed figures: what is checked is where the figures go.
#[test]
fn a_remeasure_lands_beside_the_run_it_brackets() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/capture.py");
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "import sys, json, types; sys.path.insert(0, {:?}); import capture as c\n\
         out = {:?}\n\
         ref = {{'env': {{}}, 'how': '', 'results': {{\n\
           'g': {{'eager': {{'median_us': 9.0}}, 'cuda_graph': {{'back_to_back_us': 5.0}}}},\n\
           'e': {{'eager': {{'median_us': 9.0}}, 'cuda_graph': {{'error': 'RuntimeError()'}}}}}}}}\n\
         json.dump(ref, open(out + '/reference.json', 'w'))\n\
         c.capture_graph = lambda step: (types.SimpleNamespace(replay=lambda: None), None)\n\
         c.time_runs = lambda fn, runs=50: {{'median_us': 5.5}}\n\
         c.back_to_back = lambda fn, us: {{'back_to_back_us': 5.1, 'back_to_back_energy_windows_mj': [2.0, 2.1, 2.2], 'back_to_back_temperature_c': [40, 41, 41]}}\n\
         a = types.SimpleNamespace(out=out, cuda_graph=False)\n\
         c.remeasure(lambda: None, 'g', a)\n\
         c.remeasure(lambda: None, 'g', a)\n\
         c.remeasure(lambda: None, 'e', a)\n\
         r = json.load(open(out + '/reference.json'))['results']\n\
         assert len(r['g']['cuda_graph']['remeasured']) == 2 and 'remeasured' not in r['g']['eager'], r\n\
         assert r['g']['cuda_graph']['back_to_back_us'] == 5.0, r\n\
         assert r['g']['cuda_graph']['remeasured'][0]['back_to_back_temperature_c'] == [40, 41, 41], r\n\
         assert len(r['e']['eager']['remeasured']) == 1 and 'remeasured' not in r['e']['cuda_graph'], r\n\
         try:\n    c.remeasure(lambda: None, 'nope', a)\n    raise AssertionError('no refusal')\n\
         except SystemExit as e:\n    assert 'nope' in str(e), e\n",
        script.parent().unwrap().display().to_string(),
        dir.path().display().to_string()
    );
    // Without python3 it is skipped.
    python_ok(&code);
}

/// `capture.py --profile-replay` opens the profiler range around exactly one replay of the
/// model's CUDA graph (after three unprofiled ones), or one eager step without
/// `--cuda-graph`: what `ncu --profile-from-start off` then records (torch's GPU parts stood
/// in, the order of the calls recorded).
#[test]
fn capture_profiles_exactly_one_replay_in_its_range() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/capture.py");
    let code = format!(
        "import sys, types; sys.path.insert(0, {:?}); import capture as c\n\
         log = []\n\
         prof = types.SimpleNamespace(start=lambda: log.append('start'), stop=lambda: log.append('stop'))\n\
         cuda = types.SimpleNamespace(profiler=prof, synchronize=lambda: None)\n\
         c.torch = types.SimpleNamespace(cuda=cuda)\n\
         c.capture_graph = lambda step: (types.SimpleNamespace(replay=lambda: log.append('replay')), None)\n\
         c.profile_replay(lambda: log.append('step'), types.SimpleNamespace(cuda_graph=True))\n\
         assert log == ['replay'] * 3 + ['start', 'replay', 'stop'], log\n\
         log.clear()\n\
         c.profile_replay(lambda: log.append('step'), types.SimpleNamespace(cuda_graph=False))\n\
         assert log == ['start', 'step', 'stop'], log\n",
        script.parent().unwrap().display().to_string(),
    );
    // Without python3 it is skipped.
    python_ok(&code);
}

#[test]
fn a_profiled_replay_is_a_graph_replay() {
    let o = kc(&["exec", "x.kcplan", "--isolated", "--profile-replay"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--profile-replay"));
}

/// traces/capture.py counts what the model's graph ran per replay from a profiler trace of
/// its replays: every GPU activity (kernels, copies, fills; `kernels_per_replay`, as older
/// references have it), the kernels alone (`kernels_only_per_replay`, which a report sets
/// beside the traced step's kernels) and their durations; host events and instants are not
/// the GPU's.
#[test]
fn capture_counts_the_graphs_kernels_apart_from_its_copies_and_fills() {
    let script_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let code = format!(
        "import sys; sys.path.insert(0, {:?}); import capture as c\n\
         ev = [{{'ph': 'X', 'cat': 'kernel', 'dur': 2.0}}, {{'ph': 'X', 'cat': 'gpu_memset', 'dur': 1.0}},\n\
         \x20     {{'ph': 'X', 'cat': 'kernel', 'dur': 3.0}}, {{'ph': 'X', 'cat': 'gpu_memcpy', 'dur': 4.0}},\n\
         \x20     {{'ph': 'X', 'cat': 'cuda_runtime', 'dur': 9.0}}, {{'ph': 'i', 'cat': 'kernel'}}] * 2\n\
         r = c.replay_activities(ev, 2)\n\
         assert r == {{'kernels_per_replay': 4.0, 'kernels_only_per_replay': 2.0, 'kernel_time_us': 10.0, 'kernel_profiled_replays': 2}}, r\n\
         print('ok')\n",
        script_dir.display().to_string()
    );
    let Some(out) = python_ok(&code) else {
        return;
    };
    assert!(out.contains("ok"));
}

/// traces/capture.py says, before it traces a Hugging Face model eager, that the model's CUDA
/// graph it is compared with runs the step as Hugging Face builds it under a capture (the
/// Qwen2, T5 and LLaMA training steps' graphs ran 13-59 more GPU activities per iteration
/// than their eager traces, session 31); not where the trace is the graph itself, compiled,
/// or a torchvision model. Said even where torch is missing, before capture.py stops.
#[test]
fn capture_says_a_hugging_face_model_traced_eager_is_not_quite_its_graph() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/capture.py");
    let code = format!(
        "import sys, argparse; sys.path.insert(0, {:?}); import capture as c\n\
         a = lambda **k: argparse.Namespace(**dict(dict(model='qwen2', cuda_graph=False, compile=False, remeasure=False, profile_replay=False), **k))\n\
         assert 'runs this step as Hugging Face builds it under a stream capture' in c.eager_hf_note(a())\n\
         assert c.eager_hf_note(a(cuda_graph=True)) is None\n\
         assert c.eager_hf_note(a(compile=True)) is None\n\
         assert c.eager_hf_note(a(model='resnet50')) is None\n\
         print('ok')\n",
        script.parent().unwrap().display().to_string()
    );
    let Some(out) = python_ok(&code) else {
        return;
    };
    assert!(out.contains("ok"));
    // capture.py's own run says it first, with torch hidden so that it stops right after
    // (on a machine with a GPU it would otherwise capture the model).
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "import sys, io, contextlib; sys.path.insert(0, {:?}); import capture as c\n\
         sys.modules['torch'] = None\n\
         sys.argv = ['capture.py', '--model', 'qwen2', '--out', {:?}]\n\
         err = io.StringIO()\n\
         with contextlib.redirect_stderr(err):\n\
         \x20   try:\n\
         \x20       c.main()\n\
         \x20   except SystemExit as e:\n\
         \x20       assert 'needs PyTorch' in str(e.code), e.code\n\
         assert \"capture.py: note: the model's CUDA graph\" in err.getvalue(), err.getvalue()\n\
         print('said')\n",
        script.parent().unwrap().display().to_string(),
        dir.path().display().to_string()
    );
    let out = python_ok(&code).expect("python3 ran above");
    assert!(out.contains("said"), "{out}");
}

/// traces/capture.py gives the boolean inputs the dispatch mode recorded (one iteration's
/// calls) to the nodes of every profiled iteration, the op and the op it calls with the same
/// tensor: on a real Swin-T Execution Trace excerpt, each `masked_fill` (the mask `!= 0` and
/// the mask `== 0` of a shifted-window block) and its `masked_fill_`, in both iterations,
/// each with its own call's values. Matched through a second run's Execution Trace made under
/// the dispatch mode, half of Swin-T's masks were lost.
#[test]
fn capture_gives_recorded_masks_to_every_profiled_iteration() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let script_dir = root.join("traces");
    let et = root.join("fixtures/values/swin_t_b16_two_iterations.et.json.gz");
    let code = format!(
        "import sys; sys.path.insert(0, {:?}); import capture as c\n\
         et = c.load_json({:?})\n\
         groups = c.et_iterations(et)\n\
         assert len(groups) == 2, sorted(groups)\n\
         first = groups[sorted(groups)[0]]\n\
         mf = [n for n in first if n['name'] == 'aten::masked_fill']\n\
         assert len(mf) == 4, len(mf)\n\
         calls = [('aten::masked_fill', {{(1, None): (n['inputs']['shapes'][1], bytes([k]))}}) for k, n in enumerate(mf)]\n\
         got = c.bools_by_iteration(calls, et)\n\
         names = {{n['id']: n['name'] for n in et['nodes']}}\n\
         for g in groups.values():\n\
         \x20   mine = [n for n in g if n['id'] in got]\n\
         \x20   assert [n['name'] for n in mine] == ['aten::masked_fill', 'aten::masked_fill_'] * 4, [n['name'] for n in mine]\n\
         \x20   assert [got[n['id']][(1, None)][1] for n in mine] == [bytes([k]) for k in range(4) for _ in (0, 1)]\n\
         print('ok', len(got))\n",
        script_dir.display().to_string(),
        et.display().to_string()
    );
    let Some(out) = python_ok(&code) else {
        return;
    };
    assert!(out.contains("ok 16"));
}

/// traces/capture.py matches the values run's nodes to the profiled capture's by the longest
/// matching blocks of their op names: on Qwen3-MoE's real decode-graph capture, whose
/// Execution Trace begins with four ops of the capture itself (two `empty`, two `fill_`)
/// that the eager values run lacks, every one of the values run's 755 nodes finds its call,
/// with the same name and shapes. The greedy look-ahead it replaces matched 54 (session 19).
#[test]
fn capture_matches_the_values_run_to_a_graph_capture_node_for_node() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let code = format!(
        "import sys; sys.path.insert(0, {:?}); import capture as c\n\
         a = c.et_iterations(c.load_json({:?}))\n\
         b = c.et_iterations(c.load_json({:?}))\n\
         assert sorted(a) == sorted(b) == [(0, 1)], (sorted(a), sorted(b))\n\
         nodes1, nodes2 = a[(0, 1)], b[(0, 1)]\n\
         assert (len(nodes1), len(nodes2)) == (759, 755), (len(nodes1), len(nodes2))\n\
         p = c.aligned_nodes(nodes1, nodes2)\n\
         assert [nodes1[k]['name'] for k in range(4) if k not in p] == ['aten::empty', 'aten::empty', 'aten::fill_', 'aten::fill_']\n\
         assert all(nodes1[k]['name'] == n['name'] and nodes1[k]['inputs']['shapes'] == n['inputs']['shapes'] for k, n in p.items())\n\
         assert len({{id(n) for n in p.values()}}) == 755\n\
         grouped = [k for k in p if nodes1[k]['name'] == 'aten::_grouped_mm']\n\
         print('ok', len(p), len(grouped))\n",
        root.join("traces").display().to_string(),
        root.join("fixtures/values/qwen3_moe_decode_b16_capture.et.json.gz")
            .display()
            .to_string(),
        root.join("fixtures/values/qwen3_moe_decode_b16_values_run.et.json.gz")
            .display()
            .to_string(),
    );
    let Some(out) = python_ok(&code) else {
        return;
    };
    assert!(out.contains("ok 755 4"));
}

/// tools/capture_calls.py on BERT's real capture and replay (fixtures/capture): the 428
/// launch calls, 13 of them fills inside addmm, against the replay's 12 fills per replay.
#[test]
fn capture_calls_lists_a_captures_launches_against_its_replay() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(out) = python_with_ok(&[
        root.join("tools/capture_calls.py"),
        root.join("fixtures/capture/bert12l_b32s256_capture.pt.trace.json.gz"),
        root.join("fixtures/capture/bert12l_b32s256.pt.trace.json.gz"),
    ]) else {
        return;
    };
    assert!(
        out.contains("capture: 428 launch/copy/fill calls that ran nothing"),
        "{out}"
    );
    assert!(out.contains("   13 cudaMemsetAsync"), "{out}");
    assert!(
        out.contains("#426 cudaMemsetAsync") && out.contains("op=aten::addmm"),
        "{out}"
    );
    assert!(out.contains("replay: 1281 GPU activities"), "{out}");
    assert!(out.contains("'gpu_memset': 36"), "{out}");
}

/// `--lead-in-share` is a share in (0, 1], and asks for the units kc skips with
/// `--no-lead-in-units`: a share out of range, or beside that flag, is refused, naming the
/// flag, rather than silently measuring nothing.
#[test]
fn a_lead_in_share_out_of_range_or_with_no_lead_in_units_is_refused() {
    for verb in ["exec", "run"] {
        for args in [
            &["--lead-in-share", "0.8", "--no-lead-in-units"][..],
            &["--lead-in-share", "0"][..],
            &["--lead-in-share", "1.5"][..],
        ] {
            let mut all = vec![verb, "/dev/null"];
            all.extend_from_slice(args);
            let out = kc(&all);
            assert_eq!(out.status.code(), Some(2), "{verb} {args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("--lead-in-share"), "{verb} {args:?}: {err}");
        }
    }
}
