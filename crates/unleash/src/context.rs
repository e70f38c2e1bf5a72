//! `Context`: who is asking, as Unleash's frontend API takes it — `userId`, `sessionId`,
//! `remoteAddress`, `environment`, `appName`, `currentTime` and `properties` — read from a query
//! string's pairs or a POST body by the same rules as Unleash Edge (a known field may also come
//! as a property; any other top-level string becomes a property; numbers and booleans are read
//! as their text). The crate reads no clock and no socket: the caller fills the time and the
//! caller's address in when the request gave none.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::time::SystemTime;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};
use unleash_types::client_features::Context as EngineContext;

/// The context one evaluation is for.
#[derive(Clone, Debug, Default)]
pub struct Context {
    pub(crate) inner: EngineContext,
}

/// A POST body that is not a context (not a JSON object, or a `context` member that is not one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError(String);

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an Unleash context: {}", self.0)
    }
}

impl std::error::Error for ContextError {}

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// A context from a POST body: a JSON object of the fields and `properties`, or one
    /// wrapping them in a `context` member.
    pub fn from_json(body: &[u8]) -> Result<Self, ContextError> {
        serde_json::from_slice::<EngineContext>(body)
            .map(|inner| Self { inner })
            .map_err(|e| ContextError(e.to_string()))
    }

    /// A context from a query string's decoded pairs: `properties[name]=value` is a property,
    /// any other name a field or, when Unleash names no such field, a property. A later pair
    /// of the same name wins.
    pub fn from_query<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut top = Map::new();
        let mut properties = Map::new();
        for (key, value) in pairs {
            let value = Value::String(value.to_owned());
            match key
                .strip_prefix("properties[")
                .and_then(|rest| rest.strip_suffix(']'))
            {
                Some(name) => properties.insert(name.to_owned(), value),
                None => top.insert(key.to_owned(), value),
            };
        }
        if !properties.is_empty() {
            top.insert("properties".to_owned(), Value::Object(properties));
        }
        // Unleash's own reading of a context object (what Edge applies to a query string too).
        let inner = serde_json::from_value(Value::Object(top)).unwrap_or_default();
        Self { inner }
    }

    /// Sets a field by its Unleash name (`userId`, …), or else a property of that name.
    pub fn set(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        let value = Some(value.into());
        match name {
            "userId" => self.inner.user_id = value,
            "sessionId" => self.inner.session_id = value,
            "environment" => self.inner.environment = value,
            "appName" => self.inner.app_name = value,
            "currentTime" => self.inner.current_time = value,
            "remoteAddress" => self.inner.remote_address = value,
            _ => {
                if let Some(value) = value {
                    self.properties_mut().insert(name.to_owned(), value);
                }
            }
        }
        self
    }

    /// Sets a property (a custom context field), even one spelled like a field.
    pub fn set_property(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.properties_mut().insert(name.into(), value.into());
        self
    }

    /// A field by its Unleash name, or else a property.
    pub fn get(&self, name: &str) -> Option<&str> {
        let field = match name {
            "userId" => &self.inner.user_id,
            "sessionId" => &self.inner.session_id,
            "environment" => &self.inner.environment,
            "appName" => &self.inner.app_name,
            "currentTime" => &self.inner.current_time,
            "remoteAddress" => &self.inner.remote_address,
            _ => return self.property(name),
        };
        field.as_deref()
    }

    /// A property.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.inner
            .properties
            .as_ref()?
            .get(name)
            .map(String::as_str)
    }

    /// The caller's address as `remoteAddress`, unless the request gave one (as Unleash's
    /// frontend API does).
    pub fn fill_remote_address(&mut self, address: IpAddr) -> &mut Self {
        if self.inner.remote_address.is_none() {
            self.inner.remote_address = Some(address.to_string());
        }
        self
    }

    /// `now` as `currentTime`, unless the request gave one: the SDKs evaluate date constraints
    /// against the current time, and this crate reads no clock.
    pub fn fill_current_time(&mut self, now: SystemTime) -> &mut Self {
        if self.inner.current_time.is_none() {
            let now: DateTime<Utc> = now.into();
            self.inner.current_time = Some(now.to_rfc3339_opts(SecondsFormat::Millis, true));
        }
        self
    }

    fn properties_mut(&mut self) -> &mut HashMap<String, String> {
        self.inner.properties.get_or_insert_with(HashMap::new)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::Context;

    #[test]
    fn from_query() {
        let context = Context::from_query([
            ("userId", "u"),
            ("properties[plan]", "gold"),
            ("properties[sessionId]", "s"),
            ("tenant", "t"),
            ("appName", "a1"),
            ("appName", "a2"),
        ]);
        assert_eq!(context.get("userId"), Some("u"));
        assert_eq!(context.get("sessionId"), Some("s"));
        assert_eq!(context.property("sessionId"), None);
        assert_eq!(context.get("plan"), Some("gold"));
        assert_eq!(context.property("tenant"), Some("t"));
        assert_eq!(context.get("appName"), Some("a2"));
    }

    #[test]
    fn from_json() {
        let context = Context::from_json(
            br#"{"userId":7,"properties":{"beta":true,"n":1.5,"x":null},"other":"o","drop":[1]}"#,
        )
        .unwrap();
        assert_eq!(context.get("userId"), Some("7"));
        assert_eq!(context.property("beta"), Some("true"));
        assert_eq!(context.property("n"), Some("1.5"));
        assert_eq!(context.property("x"), None);
        assert_eq!(context.property("other"), Some("o"));
        assert_eq!(context.property("drop"), None);
        let wrapped = Context::from_json(br#"{"context":{"sessionId":"s"}}"#).unwrap();
        assert_eq!(wrapped.get("sessionId"), Some("s"));
        assert!(Context::from_json(b"[1]").is_err());
        assert!(Context::from_json(br#"{"context":1}"#).is_err());
    }

    #[test]
    fn fills_only_what_is_missing() {
        let mut context = Context::new();
        context
            .fill_remote_address("10.0.0.1".parse().unwrap())
            .fill_current_time(SystemTime::UNIX_EPOCH + Duration::from_millis(1_650_000_000_123));
        assert_eq!(context.get("remoteAddress"), Some("10.0.0.1"));
        assert_eq!(context.get("currentTime"), Some("2022-04-15T05:20:00.123Z"));
        context.fill_remote_address("10.0.0.2".parse().unwrap());
        assert_eq!(context.get("remoteAddress"), Some("10.0.0.1"));
        context.set("tenant", "t").set("userId", "u");
        assert_eq!(context.property("tenant"), Some("t"));
        assert_eq!(context.get("userId"), Some("u"));
    }
}
