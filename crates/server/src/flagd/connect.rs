//! The Connect protocol (connectrpc.com's spec) for both flagd services, on the flagd listener's
//! HTTP/1.1 and HTTP/2 connections beside gRPC: unary calls (`application/proto`,
//! `application/json`) and `EventStream` as a server stream (`application/connect+proto`,
//! `application/connect+json`). The Go flagd provider speaks it (connect-go, HTTP/1.1).
//!
//! Served here on hyper rather than through a crate: no maintained Rust Connect server fits
//! beside tonic on one listener without a second router and its per-request layers, and the
//! framing is small (a unary body is the bare message; a stream is 5-byte-prefixed envelopes
//! ending with a JSON end-of-stream envelope). The calls themselves go to the same service
//! methods gRPC calls, so both protocols give the same answers. A unary answer is one
//! pre-sized buffer, written with its headers at once.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use http::{header, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Frame;
use prost::Message;
use tokio_stream::StreamExt;
use tonic::transport::server::TcpConnectInfo;
use tonic::{Code, Status};

use super::connect_json::Json;
use super::{all, v1, v2, Connection, Flagd};
use crate::api::request_body::media_type;
use crate::telemetry::otel::spans::FlagEvaluated;

/// What a Connect response is made of.
pub(crate) type Body = tonic::body::Body;

/// The largest request body accepted.
const MAX_REQUEST_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    Proto,
    Json,
}

/// Serves one Connect request (anything on the flagd listener that is not gRPC).
pub(crate) async fn handle<B>(
    flagd: &Flagd,
    request: http::Request<B>,
    peer: Option<SocketAddr>,
) -> http::Response<Body>
where
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: Into<tonic::codegen::StdError>,
{
    let (parts, body) = request.into_parts();
    let content_type = media_type(&parts.headers).unwrap_or_default();
    let (streaming, codec) = match content_type.as_str() {
        "application/proto" => (false, Codec::Proto),
        "application/json" => (false, Codec::Json),
        "application/connect+proto" => (true, Codec::Proto),
        "application/connect+json" => (true, Codec::Json),
        _ => {
            return unary_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &Status::unimplemented(
                    "expected application/proto, application/json, application/connect+proto, \
                     application/connect+json or application/grpc",
                ),
            )
        }
    };
    if parts.method != Method::POST {
        return unary_error(
            StatusCode::METHOD_NOT_ALLOWED,
            &Status::unimplemented("Connect calls here are POSTs"),
        );
    }
    let body = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return unary_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Status::resource_exhausted("the request body is too large or unreadable"),
            )
        }
    };
    let call = Call {
        connection: parts.extensions.get::<Arc<Connection>>().cloned(),
        headers: parts.headers,
        peer,
        codec,
    };
    let path = parts.uri.path();
    let (version, method) = match path.strip_prefix("/flagd.evaluation.") {
        Some(rest) => rest.split_once(".Service/").unwrap_or(("", "")),
        None => ("", ""),
    };
    macro_rules! unary {
        ($v:ident, $method:ident) => {
            call.unary(&body, |r| {
                <Flagd as $v::service_server::Service>::$method(flagd, r)
            })
            .await
        };
    }
    macro_rules! events {
        ($v:ident) => {
            call.events::<$v::EventStreamRequest, _, _>(&body, streaming, |r| {
                <Flagd as $v::service_server::Service>::event_stream(flagd, r)
            })
            .await
        };
    }
    match (version, method, streaming) {
        ("v1", "EventStream", _) => events!(v1),
        ("v2", "EventStream", _) => events!(v2),
        (_, _, true) => unary_error(
            StatusCode::NOT_FOUND,
            &Status::unimplemented(format!("no server stream at {path}")),
        ),
        ("v1", "ResolveBoolean", _) => unary!(v1, resolve_boolean),
        ("v1", "ResolveString", _) => unary!(v1, resolve_string),
        ("v1", "ResolveFloat", _) => unary!(v1, resolve_float),
        ("v1", "ResolveInt", _) => unary!(v1, resolve_int),
        ("v1", "ResolveObject", _) => unary!(v1, resolve_object),
        ("v1", "ResolveAll", _) => {
            call.all::<v1::ResolveAllRequest>(flagd, &body, false, |m| m.context)
        }
        ("v2", "ResolveBoolean", _) => unary!(v2, resolve_boolean),
        ("v2", "ResolveString", _) => unary!(v2, resolve_string),
        ("v2", "ResolveFloat", _) => unary!(v2, resolve_float),
        ("v2", "ResolveInt", _) => unary!(v2, resolve_int),
        ("v2", "ResolveObject", _) => unary!(v2, resolve_object),
        ("v2", "ResolveAll", _) => {
            call.all::<v2::ResolveAllRequest>(flagd, &body, true, |m| m.context)
        }
        _ => unary_error(
            StatusCode::NOT_FOUND,
            &Status::unimplemented(format!("no procedure at {path}")),
        ),
    }
}

