//! How the engine bench measures: allocator calls per call (the counting allocator the bench
//! installs), which of them a result keeps, and the median time per call or per run.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use flagpole_bench::counting::{self, Event};

/// Allocator calls per call of `f`, averaged over `n` calls.
pub(crate) fn allocations_per_call<R>(n: u64, mut f: impl FnMut() -> R) -> f64 {
    black_box(f()); // warm caches (lazy statics, regex caches…) out of the count
    counting::count(true);
    let before = counting::calls();
    for _ in 0..n {
        black_box(f());
    }
    let calls = counting::calls() - before;
    counting::count(false);
    calls as f64 / n as f64
}

/// Allocation split of one call of `f`: `(total, output)` where output counts the allocator
/// calls whose blocks are still alive when `f` returns (its result). `None` if the log overflowed.
pub(crate) fn allocation_split<R>(mut f: impl FnMut() -> R) -> Option<(u64, u64)> {
    black_box(f());
    let (result, events) = counting::logged(&mut f);
    let split = events.map(|events| {
        let mut total = 0;
        let mut live: HashMap<usize, u64> = HashMap::new();
        for event in events {
            match event {
                Event::Alloc { new } => {
                    total += 1;
                    live.insert(new, 1);
                }
                Event::Realloc { old, new } => {
                    total += 1;
                    let chain = live.remove(&old).unwrap_or(0);
                    live.insert(new, chain + 1);
                }
                Event::Free { old } => {
                    live.remove(&old);
                }
            }
        }
        (total, live.values().sum())
    });
    drop(black_box(result));
    split
}

/// Median ns per call of `f` over batches filling `budget`, after warm-up.
pub(crate) fn ns_per_call<R>(budget: Duration, mut f: impl FnMut() -> R) -> f64 {
    let mut iterations: u64 = 1;
    loop {
        let start = Instant::now();
        for _ in 0..iterations {
            black_box(f());
        }
        if start.elapsed() >= budget / 8 || iterations >= 1 << 30 {
            break;
        }
        iterations *= 2;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < budget || samples.len() < 5 {
        let start = Instant::now();
        for _ in 0..iterations {
            black_box(f());
        }
        samples.push(start.elapsed().as_nanos() as f64 / iterations as f64);
    }
    median(samples)
}

/// Median ms of `f` over at least 3 runs and about `budget` (at most 15 runs).
pub(crate) fn ms_per_run<R>(budget: Duration, mut f: impl FnMut() -> R) -> f64 {
    black_box(f());
    let mut samples = Vec::new();
    let started = Instant::now();
    while samples.len() < 3 || (started.elapsed() < budget && samples.len() < 15) {
        let start = Instant::now();
        black_box(f());
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    median(samples)
}

pub(crate) fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
