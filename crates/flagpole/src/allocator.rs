//! The process's memory allocator: jemalloc.
//!
//! A proxy that loads a thousand documents at start builds them on every core at once, and
//! each build makes and frees many small blocks. glibc's allocator, held to one arena to keep
//! resident memory down (see `flagpole_server::memory`), serialised those builds on the arena's
//! lock: 1,000 small documents were ready in ~0.5 s with it and ~0.22 s with jemalloc on two
//! cores, at the same resident memory (bench/many.sh; bench/RESULTS.md).
//!
//! Freed pages go back to the OS from a background thread about a second after they are freed
//! (`dirty_decay_ms`), so memory churned by a document update does not stay resident until the
//! next allocation happens to trigger a purge. The settings are built in (`.cargo/config.toml`
//! hands them to jemalloc's build); operators can override them with `_RJEM_MALLOC_CONF`
//! (jemalloc's `MALLOC_CONF` under this build's symbol prefix).

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
