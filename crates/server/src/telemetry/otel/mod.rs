//! OpenTelemetry: spans and metrics exported over OTLP (gRPC, HTTP/protobuf or HTTP/JSON) with the official
//! crates, set up once at start from `flagpole.telemetry` and the `OTEL_*` variables
//! (`config/telemetry.rs`).
//!
//! Nothing is set up unless an endpoint is configured: [`tracer`] is then `None` and every
//! front door skips its span in one branch (no context read, no clock, no allocation), and the
//! OTLP meters ([`meters`]) are absent. With an endpoint, spans are queued and exported off the
//! request path (`queue`), and the providers are flushed once requests have drained.
//!
//! `spans` has what the front doors and the upstream clients share: reading `traceparent`,
//! `tracestate` and `baggage`, the server span of a request with the semantic-convention
//! attributes, the client span of an outgoing request and the `traceparent` it sends on.

mod attributes;
mod failures;
pub(crate) mod meters;
mod queue;
pub(crate) mod spans;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::shutdown::Shutdown;
use flagpole_config::{Config, Export, OtelConfig, Protocol, SamplerKind, Signal};

pub(crate) use queue::SPANS_DROPPED;

/// What was set up at start.
struct Otel {
    tracer: Option<SdkTracer>,
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
    record_identifier: bool,
    background_spans: bool,
}

static OTEL: OnceLock<Otel> = OnceLock::new();

/// The tracer, when spans are exported.
#[inline]
pub(crate) fn tracer() -> Option<&'static SdkTracer> {
    OTEL.get()?.tracer.as_ref()
}

/// Whether background work (polls, the fleet's Redis commands, analytics flushes) makes spans:
/// spans are exported and `flagpole.telemetry.background_spans` says so.
#[inline]
pub(crate) fn background_spans() -> bool {
    OTEL.get()
        .is_some_and(|o| o.background_spans && o.tracer.is_some())
}

/// Whether spans may carry the evaluation's identifier (`flagpole.telemetry.record_identifier`).
pub(crate) fn record_identifier() -> bool {
    OTEL.get().is_some_and(|o| o.record_identifier)
}

/// Sets up export (inside the Tokio runtime, which the exporters run on) and, when anything is
/// exported, a background task of `shutdown` that flushes it once requests have drained.
/// Later calls change nothing. A collector that cannot be set up (a malformed endpoint) is
/// logged and nothing is exported: telemetry never stops the proxy.
pub(crate) fn init(config: &Config, shutdown: &Shutdown) {
    let c = &config.otel;
    let otel = OTEL.get_or_init(|| {
        let resource = resource(c);
        let traces = c.export_of(Signal::Traces).and_then(|export| {
            match tracer_provider(c, &export, &resource) {
                Ok(provider) => {
                    tracing::info!(endpoint = %export.endpoint, protocol = export.protocol.name(), sampler = ?c.sampler, "OpenTelemetry: exporting traces");
                    Some(provider)
                }
                Err(e) => {
                    tracing::error!(error = %e, "OpenTelemetry: traces are not exported");
                    None
                }
            }
        });
        let metrics = c.export_of(Signal::Metrics).and_then(|export| {
            match meter_provider(c, &export, &resource) {
                Ok(provider) => {
                    tracing::info!(endpoint = %export.endpoint, protocol = export.protocol.name(), "OpenTelemetry: exporting metrics");
                    Some(provider)
                }
                Err(e) => {
                    tracing::error!(error = %e, "OpenTelemetry: metrics are not exported");
                    None
                }
            }
        });
        if let Some(provider) = &metrics {
            meters::install(provider);
        }
        Otel {
            tracer: traces
                .as_ref()
                .map(|p| opentelemetry::trace::TracerProvider::tracer(p, "flagpole")),
            traces,
            metrics,
            record_identifier: c.record_identifier,
            background_spans: c.background_spans,
        }
    });
    if otel.traces.is_none() && otel.metrics.is_none() {
        return;
    }
    metrics::describe_counter!(
        SPANS_DROPPED,
        metrics::Unit::Count,
        "Spans that never reached the OpenTelemetry collector (export queue full, or the collector down, slow or refusing)."
    );
    metrics::counter!(SPANS_DROPPED).increment(0);
    let drained = shutdown.drained.clone();
    shutdown.spawn(async move {
        drained.cancelled().await;
        let _ = crate::background::run(flush).await;
    });
}

/// Exports what is pending and stops the exporters (after the drain: no request is left to
/// make a span).
fn flush() {
    let Some(otel) = OTEL.get() else { return };
    if let Some(traces) = &otel.traces {
        let _ = traces.shutdown();
    }
    if let Some(metrics) = &otel.metrics {
        let _ = metrics.shutdown();
    }
}

