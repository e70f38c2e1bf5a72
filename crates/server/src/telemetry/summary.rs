//! Totals over all environments, for `/metrics` and the status page: a fixed handful of series
//! whatever the number of environments, so a deployment of thousands that turns the
//! per-environment families off (`flagpole.metrics.per_environment: false`) still sees how many
//! are loaded, failing or stale, and what they serve.

use std::fmt::Write as _;

use super::environments::EnvFacts;
use crate::usage::Resource;

/// What the environments add up to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub environments: usize,
    /// With a document to serve.
    pub loaded: usize,
    /// Whose last update failed (serving their last good document, if any).
    pub failing: usize,
    /// The largest time since a successful update, in seconds.
    pub oldest_age_seconds: Option<f64>,
    /// Document bytes served, all environments.
    pub document_bytes: u64,
    /// Requests served per resource, all environments.
    pub requests: [(Resource, u64); 3],
    pub streams: usize,
}

impl Summary {
    pub(crate) fn of(facts: &[EnvFacts]) -> Summary {
        let mut sum = Summary {
            environments: facts.len(),
            loaded: 0,
            failing: 0,
            oldest_age_seconds: None,
            document_bytes: 0,
            requests: Resource::ALL.map(|r| (r, 0)),
            streams: 0,
        };
        for env in facts {
            if let Some(document) = &env.document {
                sum.loaded += 1;
                sum.document_bytes += document.2 as u64;
            }
            sum.failing += usize::from(env.last_error.is_some());
            if let Some(age) = env.age_seconds {
                sum.oldest_age_seconds = Some(sum.oldest_age_seconds.map_or(age, |o| o.max(age)));
            }
            for (total, (_, n)) in sum.requests.iter_mut().zip(env.requests.iter()) {
                total.1 += n;
            }
            sum.streams += env.streams;
        }
        sum
    }
}

/// Appends the totals as Prometheus families.
pub(crate) fn render(out: &mut String, facts: &[EnvFacts]) {
    let sum = Summary::of(facts);
    let mut gauge = |name: &str, help: &str, value: f64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
        );
    };
    gauge(
        "flagpole_environments",
        "Environments served.",
        sum.environments as f64,
    );
    gauge(
        "flagpole_environments_loaded",
        "Environments with a document to serve.",
        sum.loaded as f64,
    );
    gauge(
        "flagpole_environments_update_failed",
        "Environments whose last update failed.",
        sum.failing as f64,
    );
    if let Some(age) = sum.oldest_age_seconds {
        gauge(
            "flagpole_environments_oldest_document_age_seconds",
            "The longest time since an environment's last successful update.",
            age,
        );
    }
    let _ = writeln!(
        out,
        "# HELP flagpole_environments_requests_total Requests served, all environments, per resource.\n\
         # TYPE flagpole_environments_requests_total counter"
    );
    for (resource, n) in sum.requests {
        let _ = writeln!(
            out,
            "flagpole_environments_requests_total{{resource=\"{}\"}} {n}",
            resource.name()
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(loaded: bool, failing: bool, age: f64, served: u64) -> EnvFacts {
        EnvFacts {
            fingerprint: "abc…00000000".into(),
            source: "file",
            document: loaded.then(|| (1, "rev".into(), 100, 0)),
            last_success: None,
            age_seconds: Some(age),
            last_error: failing.then(|| "boom".into()),
            stale: false,
            requests: Resource::ALL.map(|r| (r, served)),
            rejected: 0,
            streams: 1,
        }
    }

    #[test]
    fn totals_add_up() {
        let facts = [env(true, false, 3.0, 2), env(false, true, 9.0, 5)];
        let sum = Summary::of(&facts);
        assert_eq!((sum.environments, sum.loaded, sum.failing), (2, 1, 1));
        assert_eq!(sum.oldest_age_seconds, Some(9.0));
        assert_eq!(sum.document_bytes, 100);
        assert_eq!(sum.requests[0].1, 7);
        let mut out = String::new();
        render(&mut out, &facts);
        assert!(out.contains("flagpole_environments 2\n"), "{out}");
        assert!(out.contains("flagpole_environments_loaded 1\n"), "{out}");
        assert!(
            out.contains("flagpole_environments_requests_total{resource=\"flags\"} 7\n"),
            "{out}"
        );
    }
}
