//! flagd evaluation answered from flag sets (flagd definitions, `flagsets`), as flagd answers
//! it. A call goes here when flag sets are configured and it presents no Flagsmith key: the
//! `flagd-selector` header picks the set (none: every source merged), and a set given bearer
//! tokens wants one in `authorization`.
//!
//! flagd's rules (its evaluator and v2 service): a disabled flag answers reason `DISABLED` and
//! no value, a flag without a default variant (and no targeting match) reason `DEFAULT` and no
//! value, so every provider returns the caller's default; a variant of another type than asked
//! is TYPE_MISMATCH (`INVALID_ARGUMENT`), except that `ResolveInt` reads any number and cuts
//! it toward zero and `ResolveFloat` any number, as flagd reads every number as a float;
//! FLAG_NOT_FOUND is `NOT_FOUND`, PARSE_ERROR `DATA_LOSS` and GENERAL `UNKNOWN`. Metadata is
//! the set's merged under the flag's. While the set is stale, an answer with a value says
//! `STALE`. The typing itself is the Flagsmith answers' (`resolve::typed`).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use flagpole_flagd::{Context, ErrorCode};
use prost_types::Struct;
use serde_json::{Map, Value};
use tonic::metadata::MetadataMap;
use tonic::Status;

use super::resolve::{self, Fractions, Kind, Resolved};
use super::{keys, proto};
use crate::api::openfeature;
use crate::api::AppState;
use crate::flagsets::{FlagView, Refused};
use crate::telemetry::otel::spans::FlagEvaluated;

/// The flag set a call reads, or `None` when it is a Flagsmith call (no flag sets configured,
/// or a key of a served environment presented).
pub(super) fn of_call(
    state: &AppState,
    metadata: &MetadataMap,
) -> Result<Option<Arc<FlagView>>, Status> {
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
        .map(Some)
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

/// What flagd answers as a bulk call's own `metadata`: the selector the call named.
pub(super) fn selected(metadata: &MetadataMap) -> Map<String, Value> {
    crate::flagsets::Selector::parse(selector(metadata).as_deref()).metadata()
}

/// The request's context as the engine reads it (a missing context is an empty one).
pub(super) fn attributes(context: Option<&Struct>) -> Map<String, Value> {
    match context.map(proto::to_json) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Now, for `$flagd.timestamp`.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One flag of the requested type from `view`; `v2`: asked of the v2 service.
///
/// A flag without a value (no default variant, no match) is `NOT_FOUND` on v1, as flagd
/// answers it there: v1's fields cannot say "no value", and the Go and Java providers read an
/// answer without one as the type's zero value, where an error gives every provider the
/// caller's default. v2 answers it reason `DEFAULT` without a value.
pub(super) fn one(
    view: &FlagView,
    key: &str,
    context: Option<&Struct>,
    kind: Kind,
    v2: bool,
) -> Result<Resolved, Status> {
    let attributes = attributes(context);
    let evaluation = view.set.evaluate(key, &Context::new(&attributes, now()));
    let no_value = evaluation.error.is_none() && evaluation.value.is_none();
    if !v2 && no_value && matches!(evaluation.reason, flagpole_flagd::Reason::Default) {
        return Err(Status::not_found(format!("flag '{key}' has no value")));
    }
    if let Some((code, message)) = &evaluation.error {
        let status = failed(*code, key, message);
        return Err(match FlagEvaluated::failed(key, code.as_str()) {
            Some(failed) => failed.ride(status),
            None => status,
        });
    }
    // Staleness is `typed`'s to apply: only an answer of the asked type has a value.
    let resolution = openfeature::flagd::resolve(key, &evaluation, false);
    let answer = resolve::answer(&resolution, false, Fractions::Truncated);
    let mut resolved = resolve::typed(answer, kind, view.stale())?;
    let targeting_key = attributes.get("targetingKey").and_then(Value::as_str);
    resolved.traced = FlagEvaluated::note(key, &resolved.variant, resolved.reason, targeting_key);
    Ok(resolved)
}

/// An engine error as flagd's status codes carry it.
fn failed(code: ErrorCode, key: &str, message: &str) -> Status {
    match code {
        ErrorCode::FlagNotFound => Status::not_found(format!("flag '{key}' not found")),
        ErrorCode::TypeMismatch => Status::invalid_argument(message.to_owned()),
        ErrorCode::ParseError => Status::data_loss(format!("flag '{key}': {message}")),
        ErrorCode::General => Status::unknown(format!("flag '{key}': {message}")),
    }
}

#[cfg(test)]
mod tests;
