//! The `flagpole.telemetry` section: OpenTelemetry traces and metrics exported over OTLP, and
//! the standard `OTEL_*` variables every OpenTelemetry SDK reads, which say the same and win
//! over the file (as every variable does). Nothing is exported unless an endpoint is set, so a
//! proxy with neither the section nor the variables pays nothing for it.
//!
//! The variables are read here, beside the keys they stand for, rather than by the exporter
//! crates: one place decides the effective settings, `flagpole check` prints them, and a wrong
//! value (`OTEL_TRACES_SAMPLER=sometimes`) stops start-up naming the variable.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{seconds, Object, Positive, Seconds};
use super::ConfigError;

/// How spans and metrics travel to the collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Protocol {
    /// OTLP over gRPC (the collector's port 4317).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318; `/v1/traces`, `/v1/metrics`).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over HTTP with JSON bodies (the same port and paths).
    #[serde(rename = "http/json")]
    HttpJson,
}

impl Protocol {
    /// The name the variables and the file use.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::HttpJson => "http/json",
        }
    }

    fn parse(text: &str) -> Option<Protocol> {
        [Protocol::Grpc, Protocol::HttpProtobuf, Protocol::HttpJson]
            .into_iter()
            .find(|p| p.name() == text)
    }
}

/// Which traces are kept (the names of `OTEL_TRACES_SAMPLER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SamplerKind {
    AlwaysOn,
    AlwaysOff,
    #[serde(rename = "traceidratio")]
    TraceIdRatio,
    ParentbasedAlwaysOn,
    ParentbasedAlwaysOff,
    #[serde(rename = "parentbased_traceidratio")]
    ParentbasedTraceIdRatio,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtelConfig {
    /// `false` (or `OTEL_SDK_DISABLED=true`): nothing is exported whatever else is set.
    pub enabled: bool,
    /// The collector for both signals (`OTEL_EXPORTER_OTLP_ENDPOINT`); over HTTP the signal's
    /// path (`/v1/traces`) is appended.
    pub endpoint: Option<String>,
    /// Where spans go, as is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub traces_endpoint: Option<String>,
    /// Where metrics go, as is (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`).
    pub metrics_endpoint: Option<String>,
    pub protocol: Protocol,
    /// The spans' own protocol, over `protocol` (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`).
    pub traces_protocol: Option<Protocol>,
    /// The metrics' own protocol (`OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`).
    pub metrics_protocol: Option<Protocol>,
    /// Sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`: `name=value,…`); values may be
    /// credentials, so `flagpole check` prints them redacted.
    pub headers: BTreeMap<String, String>,
    /// Sent with span exports instead of `headers` (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`).
    pub traces_headers: Option<BTreeMap<String, String>>,
    /// Sent with metric exports instead of `headers` (`OTEL_EXPORTER_OTLP_METRICS_HEADERS`).
    pub metrics_headers: Option<BTreeMap<String, String>>,
    pub service_name: String,
    /// Added to the resource (`OTEL_RESOURCE_ATTRIBUTES`: `key=value,…`).
    pub resource_attributes: BTreeMap<String, String>,
    pub sampler: SamplerKind,
    /// The ratio of the `traceidratio` samplers, 0 to 1.
    pub sampler_arg: f64,
    /// How long one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds there).
    #[serde(rename = "export_timeout_seconds", serialize_with = "seconds")]
    pub export_timeout: Duration,
    /// A span export's own limit (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`).
    #[serde(
        rename = "traces_export_timeout_seconds",
        serialize_with = "optional_seconds"
    )]
    pub traces_export_timeout: Option<Duration>,
    /// A metric export's own limit (`OTEL_EXPORTER_OTLP_METRICS_TIMEOUT`).
    #[serde(
        rename = "metrics_export_timeout_seconds",
        serialize_with = "optional_seconds"
    )]
    pub metrics_export_timeout: Option<Duration>,
    /// Finished spans waiting for export at most (`OTEL_BSP_MAX_QUEUE_SIZE`); more are dropped
    /// and counted.
    pub max_queue_size: usize,
    /// Between metric exports (`OTEL_METRIC_EXPORT_INTERVAL`, milliseconds there).
    #[serde(rename = "metrics_interval_seconds", serialize_with = "seconds")]
    pub metrics_interval: Duration,
    /// Put the evaluation's identifier (`feature_flag.context.id`) on spans; off by default, as
    /// identifiers are often personal data.
    pub record_identifier: bool,
    /// Make spans of background work too (upstream polls, the fleet's Redis commands, analytics
    /// flushes); off by default, as an idle replica would otherwise start a root trace every
    /// few seconds. Spans a request causes are made either way.
    pub background_spans: bool,
}

