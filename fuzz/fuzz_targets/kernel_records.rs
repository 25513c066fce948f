//! Fuzzes the reader of kc's kernel records (`kc report --graph-kernels`) and the
//! kernel-by-kernel alignment beside the model's graph: nothing panics, whatever the bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kc::fuzzing::kernel_records(data);
});
