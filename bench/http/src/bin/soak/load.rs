//! The soak load: an open-loop driver (the wrk2 model) on a tokio runtime. Each connection
//! sends on a fixed schedule (`conns / rate` apart, staggered), one request at a time, cycling
//! through the mix; a response that comes back after the next send was due delays that send,
//! and the delay is counted in the next request's latency (measured from when it was due, so a
//! server stall is not hidden by the client waiting: no coordinated omission). Statistics are
//! kept per window and read by the sampler every interval.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The request mix, in order: each connection cycles through it.
pub(crate) const KINDS: [&str; 4] = ["flags", "identities_get", "identities_post", "ofrep_bulk"];
/// Distinct identities the mix cycles through (a large user base, not one cached caller).
const IDENTITIES: u64 = 100_000;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Plan {
    pub(crate) port: u16,
    pub(crate) client_key: String,
    pub(crate) server_key: String,
    pub(crate) rate: f64,
    pub(crate) conns: usize,
    pub(crate) threads: usize,
    pub(crate) duration: Duration,
}

/// One window's raw statistics.
#[derive(Default)]
pub(crate) struct Window {
    pub(crate) latencies_us: Vec<u32>,
    pub(crate) by_kind: [u64; 4],
    /// Responses with a status outside 2xx/3xx, per kind.
    pub(crate) errors_status: [u64; 4],
    /// Connect, read, write errors, closes and timeouts.
    pub(crate) errors_socket: u64,
}

pub(crate) type Shared = Arc<Mutex<Window>>;

/// Starts the load; it stops by itself after `plan.duration`. The caller samples `shared`.
pub(crate) fn start(
    plan: &Plan,
    shared: Shared,
) -> (tokio::runtime::Runtime, Vec<tokio::task::JoinHandle<()>>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    let start = Instant::now();
    let end = start + plan.duration;
    let interval = Duration::from_secs_f64(plan.conns as f64 / plan.rate.max(1.0));
    let requests = Arc::new(Requests::new(&plan.client_key, &plan.server_key));
    let tasks = (0..plan.conns)
        .map(|id| {
            let offset = interval.mul_f64(id as f64 / plan.conns as f64);
            let (shared, requests) = (shared.clone(), requests.clone());
            let port = plan.port;
            runtime.spawn(async move {
                connection(port, id, start + offset, interval, end, &requests, &shared).await
            })
        })
        .collect();
    (runtime, tasks)
}

async fn connection(
    port: u16,
    id: usize,
    first: Instant,
    interval: Duration,
    end: Instant,
    requests: &Requests,
    shared: &Shared,
) {
    let mut stream: Option<TcpStream> = None;
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut previous_done = first;
    for k in 0u64.. {
        let due = first + interval.mul_f64(k as f64);
        if due >= end {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        let n = k * 7919 + id as u64 * 104_729; // spread identities across connections
        let kind = (k as usize + id) % KINDS.len();
        let request = requests.build(kind, n % IDENTITIES);
        // On time: from the send (the timer's own slack is not the server's). Late because the
        // previous answer came after this send was due: from when it was due.
        let sent = Instant::now();
        let from = if previous_done > due { due } else { sent };
        let outcome = tokio::time::timeout(
            REQUEST_TIMEOUT,
            exchange(&mut stream, port, &request, &mut buf),
        )
        .await;
        let done = Instant::now();
        previous_done = done;
        let mut window = shared.lock().unwrap();
        match outcome {
            Ok(Ok(status)) => {
                window.by_kind[kind] += 1;
                window
                    .latencies_us
                    .push((done - from).as_micros().min(u32::MAX as u128) as u32);
                if !(200..400).contains(&status) {
                    window.errors_status[kind] += 1;
                }
            }
            Ok(Err(_)) | Err(_) => {
                window.errors_socket += 1;
                stream = None;
            }
        }
    }
}

/// One request on the kept-alive connection (opened if needed); the response status.
async fn exchange(
    stream: &mut Option<TcpStream>,
    port: u16,
    request: &[u8],
    buf: &mut Vec<u8>,
) -> io::Result<u16> {
    if stream.is_none() {
        let s = TcpStream::connect(("127.0.0.1", port)).await?;
        s.set_nodelay(true)?;
        *stream = Some(s);
    }
    let s = stream.as_mut().expect("connected above");
    s.write_all(request).await?;
    buf.clear();
    loop {
        if s.read_buf(buf).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        let head = match response.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => continue,
            Err(e) => return Err(io::Error::other(e)),
        };
        let length = response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| {
                std::str::from_utf8(h.value)
                    .ok()?
                    .trim()
                    .parse::<usize>()
                    .ok()
            })
            .ok_or_else(|| io::Error::other("response without content-length"))?;
        let status = response.code.unwrap_or(0);
        let close = response.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close")
        });
        let total = head + length;
        while buf.len() < total {
            if s.read_buf(buf).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        if close {
            *stream = None;
        }
        return Ok(status);
    }
}

/// The mix's requests, built per send (identities vary).
struct Requests {
    flags: Vec<u8>,
    client_key: String,
    server_key: String,
}

impl Requests {
    fn new(client_key: &str, server_key: &str) -> Requests {
        Requests {
            flags: format!(
                "GET /api/v1/flags/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment-Key: {client_key}\r\n\r\n"
            )
            .into_bytes(),
            client_key: client_key.to_owned(),
            server_key: server_key.to_owned(),
        }
    }

    fn build(&self, kind: usize, id: u64) -> Vec<u8> {
        const TRAITS: &str = r#"[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]"#;
        let (ck, sk) = (&self.client_key, &self.server_key);
        match KINDS[kind] {
            "flags" => self.flags.clone(),
            "identities_get" => format!(
                "GET /api/v1/identities/?identifier=soak-{id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment-Key: {ck}\r\n\r\n"
            )
            .into_bytes(),
            "identities_post" => post(
                "/api/v1/identities/",
                "X-Environment-Key",
                ck,
                &format!(r#"{{"identifier":"soak-{id}","traits":{TRAITS}}}"#),
            ),
            _ => post(
                "/ofrep/v1/evaluate/flags",
                "X-API-Key",
                sk,
                &format!(
                    r#"{{"context":{{"targetingKey":"soak-{id}","plan":"enterprise","age":42,"app_version":"2.4.1"}}}}"#
                ),
            ),
        }
    }
}

fn post(path: &str, key_header: &str, key: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{key_header}: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
