//! What every test of the configuration shares: a fresh working directory per test, the
//! `flagpole` binary run with an empty environment (to its end, or serving until stopped), and
//! the last line of stderr, where a refusal says why.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_flagpole");
pub(crate) const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/environment.json"
);
/// Generous: the machine may be busy; nothing here measures speed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh, empty working directory for one test.
pub(crate) fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("config-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
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

pub(crate) struct Finished {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs a command that must end by itself.
pub(crate) fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Finished {
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
pub(crate) struct Serving {
    child: Child,
    port: u16,
    stderr: PathBuf,
}

impl Serving {
    pub(crate) fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Serving {
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

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// `GET path` with an optional environment key; the status code.
    pub(crate) fn get(&self, path: &str, key: Option<&str>) -> u16 {
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
    pub(crate) fn wait_for(&self, path: &str, key: Option<&str>, status: u16) {
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
    pub(crate) fn wait_logged(&self, text: &str) {
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
    pub(crate) fn stop(mut self) -> (i32, String) {
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
pub(crate) fn last_line(text: &str) -> &str {
    text.trim_end().lines().last().unwrap_or_default()
}

pub(crate) fn pair(server: &str, client: &str) -> Value {
    json!({"server_side_key": server, "client_side_key": client})
}
