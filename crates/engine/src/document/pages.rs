//! Paginated environment documents: the Flagsmith API may split a large document's identity
//! overrides over several pages, each pointing at the next with a `Link: <…>; rel="next"` header.
//! Following the links is I/O and belongs to the shells (the server's poller, the Python
//! bindings' fetcher); deciding where the next page is and what the pages add up to is not, and
//! both shells must decide it identically, so it lives here as pure functions over header text,
//! URLs and parsed pages.
//!
//! URLs are the `url` crate's (the WHATWG URL standard): resolving a relative target and
//! comparing origins are easy to get subtly wrong by hand (default ports, dot segments, case), and
//! a next link on another origin must be refused, because the shells send the server key to it.
//! Merging is all-or-nothing: a page that cannot be merged leaves the document untouched and is
//! an error, and the shells then keep the last good document rather than serve part of one. A
//! later page repeats the first page's members; one that repeats them with other values is of
//! another version of the document (it changed between the requests), and is refused rather
//! than merged into a document upstream never had (the server's poller then starts again from
//! the first page).

use serde_json::Value;
pub use url::Url;

/// The `rel="next"` target of a `Link` header value, resolved against `page`, the URL of the
/// response that carried the header. `Ok(None)` when no link is `rel="next"` (the last page).
/// Errors: a `next` link whose target is not `<…>`, one that does not resolve, and one on another
/// origin than `page`.
///
/// The header is read as the Flagsmith API writes it: links separated by `,`, parameters by `;`,
/// `rel` possibly quoted and holding several space-separated relation types.
pub fn next_page(link: &str, page: &Url) -> Result<Option<Url>, String> {
    for part in link.split(',') {
        let mut pieces = part.split(';');
        let target = pieces.next().unwrap_or("").trim();
        let is_next = pieces.any(|p| {
            p.trim().strip_prefix("rel=").is_some_and(|rel| {
                rel.trim_matches('"')
                    .split_whitespace()
                    .any(|r| r == "next")
            })
        });
        if !is_next {
            continue;
        }
        let target = target
            .strip_prefix('<')
            .and_then(|t| t.strip_suffix('>'))
            .ok_or("malformed Link header")?;
        let url = page
            .join(target)
            .map_err(|e| format!("bad next link: {e}"))?;
        if url.origin() != page.origin() {
            return Err(format!("next link {url} is on another origin"));
        }
        return Ok(Some(url));
    }
    Ok(None)
}

/// Why a page was not merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    /// The page repeats a member of the first page with another value: the document changed
    /// between the two requests, and its pages are of two versions. Merged, they would make a
    /// document upstream never had; fetching again from the first page gets one version.
    OtherVersion(String),
    /// The page, or the document, is not what pages are made of.
    Invalid(&'static str),
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::OtherVersion(member) => write!(
                f,
                "the document changed while its pages were fetched (`{member}` differs from the first page's)"
            ),
            MergeError::Invalid(what) => f.write_str(what),
        }
    }
}

