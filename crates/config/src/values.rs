//! The shapes a configuration value may take (seconds, positive counts, a port, a URL, an API
//! key, a log level), each a type that validates while it is deserialized: a wrong value then
//! fails with its key path attached (`server.port: …`), as every other deserialization error
//! does. Each type also says what it accepts as JSON Schema (its `JsonSchema` impl beside its
//! `Deserialize`), so the published schema and the parser state one rule once; it serializes
//! back to what it reads, for the effective configuration `flagpole check` prints.
//!
//! Messages never repeat a key's value: a rejected key may still be a secret.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer, MapAccess, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A `JsonSchema` impl for a value type: its name and schema, inlined where it is used.
macro_rules! schema {
    ($type:ty, $name:literal, $schema:tt) => {
        impl JsonSchema for $type {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

/// A non-negative number of seconds, as a JSON number (the schema says `number`, and a string
/// is refused as it says; an environment variable's `10` is JSON, so a number). Its key's
/// bounds are the schema's (`bounds.rs`), added to a refusal's message by the loader.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Seconds(pub Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of seconds")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Seconds, E> {
                Ok(Seconds(Duration::from_secs(n)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Seconds, E> {
                u64::try_from(n)
                    .map(|n| Seconds(Duration::from_secs(n)))
                    .map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Seconds, E> {
                Duration::try_from_secs_f64(n)
                    .map(Seconds)
                    .map_err(|_| E::invalid_value(Unexpected::Float(n), &self))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        seconds(&self.0, s)
    }
}

schema!(Seconds, "Seconds", {"type": "number", "minimum": 0});

/// An integer greater than zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct Positive(pub u64);

schema!(Positive, "Positive", {"type": "integer", "minimum": 1});

impl Positive {
    pub(super) fn usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }

    pub(super) fn u32(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }
}

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Positive;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a positive integer")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Positive, E> {
                match n {
                    0 => Err(E::invalid_value(Unexpected::Unsigned(0), &self)),
                    n => Ok(Positive(n)),
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Positive, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A TCP port: an integer from 0 to 65535 (0: any free port).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct Port(pub u16);

schema!(Port, "Port", {"type": "integer", "minimum": 0, "maximum": 65535});

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Port;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer from 0 to 65535")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Port, E> {
                u16::try_from(n)
                    .map(Port)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Port, E> {
                u16::try_from(n)
                    .map(Port)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// An absolute `http://` or `https://` URL with a host, kept as written minus trailing slashes
/// (paths are appended to it). The schema's pattern says the same (a validator need not check
/// `format`), so an editor refuses what the loader refuses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct BaseUrl(pub String);

schema!(BaseUrl, "BaseUrl", {"type": "string", "format": "uri",
    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+([/?#]\\S*)?$"});

impl<'de> Deserialize<'de> for BaseUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d).map_err(|_| de::Error::custom("must be a URL"))?;
        let url =
            url::Url::parse(&text).map_err(|e| de::Error::custom(format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || text.chars().any(char::is_whitespace) {
            return Err(de::Error::custom(
                "not an http:// or https:// URL (spaces percent-encoded)",
            ));
        }
        Ok(BaseUrl(text.trim_end_matches('/').to_owned()))
    }
}

/// A non-empty string, surrounding whitespace removed (as the Edge Proxy strips keys).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct Key(pub String);

schema!(Key, "Key", {"type": "string", "pattern": "\\S"});

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let invalid = || de::Error::custom("must be a non-empty string");
        let text = String::deserialize(d).map_err(|_| invalid())?;
        match text.trim() {
            "" => Err(invalid()),
            key => Ok(Key(key.to_owned())),
        }
    }
}

/// A non-empty string, kept exactly as written (a secret is used byte for byte).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct NonEmpty(pub String);

schema!(NonEmpty, "NonEmpty", {"type": "string", "minLength": 1});

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d) {
            Ok(text) if !text.is_empty() => Ok(NonEmpty(text)),
            _ => Err(de::Error::custom("must be a non-empty string")),
        }
    }
}

/// A [`Key`] that must also start with `ser.` (the Edge Proxy refuses anything else, and a
/// client key in its place would fetch nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(super) struct ServerKey(pub String);

schema!(ServerKey, "ServerKey", {"type": "string", "pattern": "^\\s*ser\\."});

impl<'de> Deserialize<'de> for ServerKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Key(key) = Key::deserialize(d)?;
        if !key.starts_with("ser.") {
            return Err(de::Error::custom("must start with \"ser.\""));
        }
        Ok(ServerKey(key))
    }
}

/// A section: a JSON object and nothing else (a derived struct would also take a list, matching
/// its members by position).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(super) struct Object<T>(pub T);

impl<T: JsonSchema> JsonSchema for Object<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            // The map as given: the wrappers tracking key paths and unknown keys see inside.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// `logging.log_level`: a name from a closed list, in any case: tracing's names and Python's
/// (the Edge Proxy's configs say `WARNING`, `CRITICAL`). An unknown name would otherwise reach
/// the log filter as a directive and silence every line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLevel(usize);

/// Every name `logging.log_level` takes, and the filter directive it means.
const LEVELS: &[(&str, &str)] = &[
    ("TRACE", "trace"),
    ("DEBUG", "debug"),
    ("INFO", "info"),
    ("WARNING", "warn"),
    ("WARN", "warn"),
    ("ERROR", "error"),
    ("CRITICAL", "error"),
    ("FATAL", "error"),
    ("OFF", "off"),
    ("NONE", "off"),
];

impl LogLevel {
    pub const INFO: LogLevel = LogLevel(2);

    /// The name, as the list spells it.
    pub fn name(self) -> &'static str {
        LEVELS[self.0].0
    }

    /// The `tracing` filter directive.
    pub fn directive(self) -> &'static str {
        LEVELS[self.0].1
    }
}

