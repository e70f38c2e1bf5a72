//! One flag evaluated for one context, as flagd evaluates it: state, targeting, default
//! variant, and the reason and error code flagd gives.

use serde_json::{Map, Value};

use crate::definition::{FlagSet, State};

/// What a caller evaluates against: the OpenFeature evaluation context (`targetingKey` and
/// the rest, as flagd receives it) and the time `$flagd.timestamp` reads (Unix seconds).
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub attributes: &'a Map<String, Value>,
    pub now_unix_secs: u64,
}

impl<'a> Context<'a> {
    pub fn new(attributes: &'a Map<String, Value>, now_unix_secs: u64) -> Context<'a> {
        Context {
            attributes,
            now_unix_secs,
        }
    }
}

/// The OpenFeature reasons flagd gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No targeting rule: no context can change the answer.
    Static,
    /// The targeting rule named a variant.
    TargetingMatch,
    /// The rule named none (or there is none and no default variant): the default variant.
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

impl FlagSet {
    /// Evaluates the flag `key` for `context`.
    pub fn evaluate<'a>(&'a self, key: &str, context: &Context<'_>) -> Evaluation<'a> {
        let Some(flag) = self.flags.get(key) else {
            return Evaluation {
                value: None,
                variant: None,
                reason: Reason::Error,
                error: Some((ErrorCode::FlagNotFound, format!("flag: {key} not found"))),
                metadata: &self.metadata,
            };
        };
        let _ = context;
        if flag.state == State::Disabled {
            return Evaluation {
                value: None,
                variant: None,
                reason: Reason::Disabled,
                error: None,
                metadata: &flag.metadata,
            };
        }
        // Targeting is not compiled yet: every flag answers its default variant.
        let reason = if flag.targeting.is_none() {
            Reason::Static
        } else {
            Reason::Default
        };
        let (variant, value) = match flag.default_variant.as_deref() {
            Some(name) => match flag.variants.get_key_value(name) {
                Some((name, value)) => (Some(name.as_str()), Some(value)),
                None => (None, None),
            },
            None => (None, None),
        };
        Evaluation {
            value,
            variant,
            reason: if variant.is_none() {
                Reason::Default
            } else {
                reason
            },
            error: None,
            metadata: &flag.metadata,
        }
    }
}
