//! One flag resolved for a flagd request through the OpenFeature layer, then flagd's typing
//! (`ResolveAll` is `all`), whatever engine is behind the target.
//!
//! A resolver names the type it wants. A value of another type is `INVALID_ARGUMENT` (the
//! providers' TYPE_MISMATCH), unless the engine reads it leniently (a disabled Flagsmith flag):
//! an answer without a value of the asked type is reason `DISABLED` (or `DEFAULT`) with no
//! variant (empty on v1, absent on v2), which the providers read as "use the caller's
//! default". How numbers read is the engine's (flagd reads every number as a float, so
//! `ResolveInt` cuts a fraction toward zero; Flagsmith wants whole numbers). FLAG_NOT_FOUND is
//! `NOT_FOUND`, PARSE_ERROR `DATA_LOSS`, GENERAL `UNKNOWN`. Where the engine says a boolean is
//! its enabled bit (`Typing::enabled_as_bool`: Unleash toggles), `ResolveBoolean` reads that. While the source is stale, an answer
//! with a value says `STALE`.

use std::collections::BTreeMap;

use prost_types::Struct;
use serde_json::Value;
use tonic::Status;

use super::proto;
use crate::api::AppState;
use crate::openfeature::{when_stale, Caller, Fractions, Meta, Metadata, Resolution, Target};
use crate::telemetry::otel::spans::FlagEvaluated;

/// The type a resolver asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Bool,
    String,
    Int,
    Float,
    Object,
}

/// A value in flagd's types; `None`: no value (the caller's default applies).
#[derive(Debug)]
pub(super) enum Typed {
    Bool(bool),
    String(String),
    Int(i64),
    Float(f64),
    Object(Struct),
    None,
}

/// A resolved flag, ready for a response message.
#[derive(Debug)]
pub(super) struct Resolved {
    pub value: Typed,
    pub reason: &'static str,
    pub variant: String,
    pub metadata: Struct,
    /// For the call's span, when spans are exported.
    pub traced: Option<FlagEvaluated>,
}

/// The request's context prepared for the target's engine (`INVALID_ARGUMENT` as OFREP's 400).
pub(super) fn caller<'c>(
    state: &AppState,
    target: &Target,
    context: Option<&'c Value>,
) -> Result<Caller<'c>, Status> {
    target
        .caller(context, state.config.limits.max_trait_value_length)
        .map_err(|(code, details)| Status::invalid_argument(format!("{code}: {details}")))
}

/// One flag of the requested type; `v2`: asked of the v2 service.
///
/// A flag without a value (flagd: no default variant, no match) is `NOT_FOUND` on v1, as flagd
/// answers it there: v1's fields cannot say "no value", and the Go and Java providers read an
/// answer without one as the type's zero value, where an error gives every provider the
/// caller's default. v2 answers it reason `DEFAULT` without a value.
pub(super) fn one(
    state: &AppState,
    target: &Target,
    key: &str,
    context: Option<&Struct>,
    kind: Kind,
    v2: bool,
) -> Result<Resolved, Status> {
    let context = context.map(proto::to_json);
    let caller = caller(state, target, context.as_ref())?;
    target.count(caller.targeting_key().is_some());
    let stale = target.stale();
    target
        .one(key, &caller, |r| {
            if let Some((code, message)) = &r.error {
                let status = failed(code, key, message);
                return Err(match FlagEvaluated::failed(key, code) {
                    Some(failed) => failed.ride(status),
                    None => status,
                });
            }
            if !v2 && r.value.is_none() && r.reason == "DEFAULT" {
                return Err(Status::not_found(format!("flag '{key}' has no value")));
            }
            let mut resolved = typed(&r, kind, stale)?;
            resolved.traced = FlagEvaluated::note(
                key,
                &resolved.variant,
                resolved.reason,
                caller.targeting_key(),
            );
            Ok(resolved)
        })
        .map_err(|_| evaluation_failed())?
}

/// An evaluation error as flagd's status codes carry it.
fn failed(code: &str, key: &str, message: &str) -> Status {
    match code {
        "FLAG_NOT_FOUND" => Status::not_found(message.to_owned()),
        "TYPE_MISMATCH" => Status::invalid_argument(message.to_owned()),
        "PARSE_ERROR" => Status::data_loss(format!("flag '{key}': {message}")),
        _ => Status::unknown(format!("flag '{key}': {message}")),
    }
}

/// A resolution's metadata as a `Struct`: its source's map, or the derived fields.
fn metadata(metadata: &Metadata<'_>) -> Struct {
    let mut out = match metadata.as_map() {
        Some(map) => proto::object(map),
        None => Struct {
            fields: BTreeMap::new(),
        },
    };
    for (name, value) in metadata.fields() {
        let value = match value {
            Meta::Bool(b) => proto::boolean(b),
            Meta::Number(n) => proto::number(n.as_f64().unwrap_or(0.0)),
            Meta::Text(text) => proto::string(text),
        };
        out.fields.insert(name.to_owned(), value);
    }
    out
}

/// The resolution as the requested type (`STALE` while its source is `stale`); another type is
/// `INVALID_ARGUMENT`, the providers' TYPE_MISMATCH.
pub(super) fn typed(r: &Resolution<'_>, kind: Kind, stale: bool) -> Result<Resolved, Status> {
    let value = match (kind, r.value.as_deref()) {
        (Kind::Bool, _) if r.typing.enabled_as_bool => Some(Typed::Bool(r.enabled)),
        (Kind::Bool, Some(Value::Bool(b))) => Some(Typed::Bool(*b)),
        (Kind::String, Some(Value::String(s))) => Some(Typed::String(s.clone())),
        (Kind::Int, Some(Value::Number(n))) => integer(n, r.typing.fractions).map(Typed::Int),
        (Kind::Float, Some(Value::Number(n))) => n.as_f64().map(Typed::Float),
        (Kind::Object, Some(Value::Object(o))) => Some(Typed::Object(proto::object(o))),
        _ => None,
    };
    match value {
        Some(value) => Ok(finish(r, value, false, stale)),
        None if r.value.is_none() || r.typing.lenient => Ok(finish(r, Typed::None, true, stale)),
        None => Err(Status::invalid_argument(format!(
            "flag '{}' is not of type {}",
            r.key,
            match kind {
                Kind::Bool => "boolean",
                Kind::String => "string",
                Kind::Int => "integer",
                Kind::Float => "float",
                Kind::Object => "object",
            }
        ))),
    }
}

/// An integer, or a float an `i64` holds: with no fraction, or cut toward zero.
fn integer(n: &serde_json::Number, fractions: Fractions) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.abs() < 9.2e18)
            .filter(|f| f.fract() == 0.0 || fractions == Fractions::Truncated)
            .map(|f| f.trunc() as i64)
    })
}

/// The response parts; `defaulted`: no value for the caller, so the variant is empty.
fn finish(r: &Resolution<'_>, value: Typed, defaulted: bool, stale: bool) -> Resolved {
    Resolved {
        value,
        reason: when_stale(r.reason, stale, !defaulted),
        variant: if defaulted {
            String::new()
        } else {
            r.variant_text().to_owned()
        },
        metadata: metadata(&r.metadata),
        traced: None,
    }
}

pub(super) fn evaluation_failed() -> Status {
    Status::internal("the flag could not be evaluated")
}

#[cfg(test)]
mod tests;
