//! The listener: HTTP/1.1 and HTTP/2 on one port, TCP_NODELAY, a hard cap on request-header
//! size (4× the configured limit; the service answers 431 with a JSON body above the limit
//! itself), a header read timeout against slow clients, and graceful shutdown: stop
//! accepting, let requests in flight finish (bounded), close idle connections at once.
//!
//! Each connection's first request head is read here first: a change-stream request is served
//! straight on the socket (`direct_stream`, far less memory per idle stream), everything
//! else by hyper.

pub mod direct_stream;
pub mod grpc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::Api;
use crate::config::Config;
use direct_stream::{Prefixed, Sniffed};

/// Serves `api` on `listener` until `stopping` is cancelled, then drains for at most
/// `config.server.shutdown_timeout`: connections waiting for a first request close at once, hyper's
/// connections finish their requests in flight, streams served on the socket end (their
/// environments' tokens are children of `stopping`).
/// Returns the time by which the whole shutdown should be over: the drain began, plus
/// `shutdown_timeout` (what is left of it is the background work's budget).
pub async fn serve(
    listener: TcpListener,
    api: Api,
    config: &Config,
    stopping: CancellationToken,
) -> Instant {
    let header_read_timeout = config
        .limits
        .header_read_timeout
        .min(config.server.keep_alive_timeout.max(Duration::from_secs(1)));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .max_buf_size(direct_stream::hyper_head_limit(
            config.limits.max_header_bytes,
        ))
        .header_read_timeout(header_read_timeout)
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    // Every connection task: the drain waits for all of them, hyper's and the streams served
    // on the socket alike.
    let connections = TaskTracker::new();
    let max_head_bytes = config.limits.max_header_bytes;
    let write_timeout = config.limits.write_timeout;
    // At the connection cap the loop stops accepting: new connections wait in the kernel's
    // backlog until one closes (idle keep-alive connections close after the header read
    // timeout, so the cap cannot be held by idle clients for long).
    let capacity = Arc::new(tokio::sync::Semaphore::new(config.limits.max_connections));
    loop {
        let permit = tokio::select! {
            permit = capacity.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = stopping.cancelled() => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (builder, api, watcher) = (builder.clone(), api.clone(), graceful.watcher());
                let stopping = stopping.clone();
                connections.spawn(async move {
                    let _permit = permit;
                    let mut stream = stream;
                    // A connection still waiting for its first request head when shutdown
                    // begins closes at once, as idle keep-alive connections do.
                    let sniffed = tokio::select! {
                        sniffed = tokio::time::timeout(
                            header_read_timeout,
                            direct_stream::sniff(&mut stream, max_head_bytes),
                        ) => sniffed.unwrap_or(Sniffed::Closed),
                        () = stopping.cancelled() => Sniffed::Closed,
                    };
                    drop(stopping);
                    match sniffed {
                        Sniffed::Closed => {}
                        Sniffed::TooLarge(head_only) => {
                            let answer = api.headers_too_large();
                            direct_stream::serve(stream, answer, head_only, write_timeout).await;
                        }
                        Sniffed::Stream(request) => {
                            if let Some(response) = api.change_stream(&request) {
                                drop(request);
                                direct_stream::serve(stream, response, false, write_timeout).await;
                            }
                        }
                        Sniffed::Other(read) => {
                            let io = TokioIo::new(Prefixed::new(read, stream, write_timeout));
                            // Boxed so that a task serving a stream does not carry hyper's
                            // (much larger) connection state inline.
                            let connection = Box::pin(watcher.watch(
                                builder.serve_connection_with_upgrades(io, api).into_owned(),
                            ));
                            let _ = connection.await;
                        }
                    }
                });
            }
            () = stopping.cancelled() => break,
        }
    }
    drop(listener);
    let deadline = Instant::now() + config.server.shutdown_timeout;
    connections.close();
    tokio::select! {
        ((), ()) = async { tokio::join!(graceful.shutdown(), connections.wait()) } => {}
        () = tokio::time::sleep_until(deadline.into()) => {
            tracing::warn!("shutdown timeout reached with requests still in flight");
        }
    }
    deadline
}
