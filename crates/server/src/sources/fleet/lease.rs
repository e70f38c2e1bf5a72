//! A lease: the right to poll one environment (or the `proxy_key` listing) upstream for the
//! whole fleet, held in Redis with a time to live (`lease_seconds`), renewed by its holder every
//! third of it. Its value is the holder's name and a fencing token, a number from a
//! per-environment counter that only grows: a holder whose lease ran out (it hung, or Redis
//! expired it) and was taken by another no longer matches it, and every write it attempts is
//! checked against it inside Redis (one script, so nothing comes between the check and the
//! write).
//!
//! Redis is shared, so a lease key may hold what no replica wrote: another type, a value that is
//! not `<replica>:<token>`, a value without a time to live (a replica always sets one). Left
//! alone, such a key would keep every replica off the environment for good. The scripts repair
//! it where they find it, atomically: an unreadable or timeless value counts as expired (deleted,
//! or taken back at once by the holder that finds it in place of its own), and a lease with a
//! longer time to live than a lease is cut to one. No environment then stays without a holder
//! for longer than a lease.
//!
//! The scripts name what they are given (`local lease_key, ttl = KEYS[1], ARGV[1]`) and what
//! they answer: their codes are this file's constants, declared in the Lua from them.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{RedisResult, Script};

use super::traced::Connection;
use super::{lua_codes, Names};

/// A lease this replica holds: the value Redis keeps under the lease's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    pub value: String,
}

/// What a script found wrong with a lease key and mended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repair {
    /// Not a `<replica>:<token>` string with a time to live: treated as expired.
    Unreadable,
    /// A longer time to live than a lease: cut to one.
    Overlong,
}

/// The scripts' answer codes, named alike in their Lua ([`lua_codes`]): what was repaired.
const NOTHING_REPAIRED: i64 = 0;
const UNREADABLE: i64 = 1;
const OVERLONG: i64 = 2;
/// [`PROBE`]: whether the lease is held.
const FREE: i64 = 0;
const HELD: i64 = 1;
/// [`ACQUIRE`]: no token, as another replica holds the lease (a token is never 0).
const NO_TOKEN: u64 = 0;
/// [`RENEW`]: how the renewal went.
const LOST: u32 = 0;
const RENEWED: u32 = 1;
const RECLAIMED: u32 = 2;
/// [`RELEASE`]: the lease was not this holder's (else the count of keys deleted, 1).
const NOT_HELD: u32 = 0;

impl Repair {
    fn of(code: i64) -> Option<Repair> {
        match code {
            UNREADABLE => Some(Repair::Unreadable),
            OVERLONG => Some(Repair::Overlong),
            _ => None,
        }
    }

    /// For the log line.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Repair::Unreadable => {
                "the lease key held a value no replica wrote (another type, not <replica>:<token>, or no time to live): treated as expired"
            }
            Repair::Overlong => {
                "the lease key had a longer time to live than a lease: cut to one"
            }
        }
    }
}

/// Lua shared by the scripts: `value(key)` is what a lease key holds if it is a string (else
/// ''), `readable(key, value)` whether that is a lease a replica wrote, `holder(key, ttl)` the
/// lease's value, or `nil` when it is free: an unreadable key is deleted first (`repaired` =
/// `UNREADABLE`), one with a longer time to live than `ttl` cut to it (`OVERLONG`).
fn holder_lua() -> String {
    let codes = lua_codes(&[
        ("NOTHING_REPAIRED", NOTHING_REPAIRED),
        ("UNREADABLE", UNREADABLE),
        ("OVERLONG", OVERLONG),
    ]);
    format!(
        r"{codes}
local repaired = NOTHING_REPAIRED
local function value(key)
    if redis.call('TYPE', key).ok ~= 'string' then return '' end
    return redis.call('GET', key)
end
local function readable(key, v)
    return string.match(v, '^[^:]+:%d+$') and redis.call('PTTL', key) >= 0
end
local function holder(key, ttl)
    if redis.call('EXISTS', key) == 0 then return nil end
    local v = value(key)
    if not readable(key, v) then
        redis.call('DEL', key)
        repaired = UNREADABLE
        return nil
    end
    if redis.call('PTTL', key) > tonumber(ttl) then
        redis.call('PEXPIRE', key, ttl)
        repaired = OVERLONG
    end
    return v
end
"
    )
}

/// Whether the lease is free or held, with what was repaired.
static PROBE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}
        local lease_key, ttl = KEYS[1], ARGV[1]
        local held = holder(lease_key, ttl) and HELD or FREE
        return {{held, repaired}}
        ",
        holder_lua(),
        lua_codes(&[("FREE", FREE), ("HELD", HELD)]),
    ))
});

