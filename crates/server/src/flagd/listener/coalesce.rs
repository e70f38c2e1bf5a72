//! The flagd listener's HTTP/2 sockets, with what one turn of a connection writes sent together.
//!
//! h2 flushes whenever its connection has read all there is, and that is before the calls just
//! read are answered: the gRPC-Go client sends a PING with each request (its bandwidth
//! estimator), so the ACK would go out alone and the answer in a second send, each costing the
//! server the whole loopback TCP path (the receiving side runs on the sender's core). So writes
//! go to a buffer here, and a flush in a turn (one poll of the connection's task) that read
//! something is held back. [`Turns::drive`] then polls once more at once when every call read
//! was answered on the connection's task (`h2`), or, when one was handed to a task of its
//! own, wakes the task instead, so that the new task runs first and its answer joins the same
//! send. A flush in any other turn sends at once, so nothing waits for more than one turn.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Past this many unsent bytes a write sends what is buffered first.
const LIMIT: usize = 64 * 1024;
/// A buffer that grew past this (a large answer) is given back once sent: idle connections
/// (event streams) keep only a small one.
const KEEP: usize = 16 * 1024;

/// The connection task's current turn and what happened in it, shared by its socket, its
/// accept loop and [`Turns::drive`]. Only that task touches it (atomics only to be `Send`).
#[derive(Clone, Default)]
pub(crate) struct Turns(Arc<TurnState>);

#[derive(Default)]
struct TurnState {
    now: AtomicU64,
    /// A flush was held back in this turn.
    held: AtomicBool,
    /// A call read in this turn went to a task of its own.
    handed_off: AtomicBool,
}

impl Turns {
    fn now(&self) -> u64 {
        self.0.now.load(Ordering::Relaxed)
    }

    /// A call read in this turn is answered on a task of its own.
    pub(crate) fn handed_off(&self) {
        self.0.handed_off.store(true, Ordering::Relaxed);
    }

    fn held(&self) {
        self.0.held.store(true, Ordering::Relaxed);
    }

    /// Runs `future` (the connection), counting each poll as a turn, and sends a held flush as
    /// described above.
    pub(crate) async fn drive<F: Future>(self, future: F) -> F::Output {
        let mut future = pin!(future);
        std::future::poll_fn(|cx| loop {
            // Only this task writes these: no read-modify-write needed.
            let state = &self.0;
            state
                .now
                .store(self.now().wrapping_add(1), Ordering::Relaxed);
            state.held.store(false, Ordering::Relaxed);
            state.handed_off.store(false, Ordering::Relaxed);
            if let Poll::Ready(out) = future.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if !state.held.load(Ordering::Relaxed) {
                return Poll::Pending;
            }
            if state.handed_off.load(Ordering::Relaxed) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        })
        .await
    }
}

/// A socket whose writes are buffered and sent as described above.
pub(crate) struct Coalesced<IO> {
    io: IO,
    /// Written, not yet sent; its first `sent` bytes already are.
    buf: Vec<u8>,
    sent: usize,
    turns: Turns,
    /// The turn that last read something.
    read_in: u64,
    /// The turn whose flush was held back, while it is.
    held_in: Option<u64>,
}

impl<IO> Coalesced<IO> {
    pub(crate) fn new(io: IO, turns: Turns) -> Coalesced<IO> {
        Coalesced {
            io,
            buf: Vec::new(),
            sent: 0,
            turns,
            read_in: u64::MAX,
            held_in: None,
        }
    }

    fn unsent(&self) -> usize {
        self.buf.len() - self.sent
    }

    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

impl<IO: AsyncWrite + Unpin> Coalesced<IO> {
    /// Sends everything buffered.
    fn send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.sent = 0;
        if self.buf.capacity() > KEEP {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.held_in = None;
        Poll::Ready(Ok(()))
    }

    /// Room for `len` more bytes: sends first if the buffer would pass [`LIMIT`].
    fn make_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<()>> {
        if self.unsent() > 0 && self.unsent() + len > LIMIT {
            ready!(self.send(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalesced<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let now = this.turns.now();
        // h2 flushes in every turn, so a held flush goes out in the next one, after the answers
        // have joined it; should a turn pass without a flush, the next read sends what waits.
        if this.held_in.is_some_and(|turn| now.wrapping_sub(turn) > 1) {
            if let Poll::Ready(Err(e)) = this.send(cx) {
                return Poll::Ready(Err(e));
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            this.read_in = now;
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Coalesced<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.make_room(cx, buf.len()))?;
        this.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = bufs.iter().map(|b| b.len()).sum();
        ready!(this.make_room(cx, len))?;
        for b in bufs {
            this.push(b);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.unsent() > 0 {
            let now = this.turns.now();
            match this.held_in {
                Some(turn) if turn == now => return Poll::Pending,
                None if this.read_in == now => {
                    this.held_in = Some(now);
                    this.turns.held();
                    return Poll::Pending;
                }
                _ => ready!(this.send(cx))?,
            }
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.send(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A read, a write and a flush in one turn: held back, then sent with the next turn's write:
    /// at once when the turn answered what it read itself, after a wake-up when it handed a call
    /// to a task of its own (which then runs first).
    #[tokio::test]
    async fn a_flush_after_a_read_waits_one_turn_and_sends_everything_at_once() {
        for handed_off in [false, true] {
            let (ours, mut theirs) = tokio::io::duplex(1024);
            let turns = Turns::default();
            let mut io = Coalesced::new(ours, turns.clone());
            theirs.write_all(b"ping").await.unwrap();
            let mut turn = 0;
            let handle = turns.clone();
            let connection = turns.drive(std::future::poll_fn(|cx| {
                turn += 1;
                let mut io = Pin::new(&mut io);
                if turn == 1 {
                    let mut space = [0u8; 16];
                    let mut read = ReadBuf::new(&mut space);
                    assert!(io.as_mut().poll_read(cx, &mut read).is_ready());
                    assert!(io.as_mut().poll_write(cx, b"ack").is_ready());
                    assert!(io.as_mut().poll_flush(cx).is_pending(), "held");
                    assert!(
                        io.as_mut().poll_flush(cx).is_pending(),
                        "held all this turn"
                    );
                    if handed_off {
                        handle.handed_off();
                    }
                    return Poll::Pending;
                }
                assert!(io.as_mut().poll_write(cx, b"+answer").is_ready());
                io.poll_flush(cx)
            }));
            {
                let mut connection = pin!(connection);
                let first =
                    std::future::poll_fn(|cx| Poll::Ready(connection.as_mut().poll(cx))).await;
                assert_eq!(first.is_pending(), handed_off, "a second turn at once");
                if first.is_pending() {
                    tokio::time::timeout(std::time::Duration::from_secs(10), connection)
                        .await
                        .expect("the held flush wakes the task")
                        .unwrap();
                }
            }
            assert_eq!(turn, 2);
            let mut got = [0u8; 10];
            theirs.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"ack+answer");
        }
    }

    /// A flush in a turn that read nothing sends at once.
    #[tokio::test]
    async fn a_flush_without_a_read_sends_at_once() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let mut io = Coalesced::new(ours, Turns::default());
        io.write_all(b"answer").await.unwrap();
        io.flush().await.unwrap();
        let mut got = [0u8; 6];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"answer");
    }
}
