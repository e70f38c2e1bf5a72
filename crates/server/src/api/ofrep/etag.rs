//! An OFREP answer's ETag: a hash of everything its body depends on (request, key kind,
//! document revision, whether it is stale, settings), known before anything is evaluated, and
//! how a client's `If-None-Match` is matched against it.

use http::{header, HeaderMap};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::canonical;
use crate::snapshot::{KeyKind, Snapshot};

/// `W/"<32 hex>"` over everything a response body depends on.
pub(super) fn etag(
    snapshot: &Snapshot,
    kind: KeyKind,
    flag: Option<&str>,
    stale: bool,
    input: &Value,
    settings: &str,
) -> String {
    let (op, flag) = match flag {
        None => ("bulk", Value::Null),
        Some(key) => ("flag", Value::String(key.to_owned())),
    };
    let mut described = json!({
        "v": 1,
        "op": op,
        "flag": flag,
        "kind": match kind { KeyKind::Client => "client", KeyKind::Server => "server" },
        "rev": snapshot.content_revision,
        "cfg": settings,
        "in": input,
    });
    // Only while stale: a fresh answer's ETag is what it always was.
    if stale {
        described["stale"] = Value::Bool(true);
    }
    digest(&described)
}

/// The same for a flagd flag set: its view's revision, the selector, the flag asked (or all),
/// staleness, the whole context (flagd rules may read any member) and the settings.
pub(super) fn flag_set_etag(
    revision: &str,
    selector: &str,
    flag: Option<&str>,
    stale: bool,
    context: &Value,
    settings: &str,
) -> String {
    digest(&json!({
        "v": 1,
        "op": if flag.is_some() { "flag" } else { "bulk" },
        "flag": flag,
        "set": selector,
        "rev": revision,
        "cfg": settings,
        "in": context,
        "stale": stale,
    }))
}

fn digest(described: &Value) -> String {
    let mut bytes = Vec::with_capacity(256);
    // Typed: a trait `1` and a trait `1.0` evaluate differently, so they must not share an ETag.
    canonical::write_with(&mut bytes, described, canonical::Numbers::Typed);
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    format!("W/\"{}\"", canonical::hex(&digest, 16))
}

/// `If-None-Match` against our ETag, weakly: `W/"x"`, `"x"` and `x` are the same; `*` is not
/// a match here (a POST always evaluates unless the client names the version it has).
pub(super) fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    let ours = etag.trim_start_matches("W/").trim_matches('"');
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|t| t == ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn etag_matching_is_weak() {
        let mut h = HeaderMap::new();
        for sent in ["W/\"abc\"", "\"abc\"", "abc", "\"x\", W/\"abc\""] {
            h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(sent).unwrap());
            assert!(matches_etag(&h, "W/\"abc\""), "{sent}");
        }
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(!matches_etag(&h, "W/\"abc\""));
    }
}
