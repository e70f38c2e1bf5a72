//! Span attributes made once and kept, so that a sampled request's span costs few allocations:
//! a span's name per route and method, `server.address`/`server.port` per `Host` a thread sees,
//! `client.address` per peer address and `user_agent.original` per `User-Agent` a thread sees,
//! a key's fingerprint per key a thread sees (`Arc` strings, whose clones only count
//! references). Nothing here runs for a span the sampler dropped.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock};

use http::{HeaderMap, Method, Version};
use opentelemetry::{KeyValue, StringValue, Value};
use parking_lot::RwLock;

/// The connection a request came on, as its server span records it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Peer {
    /// The client's address (`None` where the listener does not know it).
    pub address: Option<SocketAddr>,
    /// Whether the connection is TLS (`url.scheme` is then `https`).
    pub https: bool,
}

impl Peer {
    /// `url.scheme`.
    pub(super) fn scheme(self) -> &'static str {
        if self.https {
            "https"
        } else {
            "http"
        }
    }
}

/// A standard method's name as a static string (span names start as it).
pub(super) fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        _ => "HTTP",
    }
}

pub(super) fn version_name(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// A shared string as an attribute value (cloned by counting a reference).
pub(super) fn shared(text: impl Into<Arc<str>>) -> Value {
    Value::String(StringValue::from(text.into()))
}

/// `"{method} {route}"`, made once per pair and kept: methods and routes are a short fixed list
/// (`route` is a route's template, `method` one of [`method_name`]'s), so naming a span
/// allocates nothing after the first request of its kind.
pub(super) fn span_name(method: &'static str, route: &'static str) -> &'static str {
    static NAMES: LazyLock<RwLock<HashMap<(&'static str, &'static str), &'static str>>> =
        LazyLock::new(Default::default);
    if let Some(name) = NAMES.read().get(&(method, route)) {
        return name;
    }
    NAMES
        .write()
        .entry((method, route))
        .or_insert_with(|| Box::leak(format!("{method} {route}").into_boxed_str()))
}

/// A `Host` (or authority) and its attributes.
type Authority = (Box<str>, Arc<[KeyValue]>);

thread_local! {
    /// The last `Host` (or authority) this thread saw and its attributes: a listener is mostly
    /// asked under one name.
    static AUTHORITY: RefCell<Option<Authority>> = const { RefCell::new(None) };
    /// The fingerprints' attributes of the last keys this thread saw, by the keys' 64-bit
    /// hashes (a few environments take most requests; no key is kept).
    static FINGERPRINTS: RefCell<Vec<(u64, KeyValue)>> = const { RefCell::new(Vec::new()) };
}

/// Keys whose fingerprints a thread keeps.
const FINGERPRINTS_KEPT: usize = 8;

/// `server.address` and `server.port` from the `Host` header (HTTP/1.1) or the authority.
pub(super) fn server_address(headers: &HeaderMap, uri: &http::Uri) -> Option<Arc<[KeyValue]>> {
    let authority = uri
        .authority()
        .map(http::uri::Authority::as_str)
        .or_else(|| {
            headers
                .get(http::header::HOST)
                .and_then(|v| v.to_str().ok())
        })?;
    AUTHORITY.with_borrow_mut(|last| {
        if let Some((text, attributes)) = last.as_ref() {
            if **text == *authority {
                return Some(attributes.clone());
            }
        }
        let parsed = authority.parse::<http::uri::Authority>().ok()?;
        let mut attributes = vec![KeyValue::new("server.address", shared(parsed.host()))];
        if let Some(port) = parsed.port_u16() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        let attributes: Arc<[KeyValue]> = attributes.into();
        *last = Some((authority.into(), attributes.clone()));
        Some(attributes)
    })
}

