//! The target-by-target verdicts printed after the tables.

#[allow(
    unused_imports,
    reason = "the driver's common imports, of which each file uses a part"
)]
use super::*;

pub(crate) fn verdicts(cells: &[Cell], mem: &Value, allocs: &Value) -> Vec<Value> {
    let mut v = Vec::new();
    let mut add = |target: &str, result: String, met: Option<bool>| {
        v.push(json!({"target": target, "result": result, "met": met}));
    };
    let find = |doc: &str, ep: &str, c: usize| {
        cells
            .iter()
            .find(|x| x.doc == doc && x.endpoint == ep && x.conc == c)
    };
    let ratio_target = |eps: &[&str], docs: &[&str], min: f64| -> Option<(String, bool)> {
        let sel: Vec<&Cell> = cells
            .iter()
            .filter(|c| eps.contains(&c.endpoint) && docs.contains(&c.doc.as_str()))
            .collect();
        if sel.is_empty() {
            return None;
        }
        let worst = sel
            .iter()
            .min_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap())
            .unwrap();
        let best = sel
            .iter()
            .max_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap())
            .unwrap();
        Some((
            format!(
                "{:.0}–{:.0} % (worst: {} {} c={})",
                worst.ratio() * 100.0,
                best.ratio() * 100.0,
                worst.doc,
                worst.endpoint,
                worst.conc
            ),
            worst.ratio() >= min,
        ))
    };
    let docs_all = ["tiny", "small", "medium"];
    if let Some((r, m)) = ratio_target(&["flags"], &docs_all, 0.9) {
        add("/flags ≥ 90 % of the limit", r, Some(m));
    }
    if let Some((r, m)) = ratio_target(
        &["document", "document_gzip", "document_zstd"],
        &docs_all,
        0.9,
    ) {
        add("/environment-document ≥ 90 % of the limit", r, Some(m));
    }
    // Compression: encoded RPS ≥ 5× plain RPS (Flagpole), per document at the highest concurrency.
    for doc in docs_all {
        let cs: Vec<usize> = cells
            .iter()
            .filter(|c| c.doc == doc && c.endpoint == "document")
            .map(|c| c.conc)
            .collect();
        let parts: Vec<(String, bool)> = cs
            .iter()
            .filter_map(|&c| {
                let plain = find(doc, "document", c)?.flagpole.rps;
                let g = find(doc, "document_gzip", c)?.flagpole.rps / plain;
                let z = find(doc, "document_zstd", c)?.flagpole.rps / plain;
                Some((
                    format!("c={c}: gzip {g:.1}×, zstd {z:.1}×"),
                    g >= 5.0 && z >= 5.0,
                ))
            })
            .collect();
        if let Some((result, met)) = all_parts(&parts) {
            add(
                &format!("{doc}: env document compressed ≥ 5× uncompressed RPS"),
                result,
                met,
            );
        }
    }
    for doc in docs_all {
        let parts: Vec<(String, bool)> = ["document", "document_gzip", "document_zstd"]
            .iter()
            .filter_map(|ep| {
                let c = find(doc, ep, 500)?;
                let r = c.flagpole.p99_ms / c.flagpole.p50_ms.max(1e-6);
                Some((
                    format!(
                        "{ep}: p99/p50 {r:.1}× ({} / {} ms)",
                        ms(c.flagpole.p99_ms),
                        ms(c.flagpole.p50_ms)
                    ),
                    r <= 10.0,
                ))
            })
            .collect();
        if let Some((result, met)) = all_parts(&parts) {
            add(
                &format!("{doc}: env document p99 ≤ 10× p50 at c=500"),
                result,
                met,
            );
        }
    }
    for (doc, min) in [("small", 0.5), ("medium", 0.35)] {
        if let Some((r, m)) = ratio_target(&["identities_get", "identities_post"], &[doc], min) {
            add(
                &format!(
                    "{doc}: /identities GET+POST ≥ {:.0} % of the limit",
                    min * 100.0
                ),
                r,
                Some(m),
            );
        }
    }
    if let Some(a) = allocs.as_object().filter(|a| !a.is_empty()) {
        let worst_get = a
            .values()
            .filter_map(|x| x["get_allocs_per_request"].as_f64())
            .fold(0.0, f64::max);
        let worst_post = a
            .values()
            .filter_map(|x| x["post_allocs_per_request"].as_f64())
            .fold(0.0, f64::max);
        let bytes = a
            .iter()
            .map(|(k, x)| {
                format!(
                    "{k} {:.0} B",
                    x["post_bytes_per_request"].as_f64().unwrap_or(0.0)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        add(
            "≤ 10 heap allocations per /identities request outside the HTTP stack",
            format!("GET {worst_get:.0}, POST {worst_post:.0} (allocated per POST: {bytes})"),
            Some(worst_get <= 10.0 && worst_post <= 10.0),
        );
    }
    if let Some(m) = mem.get("medium") {
        let med = m["update_to_served_median_ms"].as_f64().unwrap_or(0.0);
        let max = m["update_to_served_max_ms"].as_f64().unwrap_or(0.0);
        let build_med = m["build_median_ms"].as_f64().unwrap_or(0.0);
        let build_max = m["build_max_ms"].as_f64().unwrap_or(f64::INFINITY);
        add(
            "medium update compiled and swapped in < 300 ms",
            format!("received → swapped in (server's build_ms): median {build_med:.0} ms, max {build_max:.0} ms; file write → served by /flags: median {med:.0} ms, max {max:.0} ms (includes reading the file and the watcher's 150 ms settle delay)"),
            Some(build_max < 300.0),
        );
        let ratio = m["rss_over_document"].as_f64().unwrap_or(0.0);
        add(
            "RSS ≤ 3× document size with medium loaded",
            format!(
                "{:.1} MiB = {ratio:.2}×",
                m["rss_loaded_kib"].as_f64().unwrap_or(0.0) / 1024.0
            ),
            Some(ratio <= 3.0),
        );
        let series: Vec<f64> = m["rss_after_each_update_kib"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if let (Some(first), Some(last)) = (series.first(), series.last()) {
            let max = series.iter().cloned().fold(0.0, f64::max);
            add(
                "RSS flat across 20 document updates",
                format!(
                    "after update 1: {:.0} MiB, after 20: {:.0} MiB, max {:.0} MiB",
                    first / 1024.0,
                    last / 1024.0,
                    max / 1024.0
                ),
                Some(*last <= first * 1.10),
            );
        }
    }
    if let Some(b) = mem
        .get("identity_p99_update_burst")
        .and_then(Value::as_object)
    {
        for (doc, x) in b {
            let r = x["p99_ratio"].as_f64().unwrap_or(0.0);
            add(
                &format!("{doc}: identity p99 during an update burst ≤ 2× without"),
                format!(
                    "{r:.1}× ({} ms vs {} / {} ms)",
                    ms(x["burst"]["p99_ms"].as_f64().unwrap_or(0.0)),
                    ms(x["quiet_before"]["p99_ms"].as_f64().unwrap_or(0.0)),
                    ms(x["quiet_after"]["p99_ms"].as_f64().unwrap_or(0.0))
                ),
                Some(r <= 2.0),
            );
        }
    }
    if let Some(t) = mem.get("idle_rss_tiny_kib") {
        let rss = t["rss_kib"].as_f64().unwrap_or(0.0) / 1024.0;
        add(
            "idle RSS ≤ 10 MiB with the tiny document",
            format!("{rss:.1} MiB"),
            Some(rss <= 10.0),
        );
    }
    v
}

// ---------------------------------------------------------------------------------------------

/// A target judged on several cells: the parts' texts, met when every part is; `None` when
/// no cell ran.
fn all_parts(parts: &[(String, bool)]) -> Option<(String, Option<bool>)> {
    if parts.is_empty() {
        return None;
    }
    let texts: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
    Some((texts.join("; "), Some(parts.iter().all(|p| p.1))))
}
