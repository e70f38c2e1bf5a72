//! The flagd listener's HTTP/2 connections, served on `h2` directly rather than through hyper.
//!
//! hyper hands every stream to a task of its own and pipes its answer back through the
//! connection's task: for a unary call of 60 bytes that is a spawn, two wake-ups and two more
//! polls of the connection, each a large share of what the call costs. Here the hot calls (the
//! typed resolvers and `ResolveAll`, as `unary` serves them) are answered on the
//! connection's own task as they are accepted: their whole body has nearly always arrived with
//! the head, and the methods do no I/O. Everything else (`EventStream`, Connect, a body still on
//! its way, a compressed one, any call while spans are exported) goes to a task of its own and
//! through the same dispatch as an HTTP/1.1 request (`dispatch`), its answer piped back
//! (`stream`). The settings are hyper's defaults, so clients see the same server as before.

mod stream;
#[cfg(test)]
mod tests;

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::coalesce::Turns;
use super::dispatch::Front;
use super::unary::{self, Answered};
use crate::flagd::Connection;

/// hyper's HTTP/2 server defaults (`hyper::proto::h2::server`), which the listener had before.
const WINDOW: u32 = 1024 * 1024;
const MAX_FRAME: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 400 * 1024;
const MAX_CONCURRENT_STREAMS: u32 = 200;
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Who is calling: what each call of the connection carries.
#[derive(Clone)]
pub(super) struct Caller {
    /// What this connection presents keys for: its key-less event streams follow it.
    pub presented: Arc<Connection>,
    pub local: Option<SocketAddr>,
    pub peer: SocketAddr,
}

/// Serves one HTTP/2 connection until it closes; when `stopping` is cancelled it sends GOAWAY
/// and lets the calls in flight finish.
pub(super) async fn serve<IO>(
    io: IO,
    front: Arc<Front>,
    caller: Caller,
    turns: Turns,
    max_header_bytes: usize,
    stopping: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut builder = h2::server::Builder::new();
    builder
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .max_frame_size(MAX_FRAME)
        .max_header_list_size(u32::try_from(max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_send_buffer_size(MAX_SEND_BUFFER);
    let mut connection = match builder.handshake::<_, Bytes>(io).await {
        Ok(connection) => connection,
        Err(e) => {
            tracing::debug!(error = %e, "flagd listener: HTTP/2 handshake failed");
            return;
        }
    };
    let mut stopping = pin!(stopping.cancelled_owned());
    let mut closing = false;
    loop {
        let accepted = std::future::poll_fn(|cx| {
            if !closing && stopping.as_mut().poll(cx).is_ready() {
                connection.graceful_shutdown();
                closing = true;
            }
            connection.poll_accept(cx)
        })
        .await;
        match accepted {
            Some(Ok((request, respond))) => call(&front, &caller, &turns, request, respond).await,
            Some(Err(e)) => {
                tracing::debug!(error = %e, "flagd listener: HTTP/2 connection failed");
                return;
            }
            None => return,
        }
    }
}

/// One call: a hot one answered here if its body is all in, anything else on a task of its own.
async fn call(
    front: &Arc<Front>,
    caller: &Caller,
    turns: &Turns,
    request: http::Request<RecvStream>,
    respond: SendResponse<Bytes>,
) {
    let (mut parts, mut body) = request.into_parts();
    parts.extensions.insert(caller.presented.clone());
    let mut read = None;
    // With spans exported every call goes through `dispatch`, where its span is made.
    let hot = crate::telemetry::otel::tracer().is_none();
    if let Some(unary) = hot
        .then(|| front.hot(&parts.headers, parts.uri.path()))
        .flatten()
    {
        match whole(&mut body) {
            Body::Whole(data) => match unary::call(&front.flagd, unary, parts, data).await {
                Ok(answered) => return send(respond, answered),
                // Not a message of this path's: tonic reads it again, from the start.
                Err((back, data)) => {
                    parts = back;
                    read = Some(data).filter(|d| !d.is_empty());
                }
            },
            Body::Partly(data) => read = data,
        }
    }
    turns.handed_off();
    let request = http::Request::from_parts(parts, stream::Incoming::new(read, body));
    let (local, peer) = (caller.local, caller.peer);
    let answer = stream::answer(front.clone(), request, respond, local, peer);
    front.tasks.spawn(answer);
}

/// A request body as far as it has arrived.
enum Body {
    /// All of it (and no trailers).
    Whole(Bytes),
    /// Not all of it yet (or trailers, or an error): what was taken, for the rest to follow.
    Partly(Option<Bytes>),
}

/// Takes what has arrived of `body` without waiting: all of a unary call's usually has.
fn whole(body: &mut RecvStream) -> Body {
    // Nothing waits on this poll: if the body is not all in, the call's own task reads the rest.
    let mut cx = Context::from_waker(Waker::noop());
    match body.poll_data(&mut cx) {
        Poll::Ready(Some(Ok(data))) => {
            // The bytes are ours now: the window may open for more.
            let _ = body.flow_control().release_capacity(data.len());
            match body.is_end_stream() {
                true => Body::Whole(data),
                false => Body::Partly(Some(data)),
            }
        }
        Poll::Ready(None) if body.is_end_stream() => Body::Whole(Bytes::new()),
        _ => Body::Partly(None),
    }
}

/// Sends a hot call's answer: the head, the message and the OK trailer, or a trailers-only error.
fn send(mut respond: SendResponse<Bytes>, answered: Answered) {
    // A failed send means the client reset the stream or the connection is gone: nothing to do.
    match answered {
        Answered::Message(response) => {
            let (head, message) = response.into_parts();
            if let Ok(mut out) = respond.send_response(http::Response::from_parts(head, ()), false)
            {
                if out.send_data(message, false).is_ok() {
                    let _ = out.send_trailers(unary::ok_trailers());
                }
            }
        }
        Answered::Failed(status) => {
            let (head, ()) = status.into_http::<()>().into_parts();
            let _ = respond.send_response(http::Response::from_parts(head, ()), true);
        }
    }
}
