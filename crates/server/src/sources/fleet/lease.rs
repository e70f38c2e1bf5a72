//! A lease: the right to poll one environment (or the `proxy_key` listing) upstream for the
//! whole fleet, held in Redis with a
//! time to live (`lease_seconds`), renewed by its holder every third of it. Its value is the
//! holder's name and a fencing token, a number from a per-environment counter that only grows:
//! a holder whose lease ran out (it hung, or Redis expired it) and was taken by another no
//! longer matches it, and every write it attempts is checked against it inside Redis (one script,
//! so nothing comes between the check and the write).

use std::sync::LazyLock;
use std::time::Duration;

use redis::{RedisResult, Script};

use super::traced::Connection;
use super::Names;

/// A lease this replica holds: the value Redis keeps under the lease's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    pub value: String,
}

/// Takes the lease if nobody holds it: a new token from the fencing counter, and the lease set
/// with its time to live. Returns the token, or 0 when another replica holds it.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
        local token = redis.call('INCR', KEYS[2])
        redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
        return token
        ",
    )
});

/// Extends the lease if it is still this holder's (1), else nothing (0).
static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        return 1
        ",
    )
});

/// Deletes the lease if it is still this holder's.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        return redis.call('DEL', KEYS[1])
        ",
    )
});

fn millis(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

/// Takes the lease of `names` for `replica` if it is free.
pub(crate) async fn acquire(
    conn: &mut Connection,
    names: &Names,
    replica: &str,
    ttl: Duration,
) -> RedisResult<Option<Lease>> {
    let token: u64 = ACQUIRE
        .key(&names.lease)
        .key(&names.fence)
        .arg(replica)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    Ok((token > 0).then(|| Lease {
        value: format!("{replica}:{token}"),
    }))
}

/// Extends a held lease; `false`: it was lost (expired, and maybe taken by another replica).
pub(crate) async fn renew(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    ttl: Duration,
) -> RedisResult<bool> {
    let renewed: u32 = RENEW
        .key(&names.lease)
        .arg(&lease.value)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    Ok(renewed == 1)
}

/// Gives a held lease up (another replica may take it at once).
pub(crate) async fn release(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
) -> RedisResult<()> {
    let _: u32 = RELEASE
        .key(&names.lease)
        .arg(&lease.value)
        .invoke_async(conn)
        .await?;
    Ok(())
}
