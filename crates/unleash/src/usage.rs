//! What SDKs report (registrations and usage metrics), gathered for the Unleash server as
//! Unleash Edge gathers it: each metrics body's toggle counts summed per toggle, application,
//! environment and hour (the granularity the server keeps), each registration kept once per
//! application instance and environment, the proxy added to its `connectVia`. [`Usage::drain`]
//! hands everything over as one batch, the body of the server's
//! `POST /api/client/metrics/bulk`; a batch the server did not take goes back in
//! ([`Usage::restore`]) and merges with what arrived meanwhile, so nothing is counted twice or
//! lost across a failure. Bounded: past [`MAX_KEYS`] entries new ones are dropped and counted.
//!
//! Pure data: no I/O, no clock (the hour comes from the SDK's own bucket).

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value};

/// At most this many metric entries (toggle × app × environment × hour) and as many
/// registrations are held; past it new ones are dropped (an SDK inventing toggle names cannot
/// grow memory without end).
pub const MAX_KEYS: usize = 50_000;

/// Why a report is refused: the JSON path and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct MetricKey {
    feature: String,
    app: String,
    environment: String,
    /// The hour's start, RFC 3339 in UTC.
    hour: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Counts {
    yes: u64,
    no: u64,
    variants: BTreeMap<String, u64>,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.yes = self.yes.saturating_add(other.yes);
        self.no = self.no.saturating_add(other.no);
        for (name, n) in &other.variants {
            let count = self.variants.entry(name.clone()).or_default();
            *count = count.saturating_add(*n);
        }
    }
}

/// A registration's identity: (appName, instanceId, environment).
type AppKey = (String, String, String);

/// Registrations and metrics waiting to be sent.
#[derive(Debug, Default)]
pub struct Usage {
    metrics: HashMap<MetricKey, Counts>,
    /// By (appName, instanceId, environment): the registration as the server will read it.
    applications: BTreeMap<AppKey, Map<String, Value>>,
    dropped: u64,
}

