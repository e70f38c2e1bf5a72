//! Change streams served straight on the socket.
//!
//! hyper keeps an HTTP/1 connection's read buffer and response-head buffer for as long as the
//! connection lives (24 KiB allocated, ~19 KiB resident per idle event stream, measured in
//! bench/RESULTS.md "OFREP"); with tens of thousands of browsers each holding a stream, that is
//! most of the proxy's memory. So the listener reads a new connection's first request head
//! itself ([`sniff`]): a plain HTTP/1.1 `GET` of a change-stream path is answered here ([`serve`])
//! and the connection then holds only its socket and the stream's state; anything else (other
//! paths, HTTP/2, a head over the size limit, a request with a body, a malformed head) goes to
//! hyper with the bytes already read put back in front ([`Prefixed`]), so hyper sees exactly
//! what the client sent and answers as it always does. All of it works on any byte stream: a
//! TCP socket, or the decrypted side of a TLS connection once its handshake is done.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Version};
use http_body_util::{BodyExt, Either};
use std::future::Future as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::api::{Api, Response};

/// What the first bytes of a connection turned out to be.
pub(crate) enum Sniffed {
    /// A change-stream request, its head parsed (and its buffer already freed).
    Stream(Box<http::request::Parts>),
    /// Anything else: the bytes read so far, for hyper to read first.
    Other(Vec<u8>),
    /// The first head is over hyper's limits: answer 431 here, with the JSON body (`true`: the
    /// request is a `HEAD`, so the answer has none).
    TooLarge(bool),
    /// The client closed (or failed) before sending anything.
    Closed,
}

/// Longest request line looked at before handing the connection to hyper.
const REQUEST_LINE_MAX: usize = 4096;
/// hyper answers a head with more header lines than this, or larger than its read buffer, with
/// a bare 431; a connection's first head is checked here so that it gets the JSON error body
/// every other error has (later heads on a keep-alive connection still meet hyper's).
const HYPER_MAX_HEADERS: usize = 100;

/// hyper's read buffer limit for heads (set in `server.rs`).
pub(crate) fn hyper_head_limit(max_head_bytes: usize) -> usize {
    (max_head_bytes * 4).max(64 * 1024)
}

/// Where the head ends (the index just past its blank line), bare-LF line ends included.
fn head_end(buf: &[u8], line_end: usize) -> Option<usize> {
    let mut at = line_end;
    loop {
        match buf.get(at + 1..) {
            Some([b'\n', ..]) => return Some(at + 2),
            Some([b'\r', b'\n', ..]) => return Some(at + 3),
            _ => {}
        }
        at += 1 + buf.get(at + 1..)?.iter().position(|&b| b == b'\n')?;
    }
}
/// Most headers a change-stream request may carry here (more: hyper answers it).
const MAX_HEADERS: usize = 64;

/// Reads until it is clear whether the first request is a change stream. The caller bounds
/// the time this may take (the header read timeout).
pub(crate) async fn sniff<S: AsyncRead + Unpin>(stream: &mut S, max_head_bytes: usize) -> Sniffed {
    let mut buf = Vec::with_capacity(1024);
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(buf.len());
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) if buf.is_empty() => return Sniffed::Closed,
            Ok(0) | Err(_) => return Sniffed::Other(buf),
            Ok(_) => {}
        }
        match classify(&buf, max_head_bytes) {
            Decision::NeedMore => {}
            Decision::Other => return Sniffed::Other(buf),
            Decision::Stream(parts) => return Sniffed::Stream(parts),
            Decision::TooLarge => return Sniffed::TooLarge(buf.starts_with(b"HEAD ")),
        }
    }
}

enum Decision {
    NeedMore,
    Other,
    TooLarge,
    Stream(Box<http::request::Parts>),
}

