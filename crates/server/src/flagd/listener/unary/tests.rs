//! The hot path against tonic: for every resolver and `ResolveAll` of both versions, answers and
//! refusals alike, the same status, head, message bytes and trailers as tonic's service gives
//! for the same request; and what the hot path does not take reaches tonic intact.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use http_body_util::{BodyExt as _, StreamBody};
use prost_types::{value::Kind, Struct, Value};
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use super::*;
use crate::api::AppState;
use crate::store::{EnvSlot, Source, Store};
use crate::tasks::Tasks;
use flagpole_config::Config;

const EXAMPLE: &str = include_str!("../../../../../../examples/environment.json");
pub(in crate::flagd) const CLIENT_KEY: &str = "example_client_key";
pub(in crate::flagd) const SERVER_KEY: &str = "ser.example_server_key";

/// The flagd services on a store holding the example environment.
pub(in crate::flagd) async fn flagd() -> Flagd {
    flagd_stopping(CancellationToken::new()).await
}

/// The same, with event streams ending when `stopping` is cancelled.
pub(in crate::flagd) async fn flagd_stopping(stopping: CancellationToken) -> Flagd {
    let config = Arc::new(Config::default());
    let store = Arc::new(Store::new(None, None, CancellationToken::new()));
    let env = store.add(
        EnvSlot::new(CLIENT_KEY.to_owned(), Source::Embedded),
        &[SERVER_KEY.to_owned()],
    );
    env.publish(crate::received::Incoming::Bytes(Bytes::from_static(
        EXAMPLE.as_bytes(),
    )))
    .await
    .map_err(|e| e.message(CLIENT_KEY))
    .unwrap();
    let state = AppState {
        streams: Arc::new(crate::streams::Streams::new(&config, &store)),
        analytics: Arc::new(crate::analytics::Analytics::new(config.analytics.clone())),
        store,
        config,
        shadow: None,
        fleet: None,
        flag_sets: Arc::new(crate::flagsets::FlagSets::new(&[])),
        unleash: None,
    };
    Flagd::new(state, stopping, Tasks::new())
}

pub(in crate::flagd) fn context(members: &[(&str, Kind)]) -> Option<Struct> {
    let fields: BTreeMap<String, Value> = members
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                Value {
                    kind: Some(v.clone()),
                },
            )
        })
        .collect();
    Some(Struct {
        fields: fields.into_iter().collect(),
    })
}

pub(in crate::flagd) fn text(s: &str) -> Kind {
    Kind::StringValue(s.to_owned())
}

/// One request's body as its frames (chunks of data, then trailers if any).
pub(in crate::flagd) type Frames = Vec<Result<Frame<Bytes>, Infallible>>;
pub(in crate::flagd) type TestBody =
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

/// A gRPC message behind its prefix (flag byte `flag`, then the length).
pub(in crate::flagd) fn prefixed(message: &[u8], flag: u8) -> Vec<u8> {
    let mut data = vec![flag];
    data.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    data.extend_from_slice(message);
    data
}

/// The request message of `method`: every resolver's is a flag key (1) and a context (2);
/// `ResolveAll`'s is a context (1).
pub(in crate::flagd) fn request_message(
    method: &str,
    flag: &str,
    context: Option<&Struct>,
) -> Vec<u8> {
    let mut message = Vec::new();
    if method == "ResolveAll" {
        if let Some(context) = context {
            prost::encoding::message::encode(1, context, &mut message);
        }
    } else {
        prost::encoding::string::encode(1, &flag.to_owned(), &mut message);
        if let Some(context) = context {
            prost::encoding::message::encode(2, context, &mut message);
        }
    }
    message
}

/// A gRPC body: the message behind its prefix (flag byte `flag`), cut into `chunks` pieces.
fn framed(message: &[u8], flag: u8, chunks: usize) -> Frames {
    let data = prefixed(message, flag);
    let size = data.len().div_ceil(chunks.max(1)).max(1);
    data.chunks(size)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect()
}

