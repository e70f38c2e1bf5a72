//! The flagd-compatible front door: `flagd.evaluation.v1.Service` and
//! `flagd.evaluation.v2.Service` (every resolver, `ResolveAll`, `EventStream`), so that the
//! OpenFeature flagd providers in RPC mode evaluate Flagsmith flags with no change but host,
//! port and key.
//!
//! The answers are the OpenFeature layer's (`openfeature`), as OFREP's are: the same context
//! mapping and the same value, reason, variant and metadata, whatever engine is behind. What is flagd's own: the key rides in gRPC
//! metadata (`keys`), the requested type is checked against the flag (`resolve`), values travel
//! as protobuf (`proto`; `ResolveAll` written straight to bytes, `all` and `wire`), and changes
//! arrive on a server stream (`events`). The two versions
//! carry the same messages (v2 marks scalars `optional`), so one macro implements both.
//!
//! All of flagd's door is here, the port it listens on included (`listener`: HTTP/2 served on
//! `h2` with the hot calls answered on the connection's task, HTTP/1.1 on hyper, gRPC and
//! Connect dispatched), so it sits after the main listener in the layers and uses its
//! connection plumbing (`server::direct_stream`).

mod all;
pub(crate) mod connect;
mod connect_json;
mod events;
mod keys;
pub(crate) mod listener;
mod peers;
mod proto;
mod resolve;
mod sets;
mod sync;
pub(crate) mod wire;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use crate::tasks::Tasks;
use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::api::authorise::Authorised;
use crate::api::AppState;
use crate::openfeature::Target;
use crate::telemetry::flagd::{self as calls, Method};
use crate::telemetry::otel::spans::FlagEvaluated;
pub(crate) use peers::Connection;
use resolve::{Kind, Resolved, Typed};

/// The code generated from the vendored flagd schemas (`proto/`, by `build.rs`), one module
/// per service version.
macro_rules! generated {
    ($($v:ident: $package:literal),+) => {$(
        #[allow(
            clippy::allow_attributes_without_reason,
            unreachable_pub,
            dead_code,
            reason = "generated code: its visibility and its own allows are the generator's; \
                      `ResolveAll`'s messages are written as bytes (`all`), so theirs go unused"
        )]
        pub(crate) mod $v {
            tonic::include_proto!($package);
        }
    )+};
}

generated!(
    v1: "flagd.evaluation.v1",
    v2: "flagd.evaluation.v2",
    sync_v1: "flagd.sync.v1"
);

/// Both services, on the proxy's state (cheap to clone).
#[derive(Clone)]
pub(crate) struct Flagd {
    state: AppState,
    /// The proxy's shutdown: open event streams end (with `UNAVAILABLE`: providers reconnect).
    stopping: CancellationToken,
    /// Where event stream tasks run: the proxy's exit waits for them.
    tasks: Tasks,
    /// What the event streams share.
    events: Arc<events::Shared>,
}

impl Flagd {
    pub(crate) fn new(state: AppState, stopping: CancellationToken, tasks: Tasks) -> Flagd {
        Flagd {
            state,
            stopping,
            tasks,
            events: Arc::default(),
        }
    }

    /// The key's environment; the key-less streams of this connection follow it from now on.
    fn authorise<M>(&self, request: &Request<M>) -> Result<Authorised, Status> {
        let authorised = keys::authorise(&self.state, request.metadata())?;
        if let Some(connection) = request.extensions().get::<Arc<Connection>>() {
            connection.seen(&authorised);
        }
        Ok(authorised)
    }

    /// What a call reads: the toggles of its Unleash token, its flag set, or its key's
    /// environment.
    fn target<M>(&self, request: &Request<M>) -> Result<Target, Status> {
        if let Some(target) = keys::unleash_token(&self.state, request.metadata()) {
            return target;
        }
        if let Some(target) = sets::of_call(&self.state, request.metadata())? {
            return Ok(target);
        }
        let authorised = self.authorise(request)?;
        Ok(Target::environment(
            authorised.kind,
            authorised.env,
            authorised.snapshot,
            self.state.config.ofrep.parse_json_strings,
        ))
    }

    /// One typed resolution: the request's key and context taken out by `parts`; `v2`: the call
    /// came to the v2 service.
    fn one<M>(
        &self,
        request: Request<M>,
        kind: Kind,
        v2: bool,
        parts: impl FnOnce(M) -> (String, Option<prost_types::Struct>),
    ) -> Result<Resolved, Status> {
        let target = self.target(&request)?;
        let (key, context) = parts(request.into_inner());
        resolve::one(&self.state, &target, &key, context.as_ref(), kind, v2)
    }

    /// A `ResolveAll` call's answer in `form` (gRPC and Connect alike), derived per-flag
    /// metadata if the call asks for it (`all`).
    fn all<M>(
        &self,
        request: Request<M>,
        context: impl FnOnce(M) -> Option<prost_types::Struct>,
        form: all::Form,
    ) -> Result<bytes::Bytes, Status> {
        let started = Instant::now();
        let outcome = (|| {
            let target = self.target(&request)?;
            let asked = all::asks_metadata(request.metadata());
            let context = context(request.into_inner());
            all::answer(&self.state, &target, context.as_ref(), form, asked)
        })();
        calls::observed(Method::ResolveAll, started, outcome)
    }

