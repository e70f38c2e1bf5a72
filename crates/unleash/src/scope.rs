//! `ClientScope`: which toggles one `/api/client/features` request may see — its token's
//! projects, and the `project` and `namePrefix` query filters the SDKs send. Equal scopes see
//! equal bodies, so the server prepares one body per distinct scope (the type is a map key).
//! Unleash's rule for `project`: a token scoped to projects is served those, whatever the
//! query asks; a token for every project is served the projects the query names, if any.

use std::collections::BTreeSet;

use crate::token::{Projects, Token};

/// The toggles one client request sees.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientScope {
    projects: Projects,
    name_prefix: Option<String>,
    environment: Option<String>,
}

impl ClientScope {
    /// Everything a token sees, before query filters.
    pub fn for_token(token: &Token) -> Self {
        Self {
            projects: token.projects().clone(),
            name_prefix: None,
            environment: Some(token.environment().to_owned()),
        }
    }

    /// Every toggle of `projects`, with no token (offline tools, tests).
    pub fn for_projects(projects: Projects) -> Self {
        Self {
            projects,
            name_prefix: None,
            environment: None,
        }
    }

    /// The query's `project` values (each `project=` pair; empty values ignored): they narrow
    /// a token for every project and are ignored for a token scoped to projects.
    pub fn with_query_projects<'a>(mut self, projects: impl IntoIterator<Item = &'a str>) -> Self {
        let asked: BTreeSet<String> = projects
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        if self.projects == Projects::All && !asked.is_empty() && !asked.contains("*") {
            self.projects = Projects::Only(asked);
        }
        self
    }

    /// The query's `namePrefix`: only toggles whose name starts with it (an empty prefix is no
    /// filter).
    pub fn with_name_prefix(mut self, prefix: Option<&str>) -> Self {
        self.name_prefix = prefix.filter(|p| !p.is_empty()).map(str::to_owned);
        self
    }

    /// The projects in scope.
    pub fn projects(&self) -> &Projects {
        &self.projects
    }

    /// The name prefix in force.
    pub fn name_prefix(&self) -> Option<&str> {
        self.name_prefix.as_deref()
    }

    /// The environment the body is for, from the token.
    pub fn environment(&self) -> Option<&str> {
        self.environment.as_deref()
    }

    /// Whether a toggle of this name and project is in scope.
    pub fn admits(&self, name: &str, project: &str) -> bool {
        self.projects.contains(project)
            && self
                .name_prefix
                .as_deref()
                .is_none_or(|prefix| name.starts_with(prefix))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::ClientScope;
    use crate::{Projects, Token};

    fn scope(token: &str) -> ClientScope {
        ClientScope::for_token(&token.parse::<Token>().unwrap())
    }

    #[test]
    fn query_projects_narrow_only_an_all_projects_token() {
        let narrowed = scope("*:dev.s").with_query_projects(["a", "", "b"]);
        let ab = Projects::Only(BTreeSet::from(["a".to_owned(), "b".to_owned()]));
        assert_eq!(narrowed.projects(), &ab);
        let fixed = scope("[a,b]:dev.s").with_query_projects(["c"]);
        assert_eq!(fixed.projects(), &ab);
        assert_eq!(
            scope("*:dev.s").with_query_projects([]).projects(),
            &Projects::All
        );
        assert_eq!(fixed.environment(), Some("dev"));
    }

    #[test]
    fn admits_by_project_and_prefix() {
        let s = scope("a:dev.s").with_name_prefix(Some("web."));
        assert!(s.admits("web.x", "a"));
        assert!(!s.admits("api.x", "a"));
        assert!(!s.admits("web.x", "b"));
        assert!(scope("*:dev.s").with_name_prefix(Some("")).admits("x", "z"));
        assert_eq!(
            scope("a:dev.s").with_name_prefix(Some("")),
            scope("a:dev.s").with_name_prefix(None)
        );
    }
}
