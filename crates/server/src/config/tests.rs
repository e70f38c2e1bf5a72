//! Loading as a whole: both peers' files, precedence of variables over the file, error
//! messages that name the key path, unknown keys (typos are errors, the rest warnings).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;

fn load_json(v: Value) -> Result<Loaded, ConfigError> {
    from_json(v.as_object().unwrap())
}

fn error(v: Value) -> String {
    load_json(v.clone())
        .map(|l| panic!("{v} loaded: {:?}", l.config))
        .unwrap_err()
        .0
}

#[test]
fn peers_configs_load() {
    let python = json!({"environment_key_pairs": [{"server_side_key": "ser.abc", "client_side_key": "abc"}],
        "api_poll_frequency": 5, "api_poll_timeout": 2, "api_url": "https://example.test/api/v1/",
        "allow_origins": ["https://a.test"], "endpoint_caches": {"flags": {"use_cache": false}},
        "logging": {"log_level": "DEBUG", "log_format": "json", "enable_access_log": true, "colours": true},
        "server": {"host": "127.0.0.1", "port": 8001, "proxy_headers": true, "timeout_keep_alive": 7},
        "health_check": {"environment_update_grace_period_seconds": null}});
    let loaded = load_json(python).unwrap();
    let c = loaded.config;
    assert_eq!(c.upstream.api_url, "https://example.test/api/v1");
    assert_eq!(c.upstream.poll_frequency, Duration::from_secs(5));
    assert_eq!(c.upstream.poll_timeout, Duration::from_secs(2));
    assert_eq!(
        c.server.allow_origins,
        Some(vec!["https://a.test".to_string()])
    );
    assert!(c.logging.json && c.logging.access_log);
    assert_eq!((c.server.host.as_str(), c.server.port), ("127.0.0.1", 8001));
    assert_eq!(c.server.keep_alive_timeout, Duration::from_secs(7));
    assert_eq!(c.health.stale_grace, None);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
}

/// Every key the Edge Proxies (Python 2.x, Rust) accept, in one file: no unknown key, no error.
#[test]
fn every_edge_proxy_key_is_known() {
    let all = json!({
        "environment_key_pairs": [{"server_side_key": "ser.abc", "client_side_key": "abc"}],
        "api_url": "https://edge.api.flagsmith.com/api/v1",
        "api_poll_frequency_seconds": 10, "api_poll_timeout_seconds": 5,
        "endpoint_caches": {"flags": {"use_cache": true, "cache_max_size": 128},
                            "identities": {"use_cache": false, "cache_max_size": 128}},
        "allow_origins": ["*"],
        "logging": {"enable_access_log": false, "log_format": "generic", "log_level": "WARNING",
                    "log_event_field_name": "message", "log_filename": null, "colours": false,
                    "colors": false, "use_colors": false, "override": {"loggers": {}}},
        "server": {"host": "0.0.0.0", "port": 8000, "reload": false, "proxy_headers": false,
                   "log_config": null, "timeout_keep_alive": 5},
        "health_check": {"environment_update_grace_period_seconds": 30},
        "proxy_key": "proxy-key",
    });
    let loaded = load_json(all).unwrap();
    // Only the note that endpoint caches are not needed.
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].starts_with("endpoint_caches"));
    assert_eq!(loaded.config.logging.level, "WARNING");
}

