//! One environment at one document revision: the compiled engine plus every response that does
//! not depend on the caller, serialised (and compressed) once: when the document changes, or,
//! for what an idle environment need not hold (`/flags` per kind of key, compressed variants),
//! on the first request that needs it.
//! A snapshot is immutable; a new document builds a new snapshot off to the side, and the store
//! swaps it in whole.

pub(crate) mod by_source;
pub(crate) mod etag_memo;
pub mod identity_cache;
pub mod identity_response;
pub(crate) mod prepared_flags;

use std::sync::OnceLock;

// A fast hasher for the per-request lookups (feature names, keys): the tables are built from
// the document and the config, never from what callers send, so flooding is not a concern.
use foldhash::HashMap;

use flagpole_engine::{Environment, EvaluationResult, FlagResult, InputError, VariedResult};
use serde_json::Value;

use crate::body::{PreparedBody, COMPRESS_MIN_BYTES};
pub use crate::keys::KeyKind;
use crate::received::{Received, Rejected};

/// What the REST API shows about one feature, pre-serialised.
#[derive(Debug)]
pub(crate) struct FeatureMeta {
    /// `{"feature":{"id":…,"name":…,"type":…},"enabled":`: the part of a flag object that only
    /// depends on the document (its name is the key in `feature_index`).
    pub prefix: Box<[u8]>,
    /// In `project.server_key_only_feature_ids`: never shown to client keys.
    pub server_only: bool,
}

/// Where `/flags?feature=` finds one feature's object. Most are a few hundred bytes, and a proxy
/// may hold thousands of environments: they are ranges of the `/flags` body rather than bodies
/// of their own (with an ETag each), unless large enough to be compressed.
#[derive(Debug)]
enum FeatureBody {
    /// Not shown to this kind of key.
    Hidden,
    /// `/flags[start..end]`.
    Slice(u32, u32),
    Own(Box<PreparedBody>),
}

/// `/flags` for one kind of key, and where `/flags?feature=` finds each feature in it (by index
/// in `features`).
#[derive(Debug)]
struct FlagsBody {
    body: PreparedBody,
    per_feature: Box<[FeatureBody]>,
    /// Per position `p` of the own flags (and one past the last): where the first object shown
    /// at or after `p` starts, and where the last one shown before `p` ends. Positions `a..b`
    /// are `body[runs[a].0..runs[b].1]` when that is not empty: an identity's answer copies the
    /// flags it shares with `/flags` in runs (see [`Snapshot::write_varied_flags`]).
    runs: Box<[(u32, u32)]>,
}

/// One feature's `/flags?feature=` body (see [`Snapshot::feature_flag`]).
pub enum FeatureFlag<'a> {
    Prepared(&'a PreparedBody),
    /// Too small to compress: its ETag is computed per request (a hash of ~200 bytes).
    Small(bytes::Bytes),
}

#[derive(Debug)]
pub struct Snapshot {
    /// Increments when the document's content changes; an equal document keeps it.
    pub revision: u64,
    /// The document's `updated_at`, as given.
    pub updated_at: Option<String>,
    /// `updated_at` as an HTTP date (for `Last-Modified` / `If-Modified-Since`).
    pub last_modified: Option<String>,
    /// The document as received (pages merged), for server keys.
    pub document: PreparedBody,
    /// `/flags` and `/flags?feature=` per key kind, written by the first request with that kind
    /// of key: an idle environment holds neither, and most are asked with one kind only.
    flags: [OnceLock<FlagsBody>; 2],
    /// Whether bodies get compressed variants as clients ask (a server wants them, a one-off
    /// command does not).
    compress: bool,
    /// How long the environment's own flags are for a server key: the size an identity's
    /// answer is reserved at.
    own_flags_len: usize,
    /// The compiled environment, for identities (and its own flags, for callers without one).
    pub env: Environment,
    /// OFREP's revision: the first 16 bytes of SHA-256 over the document's canonical JSON, as
    /// lowercase hex: equal on every replica and across restarts.
    pub content_revision: String,
    /// `updated_at` in Unix milliseconds (0 when missing or unreadable).
    pub updated_at_ms: u64,
    /// OFREP ETags of recently answered request bodies (empty for each new revision).
    pub ofrep_etags: etag_memo::EtagMemo,
    /// Per feature, in result order.
    features: Vec<FeatureMeta>,
    feature_index: HashMap<String, usize>,
    /// `project.hide_disabled_flags`: client keys do not see disabled flags.
    pub hide_disabled: bool,
    /// Every flag object an evaluation can produce, serialised.
    prepared: prepared_flags::PreparedFlags,
    /// Identity answers already written for this snapshot.
    pub identity_cache: identity_cache::IdentityCache,
    /// What a front door prepares per value source (flagd's `ResolveAll`), on first use.
    by_source: OnceLock<by_source::BySource>,
}

