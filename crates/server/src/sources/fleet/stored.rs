//! A document in Redis, as the lease holder writes it for the fleet: a hash of its body, the
//! content revision, its `updated_at`, when the holder last heard from upstream, and for a flag
//! file the upstream's ETag ([`put`], [`head`], [`check`] serve every kind). An environment's
//! body is the bytes SDKs are served, gzip-compressed (a fifth of the bytes to hold, write and
//! read; a packed snapshot already keeps that form, so the holder seldom compresses anything);
//! a flag file's is its raw text. The lease holder writes it (fenced by its lease, never over a
//! newer one) and announces it, and at each poll checks that Redis still holds the revision and
//! body it wrote (a value planted or damaged there is written over); the others read it, first
//! the revision alone (a periodic check of an unchanged document costs a few bytes), then the
//! body when it differs. What is read is decompressed, checked and compiled like an upstream
//! answer: a value that is not gzip, is cut short, or is not this environment's valid document
//! is refused, counted and logged, and the last good one kept. The scripts' arguments are named
//! locals and their answers this file's constants, declared in the Lua from them.

use std::io::Read;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redis::{AsyncCommands, RedisResult, Script};

use super::figures::Figures;
use super::lease::Lease;
use super::traced::Connection;
use super::{Names, CHANNEL};
use crate::body::Encoding;
use crate::received::Incoming;
use crate::sources::warm_start::WarmStart;
use crate::store::{EnvSlot, Published};
use crate::telemetry::fleet::Refusal;

/// A value that decompresses past this is refused (no document is near it; a crafted value
/// could otherwise inflate a thousandfold).
const MAX_DOCUMENT_BYTES: u64 = 512 << 20;

/// gzip at the level the served variants use.
const GZIP_LEVEL: u32 = 6;

/// The scripts' answer codes, named alike in their Lua: both answer `LEASE_LOST` when the lease
/// is no longer the holder's (nothing done).
const LEASE_LOST: u32 = 0;
/// [`WRITE`]: written; Redis holds a newer document (nothing written); Redis holds this
/// revision, body and all; written over another body under this revision (garbage, repaired).
const WRITTEN: u32 = 1;
const NEWER_HELD: u32 = 2;
const ALREADY_HELD: u32 = 3;
const REPAIRED: u32 = 4;
/// [`CHECK`]: Redis holds what the holder wrote; it holds something else.
const INTACT: u32 = 1;
const FOREIGN: u32 = 2;

/// Writes the document if the lease is still the writer's and what Redis holds is not newer
/// (unless `over_refused` is `1`: what it holds was refused); announces it. Answers the outcome
/// and the SHA-1 of the body Redis then holds (what [`CHECK`] later compares): `WRITTEN`;
/// `LEASE_LOST` (nothing written); `NEWER_HELD`; `ALREADY_HELD`, body and all; `REPAIRED`,
/// written over another body under this revision (logged here, as the holder's own check would
/// have). `etag`: the upstream's ETag, kept beside the body (empty: none kept).
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}",
        super::lua_codes(&[
            ("LEASE_LOST", LEASE_LOST),
            ("WRITTEN", WRITTEN),
            ("NEWER_HELD", NEWER_HELD),
            ("ALREADY_HELD", ALREADY_HELD),
            ("REPAIRED", REPAIRED),
        ]),
        r"
        local lease_key, document_key = KEYS[1], KEYS[2]
        local mine, body, revision, updated_at_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
        local channel, id, over_refused = ARGV[5], ARGV[6], ARGV[7]
        local confirmed_at_ms, etag = ARGV[8], ARGV[9]
        if redis.pcall('GET', lease_key) ~= mine then return {LEASE_LOST, ''} end
        -- A document key of another type (not written by a replica) is garbage: replaced.
        if redis.call('TYPE', document_key).ok ~= 'hash' then redis.call('DEL', document_key) end
        local held = redis.call('HMGET', document_key, 'updated_at_ms', 'revision', 'body')
        local held_updated_at_ms, held_revision, held_body = held[1], held[2], held[3]
        local digest = redis.sha1hex(body)
        local outcome = WRITTEN
        if held_revision == revision then
            if held_body and redis.sha1hex(held_body) == digest then return {ALREADY_HELD, digest} end
            outcome = REPAIRED
        elseif over_refused ~= '1' and held_updated_at_ms and tonumber(held_updated_at_ms)
            and tonumber(held_updated_at_ms) > tonumber(updated_at_ms) then
            return {NEWER_HELD, ''}
        end
        redis.call('HSET', document_key, 'body', body, 'revision', revision,
            'updated_at_ms', updated_at_ms, 'confirmed_at_ms', confirmed_at_ms)
        if etag ~= '' then redis.call('HSET', document_key, 'etag', etag)
        else redis.call('HDEL', document_key, 'etag') end
        redis.call('PUBLISH', channel, id)
        return {outcome, digest}
        ",
    ))
});

