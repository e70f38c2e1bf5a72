//! The listener: HTTP/1.1 and HTTP/2 on one port, TCP_NODELAY, a hard cap on request-header
//! size (4× the configured limit; the service answers 431 with a JSON body above the limit
//! itself), a header read timeout against slow clients, and graceful shutdown: stop
//! accepting, let requests in flight finish (bounded), close idle connections at once.

use std::future::Future;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::config::Config;

/// Serves `api` on `listener` until `shutdown` completes, then drains for at most
/// `config.shutdown_timeout`.
pub async fn serve(
    listener: TcpListener,
    api: crate::http::Api,
    config: &Config,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .max_buf_size((config.max_header_bytes * 4).max(64 * 1024))
        .header_read_timeout(
            config
                .header_read_timeout
                .min(config.keep_alive_timeout.max(Duration::from_secs(1))),
        )
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
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
                let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), api.clone()).into_owned();
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = connection.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(config.shutdown_timeout) => {
            tracing::warn!("shutdown timeout reached with requests still in flight");
        }
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
