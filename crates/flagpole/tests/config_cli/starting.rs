//! What a configuration that is accepted starts: the bundled example when nothing is configured
//! or `--example` asks for it, a document named on the command line (announced with its keys), a
//! real Edge Proxy config as it is, and with `logging.log_format = "json"` JSON on every line of
//! stderr, a fatal error included.

use serde_json::{json, Value};

use crate::support::{last_line, pair, run, workdir, write_json, Serving, DOCUMENT};

#[test]
fn nothing_configured_serves_the_example() {
    let dir = workdir("nothing");
    let serving = Serving::start(&dir, &[], &[]);
    serving.wait_for("/proxy/health/readiness", None, 200);
    assert_eq!(
        serving.get("/api/v1/flags/", Some("example_client_key")),
        200
    );
    let stderr = serving.stderr();
    assert!(
        stderr.contains("serving the bundled example environment: no configuration found"),
        "{stderr}"
    );
    assert_eq!(serving.stop().0, 0);
}

#[test]
fn the_example_flag_serves_the_example_beside_a_config() {
    let dir = workdir("example-flag");
    let config = write_json(
        &dir,
        "settings.json",
        &json!({"logging": {"log_level": "WARNING"}}),
    );
    let config = config.to_str().unwrap();
    // Without --example this config names no environment.
    assert_eq!(run(&dir, &["serve", "--config", config], &[]).code, 2);
    let serving = Serving::start(&dir, &["--config", config, "--example"], &[]);
    serving.wait_for("/api/v1/flags/", Some("example_client_key"), 200);
    assert!(
        serving
            .stderr()
            .contains("serving the bundled example environment (--example)"),
        "{}",
        serving.stderr()
    );
}

#[test]
fn a_document_on_the_command_line_is_announced_with_its_keys() {
    let dir = workdir("document");
    let serving = Serving::start(&dir, &["--document", DOCUMENT], &[]);
    serving.wait_for("/api/v1/flags/", Some("example_client_key"), 200);
    let stderr = serving.stderr();
    for part in [
        "serving ",
        "environment.json",
        "client-side key: example_client_key",
        "curl -H 'X-Environment-Key: example_client_key' http://127.0.0.1:",
    ] {
        assert!(stderr.contains(part), "{part:?} not in:\n{stderr}");
    }
    assert!(!stderr.contains("bundled example"), "{stderr}");
}

/// A config using every key the Flagsmith Edge Proxy 2.x (and the Rust Edge Proxy) accepts.
#[test]
fn a_real_edge_proxy_config_is_accepted() {
    let dir = workdir("edge-proxy");
    write_json(
        &dir,
        "config.json",
        &json!({
            "environment_key_pairs": [pair("ser.your_server_side_key_1", "your_client_side_key_1")],
            // Nothing listens there: the proxy starts, it only cannot fetch.
            "api_url": "http://127.0.0.1:9/api/v1",
            "api_poll_frequency_seconds": 10,
            "api_poll_timeout_seconds": 5,
            "allow_origins": ["*"],
            "endpoint_caches": {"flags": {"use_cache": true, "cache_max_size": 128},
                                "identities": {"use_cache": false, "cache_max_size": 128}},
            "logging": {"log_level": "DEBUG", "log_format": "generic", "enable_access_log": false,
                        "log_event_field_name": "message", "colours": false, "override": {}},
            "server": {"host": "0.0.0.0", "port": 8000, "reload": false, "proxy_headers": false},
            "health_check": {"environment_update_grace_period_seconds": 30}
        }),
    );
    let check = run(&dir, &["check"], &[]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(!check.stderr.contains("unknown"), "{}", check.stderr);
    let serving = Serving::start(&dir, &[], &[]);
    serving.wait_for("/proxy/health/liveness", None, 200);
    serving.wait_logged("environment document update failed");
    // Its one environment is known (not loaded: upstream is unreachable), the example is not.
    assert_eq!(
        serving.get("/api/v1/flags/", Some("your_client_side_key_1")),
        503
    );
    assert_eq!(
        serving.get("/api/v1/flags/", Some("example_client_key")),
        401
    );
    let (code, stderr) = serving.stop();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("no document yet"),
        "the failed first fetch says nothing is served yet:\n{stderr}"
    );
    assert!(!stderr.contains("last good document"), "{stderr}");
}

#[test]
fn json_logs_are_json_on_every_line() {
    let dir = workdir("json");
    let config = json!({
        "environment_key_pairs": [pair("ser.json_server_key", "example_client_key")],
        "api_url": "http://127.0.0.1:9/api/v1",
        "logging": {"log_format": "json", "enable_access_log": true},
        "unknown_top_level_key": 1,
    });
    write_json(&dir, "config.json", &config);
    let serving = Serving::start(&dir, &["--document", DOCUMENT], &[]);
    serving.wait_for("/api/v1/flags/", Some("example_client_key"), 200);
    assert_eq!(serving.get("/api/v1/flags/", Some("nobody")), 401);
    let (code, stderr) = serving.stop();
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    for line in &lines {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{stderr}"));
    }
    for part in [
        "listening on",
        "unknown_top_level_key",
        "try: curl",
        "shutting down",
    ] {
        assert!(stderr.contains(part), "{part:?} not logged:\n{stderr}");
    }
    // A fatal error after the configuration is read is JSON too.
    write_json(
        &dir,
        "config.json",
        &json!({"logging": {"log_format": "json"}}),
    );
    let out = run(&dir, &["serve"], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    for line in out.stderr.lines() {
        let event: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(event["fields"]["message"].is_string(), "{line}");
    }
    assert!(
        last_line(&out.stderr).contains("no environment to serve"),
        "{}",
        out.stderr
    );
}
