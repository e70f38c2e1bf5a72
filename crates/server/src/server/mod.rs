//! The listener: HTTP/1.1 and HTTP/2 on one port, TCP_NODELAY, a hard cap on request-header
//! size (4× the configured limit; the service answers 431 with a JSON body above the limit
//! itself), a header read timeout against slow clients, and graceful shutdown: stop
//! accepting, let requests in flight finish (bounded), close idle connections at once.
//!
//! Each connection's first request head is read here first: a change-stream request is served
//! straight on the socket (`direct_stream`, far less memory per idle stream), everything
//! else by hyper. With `server.tls` the main port is HTTPS (`tls`): the handshake comes first,
//! bounded by the same header read timeout, and then the very same code reads the decrypted
//! stream; an optional plain-HTTP port beside it serves the operators' routes (`plain_port`).

pub(crate) mod direct_stream;
pub(crate) mod plain_port;
pub(crate) mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::tasks::Tasks;
use crate::telemetry::otel::spans::Peer;
use direct_stream::{Prefixed, Sniffed};
use flagpole_config::Config;
use plain_port::OpsOnly;
use tls::Tls;

/// Where connections arrive: the main port (HTTPS with `tls`), and the plain-HTTP port beside
/// an HTTPS one.
pub(crate) struct Listeners {
    pub main: TcpListener,
    pub tls: Option<Arc<Tls>>,
    pub plain: Option<TcpListener>,
}

/// What every connection needs, whichever port it came in on.
#[derive(Clone)]
struct Connections {
    builder: Arc<auto::Builder<TokioExecutor>>,
    api: Api,
    header_read_timeout: Duration,
    max_head_bytes: usize,
    write_timeout: Duration,
    /// Every connection task: the drain waits for all of them, hyper's and the streams served
    /// on the socket alike.
    tasks: Tasks,
    /// At the connection cap the loops stop accepting: new connections wait in the kernel's
    /// backlog until one closes (idle keep-alive connections close after the header read
    /// timeout, so the cap cannot be held by idle clients for long). Shared by both ports.
    capacity: Arc<Semaphore>,
    stopping: CancellationToken,
}

/// How a port's connections are served.
#[derive(Clone)]
enum Door {
    Plain,
    Tls(tokio_rustls::TlsAcceptor),
    OpsOnly,
}

/// Serves `api` on `listeners` until `stopping` is cancelled, then drains for at most
/// `config.server.shutdown_timeout`: connections waiting for a first request close at once, hyper's
/// connections finish their requests in flight, streams served on the socket end (their
/// environments' tokens are children of `stopping`).
/// Returns the time by which the whole shutdown should be over: the drain began, plus
/// `shutdown_timeout` (what is left of it is the background work's budget).
pub(crate) async fn serve(
    listeners: Listeners,
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
    let graceful = GracefulShutdown::new();
    let connections = Connections {
        builder: Arc::new(builder),
        api,
        header_read_timeout,
        max_head_bytes: config.limits.max_header_bytes,
        write_timeout: config.limits.write_timeout,
        tasks: Tasks::new(),
        capacity: Arc::new(Semaphore::new(config.limits.max_connections)),
        stopping,
    };
    let main = match &listeners.tls {
        Some(tls) => Door::Tls(tls.acceptor()),
        None => Door::Plain,
    };
    tokio::join!(connections.accept(listeners.main, main, &graceful), async {
        if let Some(plain) = listeners.plain {
            connections.accept(plain, Door::OpsOnly, &graceful).await;
        }
    },);
    let deadline = Instant::now() + config.server.shutdown_timeout;
    connections.tasks.close();
    tokio::select! {
        ((), ()) = async { tokio::join!(graceful.shutdown(), connections.tasks.wait()) } => {}
        () = tokio::time::sleep_until(deadline.into()) => {
            tracing::warn!("shutdown timeout reached with requests still in flight");
        }
    }
    deadline
}

impl Connections {
    /// Accepts on `listener` until shutdown begins; the listener is closed on return.
    async fn accept(&self, listener: TcpListener, door: Door, graceful: &GracefulShutdown) {
        loop {
            let permit = tokio::select! {
                permit = self.capacity.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
                () = self.stopping.cancelled() => break,
            };
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = self.stopping.cancelled() => break,
            };
            let (stream, address) = stream;
            let _ = stream.set_nodelay(true);
            let (this, watcher, door) = (self.clone(), graceful.watcher(), door.clone());
            let peer = Peer {
                address: Some(address),
                https: matches!(door, Door::Tls(_)),
            };
            self.tasks.spawn(async move {
                let _permit = permit;
                match door {
                    Door::Plain => this.first_request(stream, watcher, peer).await,
                    Door::Tls(acceptor) => {
                        // The handshake has the time a first request head has; a connection
                        // still in it when shutdown begins closes at once.
                        let handshake = tokio::select! {
                            done = tokio::time::timeout(this.header_read_timeout, acceptor.accept(stream)) => done,
                            () = this.stopping.cancelled() => return,
                        };
                        match handshake {
                            Ok(Ok(stream)) => this.first_request(stream, watcher, peer).await,
                            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                            Err(_) => tracing::debug!("TLS handshake timed out"),
                        }
                    }
                    Door::OpsOnly => {
                        let io = TokioIo::new(Prefixed::new(Vec::new(), stream, this.write_timeout));
                        let service = OpsOnly(this.api.on(peer));
                        let connection = this.builder.serve_connection(io, service).into_owned();
                        let _ = watcher.watch(connection).await;
                    }
                }
            });
        }
    }

    /// Reads the first request head of a connection (plain, or decrypted) and serves it: a
    /// change stream on the socket, everything else by hyper.
    async fn first_request<S>(self, mut stream: S, watcher: Watcher, peer: Peer)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let builder = &self.builder;
        let api = &self.api.on(peer);
        // A connection still waiting for its first request head when shutdown begins closes
        // at once, as idle keep-alive connections do.
        let sniffed = tokio::select! {
            sniffed = tokio::time::timeout(
                self.header_read_timeout,
                direct_stream::sniff(&mut stream, self.max_head_bytes),
            ) => sniffed.unwrap_or(Sniffed::Closed),
            () = self.stopping.cancelled() => Sniffed::Closed,
        };
        match sniffed {
            Sniffed::Closed => {}
            Sniffed::TooLarge(head_only) => {
                let answer = api.headers_too_large();
                direct_stream::serve(stream, answer, head_only, self.write_timeout).await;
            }
            Sniffed::Stream(request) => {
                if let Some(response) = api.change_stream(&request) {
                    drop(request);
                    direct_stream::serve(stream, response, false, self.write_timeout).await;
                }
            }
            Sniffed::Other(read) => {
                let io = TokioIo::new(Prefixed::new(read, stream, self.write_timeout));
                // Boxed so that a task serving a stream does not carry hyper's
                // (much larger) connection state inline.
                let connection = Box::pin(
                    watcher.watch(
                        builder
                            .serve_connection_with_upgrades(io, api.clone())
                            .into_owned(),
                    ),
                );
                let _ = connection.await;
            }
        }
    }
}