/// Takes the lease if nobody holds it: a new token from the fencing counter, and the lease set
/// with its time to live. Returns the token, or `NO_TOKEN` when another replica holds it. A
/// counter that is not one (overwritten) starts again from Redis's clock in microseconds, above
/// any token it can have given.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}
        local lease_key, fence_key = KEYS[1], KEYS[2]
        local replica, ttl = ARGV[1], ARGV[2]
        if holder(lease_key, ttl) then return {{NO_TOKEN, repaired}} end
        local token = redis.pcall('INCR', fence_key)
        if type(token) == 'table' then
            local t = redis.call('TIME')
            redis.call('DEL', fence_key)
            token = redis.call('INCRBY', fence_key, t[1] .. string.format('%06d', tonumber(t[2])))
        end
        -- Lua numbers are doubles: a token past 14 digits (one restarted from the clock) would
        -- be written as 1.79e+15, a value no replica can read, so it is formatted as an integer.
        redis.call('SET', lease_key, replica .. ':' .. string.format('%d', token), 'PX', ttl)
        return {{token, repaired}}
        ",
        holder_lua(),
        lua_codes(&[("NO_TOKEN", NO_TOKEN)]),
    ))
});

/// Extends the lease if it is still this holder's (`RENEWED`). `LOST`: it expired, or another
/// replica's lease is there (cut to a lease's time if longer). Unreadable in its place
/// (`RECLAIMED`): treated as expired, and taken back.
static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}
        local lease_key = KEYS[1]
        local mine, ttl = ARGV[1], ARGV[2]
        if redis.call('EXISTS', lease_key) == 0 then return LOST end
        local v = value(lease_key)
        if v == mine then
            redis.call('PEXPIRE', lease_key, ttl)
            return RENEWED
        end
        if readable(lease_key, v) then
            holder(lease_key, ttl)
            return LOST
        end
        redis.call('DEL', lease_key)
        redis.call('SET', lease_key, mine, 'PX', ttl)
        return RECLAIMED
        ",
        holder_lua(),
        lua_codes(&[
            ("LOST", LOST),
            ("RENEWED", RENEWED),
            ("RECLAIMED", RECLAIMED)
        ]),
    ))
});

/// Deletes the lease if it is still this holder's.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}
        local lease_key, mine = KEYS[1], ARGV[1]
        if value(lease_key) ~= mine then return NOT_HELD end
        return redis.call('DEL', lease_key)
        ",
        holder_lua(),
        lua_codes(&[("NOT_HELD", NOT_HELD)]),
    ))
});

fn millis(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

/// What a look at a lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Probe {
    pub free: bool,
    pub repaired: Option<Repair>,
}

/// Whether the lease of `names` is free, mending what is wrong with its key (`ttl`: a lease's).
pub(crate) async fn probe(
    conn: &mut Connection,
    names: &Names,
    ttl: Duration,
) -> RedisResult<Probe> {
    let (held, repaired): (i64, i64) = PROBE
        .key(&names.lease)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    Ok(Probe {
        free: held == FREE,
        repaired: Repair::of(repaired),
    })
}

/// What an attempt to take a lease gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The lease, unless another replica holds it.
    pub lease: Option<Lease>,
    pub repaired: Option<Repair>,
}

/// Takes the lease of `names` for `replica` if it is free.
pub(crate) async fn acquire(
    conn: &mut Connection,
    names: &Names,
    replica: &str,
    ttl: Duration,
) -> RedisResult<Taken> {
    let (token, repaired): (u64, i64) = ACQUIRE
        .key(&names.lease)
        .key(&names.fence)
        .arg(replica)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    Ok(Taken {
        lease: (token != NO_TOKEN).then(|| Lease {
            value: format!("{replica}:{token}"),
        }),
        repaired: Repair::of(repaired),
    })
}

/// How a renewal went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    Renewed,
    /// An unreadable value stood in its place: it counted as expired and was taken back.
    Reclaimed,
    /// Expired, and maybe taken by another replica.
    Lost,
}

/// Extends a held lease.
pub(crate) async fn renew(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    ttl: Duration,
) -> RedisResult<Renewal> {
    let renewed: u32 = RENEW
        .key(&names.lease)
        .arg(&lease.value)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    Ok(match renewed {
        RENEWED => Renewal::Renewed,
        RECLAIMED => Renewal::Reclaimed,
        // `LOST`, and anything else: the safe reading is that the lease is gone.
        _ => Renewal::Lost,
    })
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
