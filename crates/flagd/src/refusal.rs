//! Why a flag file was refused, shared by everything that reads one.

/// Why a flag file was refused: the JSON path of the offending value and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    /// `$.flags.my-flag.defaultVariant` and the like.
    pub path: String,
    pub message: String,
}

impl DefinitionError {
    pub(crate) fn at(path: impl Into<String>, message: impl Into<String>) -> DefinitionError {
        DefinitionError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for DefinitionError {}
