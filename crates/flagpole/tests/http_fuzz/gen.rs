//! Request generation for the HTTP fuzz test: proptest strategies producing whole raw HTTP/1.x
//! requests, biased towards what the proxy actually parses (its route prefixes, key headers,
//! identity and OFREP bodies) and then mutated: odd methods, paths with `..`, percent-escapes
//! and invalid bytes, huge query strings, invalid/duplicate/huge headers, bodies that are
//! random bytes, invalid UTF-8, mutated JSON or deeply nested arrays, and several framings.
//! Three classes in equal parts (see [`case`]): well-formed POSTs carrying those bodies to the
//! identity and OFREP endpoints with a valid key, well-formed requests to any route, and wild
//! ones (so that most requests get past the HTTP parser and reach Flagpole's own code).

use std::fmt;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// The keys of the environment the test server serves (`examples/environment.json`).
pub(crate) const CLIENT_KEY: &str = "example_client_key";
pub(crate) const SERVER_KEY: &str = "ser.fuzz_server_key";

const ROUTES: &[&str] = &[
    "/api/v1/flags/",
    "/api/v1/flags",
    "/api/v1/identities/",
    "/api/v1/identities",
    "/api/v1/environment-document/",
    "/api/v1/analytics/flags/",
    "/api/v1/analytics/flags",
    "/proxy/health/liveness",
    "/proxy/health/readiness",
    "/proxy/health",
    "/health",
    "/ofrep/v1/evaluate/flags",
    "/ofrep/v1/evaluate/flags/",
    "//ofrep/v1/evaluate/flags",
    "/ofrep/v1/evaluate/flags/new_checkout",
    "/ofrep/v1/evaluate/flags/max_projects",
    "/ofrep/v1/evaluate/flags/no_such_flag",
    "/ofrep/v1/events",
    "/sse/environments/example_client_key/stream",
    "/sse/environments/unknown/stream",
    "/",
    "*",
];

const ESCAPES: &[&str] = &[
    "%00", "%ff", "%FF", "%2F", "%2f", "%2e%2e", "%", "%z", "%zz", "%C3%28", "%e2%82", "%25",
    "%20", "..", "/..", "/../", "/./", "//", "?", "#", ";", "\\",
];

const KEYS: &[&str] = &[
    CLIENT_KEY,
    SERVER_KEY,
    " example_client_key ",
    "unknown",
    "",
    "ser.",
    "Bearer",
];

const FEATURES: &[&str] = &[
    "welcome_message",
    "new_checkout",
    "max_projects",
    "banner_text",
    "dark_mode",
    "internal_debug_panel",
    "layout",
];

/// How the body is framed on the wire.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    /// `Content-Length` equal to the body.
    Length,
    /// `Transfer-Encoding: chunked` with chunks of this size.
    Chunked(usize),
    /// No framing header: the body bytes follow the head (a GET's "body" is a next request).
    Bare,
    /// `Content-Length` smaller than the body (by 1..=len, picked by the index): the rest is a
    /// pipelined request.
    Short(prop::sample::Index),
    /// `Content-Length` larger than the body: the request never completes (client closes).
    Long(usize),
    /// The head is cut before its end (client closes).
    CutHead(usize),
}

/// One generated request.
#[derive(Clone)]
pub(crate) struct Case {
    pub method: Vec<u8>,
    pub target: Vec<u8>,
    pub version: Vec<u8>,
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub body: Vec<u8>,
    pub framing: Framing,
}

