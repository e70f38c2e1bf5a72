//! Posts each environment's counts upstream as an SDK would: `POST {api_url}/analytics/flags/`
//! with `X-Environment-Key: <client key>` and `{"<feature>": <count>, …}`, one request per
//! environment every flush interval. A 2xx delivers them; a 4xx drops them (logged); a 5xx or a
//! network error keeps them, merged with what arrives meanwhile, and retries after a backoff
//! that doubles up to [`MAX_BACKOFF`]. What is kept is bounded by
//! `max_pending_features` names per environment: past it the oldest interval's counts are
//! dropped and counted. When requests have drained at shutdown, everything held goes out once
//! more; what still fails then is dropped and counted.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::counts::{Batch, DropReason, EnvCounts, FlushOutcome};
use super::registry::Analytics;
use crate::telemetry::otel::spans::{Cause, ClientSpan};

/// The longest wait between retries to a failing upstream.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Where counts go, and how.
pub(crate) struct Upstream {
    pub client: reqwest::Client,
    pub api_url: String,
    pub timeout: Duration,
}

/// One environment's counts awaiting delivery, oldest first.
#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    names: usize,
    failures: u32,
    next_attempt: Option<Instant>,
}

impl Queue {
    /// Adds a batch; past `cap` names the oldest batches are dropped (the newest is kept).
    fn push(&mut self, batch: Batch, cap: usize, env: &EnvCounts) {
        self.names += batch.counts.len();
        self.batches.push_back(batch);
        while self.names > cap && self.batches.len() > 1 {
            let oldest = self.batches.pop_front().expect("more than one");
            self.names -= oldest.counts.len();
            env.drop_events(DropReason::Overflow, oldest.events);
            tracing::warn!(environment = %env.fingerprint, events = oldest.events,
                "flag analytics: upstream unreachable for too long; dropping the oldest counts");
        }
    }

    fn merged(&self) -> Batch {
        let mut all = Batch::default();
        for batch in &self.batches {
            all.merge(batch);
        }
        all
    }

    fn clear(&mut self) {
        self.batches.clear();
        self.names = 0;
        self.failures = 0;
        self.next_attempt = None;
    }

    fn events(&self) -> u64 {
        self.batches.iter().map(|b| b.events).sum()
    }
}

/// Flushes every interval until `drained`, then once more. `upstream`: `None` when the proxy
/// has no upstream at all (counts are then only counted).
pub(crate) async fn run(
    analytics: Arc<Analytics>,
    upstream: Option<Upstream>,
    drained: CancellationToken,
) {
    let interval = analytics.config.flush_interval;
    let mut queues: HashMap<String, Queue> = HashMap::new();
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(interval) => false,
            _ = drained.cancelled() => true,
        };
        for env in analytics.environments() {
            let queue = queues.entry(env.client_key.clone()).or_default();
            flush(&analytics, &env, queue, upstream.as_ref(), stopping).await;
        }
        if stopping {
            return;
        }
    }
}

async fn flush(
    analytics: &Analytics,
    env: &EnvCounts,
    queue: &mut Queue,
    upstream: Option<&Upstream>,
    stopping: bool,
) {
    let batch = env.take();
    let upstream = match upstream {
        Some(upstream) if env.forwarded_upstream => upstream,
        _ => {
            if !batch.counts.is_empty() {
                env.flushed(FlushOutcome::Offline, batch.events);
            }
            return;
        }
    };
    if !batch.counts.is_empty() {
        queue.push(batch, analytics.config.max_pending_features, env);
    }
    let waiting = queue.next_attempt.is_some_and(|at| Instant::now() < at);
    if queue.batches.is_empty() || (waiting && !stopping) {
        env.pending
            .store(queue.events(), std::sync::atomic::Ordering::Relaxed);
        return;
    }
    let all = queue.merged();
    match send(upstream, env, &all).await {
        Sent::Delivered => {
            env.delivered(all.events);
            env.flushed(FlushOutcome::Delivered, all.events);
            queue.clear();
        }
        Sent::Refused(status) => {
            tracing::warn!(environment = %env.fingerprint, %status, events = all.events,
                "flag analytics refused upstream; dropping them");
            env.drop_events(DropReason::Refused, all.events);
            env.flushed(FlushOutcome::Refused, all.events);
            queue.clear();
        }
        Sent::Retry(reason) => {
            env.failed();
            env.flushed(FlushOutcome::Failed, all.events);
            if stopping {
                tracing::warn!(environment = %env.fingerprint, %reason, events = all.events,
                    "flag analytics not delivered before exit; dropping them");
                env.drop_events(DropReason::Shutdown, all.events);
                queue.clear();
            } else {
                queue.failures += 1;
                let backoff = analytics
                    .config
                    .flush_interval
                    .saturating_mul(1 << queue.failures.min(10).saturating_sub(1))
                    .min(MAX_BACKOFF.max(analytics.config.flush_interval));
                queue.next_attempt = Some(Instant::now() + backoff);
                tracing::warn!(environment = %env.fingerprint, %reason, retry_in_seconds = backoff.as_secs_f64(),
                    "flag analytics not delivered; kept for a retry");
            }
        }
    }
    env.pending
        .store(queue.events(), std::sync::atomic::Ordering::Relaxed);
}

enum Sent {
    Delivered,
    Refused(reqwest::StatusCode),
    Retry(String),
}

async fn send(upstream: &Upstream, env: &EnvCounts, batch: &Batch) -> Sent {
    let request = upstream
        .client
        .post(format!("{}/analytics/flags/", upstream.api_url))
        .header("X-Environment-Key", &env.client_key)
        .header("Content-Type", "application/json")
        .body(crate::json::to_vec(&batch.counts))
        .timeout(upstream.timeout)
        .build();
    let sent = match request {
        Ok(request) => {
            ClientSpan::send(
                &upstream.client,
                request,
                ("POST /analytics/flags/", Cause::Background),
                Some(&env.client_key),
            )
            .await
        }
        Err(e) => Err(e),
    };
    match sent {
        Ok(response) if response.status().is_success() => Sent::Delivered,
        Ok(response) if response.status().is_client_error() => Sent::Refused(response.status()),
        Ok(response) => Sent::Retry(format!("status {}", response.status())),
        Err(e) => Sent::Retry(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(names: &[&str], events: u64) -> Batch {
        Batch {
            counts: names.iter().map(|n| (n.to_string(), 1)).collect(),
            events,
        }
    }

    #[test]
    fn kept_counts_merge_and_past_the_cap_the_oldest_go() {
        let env = EnvCounts::new("k", true);
        let mut queue = Queue::default();
        queue.push(batch(&["a", "b"], 5), 4, &env);
        queue.push(batch(&["b", "c"], 7), 4, &env);
        let merged = queue.merged();
        assert_eq!((merged.events, merged.counts["b"]), (12, 2));
        // Six names held past a cap of four: the oldest batch goes, counted as dropped.
        queue.push(batch(&["d", "e"], 1), 4, &env);
        assert_eq!(
            (queue.batches.len(), queue.names, queue.events()),
            (2, 4, 8)
        );
        assert_eq!(env.facts().dropped, 5);
        // A batch alone over the cap is kept (the newest counts are never the ones dropped).
        queue.push(batch(&["f", "g", "h", "i", "j"], 9), 4, &env);
        assert_eq!((queue.batches.len(), queue.events()), (1, 9));
    }
}
