//! One content revision rendered in each stream protocol's bytes, once per revision per
//! environment (whichever stream wakes first renders; the rest share it).
//!
//! - OFREP: `id: <seq>-<rev>`, `event: message`, `data: {"type":"refetchEvaluation",…}`.
//! - Flagsmith real-time: `event: environment_updated`, `data: {"updated_at": <seconds>}`; the
//!   SDKs refetch the environment document when it is newer than theirs.

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
    ofrep: Bytes,
    flagsmith: Bytes,
}

impl Rendered {
    pub(super) fn of(revision: &Revision) -> Rendered {
        let seq = revision.updated_at_ms;
        let rev = revision.content_revision.clone();
        let id = format!("{seq}-{rev}");
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
            ofrep: Bytes::from(ofrep),
            flagsmith: Bytes::from(flagsmith),
        }
    }

    /// Whether this is the rendering of `revision`.
    pub(super) fn renders(&self, revision: &Revision) -> bool {
        self.seq == revision.updated_at_ms && self.rev == revision.content_revision
    }

    pub(super) fn bytes(&self, format: Format) -> Bytes {
        match format {
            Format::Ofrep => self.ofrep.clone(),
            Format::Flagsmith => self.flagsmith.clone(),
        }
    }
}

/// Whether an OFREP client that has `last_id` should be sent `current` at once: yes unless it
/// has it, or it has seen a newer revision than this replica (which sends when it catches up).
pub(super) fn catch_up(last_id: Option<&str>, current: &Revision) -> bool {
    let Some((seq, rev)) = last_id.and_then(|id| id.split_once('-')) else {
        return true;
    };
    let Ok(seq) = seq.parse::<u64>() else {
        return true;
    };
    rev != current.content_revision && seq <= current.updated_at_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_rules() {
        let current = Revision {
            updated_at_ms: 2000,
            content_revision: "bbb".into(),
        };
        assert!(catch_up(None, &current));
        assert!(catch_up(Some("garbage"), &current));
        assert!(catch_up(Some("1000-aaa"), &current));
        assert!(!catch_up(Some("2000-bbb"), &current));
        assert!(!catch_up(Some("3000-ccc"), &current));
    }

    #[test]
    fn both_formats() {
        let r = Rendered::of(&Revision {
            updated_at_ms: 1_700_000_000_500,
            content_revision: "abc".into(),
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
