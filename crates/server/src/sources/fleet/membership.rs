//! Which replicas are alive: each adds itself to a sorted set in Redis scored by Redis's own
//! clock (no skew between replicas), every third of a lease, and members silent for a whole
//! lease are dropped. The count sets each replica's share of the leases, so that they spread
//! over the fleet instead of going to whoever started first.
//!
//! The set is shared, so it may hold what no replica wrote: a key of another type is replaced
//! (once, with a warning) rather than failing every heartbeat, and members scored more than a
//! lease ahead of Redis's clock (never a replica's) are dropped with the silent ones.

use std::sync::{Arc, LazyLock};

use redis::Script;
use tokio_util::sync::CancellationToken;

use super::{Fleet, MEMBERS};

/// The heartbeat's second answer, named alike in its Lua: whether the member list was replaced.
const KEPT: u8 = 0;
const REPLACED: u8 = 1;

/// Adds or refreshes a member, drops the silent and the impossible ones; returns how many are
/// alive, and `REPLACED` if the key had another type and was replaced (else `KEPT`).
static HEARTBEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}",
        super::lua_codes(&[("KEPT", KEPT), ("REPLACED", REPLACED)]),
        r"
        local members = KEYS[1]
        local replica, lease_ms = ARGV[1], tonumber(ARGV[2])
        local replaced = KEPT
        local kind = redis.call('TYPE', members).ok
        if kind ~= 'zset' and kind ~= 'none' then
            redis.call('DEL', members)
            replaced = REPLACED
        end
        local t = redis.call('TIME')
        local now = t[1] * 1000 + math.floor(t[2] / 1000)
        redis.call('ZADD', members, now, replica)
        redis.call('ZREMRANGEBYSCORE', members, '-inf', now - lease_ms)
        redis.call('ZREMRANGEBYSCORE', members, string.format('(%d', now + lease_ms), '+inf')
        return {redis.call('ZCARD', members), replaced}
        ",
    ))
});

/// Keeps this replica on the member list until shutdown, then takes it off.
pub(crate) async fn run(fleet: Arc<Fleet>, stop: CancellationToken) {
    let every = fleet.lease / 3;
    loop {
        if let Some(mut conn) = fleet.connection().await {
            let alive: redis::RedisResult<(usize, u8)> = HEARTBEAT
                .key(MEMBERS)
                .arg(&fleet.replica)
                .arg(fleet.lease.as_millis() as u64)
                .invoke_async(&mut conn)
                .await;
            fleet.answered(alive.as_ref());
            if let Ok((n, replaced)) = alive {
                if replaced == REPLACED {
                    tracing::warn!(
                        key = MEMBERS,
                        "the fleet's member list in Redis had another type: replaced"
                    );
                }
                fleet.shares.set_replicas(n);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => break,
        }
    }
    if let Some(mut conn) = fleet.connection().await {
        let _: redis::RedisResult<u32> = tokio::time::timeout(
            super::TIMEOUT,
            redis::cmd("ZREM")
                .arg(MEMBERS)
                .arg(&fleet.replica)
                .query_async(&mut conn),
        )
        .await
        .unwrap_or(Ok(0));
    }
}
