//! `GET /proxy/status`: what this proxy serves and how fresh it is, for people (a small
//! self-contained HTML page) and for tools (JSON with `Accept: application/json` or
//! `?format=json`). Process: version, start time, uptime, open change streams. Per environment:
//! key fingerprint, source, revision and content revision, last successful update and age, the
//! last error, document size, requests served per resource and refused (4xx), open streams;
//! and the requests refused because their key reached no environment; per environment that
//! reported flag analytics, the evaluations received, forwarded and dropped, and the last flush;
//! in a fleet, its store: reachable, replicas, leases held, documents from the store and from
//! upstream, upstream fetches saved, store values refused; flagd flag sources; Unleash feeds
//! (the features files, or one per client token polled upstream): toggles, revision, last
//! update and age, stale, refused updates, the last error.
//!
//! Nothing secret is shown: environments appear as key fingerprints, and any configured key
//! that an error message happens to contain is replaced by its fingerprint.

use std::time::SystemTime;

use http::{header, request::Parts, HeaderValue, StatusCode};
use serde_json::{json, Map, Value};

mod html;
mod report;

use crate::api::{full, AppState, Response};
use report::Report;

pub(crate) fn status(
    state: &AppState,
    request: &Parts,
    unleash: Option<&crate::unleash::Unleash>,
) -> Response {
    let report = Report::read(state, query_page(request), unleash);
    let (body, content_type) = if wants_json(request) {
        let body = serde_json::to_vec_pretty(&to_json(&report)).expect("serialise");
        (body, "application/json")
    } else {
        (html::page(&report).into_bytes(), "text/html; charset=utf-8")
    };
    let mut response = full(StatusCode::OK, body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    // The page is self-contained: it loads nothing and runs nothing.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `?page=N` (from 1), else the first.
fn query_page(request: &Parts) -> usize {
    request
        .uri
        .query()
        .and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "page")
                .and_then(|(_, v)| v.parse().ok())
        })
        .unwrap_or(1)
}

/// JSON for `?format=json`, or an `Accept` naming JSON and not HTML; HTML otherwise.
fn wants_json(request: &Parts) -> bool {
    let format = request.uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "format")
            .map(|(_, v)| v.into_owned())
    });
    match format.as_deref() {
        Some("json") => return true,
        Some("html") => return false,
        _ => {}
    }
    let accept = request
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    accept.contains("application/json") && !accept.contains("text/html")
}

/// RFC 3339 UTC, to the millisecond.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn to_json(report: &Report) -> Value {
    let environments: Vec<Value> = report
        .environments
        .iter()
        .map(|e| {
            let requests: Map<String, Value> = e
                .requests
                .iter()
                .map(|(r, n)| (r.name().to_owned(), json!(n)))
                .collect();
            let (revision, content_revision, bytes, updated_ms) = match &e.document {
                Some((rev, content, bytes, updated)) => {
                    (json!(rev), json!(content), json!(bytes), *updated)
                }
                None => (Value::Null, Value::Null, Value::Null, 0),
            };
            json!({
                "environment": e.fingerprint,
                "source": e.source,
                "loaded": e.document.is_some(),
                "revision": revision,
                "content_revision": content_revision,
                "document_bytes": bytes,
                "document_updated_at": (updated_ms > 0).then(|| rfc3339(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(updated_ms))),
                "last_success": e.last_success.map(rfc3339),
                "age_seconds": e.age_seconds,
                "last_error": e.last_error,
                "stale": e.stale,
                "requests": requests,
                "rejected": e.rejected,
                "streams": e.streams,
            })
        })
        .collect();
    json!({
        "version": report.version,
        "generated_at": rfc3339(report.now),
        "started_at": rfc3339(report.started_at),
        "uptime_seconds": report.uptime_seconds,
        "open_streams": report.open_streams,
        "unrecognised_keys": report.unrecognised_keys,
        "summary": {
            "environments": report.summary.environments,
            "loaded": report.summary.loaded,
            "failing": report.summary.failing,
            "progress": format!("{}/{} environments loaded", report.summary.loaded, report.summary.environments),
            "document_bytes": report.summary.document_bytes,
        },
        "fleet": report.fleet.as_ref().map(|f| json!({
            "store_reachable": f.store_reachable,
            "replicas": f.replicas,
            "leases_held": f.leases_held,
            "documents_from_store": f.documents_from_store,
            "documents_from_upstream": f.documents_from_upstream,
            "upstream_fetches_saved": f.upstream_fetches_saved,
            "store_values_refused": f.store_values_refused,
        })),
        "flag_sets": report.flag_sets,
        "flag_sources": report.flag_sources.iter().map(|f| json!({
            "uri": f.uri,
            "kind": f.kind,
            "loaded": f.loaded,
            "flags": f.flags,
            "updated_at": f.updated_at_ms.map(|ms| rfc3339(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))),
            "stale": f.stale,
            "refused_loads": f.refused,
            "last_error": f.last_error,
        })).collect::<Vec<_>>(),
        "unleash_feeds": report.unleash.iter().map(|f| json!({
            "feed": f.name,
            "source": if f.polled { "upstream" } else { "files" },
            "loaded": f.loaded,
            "toggles": f.toggles,
            "revision": f.revision,
            "last_success": f.last_success.map(rfc3339),
            "age_seconds": f.age_seconds,
            "stale": f.stale,
            "refused_updates": f.refused,
            "last_error": f.last_error,
        })).collect::<Vec<_>>(),
        "page": report.page,
        "pages": report.pages,
        "page_size": report::PAGE_SIZE,
        "environments": environments,
        "analytics": report.analytics.iter().map(|a| json!({
            "environment": a.fingerprint,
            "received": a.received,
            "forwarded": a.forwarded,
            "failed_requests": a.failed_requests,
            "dropped": a.dropped,
            "pending": a.pending,
            "last_flush": a.last_flush.map(|f| json!({
                "at": rfc3339(f.at),
                "outcome": f.outcome.name(),
                "events": f.events,
            })),
        })).collect::<Vec<_>>(),
    })
}
