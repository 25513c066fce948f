//! Fuzzes the values-file reader of `kc ingest --values`: nothing panics, whatever the
//! bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kc::fuzzing::values(data);
});
