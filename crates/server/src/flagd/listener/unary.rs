//! The flagd listener's hot gRPC calls, the typed resolvers and `ResolveAll` of both versions,
//! served straight on hyper instead of through tonic's server codec.
//!
//! A unary gRPC request is one length-prefixed message (a flag byte, a 4-byte length) and the
//! answer one more, then a `grpc-status: 0` trailer. tonic gets there through a streaming decoder
//! and encoder (an 8 KiB buffer each per call), a boxed body each way and their state machines,
//! for a message of 60 bytes: a call's largest cost after the kernel and HTTP/2 itself. Here the
//! request's body is read whole, its message decoded with prost, and the service method called
//! with the very `tonic::Request` tonic would build (metadata from the headers, the request's
//! extensions), so keys, statuses, metrics and spans are the method's own; the answer is the
//! message written once behind its prefix, and an error the head tonic makes
//! (`Status::into_http`, trailers-only). Anything else (a `grpc-encoding`, a compressed or
//! malformed message, request trailers, a body past tonic's limit, bytes prost will not decode)
//! goes to tonic with what was read put back in front of the rest (`Replay`), so tonic answers it
//! as it always has. `tests` checks that both paths give the same bytes, heads and trailers.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use http_body::{Body as HttpBody, Frame};
use http_body_util::BodyExt as _;
use prost::Message;
use tonic::{Request, Response, Status};

use crate::flagd::connect::Body;
use crate::flagd::{v1, v2, Flagd};

/// tonic's default limit on a request message: past it, tonic answers `OUT_OF_RANGE`.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// A gRPC message's prefix: the compressed flag and the length.
const PREFIX: usize = 5;

/// A call this path serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Unary {
    v2: bool,
    method: Resolver,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolver {
    Boolean,
    String,
    Float,
    Int,
    Object,
    All,
}

impl Unary {
    /// The one test of a hot call, for both transports: a gRPC call of a resolver or
    /// `ResolveAll` whose body this path can read (a compressed one is tonic's).
    pub(super) fn hot(headers: &HeaderMap, path: &str) -> Option<Unary> {
        let takes = is_grpc(headers) && !headers.contains_key("grpc-encoding");
        takes.then(|| Unary::of(path)).flatten()
    }

    /// The call a request path names, if it is one of the hot unary calls.
    pub(super) fn of(path: &str) -> Option<Unary> {
        let (v2, method) = match path.strip_prefix("/flagd.evaluation.v1.Service/") {
            Some(method) => (false, method),
            None => (true, path.strip_prefix("/flagd.evaluation.v2.Service/")?),
        };
        let method = match method {
            "ResolveBoolean" => Resolver::Boolean,
            "ResolveString" => Resolver::String,
            "ResolveFloat" => Resolver::Float,
            "ResolveInt" => Resolver::Int,
            "ResolveObject" => Resolver::Object,
            "ResolveAll" => Resolver::All,
            _ => return None,
        };
        Some(Unary { v2, method })
    }
}

/// Whether a call is gRPC (Connect is the rest of what the listener serves).
pub(super) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// Serves `request`, a hot call of `unary` (`Unary::hot`); what this path does not take (a
/// compressed or malformed message, request trailers), `tonic` serves.
pub(super) async fn serve<B, T, F>(
    flagd: &Flagd,
    unary: Unary,
    request: http::Request<B>,
    tonic: T,
) -> http::Response<Body>
where
    B: HttpBody<Data = Bytes> + Unpin,
    T: FnOnce(http::Request<Replay<B>>) -> F,
    F: Future<Output = http::Response<Body>>,
{
    let (parts, mut body) = request.into_parts();
    // The whole body: a unary request is one message, nearly always in one DATA frame.
    let mut read = Read::default();
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(chunk) if read.len() + chunk.len() <= PREFIX + MAX_MESSAGE => read.push(chunk),
                Ok(chunk) => {
                    let replay = Replay::new(read.take(), Some(Ok(Frame::data(chunk))), Some(body));
                    return tonic(http::Request::from_parts(parts, replay)).await;
                }
                Err(trailers) => {
                    let replay = Replay::new(read.take(), Some(Ok(trailers)), Some(body));
                    return tonic(http::Request::from_parts(parts, replay)).await;
                }
            },
            Some(Err(e)) => {
                let replay = Replay::new(read.take(), Some(Err(e)), Some(body));
                return tonic(http::Request::from_parts(parts, replay)).await;
            }
        }
    }
    match call(flagd, unary, parts, read.take().unwrap_or_default()).await {
        Ok(answered) => answered.into_http(),
        Err((parts, data)) => {
            let replay = Replay::new(Some(data).filter(|d| !d.is_empty()), None, None);
            tonic(http::Request::from_parts(parts, replay)).await
        }
    }
}

