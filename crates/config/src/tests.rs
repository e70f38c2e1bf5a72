//! Loading as a whole: both peers' files, precedence of variables over the file, error
//! messages that name the key path, unknown keys (typos are errors, the rest warnings).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use super::{schema, suggest};

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
    assert_eq!(loaded.config.logging.level.name(), "WARNING");
}

#[test]
fn flagpole_and_ofrep_sections() {
    let c = load_json(json!({
        "flagpole": {"documents": ["a.json", {"path": "b.json"}], "snapshot_dir": "/snap",
            "limits": {"max_body_bytes": 2048, "max_header_bytes": 9000, "header_read_timeout_seconds": 2,
                       "max_trait_value_length": 10, "rate_limit_per_key_rps": 5, "max_connections": 9,
                       "write_timeout_seconds": 0.5},
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
    assert_eq!(c.limits.max_header_bytes, 9000);
    assert_eq!(c.limits.write_timeout, Duration::from_millis(500));
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
            json!({"flagpole": {"documents": [{}]}}),
            "flagpole.documents[0]: missing field `path`",
        ),
        (
            json!({"ofrep": {"sse": {"secret": ""}}}),
            "ofrep.sse.secret:",
        ),
        (json!({"ofrep": []}), "ofrep:"),
        (
            json!({"logging": {"log_level": "DEBG"}}),
            "logging.log_level: \"DEBG\" is not a log level: use one of TRACE, DEBUG, INFO,",
        ),
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
        // Sections the did-you-mean once missed (it kept its own list of keys).
        (
            json!({"flagpole": {"identity_cache": {"max_byte": 0}}}),
            "unknown key 'flagpole.identity_cache.max_byte': did you mean 'flagpole.identity_cache.max_bytes'?",
        ),
        (
            json!({"flagpole": {"grpc": {"prot": 8013}}}),
            "unknown key 'flagpole.grpc.prot': did you mean 'flagpole.grpc.port'?",
        ),
        (
            json!({"flagpole": {"metrics": {"per_enviroment": false}}}),
            "unknown key 'flagpole.metrics.per_enviroment': did you mean 'flagpole.metrics.per_environment'?",
        ),
        (
            json!({"$schem": "./flagpole.schema.json"}),
            "unknown key '$schem': did you mean '$schema'?",
        ),
        // Even beside a wrong value elsewhere (the typo usually explains it).
        (
            json!({"logging": {"log_level": "DEBG"}, "flagpole": {"identity_cache": {"max_byte": 0}}}),
            "unknown key 'flagpole.identity_cache.max_byte': did you mean 'flagpole.identity_cache.max_bytes'?",
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
fn other_unknown_keys_outside_flagpoles_section_warn() {
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
    // Free-form values declare no keys: anything goes inside them.
    load_json(
        json!({"logging": {"override": {"anything": {"goes": true}}}, "endpoint_caches": {"x": 1}}),
    )
    .unwrap();
}

#[test]
fn other_unknown_keys_in_flagpoles_section_are_refused_naming_its_keys() {
    let e = error(json!({"bogus": 1, "flagpole": {"something_else": 2,
        "metrics": {"anything": true}}}));
    assert!(
        e.starts_with("unknown key 'flagpole.something_else': not a setting (`flagpole config reference` lists them; here: "),
        "{e}"
    );
    assert!(
        e.contains("; unknown key 'flagpole.metrics.anything': not a setting (`flagpole config reference` lists them; here: enabled,"),
        "{e}"
    );
    assert!(!e.contains("bogus"), "{e}");
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
        crate::fingerprint("ser.secret_key")
    );
    assert_eq!(c.upstream.api_url, "https://user:redacted@api.test/api/v1");
}

/// Every one-edit typo of every key the schema declares, in its place, is refused naming the
/// key meant (keys are found by walking the schema, so a new key is covered when it is added).
#[test]
fn a_typo_of_any_key_names_the_key_meant() {
    let mut checked = 0;
    for (path, typo_config, typo) in typos_of_every_key() {
        assert!(
            !typo.is_empty(),
            "no typo of {path} is nearer to it than to another key"
        );
        let e = error(typo_config.clone());
        assert!(
            e.contains(&format!("did you mean '{path}'")),
            "{typo}: {typo_config}: {e}"
        );
        checked += 1;
    }
    // Every section's keys: 87 keys and the two top-level aliases when this was written.
    assert!(checked >= 89, "only {checked} keys");
}

/// `(path of the key meant, a config with a typo of it in its place, the typo)`, for every key
/// of the schema (list elements as index 0); a typo is a deleted last letter, else a swap of two
/// letters, whichever is no other known key and nearer to this key than to any other (the typo
/// is empty when there is none: the test fails).
fn typos_of_every_key() -> Vec<(String, Value, String)> {
    fn visit(node: &Value, at: Vec<Step>, out: &mut Vec<(String, Value, String)>) {
        for (name, property, siblings) in members(node) {
            let mut path = at.clone();
            path.push(Step::Key(name.clone()));
            match typo_of(&name, &siblings) {
                Some(typo) => {
                    let mut with_typo = path.clone();
                    with_typo.pop();
                    with_typo.push(Step::Key(typo.clone()));
                    out.push((render(&path), build(&with_typo), typo));
                }
                None => out.push((render(&path), Value::Null, String::new())),
            }
            visit(&property, path.clone(), out);
            if let Some(items) = schema::items(&property) {
                let mut element = path;
                element.push(Step::Index);
                visit(items, element, out);
            }
        }
    }
    let mut out = Vec::new();
    visit(schema::schema(), Vec::new(), &mut out);
    out
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index,
}

fn members(node: &Value) -> Vec<(String, Value, Vec<String>)> {
    let properties: Vec<(String, Value)> = schema::alternatives(node)
        .into_iter()
        .filter_map(|n| n.get("properties")?.as_object())
        .flat_map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let names: Vec<String> = properties.iter().map(|(k, _)| k.clone()).collect();
    properties
        .into_iter()
        .map(|(k, v)| (k, v, names.clone()))
        .collect()
}

fn typo_of(name: &str, siblings: &[String]) -> Option<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut candidates = vec![chars[..chars.len() - 1].iter().collect::<String>()];
    for i in 1..chars.len().saturating_sub(1) {
        let mut swapped = chars.clone();
        swapped.swap(i, i + 1);
        candidates.push(swapped.into_iter().collect());
    }
    let known: Vec<&str> = siblings.iter().map(String::as_str).collect();
    candidates.into_iter().find(|c| {
        c != name && !known.contains(&c.as_str()) && suggest::closest(c, &known) == Some(name)
    })
}

fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index => out.push_str("[0]"),
        }
    }
    out
}

