//! What `flagpole check` and `flagpole config` print: the effective configuration with keys
//! redacted, which is itself valid input; the JSON schema; and the reference that
//! docs/configuration.md must equal.

use serde_json::{json, Value};

use crate::support::{pair, run, workdir, write_json, Serving, DOCUMENT};

#[test]
fn check_prints_the_effective_configuration_with_keys_redacted() {
    let dir = workdir("check");
    write_json(
        &dir,
        "config.json",
        &json!({
            "environment_key_pairs": [pair("ser.very_secret_server_key", "the_client_key")],
            "proxy_key": "the_proxy_key",
            "api_poll_frequency": 3,
            "some_future_key": true,
        }),
    );
    let out = run(&dir, &["check"], &[("SERVER", r#"{"port": 8123}"#)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for secret in ["very_secret_server_key", "the_client_key", "the_proxy_key"] {
        assert!(
            !out.stdout.contains(secret),
            "{secret} printed:\n{}",
            out.stdout
        );
    }
    let effective: Value = serde_json::from_str(&out.stdout).expect("JSON on stdout");
    assert_eq!(effective["server"]["port"], 8123, "variables apply");
    // In the file's own key names (the canonical spelling), defaults included.
    assert_eq!(effective["api_poll_frequency_seconds"], 3);
    assert_eq!(effective["allow_origins"], json!(["*"]));
    assert_eq!(
        effective["flagpole"]["identity_cache"]["max_bytes"],
        16 << 20
    );
    assert!(effective.get("some_future_key").is_none());
    let pair = &effective["environment_key_pairs"][0];
    assert!(
        pair["server_side_key"]
            .as_str()
            .unwrap()
            .starts_with("ser…"),
        "{pair}"
    );
    assert!(
        out.stderr
            .contains("warning: unknown config key 'some_future_key' ignored"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "configuration valid (read: file config.json and the environment variable SERVER)"
        ),
        "{}",
        out.stderr
    );
}

/// What `check` prints is a configuration: with the keys put back, `check` accepts it and
/// prints it again unchanged, and `serve` starts with it.
#[test]
fn the_printed_configuration_is_valid_input() {
    let dir = workdir("round-trip");
    write_json(
        &dir,
        "config.json",
        &json!({
            "$schema": "./flagpole.schema.json",
            "environment_key_pairs": [pair("ser.round_trip_key", "round_trip_client")],
            "api_url": "http://127.0.0.1:9/api/v1",
            "api_poll_frequency": 30,
            "logging": {"log_level": "warning"},
            "server": {"host": "127.0.0.1", "port": 0},
            "flagpole": {"documents": [DOCUMENT], "identity_cache": {"max_bytes": 0}},
            "ofrep": {"sse": {"secret": "round_trip_secret"}}
        }),
    );
    let first = run(&dir, &["check"], &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let mut printed: Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(printed["api_poll_frequency_seconds"], 30);
    assert_eq!(
        printed["health_check"]["environment_update_grace_period_seconds"],
        30
    );
    printed["environment_key_pairs"][0] = pair("ser.round_trip_key", "round_trip_client");
    printed["ofrep"]["sse"]["secret"] = json!("round_trip_secret");
    write_json(&dir, "printed.json", &printed);
    let second = run(&dir, &["check", "--config", "printed.json"], &[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(!second.stderr.contains("warning"), "{}", second.stderr);
    assert_eq!(second.stdout, first.stdout, "printed again unchanged");
    let serving = Serving::start(&dir, &["--config", "printed.json"], &[]);
    serving.wait_for("/api/v1/flags/", Some("example_client_key"), 200);
}

#[test]
fn the_schema_is_printed_and_the_reference_is_up_to_date() {
    let dir = workdir("schema");
    let out = run(&dir, &["config", "schema"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let schema: Value = serde_json::from_str(&out.stdout).expect("the schema is JSON");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let port = &schema["properties"]["flagpole"]["properties"]["grpc"]["properties"]["port"];
    assert_eq!(
        (&port["minimum"], &port["maximum"]),
        (&json!(0), &json!(65535))
    );
    let reference = run(&dir, &["config", "reference"], &[]);
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == reference.stdout,
        "docs/configuration.md is not what `flagpole config reference` prints; regenerate it: \
         cargo run --release -- config reference > docs/configuration.md"
    );
}
