//! The `proxy_key` listing shared by the fleet, as environments' documents are: one replica
//! holds the listing's lease and fetches it upstream, then writes what it fetched (fenced by
//! its lease) to Redis; the others read that at their own listing times instead of asking
//! upstream. Nothing stored yet, or Redis not answering: each replica fetches for itself. What
//! is read is checked as an upstream listing is (by the caller); a listing that fails is
//! refused, counted, and the environments known kept.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use redis::{AsyncCommands, Script};

use super::lease::{self, Lease};
use super::{Fleet, Names};
use crate::telemetry::fleet::Refusal;

/// The write's answer, named alike in its Lua.
const LEASE_LOST: u32 = 0;
const WRITTEN: u32 = 1;

/// Writes the listing if the lease is still the writer's (`WRITTEN`; else `LEASE_LOST`).
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}",
        super::lua_codes(&[("LEASE_LOST", LEASE_LOST), ("WRITTEN", WRITTEN)]),
        r"
        local lease_key, listing_key = KEYS[1], KEYS[2]
        local mine, body = ARGV[1], ARGV[2]
        if redis.pcall('GET', lease_key) ~= mine then return LEASE_LOST end
        redis.call('HSET', listing_key, 'body', body)
        return WRITTEN
        ",
    ))
});

/// One replica's part in the fleet's listing.
pub(crate) struct SharedListing {
    fleet: Arc<Fleet>,
    names: Names,
    lease: Option<Lease>,
}

impl SharedListing {
    pub(crate) fn new(fleet: Arc<Fleet>, proxy_key: &str) -> SharedListing {
        SharedListing {
            fleet,
            names: Names::discovery(proxy_key),
            lease: None,
        }
    }

    /// How often the lease is kept up.
    pub(crate) fn upkeep_every(&self) -> Duration {
        self.fleet.lease / 3
    }

    /// Renews the lease held, or takes it if it is free (a lease lost or Redis away: not held).
    pub(crate) async fn upkeep(&mut self) {
        let Some(mut conn) = self.fleet.connection().await else {
            self.lease = None;
            return;
        };
        let fleet = self.fleet.clone();
        match self.lease.clone() {
            Some(held) => {
                let renewed = lease::renew(&mut conn, &self.names, &held, fleet.lease).await;
                fleet.answered(renewed.as_ref());
                if matches!(renewed, Ok(lease::Renewal::Lost) | Err(_)) {
                    self.lease = None;
                }
            }
            None => {
                let taken =
                    lease::acquire(&mut conn, &self.names, &fleet.replica, fleet.lease).await;
                fleet.answered(taken.as_ref());
                if let Ok(lease::Taken {
                    lease: Some(held), ..
                }) = taken
                {
                    tracing::debug!("holding the lease on the proxy key listing");
                    self.lease = Some(held);
                }
            }
        }
    }

    /// The listing another replica fetched for the fleet, when this one is not to fetch it:
    /// `None` while it holds the lease, Redis does not answer, or nothing is stored yet.
    pub(crate) async fn stored(&mut self) -> Option<Bytes> {
        if self.lease.is_none() {
            self.upkeep().await;
        }
        if self.lease.is_some() || !self.fleet.reachable() {
            return None;
        }
        let mut conn = self.fleet.connection().await?;
        let body: redis::RedisResult<Option<Vec<u8>>> =
            conn.hget(&self.names.document, "body").await;
        self.fleet.answered(body.as_ref());
        let body = Bytes::from(body.ok()??);
        self.fleet.figures.saved();
        Some(body)
    }

    /// A stored listing failed the checks: counted (the caller keeps what it knows).
    pub(crate) fn refused(&self) {
        self.fleet.figures.refused(Refusal::Rejected);
    }

    /// Writes a listing this replica fetched, if it holds the lease.
    pub(crate) async fn publish(&mut self, body: &Bytes) {
        let Some(held) = self.lease.clone() else {
            return;
        };
        let Some(mut conn) = self.fleet.connection().await else {
            return;
        };
        let written: redis::RedisResult<u32> = WRITE
            .key(&self.names.lease)
            .key(&self.names.document)
            .arg(&held.value)
            .arg(body.as_ref())
            .invoke_async(&mut conn)
            .await;
        self.fleet.answered(written.as_ref());
        if matches!(written, Ok(LEASE_LOST)) {
            tracing::info!("lease on the proxy key listing expired during the fetch: not written for the fleet");
            self.lease = None;
        }
    }

    /// Gives the lease up (shutdown).
    pub(crate) async fn release(&mut self) {
        if let (Some(held), Some(mut conn)) = (self.lease.take(), self.fleet.connection().await) {
            let _ = tokio::time::timeout(
                super::TIMEOUT,
                lease::release(&mut conn, &self.names, &held),
            )
            .await;
        }
    }
}
