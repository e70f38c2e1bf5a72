//! One flag evaluated for one context, as the reference evaluates it (`FlagdCore._resolve`,
//! untyped: the front doors check the requested type): state, targeting, default variant,
//! and the reason and error code it gives.

use serde_json::{Map, Value};

use crate::context::Context;
use crate::definition::{Flag, FlagSet, State};
use crate::targeting::{Input, Outcome};
use datalogic_rs::bumpalo::Bump;

/// The OpenFeature reasons flagd gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No targeting rule: no context can change the answer.
    Static,
    /// The targeting rule named a variant.
    TargetingMatch,
    /// The rule named none, or there is no default variant: the default variant, or no value.
    Default,
    /// The flag is `DISABLED`: no value, the caller's default applies.
    Disabled,
    Error,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Static => "STATIC",
            Reason::TargetingMatch => "TARGETING_MATCH",
            Reason::Default => "DEFAULT",
            Reason::Disabled => "DISABLED",
            Reason::Error => "ERROR",
        }
    }
}

/// The OpenFeature error codes flagd gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    FlagNotFound,
    ParseError,
    TypeMismatch,
    General,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::FlagNotFound => "FLAG_NOT_FOUND",
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::TypeMismatch => "TYPE_MISMATCH",
            ErrorCode::General => "GENERAL",
        }
    }
}

/// One flag's answer, borrowing from the compiled set.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation<'a> {
    /// `None`: no value (disabled, no default variant, or an error): the caller's default.
    pub value: Option<&'a Value>,
    pub variant: Option<&'a str>,
    pub reason: Reason,
    /// With `reason == Error`: the code and a message.
    pub error: Option<(ErrorCode, String)>,
    /// The flag's metadata over its set's (the set's alone for an unknown flag).
    pub metadata: &'a Map<String, Value>,
}

impl<'a> Evaluation<'a> {
    fn failed(
        code: ErrorCode,
        message: String,
        metadata: &'a Map<String, Value>,
    ) -> Evaluation<'a> {
        Evaluation {
            value: None,
            variant: None,
            reason: Reason::Error,
            error: Some((code, message)),
            metadata,
        }
    }
}

impl FlagSet {
    /// Evaluates the flag `key` for `context`.
    pub fn evaluate<'a>(&'a self, key: &str, context: &Context<'_>) -> Evaluation<'a> {
        match self.flags.get(key) {
            Some(flag) => self.evaluate_flag(flag, context),
            None => Evaluation::failed(
                ErrorCode::FlagNotFound,
                format!("Flag with key {key} not present in flag store."),
                &self.metadata,
            ),
        }
    }

    /// Evaluates one of this set's flags.
    pub fn evaluate_flag<'a>(&'a self, flag: &'a Flag, context: &Context<'_>) -> Evaluation<'a> {
        let arena = Bump::new();
        self.evaluate_with(flag, &Input::new(&arena, context))
    }

    /// Evaluates every flag of the set for `context`, in key order, handing each answer to
    /// `each`: a bulk answer's way, converting the context for the rules once for all flags.
    pub fn evaluate_each<'a>(
        &'a self,
        context: &Context<'_>,
        mut each: impl FnMut(&'a Flag, Evaluation<'a>),
    ) {
        let arena = Bump::new();
        let input = Input::new(&arena, context);
        for flag in self.flags() {
            each(flag, self.evaluate_with(flag, &input));
        }
    }

    fn evaluate_with<'a>(&'a self, flag: &'a Flag, input: &Input<'_>) -> Evaluation<'a> {
        if flag.state == State::Disabled {
            return Evaluation {
                value: None,
                variant: None,
                reason: Reason::Disabled,
                error: None,
                metadata: &flag.metadata,
            };
        }
        let Some(targeting) = &flag.targeting else {
            return default_variant(flag, Reason::Static);
        };
        match self.engine.run(targeting, &flag.key, input) {
            Outcome::NoVariant => default_variant(flag, Reason::Default),
            Outcome::Variant(name) => match flag.variants.get_key_value(name.as_str()) {
                Some((_, Value::Null)) | None => Evaluation::failed(
                    ErrorCode::General,
                    format!("Resolved variant {name} not in variants config."),
                    &flag.metadata,
                ),
                Some((name, value)) => Evaluation {
                    value: Some(value),
                    variant: Some(name),
                    reason: Reason::TargetingMatch,
                    error: None,
                    metadata: &flag.metadata,
                },
            },
            Outcome::Invalid(why) => Evaluation::failed(ErrorCode::ParseError, why, &flag.metadata),
            Outcome::Failed(why) => Evaluation::failed(ErrorCode::General, why, &flag.metadata),
        }
    }
}

/// The default variant with `reason`; none: no value and `DEFAULT`; one that is no variant:
/// `GENERAL`.
fn default_variant(flag: &Flag, reason: Reason) -> Evaluation<'_> {
    let Some(name) = flag.default_variant.as_deref() else {
        return Evaluation {
            value: None,
            variant: None,
            reason: Reason::Default,
            error: None,
            metadata: &flag.metadata,
        };
    };
    match flag.variants.get_key_value(name) {
        Some((name, value)) => Evaluation {
            value: Some(value),
            variant: Some(name),
            reason,
            error: None,
            metadata: &flag.metadata,
        },
        None => Evaluation::failed(
            ErrorCode::General,
            format!("Resolved variant {name} not in variants config."),
            &flag.metadata,
        ),
    }
}
