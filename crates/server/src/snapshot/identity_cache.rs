//! Answers already written for this snapshot, by identity: SDKs poll, so the same identifier
//! with the same traits asks again and again, and its answer cannot change until the document
//! does. The cache belongs to one snapshot and is dropped with it, so no answer from an older
//! document can ever be served. It is created on the first identity request (an idle
//! environment pays nothing) and bounded in bytes (keys and answers); `moka` picks what to
//! keep (frequency-aware, so a burst of one-off identities does not flush the regulars).

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use flagpole_engine::{Trait, TraitValue};
use quick_cache::Weighter;

use super::KeyKind;

/// Bytes counted per entry beyond its key and answer (the cache's own bookkeeping).
const ENTRY_OVERHEAD: usize = 96;

type Cache = quick_cache::sync::Cache<Box<[u8]>, Arc<Answer>, Weight>;

/// One identity's answer, and its gzip form once a client asked for it (SDKs send
/// `Accept-Encoding: gzip`: compressing once per cached answer, not once per request).
#[derive(Debug)]
pub struct Answer {
    pub plain: Bytes,
    gzip: OnceLock<Bytes>,
}

impl Answer {
    pub fn new(plain: Bytes) -> Answer {
        Answer {
            plain,
            gzip: OnceLock::new(),
        }
    }

    /// The answer gzipped (at the fast level: it is made on a request's time).
    pub fn gzipped(&self) -> Bytes {
        self.gzip
            .get_or_init(|| Bytes::from(crate::body::gzip(&self.plain, 1)))
            .clone()
    }
}

/// An entry weighs its bytes; the gzip form, made later if at all, is counted in advance as a
/// quarter of the answer (JSON flag lists compress 5–10 times at the fast level).
#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Box<[u8]>, Arc<Answer>> for Weight {
    fn weight(&self, key: &Box<[u8]>, answer: &Arc<Answer>) -> u64 {
        (key.len() + answer.plain.len() + answer.plain.len() / 4 + ENTRY_OVERHEAD) as u64
    }
}

#[derive(Default)]
pub struct IdentityCache {
    cache: OnceLock<Cache>,
}

impl std::fmt::Debug for IdentityCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.entries();
        f.debug_struct("IdentityCache")
            .field("entries", &entries)
            .finish()
    }
}

impl IdentityCache {
    /// The answer stored under `key`, if any.
    pub fn get(&self, key: &[u8]) -> Option<Arc<Answer>> {
        self.cache.get()?.get(key)
    }

    /// Stores an answer; the cache holds at most `max_bytes` (created with that bound on first
    /// use).
    pub fn insert(&self, key: Vec<u8>, answer: Arc<Answer>, max_bytes: u64) {
        let cache = self.cache.get_or_init(|| {
            // Sized for answers like the first one.
            let entry = Weight.weight(&key.clone().into_boxed_slice(), &answer);
            let items = (max_bytes / entry).clamp(16, 1 << 20) as usize;
            Cache::with_weighter(items, max_bytes, Weight)
        });
        cache.insert(key.into_boxed_slice(), answer);
    }

    /// Entries held now (an estimate while inserts are in flight).
    pub fn entries(&self) -> u64 {
        self.cache.get().map_or(0, |c| c.len() as u64)
    }
}

/// What decides an identity's answer besides the snapshot: the key kind (client keys see fewer
/// flags), the identifier and the traits in request order (the answer echoes them in that
/// order), each typed. Lengths prefix every variable part, so no two requests share a key.
pub fn key(kind: KeyKind, identifier: &str, traits: &[Trait<'_>]) -> Vec<u8> {
    let mut key = Vec::with_capacity(16 + identifier.len() + traits.len() * 24);
    key.push(kind.index() as u8);
    push_text(&mut key, identifier);
    for t in traits {
        push_text(&mut key, &t.key);
        match &t.value {
            TraitValue::Null => key.push(b'n'),
            TraitValue::Bool(b) => key.extend_from_slice(if *b { b"t" } else { b"f" }),
            TraitValue::Int(i) => {
                key.push(b'i');
                push_text(&mut key, &i.to_string());
            }
            TraitValue::Float(x) => {
                key.push(b'd');
                key.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            TraitValue::Str(s) => {
                key.push(b's');
                push_text(&mut key, s);
            }
            TraitValue::Json(v) => {
                key.push(b'j');
                push_text(&mut key, &v.to_string());
            }
        }
    }
    key
}

fn push_text(key: &mut Vec<u8>, text: &str) {
    key.extend_from_slice(&(text.len() as u64).to_le_bytes());
    key.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use flagpole_engine::python::number::PyInt;

    use super::*;

    fn text(k: &'static str, v: &'static str) -> Trait<'static> {
        Trait {
            key: Cow::Borrowed(k),
            value: TraitValue::Str(Cow::Borrowed(v)),
        }
    }

    #[test]
    fn keys_differ_whenever_the_answer_could() {
        let int = |k: &'static str, i: i64| Trait {
            key: Cow::Borrowed(k),
            value: TraitValue::Int(PyInt::Small(i)),
        };
        let keys = [
            key(KeyKind::Client, "u", &[]),
            key(KeyKind::Server, "u", &[]),
            key(KeyKind::Client, "u", &[text("a", "1")]),
            key(KeyKind::Client, "u", &[int("a", 1)]),
            key(KeyKind::Client, "u", &[text("a", "1"), text("b", "2")]),
            key(KeyKind::Client, "u", &[text("b", "2"), text("a", "1")]),
            // Lengths keep the parts apart: "ua" + "b" is not "u" + "ab".
            key(KeyKind::Client, "ua", &[text("b", "")]),
            key(KeyKind::Client, "u", &[text("ab", "")]),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            key(KeyKind::Client, "u", &[text("a", "1")]),
            key(KeyKind::Client, "u", &[text("a", "1")])
        );
    }

    #[test]
    fn answers_come_back_until_evicted_by_size() {
        let cache = IdentityCache::default();
        assert!(cache.get(b"k").is_none());
        let answer = |b: Bytes| Arc::new(Answer::new(b));
        cache.insert(
            b"k".to_vec(),
            answer(Bytes::from_static(b"answer")),
            1 << 20,
        );
        assert_eq!(cache.get(b"k").unwrap().plain, &b"answer"[..]);
        // An answer larger than the whole bound is never kept.
        cache.insert(
            b"big".to_vec(),
            answer(Bytes::from(vec![0u8; 2 << 20])),
            1 << 20,
        );
        assert!(cache.get(b"big").is_none());
        assert_eq!(cache.entries(), 1);
    }
}