/// One Connect call: who asks and in which codec.
struct Call {
    headers: http::HeaderMap,
    peer: Option<SocketAddr>,
    connection: Option<Arc<Connection>>,
    codec: Codec,
}

impl Call {
    fn decode<M: Message + Default + Json>(&self, bytes: &[u8]) -> Result<M, Status> {
        match self.codec {
            Codec::Proto => M::decode(bytes)
                .map_err(|e| Status::invalid_argument(format!("the request is not valid: {e}"))),
            Codec::Json => {
                let value: serde_json::Value = if bytes.is_empty() {
                    serde_json::Value::Object(Default::default())
                } else {
                    serde_json::from_slice(bytes).map_err(|e| {
                        Status::invalid_argument(format!("the request is not JSON: {e}"))
                    })?
                };
                M::from_json(&value).map_err(Status::invalid_argument)
            }
        }
    }

    fn encode<M: Message + Json>(&self, message: &M) -> Bytes {
        match self.codec {
            Codec::Proto => message.encode_to_vec().into(),
            Codec::Json => crate::json::to_vec(&message.to_json()).into(),
        }
    }

    /// The call as tonic hands it to the service: metadata from the headers, the peer known.
    fn request<M>(&self, message: M) -> tonic::Request<M> {
        let mut extensions = tonic::Extensions::new();
        extensions.insert(TcpConnectInfo {
            local_addr: None,
            remote_addr: self.peer,
        });
        if let Some(connection) = &self.connection {
            extensions.insert(connection.clone());
        }
        tonic::Request::from_parts(
            tonic::metadata::MetadataMap::from_headers(self.headers.clone()),
            extensions,
            message,
        )
    }

    async fn unary<Req, Resp, F, Fut>(&self, body: &[u8], method: F) -> http::Response<Body>
    where
        Req: Message + Default + Json,
        Resp: Message + Json,
        F: FnOnce(tonic::Request<Req>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<Resp>, Status>>,
    {
        let message = match self.decode::<Req>(body) {
            Ok(message) => message,
            Err(status) => return unary_error(http_status(status.code()), &status),
        };
        match method(self.request(message)).await {
            Ok(response) => {
                let mut out = self.answer(self.encode(response.get_ref()));
                if let Some(flag) = response.extensions().get::<FlagEvaluated>() {
                    out.extensions_mut().insert(flag.clone());
                }
                out
            }
            Err(status) => {
                let mut out = unary_error(http_status(status.code()), &status);
                // The call's span reads a failed evaluation from it (as on gRPC).
                if crate::telemetry::otel::tracer().is_some() {
                    out.extensions_mut().insert(status);
                }
                out
            }
        }
    }

    /// `ResolveAll`, whose answer is written in the call's codec as it is resolved (`all`).
    fn all<Req: Message + Default + Json>(
        &self,
        flagd: &Flagd,
        body: &[u8],
        v2: bool,
        context: impl FnOnce(Req) -> Option<prost_types::Struct>,
    ) -> http::Response<Body> {
        let form = match self.codec {
            Codec::Proto => all::Form::Proto { v2 },
            Codec::Json => all::Form::Json,
        };
        let answer = self
            .decode::<Req>(body)
            .and_then(|message| flagd.all(self.request(message), context, form));
        match answer {
            Ok(bytes) => self.answer(bytes),
            Err(status) => unary_error(http_status(status.code()), &status),
        }
    }

    /// A unary answer: the encoded message, in one buffer.
    fn answer(&self, bytes: Bytes) -> http::Response<Body> {
        let mut out = http::Response::new(Body::new(Full::new(bytes)));
        out.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(match self.codec {
                Codec::Proto => "application/proto",
                Codec::Json => "application/json",
            }),
        );
        out
    }

