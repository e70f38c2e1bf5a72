//! The per-environment metric families and the open-stream count, written as Prometheus text
//! when scraped, straight from the store. Environments are labelled with the key fingerprint
//! (`crate::keys::fingerprint`), never the key.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::unix_seconds;
use crate::store::{EnvSlot, Source};
use crate::usage::Resource;

/// What the metrics and the status page say about one environment, read once.
pub(crate) struct EnvFacts {
    pub fingerprint: String,
    pub source: &'static str,
    /// `(revision, content revision, document bytes, document updated_at in Unix ms)` once a
    /// document is loaded.
    pub document: Option<(u64, String, usize, u64)>,
    pub last_success: Option<SystemTime>,
    /// Seconds since the last successful update.
    pub age_seconds: Option<f64>,
    pub last_error: Option<String>,
    /// OpenFeature answers say `STALE` (`store/staleness.rs`).
    pub stale: bool,
    pub requests: [(Resource, u64); 3],
    /// Requests with this environment's key refused with a 4xx.
    pub rejected: u64,
    /// Open change streams on this environment (OFREP and Flagsmith real-time; a request
    /// waiting up to `ofrep.freshness_wait_ms` for a newer revision counts while it waits).
    pub streams: usize,
}

impl EnvFacts {
    pub(crate) fn of(env: &EnvSlot, now: SystemTime) -> EnvFacts {
        let document = env.snapshot().map(|s| {
            (
                s.revision,
                s.content_revision.clone(),
                s.document.len(),
                s.updated_at_ms,
            )
        });
        let last_success = env.last_success();
        EnvFacts {
            fingerprint: crate::keys::fingerprint(&env.client_key),
            source: source_name(&env.source),
            document,
            last_success,
            age_seconds: last_success
                .map(|at| now.duration_since(at).unwrap_or_default().as_secs_f64()),
            last_error: env.last_error(),
            stale: env.is_stale(),
            requests: Resource::ALL.map(|r| (r, env.usage.served(r))),
            rejected: env.usage.rejected(),
            streams: env.revisions.receiver_count(),
        }
    }
}

/// `upstream`, `file` or `example`.
pub(crate) fn source_name(source: &Source) -> &'static str {
    match source {
        Source::Upstream { .. } => "upstream",
        Source::File(_) => "file",
        Source::Embedded => "example",
    }
}

/// One family: HELP, TYPE, then one sample per environment that has a value.
fn family<'a>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    facts: &'a [EnvFacts],
    sample: impl Fn(&'a EnvFacts) -> Vec<(Vec<(&'static str, &'a str)>, f64)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for env in facts {
        for (extra, value) in sample(env) {
            out.push_str(name);
            out.push_str("{environment=\"");
            escape_label(out, &env.fingerprint);
            out.push('"');
            for (label, text) in extra {
                let _ = write!(out, ",{label}=\"");
                escape_label(out, text);
                out.push('"');
            }
            let _ = writeln!(out, "}} {value}");
        }
    }
    out.push('\n');
}

/// A label value as the text format wants it: `\`, `"` and newlines escaped.
fn escape_label(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn one<'a>(value: f64) -> Vec<(Vec<(&'static str, &'a str)>, f64)> {
    vec![(Vec::new(), value)]
}

