//! The environment key of a flagd request, from gRPC (or Connect) metadata, and the one
//! authorisation step behind it.
//!
//! The flagd providers carry no key of their own: Python and JS send the `selector` option as
//! `flagd-selector`, Python may add `authorization: Bearer` (TLS or loopback only), and the Go
//! provider can only put user-info in its host, which arrives as `authorization: Basic`. So
//! all of these are accepted, plus the OFREP and Flagsmith headers; two different keys, no key
//! or an unknown key are `UNAUTHENTICATED`. Keys count as OFREP's for key kinds and rate limits.

use base64::Engine as _;
use tonic::metadata::MetadataMap;
use tonic::Status;

use crate::api::authorise::{self, Authorised, Family, Gate, Refusal};
use crate::api::AppState;
use crate::openfeature::{NotLoaded, Target};

/// The key presented (`None`: none at all); two different keys are refused.
pub(super) fn presented(metadata: &MetadataMap) -> Result<Option<String>, Status> {
    let text = |name: &str| metadata.get(name).and_then(|v| v.to_str().ok());
    let authorization = text("authorization").map(from_authorization);
    let candidates = [
        text("flagd-selector").map(str::to_owned),
        authorization.flatten(),
        text("x-api-key").map(str::to_owned),
        text("x-environment-key").map(str::to_owned),
    ];
    let mut key: Option<String> = None;
    for candidate in candidates.into_iter().flatten() {
        let candidate = candidate.trim();
        if candidate.is_empty() {
            continue;
        }
        match &key {
            Some(other) if other != candidate => {
                return Err(Status::unauthenticated(
                    "the request presents two different keys",
                ))
            }
            Some(_) => {}
            None => key = Some(candidate.to_owned()),
        }
    }
    Ok(key)
}

/// The toggles of the Unleash token a call presents as its key (`authorization: Bearer`, or
/// any other place a key goes, `flagd-selector` included, as a flag set's selector rides),
/// when Unleash toggles are served and the key opens no environment; `None` otherwise.
pub(super) fn unleash_token(
    state: &AppState,
    metadata: &MetadataMap,
) -> Option<Result<Target, Status>> {
    let unleash = state.unleash.as_deref()?;
    let key = presented(metadata).ok().flatten()?;
    if state.store.lookup(&key).is_some() {
        return None;
    }
    let target = Target::unleash_token(unleash, &key, state.config.health.stale_grace)?;
    Some(target.map_err(|NotLoaded| {
        Status::unavailable("this Unleash token's toggles have not been fetched yet")
    }))
}

/// The bearer token of `authorization` (a flag set's token), if any.
pub(super) fn bearer(metadata: &MetadataMap) -> Option<String> {
    let value = metadata.get("authorization")?.to_str().ok()?;
    from_authorization(value).filter(|t| !t.is_empty())
}

fn missing() -> Status {
    Status::unauthenticated(
        "missing key: send flagd-selector, authorization (Bearer or Basic), x-api-key or \
         x-environment-key",
    )
}

/// `Bearer <key>`, `Basic <base64(user:password)>` (the key is the password, or the user name
/// when the password is empty), or a bare key.
fn from_authorization(value: &str) -> Option<String> {
    let value = value.trim();
    let Some((scheme, rest)) = value.split_once(' ') else {
        return Some(value.to_owned());
    };
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.trim().to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, password) = text.split_once(':').unwrap_or((text.as_str(), ""));
        let key = if password.is_empty() { user } else { password };
        return Some(percent_decode(key));
    }
    None
}

/// User-info in a URL is percent-encoded; some clients pass it on as written.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The key → environment → snapshot, refusals as gRPC statuses.
pub(super) fn authorise(state: &AppState, metadata: &MetadataMap) -> Result<Authorised, Status> {
    let key = match presented(metadata) {
        Ok(Some(key)) => key,
        Ok(None) => {
            state.store.unrecognised.count();
            return Err(missing());
        }
        Err(status) => {
            state.store.unrecognised.count();
            return Err(status);
        }
    };
    let gate = Gate {
        family: Family::Ofrep,
        client_keys: state.config.ofrep.client_keys,
        server_keys: state.config.ofrep.server_keys,
    };
    authorise::authorise(&state.store, &key, gate).map_err(|refusal| match refusal {
        Refusal::UnknownKey => Status::unauthenticated("unknown key"),
        Refusal::RateLimited(seconds) => Status::resource_exhausted(format!(
            "too many requests with this key: retry after {seconds} s"
        )),
        Refusal::KindNotAllowed => {
            Status::permission_denied("this kind of key is not allowed here")
        }
        Refusal::NotLoaded => Status::unavailable("the environment's document is not loaded yet"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&'static str, &str)]) -> MetadataMap {
        let mut m = MetadataMap::new();
        for (k, v) in pairs {
            m.insert(*k, v.parse().unwrap());
        }
        m
    }

    #[test]
    fn every_header_form_carries_the_key() {
        let basic = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        for m in [
            with(&[("flagd-selector", "k1")]),
            with(&[("authorization", "Bearer k1")]),
            with(&[("authorization", "k1")]),
            with(&[("authorization", &basic("user:k1"))]),
            with(&[("authorization", &basic("k1:"))]),
            with(&[("authorization", &basic("k1"))]),
            with(&[("x-api-key", "k1")]),
            with(&[("x-environment-key", "k1"), ("flagd-selector", "k1")]),
        ] {
            assert_eq!(presented(&m).unwrap().as_deref(), Some("k1"), "{m:?}");
        }
        assert_eq!(presented(&with(&[])).unwrap(), None);
        assert!(presented(&with(&[("x-api-key", "a"), ("flagd-selector", "b")])).is_err());
    }
}
