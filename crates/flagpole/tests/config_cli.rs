//! End-to-end tests of the configuration as a user meets it, on the real `flagpole` binary: a
//! mistaken configuration never starts the proxy on the bundled example (a typo, `{}`, an empty
//! `ENVIRONMENT_KEY_PAIRS` all exit 2 with one line saying why), the example is served when
//! nothing is configured or `--example` asks for it, `flagpole check` validates exactly as
//! `serve` does and prints the configuration with keys redacted, a real Edge Proxy config is
//! accepted as it is, and with `logging.log_format = "json"` every line on stderr is JSON.
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
    assert_eq!(effective["upstream"]["poll_frequency_seconds"], 3);
    let pair = &effective["environments"]["key_pairs"][0];
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