/// At each of the holder's polls, whatever the upstream answered: whether Redis still holds
/// what the holder wrote (its revision, and its body's SHA-1, compared in Redis so that the
/// body is not sent back), and if so (and `confirmed_at_ms` is not empty: the upstream
/// answered) when the holder last heard from upstream, which the others report as their last
/// successful update (readiness judges the fleet's document by its age at the upstream, as a
/// lone proxy does). `INTACT`; `FOREIGN`: Redis holds something else (a value the holder must
/// repair); `LEASE_LOST`.
static CHECK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}",
        super::lua_codes(&[
            ("LEASE_LOST", LEASE_LOST),
            ("INTACT", INTACT),
            ("FOREIGN", FOREIGN),
        ]),
        r"
        local lease_key, document_key = KEYS[1], KEYS[2]
        local mine, revision, digest, confirmed_at_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
        if redis.pcall('GET', lease_key) ~= mine then return LEASE_LOST end
        if redis.call('TYPE', document_key).ok ~= 'hash' then return FOREIGN end
        local held = redis.call('HMGET', document_key, 'revision', 'body')
        local held_revision, held_body = held[1], held[2]
        if held_revision ~= revision or not held_body or redis.sha1hex(held_body) ~= digest then
            return FOREIGN
        end
        if confirmed_at_ms ~= '' then redis.call('HSET', document_key, 'confirmed_at_ms', confirmed_at_ms) end
        return INTACT
        ",
    ))
});

/// What [`check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// Redis holds what the holder wrote.
    Intact,
    /// Redis holds another revision, or another body under the holder's revision.
    Foreign,
    /// The lease is no longer the holder's.
    LeaseLost,
}

/// Whether Redis still holds the holder's document (`written`: its revision and body SHA-1);
/// if so, and `confirmed_ms` is given, records when the holder last heard from upstream.
pub(crate) async fn check(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    written: &Stored,
    confirmed_ms: Option<u64>,
) -> RedisResult<Checked> {
    let outcome: u32 = CHECK
        .key(&names.lease)
        .key(&names.document)
        .arg(&lease.value)
        .arg(&written.revision)
        .arg(&written.digest)
        .arg(confirmed_ms.map(|ms| ms.to_string()).unwrap_or_default())
        .invoke_async(conn)
        .await?;
    Ok(match outcome {
        INTACT => Checked::Intact,
        FOREIGN => Checked::Foreign,
        // `LEASE_LOST`, and anything else: the safe reading is that the lease is gone.
        _ => Checked::LeaseLost,
    })
}

/// What the holder wrote: the revision, and the SHA-1 (hex) of the body as Redis holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub revision: String,
    pub digest: String,
}

/// What writing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    /// Written and announced (or Redis already held it, body and all).
    Stored(Stored),
    /// Redis holds a newer document (not overwritten).
    Newer,
    /// The lease was lost before the write: nothing was written.
    LeaseLost,
}

/// Writes the slot's current document for the fleet, fenced by `lease`; `over_refused`: also
/// over a newer value, which this replica refused (corrupt values are not kept forever).
pub(crate) async fn write(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    slot: &EnvSlot,
    over_refused: bool,
) -> RedisResult<Written> {
    let Some(snapshot) = slot.snapshot() else {
        // Nothing to write (callers write only what they serve): let the caller load instead.
        return Ok(Written::Newer);
    };
    // A packed document is kept gzipped already; another is compressed off the async workers.
    let body = match snapshot.document.variant(Encoding::Gzip) {
        Some(gzipped) => gzipped,
        None => {
            let document = snapshot.clone();
            crate::background::run(move || {
                Bytes::from(crate::body::gzip(
                    &document.document.bytes_once(),
                    GZIP_LEVEL,
                ))
            })
            .await
            .map_err(|e| {
                redis::RedisError::from((redis::ErrorKind::Client, "compressing", e.to_string()))
            })?
        }
    };
    put(
        conn,
        names,
        lease,
        &Value {
            body: body.as_ref(),
            revision: &snapshot.content_revision,
            updated_at_ms: snapshot.updated_at_ms,
            confirmed_ms: last_success_ms(slot),
            etag: None,
        },
        over_refused,
    )
    .await
}