/// Calls the method `unary` names with the whole request body `data`, as tonic would; a body
/// that is not one message prost decodes comes back, for tonic. The methods do no I/O: the
/// future is ready at its first poll (the connection's own task may await it in place).
pub(super) async fn call(
    flagd: &Flagd,
    unary: Unary,
    parts: http::request::Parts,
    data: Bytes,
) -> Result<Answered, (http::request::Parts, Bytes)> {
    /// The method of `$v` for `$method`, on its request message.
    macro_rules! call {
        ($v:ident, $method:ident, $request:ident) => {
            answer(parts, data, |r: Request<$v::$request>| {
                <Flagd as $v::service_server::Service>::$method(flagd, r)
            })
            .await
        };
    }
    match (unary.v2, unary.method) {
        (false, Resolver::Boolean) => call!(v1, resolve_boolean, ResolveBooleanRequest),
        (false, Resolver::String) => call!(v1, resolve_string, ResolveStringRequest),
        (false, Resolver::Float) => call!(v1, resolve_float, ResolveFloatRequest),
        (false, Resolver::Int) => call!(v1, resolve_int, ResolveIntRequest),
        (false, Resolver::Object) => call!(v1, resolve_object, ResolveObjectRequest),
        (false, Resolver::All) => call!(v1, resolve_all, ResolveAllRequest),
        (true, Resolver::Boolean) => call!(v2, resolve_boolean, ResolveBooleanRequest),
        (true, Resolver::String) => call!(v2, resolve_string, ResolveStringRequest),
        (true, Resolver::Float) => call!(v2, resolve_float, ResolveFloatRequest),
        (true, Resolver::Int) => call!(v2, resolve_int, ResolveIntRequest),
        (true, Resolver::Object) => call!(v2, resolve_object, ResolveObjectRequest),
        (true, Resolver::All) => call!(v2, resolve_all, ResolveAllRequest),
    }
}

/// What a hot call answers, before it is HTTP: the head (the method's metadata,
/// `content-type: application/grpc`, its extensions: the call's span reads them) and the
/// message behind its prefix, to be followed by `grpc-status: 0`; or the method's error, which
/// tonic sends as a head alone (trailers-only).
pub(super) enum Answered {
    Message(http::Response<Bytes>),
    Failed(Status),
}

impl Answered {
    /// As tonic sends it.
    pub(super) fn into_http(self) -> http::Response<Body> {
        match self {
            Answered::Message(response) => response.map(|message| {
                Body::new(Answer {
                    message: Some(message),
                    trailers: true,
                })
            }),
            Answered::Failed(status) => status.into_http(),
        }
    }
}

/// The trailers that end an answered call.
pub(super) fn ok_trailers() -> HeaderMap {
    let mut trailers = HeaderMap::with_capacity(1);
    trailers.insert(Status::GRPC_STATUS, HeaderValue::from_static("0"));
    trailers
}

/// The body read so far: its first chunk as it came, more chunks (rare) copied after it.
#[derive(Default)]
struct Read {
    first: Option<Bytes>,
    more: Option<BytesMut>,
}

impl Read {
    fn len(&self) -> usize {
        self.more
            .as_ref()
            .map_or_else(|| self.first.as_ref().map_or(0, Bytes::len), BytesMut::len)
    }