fn classify(buf: &[u8], max_head_bytes: usize) -> Decision {
    // HTTP/2 with prior knowledge: hyper's.
    if buf.starts_with(b"PRI ") {
        return Decision::Other;
    }
    let Some(line_end) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > REQUEST_LINE_MAX {
            Decision::Other
        } else {
            Decision::NeedMore
        };
    };
    let Some(head_end) = head_end(buf, line_end) else {
        return if buf.len() >= hyper_head_limit(max_head_bytes) {
            Decision::TooLarge
        } else {
            Decision::NeedMore
        };
    };
    let header_lines = buf[line_end + 1..head_end - 1]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    if header_lines > HYPER_MAX_HEADERS {
        return Decision::TooLarge;
    }
    if !buf.starts_with(b"GET /") {
        return Decision::Other;
    }
    let target = buf[4..line_end].split(|&b| b == b' ').next().unwrap_or(&[]);
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    match std::str::from_utf8(path) {
        Ok(path) if Api::is_change_stream(path) => {}
        _ => return Decision::Other,
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) if len == buf.len() && len <= max_head_bytes => {}
        Ok(httparse::Status::Partial) => return Decision::NeedMore,
        // Malformed, oversized, pipelined or with more headers than we take: hyper's answer.
        _ => return Decision::Other,
    }
    if request.version != Some(1) {
        return Decision::Other;
    }
    let mut builder = http::Request::builder()
        .method(Method::GET)
        .version(Version::HTTP_11)
        .uri(request.path.unwrap_or("/"));
    for header in request.headers.iter() {
        let name = header.name;
        let has_body = (name.eq_ignore_ascii_case("content-length") && header.value != b"0")
            || name.eq_ignore_ascii_case("transfer-encoding");
        if has_body || name.eq_ignore_ascii_case("upgrade") || name.eq_ignore_ascii_case("expect") {
            return Decision::Other;
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(header.value),
        ) else {
            return Decision::Other;
        };
        builder = builder.header(name, value);
    }
    match builder.body(()) {
        Ok(request) => Decision::Stream(Box::new(request.into_parts().0)),
        Err(_) => Decision::Other,
    }
}

/// Writes `response` on `stream`: a whole body with its length (only the length for a `HEAD`),
/// or an event stream as chunks until it ends (shutdown) or the client goes away. The
/// connection closes afterwards.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    response: Response,
    head_only: bool,
    write_timeout: Duration,
) {
    let (parts, body) = response.into_parts();
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"date: ");
    head.extend_from_slice(httpdate::fmt_http_date(std::time::SystemTime::now()).as_bytes());
    head.extend_from_slice(b"\r\nconnection: close\r\n");
    let mut events = match body {
        Either::Left(whole) => {
            let bytes = whole
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            head.extend_from_slice(format!("content-length: {}\r\n\r\n", bytes.len()).as_bytes());
            if !head_only {
                head.extend_from_slice(&bytes);
            }
            let _ = tokio::time::timeout(write_timeout, stream.write_all(&head)).await;
            let _ = stream.shutdown().await;
            return;
        }
        Either::Right(events) => events,
    };
    head.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
    if !matches!(
        tokio::time::timeout(write_timeout, stream.write_all(&head)).await,
        Ok(Ok(()))
    ) {
        return;
    }
    drop(head);
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut scratch = [0u8; 64];
    loop {
        tokio::select! {
            frame = events.frame() => {
                let Some(Ok(frame)) = frame else {
                    let _ = tokio::time::timeout(write_timeout, writer.write_all(b"0\r\n\r\n")).await;
                    break;
                };
                let Ok(data) = frame.into_data() else { continue };
                let written = tokio::time::timeout(write_timeout, writer.write_all(&chunk(&data))).await;
                if !matches!(written, Ok(Ok(()))) {
                    break;
                }
            }
            read = reader.read(&mut scratch) => {
                // Anything a client sends after its request is ignored; EOF means it left.
                if matches!(read, Ok(0) | Err(_)) {
                    break;
                }
            }
        }
    }
    let _ = writer.shutdown().await;
}

