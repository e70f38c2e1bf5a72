//! `proxy_key` discovery: every poll period, `GET
//! {api_url}/proxy/config/` with `X-Proxy-Key` lists the environments this proxy serves and
//! their server keys. Each listing is applied whole: new environments are added and polled,
//! server keys follow it (a key resolves only while active and unexpired), environments no
//! longer listed are removed (their poller stopped, their streams ended). Configured pairs are
//! never removed. A listing that cannot be fetched or read changes nothing. In a fleet, one
//! replica fetches the listing for all and the others read it from Redis
//! (`fleet/discovery.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::fleet::{Fleet, SharedListing};
use super::upstream::Pollers;
use crate::keys::fingerprint;
use crate::store::{DiscoveredEnv, Store};
use crate::streams::Streams;

/// The discovery loop's state: what it polls with, and the pollers it started.
pub(crate) struct Discovery {
    proxy_key: String,
    store: Arc<Store>,
    streams: Arc<Streams>,
    pollers: Pollers,
    /// The last failure (logged once per change).
    last_error: Option<String>,
    /// The fleet's listing, in a fleet.
    shared: Option<SharedListing>,
}

#[derive(Deserialize)]
struct ListedEnv {
    client_side_key: String,
    #[serde(default)]
    server_side_keys: Vec<ListedKey>,
}

#[derive(Deserialize)]
struct ListedKey {
    key: String,
    #[serde(default = "yes")]
    active: bool,
    #[serde(default)]
    expires_at: Option<String>,
}

fn yes() -> bool {
    true
}

impl Discovery {
    pub(crate) fn new(
        proxy_key: String,
        store: Arc<Store>,
        streams: Arc<Streams>,
        pollers: Pollers,
        fleet: Option<Arc<Fleet>>,
    ) -> Discovery {
        Discovery {
            shared: fleet.map(|f| SharedListing::new(f, &proxy_key)),
            proxy_key,
            store,
            streams,
            pollers,
            last_error: None,
        }
    }

    /// Polls the listing until `stop` is cancelled (the proxy shutting down); in a fleet, keeps
    /// the listing's lease up in between.
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        let mut next_sync = Instant::now() + self.period();
        loop {
            let wake = match &self.shared {
                Some(shared) => next_sync.min(Instant::now() + shared.upkeep_every()),
                None => next_sync,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = stop.cancelled() => break,
            }
            if let Some(shared) = &mut self.shared {
                shared.upkeep().await;
            }
            if Instant::now() >= next_sync {
                self.sync_once().await;
                next_sync = Instant::now() + self.period();
            }
        }
        if let Some(shared) = &mut self.shared {
            shared.release().await;
        }
    }

    /// The time to the next listing: the poll period, with up to a tenth of it at random.
    fn period(&self) -> Duration {
        let period = self
            .pollers
            .config
            .upstream
            .poll_frequency
            .max(Duration::from_millis(100));
        period + period.mul_f64(rand::random::<f64>() * 0.1)
    }

    /// Fetches the listing once (in a fleet, reads the one fetched for the fleet) and applies it.
    pub(crate) async fn sync_once(&mut self) {
        let listed = match self.listing().await {
            Ok(listed) => listed,
            Err(reason) => return self.failed(reason),
        };
        if self.last_error.take().is_some() {
            tracing::info!("proxy key discovery recovered");
        }
        let changes = self.store.apply_discovery(&listed);
        for slot in &changes.added {
            tracing::info!(environment = %fingerprint(&slot.client_key), "environment added by key discovery");
            self.streams.register(slot, None);
            if let Some(warm) = &self.pollers.warm {
                warm.restore(slot).await;
            }
            self.pollers.spawn(slot.clone());
        }
        for slot in &changes.rotated {
            tracing::info!(environment = %fingerprint(&slot.client_key), "server keys changed by key discovery");
        }
        for slot in &changes.removed {
            tracing::info!(environment = %fingerprint(&slot.client_key), "environment removed by key discovery");
            // Retiring the environment ends its poller and its change streams.
            self.streams.unregister(slot);
        }
    }

    fn failed(&mut self, reason: String) {
        if self.last_error.as_deref() != Some(reason.as_str()) {
            tracing::warn!(%reason, "proxy key discovery failed; keeping the environments known");
            self.last_error = Some(reason);
        }
    }

    /// The listing: the fleet's from Redis when another replica fetches it, else fetched here
    /// (and, by the fleet's holder, written for the others once it reads well).
    async fn listing(&mut self) -> Result<Vec<DiscoveredEnv>, String> {
        if let Some(shared) = &mut self.shared {
            if let Some(stored) = shared.stored().await {
                return parse_listing(&stored, SystemTime::now()).map_err(|reason| {
                    shared.refused();
                    format!("the fleet's stored listing: {reason}")
                });
            }
        }
        let timeout = self.pollers.config.upstream.poll_timeout;
        let body = match tokio::time::timeout(timeout, self.fetch()).await {
            Ok(fetched) => fetched?,
            Err(_) => return Err(format!("timed out after {timeout:?}")),
        };
        let listed = parse_listing(&body, SystemTime::now())?;
        if let Some(shared) = &mut self.shared {
            shared.publish(&body).await;
        }
        Ok(listed)
    }

    async fn fetch(&self) -> Result<Bytes, String> {
        let url = format!("{}/proxy/config/", self.pollers.config.upstream.api_url);
        let response = self
            .pollers
            .client
            .get(&url)
            .header("X-Proxy-Key", &self.proxy_key)
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("upstream answered {status}"));
        }
        response
            .bytes()
            .await
            .map_err(|e| format!("reading the body failed: {e}"))
    }
}