impl Default for OtelConfig {
    fn default() -> Self {
        OtelConfig {
            enabled: true,
            endpoint: None,
            traces_endpoint: None,
            metrics_endpoint: None,
            protocol: Protocol::HttpProtobuf,
            traces_protocol: None,
            metrics_protocol: None,
            headers: BTreeMap::new(),
            traces_headers: None,
            metrics_headers: None,
            service_name: "flagpole".into(),
            resource_attributes: BTreeMap::new(),
            sampler: SamplerKind::ParentbasedAlwaysOn,
            sampler_arg: 1.0,
            export_timeout: Duration::from_secs(10),
            traces_export_timeout: None,
            metrics_export_timeout: None,
            max_queue_size: 2048,
            metrics_interval: Duration::from_secs(60),
            record_identifier: false,
            background_spans: false,
        }
    }
}

/// A signal's destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
}

/// Where and how one signal is exported: its own settings where it has them, else the shared
/// ones (as every OpenTelemetry SDK resolves `OTEL_EXPORTER_OTLP_TRACES_*` over
/// `OTEL_EXPORTER_OTLP_*`).
#[derive(Clone, Debug, PartialEq)]
pub struct Export<'a> {
    pub endpoint: String,
    pub protocol: Protocol,
    pub headers: &'a BTreeMap<String, String>,
    pub timeout: Duration,
}

impl OtelConfig {
    /// How `signal` is exported, if at all: its own endpoint as given, else the shared one (with
    /// the signal's path over HTTP).
    pub fn export_of(&self, signal: Signal) -> Option<Export<'_>> {
        if !self.enabled {
            return None;
        }
        let (own, protocol, headers, timeout, path) = match signal {
            Signal::Traces => (
                &self.traces_endpoint,
                self.traces_protocol,
                &self.traces_headers,
                self.traces_export_timeout,
                "v1/traces",
            ),
            Signal::Metrics => (
                &self.metrics_endpoint,
                self.metrics_protocol,
                &self.metrics_headers,
                self.metrics_export_timeout,
                "v1/metrics",
            ),
        };
        let protocol = protocol.unwrap_or(self.protocol);
        let endpoint = match own {
            // Empty: the signal turned off (`OTEL_TRACES_EXPORTER=none`).
            Some(own) if own.is_empty() => return None,
            Some(own) => own.clone(),
            None => {
                let base = self.endpoint.as_ref()?;
                match protocol {
                    Protocol::Grpc => base.clone(),
                    Protocol::HttpProtobuf | Protocol::HttpJson => {
                        format!("{}/{path}", base.trim_end_matches('/'))
                    }
                }
            }
        };
        Some(Export {
            endpoint,
            protocol,
            headers: headers.as_ref().unwrap_or(&self.headers),
            timeout: timeout.unwrap_or(self.export_timeout),
        })
    }

    /// Where `signal` is exported, if anywhere.
    pub fn endpoint_of(&self, signal: Signal) -> Option<String> {
        self.export_of(signal).map(|e| e.endpoint)
    }

    /// The same settings with header values hidden (they often carry an API key).
    pub(super) fn redact(&mut self) {
        let own = [&mut self.traces_headers, &mut self.metrics_headers];
        for headers in std::iter::once(&mut self.headers).chain(own.into_iter().flatten()) {
            for value in headers.values_mut() {
                *value = crate::fingerprint(value);
            }
        }
    }
}