pub(in crate::flagd) fn request(
    path: &str,
    key: Option<&str>,
    extra: &[(&str, &str)],
    frames: Frames,
) -> http::Request<TestBody> {
    let mut builder = http::Request::post(format!("http://localhost{path}"))
        .version(http::Version::HTTP_2)
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(key) = key {
        builder = builder.header("flagd-selector", key);
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    builder
        .body(StreamBody::new(futures_util::stream::iter(frames)))
        .unwrap()
}

/// Everything a caller sees of an answer.
#[derive(Debug, PartialEq)]
pub(in crate::flagd) struct Seen {
    pub status: http::StatusCode,
    pub version: http::Version,
    pub headers: HeaderMap,
    pub data: Bytes,
    pub trailers: Option<HeaderMap>,
}

pub(in crate::flagd) async fn seen(response: http::Response<Body>) -> Seen {
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.expect("the answer's body");
    Seen {
        status: parts.status,
        version: parts.version,
        headers: parts.headers,
        trailers: collected.trailers().cloned(),
        data: collected.to_bytes(),
    }
}

pub(in crate::flagd) async fn by_tonic<B>(
    flagd: &Flagd,
    request: http::Request<B>,
) -> http::Response<Body>
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    let answered = if request.uri().path().starts_with("/flagd.evaluation.v1.") {
        flagd.v1().call(request).await
    } else {
        flagd.v2().call(request).await
    };
    answered.unwrap_or_else(|never| match never {})
}

/// The same call both ways: what each answers, and whether the hot path handed it to tonic.
async fn both(
    flagd: &Flagd,
    path: &str,
    key: Option<&str>,
    extra: &[(&str, &str)],
    frames: impl Fn() -> Frames,
) -> (Seen, Seen, bool) {
    let handed = Cell::new(false);
    let asked = request(path, key, extra, frames());
    // As the listener decides: a call that is not hot goes to tonic as it is.
    let fast = match Unary::hot(asked.headers(), path) {
        Some(unary) => {
            serve(flagd, unary, asked, |r| {
                handed.set(true);
                by_tonic(flagd, r)
            })
            .await
        }
        None => {
            handed.set(true);
            by_tonic(flagd, asked).await
        }
    };
    let fast = seen(fast).await;
    let reference = seen(by_tonic(flagd, request(path, key, extra, frames())).await).await;
    (fast, reference, handed.get())
}

fn grpc_status(seen: &Seen) -> String {
    grpc_status_of(&seen.headers, seen.trailers.as_ref())
}