fn bool_value(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Appends `flagpole_sse_connections` alone (the per-environment families turned off).
pub(crate) fn render_connections(out: &mut String, open_streams: usize) {
    let _ = writeln!(
        out,
        "# HELP flagpole_sse_connections Open change-stream connections (OFREP and Flagsmith real-time).\n\
         # TYPE flagpole_sse_connections gauge\nflagpole_sse_connections {open_streams}\n"
    );
}

/// Appends the per-environment families and `flagpole_sse_connections`.
pub(crate) fn render(out: &mut String, facts: &[EnvFacts], open_streams: usize) {
    render_connections(out, open_streams);
    family(
        out,
        "flagpole_environment_loaded",
        "gauge",
        "1 when the environment has a document to serve.",
        facts,
        |e| vec![(vec![("source", e.source)], bool_value(e.document.is_some()))],
    );
    family(
        out,
        "flagpole_environment_info",
        "gauge",
        "Always 1: the environment's source and the content revision of its document.",
        facts,
        |e| match &e.document {
            Some((_, content, ..)) => {
                vec![(
                    vec![("source", e.source), ("content_revision", content.as_str())],
                    1.0,
                )]
            }
            None => Vec::new(),
        },
    );
    family(
        out,
        "flagpole_environment_revision",
        "gauge",
        "Revision of the served document (starts at 1, increments when its content changes).",
        facts,
        |e| {
            e.document
                .as_ref()
                .map_or_else(Vec::new, |d| one(d.0 as f64))
        },
    );
    family(
        out,
        "flagpole_environment_document_bytes",
        "gauge",
        "Size of the served environment document as received, in bytes.",
        facts,
        |e| {
            e.document
                .as_ref()
                .map_or_else(Vec::new, |d| one(d.2 as f64))
        },
    );
    family(
        out,
        "flagpole_environment_document_updated_timestamp_seconds",
        "gauge",
        "The served document's updated_at, in Unix seconds.",
        facts,
        |e| match &e.document {
            Some(d) if d.3 > 0 => one(d.3 as f64 / 1000.0),
            _ => Vec::new(),
        },
    );
    family(out, "flagpole_environment_last_success_timestamp_seconds", "gauge",
        "When the document was last fetched or loaded successfully (a 304 counts), in Unix seconds.",
        facts, |e| e.last_success.map_or_else(Vec::new, |at| one(unix_seconds(at))));
    family(
        out,
        "flagpole_environment_document_age_seconds",
        "gauge",
        "Seconds since the last successful update (what readiness judges staleness by).",
        facts,
        |e| e.age_seconds.map_or_else(Vec::new, one),
    );
    family(
        out,
        "flagpole_environment_update_failed",
        "gauge",
        "1 when the last update attempt failed (the last good document is still served).",
        facts,
        |e| one(bool_value(e.last_error.is_some())),
    );
    family(
        out,
        "flagpole_environment_stale",
        "gauge",
        "1 while the document is stale by the readiness rule (OpenFeature answers say STALE).",
        facts,
        |e| one(bool_value(e.stale)),
    );
    family(
        out,
        "flagpole_environment_requests_total",
        "counter",
        "Requests served per environment and resource (OFREP counts as flags or identities).",
        facts,
        |e| {
            e.requests
                .iter()
                .map(|(r, n)| (vec![("resource", r.name())], *n as f64))
                .collect()
        },
    );
    family(
        out,
        "flagpole_environment_streams",
        "gauge",
        "Open change streams per environment.",
        facts,
        |e| one(e.streams as f64),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_escape_labels_and_skip_missing_values() {
        let facts = [EnvFacts {
            fingerprint: "a\"b…0000abcd".into(),
            source: "file",
            document: None,
            last_success: None,
            age_seconds: None,
            last_error: Some("boom".into()),
            stale: false,
            requests: Resource::ALL.map(|r| (r, 2)),
            rejected: 0,
            streams: 0,
        }];
        let mut out = String::new();
        render(&mut out, &facts, 3);
        assert!(out.contains("flagpole_sse_connections 3\n"), "{out}");
        assert!(out.contains(
            "flagpole_environment_loaded{environment=\"a\\\"b…0000abcd\",source=\"file\"} 0\n"
        ));
        assert!(
            out.contains("flagpole_environment_update_failed{environment=\"a\\\"b…0000abcd\"} 1\n")
        );
        assert!(
            out.contains("resource=\"environment-document\"} 2\n"),
            "{out}"
        );
        assert!(!out.contains("flagpole_environment_revision{"), "{out}");
    }
}
