//! How a client's `If-None-Match` is matched against an OFREP answer's ETag (the OpenFeature
//! layer's tag of everything the body depends on, `Target::tag`).

use http::{header, HeaderMap};

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
