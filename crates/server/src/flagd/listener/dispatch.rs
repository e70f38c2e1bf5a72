//! Where a flagd call goes, whichever protocol brought it (HTTP/1.1 on hyper, HTTP/2 on `h2`):
//! a gRPC call of a resolver or `ResolveAll` to `unary`, any other gRPC call to the tonic
//! service its path names (or tonic's router, which answers `UNIMPLEMENTED`), anything else to
//! Connect; with spans exported, each call in its server span.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tonic::codegen::StdError;
use tonic::server::NamedService as _;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;
use tower_service::Service as _;

use super::unary::{self, is_grpc, Unary};
use crate::flagd::{connect, sync_v1, v1, v2, Flagd};
use crate::tasks::Tasks;
use crate::telemetry::otel::spans::{Peer, ServerSpan};

type V1 = v1::service_server::ServiceServer<Flagd>;
type V2 = v2::service_server::ServiceServer<Flagd>;
type SyncService = sync_v1::flag_sync_service_server::FlagSyncServiceServer<Flagd>;

/// What a port serves: the flagd port everything (evaluation, gRPC and Connect, and sync), the
/// sync port (flagd's 8015) the sync service alone, over gRPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Services {
    All,
    SyncOnly,
}

/// What the calls of every connection share (one reference to clone per call).
pub(super) struct Front {
    pub flagd: Flagd,
    /// Where a call that needs a task of its own runs (the drain waits for it).
    pub tasks: Tasks,
    /// Whether this port evaluates (else it only syncs).
    pub evaluates: bool,
    v1: V1,
    v2: V2,
    sync: SyncService,
    /// What answers any other gRPC path (`UNIMPLEMENTED`).
    routes: Routes,
}

impl Front {
    pub(super) fn new(flagd: Flagd, tasks: Tasks, services: Services) -> Front {
        let routes = match services {
            Services::All => Routes::new(flagd.v1())
                .add_service(flagd.v2())
                .add_service(flagd.sync()),
            Services::SyncOnly => Routes::new(flagd.sync()),
        };
        Front {
            tasks,
            evaluates: services == Services::All,
            v1: flagd.v1(),
            v2: flagd.v2(),
            sync: flagd.sync(),
            routes,
            flagd,
        }
    }

    /// The hot call a request is, on a port that evaluates.
    pub(super) fn hot(&self, headers: &http::HeaderMap, path: &str) -> Option<Unary> {
        self.evaluates.then(|| Unary::hot(headers, path)).flatten()
    }
}

/// A request body this listener reads: hyper's (HTTP/1.1) or an `h2` stream's.
pub(super) trait RequestBody:
    http_body::Body<Data = Bytes, Error: Into<StdError> + Send + Sync + Unpin> + Send + Unpin + 'static
{
}

impl<B> RequestBody for B where
    B: http_body::Body<Data = Bytes, Error: Into<StdError> + Send + Sync + Unpin>
        + Send
        + Unpin
        + 'static
{
}

/// gRPC to tonic, the rest to Connect; with spans exported, each call in its server span.
pub(super) async fn dispatch<B: RequestBody>(
    front: Arc<Front>,
    request: http::Request<B>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> Result<http::Response<connect::Body>, Infallible> {
    let Some(tracer) = crate::telemetry::otel::tracer() else {
        return route(front, request, local, peer).await;
    };
    let grpc = is_grpc(request.headers());
    let system = if grpc { "grpc" } else { "connect_rpc" };
    let peer_of = Peer {
        address: Some(peer),
        https: false,
    };
    let span = ServerSpan::rpc(tracer, system, (request.uri(), request.headers()), peer_of);
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

async fn route<B: RequestBody>(
    front: Arc<Front>,
    request: http::Request<B>,
    local: Option<SocketAddr>,
    peer: SocketAddr,
) -> Result<http::Response<connect::Body>, Infallible> {
    if let Some(unary) = front.hot(request.headers(), request.uri().path()) {
        // Boxed: what the hot path does not take is rare, and tonic's future is large.
        let tonic = |request| Box::pin(by_tonic(&front, request, local, peer));
        return Ok(unary::serve(&front.flagd, unary, request, tonic).await);
    }
    if is_grpc(request.headers()) || !front.evaluates {
        return Ok(by_tonic(&front, request, local, peer).await);
    }
    // Boxed: a Connect call's future is large, and every call's future is moved as it starts.
    Ok(Box::pin(connect::handle(&front.flagd, request, Some(peer))).await)
}

/// A gRPC call through tonic: `EventStream`, unknown paths, and what `unary` hands over.
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
        Some(V1::NAME) if front.evaluates => front.v1.clone().call(request).await,
        Some(V2::NAME) if front.evaluates => front.v2.clone().call(request).await,
        Some(SyncService::NAME) => front.sync.clone().call(request).await,
        _ => front.routes.clone().call(request).await,
    };
    match answered {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
