//! One flag resolved for a flagd request: the OFREP front door's evaluation and mapping
//! (`api/openfeature`), then flagd's typing (`ResolveAll` is `all`).
//!
//! A resolver names the type it wants. An enabled flag whose value has another type is
//! `INVALID_ARGUMENT` (the providers' TYPE_MISMATCH); a disabled flag without a value of that
//! type answers `DISABLED` with no variant (empty on v1, absent on v2), which the providers read
//! as "use the caller's default". An unknown flag (or one a client key may not see) is `NOT_FOUND`. While
//! the environment's document is stale, an answer with a value says `STALE`.

use std::collections::BTreeMap;

use flagpole_engine::{FlagResult, Identity};
use prost_types::Struct;
use serde_json::Value;
use tonic::Status;

use super::proto;
use crate::api::authorise::Authorised;
use crate::api::openfeature::context::{self, Input};
use crate::api::openfeature::flagsmith;
use crate::api::openfeature::mapping::{self, Metadata, Resolution};
use crate::api::AppState;
use crate::snapshot::{KeyKind, Snapshot};
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

/// One flag of the requested type.
pub(super) fn one(
    state: &AppState,
    authorised: &Authorised,
    key: &str,
    context: Option<&Struct>,
    kind: Kind,
) -> Result<Resolved, Status> {
    let (snapshot, kinds) = (&authorised.snapshot, authorised.kind);
    let context = context.map(proto::to_json);
    let input = input(state, context.as_ref())?;
    authorised.env.usage.count(usage_resource(&input));
    let traits = input.engine_traits();
    let identity = input.identifier.map(|id| Identity::new(id, &traits));
    let stale = authorised.env.is_stale();
    let not_found = || {
        let status = Status::not_found(format!("no flag named '{key}' in this environment"));
        match FlagEvaluated::failed(key, "FLAG_NOT_FOUND") {
            Some(failed) => failed.ride(status),
            None => status,
        }
    };
    let resolve = |flag: &FlagResult<'_>| -> Result<Resolved, Status> {
        if !snapshot.is_visible(kinds, flag.key, flag.enabled) {
            return Err(not_found());
        }
        let r = mapped(state, snapshot, flag, kinds);
        // A disabled Flagsmith flag reads `false` whatever its type: never a mismatch.
        typed(answer(&r, !r.enabled(), Fractions::Refused), kind, stale)
    };
    let mut resolved = match &identity {
        Some(identity) => {
            // The feature alone, as the Flagsmith SDKs evaluate one flag read.
            let flag = snapshot
                .env
                .evaluate_feature(key, Some(identity))
                .map_err(evaluation_failed)?
                .ok_or_else(not_found)?;
            resolve(&flag)?
        }
        None => {
            let flags = snapshot.env.own_flags().map_err(evaluation_failed)?;
            let flag = flags
                .flags
                .iter()
                .find(|f| f.key == key)
                .ok_or_else(not_found)?;
            resolve(flag)?
        }
    };
    resolved.traced =
        FlagEvaluated::note(key, &resolved.variant, resolved.reason, input.identifier);
    Ok(resolved)
}

/// The request's context as Flagsmith inputs (`INVALID_ARGUMENT` as OFREP's 400).
pub(super) fn input<'a>(state: &AppState, context: Option<&'a Value>) -> Result<Input<'a>, Status> {
    context::of_context(context, state.config.limits.max_trait_value_length)
        .map_err(|(code, details)| Status::invalid_argument(format!("{code}: {details}")))
}

fn mapped<'a>(
    state: &AppState,
    snapshot: &Snapshot,
    flag: &'a FlagResult<'a>,
    kind: KeyKind,
) -> Resolution<'a> {
    let can_vary = snapshot.env.can_vary(flag.key);
    flagsmith::resolve(flag, kind, state.config.ofrep.parse_json_strings, can_vary)
}

