//! Fuzzes the rank store's wire format (the client's answer to the challenge, requests):
//! nothing panics and nothing is allocated beyond the limits, whatever the bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kc::fuzzing::rank_store(data);
});
