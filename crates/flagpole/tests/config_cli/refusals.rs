//! A configuration that cannot be meant never starts the proxy: a typo (in a key or in a
//! variable's name), `{}`, an empty `ENVIRONMENT_KEY_PAIRS`, a value out of range, two listeners on
//! one port, a snapshot directory that cannot be written all exit 2 from both `check` and
//! `serve` with one line naming the key, the value and what is allowed, before anything listens
//! (and never on the bundled example instead).

use serde_json::{json, Value};

use crate::support::{last_line, pair, run, workdir, write_json};

#[test]
fn a_misspelt_key_exits_2_naming_the_key_it_is_close_to() {
    let dir = workdir("typo");
    let config = write_json(
        &dir,
        "config.json",
        &json!({"enviroment_key_pairs": [pair("ser.a", "a")]}),
    );
    let expected = "unknown key 'enviroment_key_pairs': did you mean 'environment_key_pairs'?";
    for args in [&["serve"][..], &["check"][..]] {
        let out = run(&dir, args, &[]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(last_line(&out.stderr).contains(expected), "{}", out.stderr);
    }
    // Nested too, and through --config.
    std::fs::write(
        &config,
        json!({"environment_key_pairs": [pair("ser.a", "a")], "server": {"prot": 8001}})
            .to_string(),
    )
    .unwrap();
    let out = run(&dir, &["serve", "--config", config.to_str().unwrap()], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("unknown key 'server.prot': did you mean 'server.port'?"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_empty_config_exits_2_naming_what_is_missing_and_what_was_read() {
    let dir = workdir("empty");
    write_json(&dir, "config.json", &json!({}));
    let out = run(&dir, &["serve"], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = last_line(&out.stderr);
    for part in [
        "no environment to serve",
        "environment_key_pairs",
        "proxy_key",
        "flagpole.documents",
        "read: file config.json",
        "--example",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }
    let check = run(&dir, &["check"], &[]);
    assert_eq!(check.code, 2);
    assert_eq!(last_line(&check.stderr), line, "check says what serve says");
}

#[test]
fn an_empty_key_pairs_variable_exits_2() {
    let dir = workdir("empty-variable");
    let out = run(&dir, &["serve"], &[("ENVIRONMENT_KEY_PAIRS", "[]")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = last_line(&out.stderr);
    assert!(line.contains("no environment to serve"), "{line}");
    assert!(
        line.contains("the environment variable ENVIRONMENT_KEY_PAIRS"),
        "{line}"
    );
}

#[test]
fn check_refuses_what_serve_refuses_with_the_same_message() {
    let dir = workdir("check-invalid");
    let cases = [
        json!({"environment_key_pairs": [pair("ser.a", "a")], "server": {"port": 70000}}),
        json!({"environment_key_pairs": [pair("not-a-server-key", "a")]}),
        json!({"flagpole": {"documents": [{"path": "missing.json"}]}}),
    ];
    for config in cases {
        write_json(&dir, "config.json", &config);
        let check = run(&dir, &["check"], &[]);
        let serve = run(&dir, &["serve"], &[]);
        assert_eq!(
            (check.code, serve.code),
            (2, 2),
            "{config}: {}",
            check.stderr
        );
        assert_eq!(
            last_line(&check.stderr),
            last_line(&serve.stderr),
            "{config}"
        );
        assert!(check.stdout.is_empty(), "{}", check.stdout);
    }
}

/// `check` and `serve` both refuse `config` (with `env`) with exit 2 and the same last line,
/// which contains every part of `expected`; `serve` never listened.
fn refused(name: &str, config: &Value, env: &[(&str, &str)], expected: &[&str]) {
    let dir = workdir(name);
    write_json(&dir, "config.json", config);
    let check = run(&dir, &["check"], env);
    let serve = run(&dir, &["serve"], env);
    for (command, out) in [("check", &check), ("serve", &serve)] {
        assert_eq!(out.code, 2, "{command} {config}:\n{}", out.stderr);
        let line = last_line(&out.stderr);
        for part in expected {
            assert!(line.contains(part), "{command}: {part:?} not in {line:?}");
        }
    }
    assert_eq!(last_line(&check.stderr), last_line(&serve.stderr));
    assert!(check.stdout.is_empty(), "{}", check.stdout);
    assert!(!serve.stderr.contains("listening"), "{}", serve.stderr);
}

/// A configuration that names an environment (upstream unreachable: nothing is fetched).
fn with_environment(mut config: Value) -> Value {
    config["environment_key_pairs"] = json!([pair("ser.a", "a")]);
    config["api_url"] = json!("http://127.0.0.1:9/api/v1");
    config
}

#[test]
fn misspelt_keys_in_every_section_exit_2_naming_the_key_meant() {
    for (config, meant) in [
        (
            json!({"flagpole": {"identity_cache": {"max_byte": 0}}}),
            "flagpole.identity_cache.max_bytes",
        ),
        (
            json!({"flagpole": {"grpc": {"prot": 8013}}}),
            "flagpole.grpc.port",
        ),
        (
            json!({"flagpole": {"metrics": {"per_enviroment": false}}}),
            "flagpole.metrics.per_environment",
        ),
        (
            json!({"ofrep": {"sse": {"heartbeat_secs": 1}}}),
            "ofrep.sse.heartbeat_sec",
        ),
        (
            json!({"server": {"tls": {"cert_pth": "c.pem"}}}),
            "server.tls.cert_path",
        ),
    ] {
        refused(
            "typo-sections",
            &with_environment(config),
            &[],
            &[&format!("did you mean '{meant}'?")],
        );
    }
}

#[test]
fn a_misspelt_variable_exits_2_and_never_serves_the_example() {
    let dir = workdir("variable-typo");
    let pairs = json!([pair("ser.a", "a")]).to_string();
    for (name, meant) in [
        ("ENVIROMENT_KEY_PAIRS", "ENVIRONMENT_KEY_PAIRS"),
        ("CONFIG_PTH", "CONFIG_PATH"),
        ("Api_Ulr", "API_URL"),
    ] {
        for command in ["serve", "check"] {
            let out = run(&dir, &[command], &[(name, &pairs)]);
            assert_eq!(out.code, 2, "{command} {name}: {}", out.stderr);
            assert_eq!(
                last_line(&out.stderr),
                format!("error: environment variable {name} is not one Flagpole reads: did you mean {meant}?")
            );
            assert!(!out.stderr.contains("bundled example"), "{}", out.stderr);
            assert!(!out.stderr.contains("listening"), "{}", out.stderr);
        }
    }
    // The rest of the environment does not matter.
    let out = run(
        &dir,
        &["check"],
        &[("PATH", "/usr/bin"), ("HOME", "/root"), ("RUSTC_LOG", "x")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn values_that_cannot_be_meant_exit_2_naming_key_value_and_what_is_allowed() {
    let cases = [
        (
            json!({"logging": {"log_level": "DEBG"}}),
            vec!["logging.log_level: \"DEBG\" is not a log level: use one of TRACE, DEBUG, INFO, WARNING"],
        ),
        (
            json!({"api_poll_frequency_seconds": 0}),
            vec!["api_poll_frequency_seconds: 0 is out of range: must be at least 1"],
        ),
        (
            json!({"api_poll_timeout_seconds": 0}),
            vec!["api_poll_timeout_seconds: 0 is out of range: must be greater than 0"],
        ),
        (
            json!({"server": {"timeout_keep_alive": -1}}),
            vec!["server.timeout_keep_alive:", "-1", "expected a number of seconds (greater than 0)"],
        ),
        (
            json!({"flagpole": {"shutdown_timeout_seconds": 0}}),
            vec!["flagpole.shutdown_timeout_seconds: 0 is out of range: must be greater than 0"],
        ),
        (
            json!({"flagpole": {"shadow": {"sample_rate": 1.5}}}),
            vec!["flagpole.shadow.sample_rate:", "1.5", "a number from 0 to 1"],
        ),
        (
            json!({"flagpole": {"limits": {"rate_limit_per_key_rps": 0}}}),
            vec!["flagpole.limits.rate_limit_per_key_rps:", "0", "a positive integer"],
        ),
        (
            json!({"api_poll_frequency_seconds": 60,
                   "health_check": {"environment_update_grace_period_seconds": 10}}),
            vec!["health_check.environment_update_grace_period_seconds: 10 is shorter than \
                  api_poll_frequency_seconds (60)", "give at least 60, or null"],
        ),
        (
            json!({"server": {"port": 8000}, "flagpole": {"grpc": {"port": 8000}}}),
            vec!["flagpole.grpc.port: 8000 is also server.port: two listeners cannot share a \
                  port; give flagpole.grpc.port another port"],
        ),
    ];
    for (config, expected) in cases {
        refused("values", &with_environment(config), &[], &expected);
    }
    // From a variable too, naming it.
    refused(
        "values-variable",
        &with_environment(json!({})),
        &[("API_POLL_FREQUENCY", "0")],
        &["api_poll_frequency (from the environment variable API_POLL_FREQUENCY): 0 is out of range"],
    );
}

#[test]
fn check_runs_what_serve_runs_before_it_listens() {
    let dir = workdir("preflight");
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let snapshot_dir = blocker.join("snapshots");
    refused(
        "preflight-snapshots",
        &with_environment(json!({"flagpole": {"snapshot_dir": snapshot_dir}})),
        &[],
        &["flagpole.snapshot_dir: ", "is not a writable directory"],
    );
    refused(
        "preflight-tls",
        &with_environment(
            json!({"server": {"tls": {"cert_path": "missing.pem", "key_path": "missing.key"}}}),
        ),
        &[],
        &["missing.pem"],
    );
    refused(
        "preflight-document",
        &json!({"flagpole": {"documents": ["missing.json"]}}),
        &[],
        &["cannot read missing.json"],
    );
}

#[test]
fn check_creates_and_writes_nothing() {
    // `check` may run where the proxy will never serve: a missing snapshot directory is judged
    // by its nearest existing parent, and left uncreated.
    let dir = workdir("check-writes-nothing");
    let snapshot_dir = dir.join("var").join("lib").join("flagpole");
    write_json(
        &dir,
        "config.json",
        &with_environment(json!({"flagpole": {"snapshot_dir": snapshot_dir}})),
    );
    let before: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let out = run(&dir, &["check"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after, "check wrote into its working directory");
    assert!(
        !dir.join("var").exists(),
        "check created the snapshot directory"
    );
}
