//! Usage reporting with `proxy_key`: every
//! `flagpole.usage_report_interval_seconds` the requests served since the last delivered batch
//! are posted to `POST {api_url}/proxy/usage/` as a JSON array of rows
//! `{"client_side_key","resource","count"}` (at most 1,000 a batch), each batch with its own
//! `Idempotency-Key`. A 2xx delivers it and a 4xx drops it; a 5xx or a network error keeps it,
//! with the same key, for the next round, so a retry that did reach upstream is not counted
//! twice. Requests never wait for any of this: they only add to per-environment atomics.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::store::{EnvSlot, Store};
use crate::usage::Resource;
use flagpole_config::Config;

/// Rows per batch at most.
const MAX_ROWS: usize = 1000;

/// One batch: its rows and the idempotency key it keeps across retries.
struct Batch {
    key: String,
    rows: Vec<Row>,
}

struct Row {
    env: Arc<EnvSlot>,
    resource: Resource,
    count: u64,
    /// The served total the count runs up to (marked reported when the batch is done).
    served_total: u64,
}

/// Reports until `drained` (the proxy has stopped serving and its requests in flight have
/// finished), then makes one last attempt that includes them.
pub(crate) async fn run(
    store: Arc<Store>,
    client: reqwest::Client,
    config: Arc<Config>,
    proxy_key: String,
    drained: CancellationToken,
) {
    let mut queue: VecDeque<Batch> = VecDeque::new();
    let interval = config
        .upstream
        .usage_report_interval
        .max(std::time::Duration::from_millis(100));
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(interval) => false,
            _ = drained.cancelled() => true,
        };
        if queue.is_empty() {
            queue.extend(collect(&store));
        }
        deliver(&mut queue, &client, &config, &proxy_key).await;
        if stopping {
            // A batch left over from an earlier round went out first; what was served since
            // goes now, once.
            if queue.is_empty() {
                queue.extend(collect(&store));
                deliver(&mut queue, &client, &config, &proxy_key).await;
            }
            return;
        }
    }
}

/// Sends queued batches in order until one must be retried later.
async fn deliver(
    queue: &mut VecDeque<Batch>,
    client: &reqwest::Client,
    config: &Config,
    proxy_key: &str,
) {
    while let Some(batch) = queue.front() {
        match send(client, config, proxy_key, batch).await {
            Outcome::Delivered | Outcome::Dropped => {
                let batch = queue.pop_front().expect("front exists");
                for row in batch.rows {
                    row.env.usage.mark_reported(row.resource, row.served_total);
                }
            }
            Outcome::Retry => break,
        }
    }
}

/// Everything served and not yet reported, in batches of at most [`MAX_ROWS`].
fn collect(store: &Store) -> Vec<Batch> {
    let mut rows = Vec::new();
    for env in store.environments() {
        for (resource, count, served_total) in env.usage.unreported() {
            rows.push(Row {
                env: env.clone(),
                resource,
                count,
                served_total,
            });
        }
    }
    let mut batches = Vec::new();
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(MAX_ROWS));
        batches.push(Batch {
            key: idempotency_key(),
            rows,
        });
        rows = rest;
    }
    batches
}

fn idempotency_key() -> String {
    format!("{:032x}", rand::random::<u128>())
}

enum Outcome {
    Delivered,
    Dropped,
    Retry,
}

async fn send(
    client: &reqwest::Client,
    config: &Config,
    proxy_key: &str,
    batch: &Batch,
) -> Outcome {
    let body: Vec<_> = batch
        .rows
        .iter()
        .map(|row| {
            json!({
                "client_side_key": row.env.client_key,
                "resource": row.resource.name(),
                "count": row.count,
            })
        })
        .collect();
    let sent = client
        .post(format!("{}/proxy/usage/", config.upstream.api_url))
        .header("X-Proxy-Key", proxy_key)
        .header("Idempotency-Key", &batch.key)
        .header("Content-Type", "application/json")
        .body(crate::json::to_vec(&body))
        .timeout(config.upstream.poll_timeout)
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => Outcome::Delivered,
        Ok(response) if response.status().is_client_error() => {
            tracing::warn!(status = %response.status(), rows = batch.rows.len(), "usage report refused; dropping the batch");
            Outcome::Dropped
        }
        Ok(response) => {
            tracing::warn!(status = %response.status(), "usage report failed; will retry");
            Outcome::Retry
        }
        Err(e) => {
            tracing::warn!(error = %e, "usage report failed; will retry");
            Outcome::Retry
        }
    }
}