/// One flag's answer before flagd's typing, whichever engine gave it.
#[derive(Debug)]
pub(super) struct Answer<'a> {
    pub key: &'a str,
    /// `None`: no value (disabled, no default variant): the caller's default applies.
    pub value: Option<&'a Value>,
    pub reason: &'static str,
    pub variant: &'a str,
    pub metadata: Struct,
    /// A value of another type than the one asked for is the caller's default rather than a
    /// type mismatch (a disabled Flagsmith flag reads `false` whatever its type).
    pub lenient: bool,
    /// How an integer resolver reads a number with a fraction.
    pub fractions: Fractions,
}

/// How `ResolveInt` reads a number with a fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fractions {
    /// A type mismatch (Flagsmith values: only whole numbers are integers).
    Refused,
    /// Cut toward zero, as flagd (Go) reads every number as a float and converts it.
    Truncated,
}

/// An engine-neutral resolution as flagd's typing reads it: `lenient` and `fractions` are the
/// engine's rules (see [`Answer`]).
pub(super) fn answer<'a>(r: &'a Resolution<'a>, lenient: bool, fractions: Fractions) -> Answer<'a> {
    let metadata = match &r.metadata {
        Metadata::Map(map) => proto::object(map),
        Metadata::Flagsmith(_) => {
            let mut metadata = BTreeMap::new();
            if let Some(id) = r.feature_id().and_then(Value::as_f64) {
                metadata.insert("flagsmithFeatureId".to_owned(), proto::number(id));
            }
            metadata.insert("flagsmithEnabled".to_owned(), proto::boolean(r.enabled()));
            if let Some(reason) = r.engine_reason() {
                metadata.insert("flagsmithReason".to_owned(), proto::string(reason));
            }
            if let Some(segment) = r.segment() {
                metadata.insert("flagsmithSegment".to_owned(), proto::string(segment));
            }
            Struct { fields: metadata }
        }
    };
    Answer {
        key: r.key,
        value: r.value.as_deref(),
        reason: r.reason,
        variant: r.variant_text(),
        metadata,
        lenient,
        fractions,
    }
}

/// The answer as the requested type (`STALE` while its source is `stale`); another type is
/// `INVALID_ARGUMENT`, the providers' TYPE_MISMATCH.
pub(super) fn typed(a: Answer<'_>, kind: Kind, stale: bool) -> Result<Resolved, Status> {
    let value = match (kind, a.value) {
        (Kind::Bool, Some(Value::Bool(b))) => Some(Typed::Bool(*b)),
        (Kind::String, Some(Value::String(s))) => Some(Typed::String(s.clone())),
        (Kind::Int, Some(Value::Number(n))) => integer(n, a.fractions).map(Typed::Int),
        (Kind::Float, Some(Value::Number(n))) => n.as_f64().map(Typed::Float),
        (Kind::Object, Some(Value::Object(o))) => Some(Typed::Object(proto::object(o))),
        _ => None,
    };
    match value {
        Some(value) => Ok(finish(a, value, false, stale)),
        None if a.value.is_none() || a.lenient => Ok(finish(a, Typed::None, true, stale)),
        None => Err(Status::invalid_argument(format!(
            "flag '{}' is not of type {}",
            a.key,
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
fn finish(a: Answer<'_>, value: Typed, defaulted: bool, stale: bool) -> Resolved {
    Resolved {
        value,
        reason: mapping::when_stale(a.reason, stale, !defaulted),
        variant: if defaulted {
            String::new()
        } else {
            a.variant.to_owned()
        },
        metadata: a.metadata,
        traced: None,
    }
}

pub(super) fn evaluation_failed(e: impl std::fmt::Display) -> Status {
    tracing::error!(error = %e, "flagd evaluation failed");
    Status::internal("the flag could not be evaluated")
}

/// Counted like OFREP: with an identity as `/identities`, else as `/flags`.
pub(super) fn usage_resource(input: &Input<'_>) -> crate::usage::Resource {
    if input.identifier.is_some() {
        crate::usage::Resource::Identities
    } else {
        crate::usage::Resource::Flags
    }
}
