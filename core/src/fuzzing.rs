//! Entry points for fuzzing kc's own file formats past their checksums: arbitrary bytes are
//! sealed in a valid envelope (right magic, version, length, CRC) and pushed through
//! everything that reads such a file, so the decoder, the verifier, lowering, planning and
//! `plan show` meet bodies that no CRC would have stopped. Invariant: each returns, whatever
//! the bytes; a panic here is a defect (the `files` fuzz target and tests/hostile.rs).

use crate::envelope;
use kc_ir::KernelGraph;

/// A graph body: decoded, verified, then lowered (if not yet) and planned, as `kc lower`
/// and `kc plan` would. Returns whether it got as far as a checked plan.
pub fn graph_body(body: &[u8]) -> bool {
    let sealed = envelope::seal(&crate::ingest::GRAPH_FILE, body);
    let Ok(mut g) = envelope::decode::<KernelGraph>(&crate::ingest::GRAPH_FILE, &sealed, "fuzz")
    else {
        return false;
    };
    if kc_ir::verify(&g).is_err() {
        return false;
    }
    let _ = kc_ir::text::to_text(&g);
    if !g.is_lowered() && crate::lower::lower(&mut g).is_err() {
        return false;
    }
    let p = crate::plan::build::build(&g);
    if p.check().is_err() {
        return false;
    }
    let _ = crate::plan::show::summarize(&p, body.len() as u64);
    true
}

/// A plan body: decoded and checked as `kc plan show` and `kc exec` read it, then shown.
pub fn plan_body(body: &[u8]) -> bool {
    let sealed = envelope::seal(&crate::plan::PLAN_FILE, body);
    match crate::plan::decode(&sealed, "fuzz") {
        Ok(p) => {
            let _ = crate::plan::show::summarize(&p, body.len() as u64);
            true
        }
        Err(_) => false,
    }
}

/// Inductor-cache input: the bytes as a tar stream (an archived cache), as a Triton
/// metadata JSON, and as the text files kc reads (Triton IR, PTX, a generated module),
/// then indexed and a launch resolved against what was read. Returns how many binaries
/// the index found.
pub fn inductor_cache(bytes: &[u8]) -> usize {
    use crate::ingest::inductor::*;
    let mut files = CacheFiles::default();
    let _ = files.read_tar(bytes, None);
    let _ = read_meta(bytes);
    let _ = best_config_hash(bytes);
    let text = String::from_utf8_lossy(bytes);
    let name = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("triton_"))
        .unwrap_or("triton_k");
    let _ = ir_module(&text);
    let _ = ir_params(&text, name);
    let _ = ptx_param_count(&text, name);
    let _ = module_signature(&text, name);
    // The same bytes as every kind of file of one binary directory, and as a module.
    for ext in ["json", "ttir", "ptx"] {
        files
            .files
            .insert(format!("triton/0/H/{name}.{ext}"), bytes.to_vec());
    }
    files
        .cubins
        .insert(format!("triton/0/H/{name}.cubin"), bytes.len() as u64);
    let _ = cubin_problem(bytes);
    files.files.insert("xx/cxx.py".into(), bytes.to_vec());
    let index = CacheIndex::build(&files);
    let recorded = vec![kc_ir::OpArg::None; 3];
    let _ = index.resolve(name, "/tmp/x/xx/cxx.py", Some(4), None, &recorded);
    index.binaries.len()
}

/// Shape files: the bytes as an Execution Trace (JSON with `nodes`) and as a kc JSONL shape
/// log, as `kc ingest --shapes` reads them. Returns how many records were read.
/// A values file (`kc ingest --values`): parsed, and its entries attached to an empty
/// graph (none finds an op). Returns the entries parsed.
pub fn values(bytes: &[u8]) -> usize {
    let Ok(file) = crate::ingest::values::parse(bytes, "fuzz") else {
        return 0;
    };
    let n = file.entries.len();
    let mut g = KernelGraph::default();
    let mut diags = crate::diag::Diagnostics::default();
    crate::ingest::values::attach(&mut g, file, &Default::default(), "fuzz", &mut diags);
    n
}

pub fn shapes(bytes: &[u8]) -> usize {
    let text = String::from_utf8_lossy(bytes);
    let mut n = 0;
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
        if let Ok(r) = crate::ingest::shapes::from_execution_trace(&doc, "fuzz") {
            n += r.len();
        }
    }
    if let Ok(r) = crate::ingest::shapes::from_jsonl(&text, "fuzz") {
        n += r.len();
    }
    n
}

/// kc's kernel records (`kc report --graph-kernels`): the bytes read as records, then set
/// beside a small model graph; and the bytes' two halves aligned with each other as
/// [`crate::report::side_by_side`] aligns kernel sequences. Returns how many records
/// were read.
pub fn kernel_records(bytes: &[u8]) -> usize {
    use crate::report::side_by_side::*;
    let half = bytes.len() / 2;
    let _ = shortest_edit_pairs(&bytes[..half], &bytes[half..], 64);
    let Ok(records) = read_kernel_records(bytes) else {
        return 0;
    };
    let model = ModelIteration {
        replays: 2,
        replays_used: 1,
        kernels: records
            .iter()
            .take(8)
            .map(|r| ModelKernel {
                name: r.name.clone(),
                grid: r.grid.map(|x| x.max(0) as u32),
                block: r.block.map(|x| x.max(0) as u32),
                dur_us: 1.0,
            })
            .collect(),
        copies: 1,
        copy_us: 1.0,
    };
    let s = compare(&model, &records, 2, None);
    let _ = s.summary();
    records.len()
}