impl<'de> Deserialize<'de> for LogLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = || {
            LEVELS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let text = String::deserialize(d)
            .map_err(|_| de::Error::custom(format!("must be one of {} (any case)", names())))?;
        LEVELS
            .iter()
            .position(|(name, _)| name.eq_ignore_ascii_case(text.trim()))
            .map(LogLevel)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "{text:?} is not a log level: use one of {} (any case)",
                    names()
                ))
            })
    }
}

impl Serialize for LogLevel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl JsonSchema for LogLevel {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "LogLevel".into()
    }
    // Any case is read; the schema lists the two an editor should offer.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<String> = LEVELS
            .iter()
            .map(|(n, _)| n.to_string())
            .chain(LEVELS.iter().map(|(n, _)| n.to_ascii_lowercase()))
            .collect();
        json_schema!({"type": "string", "enum": names})
    }
}

/// For a field where `null` means something other than absent: absent → `None`, present →
/// `Some(the value)`, so `Option<Option<T>>` tells `null` (`Some(None)`) from absent.
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Whole seconds as an integer, anything else as a decimal number.
pub(super) fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    if d.subsec_nanos() == 0 {
        s.serialize_u64(d.as_secs())
    } else {
        s.serialize_f64(d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse<T: for<'de> Deserialize<'de>>(v: serde_json::Value) -> Result<T, String> {
        T::deserialize(v).map_err(|e| e.to_string())
    }

    #[test]
    fn seconds_from_numbers_only() {
        assert_eq!(
            parse::<Seconds>(json!(5)).unwrap().0,
            Duration::from_secs(5)
        );
        assert_eq!(
            parse::<Seconds>(json!(0.25)).unwrap().0,
            Duration::from_millis(250)
        );
        for bad in [
            json!(-1),
            json!("soon"),
            json!("10"),
            json!(true),
            json!(-0.5),
        ] {
            let e = parse::<Seconds>(bad.clone()).unwrap_err();
            assert!(e.contains("expected a number of seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn log_levels_from_the_closed_list_in_any_case() {
        assert_eq!(
            parse::<LogLevel>(json!("warning")).unwrap().directive(),
            "warn"
        );
        assert_eq!(
            parse::<LogLevel>(json!(" Critical ")).unwrap().directive(),
            "error"
        );
        assert_eq!(parse::<LogLevel>(json!("DEBUG")).unwrap().name(), "DEBUG");
        let e = parse::<LogLevel>(json!("DEBG")).unwrap_err();
        assert!(
            e.contains("\"DEBG\" is not a log level") && e.contains("WARNING"),
            "{e}"
        );
        assert!(parse::<LogLevel>(json!(3)).is_err());
    }

    #[test]
    fn counts_ports_and_keys() {
        assert_eq!(parse::<Positive>(json!(3)).unwrap(), Positive(3));
        assert!(parse::<Positive>(json!(0)).is_err());
        assert!(parse::<Positive>(json!(-2)).is_err());
        assert!(parse::<Positive>(json!("3")).is_err());
        assert_eq!(parse::<Port>(json!(8001)).unwrap(), Port(8001));
        assert!(parse::<Port>(json!(70000))
            .unwrap_err()
            .contains("0 to 65535"));
        assert_eq!(parse::<Key>(json!(" a ")).unwrap(), Key("a".into()));
        assert!(parse::<Key>(json!("  ")).is_err());
        let e = parse::<ServerKey>(json!("secret-without-prefix")).unwrap_err();
        assert!(e.contains("ser.") && !e.contains("secret"), "{e}");
        assert_eq!(
            parse::<BaseUrl>(json!("https://a.test/api/v1/")).unwrap(),
            BaseUrl("https://a.test/api/v1".into())
        );
        assert!(parse::<BaseUrl>(json!("not a url"))
            .unwrap_err()
            .contains("not a URL"));
    }
}
