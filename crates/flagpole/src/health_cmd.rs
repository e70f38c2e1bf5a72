//! `flagpole health`: a readiness probe for Docker `HEALTHCHECK` (distroless images have no curl)
//! and any other probe that runs a command.
//!
//! One blocking HTTP/1.1 `GET` on a `std::net::TcpStream`, no runtime, no TLS (a probe talks to
//! the proxy it runs next to). Exit 0 when the answer is 200, 1 otherwise (Docker reserves 2), with
//! one line saying why. It asks whether the proxy can serve (`/proxy/health/serving`: every
//! environment has a document, stale or not), so that an upstream outage does not mark every
//! container unhealthy and have an orchestrator replace the ones holding the last good flags;
//! `--strict` asks the Edge Proxy's readiness (`/proxy/health/readiness`: 503 once stale).
//! Without `--url` it probes `http://127.0.0.1:<port><path>`,
//! the port taken from the configuration `serve` would read (`$CONFIG_PATH` or `./config.json`, and
//! the `SERVER` variable) when it can be read, else 8000 (with `server.tls`, its `plain_port` if
//! set); no config file is needed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::HealthArgs;

/// The path probed when `--url` has none: the proxy can serve.
const SERVING_PATH: &str = "/proxy/health/serving";
/// With `--strict`: the Edge Proxy's readiness, 503 once a document is stale.
const READINESS_PATH: &str = "/proxy/health/readiness";
/// A health answer is tiny; reading stops here.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Where to send the probe.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// The host as written (IPv6 literals keep their brackets), for the `Host` header.
    host: String,
    port: u16,
    /// Path and query.
    path: String,
}

impl Target {
    fn url(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.path)
    }
}

pub(crate) fn run(args: &HealthArgs) -> ExitCode {
    let path = if args.strict {
        READINESS_PATH
    } else {
        SERVING_PATH
    };
    let url = args.url.clone().unwrap_or_else(|| default_url(path));
    let target = match parse_url(&url, path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("unhealthy: {e}");
            return ExitCode::FAILURE;
        }
    };
    match probe(&target, Duration::from_secs_f64(args.timeout)) {
        Ok((200, _)) => {
            println!("ready: 200 from {}", target.url());
            ExitCode::SUCCESS
        }
        Ok((status, reason)) => {
            let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
            eprintln!("not ready: {status}{why} from {}", target.url());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("unhealthy: {}: {e}", target.url());
            ExitCode::FAILURE
        }
    }
}

/// `--timeout`: positive, finite seconds.
pub(crate) fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err("must be a number of seconds greater than 0".into()),
    }
}

/// The URL of `path` on the proxy `flagpole serve` would start with the same environment.
fn default_url(path: &str) -> String {
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let (host, port) = match flagpole_server::config::load(None, &env) {
        // With TLS, the plain-HTTP port beside it (when there is one) answers the probes.
        Ok(loaded) => (
            probe_host(&loaded.config.server.host),
            (loaded.config.server.tls.as_ref())
                .and_then(|tls| tls.plain_port)
                .unwrap_or(loaded.config.server.port),
        ),
        Err(_) => ("127.0.0.1".to_string(), 8000),
    };
    format!("http://{host}:{port}{path}")
}

/// The address to probe for a listen address: wildcards become loopback.
fn probe_host(listen: &str) -> String {
    match listen.trim() {
        "" | "0.0.0.0" => "127.0.0.1".into(),
        "::" | "[::]" => "[::1]".into(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.into(),
    }
}

/// `http://host[:port][/path]`, `host[:port][/path]`; a URL without a path (or `/`) gets
/// `default_path`.
fn parse_url(url: &str, default_path: &str) -> Result<Target, String> {
    let url = url.trim();
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "{url}: only http:// can be probed, not {scheme}:// (probe the proxy's own port)"
            ))
        }
        None => url,
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{url}: expected http://host[:port][/path]"));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("{url}: bad port {port:?}"))?;
            (host, port)
        }
        _ => (authority, 80),
    };
    if host.is_empty() || (host.contains(':') && !(host.starts_with('[') && host.ends_with(']'))) {
        return Err(format!("{url}: bad host {host:?}"));
    }
    let path = match path {
        "" | "/" => default_path.to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Target {
        host: host.to_string(),
        port,
        path,
    })
}

