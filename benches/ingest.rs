//! Criterion benchmark of `kc ingest` on the real H100 traces (gzip-compressed, as
//! shipped): throughput in MB of uncompressed JSON per second. The large-input benchmark
//! (510 MB, with peak RSS) is `benches/ingest_big.sh`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::io::Read;
use std::path::PathBuf;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/traces/h100")
        .join(name)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ingest");
    g.sample_size(10);
    for name in ["gpt2_train_bf16", "bloom560m_seq5"] {
        let path = shared(&format!("{name}.pt.trace.json.gz"));
        let mut raw = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).expect("shared trace"))
            .read_to_end(&mut raw)
            .expect("gunzip");
        g.throughput(Throughput::Bytes(raw.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                kc::ingest::ingest(std::slice::from_ref(&path), &Default::default())
                    .expect("ingest")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