/// One document as the holder writes it.
pub(crate) struct Value<'a> {
    /// The bytes Redis keeps.
    pub body: &'a [u8],
    pub revision: &'a str,
    /// When the document was made (a newer one held is never written over).
    pub updated_at_ms: u64,
    /// When the holder last heard from upstream, in Unix milliseconds.
    pub confirmed_ms: u64,
    /// The upstream's ETag for it, so that a new holder asks upstream conditionally.
    pub etag: Option<&'a str>,
}

/// Writes `value` for the fleet, fenced by `lease`, and announces it; `over_refused`: also over
/// a newer value, which this replica refused.
pub(crate) async fn put(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    value: &Value<'_>,
    over_refused: bool,
) -> RedisResult<Written> {
    let (outcome, digest): (u32, String) = WRITE
        .key(&names.lease)
        .key(&names.document)
        .arg(&lease.value)
        .arg(value.body)
        .arg(value.revision)
        .arg(value.updated_at_ms)
        .arg(CHANNEL)
        .arg(&names.id)
        .arg(if over_refused { "1" } else { "0" })
        .arg(value.confirmed_ms)
        .arg(value.etag.unwrap_or_default())
        .invoke_async(conn)
        .await?;
    Ok(match outcome {
        LEASE_LOST => Written::LeaseLost,
        NEWER_HELD => Written::Newer,
        // `WRITTEN`, `ALREADY_HELD` or `REPAIRED`: Redis holds this document now.
        outcome => {
            if outcome == REPAIRED {
                tracing::warn!(document = %names.id, "the fleet's store holds a document this replica did not write for what it holds the lease on: repairing it");
            }
            Written::Stored(Stored {
                revision: value.revision.to_owned(),
                digest,
            })
        }
    })
}

/// When the slot last heard from upstream, in Unix milliseconds (0: never).
pub(crate) fn last_success_ms(slot: &EnvSlot) -> u64 {
    slot.last_success()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// What Redis holds of a document besides its body: read first, so that an unchanged document
/// costs a few bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// `None`: Redis holds no document.
    pub revision: Option<String>,
    pub updated_at_ms: u64,
    /// When the holder last heard from upstream, in Unix milliseconds.
    pub confirmed_ms: Option<u64>,
}

/// The revision, `updated_at` and upstream confirmation of the document under `names`.
pub(crate) async fn head(conn: &mut Connection, names: &Names) -> RedisResult<Head> {
    let (revision, updated_at, confirmed_ms): (Option<String>, Option<String>, Option<u64>) =
        redis::cmd("HMGET")
            .arg(&names.document)
            .arg("revision")
            .arg("updated_at_ms")
            .arg("confirmed_at_ms")
            .query_async(conn)
            .await?;
    Ok(Head {
        revision,
        updated_at_ms: updated_at.and_then(|u| u.parse().ok()).unwrap_or(0),
        confirmed_ms,
    })
}

/// What reading did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loaded {
    /// Redis holds nothing for the environment.
    Nothing,
    /// Redis holds what is served, or an older document (never served over a newer one).
    Unchanged,
    /// A new revision is served.
    New,
    /// The value was refused (the reason logged the first time); `revision` is what it claimed
    /// to be.
    Refused { revision: String },
}

