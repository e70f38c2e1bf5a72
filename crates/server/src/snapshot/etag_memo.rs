//! Remembers, per snapshot, the ETag of the request bodies it has answered, so that a client
//! revalidating with the same context gets its 304 without the body being parsed, normalised
//! and hashed again (that work is most of a 304's cost). Keyed by a 128-bit hash of (key kind,
//! endpoint, whether the document is stale, raw body bytes); a small direct-mapped table, so memory is fixed and an entry for
//! another body simply replaces the old one. A new revision builds a new snapshot, and with it
//! an empty memo: nothing stale survives. The table is allocated on the first answer it keeps:
//! an environment no OFREP client revalidates against (most, in a proxy serving hundreds) pays
//! nothing for it.

// No poisoning: a panic while a slot is held loses nothing worth refusing later readers.
use parking_lot::Mutex;

use super::KeyKind;

const SLOTS: usize = 256;
/// `W/"` + 32 hex + `"`.
const ETAG_LEN: usize = 36;

/// One remembered answer: the memo key, the ETag, and whether the context named an identity
/// (for usage counts).
type Entry = (u128, [u8; ETAG_LEN], bool);

pub struct EtagMemo {
    slots: std::sync::OnceLock<Box<[Mutex<Option<Entry>>]>>,
}

impl std::fmt::Debug for EtagMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EtagMemo")
    }
}

impl Default for EtagMemo {
    fn default() -> Self {
        EtagMemo {
            slots: std::sync::OnceLock::new(),
        }
    }
}

impl EtagMemo {
    /// The memo key of a request: the kind of key, the flag asked for (`None`: all flags),
    /// whether the environment's document is stale (its answers, and so their ETags, differ)
    /// and the raw body.
    pub fn key(kind: KeyKind, flag: Option<&str>, stale: bool, body: &[u8]) -> u128 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(match kind {
            KeyKind::Client => b"c",
            KeyKind::Server => b"s",
        });
        match flag {
            Some(key) => {
                hasher.update(b"f");
                hasher.update(&(key.len() as u64).to_le_bytes());
                hasher.update(key.as_bytes());
            }
            None => hasher.update(b"b"),
        }
        hasher.update(if stale { b"s" } else { b"-" });
        hasher.update(body);
        hasher.digest128()
    }

    /// The ETag answered for this key, and whether its context named an identity.
    pub fn get(&self, key: u128) -> Option<(String, bool)> {
        let slot = self.slots.get()?[key as usize % SLOTS].lock();
        match *slot {
            Some((k, etag, identified)) if k == key => std::str::from_utf8(&etag)
                .ok()
                .map(|etag| (etag.to_owned(), identified)),
            _ => None,
        }
    }

    pub fn put(&self, key: u128, etag: &str, identified: bool) {
        let Ok(bytes) = <[u8; ETAG_LEN]>::try_from(etag.as_bytes()) else {
            return;
        };
        let slots = self
            .slots
            .get_or_init(|| (0..SLOTS).map(|_| Mutex::new(None)).collect());
        *slots[key as usize % SLOTS].lock() = Some((key, bytes, identified));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_by_kind_flag_and_bytes() {
        let memo = EtagMemo::default();
        let etag = "W/\"0123456789abcdef0123456789abcdef\"";
        let a = EtagMemo::key(KeyKind::Client, None, false, b"{}");
        memo.put(a, etag, true);
        assert_eq!(memo.get(a), Some((etag.to_owned(), true)));
        for other in [
            EtagMemo::key(KeyKind::Server, None, false, b"{}"),
            EtagMemo::key(KeyKind::Client, Some("x"), false, b"{}"),
            EtagMemo::key(KeyKind::Client, None, false, b"{ }"),
            EtagMemo::key(KeyKind::Client, None, true, b"{}"),
        ] {
            assert_ne!(other, a);
            assert_eq!(memo.get(other), None);
        }
    }
}
