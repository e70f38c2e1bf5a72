//! Change streams: N idle `GET /ofrep/v1/events` connections, the server's memory per
//! connection, and how long a document change takes to reach every one of them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

use super::*;

/// Loopback source addresses the streams are spread over (each has its own ephemeral ports).
const SOURCES: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
    Ipv4Addr::new(127, 0, 0, 3),
    Ipv4Addr::new(127, 0, 0, 4),
];
/// Connections being set up at once (below the listen backlog, so no SYN is dropped).
const CONNECTING: usize = 256;
const PREAMBLE: &[u8] = b"flagpole change stream";
const EVENT: &[u8] = b"refetchEvaluation";

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64
}

/// The live copy of `doc` at `version` (the first feature state's value carries it).
fn version_bytes(template: &Value, version: usize) -> Vec<u8> {
    let mut v = template.clone();
    v["feature_states"][0]["feature_state_value"] = json!(format!("ofrep-bench-{version:03}"));
    serde_json::to_vec(&v).unwrap()
}

fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-23T03:27:56.353377Z` → µs since the epoch.
fn parse_rfc3339_us(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    let frac: String = frac.chars().chain("000000".chars()).take(6).collect();
    let us = frac.parse::<i64>().ok()?;
    let secs = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs * 1_000_000 + us).ok()
}

/// The timestamp (µs) and `build_ms` of the server's "environment document loaded" line for
/// `revision`: logged right after the snapshot is swapped in and its event published.
fn swap_logged(log: &Path, revision: usize) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(log).ok()?;
    let want = format!("revision={revision} ");
    text.lines().map(strip_ansi).find_map(|l| {
        if !l.contains("environment document loaded") || !l.contains(&want) {
            return None;
        }
        let at = parse_rfc3339_us(l.split_whitespace().next()?)?;
        let build = l
            .split("build_ms=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Some((at, build))
    })
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn distribution(mut xs: Vec<f64>) -> Value {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    json!({
        "n": xs.len(),
        "min": round(percentile(&xs, 0.0), 1),
        "p50": round(percentile(&xs, 0.5), 1),
        "p90": round(percentile(&xs, 0.9), 1),
        "p99": round(percentile(&xs, 0.99), 1),
        "max": round(xs.last().copied().unwrap_or(f64::NAN), 1),
    })
}

/// What the streams report to the harness.
enum Report {
    Ready {
        events_at_connect: usize,
    },
    Failed(String),
    /// The `nth` event (1-based, after the preamble) on connection `id`, received at `at_us`.
    Event {
        nth: usize,
        at_us: u64,
    },
    Closed,
}

/// One stream: connect from `source`, send the GET, read the head and preamble, report ready,
/// then report each event's arrival until the server closes or the task is aborted.
async fn stream(
    source: Ipv4Addr,
    port: u16,
    request: Arc<Vec<u8>>,
    tx: mpsc::UnboundedSender<Report>,
    gate: Arc<Semaphore>,
) {
    let permit = gate.acquire_owned().await.expect("semaphore");
    let opened = async {
        let socket = tokio::net::TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
        socket
            .bind(SocketAddr::new(IpAddr::V4(source), 0))
            .map_err(|e| format!("bind: {e}"))?;
        let mut s = socket
            .connect(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(&request)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut head = Vec::with_capacity(512);
        let mut buf = vec![0u8; 1024];
        loop {
            let n = s.read(&mut buf).await.map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                let status = String::from_utf8_lossy(&head);
                let status = status.lines().next().unwrap_or("no response");
                return Err(format!("closed before the preamble ({status})"));
            }
            head.extend_from_slice(&buf[..n]);
            if contains(&head, PREAMBLE) {
                break;
            }
            if head.len() > 16 * 1024 {
                return Err("no preamble in the first 16 KiB".into());
            }
        }
        if !head.starts_with(b"HTTP/1.1 200") {
            return Err("status not 200".into());
        }
        Ok::<_, String>((s, buf, count(&head, EVENT)))
    }
    .await;
    drop(permit);
    let (mut s, mut buf, events_at_connect) = match opened {
        Ok(x) => x,
        Err(e) => {
            let _ = tx.send(Report::Failed(e));
            return;
        }
    };
    let _ = tx.send(Report::Ready { events_at_connect });
    let mut carry: Vec<u8> = Vec::with_capacity(2 * EVENT.len());
    let mut nth = 0;
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let at_us = unix_us();
        carry.extend_from_slice(&buf[..n]);
        for _ in 0..count(&carry, EVENT) {
            nth += 1;
            let _ = tx.send(Report::Event { nth, at_us });
        }
        // Keep only what could be the start of an event name cut by the read.
        let keep = carry.len().min(EVENT.len() - 1);
        carry.drain(..carry.len() - keep);
    }
    let _ = tx.send(Report::Closed);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

struct Opened {
    handles: Vec<JoinHandle<()>>,
    rx: mpsc::UnboundedReceiver<Report>,
    ready: usize,
    failed: BTreeMap<String, usize>,
    events_at_connect: usize,
    took: Duration,
}

/// Opens `n` streams; returns once each is ready or has failed (at most `limit`).
async fn open(n: usize, port: u16, uri: &str, limit: Duration) -> Opened {
    let request = Arc::new(
        format!(
            "GET {uri} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n"
        )
        .into_bytes(),
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let started = Instant::now();
    let handles: Vec<JoinHandle<()>> = (0..n)
        .map(|i| {
            tokio::spawn(stream(
                SOURCES[i % SOURCES.len()],
                port,
                request.clone(),
                tx.clone(),
                gate.clone(),
            ))
        })
        .collect();
    drop(tx);
    let (mut ready, mut failed, mut events_at_connect) = (0, BTreeMap::new(), 0);
    let deadline = tokio::time::Instant::now() + limit;
    while ready + failed.values().sum::<usize>() < n {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Report::Ready {
                events_at_connect: e,
            })) => {
                ready += 1;
                events_at_connect += e;
            }
            Ok(Some(Report::Failed(e))) => *failed.entry(e).or_insert(0) += 1,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let pending = n - ready - failed.values().sum::<usize>();
    if pending > 0 {
        failed.insert(format!("not ready after {} s", limit.as_secs()), pending);
    }
    Opened {
        handles,
        rx,
        ready,
        failed,
        events_at_connect,
        took: started.elapsed(),
    }
}

/// RSS (KiB) once it stops moving: sampled every 200 ms until three samples agree within
/// 64 KiB (at most 10 s).
async fn settled(pid: u32, field: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut recent: Vec<u64> = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        recent.push(status_kib(pid, field));
        if recent.len() >= 3 {
            let last = &recent[recent.len() - 3..];
            let (lo, hi) = (last.iter().min().unwrap(), last.iter().max().unwrap());
            if hi - lo <= 64 || Instant::now() > deadline {
                return recent[recent.len() - 1];
            }
        }
    }
}

pub(crate) fn streams(o: &Opts) -> Value {
    let doc = load_doc(&o.paths.docs_dir, &o.sse_doc);
    let template: Value = serde_json::from_slice(&std::fs::read(&doc.path).unwrap()).unwrap();
    let live_path = std::fs::canonicalize(&o.paths.work)
        .unwrap()
        .join(format!("{}-live.json", doc.name));
    write_atomic(&live_path, &version_bytes(&template, 0));
    let live = Doc {
        name: format!("{}-live", doc.name),
        path: live_path.clone(),
        bytes: doc.bytes,
        client_key: doc.client_key.clone(),
        server_key: doc.server_key.clone(),
    };
    let ofrep = json!({"sse": {"max_connections": o.conns + 1000}});
    let (p, port, log) = start_flagpole(o, "streams", &[&live], ofrep);
    let pid = p.pid();

    // The stream URL, as a provider gets it: from a bulk response's `eventStreams`.
    let first = bulk(port, &live, None);
    assert_eq!(first.status, 200, "OFREP bulk");
    let body: Value = serde_json::from_slice(&first.body).expect("bulk JSON");
    let uri = body["eventStreams"][0]["endpoint"]["requestUri"]
        .as_str()
        .expect("eventStreams[0].endpoint.requestUri")
        .to_owned();
    for _ in 0..20 {
        let _ = bulk(port, &live, None);
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let out = rt.block_on(async {
        // Warm-up: a few streams opened and closed, so that the baseline includes what any
        // first stream sets up once.
        let warm = open(64, port, &uri, Duration::from_secs(20)).await;
        for h in &warm.handles {
            h.abort();
        }
        drop(warm);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss0 = settled(pid, "VmRSS:").await;
        let anon0 = status_kib(pid, "RssAnon:");

        let mut opened = open(o.conns, port, &uri, Duration::from_secs(90)).await;
        let ready = opened.ready;
        println!(
            "\n{ready} of {} streams ready in {:.1} s{}",
            o.conns,
            opened.took.as_secs_f64(),
            if opened.failed.is_empty() {
                String::new()
            } else {
                format!("; failed: {:?}", opened.failed)
            }
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss1 = settled(pid, "VmRSS:").await;
        let anon1 = status_kib(pid, "RssAnon:");
        let per_conn = |a: u64, b: u64| (b as f64 - a as f64) * 1024.0 / ready.max(1) as f64;
        let memory = json!({
            "rss_before_kib": rss0, "rss_with_streams_kib": rss1,
            "rss_anon_before_kib": anon0, "rss_anon_with_streams_kib": anon1,
            "per_connection_bytes": round(per_conn(rss0, rss1), 0),
            "per_connection_anon_bytes": round(per_conn(anon0, anon1), 0),
            "ready": ready,
        });

        // Rounds: write version r, wait until every ready stream has its r-th event.
        let mut rounds = Vec::new();
        let (mut all_write, mut all_swap) = (Vec::new(), Vec::new());
        let mut complete = ready == o.conns;
        let mut closed = 0;
        for r in 1..=o.rounds {
            let bytes = version_bytes(&template, r);
            let t_write = unix_us();
            write_atomic(&live_path, &bytes);
            let mut arrivals: Vec<u64> = Vec::with_capacity(ready);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while arrivals.len() + closed < ready {
                match tokio::time::timeout_at(deadline, opened.rx.recv()).await {
                    Ok(Some(Report::Event { nth, at_us })) if nth == r => arrivals.push(at_us),
                    Ok(Some(Report::Closed)) => closed += 1,
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            // The swap's log line is written just after the event is published.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let swap = swap_logged(&log, r + 1);
            let ms = |t0: u64| -> Vec<f64> {
                arrivals
                    .iter()
                    .map(|&a| (a as f64 - t0 as f64) / 1000.0)
                    .collect()
            };
            let from_write = ms(t_write);
            let from_swap = swap.map(|(t, _)| ms(t)).unwrap_or_default();
            complete &= arrivals.len() == ready;
            let row = json!({
                "round": r, "received": arrivals.len(), "ready": ready, "closed": closed,
                "build_ms": swap.map(|(_, b)| b),
                "swap_after_write_ms": swap.map(|(t, _)| round((t as f64 - t_write as f64) / 1000.0, 1)),
                "from_write_ms": distribution(from_write.clone()),
                "from_swap_ms": distribution(from_swap.clone()),
            });
            all_write.extend(from_write);
            all_swap.extend(from_swap);
            rounds.push(row);
            // Let the background work of the swap (compression, freeing) finish.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let rss2 = settled(pid, "VmRSS:").await;
        for h in &opened.handles {
            h.abort();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss3 = settled(pid, "VmRSS:").await;
        json!({
            "document": doc.name,
            "stream_uri_shape": uri.split('?').next(),
            "connections": o.conns,
            "ready": ready,
            "failed": opened.failed,
            "events_at_connect": opened.events_at_connect,
            "open_s": round(opened.took.as_secs_f64(), 2),
            "memory": memory,
            "rss_after_events_kib": rss2,
            "rss_after_close_kib": rss3,
            "rounds": rounds,
            "delivery_all_rounds": {
                "complete": complete,
                "from_write_ms": distribution(all_write),
                "from_swap_ms": distribution(all_swap),
            },
        })
    });
    drop(rt);
    drop(p);

    let m = &out["memory"];
    println!(
        "\n### Change streams: {} idle `GET /ofrep/v1/events` connections ({} document)\n",
        o.conns, doc.name
    );
    println!("| ready | failed | RSS before | RSS with streams | per connection (VmRSS) | per connection (RssAnon) | RSS after the events | RSS after closing |");
    println!("|---|---|---|---|---|---|---|---|");
    let mib = |v: &Value| v.as_f64().unwrap_or(0.0) / 1024.0;
    println!(
        "| {} | {} | {:.1} MiB | {:.1} MiB | **{:.1} KiB** | {:.1} KiB | {:.1} MiB | {:.1} MiB |",
        out["ready"],
        out["failed"]
            .as_object()
            .map_or(0, |f| f.values().filter_map(Value::as_u64).sum::<u64>()),
        mib(&m["rss_before_kib"]),
        mib(&m["rss_with_streams_kib"]),
        m["per_connection_bytes"].as_f64().unwrap_or(0.0) / 1024.0,
        m["per_connection_anon_bytes"].as_f64().unwrap_or(0.0) / 1024.0,
        mib(&out["rss_after_events_kib"]),
        mib(&out["rss_after_close_kib"]),
    );
    println!("\n| round | received | build ms | swap − write ms | from write: p50 / p99 / max ms | from swap: p50 / p99 / max ms |");
    println!("|---|---|---|---|---|---|");
    let three = |d: &Value| {
        format!(
            "{} / {} / {}",
            d["p50"].as_f64().map_or("-".into(), |v| format!("{v:.0}")),
            d["p99"].as_f64().map_or("-".into(), |v| format!("{v:.0}")),
            d["max"].as_f64().map_or("-".into(), |v| format!("{v:.0}")),
        )
    };
    for r in out["rounds"].as_array().into_iter().flatten() {
        println!(
            "| {} | {} / {} | {} | {} | {} | {} |",
            r["round"],
            r["received"],
            r["ready"],
            r["build_ms"],
            r["swap_after_write_ms"],
            three(&r["from_write_ms"]),
            three(&r["from_swap_ms"]),
        );
    }
    let all = &out["delivery_all_rounds"];
    println!(
        "| all | {} | | | {} | {} |",
        all["from_write_ms"]["n"],
        three(&all["from_write_ms"]),
        three(&all["from_swap_ms"]),
    );
    out
}