fn optional_seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => seconds(d, s),
        None => s.serialize_none(),
    }
}

/// The section as written; absent and `null` members mean the default.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(default)]
pub(super) struct TelemetryFile {
    /// Export at all; false does what `OTEL_SDK_DISABLED=true` does.
    enabled: Option<bool>,
    /// The OTLP collector for traces and metrics (`OTEL_EXPORTER_OTLP_ENDPOINT`), e.g. `http://otel-collector:4318`; `null`: nothing exported unless a signal's own endpoint is set.
    endpoint: Option<String>,
    /// Where spans go, used as is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    traces_endpoint: Option<String>,
    /// Where metrics go, used as is (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`).
    metrics_endpoint: Option<String>,
    /// `grpc`, `http/protobuf` or `http/json` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    protocol: Option<Protocol>,
    /// The protocol of span exports, over `protocol` (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`).
    traces_protocol: Option<Protocol>,
    /// The protocol of metric exports, over `protocol` (`OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`).
    metrics_protocol: Option<Protocol>,
    /// Headers sent with every export, e.g. a vendor's API key (`OTEL_EXPORTER_OTLP_HEADERS`).
    headers: Option<BTreeMap<String, String>>,
    /// Headers sent with span exports instead of `headers` (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`).
    traces_headers: Option<BTreeMap<String, String>>,
    /// Headers sent with metric exports instead of `headers` (`OTEL_EXPORTER_OTLP_METRICS_HEADERS`).
    metrics_headers: Option<BTreeMap<String, String>>,
    /// The `service.name` resource attribute (`OTEL_SERVICE_NAME`).
    service_name: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    resource_attributes: Option<BTreeMap<String, String>>,
    /// Which traces are kept (`OTEL_TRACES_SAMPLER`): `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off`, `parentbased_traceidratio`.
    sampler: Option<SamplerKind>,
    /// The ratio of the `traceidratio` samplers, 0 to 1 (`OTEL_TRACES_SAMPLER_ARG`).
    #[schemars(range(min = 0, max = 1))]
    sampler_arg: Option<f64>,
    /// Seconds one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds).
    #[schemars(extend("exclusiveMinimum" = 0))]
    export_timeout_seconds: Option<Seconds>,
    /// Seconds one span export may take, over `export_timeout_seconds` (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, in milliseconds).
    #[schemars(extend("exclusiveMinimum" = 0))]
    traces_export_timeout_seconds: Option<Seconds>,
    /// Seconds one metric export may take, over `export_timeout_seconds` (`OTEL_EXPORTER_OTLP_METRICS_TIMEOUT`, in milliseconds).
    #[schemars(extend("exclusiveMinimum" = 0))]
    metrics_export_timeout_seconds: Option<Seconds>,
    /// Finished spans waiting for export at most (`OTEL_BSP_MAX_QUEUE_SIZE`); more are dropped and counted in `/metrics`.
    max_queue_size: Option<Positive>,
    /// Seconds between metric exports (`OTEL_METRIC_EXPORT_INTERVAL`, in milliseconds).
    #[schemars(range(min = 0.1))]
    metrics_interval_seconds: Option<Seconds>,
    /// Put the evaluation's identifier (`feature_flag.context.id`) on spans; identifiers are often personal data.
    record_identifier: Option<bool>,
    /// Make spans of background work too (upstream polls, the fleet's Redis commands, analytics flushes), each a root trace; off by default. Spans caused by a request are made either way.
    background_spans: Option<bool>,
}

