//! The flagd listener (`flagpole.grpc.port`): HTTP/1.1 and HTTP/2 without TLS on one port, as
//! the flagd providers speak it in RPC mode. A request whose content type is
//! `application/grpc*` goes to tonic's router (both flagd evaluation services); anything else is
//! a Connect call (`api/flagd/connect`). TCP_NODELAY, and the main listener's shutdown: stop
//! accepting, let calls in flight finish; event streams end with the proxy's `stopping` token.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;
use tower_service::Service as _;

use crate::api::flagd::{connect, Flagd};

/// Serves `flagd` on `listener` until `stopping` is cancelled and the calls in flight end (at
/// most `drain`).
pub async fn serve(
    listener: TcpListener,
    flagd: Flagd,
    stopping: CancellationToken,
    drain: Duration,
) {
    let routes = Routes::new(flagd.v1()).add_service(flagd.v2());
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    loop {
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
        let local = stream.local_addr().ok();
        let (flagd, routes, builder) = (flagd.clone(), routes.clone(), builder.clone());
        let service = hyper::service::service_fn(move |request| {
            dispatch(flagd.clone(), routes.clone(), request, local, peer)
        });
        let connection = graceful.watch(
            builder
                .serve_connection(TokioIo::new(stream), service)
                .into_owned(),
        );
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    drop(listener);
    if tokio::time::timeout(drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("flagd listener: calls still in flight at the shutdown timeout");
    }
}

/// gRPC to tonic, the rest to Connect.
async fn dispatch(
    flagd: Flagd,
    mut routes: Routes,
    mut request: http::Request<Incoming>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> Result<http::Response<connect::Body>, Infallible> {
    let grpc = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        // What tonic's own server would attach: the service reads the peer from it.
        request.extensions_mut().insert(TcpConnectInfo {
            local_addr: local,
            remote_addr: Some(peer),
        });
        return routes.call(request).await;
    }
    Ok(connect::handle(&flagd, request, Some(peer)).await)
}
