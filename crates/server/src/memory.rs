//! Keeping resident memory close to what the snapshots need. Parsing and compiling a large
//! document churns tens of megabytes; glibc's allocator keeps freed memory in per-thread arenas
//! (one per thread that ever allocated, up to 8 per CPU), so without care resident memory grows
//! with every update and never comes back.

/// Limits glibc to one allocator arena unless the operator chose otherwise (`MALLOC_ARENA_MAX`).
/// Document builds, compression and requests run on different threads; with one arena, what
/// one of them frees the next can reuse, and trimming returns it all. Small allocations are
/// still served from per-thread caches without locking. Call before the runtime starts threads.
pub fn configure_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; it is called before other threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Asks the allocator to release free memory (glibc only; elsewhere a no-op).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only inspects and returns free allocator memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