impl TelemetryFile {
    pub(super) fn settings(self) -> OtelConfig {
        let d = OtelConfig::default();
        OtelConfig {
            enabled: self.enabled.unwrap_or(d.enabled),
            endpoint: self.endpoint,
            traces_endpoint: self.traces_endpoint,
            metrics_endpoint: self.metrics_endpoint,
            protocol: self.protocol.unwrap_or(d.protocol),
            traces_protocol: self.traces_protocol,
            metrics_protocol: self.metrics_protocol,
            headers: self.headers.unwrap_or_default(),
            traces_headers: self.traces_headers,
            metrics_headers: self.metrics_headers,
            service_name: self.service_name.unwrap_or(d.service_name),
            resource_attributes: self.resource_attributes.unwrap_or_default(),
            sampler: self.sampler.unwrap_or(d.sampler),
            sampler_arg: self.sampler_arg.unwrap_or(d.sampler_arg),
            export_timeout: self
                .export_timeout_seconds
                .map_or(d.export_timeout, |s| s.0),
            traces_export_timeout: self.traces_export_timeout_seconds.map(|s| s.0),
            metrics_export_timeout: self.metrics_export_timeout_seconds.map(|s| s.0),
            max_queue_size: self
                .max_queue_size
                .map_or(d.max_queue_size, Positive::usize),
            metrics_interval: self
                .metrics_interval_seconds
                .map_or(d.metrics_interval, |s| s.0),
            record_identifier: self.record_identifier.unwrap_or(d.record_identifier),
            background_spans: self.background_spans.unwrap_or(d.background_spans),
        }
    }

    pub(super) fn from_settings(c: &OtelConfig) -> TelemetryFile {
        TelemetryFile {
            enabled: Some(c.enabled),
            endpoint: c.endpoint.clone(),
            traces_endpoint: c.traces_endpoint.clone(),
            metrics_endpoint: c.metrics_endpoint.clone(),
            protocol: Some(c.protocol),
            traces_protocol: c.traces_protocol,
            metrics_protocol: c.metrics_protocol,
            headers: Some(c.headers.clone()),
            traces_headers: c.traces_headers.clone(),
            metrics_headers: c.metrics_headers.clone(),
            service_name: Some(c.service_name.clone()),
            resource_attributes: Some(c.resource_attributes.clone()),
            sampler: Some(c.sampler),
            sampler_arg: Some(c.sampler_arg),
            export_timeout_seconds: Some(Seconds(c.export_timeout)),
            traces_export_timeout_seconds: c.traces_export_timeout.map(Seconds),
            metrics_export_timeout_seconds: c.metrics_export_timeout.map(Seconds),
            max_queue_size: Some(Positive(c.max_queue_size as u64)),
            metrics_interval_seconds: Some(Seconds(c.metrics_interval)),
            record_identifier: Some(c.record_identifier),
            background_spans: Some(c.background_spans),
        }
    }
}

/// `Object<TelemetryFile>` as `FlagpoleFile` holds it.
pub(super) type TelemetrySection = Object<TelemetryFile>;

/// Whether a variable is one of OpenTelemetry's (never a misspelt Flagpole one).
pub(super) fn is_otel_variable(upper_name: &str) -> bool {
    upper_name.starts_with("OTEL_")
}

