//! An open-loop load driver (the wrk2 model: Debian's wrk 4.1 has no `-R` and there is no wrk2
//! package) on a tokio runtime, for latency at a constant rate. Each connection sends on a
//! fixed schedule (`conns / rate` apart, staggered), one request at a time; a response that
//! comes back after the next send was due delays that send, and the delay is counted in the
//! next request's latency (measured from when it was due, so a server stall is not hidden by
//! the client waiting: no coordinated omission). Statistics are kept per window and read by the
//! caller whenever it likes. The requests are the caller's: a function of the connection and
//! the request's sequence number on it returns the bytes to send.
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Plan {
    pub port: u16,
    pub rate: f64,
    pub conns: usize,
    pub threads: usize,
    pub duration: Duration,
}

/// One window's raw statistics.
#[derive(Default)]
pub struct Window {
    pub latencies_us: Vec<u32>,
    /// Responses, of any status.
    pub requests: u64,
    /// Responses with a status outside 2xx/3xx.
    pub errors_status: u64,
    /// Connect, read, write errors, closes and timeouts.
    pub errors_socket: u64,
}

pub type Shared = Arc<Mutex<Window>>;

/// What to send: the bytes of request `k` on connection `connection`.
pub type Requests = Arc<dyn Fn(usize, u64) -> Vec<u8> + Send + Sync>;

impl Window {
    /// The `p`th percentile of the window's latencies, in milliseconds (0 when empty).
    pub fn percentile_ms(&mut self, p: f64) -> f64 {
        let lat = &mut self.latencies_us;
        if lat.is_empty() {
            return 0.0;
        }
        lat.sort_unstable();
        let i = ((p / 100.0) * lat.len() as f64).ceil() as usize;
        lat[i.clamp(1, lat.len()) - 1] as f64 / 1000.0
    }
}

/// Starts the load; it stops by itself after `plan.duration`. The caller samples `shared`.
pub fn start(
    plan: &Plan,
    requests: Requests,
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
        let request = requests(id, k);
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
                window.requests += 1;
                window
                    .latencies_us
                    .push((done - from).as_micros().min(u32::MAX as u128) as u32);
                if !(200..400).contains(&status) {
                    window.errors_status += 1;
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

/// A GET request with an environment key.
pub fn get(path: &str, key: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment-Key: {key}\r\n\r\n")
        .into_bytes()
}

/// A POST request with a JSON body and a key in `key_header`.
pub fn post(path: &str, key_header: &str, key: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{key_header}: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
