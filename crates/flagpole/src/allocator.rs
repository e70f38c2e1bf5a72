//! The process's memory allocator: jemalloc.
//!
//! A proxy that loads a thousand documents at start builds them on every core at once, and
//! each build makes and frees many small blocks. glibc's allocator, held to one arena to keep
//! resident memory down (see the server's `memory` module), serialised those builds on the arena's
//! lock: 1,000 small documents were ready in ~0.5 s with it and ~0.22 s with jemalloc on two
//! cores, at the same resident memory (bench/many.sh; bench/RESULTS.md).
//!
//! Freed pages go back to the OS from a background thread about a second after they are freed
//! (`dirty_decay_ms`), so memory churned by a document update does not stay resident until the
//! next allocation happens to trigger a purge. The settings are built in (`.cargo/config.toml`
//! hands them to jemalloc's build); operators can override them with `_RJEM_MALLOC_CONF`
//! (jemalloc's `MALLOC_CONF` under this build's symbol prefix).
//!
//! Each thread keeps a cache of freed blocks to reuse without locking. A blocking-pool thread
//! that built a document and then idles would hold its cache (hundreds of KB) until it exits,
//! ten seconds later: after loading a thousand documents on a dozen such threads, ~10 MB. So
//! background work hands its thread's cache back when it finishes ([`install`]); request
//! threads keep theirs, which their steady traffic reuses.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Has background work hand its thread's cache back when it finishes
/// (the server's `memory::flush_thread_cache`).
pub(crate) fn install() {
    #[cfg(not(target_env = "msvc"))]
    flagpole_server::set_thread_cache_flush(flush_thread_cache);
}

#[cfg(not(target_env = "msvc"))]
#[allow(
    unsafe_code,
    reason = "jemalloc's control call is C; the crate's one unsafe call, reviewed"
)]
fn flush_thread_cache() {
    // SAFETY: `thread.tcache.flush` reads and writes nothing (all pointers null, length 0): it
    // returns the calling thread's cached blocks to their arenas. A failure (no cache on this
    // thread) leaves nothing to do.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"thread.tcache.flush".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}
