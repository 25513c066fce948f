//! Fuzzes the shape readers of `kc ingest --shapes` (Execution Trace and JSONL shape log):
//! nothing panics, whatever the bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kc::fuzzing::shapes(data);
});