/// Reads a listing, keeping only usable server keys (active, not expired at `now`). Anything
/// malformed rejects the whole listing.
fn parse_listing(body: &[u8], now: SystemTime) -> Result<Vec<DiscoveredEnv>, String> {
    let listed: Vec<ListedEnv> =
        serde_json::from_slice(body).map_err(|e| format!("not a proxy config listing: {e}"))?;
    let mut found = Vec::with_capacity(listed.len());
    for env in listed {
        let client_key = env.client_side_key.trim().to_owned();
        if client_key.is_empty() {
            return Err("a listed environment has an empty client_side_key".into());
        }
        let mut server_keys = Vec::new();
        for key in env.server_side_keys {
            let expires_at = match key.expires_at.as_deref() {
                None => None,
                Some(text) => Some(
                    chrono::DateTime::parse_from_rfc3339(text)
                        .map_err(|e| format!("expires_at '{text}': {e}"))?
                        .into(),
                ),
            };
            let usable = key.active && expires_at.is_none_or(|at: SystemTime| at > now);
            let trimmed = key.key.trim();
            if usable && !trimmed.is_empty() {
                server_keys.push((trimmed.to_owned(), expires_at));
            }
        }
        found.push(DiscoveredEnv {
            client_key,
            server_keys,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_keeps_usable_keys_only() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let body = br#"[{"client_side_key": "abc", "server_side_keys": [
            {"key": "ser.live", "active": true, "expires_at": null},
            {"key": "ser.off", "active": false, "expires_at": null},
            {"key": "ser.old", "active": true, "expires_at": "2020-01-01T00:00:00Z"},
            {"key": "ser.later", "active": true, "expires_at": "2030-01-01T00:00:00+00:00"}
        ], "extra": 1}]"#;
        let found = parse_listing(body, now).unwrap();
        assert_eq!(found.len(), 1);
        let keys: Vec<&str> = found[0]
            .server_keys
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["ser.live", "ser.later"]);
        assert!(found[0].server_keys[1].1.is_some());
    }

    #[test]
    fn malformed_listings_are_rejected_whole() {
        let now = SystemTime::now();
        for body in [
            &b"{}"[..],
            b"[{\"server_side_keys\": []}]",
            b"[{\"client_side_key\": \" \"}]",
            b"[{\"client_side_key\": \"a\", \"server_side_keys\": [{\"key\": \"ser.x\", \"expires_at\": \"soon\"}]}]",
            b"not json",
        ] {
            assert!(parse_listing(body, now).is_err(), "{body:?}");
        }
        assert_eq!(parse_listing(b"[]", now).unwrap(), vec![]);
    }
}
