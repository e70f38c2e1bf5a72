//! The client side of the HTTP fuzz test: one raw exchange over TCP (the request written by a
//! second thread while this one reads, so a server that answers early never blocks us), the
//! responses parsed strictly (status line, header syntax, framing), and the checks every
//! response must pass: no 5xx, and every error body in one of the two documented shapes
//! (the Flagsmith API's `{"status","message"}`, OFREP's `{"errorCode","errorDetails"[,"key"]}`;
//! see docs/serve.md and docs/ofrep.md).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// One parsed response.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// An open event stream: the head and first bytes were read, the body never ends.
    pub stream: bool,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What came back for one request.
#[derive(Debug)]
pub(crate) struct Exchange {
    /// Final responses (interim 1xx skipped), in order.
    pub responses: Vec<Response>,
    /// The connection was reset (RST) rather than closed.
    pub reset: bool,
}

/// Sends `raw` and reads responses. `complete`: the first request is whole, so it must be
/// answered (else we close our side once written and only expect a close). `head`: the first
/// request is a HEAD. Errors describe a protocol violation or a hang.
pub(crate) fn exchange(
    port: u16,
    raw: &[u8],
    complete: bool,
    head: bool,
    timeout: Duration,
) -> Result<Exchange, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).ok();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| e.to_string())?;
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // Errors are expected when the server answers early and closes.
            if writer.write_all(raw).is_ok() && !complete {
                let _ = writer.shutdown(Shutdown::Write);
            }
        });
        let result = read_responses(&stream, complete, head, timeout);
        // Unblocks the writer if the server stopped reading.
        let _ = stream.shutdown(Shutdown::Both);
        result
    })
}

fn read_responses(
    mut stream: &TcpStream,
    complete: bool,
    head: bool,
    timeout: Duration,
) -> Result<Exchange, String> {
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::new();
    let mut responses = Vec::new();
    let mut closed_write = !complete;
    let mut chunk = vec![0u8; 64 * 1024];
    // A close-delimited response being read: its head length.
    let mut until_close: Option<(Response, usize)> = None;
    loop {
        // Parse whatever is complete.
        while until_close.is_none() {
            match parse_one(&buf, head && responses.is_empty())? {
                Parsed::NeedMore => break,
                Parsed::UntilClose(response, head_len) => {
                    until_close = Some((response, head_len));
                    if !closed_write {
                        let _ = stream.shutdown(Shutdown::Write);
                        closed_write = true;
                    }
                }
                Parsed::Interim(used) => {
                    buf.drain(..used);
                }
                Parsed::Done(response, used) => {
                    buf.drain(..used);
                    let stream_open = response.stream;
                    responses.push(response);
                    if stream_open {
                        return Ok(Exchange {
                            responses,
                            reset: false,
                        });
                    }
                    if !closed_write {
                        // Anything pipelined behind the first request is answered or dropped
                        // once we stop sending: the server must then close.
                        let _ = stream.shutdown(Shutdown::Write);
                        closed_write = true;
                    }
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no {} within {timeout:?} (complete request: {complete}); got {} response(s) and {} unparsed bytes: {:?}",
                if responses.is_empty() { "response or close" } else { "close after the response" },
                responses.len(),
                buf.len(),
                String::from_utf8_lossy(&buf[..buf.len().min(300)])
            ));
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                if let Some((mut response, head_len)) = until_close.take() {
                    response.body = buf.split_off(head_len);
                    buf.clear();
                    responses.push(response);
                }
                if !buf.is_empty() {
                    return Err(format!(
                        "connection closed inside a response: {:?}",
                        String::from_utf8_lossy(&buf[..buf.len().min(500)])
                    ));
                }
                return Ok(Exchange {
                    responses,
                    reset: false,
                });
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return Ok(Exchange {
                    responses,
                    reset: true,
                });
            }
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

enum Parsed {
    NeedMore,
    /// A head without framing (HTTP/1.0 style): the body is everything until the close.
    UntilClose(Response, usize),
    Interim(usize),
    Done(Response, usize),
}

fn parse_one(buf: &[u8], head_request: bool) -> Result<Parsed, String> {
    if buf.is_empty() {
        return Ok(Parsed::NeedMore);
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut headers);
    let head_len = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() > 64 * 1024 {
                return Err("response head over 64 KiB".into());
            }
            return Ok(Parsed::NeedMore);
        }
        Err(e) => {
            return Err(format!(
                "malformed response head ({e}): {:?}",
                String::from_utf8_lossy(&buf[..buf.len().min(300)])
            ))
        }
    };
    let status = parsed.code.expect("complete head has a status");
    if !buf.starts_with(b"HTTP/1.") {
        return Err("status line does not start with HTTP/1.".into());
    }
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).into_owned();
            (h.name.to_ascii_lowercase(), value)
        })
        .collect();
    let get = |name: &str| -> Vec<&str> {
        headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    if (100..200).contains(&status) {
        return Ok(Parsed::Interim(head_len));
    }
    let lengths = get("content-length");
    let chunked = get("transfer-encoding")
        .iter()
        .any(|v| v.eq_ignore_ascii_case("chunked"));
    if lengths.len() > 1 || (chunked && !lengths.is_empty()) {
        return Err(format!("ambiguous framing: {headers:?}"));
    }
    let event_stream = get("content-type")
        .first()
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut response = Response {
        status,
        headers: headers.clone(),
        body: Vec::new(),
        stream: false,
    };
    let rest = &buf[head_len..];
    if head_request || status == 204 || status == 304 {
        return Ok(Parsed::Done(response, head_len));
    }
    if event_stream && status == 200 && lengths.is_empty() {
        // A change stream (chunked, or close-delimited for HTTP/1.0): it never ends.
        response.stream = true;
        return Ok(Parsed::Done(response, buf.len()));
    }
    if chunked {
        return Ok(match dechunk(rest)? {
            Some((body, used)) => {
                response.body = body;
                Parsed::Done(response, head_len + used)
            }
            None => Parsed::NeedMore,
        });
    }
    let Some(length) = lengths.first() else {
        return Ok(Parsed::UntilClose(response, head_len));
    };
    let length: usize = length
        .parse()
        .map_err(|_| format!("bad content-length {length:?}"))?;
    if rest.len() < length {
        return Ok(Parsed::NeedMore);
    }
    response.body = rest[..length].to_vec();
    Ok(Parsed::Done(response, head_len + length))
}

