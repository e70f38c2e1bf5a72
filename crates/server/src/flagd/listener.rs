//! The flagd listener (`flagpole.grpc.port`): HTTP/1.1 and HTTP/2 without TLS on one port, as the
//! flagd providers speak it in RPC mode. Each connection's first bytes say which: HTTP/2 is
//! served on `h2` directly (`http2`: the hot calls answered on the connection's own task),
//! HTTP/1.1 by hyper; where each call then goes is `dispatch`'s. Each request carries
//! its connection's [`Connection`] (what the connection has presented keys for). TCP_NODELAY, the
//! writes of each turn of an HTTP/2 connection sent together (`coalesce`: one send per unary
//! call), and the main listener's shutdown: stop accepting, let calls in flight finish; event
//! streams end with the proxy's `stopping` token.
//! The main listener's protections apply here too, with their own budget: at most
//! `limits.max_connections` connections (past it, new ones wait in the kernel's backlog), request
//! heads bounded by `limits.max_header_bytes` (HTTP/1.1 and HTTP/2 alike), a connection that
//! has not said which protocol or sent an HTTP/1.1 head within the header read timeout is
//! closed, and a write the client does not read for `limits.write_timeout` ends its connection.

mod coalesce;
mod dispatch;
mod http2;
mod unary;

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::flagd::{Connection, Flagd};
use crate::server::direct_stream::Prefixed;
use crate::tasks::Tasks;
use coalesce::{Coalesced, Turns};
pub(crate) use dispatch::Services;
use dispatch::{dispatch, Front};
use flagpole_config::Config;
use http2::Caller;

/// Serves `flagd`'s `services` on `listener` until `stopping` is cancelled and the calls in
/// flight end (at most `config.server.shutdown_timeout`).
pub(crate) async fn serve(
    listener: TcpListener,
    flagd: Flagd,
    services: Services,
    config: Arc<Config>,
    stopping: CancellationToken,
) {
    let drain = config.server.shutdown_timeout;
    // Every connection task, and every call on a task of its own: the drain waits for them.
    let connections = Tasks::new();
    let front = Arc::new(Front::new(flagd, connections.clone(), services));
    let limits = Limits {
        max_header_bytes: config.limits.max_header_bytes,
        // An idle keep-alive connection is closed by the same timer.
        header_read_timeout: config
            .limits
            .header_read_timeout
            .min(config.server.keep_alive_timeout.max(Duration::from_secs(1))),
        write_timeout: config.limits.write_timeout,
    };
    let mut http1 = http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .max_buf_size(crate::server::direct_stream::hyper_head_limit(
            limits.max_header_bytes,
        ))
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let http1 = Arc::new(http1);
    let capacity = Arc::new(Semaphore::new(config.limits.max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        let permit = tokio::select! {
            permit = capacity.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = stopping.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "flagd listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopping.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let caller = Caller {
            presented: Connection::new(),
            local: stream.local_addr().ok(),
            peer,
        };
        let (front, http1, stopping) = (front.clone(), http1.clone(), stopping.clone());
        let watcher = graceful.watcher();
        connections.spawn(async move {
            let Ok(Ok((protocol, read))) =
                tokio::time::timeout(limits.header_read_timeout, sniff(&stream)).await
            else {
                return;
            };
            let io = Prefixed::new(read, stream, limits.write_timeout);
            match protocol {
                Protocol::Http2 => {
                    // Each turn's writes in one send (`coalesce`).
                    let turns = Turns::default();
                    let io = Coalesced::new(io, turns.clone());
                    let connection = http2::serve(
                        io,
                        front,
                        caller,
                        turns.clone(),
                        limits.max_header_bytes,
                        stopping,
                    );
                    turns.drive(connection).await;
                }
                Protocol::Http1 => {
                    let service =
                        hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
                            request.extensions_mut().insert(caller.presented.clone());
                            dispatch(front.clone(), request, caller.local, caller.peer)
                        });
                    let connection = http1.serve_connection(TokioIo::new(io), service);
                    let _ = watcher.watch(connection).await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(drain, async {
        tokio::join!(graceful.shutdown(), connections.wait())
    })
    .await
    .is_err()
    {
        tracing::warn!("flagd listener: calls still in flight at the shutdown timeout");
    }
}

/// The limits each connection is held to.
#[derive(Clone, Copy)]
struct Limits {
    max_header_bytes: usize,
    header_read_timeout: Duration,
    write_timeout: Duration,
}

/// What a client opens a connection with: HTTP/2's preface, or (anything else) HTTP/1.1.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum Protocol {
    Http1,
    Http2,
}

/// Reads until the first bytes say which protocol the connection speaks; what was read is
/// served again (`Prefixed`). A connection closed before that is an error.
async fn sniff(stream: &TcpStream) -> std::io::Result<(Protocol, Vec<u8>)> {
    let mut read = Vec::with_capacity(1024);
    loop {
        stream.readable().await?;
        let mut chunk = [0u8; 1024];
        let n = match stream.try_read(&mut chunk) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        read.extend_from_slice(&chunk[..n]);
        let seen = read.len().min(PREFACE.len());
        if read[..seen] != PREFACE[..seen] {
            return Ok((Protocol::Http1, read));
        }
        if seen == PREFACE.len() {
            return Ok((Protocol::Http2, read));
        }
    }
}
