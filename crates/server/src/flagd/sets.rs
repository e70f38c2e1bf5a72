//! Which flag set a flagd call reads (flagd definitions, `flagsets`): a call goes to the flag
//! sets when they are configured and it presents no key of a served environment; the
//! `flagd-selector` header picks the set (none: every source merged), and a set given bearer
//! tokens wants one in `authorization`. The answers are the OpenFeature layer's, as for
//! environments (`resolve`, `all`).

use tonic::metadata::MetadataMap;
use tonic::Status;

use super::keys;
use crate::api::AppState;
use crate::flagsets::Refused;
use crate::openfeature::Target;

/// The flag set a call reads, or `None` when it reads an environment (no flag sets
/// configured, or a key of a served environment presented).
pub(super) fn of_call(state: &AppState, metadata: &MetadataMap) -> Result<Option<Target>, Status> {
    let sets = &state.flag_sets;
    if !sets.is_configured() {
        return Ok(None);
    }
    if let Ok(Some(key)) = keys::presented(metadata) {
        if state.store.lookup(&key).is_some() {
            return Ok(None);
        }
    }
    let selector = selector(metadata);
    let selector = selector.as_deref();
    match sets.admit(selector, keys::bearer(metadata).as_deref()) {
        Ok(()) => {}
        Err(Refused::UnknownSelector) if selector.is_none() => {
            return Err(Status::unavailable("no flag set is loaded yet"));
        }
        Err(Refused::UnknownSelector) => {
            return Err(Status::not_found(format!(
                "no flag set or environment for the selector '{}'",
                selector.unwrap_or_default()
            )));
        }
        Err(Refused::MissingToken) => {
            return Err(Status::unauthenticated(
                "this flag set wants a bearer token: send authorization: Bearer <token>",
            ));
        }
        Err(Refused::WrongToken) => {
            return Err(Status::permission_denied(
                "this bearer token may not read this flag set",
            ));
        }
    }
    sets.view(selector)
        .map(|view| Some(Target::flag_set(view, selector)))
        .ok_or_else(|| Status::unavailable("no flag set is loaded yet"))
}

/// The `flagd-selector` header, the set a call names.
pub(super) fn selector(metadata: &MetadataMap) -> Option<String> {
    metadata
        .get("flagd-selector")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_is_the_header() {
        let mut metadata = MetadataMap::new();
        assert_eq!(selector(&metadata), None);
        metadata.insert("flagd-selector", " flagSetId=shop ".parse().unwrap());
        assert_eq!(selector(&metadata).as_deref(), Some("flagSetId=shop"));
    }
}
