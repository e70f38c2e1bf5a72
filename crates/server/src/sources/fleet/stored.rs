//! An environment's document in Redis: a hash of the bytes SDKs are served, gzip-compressed
//! (a fifth of the bytes to hold, write and read; a packed snapshot already keeps that form, so
//! the holder seldom compresses anything), the content revision and the document's
//! `updated_at`. The lease holder writes it (fenced by its lease, never over a newer one) and
//! announces it; the others read it, first the revision alone (a periodic check of an unchanged
//! document costs a few bytes), then the body when it differs. What is read is decompressed,
//! checked and compiled like an upstream answer: a value that is not gzip, is cut short, or is
//! not this environment's valid document is refused, counted and logged, and the last good one
//! kept.

use std::io::Read;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use redis::{AsyncCommands, RedisResult, Script};

use super::figures::Figures;
use super::lease::Lease;
use super::traced::Connection;
use super::{Names, CHANNEL};
use crate::body::Encoding;
use crate::received::Incoming;
use crate::store::{EnvSlot, Published};
use crate::telemetry::fleet::Refusal;

/// A value that decompresses past this is refused (no document is near it; a crafted value
/// could otherwise inflate a thousandfold).
const MAX_DOCUMENT_BYTES: u64 = 512 << 20;

/// gzip at the level the served variants use.
const GZIP_LEVEL: u32 = 6;

/// Writes the document if the lease is still the writer's and what Redis holds is not newer
/// (unless `ARGV[7]` is `1`: what it holds was refused); announces it. 1: written; 0: the lease
/// is lost (nothing written); 2: Redis holds a newer document; 3: Redis holds this revision.
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        local held = redis.call('HMGET', KEYS[2], 'updated_at_ms', 'revision')
        if held[2] == ARGV[3] then return 3 end
        if ARGV[7] ~= '1' and held[1] and tonumber(held[1]) and tonumber(held[1]) > tonumber(ARGV[4]) then
            return 2
        end
        redis.call('HSET', KEYS[2], 'body', ARGV[2], 'revision', ARGV[3], 'updated_at_ms', ARGV[4],
            'confirmed_at_ms', ARGV[8])
        redis.call('PUBLISH', ARGV[5], ARGV[6])
        return 1
        ",
    )
});

/// Records when the holder last heard from upstream (a 304 counts), if the lease is still its
/// own: the others report that as their last successful update, so readiness judges the fleet's
/// document by its age at the upstream, as a lone proxy does.
static CONFIRM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
        redis.call('HSET', KEYS[2], 'confirmed_at_ms', ARGV[2])
        return 1
        ",
    )
});

/// Records the holder's last successful poll for the fleet.
pub(crate) async fn confirm(
    conn: &mut Connection,
    names: &Names,
    lease: &Lease,
    at_ms: u64,
) -> RedisResult<()> {
    let _: u32 = CONFIRM
        .key(&names.lease)
        .key(&names.document)
        .arg(&lease.value)
        .arg(at_ms)
        .invoke_async(conn)
        .await?;
    Ok(())
}

/// What writing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// Written and announced (or Redis already held it).
    Stored,
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
        return Ok(Written::Stored);
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
    let outcome: u32 = WRITE
        .key(&names.lease)
        .key(&names.document)
        .arg(&lease.value)
        .arg(body.as_ref())
        .arg(&snapshot.content_revision)
        .arg(snapshot.updated_at_ms)
        .arg(CHANNEL)
        .arg(&names.id)
        .arg(if over_refused { "1" } else { "0" })
        .arg(last_success_ms(slot))
        .invoke_async(conn)
        .await?;
    Ok(match outcome {
        0 => Written::LeaseLost,
        2 => Written::Newer,
        _ => Written::Stored,
    })
}

/// When the slot last heard from upstream, in Unix milliseconds (0: never).
pub(crate) fn last_success_ms(slot: &EnvSlot) -> u64 {
    slot.last_success()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
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
/// already refused (`refused`: the revision it claimed).
pub(crate) async fn load(
    conn: &mut Connection,
    names: &Names,
    slot: &Arc<EnvSlot>,
    refused: Option<&str>,
    figures: &Figures,
) -> RedisResult<Loaded> {
    let key = &names.document;
    let (revision, updated_at, confirmed): (Option<String>, Option<String>, Option<u64>) =
        redis::cmd("HMGET")
            .arg(key)
            .arg("revision")
            .arg("updated_at_ms")
            .arg("confirmed_at_ms")
            .query_async(conn)
            .await?;
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
        let updated_at = updated_at.and_then(|u| u.parse::<u64>().ok()).unwrap_or(0);
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
