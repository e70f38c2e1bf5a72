//! The body of one open change stream: the opening lines, then an event per new revision and a
//! heartbeat when nothing else was sent, until the environment stops being served (removed, or
//! the proxy shutting down) or the client goes away (the body is dropped).
//!
//! A stream holds a receiver of the environment's revision cell (a pointer and a version
//! number), its heartbeat timer and a share of the rendered announcement: no queue, no copy.
//! Revisions that arrive faster than a connection drains collapse into the latest, which is
//! what a client needs: "refetch now". A Flagsmith stream skips an announcement whose content is
//! what it last told (a stale switch: the SDKs' bodies do not change).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use http_body::Frame;
use tokio_stream::wrappers::WatchStream;
use tokio_stream::Stream;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::event::{Format, Rendered};
use crate::store::Revision;

/// The latest announcement of one environment, rendered once and shared by its streams.
#[derive(Debug, Default)]
pub(super) struct Announcements {
    latest: ArcSwapOption<Rendered>,
}

impl Announcements {
    /// `revision` rendered: the shared rendering when it is current, else rendered now and
    /// shared from then on (two streams racing render twice; both results are equal).
    pub(super) fn of(&self, revision: &Revision) -> Arc<Rendered> {
        if let Some(latest) = self.latest.load_full() {
            if latest.renders(revision) {
                return latest;
            }
        }
        let rendered = Arc::new(Rendered::of(revision));
        self.latest.store(Some(rendered.clone()));
        rendered
    }
}

/// Holds one place under the connection cap while the stream is open.
pub(super) struct OpenGuard(pub(super) Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub struct EventStream {
    pub(super) format: Format,
    pub(super) first: Option<Bytes>,
    pub(super) changes: WatchStream<Option<Arc<Revision>>>,
    /// What the client was last told (or had when it opened).
    pub(super) told: Option<Arc<Revision>>,
    pub(super) announcements: Arc<Announcements>,
    /// The environment's stop token: removed by discovery, or the proxy shutting down.
    pub(super) stopped: Pin<Box<WaitForCancellationFutureOwned>>,
    pub(super) ticks: tokio::time::Interval,
    pub(super) _guard: OpenGuard,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventStream")
    }
}

impl http_body::Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if this.stopped.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        loop {
            match Pin::new(&mut this.changes).poll_next(cx) {
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Some(revision))) => {
                    let same_content = this.told.as_ref().is_some_and(|told| {
                        told.updated_at_ms == revision.updated_at_ms
                            && told.content_revision == revision.content_revision
                    });
                    if same_content && this.format == Format::Flagsmith {
                        this.told = Some(revision);
                        continue;
                    }
                    this.ticks.reset();
                    let bytes = this.announcements.of(&revision).bytes(this.format);
                    this.told = Some(revision);
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                Poll::Ready(Some(None)) | Poll::Pending => break,
            }
        }
        if this.ticks.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": ping\n\n")))));
        }
        Poll::Pending
    }
}
