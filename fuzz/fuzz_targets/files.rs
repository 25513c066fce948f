//! Fuzzes kc's own binary formats past their checksums: the input's first byte picks a
//! graph (`.kcir`) or plan (`.kcplan`) body, the rest is sealed in a valid envelope and read
//! as `kc lower`, `kc plan`, `kc plan show` and `kc exec` read it. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((k, body)) if k % 2 == 0 => {
            kc::fuzzing::graph_body(body);
        }
        Some((_, body)) => {
            kc::fuzzing::plan_body(body);
        }
        None => {}
    }
});
