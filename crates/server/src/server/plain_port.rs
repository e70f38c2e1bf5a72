//! The plain-HTTP port beside an HTTPS one (`server.tls.plain_port`): health probes, `/metrics`
//! and the status page, for the kubelet and scrapers that are not given the certificate. Nothing
//! an SDK reads is served on it, so a misconfigured client fails loudly instead of sending its
//! key in the clear.

use std::convert::Infallible;
use std::future::{ready, Ready};

use http::{Request, StatusCode};
use hyper::body::Incoming;
use hyper::service::Service;
use tokio_util::either::Either;

use crate::api::error::ApiError;
use crate::api::route::Route;
use crate::api::{Api, Response};

/// [`Api`] limited to the operators' routes.
#[derive(Clone)]
pub(crate) struct OpsOnly(pub Api);

type ApiFuture = <Api as Service<Request<Incoming>>>::Future;

impl Service<Request<Incoming>> for OpsOnly {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<ApiFuture, Ready<Result<Response, Infallible>>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        match Route::of(request.uri().path()) {
            Route::Liveness
            | Route::Readiness
            | Route::Serving
            | Route::Metrics
            | Route::Status => Either::Left(self.0.call(request)),
            _ => Either::Right(ready(Ok(ApiError::new(
                StatusCode::NOT_FOUND,
                "this plain-HTTP port serves only the health probes, /metrics and /proxy/status; \
                 the API is served over HTTPS on server.port",
            )
            .into_response()))),
        }
    }
}