    fn push(&mut self, chunk: Bytes) {
        match (&mut self.first, &mut self.more) {
            (_, Some(more)) => more.extend_from_slice(&chunk),
            (None, None) => self.first = Some(chunk),
            (Some(first), None) => {
                let mut more = BytesMut::with_capacity(first.len() + chunk.len());
                more.extend_from_slice(first);
                more.extend_from_slice(&chunk);
                self.more = Some(more);
            }
        }
    }

    fn take(&mut self) -> Option<Bytes> {
        let first = self.first.take();
        self.more.take().map(BytesMut::freeze).or(first)
    }
}

/// The message of a body that is exactly one uncompressed gRPC message.
fn message(data: &[u8]) -> Option<&[u8]> {
    let (prefix, message) = data.split_at_checked(PREFIX)?;
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
    (prefix[0] == 0 && message.len() == usize::try_from(length).ok()?).then_some(message)
}

/// Decodes the request, calls `method` as tonic would and takes what it answers; a body that
/// is not one message prost decodes comes back for tonic.
async fn answer<M, R, F>(
    parts: http::request::Parts,
    data: Bytes,
    method: impl FnOnce(Request<M>) -> F,
) -> Result<Answered, (http::request::Parts, Bytes)>
where
    M: Message + Default,
    R: Message,
    F: Future<Output = Result<Response<R>, Status>>,
{
    let Some(decoded) = message(&data).and_then(|m| M::decode(m).ok()) else {
        return Err((parts, data));
    };
    drop(data);
    let request = Request::from_http(http::Request::from_parts(parts, decoded));
    Ok(match method(request).await {
        Ok(response) => Answered::Message(written(response)),
        Err(status) => Answered::Failed(status),
    })
}

/// A method's answer as tonic sends it: its metadata and `content-type: application/grpc` in
/// the head, its extensions, and the message behind its prefix.
fn written<R: Message>(response: Response<R>) -> http::Response<Bytes> {
    let (metadata, message, extensions) = response.into_parts();
    let len = message.encoded_len();
    let mut frame = BytesMut::with_capacity(PREFIX + len);
    frame.put_u8(0);
    // An answer past 4 GiB cannot be sent; none comes near (tonic would fail it the same way).
    frame.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut frame);
    let mut out = http::Response::new(frame.freeze());
    *out.version_mut() = http::Version::HTTP_2;
    // The methods set no metadata; were one to, tonic would send it here too.
    *out.headers_mut() = metadata.into_headers();
    out.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    *out.extensions_mut() = extensions;
    out
}

/// A unary answer's body: one message, then the OK trailer.
struct Answer {
    message: Option<Bytes>,
    trailers: bool,
}

impl HttpBody for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(message) = this.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        if std::mem::take(&mut this.trailers) {
            return Poll::Ready(Some(Ok(Frame::trailers(ok_trailers()))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && !self.trailers
    }
}

/// A request body given to tonic after this path read some of it: what was read, the frame or
/// error that made it stop, then the rest.
pub(super) struct Replay<B: HttpBody> {
    read: Option<Bytes>,
    next: Option<Result<Frame<Bytes>, B::Error>>,
    rest: Option<B>,
}

impl<B: HttpBody> Replay<B> {
    fn new(
        read: Option<Bytes>,
        next: Option<Result<Frame<Bytes>, B::Error>>,
        rest: Option<B>,
    ) -> Replay<B> {
        Replay { read, next, rest }
    }
}

impl<B> HttpBody for Replay<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if let Some(read) = this.read.take() {
            return Poll::Ready(Some(Ok(Frame::data(read))));
        }
        if let Some(next) = this.next.take() {
            return Poll::Ready(Some(next));
        }
        match &mut this.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_none()
            && self.next.is_none()
            && self.rest.as_ref().is_none_or(HttpBody::is_end_stream)
    }
}

#[cfg(test)]
pub(super) mod tests;
