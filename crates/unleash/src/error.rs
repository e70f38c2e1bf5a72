//! Why a client-features body was refused: the JSON path of the first thing wrong and what is
//! wrong there, so an operator can find it in a body of thousands of toggles. One type for every
//! refusal, as the server reports them all the same way (a body refused keeps the old one).

use std::fmt;

/// A client-features body that cannot be served: not JSON, not the payload's shape, or a toggle
/// Unleash's types do not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturesError {
    path: String,
    toggle: Option<String>,
    message: String,
}

impl FeaturesError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            toggle: None,
            message: message.into(),
        }
    }

    pub(crate) fn in_toggle(mut self, name: Option<&str>) -> Self {
        self.toggle = name.map(str::to_owned);
        self
    }

    /// Where in the body: `$` for the whole body, else e.g. `$.features[3].strategies[0]`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The toggle the path is in, when the body named it.
    pub fn toggle(&self) -> Option<&str> {
        self.toggle.as_deref()
    }

    /// What is wrong at the path.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for FeaturesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.toggle {
            Some(name) => write!(f, "{} (toggle {name:?}): {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for FeaturesError {}
