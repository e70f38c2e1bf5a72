//! The flagd-compatible front door: `flagd.evaluation.v1.Service` and
//! `flagd.evaluation.v2.Service` (every resolver, `ResolveAll`, `EventStream`), so that the
//! OpenFeature flagd providers in RPC mode evaluate Flagsmith flags with no change but host,
//! port and key.
//!
//! The answers are the OFREP front door's: the same context mapping and the same value, reason,
//! variant and metadata (`api/openfeature`). What is flagd's own: the key rides in gRPC
//! metadata (`keys`), the requested type is checked against the flag (`resolve`), values travel
//! as protobuf (`proto`), and changes arrive on a server stream (`events`). The two versions
//! carry the same messages (v2 marks scalars `optional`), so one macro implements both.

pub(crate) mod connect;
mod connect_json;
mod events;
mod keys;
mod peers;
mod proto;
mod resolve;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::authorise::Authorised;
use super::AppState;
use crate::telemetry::flagd::{self as calls, Method};
use resolve::{Kind, Resolved, Typed};

/// Code generated from the vendored flagd schemas (`proto/`, by `build.rs`).
#[allow(
    clippy::allow_attributes_without_reason,
    unreachable_pub,
    reason = "generated code: its visibility and its own allows are the generator's"
)]
pub(crate) mod v1 {
    tonic::include_proto!("flagd.evaluation.v1");
}
#[allow(
    clippy::allow_attributes_without_reason,
    unreachable_pub,
    reason = "generated code: its visibility and its own allows are the generator's"
)]
pub(crate) mod v2 {
    tonic::include_proto!("flagd.evaluation.v2");
}

/// Both services, on the proxy's state (cheap to clone).
#[derive(Clone)]
pub(crate) struct Flagd {
    state: AppState,
    /// Key-less event streams waiting for their connection's environment.
    peers: Arc<peers::Peers>,
    /// The proxy's shutdown: open event streams end.
    stopping: CancellationToken,
}

impl Flagd {
    pub(crate) fn new(state: AppState, stopping: CancellationToken) -> Flagd {
        Flagd {
            state,
            peers: Arc::default(),
            stopping,
        }
    }

    /// The key's environment; a stream waiting on this connection learns it.
    fn authorise<M>(&self, request: &Request<M>) -> Result<Authorised, Status> {
        let authorised = keys::authorise(&self.state, request.metadata())?;
        self.peers.seen(request.remote_addr(), &authorised.env);
        Ok(authorised)
    }

    /// One typed resolution: the request's key and context taken out by `parts`.
    fn one<M>(
        &self,
        request: Request<M>,
        kind: Kind,
        parts: impl FnOnce(M) -> (String, Option<prost_types::Struct>),
    ) -> Result<Resolved, Status> {
        let authorised = self.authorise(&request)?;
        let (key, context) = parts(request.into_inner());
        resolve::one(&self.state, &authorised, &key, context.as_ref(), kind)
    }

    /// Whose changes an `EventStream` call reports: its key's environment, or with no key at
    /// all, its connection's (see `peers`).
    fn events_source<M>(&self, request: &Request<M>) -> Result<events::Source, Status> {
        match (keys::presented(request.metadata())?, request.remote_addr()) {
            (None, Some(peer)) => Ok(events::Source::Connection(self.peers.wait(peer))),
            _ => Ok(events::Source::Env(self.authorise(request)?.env)),
        }
    }

    /// The v1 service, for a tonic router.
    pub(crate) fn v1(&self) -> v1::service_server::ServiceServer<Flagd> {
        v1::service_server::ServiceServer::new(self.clone())
    }

    /// The v2 service, for a tonic router.
    pub(crate) fn v2(&self) -> v2::service_server::ServiceServer<Flagd> {
        v2::service_server::ServiceServer::new(self.clone())
    }
}