/// One HTTP/1.1 chunk, written in one piece (one packet with TCP_NODELAY).
fn chunk(data: &Bytes) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 12);
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A socket with bytes already read from it put back in front, for hyper; and a write-stall
/// limit, which hyper lacks: a client that stops reading would otherwise pin its connection and
/// the response it was being sent forever.
pub(crate) struct Prefixed<S> {
    /// Unread bytes and how far they have been read; freed once read.
    prefix: Option<(Vec<u8>, usize)>,
    inner: S,
    write_timeout: Duration,
    /// Armed while a write waits for the client to read (allocated only then).
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Prefixed<S> {
    pub(crate) fn new(prefix: Vec<u8>, inner: S, write_timeout: Duration) -> Prefixed<S> {
        Prefixed {
            prefix: (!prefix.is_empty()).then_some((prefix, 0)),
            inner,
            write_timeout,
            stalled: None,
        }
    }

    /// After a write that could not proceed: still waiting, or the stall has lasted too long.
    fn stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let timeout = self.write_timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        ready: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match ready {
            Poll::Pending => self.stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some((prefix, at)) = &mut self.prefix {
            let n = (prefix.len() - *at).min(buf.remaining());
            buf.put_slice(&prefix[*at..*at + n]);
            *at += n;
            if *at == prefix.len() {
                self.prefix = None;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let ready = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progressed(ready, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let ready = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progressed(ready, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(text: &str) -> &'static str {
        match classify(text.as_bytes(), 16 * 1024) {
            Decision::NeedMore => "more",
            Decision::Other => "other",
            Decision::Stream(_) => "stream",
            Decision::TooLarge => "too large",
        }
    }

    #[test]
    fn only_plain_stream_gets_are_taken() {
        assert_eq!(decide("GE"), "more");
        assert_eq!(decide("GET /ofrep/v1/ev"), "more");
        assert_eq!(decide("POST /ofrep/v1/events HTTP/1.1\r\n\r\n"), "other");
        assert_eq!(decide("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "other");
        assert_eq!(decide("GET /api/v1/flags/ HTTP/1.1\r\n"), "more");
        assert_eq!(
            decide("GET /api/v1/flags/ HTTP/1.1\r\nHost: a\r\n\r\n"),
            "other"
        );
        assert_eq!(
            decide("POST /api/v1/identities/ HTTP/1.1\r\n\r\n{}"),
            "other"
        );
        assert_eq!(decide("GET /api/v1/flags/ HTTP/1.1\nHost: a\n\n"), "other");
        assert_eq!(
            decide("GET /ofrep/v1/events?t=x HTTP/1.1\r\nHost: a\r\n"),
            "more"
        );
        assert_eq!(
            decide("GET /ofrep/v1/events?t=x HTTP/1.1\r\nHost: a\r\n\r\n"),
            "stream"
        );
        assert_eq!(
            decide("GET /sse/environments/k/stream HTTP/1.1\r\nHost: a\r\n\r\n"),
            "stream"
        );
        assert_eq!(
            decide("GET /ofrep/v1/events HTTP/1.0\r\nHost: a\r\n\r\n"),
            "other"
        );
        assert_eq!(
            decide("GET /ofrep/v1/events HTTP/1.1\r\nContent-Length: 3\r\n\r\n"),
            "other"
        );
        // A second request pipelined behind the first: hyper's business.
        assert_eq!(
            decide("GET /ofrep/v1/events HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
            "other"
        );
        assert_eq!(
            decide("GET /ofrep/v1/events HTTP/1.1\r\nbad header\r\n\r\n"),
            "other"
        );
    }

    #[test]
    fn parsed_heads_keep_query_and_headers() {
        let Decision::Stream(parts) = classify(
            b"GET /ofrep/v1/events?t=abc&since=1-x HTTP/1.1\r\nLast-Event-ID: 2-y\r\n\r\n",
            1024,
        ) else {
            panic!("not taken");
        };
        assert_eq!(parts.uri.query(), Some("t=abc&since=1-x"));
        assert_eq!(parts.headers["last-event-id"], "2-y");
    }

    #[test]
    fn heads_over_hypers_limits_are_answered_here() {
        let many: String = (0..150).map(|i| format!("X-{i}: v\r\n")).collect();
        let head = format!("GET /api/v1/flags/ HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(
            classify(head.as_bytes(), 16384),
            Decision::TooLarge
        ));
        let ok: String = (0..100).map(|i| format!("X-{i}: v\r\n")).collect();
        let head = format!("GET /api/v1/flags/ HTTP/1.1\r\n{ok}\r\n");
        assert!(matches!(classify(head.as_bytes(), 16384), Decision::Other));
        let huge = format!(
            "GET /api/v1/flags/ HTTP/1.1\r\nX-Big: {}",
            "a".repeat(70_000)
        );
        assert!(matches!(
            classify(huge.as_bytes(), 16384),
            Decision::TooLarge
        ));
    }

    #[test]
    fn heads_over_the_limit_go_to_hyper() {
        let big = format!(
            "GET /ofrep/v1/events HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "a".repeat(2000)
        );
        assert!(matches!(classify(big.as_bytes(), 1024), Decision::Other));
    }
}
