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
    /// Unleash's client and frontend APIs and Unleash Edge's backstage probes.
    Unleash(UnleashRoute<'a>),
    Liveness,
    Readiness,
    /// Readiness that stale documents do not fail (`/proxy/health/serving`).
    Serving,
    Metrics,
    Status,
    NotFound,
}

/// An Unleash path (`api/unleash/`); toggle names percent-decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UnleashRoute<'a> {
    /// `GET /api/client/features`.
    ClientFeatures,
    /// `GET /api/client/features/{name}`.
    ClientFeature(Cow<'a, str>),
    /// `POST /api/client/register`.
    ClientRegister,
    /// `POST /api/client/metrics`.
    ClientMetrics,
    /// `GET`/`POST /api/frontend` (and `/api/proxy`).
    Frontend,
    /// `GET`/`POST /api/frontend/features/{name}` (and `/api/proxy/…`).
    FrontendFeature(Cow<'a, str>),
    /// `POST /api/frontend/client/metrics` (and `/api/proxy/…`).
    FrontendMetrics,
    /// `POST /api/frontend/client/register` (and `/api/proxy/…`).
    FrontendRegister,
    /// `GET /internal-backstage/health`.
    BackstageHealth,
    /// `GET /internal-backstage/ready`.
    BackstageReady,
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
        if let Some(route) = unleash(path) {
            return Route::Unleash(route);
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
            Route::Unleash(route) => match route {
                UnleashRoute::ClientFeatures | UnleashRoute::ClientFeature(_) => {
                    RouteLabel::UnleashClient
                }
                UnleashRoute::Frontend | UnleashRoute::FrontendFeature(_) => {
                    RouteLabel::UnleashFrontend
                }
                UnleashRoute::ClientRegister
                | UnleashRoute::ClientMetrics
                | UnleashRoute::FrontendMetrics
                | UnleashRoute::FrontendRegister => RouteLabel::UnleashMetrics,
                UnleashRoute::BackstageHealth | UnleashRoute::BackstageReady => RouteLabel::Health,
            },
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

fn unleash(path: &str) -> Option<UnleashRoute<'_>> {
    let path = path.strip_suffix('/').unwrap_or(path);
    if let Some(rest) = path.strip_prefix("/api/client/") {
        return match rest {
            "features" => Some(UnleashRoute::ClientFeatures),
            "register" => Some(UnleashRoute::ClientRegister),
            "metrics" => Some(UnleashRoute::ClientMetrics),
            _ => toggle_name(rest.strip_prefix("features/")?).map(UnleashRoute::ClientFeature),
        };
    }
    if let Some(rest) = path
        .strip_prefix("/api/frontend")
        .or_else(|| path.strip_prefix("/api/proxy"))
    {
        return match rest {
            "" => Some(UnleashRoute::Frontend),
            "/client/metrics" => Some(UnleashRoute::FrontendMetrics),
            "/client/register" => Some(UnleashRoute::FrontendRegister),
            _ => toggle_name(rest.strip_prefix("/features/")?).map(UnleashRoute::FrontendFeature),
        };
    }
    match path {
        "/internal-backstage/health" => Some(UnleashRoute::BackstageHealth),
        "/internal-backstage/ready" => Some(UnleashRoute::BackstageReady),
        _ => None,
    }
}

/// A toggle name from one path segment, percent-decoded (`None` when empty or not UTF-8).
fn toggle_name(name: &str) -> Option<Cow<'_, str>> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    percent_encoding::percent_decode_str(name)
        .decode_utf8()
        .ok()
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
    fn unleash_paths() {
        let u = |p| match Route::of(p) {
            Route::Unleash(route) => Some(route),
            _ => None,
        };
        assert_eq!(
            u("/api/client/features/"),
            Some(UnleashRoute::ClientFeatures)
        );
        assert_eq!(
            u("/api/client/features/a%20b"),
            Some(UnleashRoute::ClientFeature("a b".into()))
        );
        assert_eq!(u("/api/proxy"), Some(UnleashRoute::Frontend));
        assert_eq!(
            u("/api/proxy/features/x"),
            Some(UnleashRoute::FrontendFeature("x".into()))
        );
        assert_eq!(
            u("/api/frontend/client/metrics"),
            Some(UnleashRoute::FrontendMetrics)
        );
        assert_eq!(
            u("/internal-backstage/ready"),
            Some(UnleashRoute::BackstageReady)
        );
        assert_eq!(u("/api/frontendx"), None);
        assert_eq!(u("/api/client/features/a/b"), None);
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
