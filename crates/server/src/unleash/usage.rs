//! SDK registrations and metrics forwarded to the Unleash server, as Unleash Edge forwards
//! them: gathered per feed (per client token, so per environment) by `flagpole_unleash::Usage`
//! and posted every metrics interval as one `POST {upstream}/api/client/metrics/bulk` with that
//! token. A 2xx delivers the batch; a 4xx other than 429 drops it (logged: the server will not
//! take it again); a 429, a 5xx or no answer puts it back, merged with what arrives meanwhile,
//! for the next interval. When requests have drained at shutdown everything held goes out once
//! more; what fails then is dropped and counted.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use tokio_util::sync::CancellationToken;

use super::{Feed, Unleash};

/// A bulk post takes at most this long.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// `/metrics`: SDK evaluations and registrations by what became of them.
const EVALUATIONS: &str = "flagpole_unleash_usage_evaluations_total";
const REGISTRATIONS: &str = "flagpole_unleash_usage_registrations_total";

/// Forwards every interval until `drained`, then once more.
pub(super) async fn run(
    unleash: Arc<Unleash>,
    url: String,
    interval: Duration,
    drained: CancellationToken,
) {
    metrics::describe_counter!(
        EVALUATIONS,
        "Unleash SDK toggle evaluations reported, by result (delivered to the upstream, dropped)"
    );
    metrics::describe_counter!(
        REGISTRATIONS,
        "Unleash SDK registrations, by result (delivered to the upstream, dropped)"
    );
    for result in ["delivered", "dropped"] {
        metrics::counter!(EVALUATIONS, "result" => result).increment(0);
        metrics::counter!(REGISTRATIONS, "result" => result).increment(0);
    }
    let endpoint = format!("{}/api/client/metrics/bulk", url.trim_end_matches('/'));
    let client = crate::sources::upstream::client();
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(interval) => false,
            _ = drained.cancelled() => true,
        };
        for (token, feed) in unleash.client_tokens().iter().zip(unleash.feeds()) {
            let Some(batch) = feed.usage.lock().drain() else {
                continue;
            };
            let sent = post(&client, &endpoint, &unleash, token.secret_text(), &batch).await;
            let (evaluations, registrations) = (batch.evaluations(), batch.registrations());
            match sent {
                Ok(()) => {
                    count("delivered", evaluations, registrations);
                    tracing::debug!(feed = %feed.name, evaluations, registrations, "Unleash SDK usage forwarded");
                }
                Err(Failure::Refused(why)) => {
                    count("dropped", evaluations, registrations);
                    tracing::warn!(feed = %feed.name, reason = %why, evaluations, "the Unleash server refused the SDK usage; dropped");
                }
                Err(Failure::Retry(why)) if stopping => {
                    count("dropped", evaluations, registrations);
                    tracing::warn!(feed = %feed.name, reason = %why, evaluations, "forwarding the SDK usage at shutdown failed; dropped");
                }
                Err(Failure::Retry(why)) => {
                    tracing::warn!(feed = %feed.name, reason = %why, "forwarding the SDK usage failed; kept for the next interval");
                    feed.usage.lock().restore(batch);
                }
            }
        }
        if stopping {
            return;
        }
    }
}

fn count(result: &'static str, evaluations: u64, registrations: usize) {
    metrics::counter!(EVALUATIONS, "result" => result).increment(evaluations);
    metrics::counter!(REGISTRATIONS, "result" => result).increment(registrations as u64);
}

enum Failure {
    /// The server will not take it: sending it again would not help.
    Refused(String),
    /// Worth another try.
    Retry(String),
}

async fn post(
    client: &reqwest::Client,
    endpoint: &str,
    unleash: &Unleash,
    token: &str,
    batch: &flagpole_unleash::Batch,
) -> Result<(), Failure> {
    let request = client
        .post(endpoint)
        .header(AUTHORIZATION, token)
        .header(CONTENT_TYPE, "application/json")
        .timeout(POST_TIMEOUT)
        .body(batch.to_json());
    let response = unleash
        .identity
        .apply(request)
        .send()
        .await
        .map_err(|e| Failure::Retry(format!("the upstream is unreachable: {e}")))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else if status.is_client_error() && status != reqwest::StatusCode::TOO_MANY_REQUESTS {
        let text = response.text().await.unwrap_or_default();
        let text: String = text.chars().take(300).collect();
        Err(Failure::Refused(format!("HTTP {status}: {text}")))
    } else {
        Err(Failure::Retry(format!("HTTP {status}")))
    }
}

impl Feed {
    /// Takes an SDK's metrics body for this feed's environment (checked either way; gathered
    /// only when `forwarded`).
    pub(crate) fn record_metrics(
        &self,
        body: &[u8],
        environment: &str,
        forwarded: bool,
    ) -> Result<(), flagpole_unleash::UsageError> {
        if forwarded {
            self.usage.lock().record_metrics(body, environment)
        } else {
            flagpole_unleash::Usage::default().record_metrics(body, environment)
        }
    }

    /// Takes an SDK's registration for this feed's environment (as `record_metrics`).
    pub(crate) fn record_registration(
        &self,
        body: &[u8],
        environment: &str,
        via: (&str, &str),
        forwarded: bool,
    ) -> Result<(), flagpole_unleash::UsageError> {
        if forwarded {
            self.usage
                .lock()
                .record_registration(body, environment, via)
        } else {
            flagpole_unleash::Usage::default().record_registration(body, environment, via)
        }
    }
}