/// A config holding `1` at `path`.
fn build(path: &[Step]) -> Value {
    match path.split_first() {
        None => json!(1),
        Some((Step::Key(k), rest)) => json!({ k: build(rest) }),
        Some((Step::Index, rest)) => json!([build(rest)]),
    }
}

/// The effective configuration loads back into the same configuration, every key Flagpole
/// reads in it, in the file's names.
#[test]
fn the_effective_configuration_loads_back_unchanged() {
    let full = json!({
        "environment_key_pairs": [{"server_side_key": "ser.abc", "client_side_key": "abc"}],
        "api_url": "https://example.test/api/v1", "api_poll_frequency": 20,
        "api_poll_timeout_seconds": 2.5, "allow_origins": ["https://a.test"],
        "logging": {"log_level": "warning", "log_format": "json", "enable_access_log": true},
        "server": {"host": "127.0.0.1", "port": 8443, "timeout_keep_alive": 7,
                   "tls": {"cert_path": "c.pem", "key_path": "k.pem", "plain_port": 8080}},
        "health_check": {"environment_update_grace_period_seconds": null},
        "proxy_key": "p",
        "flagpole": {"documents": ["a.json"], "snapshot_dir": "/snap",
            "limits": {"rate_limit_per_key_rps": 5}, "grpc": {"port": 8013},
            "identity_cache": {"max_bytes": 0}, "metrics": {"per_environment": false},
            "shadow": {"sample_rate": 0.25}},
        "ofrep": {"sse": {"secret": "s"}, "rate_limit_per_key_rps": 3}
    });
    for config in [json!({}), full] {
        let loaded = load_json(config.clone()).unwrap().config;
        let mut printed = effective(&loaded);
        // The printed keys are fingerprints: put the real ones back.
        if let Some(pair) = printed["environment_key_pairs"].get_mut(0) {
            pair["server_side_key"] = json!("ser.abc");
            pair["client_side_key"] = json!("abc");
            printed["proxy_key"] = json!("p");
            printed["ofrep"]["sse"]["secret"] = json!("s");
        }
        let again = load_json(printed.clone()).unwrap();
        assert_eq!(again.config, loaded, "{printed}");
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    }
    let defaults = effective(&Config::default());
    assert_eq!(defaults["allow_origins"], json!(["*"]));
    assert_eq!(defaults["api_poll_frequency_seconds"], 10);
    assert_eq!(defaults["logging"]["log_level"], "INFO");
    assert_eq!(
        defaults["flagpole"]["identity_cache"]["max_bytes"],
        16 << 20
    );
    assert!(
        defaults.get("endpoint_caches").is_none(),
        "ignored keys are left out"
    );
}