impl Snapshot {
    /// Builds a snapshot from a parsed document. Errors if the engine cannot compile it.
    pub fn build(doc: &Value, revision: u64) -> Result<Snapshot, InputError> {
        let document_bytes = crate::json::to_vec(doc);
        Self::build_with_bytes(doc, document_bytes, revision, true)
    }

    /// Builds from a parsed document and its serialised bytes; `compress` prepares compressed
    /// variants of the bodies as clients ask for them (a server wants them, a one-off command
    /// does not).
    pub fn build_with_bytes(
        doc: &Value,
        document_bytes: impl Into<bytes::Bytes>,
        revision: u64,
        compress: bool,
    ) -> Result<Snapshot, InputError> {
        let received = Received::from_tree(doc, None).map_err(|rejected| match rejected {
            Rejected::Engine(e) => e,
            other => InputError::new("$", other.message("")),
        })?;
        Self::from_received(received, document_bytes, revision, compress)
    }

    /// Builds from what was read of a document ([`Received`]) and the document's bytes, as
    /// [`build_with_bytes`](Self::build_with_bytes) does.
    pub fn from_received(
        received: Received,
        document_bytes: impl Into<bytes::Bytes>,
        revision: u64,
        compress: bool,
    ) -> Result<Snapshot, InputError> {
        let Received {
            env,
            features: catalog,
            server_only_ids,
            hide_disabled,
            updated_at,
            content_revision,
            diagnostics: _,
        } = received;

        // Feature metadata, in feature_states order (the engine's result order); a repeated name
        // keeps its first position and its last state, as the SDK's mapping does.
        let mut features: Vec<FeatureMeta> = Vec::new();
        let mut feature_index = HashMap::default();
        for info in catalog {
            let mut prefix = br#"{"feature":{"id":"#.to_vec();
            crate::json::write(&mut prefix, &info.id);
            prefix.extend_from_slice(br#","name":"#);
            crate::json::write(&mut prefix, &info.name);
            prefix.extend_from_slice(br#","type":"#);
            crate::json::write(&mut prefix, &info.kind);
            prefix.extend_from_slice(br#"},"enabled":"#);
            let meta = FeatureMeta {
                server_only: server_only_ids.contains(&info.id.to_string()),
                prefix: prefix.into_boxed_slice(),
            };
            match feature_index.get(&info.name) {
                Some(&i) => features[i] = meta,
                None => {
                    feature_index.insert(info.name, features.len());
                    features.push(meta);
                }
            }
        }

        // Kept for the whole revision (and a proxy may hold thousands): no growth slack.
        features.shrink_to_fit();
        feature_index.shrink_to_fit();
        let mut snapshot = Snapshot {
            revision,
            updated_at,
            last_modified: None,
            // Kept gzipped, compressed in other encodings as clients ask (see `body`).
            document: if compress {
                PreparedBody::packed(document_bytes)
            } else {
                PreparedBody::new(document_bytes, false)
            },
            flags: Default::default(),
            compress,
            own_flags_len: 0,
            env,
            content_revision,
            updated_at_ms: 0,
            ofrep_etags: Default::default(),
            features,
            feature_index,
            hide_disabled,
            prepared: Default::default(),
            identity_cache: Default::default(),
            by_source: OnceLock::new(),
        };
        snapshot.updated_at_ms = snapshot.updated_at.as_deref().map_or(0, unix_ms);
        snapshot.last_modified = snapshot.updated_at.as_deref().and_then(http_date);
        let prepared = prepared_flags::PreparedFlags::build(&snapshot.env, |out, kind, n, e, v| {
            snapshot.write_flag(out, kind, n, e, v)
        });
        snapshot.prepared = prepared;
        // The environment's own flags must evaluate (a document whose flags cannot is refused
        // here, not at its first request); their length sizes identity answers.
        let own_flags = snapshot.env.own_flags().map_err(|e| {
            InputError::new(
                "$",
                format!("the environment's flags cannot be evaluated: {e}"),
            )
        })?;
        let (list, _, _) = snapshot.write_own_flags(KeyKind::Server, &own_flags.flags);
        snapshot.own_flags_len = list.len();
        Ok(snapshot)
    }

    /// `/flags` for a kind of key, written on first use.
    fn flags_body(&self, kind: KeyKind) -> &FlagsBody {
        self.flags[kind.index()].get_or_init(|| {
            let (list, per_feature, runs) = match self.env.own_flags() {
                Ok(own) => self.write_own_flags(kind, &own.flags),
                // Checked when the snapshot was built; the evaluation is deterministic.
                Err(_) => (b"[]".to_vec(), Vec::new(), Vec::new()),
            };
            let list = self.share_with_other_kind(kind, list);
            FlagsBody {
                body: PreparedBody::new(list, self.compress),
                per_feature: per_feature.into_boxed_slice(),
                runs: runs.into_boxed_slice(),
            }
        })
    }

    /// Both kinds of key usually see the same flags: then, if the other kind's body is written,
    /// they share one buffer.
    fn share_with_other_kind(&self, kind: KeyKind, list: Vec<u8>) -> bytes::Bytes {
        let other = match kind {
            KeyKind::Server => KeyKind::Client,
            KeyKind::Client => KeyKind::Server,
        };
        match self.flags[other.index()].get() {
            Some(written) if written.body.is(&list) => written.body.bytes(),
            _ => bytes::Bytes::from(list),
        }
    }

    /// The `/flags` list of `flags` for a kind of key (sized exactly), where each shown
    /// feature's object is in it (by index in `features`), and its runs (see [`FlagsBody`]).
    fn write_own_flags(
        &self,
        kind: KeyKind,
        flags: &[FlagResult<'_>],
    ) -> (Vec<u8>, Vec<FeatureBody>, Vec<(u32, u32)>) {
        let mut list = vec![b'['];
        let mut per_feature: Vec<FeatureBody> = Vec::new();
        per_feature.resize_with(self.features.len(), || FeatureBody::Hidden);
        // Per position, where its object is (`None`: not shown to this kind of key).
        let mut spans: Vec<Option<(u32, u32)>> = Vec::with_capacity(flags.len());
        for flag in flags {
            if list.len() > 1 {
                list.push(b',');
            }
            let start = list.len();
            if !self.write_flag(&mut list, kind, flag.key, flag.enabled, flag.value) {
                list.truncate(start - usize::from(start > 1));
                spans.push(None);
                continue;
            }
            spans.push(Some((offset_u32(start), offset_u32(list.len()))));
            // Shown, so the feature is in the index (a repeated name: the last one wins).
            let index = self.feature_index[flag.key];
            per_feature[index] = if list.len() - start >= COMPRESS_MIN_BYTES {
                FeatureBody::Own(Box::new(PreparedBody::new(
                    list[start..].to_vec(),
                    self.compress,
                )))
            } else {
                FeatureBody::Slice(offset_u32(start), offset_u32(list.len()))
            };
        }
        list.push(b']');
        list.shrink_to_fit();
        let mut runs = vec![(0, 0); spans.len() + 1];
        let mut next_start = offset_u32(list.len() - 1);
        for (p, span) in spans.iter().enumerate().rev() {
            next_start = span.map_or(next_start, |(start, _)| start);
            runs[p].0 = next_start;
        }
        runs[spans.len()].0 = offset_u32(list.len() - 1);
        let mut last_end = 1;
        runs[0].1 = last_end;
        for (p, span) in spans.iter().enumerate() {
            last_end = span.map_or(last_end, |(_, end)| end);
            runs[p + 1].1 = last_end;
        }
        (list, per_feature, runs)
    }

    /// Writes the `/flags` lists (and the per-source table) `previous` (this environment's last
    /// revision) had written: its clients will ask again. Called while building, off the request path.
    pub fn write_like(&self, previous: &Snapshot) {
        for kind in [KeyKind::Server, KeyKind::Client] {
            if previous.flags[kind.index()].get().is_some() {
                self.flags_body(kind);
            }
        }
        if let Some(table) = previous.by_source.get() {
            let (writer, setting) = table.how();
            self.by_source(writer, setting);
        }
    }

    /// How many features the environment has.
    pub fn feature_count(&self) -> usize {
        self.features.len()
    }

    /// The per-source table a front door writes with `writer` (written by the first call; one
    /// front door uses it, so later calls get the first one's).
    pub fn by_source(&self, writer: by_source::Writer, setting: bool) -> &by_source::BySource {
        self.by_source
            .get_or_init(|| by_source::BySource::build(self, writer, setting))
    }

    /// Has the large bodies compressed (in the background) in the encodings clients asked
    /// `previous`'s for: called after the swap, so steady clients keep compressed answers.
    pub fn compress_like(&self, previous: &Snapshot) {
        self.document.compress_like(&previous.document);
        for kind in [KeyKind::Server, KeyKind::Client] {
            // Written for the last revision, so written for this one too (`write_like`).
            if let Some(before) = previous.flags[kind.index()].get() {
                self.flags(kind).compress_like(&before.body);
            }
        }
    }

    /// `/flags` for a kind of key (written by the first call).
    pub fn flags(&self, kind: KeyKind) -> &PreparedBody {
        &self.flags_body(kind).body
    }

    /// `/flags?feature=name` for a kind of key, or `None` when that key does not see it.
    pub fn feature_flag(&self, kind: KeyKind, name: &str) -> Option<FeatureFlag<'_>> {
        let index = *self.feature_index.get(name)?;
        match &self.flags_body(kind).per_feature[index] {
            FeatureBody::Hidden => None,
            FeatureBody::Slice(start, end) => Some(FeatureFlag::Small(
                self.flags(kind)
                    .bytes()
                    .slice(*start as usize..*end as usize),
            )),
            FeatureBody::Own(body) => Some(FeatureFlag::Prepared(body)),
        }
    }

    /// Whether a caller with this kind of key may see a flag: client keys never see server-only
    /// features, nor disabled flags when the project hides them.
    pub fn is_visible(&self, kind: KeyKind, name: &str, enabled: &Value) -> bool {
        self.visible_meta(kind, name, enabled).is_some()
    }

    fn visible_meta(&self, kind: KeyKind, name: &str, enabled: &Value) -> Option<&FeatureMeta> {
        let meta = &self.features[*self.feature_index.get(name)?];
        let hidden = kind == KeyKind::Client
            && (meta.server_only || (self.hide_disabled && enabled == &Value::Bool(false)));
        (!hidden).then_some(meta)
    }

    /// Writes one flag object (`{"feature":{…},"enabled":…,"feature_state_value":…}`) unless the
    /// key kind may not see it. Returns whether it wrote.
    pub fn write_flag(
        &self,
        out: &mut Vec<u8>,
        kind: KeyKind,
        name: &str,
        enabled: &Value,
        value: &Value,
    ) -> bool {
        let Some(meta) = self.visible_meta(kind, name, enabled) else {
            return false;
        };
        out.extend_from_slice(&meta.prefix);
        crate::json::write(out, enabled);
        out.extend_from_slice(br#","feature_state_value":"#);
        crate::json::write(out, value);
        out.push(b'}');
        true
    }

    /// About how many bytes an identity's flags take: the environment's own flags (the same
    /// features; overrides and variants change values, rarely the size much) plus a quarter.
    pub fn flags_capacity_hint(&self) -> usize {
        let own = self.own_flags_len;
        own + own / 4 + 16
    }

    /// Writes the flags of an evaluation as a JSON array, filtered for the key kind.
    pub fn write_flags(&self, out: &mut Vec<u8>, kind: KeyKind, result: &EvaluationResult<'_>) {
        out.reserve(self.flags_capacity_hint());
        out.push(b'[');
        let mut first = true;
        for flag in &result.flags {
            self.write_listed(out, kind, flag, &mut first);
        }
        out.push(b']');
    }

    /// Writes the flags a [`VariedResult`] stands for, as [`write_flags`](Self::write_flags)
    /// writes the whole result: the runs of `/flags` between the varied flags are copied (the
    /// flags there are the own flags, whose objects are the same bytes), the varied ones
    /// written from their prepared objects.
    /// Returns false, having written nothing, if the own flags do not cover the positions
    /// (never for a snapshot that was built: its own flags evaluate).
    pub fn write_varied_flags(
        &self,
        out: &mut Vec<u8>,
        kind: KeyKind,
        varied: &VariedResult<'_>,
    ) -> bool {
        let own = self.flags_body(kind);
        let covered = varied.positions.last().map_or(0, |&p| p + 1);
        if own.runs.len() <= covered {
            return false;
        }
        let body = own.body.bytes();
        out.reserve(body.len() + body.len() / 4);
        out.push(b'[');
        let mut first = true;
        let copy_run = |out: &mut Vec<u8>, first: &mut bool, from: usize, to: usize| {
            let (start, end) = (own.runs[from].0 as usize, own.runs[to].1 as usize);
            if start < end {
                if !*first {
                    out.push(b',');
                }
                out.extend_from_slice(&body[start..end]);
                *first = false;
            }
        };
        let mut next = 0;
        for (&position, flag) in varied.positions.iter().zip(&varied.flags) {
            copy_run(out, &mut first, next, position);
            self.write_listed(out, kind, flag, &mut first);
            next = position + 1;
        }
        copy_run(out, &mut first, next, own.runs.len() - 1);
        out.push(b']');
        true
    }

    /// Writes one flag of a list (a comma first unless it is the first shown) if the kind of
    /// key sees it.
    fn write_listed(
        &self,
        out: &mut Vec<u8>,
        kind: KeyKind,
        flag: &FlagResult<'_>,
        first: &mut bool,
    ) {
        let mark = out.len();
        if !*first {
            out.push(b',');
        }
        let wrote = match self.prepared.write(out, kind, flag) {
            Some(wrote) => wrote,
            None => self.write_flag(out, kind, flag.key, flag.enabled, flag.value),
        };
        if wrote {
            *first = false;
        } else {
            out.truncate(mark);
        }
    }
}

/// A position in a prepared body (bodies are far below 4 GiB: documents are limited in size).
fn offset_u32(offset: usize) -> u32 {
    u32::try_from(offset).expect("a prepared body is under 4 GiB")
}

/// RFC 3339 (`2023-07-14T16:12:00.000000Z`; no offset means UTC), as a time.
fn parse_rfc3339(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|d| d.with_timezone(&chrono::Utc))
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|n| n.and_utc())
        })
        .ok()
}