#[test]
fn flagpole_and_ofrep_sections() {
    let c = load_json(json!({
        "flagpole": {"documents": ["a.json", {"path": "b.json"}], "snapshot_dir": "/snap",
            "limits": {"max_body_bytes": 2048, "max_header_bytes": 100, "header_read_timeout_seconds": 2,
                       "max_trait_value_length": 10, "rate_limit_per_key_rps": 5, "max_connections": 9,
                       "write_timeout_seconds": 0.01},
            "shutdown_timeout_seconds": 3, "max_concurrent_fetches": 2,
            "metrics": {"enabled": false}, "status_page": null, "usage_report_interval_seconds": 7},
        "ofrep": {"client_keys": false, "public_base_url": "https://flags.test/", "freshness_wait_ms": 0,
                  "sse": {"secret": " s ", "heartbeat_sec": 3}, "rate_limit_per_key_rps": null}
    }))
    .unwrap()
    .config;
    assert_eq!(
        c.environments.documents,
        [Path::new("a.json"), Path::new("b.json")]
    );
    assert_eq!(c.upstream.snapshot_dir.as_deref(), Some(Path::new("/snap")));
    assert_eq!(c.limits.max_body_bytes, 2048);
    assert_eq!(c.limits.max_header_bytes, 8192, "raised to the floor");
    assert_eq!(c.limits.write_timeout, Duration::from_millis(100));
    assert_eq!(c.limits.rate_limit_per_key_rps, Some(5));
    assert_eq!(c.server.shutdown_timeout, Duration::from_secs(3));
    assert_eq!(c.upstream.max_concurrent_fetches, 2);
    assert!(!c.telemetry.metrics && c.telemetry.status_page);
    assert!(!c.ofrep.client_keys && c.ofrep.server_keys);
    assert_eq!(
        c.ofrep.public_base_url.as_deref(),
        Some("https://flags.test")
    );
    assert_eq!(c.ofrep.freshness_wait_ms, 0);
    assert_eq!(
        c.ofrep.sse.secret.as_deref(),
        Some(" s "),
        "secrets are used as written"
    );
    assert_eq!(c.ofrep.sse.heartbeat_sec, 3);
    assert_eq!(c.ofrep.rate_limit_per_key_rps, None);
}

#[test]
fn invalid_values_name_the_key() {
    let cases = [
        (
            json!({"environment_key_pairs": [{"server_side_key": "abc", "client_side_key": "x"}]}),
            "environment_key_pairs[0].server_side_key: must start with \"ser.\"",
        ),
        (
            json!({"environment_key_pairs": [{"server_side_key": "ser.x", "client_side_key": "  "}]}),
            "environment_key_pairs[0].client_side_key: must be a non-empty string",
        ),
        (json!({"server": {"port": 70000}}), "server.port:"),
        (
            json!({"api_poll_frequency_seconds": "soon"}),
            "api_poll_frequency_seconds:",
        ),
        (json!({"api_url": 42}), "api_url: must be a URL"),
        (json!({"api_url": "nope"}), "api_url: not a URL"),
        (
            json!({"logging": {"log_format": "xml"}}),
            "logging.log_format: unknown variant `xml`, expected `generic` or `json`",
        ),
        (
            json!({"flagpole": {"limits": {"max_body_bytes": 0}}}),
            "flagpole.limits.max_body_bytes:",
        ),
        (
            json!({"flagpole": {"documents": [{"file": "a.json"}]}}),
            "flagpole.documents[0]: missing field `path`",
        ),
        (
            json!({"ofrep": {"sse": {"secret": ""}}}),
            "ofrep.sse.secret:",
        ),
        (json!({"ofrep": []}), "ofrep:"),
    ];
    for (config, expected) in cases {
        let e = error(config.clone());
        assert!(e.starts_with(expected), "{config}: {e}");
    }
}

#[test]
fn typos_are_errors_naming_the_key_they_are_close_to() {
    let cases = [
        (
            json!({"enviroment_key_pairs": []}),
            "unknown key 'enviroment_key_pairs': did you mean 'environment_key_pairs'?",
        ),
        (
            json!({"server": {"prot": 1}}),
            "unknown key 'server.prot': did you mean 'server.port'?",
        ),
        (
            json!({"logging": {"Log-Format": "json"}}),
            "unknown key 'logging.Log-Format': did you mean 'logging.log_format'?",
        ),
        (
            json!({"health_check": {"environment_update_grace_period_second": 1}}),
            "did you mean 'health_check.environment_update_grace_period_seconds'?",
        ),
        (
            json!({"flagpole": {"limits": {"max_body_byte": 1}}}),
            "did you mean 'flagpole.limits.max_body_bytes'?",
        ),
        (
            json!({"flagpole": {"metrics": {"enable": false}}}),
            "did you mean 'flagpole.metrics.enabled'?",
        ),
        (
            json!({"ofrep": {"sse": {"heartbeat_secs": 1}}}),
            "did you mean 'ofrep.sse.heartbeat_sec'?",
        ),
        // Even when the misspelt section would also fail for another reason.
        (
            json!({"environment_key_pairs": [{"server_side_key": "ser.a", "client_side_kye": "a"}]}),
            "unknown key 'environment_key_pairs[0].client_side_kye': did you mean 'environment_key_pairs[0].client_side_key'?",
        ),
    ];
    for (config, expected) in cases {
        let e = error(config.clone());
        assert!(e.contains(expected), "{config}: {e}");
    }
}

