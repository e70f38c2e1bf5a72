//! Keeping resident memory close to what the snapshots need. Parsing and compiling a large
//! document churns tens of megabytes; glibc's allocator keeps freed memory in per-thread arenas
//! (one per thread that ever allocated, up to 8 per CPU), so without care resident memory grows
//! with every update and never comes back.
//!
//! This is for a process on glibc's allocator (an embedder, a benchmark). The `flagpole` binary
//! runs on jemalloc, which returns freed pages by itself; there these calls only touch glibc's
//! own heap (what C libraries allocate), which is small, so they cost next to nothing.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Hands the calling thread's cache of freed blocks back to the shared heap, for an allocator
/// that keeps such caches (installed by the binary that chose it).
static THREAD_CACHE_FLUSH: OnceLock<fn()> = OnceLock::new();

/// Installs the allocator's per-thread cache flush (see [`flush_thread_cache`]).
pub fn set_thread_cache_flush(flush: fn()) {
    let _ = THREAD_CACHE_FLUSH.set(flush);
}

/// Hands the calling thread's cached freed blocks back to the shared heap, where the allocator
/// has such caches (jemalloc's thread caches; a no-op otherwise). Background threads call it when
/// their work is done: they may idle for long, and what an idle thread caches stays resident.
pub(crate) fn flush_thread_cache() {
    if let Some(flush) = THREAD_CACHE_FLUSH.get() {
        flush();
    }
}

/// Limits glibc to one allocator arena unless the operator chose otherwise (`MALLOC_ARENA_MAX`).
/// Document builds, compression and requests run on different threads; with one arena, what
/// one of them frees the next can reuse, and trimming returns it all. Small allocations are
/// still served from per-thread caches without locking. Call before the runtime starts threads.
#[allow(
    unsafe_code,
    reason = "mallopt is a C call, made before other threads exist"
)]
pub fn configure_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; it is called before other threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// A trim is under way (its thread will run another pass if asked meanwhile).
static TRIMMING: AtomicBool = AtomicBool::new(false);
/// Someone asked for a trim since the last pass started.
static ASKED: AtomicBool = AtomicBool::new(false);
/// Passes are at least this far apart: a trim walks the whole heap holding the arena's lock, so
/// a thousand swaps in a row (a proxy loading a thousand documents) must not trim a thousand
/// times over a growing heap while the other builds wait on that lock.
const TRIM_SPACING: Duration = Duration::from_millis(100);

/// Counts the releases asked for: a request worker that has not flushed its cache since the
/// last one does so when it next goes idle ([`on_worker_park`]).
static RELEASES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The release this thread last flushed its cache for.
    static FLUSHED_FOR: Cell<u64> = const { Cell::new(0) };
}

/// For the runtime's `on_thread_park`: a request worker going idle after a document was
/// published hands back the blocks it cached while publishing (after a start-up of a thousand
/// documents, a few MB per worker). Otherwise one atomic load.
pub fn on_worker_park() {
    let release = RELEASES.load(Ordering::Relaxed);
    FLUSHED_FOR.with(|flushed| {
        if flushed.get() != release {
            flushed.set(release);
            flush_thread_cache();
        }
    });
}

/// Asks the allocator to release free memory: this thread's cache, then each request worker's
/// when it next idles ([`on_worker_park`]), and glibc's heap (a trim). Calls during a
/// trim are coalesced into one more pass after it, so the last caller's memory is always
/// returned. Blocks the calling (background) thread for the passes it runs.
pub(crate) fn release_free_memory() {
    flush_thread_cache();
    RELEASES.fetch_add(1, Ordering::Relaxed);
    ASKED.store(true, Ordering::Release);
    while !TRIMMING.swap(true, Ordering::AcqRel) {
        let mut first = true;
        while ASKED.swap(false, Ordering::AcqRel) {
            if !first {
                std::thread::sleep(TRIM_SPACING);
            }
            first = false;
            trim();
        }
        TRIMMING.store(false, Ordering::Release);
        // A request that arrived between the last check and the release is served here.
        if !ASKED.load(Ordering::Acquire) {
            return;
        }
    }
}

#[allow(unsafe_code, reason = "malloc_trim is a C call with no preconditions")]
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only inspects and returns free allocator memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
