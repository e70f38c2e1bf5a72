//! End-to-end tests of the configuration as a user meets it, on the real `flagpole` binary: a
//! mistaken configuration never starts the proxy on the bundled example (a typo, `{}`, an empty
//! `ENVIRONMENT_KEY_PAIRS` all exit 2 with one line saying why), the example is served when
//! nothing is configured or `--example` asks for it, `flagpole check` validates exactly as
//! `serve` does and prints the configuration with keys redacted, a real Edge Proxy config is
//! accepted as it is, and with `logging.log_format = "json"` every line on stderr is JSON.
//! Values that cannot be meant (a misspelt variable, an unknown log level, a zero poll period
//! or timeout, a rate out of range, a grace period shorter than the poll period, two listeners
//! on one port, a snapshot directory that cannot be written) exit 2 from both `check` and
//! `serve`, naming the key, the value and what is allowed, before anything listens. The
//! printed configuration is valid input, and docs/configuration.md is what `flagpole config
//! reference` prints.
//!
//! Every process runs in a directory of its own with an empty environment, so nothing from the
//! machine (a `./config.json`, a `CONFIG_PATH`) leaks in.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_flagpole");
const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/environment.json"
);
/// Generous: the machine may be busy; nothing here measures speed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh, empty working directory for one test.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("config-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path
}

fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    cmd
}

struct Finished {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs a command that must end by itself.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Finished {
    let mut child = command(dir, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run flagpole");
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("flagpole {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Finished {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A `flagpole serve` that is expected to start; stopped (SIGTERM) on drop.
struct Serving {
    child: Child,
    port: u16,
    stderr: PathBuf,
}

impl Serving {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Serving {
        let stderr = dir.join("stderr.log");
        let mut full = vec!["serve", "--host", "127.0.0.1", "--port", "0"];
        full.extend_from_slice(args);
        let mut child = command(dir, &full, env)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start flagpole serve");
        let deadline = Instant::now() + TIMEOUT;
        let port = loop {
            let text = std::fs::read_to_string(&stderr).unwrap_or_default();
            let port = text
                .split("listening on http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().ok()
                });
            if let Some(port) = port {
                break port;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("flagpole serve exited ({status}):\n{text}");
            }
            assert!(Instant::now() < deadline, "never listened:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        };
        Serving {
            child,
            port,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// `GET path` with an optional environment key; the status code.
    fn get(&self, path: &str, key: Option<&str>) -> u16 {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let key = key
            .map(|k| format!("X-Environment-Key: {k}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n{key}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut status_line = String::new();
        BufReader::new(&mut stream)
            .read_line(&mut status_line)
            .unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {status_line:?}"))
    }

    /// Waits until `path` answers `status`.
    fn wait_for(&self, path: &str, key: Option<&str>, status: u16) {
        let deadline = Instant::now() + TIMEOUT;
        while self.get(path, key) != status {
            assert!(
                Instant::now() < deadline,
                "{path} never answered {status}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until stderr contains `text`.
    fn wait_logged(&self, text: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.stderr().contains(text) {
            assert!(
                Instant::now() < deadline,
                "{text:?} never logged:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then the exit code and everything written to stderr.
    fn stop(mut self) -> (i32, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        (status.code().unwrap_or(-1), self.stderr())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last line on stderr (the error that ended the process).
fn last_line(text: &str) -> &str {
    text.trim_end().lines().last().unwrap_or_default()
}

fn pair(server: &str, client: &str) -> Value {
    json!({"server_side_key": server, "client_side_key": client})
}

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
            vec!["server.timeout_keep_alive:", "-1", "non-negative number of seconds"],
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
