//! Times the stages of publishing one environment document (read, build, compress) and counts
//! the heap a built snapshot keeps:
//! `cargo run --release -p flagpole-http-bench --bin snapshot-timing -- FILE`.
use std::time::Instant;

use flagpole_bench::counting::{self, Counting};
use flagpole_server::{Encoding, Received, Snapshot};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mib(bytes: i64) -> f64 {
    bytes as f64 / 1048576.0
}

fn main() {
    counting::count(true);
    let path = std::env::args()
        .nth(1)
        .expect("usage: snapshot_timing FILE");
    let bytes = std::fs::read(&path).expect("readable file");
    for _ in 0..3 {
        let before = counting::live();
        let t = Instant::now();
        let received = Received::from_bytes(&bytes, None).unwrap();
        let read = t.elapsed();
        let t = Instant::now();
        let s = Snapshot::from_received(received, bytes.clone(), 1, true).unwrap();
        let build = t.elapsed();
        let t = Instant::now();
        // No runtime here: asking makes each variant now.
        for encoding in ["gzip", "br", "zstd"] {
            s.document.negotiate(Some(encoding));
        }
        let compress = t.elapsed();
        let kept = counting::live() - before;
        println!(
            "read (parse, compile, revision) {read:?} build {build:?} \
             compress (each encoding asked once) {compress:?}; \
             snapshot keeps {:.1} MiB for a {:.1} MiB document",
            mib(kept),
            mib(bytes.len() as i64)
        );
        let size = |e| s.document.variant(e).map_or(0.0, |b| mib(b.len() as i64));
        println!(
            "  gzip {:.2} MiB, br {:.2} MiB, zstd {:.2} MiB",
            size(Encoding::Gzip),
            size(Encoding::Brotli),
            size(Encoding::Zstd)
        );
        drop(s);
    }
}
