//! Returning freed memory to the operating system after a snapshot swap. Parsing and compiling
//! a large document leaves tens of megabytes free inside glibc's allocator, which otherwise keeps
//! them, so resident memory would grow with every update.

/// Asks the allocator to release free memory (glibc only; elsewhere a no-op).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only inspects and returns free allocator memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
