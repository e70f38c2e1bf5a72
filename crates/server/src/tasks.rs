//! Every task the server starts goes through [`Tasks::spawn`]: a task tracker, so that whoever
//! owns one can wait for its tasks to end (the shutdown waits for the background work, a
//! listener's drain for its connections). A plain `tokio::spawn` would start a task nobody
//! waits for, one that may be cut off mid-write at exit; clippy refuses it everywhere else
//! (`disallowed-methods` in `clippy.toml`), so this is the one place a task is spawned.

use std::future::Future;

use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

/// A set of tasks that can be waited for; clones share the set.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tasks(TaskTracker);

impl Tasks {
    pub(crate) fn new() -> Tasks {
        Tasks::default()
    }

    /// Runs `task` until it returns; [`Tasks::wait`] waits for it. Must be called inside a Tokio
    /// runtime.
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place a task is spawned: on a tracker someone waits for"
    )]
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.0.spawn(task)
    }

    /// No more tasks are expected: [`Tasks::wait`] may complete once they have all ended.
    pub(crate) fn close(&self) {
        self.0.close();
    }

    /// Completes once the set is closed and every task in it has ended.
    pub(crate) async fn wait(&self) {
        self.0.wait().await;
    }
}