impl Case {
    /// The bytes to send, and whether they form complete request(s) that must be answered
    /// without the client closing first.
    pub(crate) fn wire(&self) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(256 + self.body.len());
        out.extend_from_slice(&self.method);
        out.push(b' ');
        out.extend_from_slice(&self.target);
        if !self.version.is_empty() {
            out.push(b' ');
            out.extend_from_slice(&self.version);
        }
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        let mut complete = true;
        match &self.framing {
            Framing::Length => header(&mut out, "Content-Length", self.body.len()),
            Framing::Chunked(_) => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::Bare | Framing::CutHead(_) => {}
            Framing::Short(cut) => {
                let len = self.body.len();
                let shorter = if len == 0 {
                    0
                } else {
                    len - 1 - cut.index(len)
                };
                header(&mut out, "Content-Length", shorter);
            }
            Framing::Long(n) => {
                header(&mut out, "Content-Length", self.body.len() + n);
                complete = false;
            }
        }
        out.extend_from_slice(b"\r\n");
        if let Framing::CutHead(keep) = self.framing {
            out.truncate(keep.min(out.len().saturating_sub(3)));
            return (out, false);
        }
        match self.framing {
            Framing::Chunked(size) => {
                for chunk in self.body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
            _ => out.extend_from_slice(&self.body),
        }
        (out, complete)
    }

    /// Whether the method is HEAD (its response has no body).
    pub(crate) fn is_head(&self) -> bool {
        self.method == b"HEAD"
    }
}

fn header(out: &mut Vec<u8>, name: &str, value: usize) {
    out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
}

/// Shows the request as escaped text, long runs shortened, so a failure can be replayed.
impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (wire, complete) = self.wire();
        let text = String::from_utf8_lossy(&wire);
        let shown: String = if text.len() > 3000 {
            let head: String = text.chars().take(1500).collect();
            let tail: String = text
                .chars()
                .rev()
                .take(500)
                .collect::<Vec<_>>()
                .iter()
                .rev()
                .collect();
            format!("{head}…[{} bytes in all]…{tail}", wire.len())
        } else {
            text.into_owned()
        };
        write!(
            f,
            "Case(complete={complete}, framing={:?}, {shown:?})",
            self.framing
        )
    }
}

/// A third of the cases are well-formed POSTs with a valid key to the endpoints that read a
/// body (so that the bodies reach the parsers), a third well-formed HTTP/1.1 to any route with
/// plausible headers, a third wild (anything may be malformed).
pub(crate) fn case() -> impl Strategy<Value = Case> {
    prop_oneof![body_case(), clean_case(), wild_case()]
}

fn body_case() -> impl Strategy<Value = Case> {
    let endpoint = prop_oneof![
        select(&["/api/v1/identities/", "/api/v1/identities"][..])
            .prop_map(|p| (p.to_owned(), false)),
        Just(("/ofrep/v1/evaluate/flags".to_owned(), true)),
        select(FEATURES).prop_map(|f| (format!("/ofrep/v1/evaluate/flags/{f}"), true)),
    ];
    let key = (select(&[CLIENT_KEY, SERVER_KEY][..]), 0u8..3);
    let framing = prop_oneof![
        4 => Just(Framing::Length),
        1 => (1usize..70_000).prop_map(Framing::Chunked),
    ];
    (endpoint, key, vec(known_header(), 0..3), body(), framing).prop_map(
        |((path, ofrep), (key, how), extra, body, framing)| {
            let key_header = match (ofrep, how) {
                (true, 1) => ("X-API-Key".to_owned(), key.to_owned()),
                (true, 2) => ("Authorization".to_owned(), format!("Bearer {key}")),
                _ => ("X-Environment-Key".to_owned(), key.to_owned()),
            };
            let mut headers = vec![
                (b"Host".to_vec(), b"127.0.0.1".to_vec()),
                (key_header.0.into_bytes(), key_header.1.into_bytes()),
                (b"Content-Type".to_vec(), b"application/json".to_vec()),
            ];
            headers.extend(extra);
            Case {
                method: b"POST".to_vec(),
                target: path.into_bytes(),
                version: b"HTTP/1.1".to_vec(),
                headers,
                body,
                framing,
            }
        },
    )
}

fn clean_case() -> impl Strategy<Value = Case> {
    let method = prop_oneof![
        6 => select(&["GET", "POST"][..]),
        2 => select(&["HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"][..]),
    ]
    .prop_map(|m| m.as_bytes().to_vec());
    let framing = prop_oneof![
        4 => Just(Framing::Length),
        1 => (1usize..70_000).prop_map(Framing::Chunked),
    ];
    let headers = (key_header(), vec(known_header(), 0..4)).prop_map(|(key, extra)| {
        let host = (b"Host".to_vec(), b"127.0.0.1".to_vec());
        std::iter::once(host).chain(key).chain(extra).collect()
    });
    (method, target(false), headers, body(), framing).prop_map(
        |(method, target, headers, body, framing)| Case {
            method,
            target,
            version: b"HTTP/1.1".to_vec(),
            headers,
            body,
            framing,
        },
    )
}