/// Adds a later page to the document assembled so far (the first page, then every page merged
/// in order): its `identity_overrides` are appended. Everything else on a later page repeats the
/// first page and must be equal to it ([`MergeError::OtherVersion`] otherwise); a member the
/// page leaves out is not compared. A page without overrides (absent or `null`) adds nothing.
/// On error the document is unchanged.
pub fn merge_page(document: &mut Value, page: Value) -> Result<(), MergeError> {
    let Value::Object(assembled) = document else {
        return Err(MergeError::Invalid("the first page is not a JSON object"));
    };
    let Value::Object(mut page) = page else {
        return Err(MergeError::Invalid("the page is not a JSON object"));
    };
    let extra = page.remove("identity_overrides");
    // The identity overrides are what pages split; every other member is the same document's.
    if let Some((member, _)) = page
        .iter()
        .find(|(member, value)| assembled.get(member.as_str()) != Some(value))
    {
        return Err(MergeError::OtherVersion(member.clone()));
    }
    let extra = match extra {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(MergeError::Invalid("identity_overrides is not a list")),
    };
    match assembled.get_mut("identity_overrides") {
        Some(Value::Array(items)) => items.extend(extra),
        _ => {
            assembled.insert("identity_overrides".into(), Value::Array(extra));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PAGE_ONE: &str = "http://up.test/api/v1/environment-document/";

    fn next(link: &str) -> Result<Option<String>, String> {
        let page = Url::parse(PAGE_ONE).unwrap();
        next_page(link, &page).map(|u| u.map(String::from))
    }

    #[test]
    fn an_absolute_next_link_on_the_same_origin_is_followed() {
        assert_eq!(
            next(r#"<http://up.test/api/v1/environment-document/?page=2>; rel="next""#),
            Ok(Some(
                "http://up.test/api/v1/environment-document/?page=2".into()
            ))
        );
        // The same origin spelled differently (case, the scheme's default port).
        assert_eq!(
            next(r#"<HTTP://UP.test:80/p/2>; rel="next""#),
            Ok(Some("http://up.test/p/2".into()))
        );
    }

    #[test]
    fn relative_next_links_resolve_against_the_page() {
        assert_eq!(
            next(r#"</api/v1/environment-document/?page=2>; rel="next""#),
            Ok(Some(
                "http://up.test/api/v1/environment-document/?page=2".into()
            ))
        );
        assert_eq!(
            next(r#"<?page=3>; rel=next"#),
            Ok(Some(
                "http://up.test/api/v1/environment-document/?page=3".into()
            ))
        );
        assert_eq!(
            next(r#"<../../v2/doc>; rel="next""#),
            Ok(Some("http://up.test/api/v2/doc".into()))
        );
        let page = Url::parse("http://up.test/api/v1/environment-document/?page=2").unwrap();
        assert_eq!(
            next_page(r#"<?page=3>; rel="next""#, &page).map(|u| u.map(String::from)),
            Ok(Some(
                "http://up.test/api/v1/environment-document/?page=3".into()
            ))
        );
    }

    #[test]
    fn a_next_link_on_another_origin_is_refused() {
        for link in [
            r#"<http://evil.test/api/v1/environment-document/?page=2>; rel="next""#,
            r#"<https://up.test/api/v1/environment-document/?page=2>; rel="next""#,
            r#"<http://up.test:8080/?page=2>; rel="next""#,
            r#"<//evil.test/x>; rel="next""#,
            r#"<http://up.test.evil.test/x>; rel="next""#,
        ] {
            let refused = next(link).unwrap_err();
            assert!(
                refused.ends_with("is on another origin"),
                "{link}: {refused}"
            );
        }
    }

    #[test]
    fn the_next_link_is_found_among_several() {
        assert_eq!(
            next(r#"</first>; rel="first", </p/2>; rel="next", </last>; rel="last""#),
            Ok(Some("http://up.test/p/2".into()))
        );
        assert_eq!(
            next(r#"</p/1>; rel="prev first", </p/3>; title="x"; rel="last next""#),
            Ok(Some("http://up.test/p/3".into()))
        );
        // The first `next` wins.
        assert_eq!(
            next(r#"</p/2>; rel="next", </p/9>; rel="next""#),
            Ok(Some("http://up.test/p/2".into()))
        );
    }

    #[test]
    fn no_next_link_means_the_last_page() {
        assert_eq!(next(""), Ok(None));
        assert_eq!(next(r#"</p/1>; rel="prev""#), Ok(None));
        assert_eq!(next(r#"</p/1>; rel="prev", </p/1>; rel="first""#), Ok(None));
        assert_eq!(next(r#"</p/1>; rel="nextish""#), Ok(None));
    }

    #[test]
    fn a_malformed_next_link_is_an_error() {
        assert_eq!(
            next(r#"/p/2; rel="next""#),
            Err("malformed Link header".into())
        );
        assert!(next(r#"<http://[::1/x>; rel="next""#)
            .unwrap_err()
            .starts_with("bad next link: "));
    }

    #[test]
    fn pages_append_their_identity_overrides_in_order() {
        let mut document =
            json!({"api_key": "k", "feature_states": [], "identity_overrides": [{"id": 1}]});
        merge_page(
            &mut document,
            json!({"api_key": "k", "identity_overrides": [{"id": 2}, {"id": 3}]}),
        )
        .unwrap();
        merge_page(&mut document, json!({"identity_overrides": [{"id": 4}]})).unwrap();
        assert_eq!(
            document,
            json!({"api_key": "k", "feature_states": [],
                   "identity_overrides": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]})
        );
    }

    #[test]
    fn a_first_page_without_overrides_gets_the_later_pages_ones() {
        for first in [
            json!({"api_key": "k"}),
            json!({"api_key": "k", "identity_overrides": null}),
        ] {
            let mut document = first;
            merge_page(&mut document, json!({"identity_overrides": [{"id": 2}]})).unwrap();
            assert_eq!(
                document,
                json!({"api_key": "k", "identity_overrides": [{"id": 2}]})
            );
        }
    }

    #[test]
    fn a_page_without_overrides_adds_nothing() {
        let first = json!({"api_key": "k", "identity_overrides": [{"id": 1}]});
        for page in [
            json!({}),
            json!({"identity_overrides": null}),
            json!({"api_key": "k"}),
        ] {
            let mut document = first.clone();
            merge_page(&mut document, page).unwrap();
            assert_eq!(document, first);
        }
    }

    #[test]
    fn a_page_that_cannot_be_merged_leaves_the_document_unchanged() {
        let first = json!({"api_key": "k", "identity_overrides": [{"id": 1}]});
        for (page, error) in [
            (
                json!({"identity_overrides": {"id": 2}}),
                "identity_overrides is not a list",
            ),
            (
                json!({"identity_overrides": "x"}),
                "identity_overrides is not a list",
            ),
            (json!([{"id": 2}]), "the page is not a JSON object"),
        ] {
            let mut document = first.clone();
            assert_eq!(
                merge_page(&mut document, page),
                Err(MergeError::Invalid(error))
            );
            assert_eq!(document, first);
        }
        let mut not_a_document = json!([]);
        assert!(merge_page(&mut not_a_document, json!({"identity_overrides": []})).is_err());
    }

    #[test]
    fn a_page_of_another_version_of_the_document_is_refused() {
        let first = json!({"api_key": "k", "updated_at": "2024-06-01T12:00:00Z",
                           "feature_states": [{"id": 1, "enabled": true}],
                           "identity_overrides": [{"id": 1}]});
        for (page, member) in [
            (
                json!({"api_key": "k", "updated_at": "2024-06-01T12:05:00Z",
                       "identity_overrides": [{"id": 2}]}),
                "updated_at",
            ),
            (
                json!({"api_key": "k", "feature_states": [{"id": 1, "enabled": false}],
                       "identity_overrides": [{"id": 2}]}),
                "feature_states",
            ),
            (json!({"name": "added later"}), "name"),
        ] {
            let mut document = first.clone();
            let error = merge_page(&mut document, page).unwrap_err();
            assert_eq!(error, MergeError::OtherVersion(member.into()));
            assert!(
                error.to_string().contains(&format!("`{member}`")),
                "{error}"
            );
            assert_eq!(document, first);
        }
        // The same members with the same values (in any order) are the same version.
        let mut document = first.clone();
        let page = json!({"feature_states": [{"enabled": true, "id": 1}], "api_key": "k",
                          "identity_overrides": [{"id": 2}]});
        merge_page(&mut document, page).unwrap();
        assert_eq!(
            document["identity_overrides"],
            json!([{"id": 1}, {"id": 2}])
        );
    }
}
