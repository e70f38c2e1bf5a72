//! The `flagpole.shadow` section: shadow verification, a sampled fraction of identity requests
//! also asked of the Flagsmith API and compared per feature. Off unless `sample_rate` > 0.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::values::{seconds, BaseUrl, Object, Positive, Seconds};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShadowConfig {
    /// The fraction of identity requests compared, 0 to 1 (0: off).
    pub sample_rate: f64,
    /// The Flagsmith API compared against; `None`: the top-level `api_url`.
    pub api_url: Option<String>,
    /// Comparisons running at once at most.
    pub max_concurrency: usize,
    /// Sampled requests waiting for a comparison at most; more are dropped.
    pub queue_size: usize,
    /// Comparisons started a second at most (bursts up to the same number); more are dropped.
    pub max_per_second: u32,
    /// Bounds each upstream request of a comparison.
    #[serde(rename = "timeout_seconds", serialize_with = "seconds")]
    pub timeout: Duration,
}

impl Default for ShadowConfig {
    fn default() -> Self {
        ShadowConfig {
            sample_rate: 0.0,
            api_url: None,
            max_concurrency: 4,
            queue_size: 256,
            max_per_second: 10,
            timeout: Duration::from_secs(5),
        }
    }
}

/// The section as written; absent and `null` members mean the default.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct ShadowFile {
    /// The fraction of identity requests compared, from 0 to 1 (0: off).
    sample_rate: Option<Fraction>,
    /// The Flagsmith API compared against; `null`: the top-level `api_url`.
    api_url: Option<BaseUrl>,
    /// Comparisons running at once at most.
    max_concurrency: Option<Positive>,
    /// Sampled requests waiting for a comparison at most; more are dropped.
    queue_size: Option<Positive>,
    /// Comparisons started a second at most (bursts up to the same number); more are dropped.
    max_per_second: Option<Positive>,
    /// Seconds each upstream request of a comparison may take.
    #[schemars(extend("exclusiveMinimum" = 0))]
    timeout_seconds: Option<Seconds>,
}

impl ShadowFile {
    pub(super) fn settings(self) -> ShadowConfig {
        let d = ShadowConfig::default();
        ShadowConfig {
            sample_rate: self.sample_rate.map_or(d.sample_rate, |f| f.0),
            api_url: self.api_url.map(|u| u.0),
            max_concurrency: self
                .max_concurrency
                .map_or(d.max_concurrency, Positive::usize),
            queue_size: self.queue_size.map_or(d.queue_size, Positive::usize),
            max_per_second: self.max_per_second.map_or(d.max_per_second, Positive::u32),
            timeout: self.timeout_seconds.map_or(d.timeout, |s| s.0),
        }
    }
}

impl ShadowFile {
    pub(super) fn from_settings(c: &ShadowConfig) -> ShadowFile {
        ShadowFile {
            sample_rate: Some(Fraction(c.sample_rate)),
            api_url: c.api_url.clone().map(BaseUrl),
            max_concurrency: Some(Positive(c.max_concurrency as u64)),
            queue_size: Some(Positive(c.queue_size as u64)),
            max_per_second: Some(Positive(c.max_per_second.into())),
            timeout_seconds: Some(Seconds(c.timeout)),
        }
    }
}

/// `Object<ShadowFile>` as `FlagpoleFile` holds it.
pub(super) type ShadowSection = Object<ShadowFile>;

/// A number from 0 to 1.
struct Fraction(f64);

impl Serialize for Fraction {
    // 0 and 1 as integers, as a file would say them.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            n if n == 0.0 || n == 1.0 => s.serialize_u64(n as u64),
            n => s.serialize_f64(n),
        }
    }
}

impl JsonSchema for Fraction {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Fraction".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "number", "minimum": 0, "maximum": 1})
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number from 0 to 1")
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Fraction, E> {
                match (0.0..=1.0).contains(&n) {
                    true => Ok(Fraction(n)),
                    false => Err(E::invalid_value(Unexpected::Float(n), &self)),
                }
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Fraction, E> {
                match n {
                    0 | 1 => Ok(Fraction(n as f64)),
                    _ => Err(E::invalid_value(Unexpected::Unsigned(n), &self)),
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Fraction, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::from_json;

    #[test]
    fn the_section_loads_and_the_rate_is_a_fraction() {
        let config = json!({"flagpole": {"shadow": {"sample_rate": 0.01, "api_url": "https://f.test/api/v1/"}}});
        let c = from_json(config.as_object().unwrap())
            .unwrap()
            .config
            .shadow;
        assert_eq!(c.sample_rate, 0.01);
        assert_eq!(c.api_url.as_deref(), Some("https://f.test/api/v1"));
        for rate in [json!(1.5), json!(-0.1), json!(2), json!("often")] {
            let bad = json!({"flagpole": {"shadow": {"sample_rate": rate}}});
            let e = from_json(bad.as_object().unwrap()).unwrap_err().0;
            assert!(e.contains("flagpole.shadow.sample_rate"), "{e}");
        }
    }

    #[test]
    fn a_password_in_its_api_url_is_redacted() {
        let config = json!({"flagpole": {"shadow": {"api_url": "https://u:secret@f.test/api/v1"}}});
        let c = from_json(config.as_object().unwrap()).unwrap().config;
        let shown = c.redacted().shadow.api_url.unwrap();
        assert_eq!(shown, "https://u:redacted@f.test/api/v1");
    }
}
