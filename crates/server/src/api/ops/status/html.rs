//! The status page as HTML: one self-contained document (inline CSS, no script, nothing loaded),
//! every value HTML-escaped. Cells carry `data-field` (and rows `data-environment`) so that tools
//! and tests can find a value without depending on the layout.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::report::Report;
use crate::telemetry::environments::EnvFacts;

const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1d2330;--muted:#667085;\
--line:#e4e7ec;--ok:#067647;--okbg:#dcfae6;--bad:#b42318;--badbg:#fee4e2;--wait:#93370d;\
--waitbg:#fef0c7}\
@media (prefers-color-scheme:dark){:root{--bg:#0f1218;--card:#171b24;--fg:#e6e9ef;\
--muted:#98a2b3;--line:#2a3040;--okbg:#053321;--ok:#75e0a7;--badbg:#55160c;--bad:#fda29b;\
--waitbg:#4e1d09;--wait:#fec84b}}\
*{box-sizing:border-box}\
body{margin:0;padding:24px;background:var(--bg);color:var(--fg);\
font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}\
header{display:flex;align-items:baseline;gap:12px;margin-bottom:16px}\
h1{font-size:22px;margin:0}\
.muted{color:var(--muted)}\
dl.summary{display:flex;flex-wrap:wrap;gap:12px;margin:0 0 20px}\
dl.summary div{background:var(--card);border:1px solid var(--line);border-radius:8px;\
padding:10px 14px;min-width:150px}\
dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}\
dd{margin:2px 0 0;font-size:18px;font-weight:600}\
.table{background:var(--card);border:1px solid var(--line);border-radius:8px;overflow-x:auto}\
table{border-collapse:collapse;width:100%}\
th,td{text-align:left;padding:8px 12px;border-bottom:1px solid var(--line);vertical-align:top}\
th{font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase;\
letter-spacing:.04em;white-space:nowrap}\
tr:last-child td{border-bottom:0}\
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600}\
.ok{background:var(--okbg);color:var(--ok)}.failing{background:var(--badbg);color:var(--bad)}\
.loading,.stale{background:var(--waitbg);color:var(--wait)}\
.error{color:var(--bad);max-width:360px;overflow-wrap:anywhere}\
ul.requests{list-style:none;margin:0;padding:0;white-space:nowrap}\
footer{margin-top:16px;font-size:12px}";

/// `& < > " '` as entities.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `2024-06-01 12:00:00 UTC`.
pub(super) fn when(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

/// `4.2 s`, `3 min 5 s`, `2 h 3 min`, `1 d 2 h`.
pub(super) fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 60.0 {
        return format!("{s:.1} s");
    }
    let whole = s as u64;
    let (d, h, m, sec) = (
        whole / 86_400,
        whole / 3600 % 24,
        whole / 60 % 60,
        whole % 60,
    );
    match (d, h) {
        (0, 0) => format!("{m} min {sec} s"),
        (0, h) => format!("{h} h {m} min"),
        (d, h) => format!("{d} d {h} h"),
    }
}

/// `12,345`.
pub(super) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A resource as the page names it (short; `data-resource` carries the real name).
pub(super) fn shown_resource(resource: crate::usage::Resource) -> &'static str {
    match resource {
        crate::usage::Resource::EnvironmentDocument => "document",
        other => other.name(),
    }
}

fn cell(out: &mut String, field: &str, class: &str, html: &str) {
    let _ = write!(out, "<td data-field=\"{field}\"");
    if !class.is_empty() {
        let _ = write!(out, " class=\"{class}\"");
    }
    let _ = write!(out, ">{html}</td>");
}

fn row(out: &mut String, e: &EnvFacts) {
    let (state, label) = match (&e.document, &e.last_error) {
        (_, Some(_)) => ("failing", "failing"),
        (None, None) => ("loading", "not loaded"),
        (Some(_), None) => ("ok", "ok"),
    };
    let _ = write!(out, "<tr data-environment=\"{}\">", escape(&e.fingerprint));
    cell(
        out,
        "environment",
        "",
        &format!("<code>{}</code>", escape(&e.fingerprint)),
    );
    let mut badges = format!("<span class=\"badge {state}\">{label}</span>");
    if e.stale {
        // Older than the grace period allows: OpenFeature answers say STALE meanwhile.
        badges.push_str(
            " <span class=\"badge stale\" data-field=\"stale\" title=\"older than the grace \
             period allows: OpenFeature answers say STALE\">stale</span>",
        );
    }
    cell(out, "state", "", &badges);
    cell(out, "source", "", &escape(e.source));
    let dash = "<span class=\"muted\">—</span>";
    match &e.document {
        Some((revision, content, bytes, _)) => {
            cell(out, "revision", "num", &revision.to_string());
            // The first 12 hex digits (all of it on hover): enough to compare replicas.
            let short: String = content.chars().take(12).collect();
            let html = format!(
                "<code title=\"{}\">{}</code>",
                escape(content),
                escape(&short)
            );
            cell(out, "content_revision", "", &html);
            cell(
                out,
                "document_bytes",
                "num",
                &format!("{} B", grouped(*bytes as u64)),
            );
        }
        None => {
            for (field, class) in [
                ("revision", "num"),
                ("content_revision", ""),
                ("document_bytes", "num"),
            ] {
                cell(out, field, class, dash);
            }
        }
    }
    match e.last_success {
        Some(at) => cell(out, "last_success", "", &escape(&when(at))),
        None => cell(out, "last_success", "", "never"),
    }
    match e.age_seconds {
        Some(age) => cell(out, "age", "num", &escape(&duration(age))),
        None => cell(out, "age", "num", dash),
    }
    let mut requests = String::from("<ul class=\"requests\">");
    for (resource, n) in &e.requests {
        let _ = write!(
            requests,
            "<li data-resource=\"{}\"><span class=\"muted\">{}</span> {}</li>",
            escape(resource.name()),
            escape(shown_resource(*resource)),
            grouped(*n)
        );
    }
    requests.push_str("</ul>");
    cell(out, "requests", "", &requests);
    cell(out, "rejected", "num", &grouped(e.rejected));
    cell(out, "streams", "num", &e.streams.to_string());
    match &e.last_error {
        Some(error) => cell(out, "last_error", "error", &escape(error)),
        None => cell(out, "last_error", "", dash),
    }
    out.push_str("</tr>\n");
}