fn wild_case() -> impl Strategy<Value = Case> {
    let framing = prop_oneof![
        12 => Just(Framing::Length),
        3 => (1usize..70_000).prop_map(Framing::Chunked),
        2 => Just(Framing::Bare),
        1 => any::<prop::sample::Index>().prop_map(Framing::Short),
        1 => (1usize..100).prop_map(Framing::Long),
        1 => (0usize..200).prop_map(Framing::CutHead),
    ];
    (
        method(),
        target(true),
        version(),
        headers(),
        body(),
        framing,
    )
        .prop_map(|(method, target, version, headers, body, framing)| Case {
            method,
            target,
            version,
            headers,
            body,
            framing,
        })
}

fn method() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        10 => select(&["GET", "POST", "HEAD"][..]).prop_map(|m| m.as_bytes().to_vec()),
        3 => select(&["PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "get", "post", "PRI", "FOO"][..])
            .prop_map(|m| m.as_bytes().to_vec()),
        1 => "[A-Z]{1,20}".prop_map(String::into_bytes),
        1 => vec(any::<u8>(), 0..12),
    ]
}

fn version() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        20 => Just(b"HTTP/1.1".to_vec()),
        2 => Just(b"HTTP/1.0".to_vec()),
        1 => select(&["HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "http/1.1", "HTTP/1.1 x", "", "HTTP/"][..])
            .prop_map(|v| v.as_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..10).prop_map(no_line_breaks),
    ]
}

