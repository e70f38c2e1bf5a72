//! The flagd listener (`flagpole.grpc.port`): HTTP/1.1 and HTTP/2 without TLS on one port, as the
//! flagd providers speak it in RPC mode. A request whose content type is `application/grpc*` is
//! a gRPC call: the resolvers and `ResolveAll` are served on hyper (`grpc_unary`), the rest by
//! its flagd evaluation service in tonic (any other path by tonic's router, which answers
//! `UNIMPLEMENTED`); anything else is a Connect call (`api/flagd/connect`). Each request carries
//! its connection's [`Connection`] (what the connection has presented keys for). TCP_NODELAY, the
//! writes of each turn of a connection sent together (`coalesce`: one send per unary call), and the
//! main listener's shutdown: stop accepting, let calls in flight finish; event streams end with the
//! proxy's `stopping` token.
//! The main listener's protections apply here too, with their own budget: at most
//! `limits.max_connections` connections (past it, new ones wait in the kernel's backlog), request
//! heads bounded by `limits.max_header_bytes` (HTTP/1.1 and HTTP/2 alike), and an HTTP/1.1 head
//! that takes longer than the header read timeout closes its connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tonic::server::NamedService as _;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;
use tower_service::Service as _;

use super::coalesce::{Coalesced, Turns};
use super::grpc_unary::{self, Unary};
use crate::api::flagd::{connect, v1, v2, Connection, Flagd};
use crate::config::Config;
use crate::tasks::Tasks;
use crate::telemetry::otel::spans::ServerSpan;

/// Serves `flagd` on `listener` until `stopping` is cancelled and the calls in flight end (at
/// most `config.server.shutdown_timeout`).
pub(crate) async fn serve(
    listener: TcpListener,
    flagd: Flagd,
    config: Arc<Config>,
    stopping: CancellationToken,
) {
    let drain = config.server.shutdown_timeout;
    let front = Arc::new(Front {
        v1: flagd.v1(),
        v2: flagd.v2(),
        routes: Routes::new(flagd.v1()).add_service(flagd.v2()),
        flagd,
    });
    let max_header_bytes = config.limits.max_header_bytes;
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .max_buf_size(super::direct_stream::hyper_head_limit(max_header_bytes))
        .header_read_timeout(
            config
                .limits
                .header_read_timeout
                .min(config.server.keep_alive_timeout.max(Duration::from_secs(1))),
        )
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(max_header_bytes).unwrap_or(u32::MAX))
        // gRPC answers carry no `Date` (gRPC servers send none): one header less to make and
        // encode per call.
        .auto_date_header(false);
    let builder = Arc::new(builder);
    let capacity = Arc::new(Semaphore::new(config.limits.max_connections));
    let graceful = GracefulShutdown::new();
    // Every connection task: the drain waits for them.
    let connections = Tasks::new();
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
        let local = stream.local_addr().ok();
        let (front, builder) = (front.clone(), builder.clone());
        // What this connection presents keys for: its key-less event streams follow it.
        let presented = Connection::new();
        let service = hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
            request.extensions_mut().insert(presented.clone());
            dispatch(front.clone(), request, local, peer)
        });
        // Each turn's writes in one send (`coalesce`).
        let turns = Turns::default();
        let io = TokioIo::new(Coalesced::new(stream, turns.clone()));
        let connection = graceful.watch(builder.serve_connection(io, service).into_owned());
        connections.spawn(async move {
            let _ = turns.drive(connection).await;
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

type V1 = v1::service_server::ServiceServer<Flagd>;
type V2 = v2::service_server::ServiceServer<Flagd>;

/// What the calls of every connection share (one reference to clone per call).
struct Front {
    flagd: Flagd,
    v1: V1,
    v2: V2,
    /// What answers any other gRPC path (`UNIMPLEMENTED`).
    routes: Routes,
}

/// gRPC to tonic, the rest to Connect; with spans exported, each call in its server span.
async fn dispatch(
    front: Arc<Front>,
    request: http::Request<Incoming>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> Result<http::Response<connect::Body>, Infallible> {
    let Some(tracer) = crate::telemetry::otel::tracer() else {
        return route(front, request, local, peer).await;
    };
    let grpc = is_grpc(&request);
    let system = if grpc { "grpc" } else { "connect_rpc" };
    let span = ServerSpan::rpc(tracer, system, request.uri(), request.headers());
    let response = route(front, request, local, peer).await;
    if let Ok(response) = &response {
        let code = match grpc {
            // A call that failed before its answer: the status is in the head (trailers-only).
            true => response
                .headers()
                .get("grpc-status")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            false => connect::code_of(response.status()) as i64,
        };
        span.finish_rpc(code, response.extensions());
    }
    response
}

fn is_grpc<B>(request: &http::Request<B>) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

async fn route(
    front: Arc<Front>,
    request: http::Request<Incoming>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> Result<http::Response<connect::Body>, Infallible> {
    if is_grpc(&request) {
        if let Some(unary) = Unary::of(request.uri().path()) {
            // Boxed: what the hot path does not take is rare, and tonic's future is large.
            let tonic = |request| Box::pin(by_tonic(&front, request, local, peer));
            return Ok(grpc_unary::serve(&front.flagd, unary, request, tonic).await);
        }
        return Ok(by_tonic(&front, request, local, peer).await);
    }
    // Boxed: a Connect call's future is large, and every call's future is moved as it starts.
    Ok(Box::pin(connect::handle(&front.flagd, request, Some(peer))).await)
}

/// A gRPC call through tonic: `EventStream`, unknown paths, and what `grpc_unary` hands over.
async fn by_tonic<B>(
    front: &Front,
    mut request: http::Request<B>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> http::Response<connect::Body>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    // What tonic's own server would attach: the service reads the peer from it.
    request.extensions_mut().insert(TcpConnectInfo {
        local_addr: local,
        remote_addr: Some(peer),
    });
    // Each service called straight: tonic's router would match a pattern and box the request
    // and answer bodies twice more per call.
    let service = request
        .uri()
        .path()
        .get(1..)
        .and_then(|p| p.split_once('/'));
    let answered = match service.map(|(name, _)| name) {
        Some(V1::NAME) => front.v1.clone().call(request).await,
        Some(V2::NAME) => front.v2.clone().call(request).await,
        _ => front.routes.clone().call(request).await,
    };
    match answered {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
