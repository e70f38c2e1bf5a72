//! A call that runs on a task of its own: its `h2` request body as an `http_body::Body` for the
//! dispatch, and the dispatch's answer piped back to the stream, as hyper does it: the head,
//! each data frame once the peer's window has room, then trailers or an empty final frame; a
//! reset from the client ends the call at any point.

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http_body::{Body as HttpBody, Frame};

use super::super::dispatch::{dispatch, Front};

/// A request body arriving on an `h2` stream, after what was already taken from it (`read`).
pub(in crate::flagd) struct Incoming {
    read: Option<Bytes>,
    stream: RecvStream,
    data_done: bool,
}

impl Incoming {
    pub(super) fn new(read: Option<Bytes>, stream: RecvStream) -> Incoming {
        Incoming {
            read,
            stream,
            data_done: false,
        }
    }
}

impl HttpBody for Incoming {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let this = self.get_mut();
        if let Some(read) = this.read.take() {
            return Poll::Ready(Some(Ok(Frame::data(read))));
        }
        if !this.data_done {
            match ready!(this.stream.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Read: the peer may send as much again.
                    let _ = this.stream.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => this.data_done = true,
            }
        }
        match ready!(this.stream.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_none() && self.stream.is_end_stream()
    }
}

/// Dispatches `request` and sends its answer on `respond`.
pub(super) async fn answer(
    front: Arc<Front>,
    request: http::Request<Incoming>,
    mut respond: SendResponse<Bytes>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) {
    let mut answering = pin!(dispatch(front, request, local, peer));
    // The answer, unless the client gives up on the call first.
    let answered = std::future::poll_fn(|cx| {
        if respond.poll_reset(cx).is_ready() {
            return Poll::Ready(None);
        }
        answering.as_mut().poll(cx).map(Some)
    })
    .await;
    let Some(Ok(response)) = answered else {
        return;
    };
    let (mut head, body) = response.into_parts();
    if body.is_end_stream() {
        let _ = respond.send_response(http::Response::from_parts(head, ()), true);
        return;
    }
    if let Some(len) = body.size_hint().exact() {
        head.headers
            .entry(http::header::CONTENT_LENGTH)
            .or_insert_with(|| len.into());
    }
    if let Ok(out) = respond.send_response(http::Response::from_parts(head, ()), false) {
        pipe(body, out).await;
    }
}

/// Sends `body` on `out`, frame by frame, as the peer's window allows.
async fn pipe<B>(body: B, mut out: SendStream<Bytes>)
where
    B: HttpBody<Data = Bytes>,
{
    let mut body = pin!(body);
    loop {
        let frame = std::future::poll_fn(|cx| {
            if out.poll_reset(cx).is_ready() {
                return Poll::Ready(None);
            }
            body.as_mut().poll_frame(cx).map(Some)
        })
        .await;
        let frame = match frame {
            None => return,
            Some(None) => {
                let _ = out.send_data(Bytes::new(), true);
                return;
            }
            Some(Some(Err(_))) => {
                out.send_reset(Reason::INTERNAL_ERROR);
                return;
            }
            Some(Some(Ok(frame))) => frame,
        };
        match frame.into_data() {
            Ok(data) => {
                let last = body.is_end_stream();
                if !data.is_empty() && !room(&mut out).await {
                    return;
                }
                if out.send_data(data, last).is_err() || last {
                    return;
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    out.reserve_capacity(0);
                    let _ = out.send_trailers(trailers);
                    return;
                }
            }
        }
    }
}

/// Waits until the peer's window has some room: h2 takes the rest of a frame as it opens further
/// (claiming only a little, as hyper does, so one stream cannot pin the connection's window).
async fn room(out: &mut SendStream<Bytes>) -> bool {
    out.reserve_capacity(1);
    while out.capacity() == 0 {
        match std::future::poll_fn(|cx| out.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return false,
        }
    }
    true
}
