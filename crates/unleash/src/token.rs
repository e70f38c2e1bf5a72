//! Unleash API tokens, `project:environment.secret`: which projects and environment a token
//! sees. `*` is every project; `[a,b]` several. The secret is kept for the caller to compare
//! but never printed: `Debug` shows the scope alone.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// The projects a token (or a query) is scoped to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Projects {
    /// Every project (`*`).
    All,
    /// These projects (never empty when read from a token).
    Only(BTreeSet<String>),
}

impl Projects {
    /// Whether a toggle of `project` is in scope.
    pub fn contains(&self, project: &str) -> bool {
        match self {
            Projects::All => true,
            Projects::Only(projects) => projects.contains(project),
        }
    }

    /// The projects as a list, `["*"]` for every project (as Edge writes a body's `query`).
    pub fn to_list(&self) -> Vec<&str> {
        match self {
            Projects::All => vec!["*"],
            Projects::Only(projects) => projects.iter().map(String::as_str).collect(),
        }
    }
}

/// A token Flagpole was given, parsed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token {
    projects: Projects,
    environment: String,
    /// The token as given (trimmed): what a request must present.
    text: String,
}

/// Why a string is not an Unleash token (the message never repeats the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError(&'static str);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not an Unleash token (project:environment.secret): {}",
            self.0
        )
    }
}

impl std::error::Error for TokenError {}

impl FromStr for Token {
    type Err = TokenError;

    /// Reads `project:environment.secret`; surrounding whitespace is ignored, as Edge ignores it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (projects, rest) = text
            .split_once(':')
            .ok_or(TokenError("no `:` after the project"))?;
        let (environment, secret) = rest
            .split_once('.')
            .ok_or(TokenError("no `.` after the environment"))?;
        if environment.is_empty() {
            return Err(TokenError("no environment"));
        }
        if secret.is_empty() {
            return Err(TokenError("no secret"));
        }
        Ok(Self {
            projects: parse_projects(projects)?,
            environment: environment.to_owned(),
            text: text.to_owned(),
        })
    }
}

fn parse_projects(text: &str) -> Result<Projects, TokenError> {
    if text == "*" {
        return Ok(Projects::All);
    }
    let names: BTreeSet<String> = match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect(),
        None if text.is_empty() => return Err(TokenError("no project")),
        None => BTreeSet::from([text.to_owned()]),
    };
    if names.is_empty() {
        // Unleash's own multi-project tokens are `[]:env.secret`, their projects known only to
        // the server that issued them; offline there is nothing to scope them to.
        return Err(TokenError("`[]` names no project; list them: [a,b]"));
    }
    if names.contains("*") {
        return Ok(Projects::All);
    }
    Ok(Projects::Only(names))
}

impl Token {
    /// The projects the token sees.
    pub fn projects(&self) -> &Projects {
        &self.projects
    }

    /// The environment the token is for (`*` on an admin token).
    pub fn environment(&self) -> &str {
        &self.environment
    }

    /// Whether `presented` is this token, compared in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.text.as_bytes(), presented.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The token as given. A secret: for comparing and sending upstream, never for logs.
    pub fn secret_text(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("projects", &self.projects)
            .field("environment", &self.environment)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{Projects, Token};

    fn only(names: &[&str]) -> Projects {
        Projects::Only(names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>())
    }

    #[test]
    fn parses_the_three_shapes() {
        let all: Token = "*:development.abc123".parse().unwrap();
        assert_eq!(all.projects(), &Projects::All);
        assert_eq!(all.environment(), "development");
        let one: Token = " default:production.s.e.c ".parse().unwrap();
        assert_eq!(one.projects(), &only(&["default"]));
        assert_eq!(one.environment(), "production");
        assert!(one.matches("default:production.s.e.c"));
        assert!(!one.matches("default:production.s.e.d"));
        let many: Token = "[b, a]:dev.x".parse().unwrap();
        assert_eq!(many.projects(), &only(&["a", "b"]));
        assert_eq!(many.secret_text(), "[b, a]:dev.x");
        assert!(many.projects().contains("a") && !many.projects().contains("c"));
    }

    #[test]
    fn refuses_other_strings() {
        for text in [
            "",
            "abc",
            "p:env",
            "p:.s",
            "p:env.",
            ":env.s",
            "[]:env.s",
            "[ , ]:env.s",
        ] {
            assert!(text.parse::<Token>().is_err(), "{text:?}");
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let token: Token = "p:env.very-secret".parse().unwrap();
        assert!(!format!("{token:?}").contains("very-secret"));
        let error = "p:env".parse::<Token>().unwrap_err().to_string();
        assert!(error.contains("environment"));
    }
}