    /// Whose changes an `EventStream` call reports: none for an Unleash token's toggles (the
    /// stream only says ready and keeps alive), its flag set (flag sets configured and no
    /// Flagsmith key presented), its key's environment, or with no key at all, those its
    /// connection presents keys for (see `peers`).
    fn events_source<M>(&self, request: &Request<M>) -> Result<events::Source, Status> {
        if let Some(toggles) = keys::unleash_token(&self.state, request.metadata()) {
            return toggles.map(|_| events::Source::Toggles);
        }
        if sets::of_call(&self.state, request.metadata())?.is_some() {
            return Ok(events::Source::FlagSet(sets::selector(request.metadata())));
        }
        let connection = request.extensions().get::<Arc<Connection>>();
        match (keys::presented(request.metadata())?, connection) {
            (None, Some(connection)) => Ok(events::Source::Connection(connection.watch())),
            _ => Ok(events::Source::Key(peers::Presented::of(
                &self.authorise(request)?,
            ))),
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
/// plain, v2's are `optional` (`Some`); `$variant` does so for the variant name, which v2 leaves
/// out when there is none (no value), as flagd does. `$v2`: whether it is v2 (`ResolveAll` is
/// written as bytes, `all`).
macro_rules! service {
    ($v:ident, $wrap:path, $variant:path, $v2:expr) => {
        #[tonic::async_trait]
        impl $v::service_server::Service for Flagd {
            async fn resolve_all(
                &self,
                request: Request<$v::ResolveAllRequest>,
            ) -> Result<Response<wire::Encoded>, Status> {
                let form = all::Form::Proto { v2: $v2 };
                let bytes = self.all(request, |m| m.context, form)?;
                Ok(Response::new(wire::Encoded(bytes)))
            }

            async fn resolve_boolean(
                &self,
                request: Request<$v::ResolveBooleanRequest>,
            ) -> Result<Response<$v::ResolveBooleanResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Bool, $v2, |m| (m.flag_key, m.context))?;
                    Ok(traced(
                        r.traced,
                        $v::ResolveBooleanResponse {
                            value: scalar!($wrap, r.value, Typed::Bool),
                            reason: r.reason.to_owned(),
                            variant: $variant(r.variant),
                            metadata: Some(r.metadata),
                        },
                    ))
                })();
                calls::observed(Method::ResolveBoolean, started, outcome)
            }

            async fn resolve_string(
                &self,
                request: Request<$v::ResolveStringRequest>,
            ) -> Result<Response<$v::ResolveStringResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::String, $v2, |m| (m.flag_key, m.context))?;
                    Ok(traced(
                        r.traced,
                        $v::ResolveStringResponse {
                            value: scalar!($wrap, r.value, Typed::String),
                            reason: r.reason.to_owned(),
                            variant: $variant(r.variant),
                            metadata: Some(r.metadata),
                        },
                    ))
                })();
                calls::observed(Method::ResolveString, started, outcome)
            }

            async fn resolve_float(
                &self,
                request: Request<$v::ResolveFloatRequest>,
            ) -> Result<Response<$v::ResolveFloatResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Float, $v2, |m| (m.flag_key, m.context))?;
                    Ok(traced(
                        r.traced,
                        $v::ResolveFloatResponse {
                            value: scalar!($wrap, r.value, Typed::Float),
                            reason: r.reason.to_owned(),
                            variant: $variant(r.variant),
                            metadata: Some(r.metadata),
                        },
                    ))
                })();
                calls::observed(Method::ResolveFloat, started, outcome)
            }

            async fn resolve_int(
                &self,
                request: Request<$v::ResolveIntRequest>,
            ) -> Result<Response<$v::ResolveIntResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Int, $v2, |m| (m.flag_key, m.context))?;
                    Ok(traced(
                        r.traced,
                        $v::ResolveIntResponse {
                            value: scalar!($wrap, r.value, Typed::Int),
                            reason: r.reason.to_owned(),
                            variant: $variant(r.variant),
                            metadata: Some(r.metadata),
                        },
                    ))
                })();
                calls::observed(Method::ResolveInt, started, outcome)
            }

            async fn resolve_object(
                &self,
                request: Request<$v::ResolveObjectRequest>,
            ) -> Result<Response<$v::ResolveObjectResponse>, Status> {
                let started = Instant::now();
                let outcome = (|| {
                    let r = self.one(request, Kind::Object, $v2, |m| (m.flag_key, m.context))?;
                    let value = match r.value {
                        Typed::Object(o) => Some(o),
                        _ => None,
                    };
                    Ok(traced(
                        r.traced,
                        $v::ResolveObjectResponse {
                            value,
                            reason: r.reason.to_owned(),
                            variant: $variant(r.variant),
                            metadata: Some(r.metadata),
                        },
                    ))
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
                    let stream = events::open(
                        &self.state,
                        &self.tasks,
                        self.events.clone(),
                        source,
                        self.stopping.clone(),
                        message,
                    );
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

/// A resolver's answer, the evaluation recorded for its span (`None` unless spans are exported).
fn traced<T>(flag: Option<FlagEvaluated>, message: T) -> Response<T> {
    let mut response = Response::new(message);
    if let Some(flag) = flag {
        response.extensions_mut().insert(flag);
    }
    response
}

/// v1's plain fields.
fn plain<T>(value: T) -> T {
    value
}

/// v2's optional variant name: absent when there is none.
fn named(variant: String) -> Option<String> {
    (!variant.is_empty()).then_some(variant)
}

service!(v1, plain, plain, false);
service!(v2, Some, named, true);
