//! The proxy's one shutdown, in two phases, each a cancellation token:
//!
//! 1. `requested` (SIGINT/SIGTERM): the listener stops accepting, connections still waiting for
//!    their first request close, readiness answers 503, and every environment's `stop` token (a
//!    child of this one) fires: its poller, file watcher and change streams end.
//! 2. `drained` (requests in flight have finished, or `shutdown_timeout_seconds` passed): the
//!    background work that reports on served requests finishes — the usage reporter posts its
//!    last batch, which then includes the requests of the drain.
//!
//! Every background task is spawned on `tasks` (`crate::tasks`, the one place a task is
//! spawned), and detached blocking work on `background`'s tracker, so "stop" means: wait for
//! them (bounded by what is left of the timeout), then exit.
//! Nothing is aborted mid-write.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::tasks::Tasks;

#[derive(Clone, Debug, Default)]
pub(crate) struct Shutdown {
    /// Phase 1: stop serving.
    pub requested: CancellationToken,
    /// Phase 2: requests have drained; background tasks finish.
    pub drained: CancellationToken,
    /// The background tasks waited for at exit.
    pub tasks: Tasks,
}

impl Shutdown {
    pub(crate) fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Runs `task` in the background until it returns; exit waits for it.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task);
    }

    /// Phase 2, then waits for the background tasks until `deadline`.
    pub(crate) async fn finish(&self, deadline: Instant) {
        self.requested.cancel();
        self.drained.cancel();
        self.tasks.close();
        let left = deadline.saturating_duration_since(Instant::now());
        let all = async {
            self.tasks.wait().await;
            crate::background::detached_done().await;
        };
        if tokio::time::timeout(left.max(Duration::from_millis(100)), all)
            .await
            .is_err()
        {
            tracing::warn!("shutdown timeout reached with background work unfinished");
        }
    }
}

/// Phase 1 on SIGINT or SIGTERM: cancels `requested` (the listeners stop accepting). Ends
/// without doing anything if shutdown is requested some other way first.
pub(crate) async fn request_on_signal(requested: CancellationToken) {
    tokio::select! {
        () = signal() => {
            tracing::info!("shutting down: draining requests in flight");
            requested.cancel();
        }
        () = requested.cancelled() => {}
    }
}

/// Completes on SIGINT or SIGTERM.
async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
