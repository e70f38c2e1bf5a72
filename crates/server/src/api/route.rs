//! Every path Flagpole answers, decided once per request. The service dispatches on the
//! [`Route`], metrics are labelled from it, and the listener asks it whether a request opens a
//! change stream; no other place looks at the path.
//!
//! SDK paths are accepted with and without their trailing slash (no redirects). OFREP paths may
//! carry extra leading slashes (the JS provider sends `//ofrep/…` when its base URL ends in
//! `/`); an OFREP flag key is the rest of the path, slashes included (the Python provider does
//! not encode keys), percent-decoded.

use std::borrow::Cow;

use crate::telemetry::http::RouteLabel;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    Flags,
    Identities,
    EnvironmentDocument,
    /// `POST /api/v1/analytics/flags/`: the SDKs' flag analytics.
    Analytics,
    /// `GET /sse/environments/{client key}/stream`: the Flagsmith real-time stream.
    RealtimeStream(&'a str),
    /// `POST /ofrep/v1/evaluate/flags`.
    OfrepBulk,
    /// `POST /ofrep/v1/evaluate/flags/{key}`, the key percent-decoded.
    OfrepFlag(Cow<'a, str>),
    /// An OFREP flag path whose key is not UTF-8 once percent-decoded (a 404).
    OfrepBadKey,
    /// `GET /ofrep/v1/events`: OFREP's change stream.
    OfrepEvents,
    Liveness,
    Readiness,
    /// Readiness that stale documents do not fail (`/proxy/health/serving`).
    Serving,
    Metrics,
    Status,
    NotFound,
}

const OFREP_BULK: &str = "ofrep/v1/evaluate/flags";
const OFREP_EVENTS: &str = "ofrep/v1/events";

impl<'a> Route<'a> {
    pub(crate) fn of(path: &'a str) -> Route<'a> {
        if let Some(route) = ofrep(path) {
            return route;
        }
        if let Some(key) = realtime_key(path) {
            return Route::RealtimeStream(key);
        }
        match path.strip_suffix('/').unwrap_or(path) {
            "/api/v1/flags" => Route::Flags,
            "/api/v1/identities" => Route::Identities,
            "/api/v1/environment-document" => Route::EnvironmentDocument,
            "/api/v1/analytics/flags" => Route::Analytics,
            "/proxy/health/liveness" => Route::Liveness,
            "/proxy/health/readiness" | "/proxy/health" | "/health" => Route::Readiness,
            "/proxy/health/serving" => Route::Serving,
            "/metrics" => Route::Metrics,
            "/proxy/status" => Route::Status,
            _ => Route::NotFound,
        }
    }

    /// Whether the route is one of OFREP's (its own CORS preflight and error shape).
    pub(crate) fn is_ofrep(&self) -> bool {
        matches!(
            self,
            Route::OfrepBulk | Route::OfrepFlag(_) | Route::OfrepBadKey | Route::OfrepEvents
        )
    }

    /// Whether a `GET` of this route opens a change stream (such a request may be served
    /// straight on the socket).
    pub(crate) fn is_change_stream(&self) -> bool {
        matches!(self, Route::RealtimeStream(_) | Route::OfrepEvents)
    }

    /// The `route` label of its metrics.
    pub(crate) fn label(&self) -> RouteLabel {
        match self {
            Route::Flags => RouteLabel::Flags,
            Route::Identities => RouteLabel::Identities,
            Route::EnvironmentDocument => RouteLabel::EnvironmentDocument,
            Route::Analytics => RouteLabel::Analytics,
            Route::RealtimeStream(_) => RouteLabel::RealtimeStream,
            Route::OfrepBulk => RouteLabel::OfrepBulk,
            Route::OfrepFlag(_) | Route::OfrepBadKey => RouteLabel::OfrepFlag,
            Route::OfrepEvents => RouteLabel::OfrepEvents,
            Route::Liveness | Route::Readiness | Route::Serving => RouteLabel::Health,
            Route::Metrics => RouteLabel::Metrics,
            Route::Status => RouteLabel::Status,
            Route::NotFound => RouteLabel::NotFound,
        }
    }

    /// The `Allow` header of a Flagsmith or operator route.
    pub(crate) fn allow(&self) -> &'static str {
        match self {
            Route::Identities => "GET, HEAD, POST",
            Route::Analytics => "POST",
            _ => "GET, HEAD",
        }
    }
}

fn ofrep(path: &str) -> Option<Route<'_>> {
    let path = path.trim_start_matches('/');
    if path.strip_suffix('/').unwrap_or(path) == OFREP_EVENTS {
        return Some(Route::OfrepEvents);
    }
    let rest = path.strip_prefix(OFREP_BULK)?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::OfrepBulk);
    }
    let raw = rest.strip_prefix('/')?;
    Some(
        percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_or(Route::OfrepBadKey, Route::OfrepFlag),
    )
}

fn realtime_key(path: &str) -> Option<&str> {
    path.strip_prefix("/sse/environments/")?
        .strip_suffix("/stream")
        .filter(|key| !key.is_empty() && !key.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flagsmith_paths_with_and_without_trailing_slash() {
        assert_eq!(Route::of("/api/v1/flags/"), Route::Flags);
        assert_eq!(Route::of("/api/v1/flags"), Route::Flags);
        assert_eq!(Route::of("/api/v1/identities"), Route::Identities);
        assert_eq!(Route::of("/api/v1/analytics/flags/"), Route::Analytics);
        assert_eq!(Route::of("/api/v1/analytics/flags"), Route::Analytics);
        assert_eq!(Route::of("/health/"), Route::Readiness);
        assert_eq!(Route::of("/proxy/health/serving/"), Route::Serving);
        assert_eq!(Route::of("/api/v1/flags//"), Route::NotFound);
        assert_eq!(Route::of("/"), Route::NotFound);
        assert_eq!(Route::of("/api/v1/flagsx"), Route::NotFound);
    }

    #[test]
    fn ofrep_paths() {
        assert_eq!(Route::of("/ofrep/v1/evaluate/flags"), Route::OfrepBulk);
        assert_eq!(Route::of("/ofrep/v1/evaluate/flags/"), Route::OfrepBulk);
        assert_eq!(Route::of("//ofrep/v1/evaluate/flags"), Route::OfrepBulk);
        assert_eq!(
            Route::of("/ofrep/v1/evaluate/flags/a/b"),
            Route::OfrepFlag("a/b".into())
        );
        assert_eq!(
            Route::of("/ofrep/v1/evaluate/flags/a%2Fb"),
            Route::OfrepFlag("a/b".into())
        );
        assert_eq!(
            Route::of("/ofrep/v1/evaluate/flags/%ff"),
            Route::OfrepBadKey
        );
        assert_eq!(Route::of("/ofrep/v1/evaluate/flagsx"), Route::NotFound);
        assert_eq!(Route::of("/ofrep/v1/events"), Route::OfrepEvents);
        assert_eq!(Route::of("/ofrep/v1/events/"), Route::OfrepEvents);
    }

    #[test]
    fn realtime_paths() {
        assert_eq!(
            Route::of("/sse/environments/abc/stream"),
            Route::RealtimeStream("abc")
        );
        assert_eq!(Route::of("/sse/environments//stream"), Route::NotFound);
        assert_eq!(Route::of("/sse/environments/a/b/stream"), Route::NotFound);
        assert!(Route::of("/ofrep/v1/events").is_change_stream());
        assert!(!Route::of("/api/v1/flags/").is_change_stream());
    }
}