/// A boxed event stream (tonic's associated stream type must be nameable).
pub(crate) type Events<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Implements one version's service. `$wrap` turns a scalar into the field's type: v1 fields are
/// plain, v2's are `optional` (`Some`); `$value` and `$variant` mark where that applies.
macro_rules! service {
    ($v:ident, $wrap:path) => {
        #[tonic::async_trait]
        impl $v::service_server::Service for Flagd {
            async fn resolve_all(
                &self,
                request: Request<$v::ResolveAllRequest>,
            ) -> Result<Response<$v::ResolveAllResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let authorised = self.authorise(&request)?;
                    let context = request.into_inner().context;
                    let all = resolve::all(&self.state, &authorised, context.as_ref())?;
                    let flags = all
                        .into_iter()
                        .map(|(key, r)| {
                            let value = match r.value {
                                Typed::Bool(b) => Some($v::any_flag::Value::BoolValue(b)),
                                Typed::String(s) => Some($v::any_flag::Value::StringValue(s)),
                                Typed::Int(n) => Some($v::any_flag::Value::DoubleValue(n as f64)),
                                Typed::Float(f) => Some($v::any_flag::Value::DoubleValue(f)),
                                Typed::Object(o) => Some($v::any_flag::Value::ObjectValue(o)),
                                Typed::None => None,
                            };
                            let flag = $v::AnyFlag {
                                reason: r.reason.to_owned(),
                                variant: $wrap(r.variant),
                                value,
                                metadata: Some(r.metadata),
                            };
                            (key, flag)
                        })
                        .collect();
                    Ok(Response::new($v::ResolveAllResponse {
                        flags,
                        metadata: None,
                    }))
                })();
                calls::observed(Method::ResolveAll, started, outcome)
            }

            async fn resolve_boolean(
                &self,
                request: Request<$v::ResolveBooleanRequest>,
            ) -> Result<Response<$v::ResolveBooleanResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Bool, |m| (m.flag_key, m.context))?;
                    Ok(Response::new($v::ResolveBooleanResponse {
                        value: scalar!($wrap, r.value, Typed::Bool),
                        reason: r.reason.to_owned(),
                        variant: $wrap(r.variant),
                        metadata: Some(r.metadata),
                    }))
                })();
                calls::observed(Method::ResolveBoolean, started, outcome)
            }

            async fn resolve_string(
                &self,
                request: Request<$v::ResolveStringRequest>,
            ) -> Result<Response<$v::ResolveStringResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::String, |m| (m.flag_key, m.context))?;
                    Ok(Response::new($v::ResolveStringResponse {
                        value: scalar!($wrap, r.value, Typed::String),
                        reason: r.reason.to_owned(),
                        variant: $wrap(r.variant),
                        metadata: Some(r.metadata),
                    }))
                })();
                calls::observed(Method::ResolveString, started, outcome)
            }

            async fn resolve_float(
                &self,
                request: Request<$v::ResolveFloatRequest>,
            ) -> Result<Response<$v::ResolveFloatResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Float, |m| (m.flag_key, m.context))?;
                    Ok(Response::new($v::ResolveFloatResponse {
                        value: scalar!($wrap, r.value, Typed::Float),
                        reason: r.reason.to_owned(),
                        variant: $wrap(r.variant),
                        metadata: Some(r.metadata),
                    }))
                })();
                calls::observed(Method::ResolveFloat, started, outcome)
            }

            async fn resolve_int(
                &self,
                request: Request<$v::ResolveIntRequest>,
            ) -> Result<Response<$v::ResolveIntResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Int, |m| (m.flag_key, m.context))?;
                    Ok(Response::new($v::ResolveIntResponse {
                        value: scalar!($wrap, r.value, Typed::Int),
                        reason: r.reason.to_owned(),
                        variant: $wrap(r.variant),
                        metadata: Some(r.metadata),
                    }))
                })();
                calls::observed(Method::ResolveInt, started, outcome)
            }

            async fn resolve_object(
                &self,
                request: Request<$v::ResolveObjectRequest>,
            ) -> Result<Response<$v::ResolveObjectResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Object, |m| (m.flag_key, m.context))?;
                    let value = match r.value {
                        Typed::Object(o) => Some(o),
                        _ => None,
                    };
                    Ok(Response::new($v::ResolveObjectResponse {
                        value,
                        reason: r.reason.to_owned(),
                        variant: $wrap(r.variant),
                        metadata: Some(r.metadata),
                    }))
                })();
                calls::observed(Method::ResolveObject, started, outcome)
            }

            type EventStreamStream = Events<$v::EventStreamResponse>;

            async fn event_stream(
                &self,
                request: Request<$v::EventStreamRequest>,
            ) -> Result<Response<Self::EventStreamStream>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let source = self.events_source(&request)?;
                    let message = |kind: &str, data| $v::EventStreamResponse {
                        r#type: kind.to_owned(),
                        data,
                    };
                    let stream = events::open(&self.state, source, self.stopping.clone(), message);
                    Ok(Response::new(stream))
                })();
                calls::observed(Method::EventStream, started, outcome)
            }
        }
    };
}

/// A scalar of the requested type, or the field's empty value (no value: the caller's default).
macro_rules! scalar {
    ($wrap:path, $value:expr, $variant:path) => {
        match $value {
            $variant(v) => $wrap(v),
            _ => Default::default(),
        }
    };
}

/// v1's plain fields.
fn plain<T>(value: T) -> T {
    value
}

service!(v1, plain);
service!(v2, Some);
