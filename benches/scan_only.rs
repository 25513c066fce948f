//! Scratch timing of the splitter alone (not a committed benchmark).
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    let t = std::time::Instant::now();
    let mut s = kc::ingest::scan::EventScanner::new(f);
    let mut n = 0u64;
    let mut bytes = 0u64;
    while let Some(e) = s.next_event().unwrap() {
        n += 1;
        bytes += e.bytes.len() as u64;
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "{n} events {bytes} bytes {dt:.2}s {:.0} MB/s",
        bytes as f64 / dt / 1e6
    );
    let f = std::fs::File::open(&path).unwrap();
    let t = std::time::Instant::now();
    let mut s = kc::ingest::scan::EventScanner::new(f);
    let mut k = 0u64;
    while let Some(e) = s.next_event().unwrap() {
        let v: serde::de::IgnoredAny = serde_json::from_slice(e.bytes).unwrap();
        let _ = v;
        k += 1;
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "ignoredany {k} {dt:.2}s {:.0} MB/s",
        bytes as f64 / dt / 1e6
    );
}
