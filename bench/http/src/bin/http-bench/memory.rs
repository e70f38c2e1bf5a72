//! Memory and update measurements: idle RSS, RSS with a document loaded and across updates,
//! update-to-served latency, identity latency during an update burst.

#[allow(
    unused_imports,
    reason = "the driver's common imports, of which each file uses a part"
)]
use super::*;

pub(crate) const MARKER: &str = "__FLAGPOLE_BENCH_MARKER__";

/// A copy of `doc` whose first plain, client-visible feature value is a marker, to rewrite.
pub(crate) fn live_template(doc: &Doc) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(&doc.path).unwrap()).unwrap();
    let server_only: Vec<String> = v["project"]["server_key_only_feature_ids"]
        .as_array()
        .map(|a| a.iter().map(|x| x.to_string()).collect())
        .unwrap_or_default();
    let states = v["feature_states"].as_array_mut().expect("feature_states");
    let fs = states
        .iter_mut()
        .find(|fs| {
            fs["multivariate_feature_state_values"]
                .as_array()
                .is_none_or(|a| a.is_empty())
                && !server_only.contains(&fs["feature"]["id"].to_string())
        })
        .expect("a plain feature");
    fs["feature_state_value"] = json!(MARKER);
    serde_json::to_vec(&v).unwrap()
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

pub(crate) fn version_bytes(template: &[u8], version: usize) -> (Vec<u8>, String) {
    let value = format!("bench-update-{version:03}");
    let text = String::from_utf8_lossy(template).replacen(MARKER, &value, 1);
    (text.into_bytes(), format!("\"{value}\""))
}

