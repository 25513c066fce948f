//! Fuzzes the Inductor-cache readers (tar members, Triton metadata JSON, Triton IR and PTX
//! entries, generated modules) and resolution against what they read: nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kc::fuzzing::inductor_cache(data);
});