/// A whole chunked body and the bytes it took, or `None` if more is needed.
fn dechunk(mut b: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let total = b.len();
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&b[..eol]).map_err(|_| "chunk size not text")?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        let data = &b[eol + 2..];
        if size == 0 {
            // No trailers are expected: the body ends with an empty line.
            return Ok(data
                .starts_with(b"\r\n")
                .then(|| (out, total - data.len() + 2)));
        }
        if data.len() < size + 2 {
            return Ok(None);
        }
        if &data[size..size + 2] != b"\r\n" {
            return Err("chunk not followed by CRLF".into());
        }
        out.extend_from_slice(&data[..size]);
        b = &data[size + 2..];
    }
}

/// The checks every response must pass.
pub(crate) fn check(response: &Response) -> Result<(), String> {
    let status = response.status;
    if !(200..600).contains(&status) {
        return Err(format!("status {status} out of range"));
    }
    if status >= 500 {
        return Err(format!("server error {status}: {}", show(&response.body)));
    }
    if status == 405 && response.header("allow").is_none() {
        return Err("405 without Allow".into());
    }
    let json_type = response
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json"));
    let encoded = response.header("content-encoding").is_some();
    if status >= 400 && !response.body.is_empty() {
        if !json_type {
            return Err(format!(
                "{status} with a non-JSON body: {}",
                show(&response.body)
            ));
        }
        check_error_shape(status, &response.body)?;
    } else if json_type && !encoded && !response.body.is_empty() {
        serde_json::from_slice::<serde_json::Value>(&response.body)
            .map_err(|e| format!("{status} body is not JSON ({e}): {}", show(&response.body)))?;
    }
    Ok(())
}

/// `{"status": <slug of the status>, "message": <non-empty>}` or OFREP's
/// `{"errorCode", "errorDetails"}` (+ `"key"` on the single-flag endpoint).
fn check_error_shape(status: u16, body: &[u8]) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("{status} error body is not JSON ({e}): {}", show(body)))?;
    let object = value
        .as_object()
        .ok_or_else(|| format!("{status} error body is not an object: {}", show(body)))?;
    let text = |k: &str| object.get(k).and_then(|v| v.as_str());
    if object.contains_key("errorCode") {
        const CODES: &[&str] = &[
            "PARSE_ERROR",
            "INVALID_CONTEXT",
            "TARGETING_KEY_MISSING",
            "FLAG_NOT_FOUND",
            "GENERAL",
        ];
        let ok = text("errorCode").is_some_and(|c| CODES.contains(&c))
            && text("errorDetails").is_some()
            && object
                .keys()
                .all(|k| ["errorCode", "errorDetails", "key"].contains(&k.as_str()))
            && object.get("key").is_none_or(|k| k.is_string());
        return if ok {
            Ok(())
        } else {
            Err(format!(
                "{status}: not the OFREP error shape: {}",
                show(body)
            ))
        };
    }
    let slug = http_slug(status);
    let ok = object.len() == 2
        && text("status") == Some(slug.as_str())
        && text("message").is_some_and(|m| !m.is_empty());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{status}: not the error shape {{\"status\":\"{slug}\",\"message\":…}}: {}",
            show(body)
        ))
    }
}

/// `Not Found` → `not_found` (the `status` member of the JSON error body).
fn http_slug(status: u16) -> String {
    let reason = match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        _ => "error",
    };
    reason.to_ascii_lowercase().replace([' ', '-'], "_")
}

pub(crate) fn show(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let shown: String = text.chars().take(300).collect();
    format!("{shown:?}")
}