/// `flagpole.environment_key.fingerprint` of a key, as the logs show it.
pub(super) fn fingerprint_attribute(key: &str) -> KeyValue {
    let hash = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
    FINGERPRINTS.with_borrow_mut(|kept| {
        if let Some((_, kv)) = kept.iter().find(|(h, _)| *h == hash) {
            return kv.clone();
        }
        let kv = KeyValue::new(
            "flagpole.environment_key.fingerprint",
            shared(crate::keys::fingerprint(key)),
        );
        if kept.len() == FINGERPRINTS_KEPT {
            kept.remove(0);
        }
        kept.push((hash, kv.clone()));
        kv
    })
}

thread_local! {
    /// The last client address this thread formatted (a keep-alive connection, or one
    /// client's many, come back to it).
    static CLIENT: RefCell<Option<(IpAddr, Value)>> = const { RefCell::new(None) };
    /// The last `User-Agent` this thread saw and its value (an SDK sends the same one always).
    static USER_AGENT: RefCell<Option<(Box<str>, Value)>> = const { RefCell::new(None) };
}

/// `client.address` and `client.port` of the peer.
pub(super) fn client_address(address: SocketAddr) -> [KeyValue; 2] {
    let ip = address.ip();
    let text = CLIENT.with_borrow_mut(|last| match last {
        Some((seen, value)) if *seen == ip => value.clone(),
        _ => {
            let value = shared(ip.to_string());
            *last = Some((ip, value.clone()));
            value
        }
    });
    [
        KeyValue::new("client.address", text),
        KeyValue::new("client.port", i64::from(address.port())),
    ]
}

/// `user_agent.original`, when the request names one.
pub(super) fn user_agent(headers: &HeaderMap) -> Option<KeyValue> {
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())?;
    let value = USER_AGENT.with_borrow_mut(|last| match last {
        Some((seen, value)) if **seen == *agent => value.clone(),
        _ => {
            let value = shared(agent);
            *last = Some((agent.into(), value.clone()));
            value
        }
    });
    Some(KeyValue::new("user_agent.original", value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_once_per_route_and_method() {
        let first = span_name("GET", "/api/v1/flags/");
        assert_eq!(first, "GET /api/v1/flags/");
        assert!(std::ptr::eq(first, span_name("GET", "/api/v1/flags/")));
        assert_eq!(span_name("POST", "/api/v1/flags/"), "POST /api/v1/flags/");
    }

    #[test]
    fn kept_attributes_follow_the_host_and_the_key() {
        let mut headers = HeaderMap::new();
        let uri: http::Uri = "/api/v1/flags/".parse().unwrap();
        for (host, address, port) in [
            ("flags.internal:8000", "flags.internal", Some("8000")),
            ("flags.internal:8000", "flags.internal", Some("8000")),
            ("edge.example", "edge.example", None),
        ] {
            headers.insert(http::header::HOST, host.parse().unwrap());
            let kept = server_address(&headers, &uri).unwrap();
            let get = |k: &str| {
                kept.iter()
                    .find(|kv| kv.key.as_str() == k)
                    .map(|kv| kv.value.to_string())
            };
            assert_eq!(get("server.address").as_deref(), Some(address));
            assert_eq!(get("server.port").as_deref(), port);
        }
        for key in ["ser.first", "ser.second", "ser.first"] {
            assert_eq!(
                fingerprint_attribute(key).value.to_string(),
                crate::keys::fingerprint(key)
            );
        }
    }

    #[test]
    fn kept_attributes_follow_the_client_and_its_agent() {
        for (address, ip) in [
            ("127.0.0.1:5000", "127.0.0.1"),
            ("127.0.0.1:5001", "127.0.0.1"),
            ("[::1]:5002", "::1"),
        ] {
            let address: SocketAddr = address.parse().unwrap();
            let [ip_kv, port_kv] = client_address(address);
            assert_eq!(ip_kv.value.to_string(), ip);
            assert_eq!(port_kv.value, Value::I64(i64::from(address.port())));
        }
        let mut headers = HeaderMap::new();
        assert!(user_agent(&headers).is_none());
        for agent in ["flagsmith-js/1", "flagsmith-js/1", "curl/8"] {
            headers.insert(http::header::USER_AGENT, agent.parse().unwrap());
            assert_eq!(user_agent(&headers).unwrap().value.to_string(), agent);
        }
    }
}