    /// `EventStream`: enveloped messages, then the end-of-stream envelope.
    async fn events<Req, Resp, F>(
        &self,
        body: &[u8],
        streaming: bool,
        method: impl FnOnce(tonic::Request<Req>) -> F,
    ) -> http::Response<Body>
    where
        Req: Message + Default + Json,
        Resp: Message + Json + Send + 'static,
        F: std::future::Future<Output = Result<tonic::Response<super::Events<Resp>>, Status>>,
    {
        if !streaming {
            return unary_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &Status::unimplemented("EventStream is a server stream: use application/connect+*"),
            );
        }
        let codec = self.codec;
        let content_type = HeaderValue::from_static(match codec {
            Codec::Proto => "application/connect+proto",
            Codec::Json => "application/connect+json",
        });
        let message = unwrap_envelope(body).and_then(|m| self.decode::<Req>(m));
        let opened = match message {
            Ok(message) => method(self.request(message)).await,
            Err(status) => Err(status),
        };
        let body = match opened {
            Ok(stream) => {
                let frames = stream.into_inner().map(move |item| {
                    let bytes = match item {
                        Ok(message) => envelope(
                            0,
                            &match codec {
                                Codec::Proto => message.encode_to_vec(),
                                Codec::Json => crate::json::to_vec(&message.to_json()),
                            },
                        ),
                        Err(status) => end_of_stream(Some(&status)),
                    };
                    Ok::<_, std::convert::Infallible>(Frame::data(bytes))
                });
                let end = tokio_stream::once(Ok(Frame::data(end_of_stream(None))));
                Body::new(StreamBody::new(frames.chain(end)))
            }
            Err(status) => Body::new(Full::new(end_of_stream(Some(&status)))),
        };
        let mut out = http::Response::new(body);
        out.headers_mut().insert(header::CONTENT_TYPE, content_type);
        out
    }
}

/// The message inside a streaming request's single envelope (flags must be 0: uncompressed).
fn unwrap_envelope(body: &[u8]) -> Result<&[u8], Status> {
    if body.is_empty() {
        return Ok(body);
    }
    let invalid = || Status::invalid_argument("the request is not one Connect envelope");
    let (head, rest) = body.split_at_checked(5).ok_or_else(invalid)?;
    let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if head[0] != 0 || rest.len() != length {
        return Err(invalid());
    }
    Ok(rest)
}

fn envelope(flags: u8, message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(flags);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// The end-of-stream envelope: `{}`, or the error that ended the stream.
fn end_of_stream(error: Option<&Status>) -> Bytes {
    let json = match error {
        None => serde_json::json!({}),
        Some(status) => serde_json::json!({"error": error_json(status)}),
    };
    envelope(2, &crate::json::to_vec(&json))
}

fn error_json(status: &Status) -> serde_json::Value {
    serde_json::json!({"code": code_name(status.code()), "message": status.message()})
}

/// A unary error: its HTTP status and `{"code", "message"}`.
fn unary_error(http: StatusCode, status: &Status) -> http::Response<Body> {
    let mut out = http::Response::new(Body::new(Full::new(Bytes::from(crate::json::to_vec(
        &error_json(status),
    )))));
    *out.status_mut() = http;
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

/// Connect's names of the gRPC codes.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "canceled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The code a Connect answer's HTTP status stands for (the inverse of [`http_status`], for the
/// call's span: a unary error's code is in its body).
pub(crate) fn code_of(status: StatusCode) -> Code {
    match status {
        StatusCode::OK => Code::Ok,
        StatusCode::BAD_REQUEST => Code::InvalidArgument,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::CONFLICT => Code::Aborted,
        StatusCode::PRECONDITION_FAILED => Code::FailedPrecondition,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::PAYLOAD_TOO_LARGE => Code::ResourceExhausted,
        StatusCode::REQUEST_TIMEOUT => Code::Cancelled,
        StatusCode::GATEWAY_TIMEOUT => Code::DeadlineExceeded,
        StatusCode::SERVICE_UNAVAILABLE => Code::Unavailable,
        StatusCode::UNSUPPORTED_MEDIA_TYPE | StatusCode::METHOD_NOT_ALLOWED => Code::Unimplemented,
        _ => Code::Internal,
    }
}

/// Connect's HTTP status for a code.
fn http_status(code: Code) -> StatusCode {
    match code {
        Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound | Code::Unimplemented => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::FailedPrecondition => StatusCode::PRECONDITION_FAILED,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Cancelled => StatusCode::REQUEST_TIMEOUT,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::Ok => StatusCode::OK,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
