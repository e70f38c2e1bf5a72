//! Errors. Two kinds, because the reference has two kinds of failure:
//! - [`InputError`]: the input does not have the shape the context schema requires (a wrong JSON
//!   type, a missing required object). Reported with the JSON path of the bad field.
//! - [`EvalError`]: the reference *raises* during evaluation (an invalid regex, a modulo by zero, a
//!   missing key that Python indexes with `[]`). The reference raises lazily, only when evaluation
//!   reaches the bad spot, so these are stored at compile time and returned only when reached.

use std::fmt;

/// Which Python exception the reference raises. The kind matters for evaluation, not just for
/// messages: a `KeyError` raised while resolving a `$.flags` dependency is swallowed by the JSONPath
/// library (the dependency reads as missing), every other kind aborts the whole evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyErrorKind {
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
    /// `re.error`: an invalid regular expression.
    RegexError,
}

/// An evaluation that the reference would abort with an exception.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    pub kind: PyErrorKind,
    pub message: String,
}

impl EvalError {
    pub fn new(kind: PyErrorKind, message: impl Into<String>) -> Self {
        EvalError {
            kind,
            message: message.into(),
        }
    }
    pub fn key(what: impl fmt::Display) -> Self {
        EvalError::new(PyErrorKind::KeyError, format!("missing key {what}"))
    }
    pub fn type_error(message: impl Into<String>) -> Self {
        EvalError::new(PyErrorKind::TypeError, message)
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for EvalError {}

/// Input that is not shaped like an evaluation context or environment document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// JSON path of the offending field, e.g. `$.segments["7"].rules[0].type`.
    pub path: String,
    pub message: String,
}

impl InputError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for InputError {}