/// The whole page.
pub(super) fn page(report: &Report) -> String {
    let mut out = String::with_capacity(8192);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"30\">\
         <title>Flagpole status</title><style>{STYLE}</style></head><body>\n\
         <header><h1>Flagpole</h1><span class=\"muted\">version \
         <span data-field=\"version\">{}</span></span></header>\n<dl class=\"summary\">",
        escape(report.version)
    );
    let failing = report.summary.failing;
    let summary = [
        ("uptime", "Uptime", duration(report.uptime_seconds)),
        ("started_at", "Started", when(report.started_at)),
        (
            "environment_count",
            "Environments",
            report.summary.environments.to_string(),
        ),
        (
            "loaded_count",
            "Loaded",
            format!(
                "{}/{} environments loaded",
                report.summary.loaded, report.summary.environments
            ),
        ),
        ("failing_count", "Failing updates", failing.to_string()),
        (
            "open_streams",
            "Open streams",
            report.open_streams.to_string(),
        ),
        (
            "unrecognised_keys",
            "Unknown or missing keys",
            grouped(report.unrecognised_keys),
        ),
    ];
    for (field, title, value) in summary {
        let _ = write!(
            out,
            "<div><dt>{title}</dt><dd data-field=\"{field}\">{}</dd></div>",
            escape(&value)
        );
    }
    out.push_str(
        "</dl>\n<div class=\"table\"><table><thead><tr><th>Environment</th><th>State</th>\
         <th>Source</th><th>Revision</th><th>Content revision</th><th>Document</th>\
         <th>Last success</th><th>Age</th><th>Served</th><th>Refused (4xx)</th><th>Streams</th>\
         <th>Last error</th>\
         </tr></thead><tbody>\n",
    );
    for e in &report.environments {
        row(&mut out, e);
    }
    if report.environments.is_empty() {
        out.push_str("<tr><td colspan=\"11\" class=\"muted\">no environments</td></tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if report.pages > 1 {
        pagination(&mut out, report.page, report.pages);
    }
    fleet(&mut out, report);
    flag_sources(&mut out, report);
    unleash_feeds(&mut out, report);
    analytics(&mut out, report);
    let generated = report
        .now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let _ = write!(
        out,
        "<footer class=\"muted\">Generated <span data-field=\"generated_at\" \
         data-unix=\"{generated}\">{}</span>; refreshes every 30 s. Environments are shown by key \
         fingerprint. JSON: <code>?format=json</code>.</footer>\n</body></html>\n",
        escape(&when(report.now))
    );
    out
}

/// The fleet's shared store, when this replica is in a fleet.
fn fleet(out: &mut String, report: &Report) {
    let Some(f) = &report.fleet else {
        return;
    };
    let reachable = if f.store_reachable {
        "reachable"
    } else {
        "not answering: polling upstream on its own"
    };
    let figures = [
        ("store_reachable", "Store", reachable.to_owned()),
        ("replicas", "Replicas", f.replicas.to_string()),
        ("leases_held", "Leases held", f.leases_held.to_string()),
        (
            "documents_from_store",
            "Documents from the store",
            grouped(f.documents_from_store),
        ),
        (
            "documents_from_upstream",
            "Documents from upstream",
            grouped(f.documents_from_upstream),
        ),
        (
            "upstream_fetches_saved",
            "Upstream fetches saved",
            grouped(f.upstream_fetches_saved),
        ),
        (
            "store_values_refused",
            "Store values refused",
            grouped(f.store_values_refused),
        ),
    ];
    out.push_str("<h2>Fleet</h2>\n<dl class=\"summary\" data-section=\"fleet\">");
    for (field, title, value) in figures {
        let _ = write!(
            out,
            "<div><dt>{title}</dt><dd data-field=\"fleet_{field}\">{}</dd></div>",
            escape(&value)
        );
    }
    out.push_str("</dl>\n");
}

