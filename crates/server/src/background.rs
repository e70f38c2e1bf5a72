//! CPU-heavy work that must not compete with requests: parsing, compiling and compressing
//! documents, writing warm-start files. It runs on tokio's blocking pool, never on the async
//! workers that serve requests, and at a lower scheduling priority, so that on a busy machine
//! the scheduler prefers the request threads and an update does not show in request latency.

/// The nice value of background threads (0 is normal; higher yields more).
const BACKGROUND_NICE: i32 = 10;

/// Runs `work` on the blocking pool at background priority.
pub async fn run<T, F>(work: F) -> Result<T, tokio::task::JoinError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        lower_this_thread();
        work()
    })
    .await
}

/// Lowers the calling thread's priority (Linux: per-thread nice; elsewhere a no-op). Blocking
/// pool threads only ever run background work, so the setting may stay with the thread; threads
/// it starts (the parallel compressors) inherit it.
fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no memory-safety preconditions; a failure (e.g. no
    // permission) leaves the priority as it was, which is harmless.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}
