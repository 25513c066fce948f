//! Fuzzes the rank store's wire format (the client's answer to the challenge, requests):
//! nothing panics and nothing is allocated beyond the limits, whatever the bytes.
#![no_main]
use kc::exec::rendezvous::{read_hello, read_message};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_hello(&mut &data[..]);
    let mut r = data;
    while let Ok(Some(_)) = read_message(&mut r) {}
});