/// A route, mutated (`wild`: also with raw bytes, very long, absolute-form), with an optional
/// query string.
fn target(wild: bool) -> impl Strategy<Value = Vec<u8>> {
    let tame = prop_oneof![
        3 => (select(ESCAPES), any::<prop::sample::Index>()).prop_map(|(e, i)| Mutation::Insert(e.as_bytes().to_vec(), i)),
        2 => ("[a-zA-Z0-9._~%/-]{0,24}", any::<prop::sample::Index>()).prop_map(|(s, i)| Mutation::Insert(s.into_bytes(), i)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::PercentEncode),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Delete),
    ];
    let wild_mutation = prop_oneof![
        3 => (select(ESCAPES), any::<prop::sample::Index>()).prop_map(|(e, i)| Mutation::Insert(e.as_bytes().to_vec(), i)),
        2 => ("[a-zA-Z0-9._~%/-]{0,24}", any::<prop::sample::Index>()).prop_map(|(s, i)| Mutation::Insert(s.into_bytes(), i)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::PercentEncode),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Delete),
        1 => (vec(any::<u8>(), 1..8), any::<prop::sample::Index>()).prop_map(|(b, i)| Mutation::Insert(no_ws(b), i)),
        1 => (select(&["a", "/x", "%2e", "../"][..]), 100usize..20_000).prop_map(|(s, n)| Mutation::Append(s.repeat(n).into_bytes())),
        1 => Just(Mutation::Absolute),
    ];
    let mutations = if wild {
        vec(wild_mutation, 0..3).boxed()
    } else {
        prop_oneof![2 => Just(Vec::new()), 1 => vec(tame, 1..3)].boxed()
    };
    (select(ROUTES), mutations, query(wild)).prop_map(|(route, mutations, query)| {
        let mut path = route.as_bytes().to_vec();
        for m in mutations {
            m.apply(&mut path);
        }
        if let Some(q) = query {
            path.push(b'?');
            path.extend_from_slice(&q);
        }
        path
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Insert(Vec<u8>, prop::sample::Index),
    PercentEncode(prop::sample::Index),
    Delete(prop::sample::Index),
    Append(Vec<u8>),
    Absolute,
}

impl Mutation {
    fn apply(self, path: &mut Vec<u8>) {
        match self {
            Mutation::Insert(bytes, at) => {
                let at = at.index(path.len() + 1);
                path.splice(at..at, bytes);
            }
            Mutation::PercentEncode(at) if !path.is_empty() => {
                let at = at.index(path.len());
                let escaped = format!("%{:02X}", path[at]).into_bytes();
                path.splice(at..=at, escaped);
            }
            Mutation::Delete(at) if !path.is_empty() => {
                path.remove(at.index(path.len()));
            }
            Mutation::Append(bytes) => path.extend_from_slice(&bytes),
            Mutation::Absolute => path
                .splice(0..0, b"http://127.0.0.1".iter().copied())
                .for_each(drop),
            _ => {}
        }
    }
}

fn query(wild: bool) -> impl Strategy<Value = Option<Vec<u8>>> {
    let raw = if wild { 1 } else { 0 };
    prop_oneof![
        6 => Just(None),
        3 => "[a-zA-Z0-9_.~-]{0,20}".prop_map(|id| Some(format!("identifier={id}").into_bytes())),
        2 => select(FEATURES).prop_map(|f| Some(format!("feature={f}").into_bytes())),
        1 => Just(Some(b"identifier=&identifier=x&identifier=%ff%fe".to_vec())),
        1 => "[a-zA-Z0-9%=&+._-]{0,40}".prop_map(|q| Some(format!("t={q}&since={q}").into_bytes())),
        1 => "[ -~]{0,60}".prop_map(|q| Some(q.replace(' ', "%20").into_bytes())),
        1 => (1usize..20_000).prop_map(|n| Some(format!("identifier={}", "u".repeat(n)).into_bytes())),
        raw => vec(any::<u8>(), 0..30).prop_map(|b| Some(no_ws(b))),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    (
        prop::option::weighted(0.9, Just((b"Host".to_vec(), b"127.0.0.1".to_vec()))),
        key_header(),
        vec(extra_header(), 0..6),
        bulk_headers(),
    )
        .prop_map(|(host, key, extra, bulk)| {
            host.into_iter()
                .chain(key)
                .chain(extra)
                .chain(bulk)
                .collect()
        })
}

/// The key, the way each API takes it (or wrongly).
fn key_header() -> impl Strategy<Value = Option<(Vec<u8>, Vec<u8>)>> {
    let value = prop_oneof![
        8 => select(KEYS).prop_map(|k| k.as_bytes().to_vec()),
        1 => vec(field_byte(), 0..40),
        1 => (1usize..30_000).prop_map(|n| "k".repeat(n).into_bytes()),
    ];
    let name = select(
        &[
            "X-Environment-Key",
            "x-environment-key",
            "X-API-Key",
            "Authorization",
        ][..],
    );
    prop::option::weighted(
        0.85,
        (name, value, any::<bool>()).prop_map(|(name, value, bearer)| {
            let value = if name == "Authorization" && bearer {
                [b"Bearer ".as_slice(), &value].concat()
            } else {
                value
            };
            (name.as_bytes().to_vec(), value)
        }),
    )
}

/// Headers the proxy reads (CORS, encodings, revalidation, streams, connection handling).
fn known_header() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    const KNOWN: &[(&str, &str)] = &[
        ("Content-Type", "application/json"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Accept-Encoding", "gzip, br, zstd"),
        ("Accept-Encoding", "gzip;q=0, *;q=0"),
        ("Accept-Encoding", "identity;q=0"),
        ("If-None-Match", "*"),
        ("If-None-Match", "W/\"x\", \"y\""),
        ("If-Modified-Since", "Sat, 01 Jun 2024 12:00:00 GMT"),
        ("Origin", "https://example.com"),
        ("Origin", "null"),
        ("Access-Control-Request-Method", "POST"),
        (
            "Access-Control-Request-Headers",
            "x-environment-key, content-type",
        ),
        ("Last-Event-ID", "1-abc"),
        ("Connection", "close"),
        ("Connection", "keep-alive"),
        ("Connection", "upgrade"),
        ("Upgrade", "h2c"),
        ("Upgrade", "websocket"),
        ("Expect", "100-continue"),
        ("Expect", "nonsense"),
        ("X-API-Key", "ser.fuzz_server_key"),
        ("Authorization", "Bearer other_key"),
        ("Accept", "text/event-stream"),
    ];
    select(KNOWN).prop_map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
}

fn extra_header() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    prop_oneof![
        10 => known_header(),
        // A token name with visible or obs-text bytes (valid), or with any bytes (mostly not).
        3 => ("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,24}", vec(field_byte(), 0..64))
            .prop_map(|(n, v)| (n.into_bytes(), v)),
        1 => ("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,24}", vec(any::<u8>(), 0..64))
            .prop_map(|(n, v)| (n.into_bytes(), no_line_breaks(v))),
        1 => (vec(any::<u8>(), 1..16), vec(any::<u8>(), 0..16))
            .prop_map(|(n, v)| (no_line_breaks(n), no_line_breaks(v))),
        1 => (1usize..70_000).prop_map(|n| (b"X-Huge".to_vec(), "h".repeat(n).into_bytes())),
    ]
}

/// Occasionally many headers: duplicates of one, or thousands of distinct ones.
fn bulk_headers() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    prop_oneof![
        10 => Just(Vec::new()),
        1 => (1usize..300).prop_map(|n| vec![(b"X-Environment-Key".to_vec(), CLIENT_KEY.as_bytes().to_vec()); n]),
        1 => (1usize..2_500).prop_map(|n| (0..n).map(|i| (format!("X-Pad-{i}").into_bytes(), b"p".to_vec())).collect()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => Just(Vec::new()),
        4 => identity_body(),
        4 => ofrep_body(),
        4 => prop_oneof![identity_body(), ofrep_body()]
            .prop_flat_map(|b| (Just(b), vec(json_mutation(), 1..4)))
            .prop_map(|(mut b, ms)| { ms.into_iter().for_each(|m| m.apply(&mut b)); b }),
        1 => (select(&["[", "{\"a\":", "{\"context\":", "[{\"x\":["][..]), 10usize..200_000)
            .prop_map(|(open, n)| open.repeat(n).into_bytes()),
        1 => vec(any::<u8>(), 0..4096),
        1 => (vec(any::<u8>(), 1..8), select(&["identifier", "trait_key", "targetingKey"][..]))
            .prop_map(|(junk, field)| invalid_utf8_body(field, &junk)),
        1 => (100usize..12_000).prop_map(many_traits),
        1 => (1_000usize..1_200_000).prop_map(|n| format!(
            r#"{{"identifier":"u","traits":[{{"trait_key":"big","trait_value":"{}"}}],"context":{{"targetingKey":"u","big":"{}"}}}}"#,
            "v".repeat(n), "v".repeat(n.min(70_000))).into_bytes()),
    ]
}

fn identity_body() -> impl Strategy<Value = Vec<u8>> {
    let value = prop_oneof![
        Just(serde_json::json!(null)),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(
            |f| serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
        ),
        "\\PC{0,30}".prop_map(serde_json::Value::from),
        Just(serde_json::json!([1, 2])),
        Just(serde_json::json!({"a": 1})),
        Just(serde_json::Value::String("x".repeat(2_001))),
    ];
    let traits = vec(("[a-z_]{0,12}", value, any::<bool>()), 0..6);
    ("\\PC{0,24}", traits, any::<bool>()).prop_map(|(id, traits, transient)| {
        let traits: Vec<_> = traits
            .into_iter()
            .map(|(k, v, t)| serde_json::json!({"trait_key": k, "trait_value": v, "transient": t}))
            .collect();
        serde_json::to_vec(
            &serde_json::json!({"identifier": id, "traits": traits, "transient": transient}),
        )
        .expect("serialise")
    })
}

fn ofrep_body() -> impl Strategy<Value = Vec<u8>> {
    let scalar = prop_oneof![
        Just(serde_json::json!(null)),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "\\PC{0,20}".prop_map(serde_json::Value::from),
        Just(serde_json::json!({"nested": [1, {"x": "y"}]})),
        Just(serde_json::json!(1e308)),
        Just(serde_json::Value::String("x".repeat(2_001))),
    ];
    let key = prop_oneof![
        Just(serde_json::json!(null)),
        "\\PC{0,16}".prop_map(serde_json::Value::from),
        Just(serde_json::json!(5))
    ];
    (key, vec(("[a-zA-Z_]{0,10}", scalar), 0..6), 0u8..4).prop_map(|(key, attrs, shape)| {
        let mut context = serde_json::Map::new();
        if !key.is_null() {
            context.insert("targetingKey".into(), key);
        }
        for (k, v) in attrs {
            context.insert(k, v);
        }
        let body = match shape {
            0 => serde_json::json!({"context": context}),
            1 => serde_json::json!({"context": {"targetingKey": "u", "traits": context}}),
            2 => serde_json::json!({"context": null}),
            _ => serde_json::Value::Object(context),
        };
        serde_json::to_vec(&body).expect("serialise")
    })
}

#[derive(Clone, Debug)]
enum JsonMutation {
    Flip(prop::sample::Index, u8),
    Delete(prop::sample::Index),
    Insert(prop::sample::Index, Vec<u8>),
    Truncate(prop::sample::Index),
}

fn json_mutation() -> impl Strategy<Value = JsonMutation> {
    let token = prop_oneof![
        select(
            &[
                "\"", "\\", "\\u", "\\ud800", "{", "}", "[", "]", ",", ":", "null", "1e999", "-",
                "\u{0}", "\u{feff}"
            ][..]
        )
        .prop_map(|t| t.as_bytes().to_vec()),
        vec(any::<u8>(), 1..6),
    ];
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| JsonMutation::Flip(i, b)),
        any::<prop::sample::Index>().prop_map(JsonMutation::Delete),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| JsonMutation::Insert(i, t)),
        any::<prop::sample::Index>().prop_map(JsonMutation::Truncate),
    ]
}