/// Loads the environment's document from Redis unless it is what is served, older, or a value
/// already refused (`refused`: the revision it claimed). A new document served is saved to the
/// snapshot directory (`warm`), as one fetched upstream is, so that a restart with neither Redis
/// nor the upstream answering still has it.
pub(crate) async fn load(
    conn: &mut Connection,
    names: &Names,
    slot: &Arc<EnvSlot>,
    refused: Option<&str>,
    figures: &Figures,
    warm: Option<&WarmStart>,
) -> RedisResult<Loaded> {
    let key = &names.document;
    let Head {
        revision,
        updated_at_ms: updated_at,
        confirmed_ms: confirmed,
    } = head(conn, names).await?;
    let Some(revision) = revision else {
        return Ok(Loaded::Nothing);
    };
    // The holder's last word from upstream is this replica's last successful update, once
    // what Redis holds is served here.
    let confirm = || {
        if let Some(ms) = confirmed {
            slot.mark_success(UNIX_EPOCH + Duration::from_millis(ms));
        }
    };
    if refused == Some(revision.as_str()) {
        // Refused already (counted and logged then).
        return Ok(Loaded::Refused { revision });
    }
    if let Some(current) = slot.snapshot() {
        if current.content_revision == revision {
            confirm();
            return Ok(Loaded::Unchanged);
        }
        if updated_at < current.updated_at_ms {
            return Ok(Loaded::Unchanged);
        }
    }
    let body: Option<Vec<u8>> = conn.hget(key, "body").await?;
    let Some(body) = body else {
        return Ok(Loaded::Nothing);
    };
    let environment = crate::keys::fingerprint(&slot.client_key);
    let body = match crate::background::run(move || gunzip(&body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(reason)) => {
            figures.refused(Refusal::Undecodable);
            tracing::warn!(%environment, %reason, "refused the document the fleet's store holds; serving the last good one");
            return Ok(Loaded::Refused { revision });
        }
        Err(e) => {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "decompressing",
                e.to_string(),
            )))
        }
    };
    match slot.publish(Incoming::Bytes(body)).await {
        Ok(Published::NewRevision { revision, .. }) => {
            confirm();
            figures.document(true);
            tracing::info!(%environment, revision, "environment document updated from the fleet's store");
            if let (Some(warm), Some(snapshot)) = (warm, slot.snapshot()) {
                // Saved with the holder's last word from upstream, for its true age on restore.
                let heard = slot.last_success().unwrap_or_else(SystemTime::now);
                warm.save(slot, &snapshot, heard).await;
            }
            Ok(Loaded::New)
        }
        Ok(Published::Unchanged(_)) => {
            confirm();
            Ok(Loaded::Unchanged)
        }
        Err(rejected) => {
            figures.refused(Refusal::Rejected);
            let reason = rejected.message(&slot.client_key);
            tracing::warn!(%environment, %reason, "refused the document the fleet's store holds; serving the last good one");
            Ok(Loaded::Refused { revision })
        }
    }
}

/// The document a stored value holds: one whole gzip stream (a value cut short, or with bytes
/// after its end, is refused rather than half read).
fn gunzip(value: &[u8]) -> Result<Bytes, String> {
    // The buffered decoder reads from the slice itself: what it leaves is what follows the stream.
    let mut decoder = flate2::bufread::GzDecoder::new(value);
    let mut plain = Vec::with_capacity(value.len() * 5);
    decoder
        .by_ref()
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut plain)
        .map_err(|e| format!("not a whole gzip stream: {e}"))?;
    if plain.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(format!("decompresses past {MAX_DOCUMENT_BYTES} bytes"));
    }
    if !decoder.into_inner().is_empty() {
        return Err("bytes after the end of the gzip stream".into());
    }
    Ok(Bytes::from(plain))
}

#[cfg(test)]
mod tests {
    use super::gunzip;

    #[test]
    fn only_a_whole_gzip_stream_is_read() {
        let document = br#"{"api_key": "abc", "feature_states": []}"#.repeat(50);
        let gzipped = crate::body::gzip(&document, super::GZIP_LEVEL);
        assert_eq!(gunzip(&gzipped).unwrap().as_ref(), &document[..]);
        // Cut short, anywhere: refused (never a prefix of the document).
        for cut in [1, 10, gzipped.len() / 2, gzipped.len() - 1] {
            assert!(gunzip(&gzipped[..cut]).is_err(), "cut at {cut}");
        }
        assert!(
            gunzip(&document).is_err(),
            "plain JSON is not a stored value"
        );
        assert!(gunzip(b"").is_err());
        let mut trailing = gzipped.clone();
        trailing.extend_from_slice(b"junk");
        assert!(gunzip(&trailing).is_err());
        let mut flipped = gzipped;
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0xff;
        assert!(
            gunzip(&flipped).is_err(),
            "a corrupt stream fails its checksum"
        );
    }
}