/// The resource: the configured attributes, `service.name`, and `service.instance.id` (a random
/// UUID per process unless the attributes name one), so that the replicas of one service can
/// be told apart.
fn resource(c: &OtelConfig) -> Resource {
    let instance = (!c.resource_attributes.contains_key("service.instance.id"))
        .then(|| KeyValue::new("service.instance.id", instance_id()));
    Resource::builder_empty()
        .with_attributes(
            c.resource_attributes
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .with_attributes(instance)
        .with_service_name(c.service_name.clone())
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("telemetry.sdk.name", "opentelemetry"),
            KeyValue::new("telemetry.sdk.language", "rust"),
        ])
        .build()
}

/// A random (version 4) UUID, as the resource conventions suggest for `service.instance.id`.
fn instance_id() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn sampler(c: &OtelConfig) -> Sampler {
    let ratio = c.sampler_arg;
    match c.sampler {
        SamplerKind::AlwaysOn => Sampler::AlwaysOn,
        SamplerKind::AlwaysOff => Sampler::AlwaysOff,
        SamplerKind::TraceIdRatio => Sampler::TraceIdRatioBased(ratio),
        SamplerKind::ParentbasedAlwaysOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        SamplerKind::ParentbasedAlwaysOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        SamplerKind::ParentbasedTraceIdRatio => {
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio)))
        }
    }
}

type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// An OTLP exporter for `export` from a signal's exporter builder
/// (`SpanExporter::builder()`, `MetricExporter::builder()`: the same calls on different types).
/// The protocol is always given, so the exporter crate never picks another from the variables.
macro_rules! exporter {
    ($builder:expr, $export:expr) => {{
        let export: &Export<'_> = $export;
        match export.protocol {
            Protocol::Grpc => $builder
                .with_tonic()
                .with_protocol(opentelemetry_otlp::Protocol::Grpc)
                .with_endpoint(export.endpoint.as_str())
                .with_timeout(export.timeout)
                .with_metadata(metadata(export.headers)?)
                .build()?,
            Protocol::HttpProtobuf | Protocol::HttpJson => $builder
                .with_http()
                .with_protocol(if export.protocol == Protocol::HttpJson {
                    opentelemetry_otlp::Protocol::HttpJson
                } else {
                    opentelemetry_otlp::Protocol::HttpBinary
                })
                .with_endpoint(export.endpoint.as_str())
                .with_timeout(export.timeout)
                .with_headers(headers(export.headers))
                .with_http_client(http_client(export.timeout))
                .build()?,
        }
    }};
}

fn tracer_provider(
    c: &OtelConfig,
    export: &Export<'_>,
    resource: &Resource,
) -> Result<SdkTracerProvider, BuildError> {
    let mut exporter = exporter!(opentelemetry_otlp::SpanExporter::builder(), export);
    opentelemetry_sdk::trace::SpanExporter::set_resource(&mut exporter, resource);
    let queue = queue::Queue::start(
        exporter,
        c.max_queue_size,
        (
            export.timeout,
            failures::Failures::new(Signal::Traces, &export.endpoint),
        ),
        tokio::runtime::Handle::current(),
    )?;
    Ok(SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_sampler(sampler(c))
        .with_span_processor(queue)
        .build())
}

fn meter_provider(
    c: &OtelConfig,
    export: &Export<'_>,
    resource: &Resource,
) -> Result<SdkMeterProvider, BuildError> {
    let exporter = exporter!(opentelemetry_otlp::MetricExporter::builder(), export);
    let exporter = meters::InRuntime::new(
        exporter,
        tokio::runtime::Handle::current(),
        failures::Failures::new(Signal::Metrics, &export.endpoint),
    );
    let reader = opentelemetry_sdk::metrics::PeriodicReader::builder(exporter)
        .with_interval(c.metrics_interval)
        .build();
    Ok(SdkMeterProvider::builder()
        .with_resource(resource.clone())
        .with_reader(reader)
        .build())
}

fn headers(headers: &BTreeMap<String, String>) -> HashMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn metadata(
    headers: &BTreeMap<String, String>,
) -> Result<tonic::metadata::MetadataMap, BuildError> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            http::HeaderName::try_from(name.as_str())?,
            http::HeaderValue::try_from(value.as_str())?,
        );
    }
    Ok(tonic::metadata::MetadataMap::from_headers(map))
}

/// The HTTP exporter's client: the reqwest the proxy's other clients use, bounded by the export
/// timeout.
fn http_client(timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn instance_ids_are_version_4_uuids_and_differ() {
        let (a, b) = (super::instance_id(), super::instance_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4", "{a}");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }
}
