//! Which identity requests are compared, and when: a request is sampled with probability
//! `sample_rate` (one random number, nothing else, for the rest), then admitted by a rate
//! limit (`max_per_second`, so a traffic spike cannot become a flood upstream) into a bounded
//! queue (`queue_size`); a dispatcher runs at most `max_concurrency` comparisons at once. A
//! sample over the rate or finding the queue full is dropped and counted. Nothing here waits.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

use super::job::Job;
use super::outcome::Tally;
use super::verify::Verifier;
use crate::shutdown::Shutdown;
use crate::tasks::Tasks;
use flagpole_config::Config;

pub(crate) struct Shadow {
    sample_rate: f64,
    limiter: DefaultDirectRateLimiter,
    queue: mpsc::Sender<Job>,
    pub tally: Arc<Tally>,
}

impl Shadow {
    /// Starts the dispatcher (it ends when shutdown is requested; comparisons under way finish
    /// as background work), or `None` when shadowing is off.
    pub(crate) fn start(
        config: &Config,
        client: reqwest::Client,
        shutdown: &Shutdown,
    ) -> Option<Arc<Shadow>> {
        let shadow = &config.shadow;
        if shadow.sample_rate <= 0.0 {
            return None;
        }
        let (queue, jobs) = mpsc::channel(shadow.queue_size);
        let tally = Arc::new(Tally::default());
        let verifier = Arc::new(Verifier {
            client,
            api_url: shadow
                .api_url
                .clone()
                .unwrap_or_else(|| config.upstream.api_url.clone()),
            timeout: shadow.timeout,
            tally: tally.clone(),
            logged: Default::default(),
        });
        shutdown.spawn(dispatch(
            jobs,
            verifier,
            shadow.max_concurrency,
            shutdown.tasks.clone(),
            shutdown.requested.clone(),
        ));
        let rps = NonZeroU32::new(shadow.max_per_second).unwrap_or(NonZeroU32::MIN);
        Some(Arc::new(Shadow {
            sample_rate: shadow.sample_rate,
            limiter: RateLimiter::direct(Quota::per_second(rps)),
            queue,
            tally,
        }))
    }

    /// Whether this request is one of the sample (call first: it costs one random number).
    pub(crate) fn sampled(&self) -> bool {
        self.sample_rate >= 1.0 || rand::random::<f64>() < self.sample_rate
    }

    /// Queues a sampled request for comparison, unless over the rate or the queue is full.
    pub(crate) fn offer(&self, job: impl FnOnce() -> Job) {
        if self.limiter.check().is_err() {
            self.tally.dropped(true);
            return;
        }
        if self.queue.try_send(job()).is_err() {
            self.tally.dropped(false);
        }
    }
}

/// Runs queued comparisons on `tasks`, at most `concurrency` at once, until `stop`.
async fn dispatch(
    mut jobs: mpsc::Receiver<Job>,
    verifier: Arc<Verifier>,
    concurrency: usize,
    tasks: Tasks,
    stop: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(concurrency));
    loop {
        let job = tokio::select! {
            job = jobs.recv() => job,
            _ = stop.cancelled() => None,
        };
        let Some(job) = job else { return };
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("never closed"),
            _ = stop.cancelled() => return,
        };
        let verifier = verifier.clone();
        tasks.spawn(async move {
            verifier.verify(job).await;
            drop(permit);
        });
    }
}