#[test]
fn other_unknown_keys_warn() {
    let loaded = load_json(json!({"bogus": 1, "server": {"something_else": 2},
        "logging": {"override": {"anything": {"goes": true}}}, "endpoint_caches": null}))
    .unwrap();
    assert_eq!(
        loaded.warnings,
        [
            "unknown config key 'bogus' ignored",
            "unknown config key 'server.something_else' ignored"
        ]
    );
}

#[test]
fn both_spellings_of_a_key_the_canonical_one_wins() {
    let loaded =
        load_json(json!({"api_poll_frequency": 5, "api_poll_frequency_seconds": 7})).unwrap();
    assert_eq!(
        loaded.config.upstream.poll_frequency,
        Duration::from_secs(7)
    );
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
}

#[test]
fn environment_overrides_file() {
    let env = vec![
        ("API_POLL_FREQUENCY_SECONDS".to_string(), "3".to_string()),
        (
            "ENVIRONMENT_KEY_PAIRS".to_string(),
            r#"[{"server_side_key":"ser.a","client_side_key":"a"}]"#.to_string(),
        ),
    ];
    let loaded = load(Some(Path::new("/nonexistent-flagpole-config.json")), &env);
    assert!(loaded.is_err(), "an explicit missing file is an error");
    let dir = std::env::temp_dir().join(format!("flagpole-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.json");
    // The file's other spelling loses to the variable too.
    std::fs::write(&file, r#"{"api_poll_frequency": 20}"#).unwrap();
    let loaded = load(Some(&file), &env).unwrap();
    assert_eq!(
        loaded.config.upstream.poll_frequency,
        Duration::from_secs(3)
    );
    assert_eq!(loaded.config.environments.key_pairs[0].client_side_key, "a");
    assert_eq!(
        loaded.sources.to_string(),
        format!(
            "file {} and the environment variables API_POLL_FREQUENCY_SECONDS, ENVIRONMENT_KEY_PAIRS",
            file.display()
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn variable_errors_name_the_variable_without_echoing_it() {
    let env = vec![(
        "ENVIRONMENT_KEY_PAIRS".to_string(),
        "[{server_side_key: ser.secret}]".to_string(),
    )];
    let e = load(None, &env).map(|_| ()).unwrap_err().0;
    assert!(
        e.starts_with(
            "environment_key_pairs (from the environment variable ENVIRONMENT_KEY_PAIRS): not valid JSON"
        ),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
    let env = vec![("SERVER".to_string(), r#"{"port": "x"}"#.to_string())];
    let e = load(None, &env).map(|_| ()).unwrap_err().0;
    assert!(
        e.starts_with("server.port (from the environment variable SERVER):"),
        "{e}"
    );
}

#[test]
fn redacted_hides_keys_as_the_logs_do() {
    let c = load_json(json!({
        "environment_key_pairs": [{"server_side_key": "ser.secret_key", "client_side_key": "the_client"}],
        "proxy_key": "proxy_secret", "api_url": "https://user:pass@api.test/api/v1",
        "ofrep": {"sse": {"secret": "hmac_secret"}}}))
    .unwrap()
    .config
    .redacted();
    let text = serde_json::to_string(&c).unwrap();
    for secret in [
        "secret_key",
        "the_client",
        "proxy_secret",
        "hmac_secret",
        "pass@",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(
        c.environments.key_pairs[0].server_side_key,
        crate::keys::fingerprint("ser.secret_key")
    );
    assert_eq!(c.upstream.api_url, "https://user:redacted@api.test/api/v1");
}
