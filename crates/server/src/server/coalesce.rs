//! The flagd listener's sockets, with what one turn of a connection writes sent together.
//!
//! hyper's HTTP/2 server flushes at the end of every turn of the connection's task (one poll of
//! its future), and the answer to a call is made on the call's own task, which runs after that
//! turn. The gRPC-Go client sends a PING with each request (its bandwidth estimator), so the
//! turn that reads a request flushes the PING ACK alone and the answer follows in a second send
//! on the next turn: two sends per unary call, each costing the server the whole loopback TCP
//! path (the receiving side runs on the sender's core). So writes go to a buffer here, and a
//! flush in a turn that read something is held back for one turn: the task wakes itself, the
//! calls that read started run first (tokio runs a task just spawned before one that woke
//! itself), and their answers join the same send. A flush in any other turn, and every flush
//! one turn after it was held, sends at once, so nothing waits for more than one turn.
//! [`Turns::drive`] numbers the turns.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Past this many unsent bytes a write sends what is buffered first.
const LIMIT: usize = 64 * 1024;
/// A buffer that grew past this (a large answer) is given back once sent: idle connections
/// (event streams) keep only a small one.
const KEEP: usize = 16 * 1024;

/// The number of the connection task's current turn, shared by its socket and [`Turns::drive`].
#[derive(Clone, Default)]
pub(crate) struct Turns(Arc<AtomicU64>);

impl Turns {
    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `future` (the connection), counting each poll as a turn.
    pub(crate) async fn drive<F: Future>(self, future: F) -> F::Output {
        let mut future = pin!(future);
        std::future::poll_fn(|cx| {
            // Only this task writes the count: no read-modify-write needed.
            self.0.store(self.now().wrapping_add(1), Ordering::Relaxed);
            future.as_mut().poll(cx)
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
        // hyper flushes in every turn (HTTP/1 and HTTP/2), so a held flush goes out in the next
        // one, after the answers have joined it; should a turn pass without a flush, the next
        // read sends what waits (a read in the very next turn would come before the answers).
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
                    cx.waker().wake_by_ref();
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

    /// A read, a write and a flush in one turn: held back, then sent with the next turn's write.
    #[tokio::test]
    async fn a_flush_after_a_read_waits_one_turn_and_sends_everything_at_once() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let turns = Turns::default();
        let mut io = Coalesced::new(ours, turns.clone());
        theirs.write_all(b"ping").await.unwrap();
        let mut turn = 0;
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
                return Poll::Pending;
            }
            assert!(io.as_mut().poll_write(cx, b"+answer").is_ready());
            io.poll_flush(cx)
        }));
        tokio::time::timeout(std::time::Duration::from_secs(10), connection)
            .await
            .expect("the held flush wakes the task")
            .unwrap();
        assert_eq!(turn, 2);
        let mut got = [0u8; 10];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ack+answer");
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
