//! CPU-heavy work that must not compete with requests: parsing, compiling and compressing
//! documents, writing warm-start files. It runs on tokio's blocking pool, never on the async
//! workers that serve requests, and at a lower scheduling priority, so that on a busy machine
//! the scheduler prefers the request threads and an update does not show in request latency.
//! At most one piece of it runs per core (plus one, see [`BUSY`]), on a pool of as few threads
//! ([`blocking_threads`]): a thousand environments loaded at once queue here instead of
//! starting dozens of pool threads (each with its allocator cache) that then idle for ten
//! seconds.

/// The nice value of background threads (0 is normal; higher yields more).
const BACKGROUND_NICE: i32 = 10;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Background work running at once: the cores, plus one for the allocator trim, which waits
/// between trims while it is asked again (`memory::release_free_memory`) and must not take a
/// core's turn from the builds. Work beyond it waits for a turn before it takes a thread.
static BUSY: std::sync::LazyLock<tokio::sync::Semaphore> =
    std::sync::LazyLock::new(|| tokio::sync::Semaphore::new(cores() + 1));

/// The cap of the runtime's blocking pool (`max_blocking_threads`): the turns above and one
/// more for what else blocks (name lookups). The turns bound the work, the cap bounds the
/// threads: a turn is handed on as the work ends, before its thread is idle again, and the pool
/// would start a thread for the next piece each time.
pub fn blocking_threads() -> usize {
    cores() + 2
}

/// A turn to run background work, held until the work ends.
async fn busy_turn() -> tokio::sync::SemaphorePermit<'static> {
    BUSY.acquire()
        .await
        .expect("the background-work semaphore is never closed")
}

/// Work that only makes serving cheaper and may wait (compressing a large body) takes turns: one at a time, so a burst of updates cannot start a
/// compressor per environment at once, and none while start-up holds the turn (see
/// [`hold_deferred`]).
static DEFERRED_TURN: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Deferred work, waiting for its turn: tracked apart from the shutdown's background work, since
/// it only makes serving cheaper and exit need not wait for it.
static DEFERRED: std::sync::LazyLock<crate::tasks::Tasks> =
    std::sync::LazyLock::new(crate::tasks::Tasks::new);

/// Waits for deferred work's turn (held while the returned permit lives).
pub(crate) async fn deferred_turn() -> tokio::sync::SemaphorePermit<'static> {
    DEFERRED_TURN
        .acquire()
        .await
        .expect("the deferred-work semaphore is never closed")
}

/// Holds deferred work back while the permit lives. Start-up holds it while it loads the
/// configured documents: on two cores, compressing a hundred 1 MB documents (gzip, Brotli and
/// zstd each) costs several times what building their snapshots does, and readiness should wait
/// only for what serving needs; until then a document is served uncompressed.
pub(crate) async fn hold_deferred() -> tokio::sync::SemaphorePermit<'static> {
    deferred_turn().await
}

/// Runs `work` as deferred work: when its turn comes, on the blocking pool at background
/// priority, then hands freed memory back. Without a runtime (a one-off command, a benchmark)
/// it runs now, on the calling thread.
pub(crate) fn defer(work: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => {
            DEFERRED.spawn(async move {
                let _turn = deferred_turn().await;
                let _ = run(move || {
                    work();
                    crate::memory::release_free_memory();
                })
                .await;
            });
        }
        Err(_) => work(),
    }
}

/// Runs `work` on the blocking pool at background priority when its turn comes, without
/// waiting for it: for work nothing waits on (freeing what a swap replaced). It runs as a task
/// on [`DETACHED`], like every task on a tracker; the shutdown waits for it
/// ([`detached_done`]), bounded by its timeout, so nothing is cut off mid-way at exit.
#[allow(
    clippy::disallowed_methods,
    reason = "this module is where blocking work is started"
)]
pub(crate) fn detach(work: impl FnOnce() + Send + 'static) {
    DETACHED.spawn(async move {
        let turn = busy_turn().await;
        let done = tokio::task::spawn_blocking(move || {
            lower_this_thread();
            work();
            crate::memory::flush_thread_cache();
            drop(turn);
        });
        // Waited for, so the tracker knows when the work has ended (a panic was the work's).
        let _ = done.await;
    });
}

/// The tasks of detached work ([`detach`]), one tracker for the process: detached work is
/// started from places that hold no `Tasks` of their own (a snapshot swap).
static DETACHED: std::sync::LazyLock<crate::tasks::Tasks> =
    std::sync::LazyLock::new(crate::tasks::Tasks::new);

/// Completes once every piece of detached work started so far has ended (the shutdown's last
/// wait).
pub(crate) async fn detached_done() {
    DETACHED.close();
    DETACHED.wait().await;
}

/// Runs `work` on the blocking pool at background priority.
#[allow(
    clippy::disallowed_methods,
    reason = "this module is where blocking work is started"
)]
pub(crate) async fn run<T, F>(work: F) -> Result<T, tokio::task::JoinError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let turn = busy_turn().await;
    tokio::task::spawn_blocking(move || {
        lower_this_thread();
        let out = work();
        // The work churned memory and the thread may now idle: hand back what it caches.
        crate::memory::flush_thread_cache();
        drop(turn);
        out
    })
    .await
}

/// Lowers the calling thread's priority (Linux: per-thread nice; elsewhere a no-op). Blocking
/// pool threads only ever run background work, so the setting may stay with the thread; threads
/// it starts (the parallel compressors) inherit it.
#[allow(
    unsafe_code,
    reason = "setpriority is a C call; it has no memory-safety preconditions"
)]
fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no memory-safety preconditions; a failure (e.g. no
    // permission) leaves the priority as it was, which is harmless.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}