/// The `grpc-status` of an answer: in its head (trailers-only) or its trailers.
pub(in crate::flagd) fn grpc_status_of(
    headers: &HeaderMap,
    trailers: Option<&HeaderMap>,
) -> String {
    let from = |map: &HeaderMap| {
        map.get("grpc-status")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    from(headers)
        .or_else(|| trailers.and_then(from))
        .expect("a grpc-status")
}

#[tokio::test]
async fn every_call_answers_as_tonic_does() {
    let flagd = flagd().await;
    let targeted = context(&[
        ("targetingKey", text("user-1")),
        ("plan", text("enterprise")),
        ("seats", Kind::NumberValue(60.0)),
    ]);
    let long = "x".repeat(5_000);
    let too_long = context(&[("targetingKey", text("user-2")), ("bio", text(&long))]);
    let mut statuses = BTreeMap::new();
    for version in ["v1", "v2"] {
        for (method, flag) in [
            ("ResolveBoolean", "new_checkout"),
            ("ResolveBoolean", "welcome_message"),
            ("ResolveBoolean", "no_such_flag"),
            ("ResolveString", "welcome_message"),
            ("ResolveString", "layout"),
            ("ResolveString", "banner_text"),
            ("ResolveInt", "max_projects"),
            ("ResolveFloat", "max_projects"),
            ("ResolveFloat", "discount_rate"),
            ("ResolveObject", "layout"),
            ("ResolveObject", "discount_rate"),
            ("ResolveAll", ""),
        ] {
            let path = format!("/flagd.evaluation.{version}.Service/{method}");
            for ctx in [None, targeted.clone(), too_long.clone()] {
                let message = request_message(method, flag, ctx.as_ref());
                for (key, extra) in [
                    (Some(SERVER_KEY), &[][..]),
                    (Some(CLIENT_KEY), &[][..]),
                    (Some(SERVER_KEY), &[("flagpole-metadata", "true")][..]),
                    (Some(SERVER_KEY), &[("grpc-accept-encoding", "gzip")][..]),
                    (Some("no_such_key"), &[][..]),
                    (None, &[][..]),
                ] {
                    for chunks in [1, 3] {
                        let (fast, reference, handed) =
                            both(&flagd, &path, key, extra, || framed(&message, 0, chunks)).await;
                        assert!(!handed, "{path} {flag} {key:?}: served on the hot path");
                        assert_eq!(fast, reference, "{path} {flag} {key:?} {ctx:?}");
                        *statuses.entry(grpc_status(&fast)).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    // Answers and each refusal the methods make were compared: OK, INVALID_ARGUMENT (a type
    // mismatch, a trait past its limit), NOT_FOUND, UNAUTHENTICATED.
    for code in ["0", "3", "5", "16"] {
        assert!(statuses.contains_key(code), "{code} in {statuses:?}");
    }
}

/// An unusual request: what it is, its extra headers, its body.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a dyn Fn() -> Frames);

#[tokio::test]
async fn what_the_hot_path_does_not_take_reaches_tonic_intact() {
    let flagd = flagd().await;
    let path = "/flagd.evaluation.v1.Service/ResolveBoolean";
    let mut message = Vec::new();
    prost::encoding::string::encode(1, &"new_checkout".to_owned(), &mut message);
    let with_trailers = || {
        let mut frames = framed(&message, 0, 2);
        let mut trailers = HeaderMap::new();
        trailers.insert("x-extra", HeaderValue::from_static("1"));
        frames.push(Ok(Frame::trailers(trailers)));
        frames
    };
    let cases: [Case<'_>; 6] = [
        ("a compressed message", &[], &|| framed(&message, 1, 1)),
        ("a grpc-encoding", &[("grpc-encoding", "gzip")], &|| {
            framed(&message, 0, 1)
        }),
        ("no message", &[], &Vec::new),
        ("a message that is not protobuf", &[], &|| {
            framed(&[0xff, 0xff, 0xff], 0, 1)
        }),
        ("a short message", &[], &|| {
            let mut frames = framed(&message, 0, 1);
            frames.push(Ok(Frame::data(Bytes::from_static(b"\0\0\0\0\x09"))));
            frames
        }),
        ("request trailers", &[], &with_trailers),
    ];
    for (case, extra, frames) in cases {
        let (fast, reference, handed) = both(&flagd, path, Some(SERVER_KEY), extra, frames).await;
        assert!(handed, "{case}: handed to tonic");
        assert_eq!(fast, reference, "{case}");
    }
}

#[test]
fn only_the_resolvers_and_resolve_all_are_hot() {
    for version in ["v1", "v2"] {
        for method in [
            "ResolveBoolean",
            "ResolveString",
            "ResolveFloat",
            "ResolveInt",
            "ResolveObject",
            "ResolveAll",
        ] {
            assert!(Unary::of(&format!("/flagd.evaluation.{version}.Service/{method}")).is_some());
        }
        assert_eq!(
            Unary::of(&format!("/flagd.evaluation.{version}.Service/EventStream")),
            None
        );
    }
    assert_eq!(
        Unary::of("/flagd.sync.v1.FlagSyncService/FetchAllFlags"),
        None
    );
    // Hot: gRPC (not Connect) and a body this path reads (not a compressed one).
    let path = "/flagd.evaluation.v2.Service/ResolveInt";
    let headers = |pairs: &[(&'static str, &'static str)]| {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    };
    let grpc = ("content-type", "application/grpc+proto");
    assert!(Unary::hot(&headers(&[grpc]), path).is_some());
    assert!(Unary::hot(&headers(&[grpc, ("grpc-encoding", "gzip")]), path).is_none());
    assert!(Unary::hot(&headers(&[("content-type", "application/json")]), path).is_none());
    assert!(Unary::hot(&headers(&[("content-type", "application/proto")]), path).is_none());
    assert!(Unary::hot(&headers(&[]), path).is_none());
}
