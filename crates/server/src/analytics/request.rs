//! The body of an SDK analytics request, validated: a JSON object of feature name →
//! non-negative integer, at most so many names. What an SDK sends (Python, Node, Java, Go…
//! all post their in-memory map as it is); anything else is refused with the reason. Names are
//! borrowed from the body (only a name spelt with JSON escapes is copied), and one map both
//! keeps the request order and finds a repeated name.

use std::borrow::Cow;
use std::fmt;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// Longest feature name accepted (Flagsmith's own limit on names is lower).
const MAX_NAME_CHARS: usize = 2000;

/// Counts in request order, one entry per name (a repeated name is added up), borrowing the
/// names from the body.
#[derive(Debug, Default)]
pub(crate) struct Evaluations<'a>(IndexMap<Cow<'a, str>, u64, foldhash::fast::RandomState>);

impl Evaluations<'_> {
    /// Name and count, in request order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(name, &n)| (name.as_ref(), n))
    }
}

/// Parses and validates a body; the error says what was wrong, for a 422.
pub(crate) fn parse(body: &[u8], max_features: usize) -> Result<Evaluations<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = de
        .deserialize_any(Counts { max_features })
        .map_err(|e| match e.classify() {
            serde_json::error::Category::Data => e.to_string(),
            _ => format!("malformed JSON body: {e}"),
        })?;
    de.end().map_err(|e| format!("malformed JSON body: {e}"))?;
    Ok(parsed)
}

struct Counts {
    max_features: usize,
}

impl<'de> Visitor<'de> for Counts {
    type Value = Evaluations<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object of feature name to evaluation count")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Evaluations<'de>, A::Error> {
        let mut out = Evaluations::default();
        while let Some(Name(name)) = map.next_key()? {
            let count = map
                .next_value::<Count>()
                .map_err(|e| de::Error::custom(format_args!("{}: {e}", shown(&name))))?;
            if name.is_empty() {
                return Err(de::Error::custom("a feature name must not be empty"));
            }
            if name.chars().count() > MAX_NAME_CHARS {
                return Err(de::Error::custom(format_args!(
                    "a feature name is longer than {MAX_NAME_CHARS} characters"
                )));
            }
            if let Some(total) = out.0.get_mut(name.as_ref()) {
                *total = total.saturating_add(count.0);
            } else {
                if out.0.len() == self.max_features {
                    return Err(de::Error::custom(format_args!(
                        "more than {} feature names in one request \
                         (flagpole.analytics.max_features_per_request)",
                        self.max_features
                    )));
                }
                out.0.insert(name, count.0);
            }
        }
        Ok(out)
    }
}

/// A feature name: borrowed from the body, owned only when JSON escapes made it differ from
/// its spelling there.
struct Name<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A name as an error message shows it (bounded).
fn shown(name: &str) -> String {
    let short: String = name.chars().take(64).collect();
    format!("{short:?}")
}

/// A non-negative integer (a float with no fraction, as some SDKs' JSON writers spell counts,
/// is accepted too).
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
                Ok(Count(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Count, E> {
                u64::try_from(n)
                    .map(Count)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Count, E> {
                if n >= 0.0 && n.fract() == 0.0 && n < u64::MAX as f64 {
                    Ok(Count(n as u64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(n), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(body: &[u8]) -> Vec<(String, u64)> {
        let parsed = parse(body, 10).unwrap();
        parsed
            .iter()
            .map(|(name, n)| (name.to_owned(), n))
            .collect()
    }

    #[test]
    fn sdk_bodies_parse_and_repeats_add_up() {
        let got = counts(br#"{"a": 3, "b": 0, "a": 2}"#);
        assert_eq!(got, [("a".into(), 5), ("b".into(), 0)]);
        assert_eq!(counts(b"{}"), []);
    }

    #[test]
    fn names_are_borrowed_unless_escaped() {
        let body = br#"{"plain": 1, "tab\there": 2, "caf\u00e9": 3, "plain": 1}"#;
        let parsed = parse(body, 10).unwrap();
        let names: Vec<(&str, bool)> = parsed
            .0
            .keys()
            .map(|name| (name.as_ref(), matches!(name, Cow::Borrowed(_))))
            .collect();
        assert_eq!(
            names,
            [("plain", true), ("tab\there", false), ("café", false)]
        );
        assert_eq!(counts(body)[0], ("plain".into(), 2));
    }

    #[test]
    fn bad_bodies_say_what_was_wrong() {
        for (body, needle) in [
            (&br#"[1]"#[..], "JSON object"),
            (br#"{"a": -1}"#, "\"a\""),
            (br#"{"a": "1"}"#, "non-negative integer"),
            (br#"{"a": 1.5}"#, "non-negative integer"),
            (br#"{"": 1}"#, "empty"),
            (br#"{"a": 1"#, "malformed JSON"),
            (br#"{"a": 1} x"#, "malformed JSON"),
            (br#"{"a": 1, "b": 2, "c": 3}"#, "more than 2"),
        ] {
            let e = parse(body, 2).unwrap_err();
            assert!(e.contains(needle), "{body:?}: {e}");
        }
    }
}
