//! Tests of the telemetry settings: `flagpole.telemetry` keys and the standard `OTEL_*` variables.

use serde_json::json;

use super::super::env::variables as env;
use super::*;
use crate::from_json;

#[test]
fn nothing_is_exported_unless_an_endpoint_is_set() {
    let c = OtelConfig::default();
    assert_eq!(c.endpoint_of(Signal::Traces), None);
    assert_eq!(c.endpoint_of(Signal::Metrics), None);
}

#[test]
fn the_section_loads_and_variables_win() {
    let config = json!({"flagpole": {"telemetry": {
        "endpoint": "http://collector:4318/", "sampler": "traceidratio", "sampler_arg": 0.5,
        "headers": {"x-team": "flags"}}}});
    let mut c = from_json(config.as_object().unwrap()).unwrap().config.otel;
    assert_eq!(
        c.endpoint_of(Signal::Traces).as_deref(),
        Some("http://collector:4318/v1/traces")
    );
    assert_eq!(c.sampler, SamplerKind::TraceIdRatio);
    apply_env(
        &mut c,
        &env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4317"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:4317"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=s3cret%20value,x-team=edge",
            ),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"),
            ("OTEL_SERVICE_NAME", "edge-flags"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.01"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.endpoint_of(Signal::Traces).as_deref(),
        Some("http://other:4317")
    );
    assert_eq!(
        c.endpoint_of(Signal::Metrics).as_deref(),
        Some("http://metrics:4317")
    );
    assert_eq!(c.headers["api-key"], "s3cret value");
    assert_eq!(c.headers["x-team"], "edge");
    assert_eq!(c.service_name, "edge-flags");
    assert_eq!(c.resource_attributes["deployment.environment"], "prod");
    assert_eq!(
        (c.sampler, c.sampler_arg),
        (SamplerKind::ParentbasedTraceIdRatio, 0.01)
    );
    assert_eq!(c.export_timeout, Duration::from_millis(2500));
    let mut printed = c.clone();
    printed.redact();
    assert!(
        !printed.headers["api-key"].contains("s3cret value"),
        "{printed:?}"
    );
    apply_env(&mut c, &env(&[("OTEL_SDK_DISABLED", "true")])).unwrap();
    assert_eq!(c.endpoint_of(Signal::Traces), None);
}

#[test]
fn wrong_values_name_their_variable_or_key() {
    let mut c = OtelConfig::default();
    let e = apply_env(&mut c, &env(&[("OTEL_TRACES_SAMPLER", "sometimes")]))
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("environment variable OTEL_TRACES_SAMPLER:"),
        "{e}"
    );
    let e = apply_env(&mut c, &env(&[("OTEL_TRACES_SAMPLER_ARG", "2")]))
        .unwrap_err()
        .0;
    assert!(e.contains("OTEL_TRACES_SAMPLER_ARG"), "{e}");
    let e = apply_env(
        &mut c,
        &env(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http")]),
    )
    .unwrap_err()
    .0;
    assert!(
        e.starts_with("environment variable OTEL_EXPORTER_OTLP_TRACES_PROTOCOL:"),
        "{e}"
    );
    let bad = json!({"flagpole": {"telemetry": {"protocol": "http/xml"}}});
    let e = from_json(bad.as_object().unwrap()).unwrap_err().0;
    assert!(e.contains("flagpole.telemetry.protocol"), "{e}");
    let typo = json!({"flagpole": {"telemetry": {"endpont": "http://x"}}});
    let e = from_json(typo.as_object().unwrap()).unwrap_err().0;
    assert!(
        e.contains("did you mean 'flagpole.telemetry.endpoint'"),
        "{e}"
    );
}

#[test]
fn a_signals_own_settings_win_over_the_shared_ones() {
    let config = json!({"flagpole": {"telemetry": {
        "endpoint": "http://collector:4318", "metrics_protocol": "http/json",
        "metrics_headers": {"x-metrics": "m"}, "headers": {"x-team": "flags"}}}});
    let mut c = from_json(config.as_object().unwrap()).unwrap().config.otel;
    let metrics = c.export_of(Signal::Metrics).unwrap();
    assert_eq!(
        (metrics.endpoint.as_str(), metrics.protocol),
        ("http://collector:4318/v1/metrics", Protocol::HttpJson)
    );
    assert_eq!(metrics.headers.keys().collect::<Vec<_>>(), ["x-metrics"]);
    apply_env(
        &mut c,
        &env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-traces=t"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "3000"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1500"),
        ]),
    )
    .unwrap();
    let traces = c.export_of(Signal::Traces).unwrap();
    // gRPC takes the shared endpoint as is: no signal path.
    assert_eq!(traces.endpoint, "http://collector:4318");
    assert_eq!(traces.protocol, Protocol::Grpc);
    assert_eq!(traces.headers["x-traces"], "t");
    assert!(!traces.headers.contains_key("x-team"));
    assert_eq!(traces.timeout, Duration::from_millis(1500));
    let metrics = c.export_of(Signal::Metrics).unwrap();
    // The file's metrics protocol stays: the shared variable is not the metrics' own.
    assert_eq!(metrics.protocol, Protocol::HttpJson);
    assert_eq!(metrics.timeout, Duration::from_millis(3000));
    let mut printed = c.clone();
    printed.redact();
    assert_ne!(printed.traces_headers.unwrap()["x-traces"], "t");
}

#[test]
fn background_spans_are_off_unless_the_key_says_so() {
    let load = |telemetry: serde_json::Value| {
        let config = json!({"flagpole": {"telemetry": telemetry}});
        from_json(config.as_object().unwrap())
            .map(|loaded| loaded.config.otel.background_spans)
            .map_err(|e| e.0)
    };
    assert_eq!(load(json!({})), Ok(false));
    assert_eq!(load(json!({"background_spans": true})), Ok(true));
    assert!(load(json!({"background_spans": "yes"})).is_err());
    // What `flagpole check` prints loads back the same.
    let c = OtelConfig {
        background_spans: true,
        ..OtelConfig::default()
    };
    assert!(TelemetryFile::from_settings(&c).settings().background_spans);
}

#[test]
fn metric_export_alone_can_be_turned_off() {
    // The Jaeger recipe of docs/tracing.md: Jaeger takes traces only.
    let mut c = OtelConfig::default();
    apply_env(
        &mut c,
        &env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.endpoint_of(Signal::Traces).as_deref(),
        Some("http://localhost:4318/v1/traces")
    );
    assert_eq!(c.endpoint_of(Signal::Metrics), None);
}