/// One batch, taken out of [`Usage`] to be sent.
#[derive(Debug, Default)]
pub struct Batch {
    metrics: Vec<(MetricKey, Counts)>,
    applications: Vec<(AppKey, Map<String, Value>)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetricsBody {
    app_name: String,
    #[serde(default)]
    bucket: Option<Bucket>,
}

#[derive(Deserialize)]
struct Bucket {
    start: String,
    #[serde(default)]
    toggles: HashMap<String, ToggleCounts>,
}

#[derive(Deserialize)]
struct ToggleCounts {
    #[serde(default)]
    yes: u64,
    #[serde(default)]
    no: u64,
    #[serde(default)]
    variants: HashMap<String, u64>,
}

impl Usage {
    /// Takes an SDK's metrics body (`POST /api/client/metrics`), counted for `environment` (the
    /// token's: the server files metrics under the environment they were evaluated in).
    pub fn record_metrics(&mut self, body: &[u8], environment: &str) -> Result<(), UsageError> {
        let body: MetricsBody =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(body))
                .map_err(|e| {
                    let path = e.path().to_string();
                    match e.inner().classify() {
                        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                            UsageError(format!("$: not JSON: {}", e.inner()))
                        }
                        _ if path == "." => UsageError(format!("$: {}", e.inner())),
                        _ => UsageError(format!("$.{path}: {}", e.inner())),
                    }
                })?;
        let Some(bucket) = body.bucket else {
            return Ok(());
        };
        let hour = hour_of(&bucket.start)
            .ok_or_else(|| UsageError("$.bucket.start: not an RFC 3339 date-time".into()))?;
        for (feature, toggle) in bucket.toggles {
            let counts = Counts {
                yes: toggle.yes,
                no: toggle.no,
                variants: toggle.variants.into_iter().collect(),
            };
            self.add_metric(
                MetricKey {
                    feature,
                    app: body.app_name.clone(),
                    environment: environment.to_owned(),
                    hour: hour.clone(),
                },
                &counts,
            );
        }
        Ok(())
    }

    /// Takes an SDK's registration (`POST /api/client/register`): kept for `environment`, with
    /// `via` (this proxy's app name and instance id) added to its `connectVia`.
    pub fn record_registration(
        &mut self,
        body: &[u8],
        environment: &str,
        via: (&str, &str),
    ) -> Result<(), UsageError> {
        let mut object = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(UsageError("$: must be a JSON object".into())),
            Err(e) => return Err(UsageError(format!("$: not JSON: {e}"))),
        };
        let app = match object.get("appName") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => return Err(UsageError("$.appName: must be a non-empty string".into())),
        };
        let instance = match object.get("instanceId") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => "unknown".to_owned(),
        };
        object.insert("instanceId".into(), Value::String(instance.clone()));
        object.insert("environment".into(), Value::String(environment.to_owned()));
        let mut via_list = match object.remove("connectVia") {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        };
        via_list.push(serde_json::json!({"appName": via.0, "instanceId": via.1}));
        object.insert("connectVia".into(), Value::Array(via_list));
        let key = (app, instance, environment.to_owned());
        if self.applications.len() >= MAX_KEYS && !self.applications.contains_key(&key) {
            self.dropped += 1;
            return Ok(());
        }
        self.applications.insert(key, object);
        Ok(())
    }

    fn add_metric(&mut self, key: MetricKey, counts: &Counts) {
        if let Some(held) = self.metrics.get_mut(&key) {
            held.add(counts);
        } else if self.metrics.len() < MAX_KEYS {
            self.metrics.insert(key, counts.clone());
        } else {
            self.dropped += 1;
        }
    }

    /// Everything held, as one batch (`None` when nothing is).
    pub fn drain(&mut self) -> Option<Batch> {
        if self.metrics.is_empty() && self.applications.is_empty() {
            return None;
        }
        let mut metrics: Vec<_> = std::mem::take(&mut self.metrics).into_iter().collect();
        metrics.sort_by(|a, b| a.0.cmp(&b.0));
        Some(Batch {
            metrics,
            applications: std::mem::take(&mut self.applications).into_iter().collect(),
        })
    }

    /// Puts back a batch the server did not take; counts merge with what arrived since, and
    /// a registration received since wins over the older one.
    pub fn restore(&mut self, batch: Batch) {
        for (key, counts) in batch.metrics {
            self.add_metric(key, &counts);
        }
        for (key, registration) in batch.applications {
            if !self.applications.contains_key(&key) && self.applications.len() < MAX_KEYS {
                self.applications.insert(key, registration);
            }
        }
    }

    /// Entries dropped since start because the bound was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl Batch {
    /// The server's bulk body: `{"applications": [...], "metrics": [...]}`.
    pub fn to_json(&self) -> Vec<u8> {
        let metrics: Vec<Value> = self
            .metrics
            .iter()
            .map(|(key, counts)| {
                serde_json::json!({
                    "featureName": key.feature,
                    "appName": key.app,
                    "environment": key.environment,
                    "timestamp": key.hour,
                    "yes": counts.yes,
                    "no": counts.no,
                    "variants": counts.variants,
                })
            })
            .collect();
        let applications: Vec<&Map<String, Value>> =
            self.applications.iter().map(|(_, a)| a).collect();
        serde_json::to_vec(&serde_json::json!({
            "applications": applications,
            "metrics": metrics,
        }))
        .unwrap_or_default()
    }

    /// Toggle evaluations (yes + no) the batch carries.
    pub fn evaluations(&self) -> u64 {
        self.metrics
            .iter()
            .map(|(_, c)| c.yes.saturating_add(c.no))
            .sum()
    }

    /// Registrations the batch carries.
    pub fn registrations(&self) -> usize {
        self.applications.len()
    }
}

