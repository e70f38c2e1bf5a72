//! "served ms": from a document's bytes, as they arrive, to the snapshot the proxy swaps in.
//!
//! It times `flagpole_server::build_snapshot`, the function `EnvSlot::publish` runs on
//! its blocking thread for a single-page document (read, check the key, compile, hash the
//! content revision, evaluate the environment's own flags, prepare and compress the small
//! bodies). Not timed: the hop to that thread and the swap itself (microseconds), and what
//! follows the swap in the background (compressing the document, freeing the old snapshot).
//! Each built snapshot is dropped outside the timed region, as `publish` drops the old one
//! after the swap.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use flagpole_server::{build_snapshot, Incoming, Snapshot};

/// One document, ready to be served again and again.
pub(crate) struct Served {
    bytes: Bytes,
    client_key: String,
}

impl Served {
    pub(crate) fn new(bytes: &[u8]) -> Served {
        let document: serde_json::Value = serde_json::from_slice(bytes).expect("a JSON document");
        let client_key = document["api_key"].as_str().expect("an api_key").to_owned();
        Served {
            bytes: Bytes::copy_from_slice(bytes),
            client_key,
        }
    }

    /// The snapshot publishing the document builds.
    pub(crate) fn build(&self) -> Snapshot {
        let bytes = self.bytes.clone();
        build_snapshot(&Incoming::Bytes(bytes.clone()), bytes, &self.client_key, 1)
            .expect("the proxy takes the document")
    }

    /// Median ms of [`Served::build`] (at least 3 runs, at most 15 or `budget`).
    pub(crate) fn ms(&self, budget: Duration) -> f64 {
        drop(black_box(self.build()));
        let mut samples = Vec::new();
        let started = Instant::now();
        while samples.len() < 3 || (started.elapsed() < budget && samples.len() < 15) {
            let start = Instant::now();
            let snapshot = black_box(self.build());
            samples.push(start.elapsed().as_secs_f64() * 1e3);
            drop(snapshot);
        }
        super::measure::median(samples)
    }
}