/// The flagd flag sources, when any is configured.
fn flag_sources(out: &mut String, report: &Report) {
    if report.flag_sources.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Flag sources</h2>\n<div class=\"table\"><table \
         data-section=\"flag_sources\"><thead><tr><th>Source</th><th>Kind</th><th>Flags</th>\
         <th>Updated</th><th>Stale</th><th>Refused</th><th>Last error</th></tr></thead><tbody>\n",
    );
    for f in &report.flag_sources {
        let updated = f.updated_at_ms.map_or_else(
            || "not loaded".to_owned(),
            |ms| when(UNIX_EPOCH + Duration::from_millis(ms)),
        );
        out.push_str("<tr>");
        cell(
            out,
            "flag_source",
            "",
            &format!("<code>{}</code>", escape(&f.uri)),
        );
        cell(out, "flag_source_kind", "", f.kind);
        cell(out, "flag_source_flags", "num", &grouped(f.flags as u64));
        cell(out, "flag_source_updated", "", &escape(&updated));
        cell(
            out,
            "flag_source_stale",
            "",
            if f.stale { "stale" } else { "" },
        );
        cell(out, "flag_source_refused", "num", &grouped(f.refused));
        let error = f.last_error.as_deref().unwrap_or("");
        cell(out, "flag_source_last_error", "error", &escape(error));
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The Unleash feeds, when Unleash toggles are served.
fn unleash_feeds(out: &mut String, report: &Report) {
    if report.unleash.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Unleash feeds</h2>\n<div class=\"table\"><table \
         data-section=\"unleash_feeds\"><thead><tr><th>Feed</th><th>Source</th><th>Toggles</th>\
         <th>Updated</th><th>Stale</th><th>Refused</th><th>Last error</th></tr></thead><tbody>\n",
    );
    for f in &report.unleash {
        let updated = f
            .last_success
            .map_or_else(|| "not fetched".to_owned(), when);
        out.push_str("<tr>");
        cell(
            out,
            "unleash_feed",
            "",
            &format!("<code>{}</code>", escape(&f.name)),
        );
        cell(
            out,
            "unleash_feed_source",
            "",
            if f.polled { "upstream" } else { "files" },
        );
        cell(
            out,
            "unleash_feed_toggles",
            "num",
            &grouped(f.toggles as u64),
        );
        cell(out, "unleash_feed_updated", "", &escape(&updated));
        cell(
            out,
            "unleash_feed_stale",
            "",
            if f.stale { "stale" } else { "" },
        );
        cell(out, "unleash_feed_refused", "num", &grouped(f.refused));
        let error = f.last_error.as_deref().unwrap_or("");
        cell(out, "unleash_feed_last_error", "error", &escape(error));
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The flag analytics table, when any environment has reported.
fn analytics(out: &mut String, report: &Report) {
    if report.analytics.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Flag analytics</h2>\n<div class=\"table\"><table \
         data-section=\"analytics\"><thead><tr><th>Environment</th><th>Received</th>\
         <th>Forwarded</th><th>Pending</th><th>Dropped</th><th>Failed posts</th>\
         <th>Last flush</th></tr></thead><tbody>\n",
    );
    for a in &report.analytics {
        let last = a.last_flush.map_or_else(
            || "never".to_owned(),
            |f| {
                format!(
                    "{} ({}, {} evaluations)",
                    when(f.at),
                    f.outcome.name(),
                    grouped(f.events)
                )
            },
        );
        out.push_str("<tr>");
        cell(
            out,
            "environment",
            "",
            &format!("<code>{}</code>", escape(&a.fingerprint)),
        );
        cell(out, "analytics_received", "num", &grouped(a.received));
        cell(out, "analytics_forwarded", "num", &grouped(a.forwarded));
        cell(out, "analytics_pending", "num", &grouped(a.pending));
        cell(out, "analytics_dropped", "num", &grouped(a.dropped));
        cell(out, "analytics_failed", "num", &grouped(a.failed_requests));
        cell(out, "analytics_last_flush", "", &escape(&last));
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// Links to the other pages of environments (100 a page, by fingerprint).
fn pagination(out: &mut String, page: usize, pages: usize) {
    let _ = write!(
        out,
        "<nav class=\"muted\" data-field=\"pages\">Environments page {page} of {pages}:"
    );
    for n in 1..=pages {
        if n == page {
            let _ = write!(out, " <strong>{n}</strong>");
        } else {
            let _ = write!(out, " <a href=\"?page={n}\">{n}</a>");
        }
    }
    out.push_str("</nav>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(duration(4.24), "4.2 s");
        assert_eq!(duration(185.0), "3 min 5 s");
        assert_eq!(duration(7380.0), "2 h 3 min");
        assert_eq!(duration(93_600.0), "1 d 2 h");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1234), "1,234");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