/// The start of the hour `date` falls in, RFC 3339 in UTC.
fn hour_of(date: &str) -> Option<String> {
    use chrono::{DurationRound, TimeDelta, Utc};
    let at = chrono::DateTime::parse_from_rfc3339(date).ok()?;
    let hour = at
        .with_timezone(&Utc)
        .duration_trunc(TimeDelta::hours(1))
        .ok()?;
    Some(hour.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(app: &str, start: &str, yes: u64) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "appName": app, "instanceId": "i",
            "bucket": {"start": start, "stop": start,
                       "toggles": {"t": {"yes": yes, "no": 1, "variants": {"blue": yes}}}}
        }))
        .unwrap()
    }

    fn body(batch: &Batch) -> Value {
        serde_json::from_slice(&batch.to_json()).unwrap()
    }

    #[test]
    fn sums_per_toggle_app_environment_and_hour() {
        let mut usage = Usage::default();
        usage
            .record_metrics(&metrics("a", "2026-11-28T10:05:00Z", 2), "dev")
            .unwrap();
        usage
            .record_metrics(&metrics("a", "2026-11-28T10:55:00.123Z", 3), "dev")
            .unwrap();
        usage
            .record_metrics(&metrics("a", "2026-11-28T11:01:00Z", 1), "dev")
            .unwrap();
        usage
            .record_metrics(&metrics("a", "2026-11-28T10:05:00Z", 1), "prod")
            .unwrap();
        let batch = usage.drain().unwrap();
        assert_eq!(batch.evaluations(), 2 + 3 + 1 + 1 + 4);
        let body = body(&batch);
        let metrics = body["metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 3);
        assert_eq!(metrics[0]["timestamp"], "2026-11-28T10:00:00.000Z");
        assert_eq!(metrics[0]["environment"], "dev");
        assert_eq!(
            (&metrics[0]["yes"], &metrics[0]["no"]),
            (&serde_json::json!(5), &serde_json::json!(2))
        );
        assert_eq!(metrics[0]["variants"]["blue"], 5);
        assert!(usage.drain().is_none());
    }

    #[test]
    fn a_restored_batch_merges_with_what_came_since() {
        let mut usage = Usage::default();
        usage
            .record_metrics(&metrics("a", "2026-11-28T10:05:00Z", 2), "dev")
            .unwrap();
        let batch = usage.drain().unwrap();
        usage
            .record_metrics(&metrics("a", "2026-11-28T10:06:00Z", 3), "dev")
            .unwrap();
        usage.restore(batch);
        let body = body(&usage.drain().unwrap());
        assert_eq!(body["metrics"][0]["yes"], 5);
        assert_eq!(body["metrics"][0]["no"], 2);
    }

    #[test]
    fn registrations_are_kept_once_with_the_proxy_in_connect_via() {
        let mut usage = Usage::default();
        let register = br#"{"appName":"a","instanceId":"i","strategies":["default"],"interval":1000,"started":"2026-11-28T10:00:00Z"}"#;
        usage
            .record_registration(register, "dev", ("flagpole", "p1"))
            .unwrap();
        usage
            .record_registration(register, "dev", ("flagpole", "p1"))
            .unwrap();
        let batch = usage.drain().unwrap();
        assert_eq!(batch.registrations(), 1);
        let app = &body(&batch)["applications"][0];
        assert_eq!(app["environment"], "dev");
        assert_eq!(
            app["connectVia"],
            serde_json::json!([{"appName": "flagpole", "instanceId": "p1"}])
        );
    }

    #[test]
    fn bad_reports_name_the_path() {
        let mut usage = Usage::default();
        let e = usage
            .record_metrics(
                br#"{"appName":"a","bucket":{"start":"yesterday","toggles":{}}}"#,
                "d",
            )
            .unwrap_err();
        assert!(e.0.starts_with("$.bucket.start"), "{e}");
        let e = usage
            .record_metrics(br#"{"appName":"a","bucket":{"start":"2026-11-28T10:00:00Z","toggles":{"t":{"yes":-1}}}}"#, "d")
            .unwrap_err();
        assert!(e.0.contains("toggles"), "{e}");
        assert!(usage.record_registration(b"[]", "d", ("f", "i")).is_err());
        assert!(usage.record_metrics(b"{}", "d").is_err());
        let e = usage.record_metrics(b"{", "d").unwrap_err();
        assert!(e.0.starts_with("$: not JSON"), "{e}");
        assert!(usage.record_metrics(br#"{"appName":"a"}"#, "d").is_ok());
    }
}