/// Applies the standard `OTEL_*` variables over the file's settings. An empty variable counts
/// as unset, as the specification says.
pub(super) fn apply_env(c: &mut OtelConfig, env: &[(String, String)]) -> Result<(), ConfigError> {
    let get = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    };
    let wrong =
        |name: &str, what: &str| ConfigError(format!("environment variable {name}: {what}"));
    if let Some(v) = get("OTEL_SDK_DISABLED") {
        c.enabled = !v.eq_ignore_ascii_case("true");
    }
    if let Some(v) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
        c.endpoint = Some(v.to_owned());
    }
    if let Some(v) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        c.traces_endpoint = Some(v.to_owned());
    }
    if let Some(v) = get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
        c.metrics_endpoint = Some(v.to_owned());
    }
    // `none` turns one signal off (OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER); `otlp` is the
    // only exporter there is here.
    for (name, signal) in [
        ("OTEL_TRACES_EXPORTER", Signal::Traces),
        ("OTEL_METRICS_EXPORTER", Signal::Metrics),
    ] {
        match get(name) {
            None | Some("otlp") => {}
            Some("none") => {
                let own = match signal {
                    Signal::Traces => &mut c.traces_endpoint,
                    Signal::Metrics => &mut c.metrics_endpoint,
                };
                // An endpoint that cannot be dialled marks the signal off (see `endpoint_of`).
                *own = Some(String::new());
            }
            Some(_) => return Err(wrong(name, "expected otlp or none")),
        }
    }
    // The shared setting, then each signal's own over it.
    let protocol = |name: &str| -> Result<Option<Protocol>, ConfigError> {
        get(name)
            .map(|v| {
                Protocol::parse(v)
                    .ok_or_else(|| wrong(name, "expected grpc, http/protobuf or http/json"))
            })
            .transpose()
    };
    if let Some(p) = protocol("OTEL_EXPORTER_OTLP_PROTOCOL")? {
        c.protocol = p;
    }
    if let Some(p) = protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")? {
        c.traces_protocol = Some(p);
    }
    if let Some(p) = protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")? {
        c.metrics_protocol = Some(p);
    }
    let headers = |name: &str| -> Result<Option<Vec<(String, String)>>, ConfigError> {
        get(name)
            .map(|v| pairs(v).map_err(|e| wrong(name, &e)))
            .transpose()
    };
    if let Some(h) = headers("OTEL_EXPORTER_OTLP_HEADERS")? {
        c.headers.extend(h);
    }
    if let Some(h) = headers("OTEL_EXPORTER_OTLP_TRACES_HEADERS")? {
        c.traces_headers.get_or_insert_with(BTreeMap::new).extend(h);
    }
    if let Some(h) = headers("OTEL_EXPORTER_OTLP_METRICS_HEADERS")? {
        c.metrics_headers
            .get_or_insert_with(BTreeMap::new)
            .extend(h);
    }
    if let Some(v) = get("OTEL_RESOURCE_ATTRIBUTES") {
        c.resource_attributes
            .extend(pairs(v).map_err(|e| wrong("OTEL_RESOURCE_ATTRIBUTES", &e))?);
    }
    if let Some(name) = c.resource_attributes.get("service.name") {
        c.service_name = name.clone();
    }
    if let Some(v) = get("OTEL_SERVICE_NAME") {
        c.service_name = v.to_owned();
    }
    if let Some(v) = get("OTEL_TRACES_SAMPLER") {
        c.sampler =
            serde_json::from_value(serde_json::Value::String(v.to_owned())).map_err(|_| {
                wrong(
                    "OTEL_TRACES_SAMPLER",
                    "expected always_on, always_off, traceidratio, parentbased_always_on, \
                 parentbased_always_off or parentbased_traceidratio",
                )
            })?;
    }
    if let Some(v) = get("OTEL_TRACES_SAMPLER_ARG") {
        c.sampler_arg = v
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| wrong("OTEL_TRACES_SAMPLER_ARG", "expected a ratio from 0 to 1"))?;
    }
    let millis = |name: &str| -> Result<Option<Duration>, ConfigError> {
        get(name)
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|ms| *ms > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| wrong(name, "expected a positive number of milliseconds"))
            })
            .transpose()
    };
    if let Some(d) = millis("OTEL_EXPORTER_OTLP_TIMEOUT")? {
        c.export_timeout = d;
    }
    if let Some(d) = millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")? {
        c.traces_export_timeout = Some(d);
    }
    if let Some(d) = millis("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT")? {
        c.metrics_export_timeout = Some(d);
    }
    if let Some(d) = millis("OTEL_METRIC_EXPORT_INTERVAL")? {
        c.metrics_interval = d;
    }
    if let Some(v) = get("OTEL_BSP_MAX_QUEUE_SIZE") {
        c.max_queue_size = v
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| wrong("OTEL_BSP_MAX_QUEUE_SIZE", "expected a positive count"))?;
    }
    Ok(())
}

/// `key=value,key2=value2` with percent-encoded values (the W3C baggage shape the OTel
/// variables use).
fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| "expected key=value pairs separated by commas".to_owned())?;
            let value = percent_encoding::percent_decode_str(value.trim())
                .decode_utf8()
                .map_err(|_| "a value is not UTF-8 once percent-decoded".to_owned())?;
            Ok((key.trim().to_owned(), value.into_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
