//! One content revision rendered in each stream protocol's bytes, once per revision per
//! environment (whichever stream wakes first renders; the rest share it).
//!
//! - OFREP: `id: <seq>-<rev>` (`<seq>-<rev>-stale` while the document is stale: a switch either
//!   way is an event, since the answers' reasons change), `event: message`,
//!   `data: {"type":"refetchEvaluation",…}`.
//! - Flagsmith real-time: `event: environment_updated`, `data: {"updated_at": <seconds>}`; the
//!   SDKs refetch the environment document when it is newer than theirs (a stale switch is not
//!   sent: their bodies do not change).

use bytes::Bytes;

use crate::store::Revision;

/// Which protocol a stream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Ofrep,
    Flagsmith,
}

/// A revision's announcement, ready to write.
#[derive(Debug)]
pub(super) struct Rendered {
    seq: u64,
    rev: String,
    stale: bool,
    ofrep: Bytes,
    flagsmith: Bytes,
}

impl Rendered {
    pub(super) fn of(revision: &Revision) -> Rendered {
        let seq = revision.updated_at_ms;
        let rev = revision.content_revision.clone();
        let id = event_id(seq, &rev, revision.stale);
        let mut data = serde_json::Map::new();
        data.insert("type".into(), "refetchEvaluation".into());
        data.insert("etag".into(), rev.clone().into());
        if seq > 0 {
            data.insert("lastModified".into(), (seq / 1000).into());
        }
        let ofrep = format!(
            "id: {id}\nevent: message\ndata: {}\n\n",
            serde_json::Value::Object(data)
        );
        let flagsmith = format!(
            "event: environment_updated\ndata: {{\"updated_at\": {}}}\n\n",
            seq as f64 / 1000.0
        );
        Rendered {
            seq,
            rev,
            stale: revision.stale,
            ofrep: Bytes::from(ofrep),
            flagsmith: Bytes::from(flagsmith),
        }
    }

    /// Whether this is the rendering of `revision`.
    pub(super) fn renders(&self, revision: &Revision) -> bool {
        self.seq == revision.updated_at_ms
            && self.rev == revision.content_revision
            && self.stale == revision.stale
    }

    pub(super) fn bytes(&self, format: Format) -> Bytes {
        match format {
            Format::Ofrep => self.ofrep.clone(),
            Format::Flagsmith => self.flagsmith.clone(),
        }
    }
}

/// An OFREP event id: the document's `updated_at` (ms), its content revision, and whether it is
/// stale. Bulk answers announce it too (`since`), so that a stream opened after one sends only
/// what the answer did not reflect.
pub(crate) fn event_id(updated_at_ms: u64, content_revision: &str, stale: bool) -> String {
    let mark = if stale { "-stale" } else { "" };
    format!("{updated_at_ms}-{content_revision}{mark}")
}

/// Whether an OFREP client that has `last_id` should be sent `current` at once: yes unless it
/// has it, or it has seen a newer revision than this replica (which sends when it catches up).
pub(super) fn catch_up(last_id: Option<&str>, current: &Revision) -> bool {
    let Some((seq, rest)) = last_id.and_then(|id| id.split_once('-')) else {
        return true;
    };
    let Ok(seq) = seq.parse::<u64>() else {
        return true;
    };
    let (rev, stale) = match rest.strip_suffix("-stale") {
        Some(rev) => (rev, true),
        None => (rest, false),
    };
    let has = rev == current.content_revision && stale == current.stale;
    !has && seq <= current.updated_at_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_rules() {
        let current = Revision {
            updated_at_ms: 2000,
            content_revision: "bbb".into(),
            stale: false,
        };
        assert!(catch_up(None, &current));
        assert!(catch_up(Some("garbage"), &current));
        assert!(catch_up(Some("1000-aaa"), &current));
        assert!(!catch_up(Some("2000-bbb"), &current));
        assert!(!catch_up(Some("3000-ccc"), &current));
        // The same revision, seen while stale (or fresh, now stale): the reasons differ.
        assert!(catch_up(Some("2000-bbb-stale"), &current));
        let stale = Revision {
            stale: true,
            ..current
        };
        assert!(catch_up(Some("2000-bbb"), &stale));
        assert!(!catch_up(Some("2000-bbb-stale"), &stale));
        assert_eq!(event_id(2000, "bbb", true), "2000-bbb-stale");
    }

    #[test]
    fn both_formats() {
        let r = Rendered::of(&Revision {
            updated_at_ms: 1_700_000_000_500,
            content_revision: "abc".into(),
            stale: false,
        });
        assert_eq!(
            r.bytes(Format::Ofrep),
            "id: 1700000000500-abc\nevent: message\ndata: {\"type\":\"refetchEvaluation\",\"etag\":\"abc\",\"lastModified\":1700000000}\n\n"
        );
        assert_eq!(
            r.bytes(Format::Flagsmith),
            "event: environment_updated\ndata: {\"updated_at\": 1700000000.5}\n\n"
        );
    }
}