/// Sends the request and returns the status and, from a JSON body, its `reason`.
fn probe(target: &Target, timeout: Duration) -> std::io::Result<(u16, Option<String>)> {
    let deadline = Instant::now() + timeout;
    let remaining = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))
    };
    let bare_host = target.host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (bare_host, target.port).to_socket_addrs()?.collect();
    let mut last_error = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, remaining()?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_error = e,
        }
    }
    let mut stream = stream.ok_or(last_error)?;
    stream.set_write_timeout(Some(remaining()?))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: flagpole-health/{}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        target.path,
        target.host,
        target.port,
        env!("CARGO_PKG_VERSION")
    );
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    while answer.len() < MAX_ANSWER_BYTES {
        stream.set_read_timeout(Some(remaining()?))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "timed out",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    parse_answer(&answer)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer"))
}

/// The status code of an HTTP/1.x answer and the `reason` of its JSON body, if any.
fn parse_answer(answer: &[u8]) -> Option<(u16, Option<String>)> {
    let line_end = answer.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&answer[..line_end]).ok()?;
    let mut parts = line.split(' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status = parts.next()?.parse::<u16>().ok()?;
    let reason = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .and_then(|i| serde_json::from_slice::<serde_json::Value>(&answer[i + 4..]).ok())
        .and_then(|v| v.get("reason")?.as_str().map(str::to_string));
    Some((status, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16, path: &str) -> Target {
        Target {
            host: host.into(),
            port,
            path: path.into(),
        }
    }

    #[test]
    fn urls() {
        let ready = SERVING_PATH;
        let parse_url = |url| parse_url(url, SERVING_PATH);
        assert_eq!(
            parse_url("http://127.0.0.1:8000").unwrap(),
            target("127.0.0.1", 8000, ready)
        );
        assert_eq!(
            parse_url("HTTP://localhost:9/").unwrap(),
            target("localhost", 9, ready)
        );
        assert_eq!(
            parse_url("localhost:8000/proxy/health/liveness").unwrap(),
            target("localhost", 8000, "/proxy/health/liveness")
        );
        assert_eq!(
            parse_url("http://[::1]:8000/health?x=1#frag").unwrap(),
            target("[::1]", 8000, "/health?x=1")
        );
        assert_eq!(
            parse_url("http://flagpole").unwrap(),
            target("flagpole", 80, ready)
        );
        assert_eq!(
            parse_url("http://[::1]").unwrap(),
            target("[::1]", 80, ready)
        );
        assert_eq!(
            super::parse_url("http://[::1]", READINESS_PATH).unwrap(),
            target("[::1]", 80, READINESS_PATH)
        );
        for bad in [
            "https://x",
            "http://",
            "http://a:b",
            "http://a:99999",
            "::1:80",
            "http://u@x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{\"status\":\"ok\",\"reason\":null}";
        assert_eq!(parse_answer(ok), Some((200, None)));
        let down = b"HTTP/1.1 503 Service Unavailable\r\n\r\n{\"reason\":\"shutting down.\"}";
        assert_eq!(
            parse_answer(down),
            Some((503, Some("shutting down.".into())))
        );
        assert_eq!(parse_answer(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(parse_answer(b""), None);
    }

    #[test]
    fn listen_hosts() {
        assert_eq!(probe_host("0.0.0.0"), "127.0.0.1");
        assert_eq!(probe_host("::"), "[::1]");
        assert_eq!(probe_host("fe80::1"), "[fe80::1]");
        assert_eq!(probe_host("10.0.0.5"), "10.0.0.5");
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("2.5"), Ok(2.5));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("nan").is_err());
        assert!(parse_timeout("-1").is_err());
    }
}
