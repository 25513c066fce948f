//! Fuzzes the whole ingest front end (splitter, field reader, linking, graph building and
//! verification) on arbitrary bytes: it must return a graph or an error, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((g, _)) = kc::ingest::ingest_bytes(data.to_vec(), "fuzz.json") {
        let _ = kc_ir_text(&g);
    }
});

fn kc_ir_text(g: &kc_ir::KernelGraph) -> String {
    kc_ir::text::to_text(g)
}
