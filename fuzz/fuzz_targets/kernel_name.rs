//! Fuzzes the nom kernel-name parser and the family rules: any string parses.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let p = kc::lower::name::parse(&s);
    let _ = kc::lower::family::family_from_name(&s, &p);
});