/// RFC 3339 (`2023-07-14T16:12:00.000000Z`) → IMF-fixdate (`Fri, 14 Jul 2023 16:12:00 GMT`).
pub(crate) fn http_date(rfc3339: &str) -> Option<String> {
    let parsed = parse_rfc3339(rfc3339)?;
    Some(parsed.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
}

/// RFC 3339 → Unix milliseconds (0 when unreadable or before 1970).
fn unix_ms(rfc3339: &str) -> u64 {
    parse_rfc3339(rfc3339).map_or(0, |t| u64::try_from(t.timestamp_millis()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../../examples/environment.json");

    #[test]
    fn client_keys_never_see_server_only_features() {
        let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        let s = Snapshot::build(&doc, 1).unwrap();
        let server = String::from_utf8(s.flags(KeyKind::Server).bytes().to_vec()).unwrap();
        let client = String::from_utf8(s.flags(KeyKind::Client).bytes().to_vec()).unwrap();
        assert!(server.contains("internal_debug_panel"));
        assert!(!client.contains("internal_debug_panel"));
        assert!(s
            .feature_flag(KeyKind::Client, "internal_debug_panel")
            .is_none());
        assert!(s
            .feature_flag(KeyKind::Server, "internal_debug_panel")
            .is_some());
    }

    #[test]
    fn flags_are_written_for_a_kind_of_key_when_first_asked_and_shared_when_equal() {
        let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        let s = Snapshot::build(&doc, 1).unwrap();
        assert!(
            s.flags.iter().all(|f| f.get().is_none()),
            "nothing before a request"
        );
        assert!(
            s.flags_capacity_hint() > 900,
            "sized from the own flags all the same"
        );
        assert!(s.feature_flag(KeyKind::Client, "welcome_message").is_some());
        assert!(s.flags[KeyKind::Server.index()].get().is_none());
        // No server-only feature: both kinds see the same list, held once.
        let mut doc = doc;
        doc["project"]["server_key_only_feature_ids"] = serde_json::json!([]);
        let s = Snapshot::build(&doc, 1).unwrap();
        let (server, client) = (s.flags(KeyKind::Server), s.flags(KeyKind::Client));
        assert_eq!(server.bytes().as_ptr(), client.bytes().as_ptr());
        assert_eq!(server.etag(), client.etag());
        // The next revision writes what this one was asked for, and only that.
        let next = Snapshot::build(&doc, 2).unwrap();
        let only_client = Snapshot::build(&doc, 3).unwrap();
        only_client.flags(KeyKind::Client);
        next.write_like(&only_client);
        assert!(next.flags[KeyKind::Client.index()].get().is_some());
        assert!(next.flags[KeyKind::Server.index()].get().is_none());
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            http_date("2024-06-01T12:00:00.000000Z").as_deref(),
            Some("Sat, 01 Jun 2024 12:00:00 GMT")
        );
        assert_eq!(
            http_date("2024-06-01T14:00:00+02:00").as_deref(),
            Some("Sat, 01 Jun 2024 12:00:00 GMT")
        );
        assert_eq!(
            http_date("2024-06-01T12:00:00.123").as_deref(),
            Some("Sat, 01 Jun 2024 12:00:00 GMT")
        );
        assert_eq!(http_date("yesterday"), None);
    }
}
