//! The flagd listener (`flagpole.grpc.port`): gRPC over HTTP/2 without TLS (h2c), as the flagd
//! providers speak it in RPC mode, serving both flagd evaluation services. TCP_NODELAY, and the
//! same shutdown as the main listener: stop accepting, let calls in flight finish; event
//! streams end when their environment's token (a child of `stopping`) is cancelled.

use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;

use crate::api::flagd::Flagd;

/// Serves `flagd` on `listener` until `stopping` is cancelled and the calls in flight end.
pub async fn serve(listener: TcpListener, flagd: Flagd, stopping: CancellationToken) {
    let incoming = TcpListenerStream::new(listener);
    let served = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(flagd.v1())
        .add_service(flagd.v2())
        .serve_with_incoming_shutdown(incoming, stopping.cancelled_owned())
        .await;
    if let Err(e) = served {
        tracing::error!(error = %e, "the flagd listener failed");
    }
}