impl JsonMutation {
    fn apply(self, body: &mut Vec<u8>) {
        if body.is_empty() {
            return;
        }
        match self {
            JsonMutation::Flip(at, b) => {
                let at = at.index(body.len());
                body[at] = b;
            }
            JsonMutation::Delete(at) => {
                body.remove(at.index(body.len()));
            }
            JsonMutation::Insert(at, bytes) => {
                let at = at.index(body.len() + 1);
                body.splice(at..at, bytes);
            }
            JsonMutation::Truncate(at) => body.truncate(at.index(body.len())),
        }
    }
}

/// A body whose `field` string holds invalid UTF-8 (`junk` with a lone continuation byte).
fn invalid_utf8_body(field: &str, junk: &[u8]) -> Vec<u8> {
    let mut bad = junk.to_vec();
    bad.push(0xff);
    bad.retain(|&b| b != b'"' && b != b'\\');
    let mut out = Vec::new();
    let (open, close): (&[u8], &[u8]) = match field {
        "identifier" => (b"{\"identifier\":\"", b"\"}"),
        "trait_key" => (
            b"{\"identifier\":\"u\",\"traits\":[{\"trait_key\":\"",
            b"\",\"trait_value\":1}]}",
        ),
        _ => (b"{\"context\":{\"targetingKey\":\"", b"\"}}"),
    };
    out.extend_from_slice(open);
    out.extend_from_slice(&bad);
    out.extend_from_slice(close);
    out
}

/// An identity with `n` distinct traits (also a valid OFREP context by accident: ignored).
fn many_traits(n: usize) -> Vec<u8> {
    let traits: Vec<_> = (0..n)
        .map(|i| serde_json::json!({"trait_key": format!("t{i}"), "trait_value": i}))
        .collect();
    serde_json::to_vec(&serde_json::json!({"identifier": "many", "traits": traits}))
        .expect("serialise")
}

/// A byte allowed in a header value: visible ASCII, space, tab or obs-text (0x80-0xFF).
fn field_byte() -> impl Strategy<Value = u8> {
    prop_oneof![b' '..=b'~', Just(b'\t'), 0x80u8..=0xff]
}

fn no_line_breaks(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.retain(|&b| b != b'\r' && b != b'\n');
    bytes
}

fn no_ws(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.retain(|&b| !b.is_ascii_whitespace());
    bytes
}