/// Writes version `n` and returns the time until `/flags` serves it.
pub(crate) fn update_and_wait(
    port: u16,
    doc: &Doc,
    path: &Path,
    template: &[u8],
    n: usize,
) -> Duration {
    let (bytes, needle) = version_bytes(template, n);
    let start = Instant::now();
    write_atomic(path, &bytes);
    loop {
        if let Ok(r) = http(
            port,
            "GET",
            "/api/v1/flags/",
            &[("X-Environment-Key", &doc.client_key)],
            b"",
        ) {
            if r.status == 200 && contains(&r.body, needle.as_bytes()) {
                return start.elapsed();
            }
        }
        if start.elapsed() > Duration::from_secs(60) {
            panic!("update {n} of {} never served", doc.name);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The `build_ms` of every document the server swapped in after the first, from its log (the
/// time from receiving a document to serving it; compression follows in the background).
pub(crate) fn build_times_ms(log: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let plain = strip_ansi(line);
        if let Some(rest) = plain.split("build_ms=").nth(1) {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(ms) = digits.parse::<f64>() {
                out.push(ms);
            }
        }
    }
    // The first is the initial load, not an update.
    out.into_iter().skip(1).collect()
}

/// RSS once the process's background work is done: sampled every 200 ms until three samples
/// in a row agree within 256 KiB (at most 15 s).
pub(crate) fn settled_rss_kib(pid: u32) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut recent: Vec<u64> = Vec::new();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        recent.push(rss_kib(pid));
        if recent.len() >= 3 {
            let last = &recent[recent.len() - 3..];
            let (lo, hi) = (last.iter().min().unwrap(), last.iter().max().unwrap());
            if hi - lo <= 256 || Instant::now() > deadline {
                return recent[recent.len() - 1];
            }
        }
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A Flagpole serving a rewritable copy of `doc` (as `<name>-live.json` in the work dir).
pub(crate) fn start_live(o: &Opts, doc: &Doc, cpu: Option<usize>) -> (Proc, u16, Doc, Vec<u8>) {
    let template = live_template(doc);
    let path = std::fs::canonicalize(&o.paths.work)
        .unwrap()
        .join(format!("{}-live.json", doc.name));
    write_atomic(&path, &version_bytes(&template, 0).0);
    let live = Doc {
        name: format!("{}-live", doc.name),
        path,
        bytes: doc.bytes,
        client_key: doc.client_key.clone(),
        server_key: doc.server_key.clone(),
    };
    let (p, port) = start_flagpole(o, &live.name, &[&live], cpu, None);
    (p, port, live, template)
}

pub(crate) fn memory_and_updates(o: &Opts, docs: &[Doc]) -> Value {
    let cpu = o.pin.then_some(1);
    let by_name = |n: &str| docs.iter().find(|d| d.name == n);
    let mut out = serde_json::Map::new();

    if let Some(tiny) = by_name("tiny") {
        let (p, port) = start_flagpole(o, "idle-tiny", &[tiny], cpu, None);
        for _ in 0..20 {
            let _ = fetch(port, tiny, &endpoint("identities_get"));
            let _ = fetch(port, tiny, &endpoint("flags"));
        }
        std::thread::sleep(Duration::from_secs(1));
        let rss = rss_kib(p.pid());
        println!("\nidle RSS, tiny document: {:.1} MiB", rss as f64 / 1024.0);
        out.insert(
            "idle_rss_tiny_kib".into(),
            json!({"rss_kib": rss, "hwm_kib": status_kib(p.pid(), "VmHWM:")}),
        );
    }

    if let Some(medium) = by_name("medium") {
        let (p, port, live, template) = start_live(o, medium, cpu);
        std::thread::sleep(Duration::from_secs(1));
        let loaded = settled_rss_kib(p.pid());
        println!(
            "RSS, medium loaded: {:.1} MiB = {:.2}× the document ({:.1} MiB)",
            loaded as f64 / 1024.0,
            loaded as f64 * 1024.0 / medium.bytes as f64,
            medium.bytes as f64 / 1048576.0
        );
        let mut rss_series = Vec::new();
        let mut latencies = Vec::new();
        for n in 1..=20 {
            let t = update_and_wait(port, &live, &live.path, &template, n);
            latencies.push(t.as_secs_f64() * 1000.0);
            // The new document's compression and the release of the old snapshot follow the
            // swap in the background (a few hundred ms on medium, longer on a busy machine:
            // that work runs at low priority): sample once they are done.
            rss_series.push(settled_rss_kib(p.pid()));
        }
        std::thread::sleep(Duration::from_secs(2));
        let settled = rss_kib(p.pid());
        let builds = build_times_ms(&o.paths.work.join(format!("flagpole-{}.log", live.name)));
        let sorted_builds = {
            let mut b = builds.clone();
            b.sort_by(|a, b| a.partial_cmp(b).unwrap());
            b
        };
        if let (Some(min), Some(max)) = (sorted_builds.first(), sorted_builds.last()) {
            println!(
                "medium update compiled and swapped in (server log, build_ms): median {:.0} ms, min {min:.0} ms, max {max:.0} ms",
                median(builds.clone())
            );
        }
        let sorted = {
            let mut l = latencies.clone();
            l.sort_by(|a, b| a.partial_cmp(b).unwrap());
            l
        };
        println!(
            "medium update → served: median {:.0} ms, min {:.0} ms, max {:.0} ms (includes the file watcher's 150 ms settle delay)",
            median(latencies.clone()),
            sorted[0],
            sorted[sorted.len() - 1]
        );
        println!(
            "RSS once settled after each of 20 updates (MiB): {}; 2 s after the last: {:.1}",
            rss_series
                .iter()
                .map(|r| format!("{:.0}", *r as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(", "),
            settled as f64 / 1024.0
        );
        out.insert(
            "medium".into(),
            json!({
                "document_bytes": medium.bytes,
                "rss_loaded_kib": loaded,
                "rss_over_document": round(loaded as f64 * 1024.0 / medium.bytes as f64, 3),
                "update_to_served_ms": latencies.iter().map(|x| round(*x, 1)).collect::<Vec<_>>(),
                "update_to_served_median_ms": round(median(latencies.clone()), 1),
                "update_to_served_max_ms": round(sorted[sorted.len() - 1], 1),
                "watcher_settle_delay_ms": 150,
                "build_ms": builds,
                "build_median_ms": round(median(builds.clone()), 1),
                "build_max_ms": sorted_builds.last().copied().unwrap_or(0.0),
                "rss_after_each_update_kib": rss_series,
                "rss_2s_after_last_update_kib": settled,
                "hwm_kib": status_kib(p.pid(), "VmHWM:"),
            }),
        );
        drop(p);
    }

    // Identity p99 with and without a burst of document updates.
    let wrk = Wrk::new(o);
    let mut bursts = serde_json::Map::new();
    for name in ["small", "medium"] {
        let Some(doc) = by_name(name) else { continue };
        let (p, port, live, template) = start_live(o, doc, cpu);
        let ep = endpoint("identities_get");
        let secs = 5;
        wrk.run(port, p.pid(), &live, &ep, 64, 1);
        let quiet = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        // The burst: a rewrite every 250 ms from 0.5 s to 4.5 s into the run.
        let writer = {
            let path = live.path.clone();
            let template = template.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                let mut n = 100;
                let end = Instant::now() + Duration::from_secs(4);
                while Instant::now() < end {
                    n += 1;
                    write_atomic(&path, &version_bytes(&template, n).0);
                    std::thread::sleep(Duration::from_millis(250));
                }
                n - 100
            })
        };
        let burst = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        let writes = writer.join().unwrap();
        let quiet2 = wrk.run(port, p.pid(), &live, &ep, 64, secs);
        let base_p99 = (quiet.p99_ms + quiet2.p99_ms) / 2.0;
        println!(
            "{name}: /identities GET c=64, p99 without updates {:.2} / {:.2} ms, during {writes} rewrites {:.2} ms ({:.1}×); RPS {:.0} → {:.0}",
            quiet.p99_ms,
            quiet2.p99_ms,
            burst.p99_ms,
            burst.p99_ms / base_p99,
            (quiet.rps + quiet2.rps) / 2.0,
            burst.rps
        );
        bursts.insert(
            name.into(),
            json!({
                "quiet_before": quiet.json(), "burst": burst.json(), "quiet_after": quiet2.json(),
                "rewrites": writes, "p99_ratio": round(burst.p99_ms / base_p99, 2),
            }),
        );
        drop(p);
    }
    out.insert("identity_p99_update_burst".into(), Value::Object(bursts));
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Targets
