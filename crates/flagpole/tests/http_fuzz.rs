//! HTTP fuzz test, bounded so that it runs in CI: arbitrary raw requests (gen.rs) against a real
//! `flagpole serve` on 127.0.0.1, one connection each. Properties, per request and overall:
//!
//! - every request gets a response, or (for a request the client abandons, or an oversized one)
//!   a close, within a timeout: no hang;
//! - every response is well-formed HTTP/1.x (status line, headers, unambiguous framing, a whole
//!   body) and every 4xx with a body is JSON in the documented error shape;
//! - no 5xx at all (the one allowed, 503 for an environment not loaded, cannot happen here);
//! - the process never dies nor panics (its stderr is watched for "panicked"), stays live after
//!   every request, and at the end still answers `/api/v1/flags/`, an identity and OFREP exactly
//!   as before the run.
//!
//! The server is the `flagpole` binary Cargo builds for this test, serving the bundled example
//! environment as a local document. A failing case is shrunk to a small request, printed as the
//! bytes sent (escaped); the run prints its seed.
//!
//! Knobs: `FLAGPOLE_FUZZ_CASES` (default 300), `FLAGPOLE_FUZZ_SEED` (replay a run),
//! `FLAGPOLE_FUZZ_SECONDS` (time budget for the cases, default 40; cases past it are not run),
//! `FLAGPOLE_FUZZ_MIN_CASES` (the floor: the run fails when fewer cases than this ran within the
//! budget, default 100 or all of them if fewer; a run that tried few requests proves little and must
//! not pass as a full one), `FLAGPOLE_FUZZ_VERBOSE` (print each request line and its status). The
//! run prints how many cases ran.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};

#[path = "http_fuzz/gen.rs"]
mod gen;
#[path = "http_fuzz/wire.rs"]
mod wire;

use gen::{CLIENT_KEY, SERVER_KEY};

const BIN: &str = env!("CARGO_BIN_EXE_flagpole");
const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/environment.json"
);
/// Longest a request may go unanswered (or a closed request unclosed).
const TIMEOUT: Duration = Duration::from_secs(10);

/// A running `flagpole serve` and where its stderr goes.
struct Server {
    child: Child,
    port: u16,
    stderr: PathBuf,
    /// Panic lines already reported (a case fails only for new ones).
    panics_seen: usize,
}

impl Server {
    fn start(dir: &Path) -> Server {
        std::fs::create_dir_all(dir).expect("work dir");
        let config = dir.join("config.json");
        let config_json = serde_json::json!({
            "environment_key_pairs": [{"server_side_key": SERVER_KEY, "client_side_key": CLIENT_KEY}],
            // Nothing listens there: the environment comes from the local document.
            "api_url": "http://127.0.0.1:9/api/v1",
            "logging": {"log_level": "WARNING"},
            "flagpole": {
                "documents": [{"path": DOCUMENT}],
                "limits": {"header_read_timeout_seconds": 2},
            },
        });
        std::fs::write(&config, config_json.to_string()).expect("write config");
        let stderr = dir.join("flagpole.stderr");
        let log = std::fs::File::create(&stderr).expect("stderr file");
        let mut child = Command::new(BIN)
            .args(["serve", "--host", "127.0.0.1", "--port", "0", "--config"])
            .arg(&config)
            .current_dir(dir)
            // Only what the server needs: no config override from this environment leaks in.
            .env_clear()
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start flagpole serve");
        let port = wait_for_port(&stderr, &mut child);
        let server = Server {
            child,
            port,
            stderr,
            panics_seen: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.get("/api/v1/flags/", CLIENT_KEY).map(|r| r.status) != Ok(200) {
            assert!(
                Instant::now() < deadline,
                "flagpole never served the document"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn panics(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        text.lines()
            .filter(|l| l.contains("panicked"))
            .map(str::to_owned)
            .collect()
    }

    /// Panic lines logged since the last call.
    fn new_panics(&mut self) -> Vec<String> {
        let all = self.panics();
        let new = all[self.panics_seen.min(all.len())..].to_vec();
        self.panics_seen = all.len();
        new
    }

    fn request(&self, raw: &[u8]) -> Result<wire::Response, String> {
        let mut exchange = wire::exchange(self.port, raw, true, false, TIMEOUT)?;
        if exchange.responses.is_empty() {
            return Err("no response".into());
        }
        Ok(exchange.responses.remove(0))
    }

    fn get(&self, path: &str, key: &str) -> Result<wire::Response, String> {
        self.request(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment-Key: {key}\r\n\r\n")
                .as_bytes(),
        )
    }

    fn post(&self, path: &str, key: &str, body: &str) -> Result<wire::Response, String> {
        self.request(
            format!(
                "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment-Key: {key}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    }

    /// The answers compared before and after the run.
    fn fingerprint(&self) -> Vec<(u16, Vec<u8>)> {
        let identity = r#"{"identifier":"fuzz-probe","traits":[{"trait_key":"plan","trait_value":"enterprise"}]}"#;
        let ofrep = r#"{"context":{"targetingKey":"fuzz-probe","plan":"enterprise"}}"#;
        [
            self.get("/api/v1/flags/", CLIENT_KEY),
            self.post("/api/v1/identities/", CLIENT_KEY, identity),
            self.post("/ofrep/v1/evaluate/flags", SERVER_KEY, ofrep),
        ]
        .into_iter()
        .map(|r| {
            let r = r.expect("probe request");
            (r.status, r.body)
        })
        .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port from the "listening on http://127.0.0.1:PORT" line of the server's stderr.
fn wait_for_port(stderr: &Path, child: &mut Child) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(file) = std::fs::File::open(stderr) {
            for line in BufReader::new(file).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
                    if let Ok(port) = rest.trim().parse() {
                        return port;
                    }
                }
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "flagpole serve exited ({status}): {}",
                std::fs::read_to_string(stderr).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "flagpole serve never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// One case: the exchange and its checks, then the process must still be up and live.
fn run_case(server: &mut Server, case: &gen::Case, seen: &Seen) -> Result<(), String> {
    let (raw, complete) = case.wire();
    let exchange = wire::exchange(server.port, &raw, complete, case.is_head(), TIMEOUT)?;
    seen.record(&exchange);
    if std::env::var_os("FLAGPOLE_FUZZ_VERBOSE").is_some() {
        let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n");
        let line_end = head_end.unwrap_or(raw.len()).min(400);
        let status = exchange.responses.first().map(|r| r.status);
        eprintln!("{status:?} {:?}", String::from_utf8_lossy(&raw[..line_end]));
    }
    for response in &exchange.responses {
        wire::check(response)?;
    }
    if complete && exchange.responses.is_empty() {
        // Only a request the server may refuse before reading it all may go unanswered.
        let head_len = raw.len() - case.body.len();
        if head_len <= 16 * 1024 && case.body.len() <= 64 * 1024 {
            return Err(format!(
                "closed without a response (reset: {})",
                exchange.reset
            ));
        }
    }
    if !server.alive() {
        return Err("the server process died".into());
    }
    let panics = server.new_panics();
    if !panics.is_empty() {
        return Err(format!("the server panicked: {panics:?}"));
    }
    match server.request(b"GET /proxy/health/liveness HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") {
        Ok(r) if r.status == 200 => Ok(()),
        other => Err(format!("liveness after the case: {other:?}")),
    }
}

/// What the run produced (first responses by status, and closes without one), printed at the
/// end and checked for variety: a generator that only ever reached hyper's 400 would test little.
#[derive(Default)]
struct Seen(Mutex<BTreeMap<String, u32>>);

impl Seen {
    fn record(&self, exchange: &wire::Exchange) {
        let outcome = match exchange.responses.first() {
            Some(r) if r.stream => "stream".to_owned(),
            Some(r) if r.status >= 400 && !r.body.is_empty() => format!("{} json", r.status),
            Some(r) => r.status.to_string(),
            None => "close".to_owned(),
        };
        *self.0.lock().unwrap().entry(outcome).or_default() += 1;
    }
}

#[test]
fn arbitrary_requests_never_break_the_server() {
    let cases = env_number("FLAGPOLE_FUZZ_CASES", 300) as u32;
    let budget = Duration::from_secs(env_number("FLAGPOLE_FUZZ_SECONDS", 40));
    let floor = env_number("FLAGPOLE_FUZZ_MIN_CASES", 100).min(u64::from(cases)) as u32;
    let seed = std::env::var("FLAGPOLE_FUZZ_SEED")
        .ok()
        .map(|s| s.parse::<u64>().expect("FLAGPOLE_FUZZ_SEED is a number"))
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            nanos ^ u64::from(std::process::id()).rotate_left(32)
        });
    eprintln!("http fuzz: {cases} cases, seed {seed} (replay with FLAGPOLE_FUZZ_SEED={seed})");

    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("http-fuzz-{}", std::process::id()));
    let server = Mutex::new(Server::start(&dir));
    let before = server.lock().unwrap().fingerprint();
    assert!(
        before.iter().all(|(s, _)| *s == 200),
        "probes before the run: {before:?}"
    );

    let seen = Seen::default();
    let started = Instant::now();
    // Requests sent (cases, then shrinking steps if one fails) and cases left over the budget.
    let (ran, skipped) = (Cell::new(0u32), Cell::new(0u32));
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 5_000,
        max_shrink_time: 60_000,
        ..Config::default()
    });
    let outcome = runner.run(&gen::case(), |case| {
        if started.elapsed() > budget {
            skipped.set(skipped.get() + 1);
            return Ok(());
        }
        ran.set(ran.get() + 1);
        let mut server = server.lock().unwrap();
        let result = run_case(&mut server, &case, &seen);
        if result.is_err() && !server.alive() {
            // Shrinking goes on against a fresh process.
            *server = Server::start(&dir.join(format!("restart-{}", ran.get())));
        }
        result.map_err(TestCaseError::fail)
    });
    eprintln!(
        "http fuzz: {} of {cases} cases ran (shrinking included) in {:.1} s{}",
        ran.get(),
        started.elapsed().as_secs_f64(),
        if skipped.get() > 0 {
            format!(", {} not run (over FLAGPOLE_FUZZ_SECONDS)", skipped.get())
        } else {
            String::new()
        }
    );
    let seen = seen.0.into_inner().unwrap();
    eprintln!("http fuzz: outcomes {seen:?}");
    if let Err(error) = outcome {
        let message = match error {
            TestError::Fail(reason, case) => format!("{reason}\nminimal failing request: {case:?}"),
            TestError::Abort(reason) => format!("aborted: {reason}"),
        };
        let stderr = server.lock().unwrap().stderr.clone();
        panic!(
            "http fuzz failed (seed {seed}): {message}\nthe server's stderr: {}",
            stderr.display()
        );
    }

    assert!(
        ran.get() >= floor,
        "only {} cases ran within FLAGPOLE_FUZZ_SECONDS={} (the floor is {floor}): this machine is too \
         slow for the budget; raise FLAGPOLE_FUZZ_SECONDS rather than accept a shorter run",
        ran.get(),
        budget.as_secs()
    );
    if ran.get() >= 100 {
        let count = |p: fn(&str) -> bool| {
            seen.iter()
                .filter(|(k, _)| p(k))
                .map(|(_, n)| n)
                .sum::<u32>()
        };
        assert!(
            count(|k| k.starts_with("200")) > 0,
            "no request was answered 200: {seen:?}"
        );
        assert!(
            count(|k| k.ends_with("json")) > 0,
            "no JSON error at all: {seen:?}"
        );
    }
    let mut server = server.into_inner().unwrap();
    assert!(server.alive(), "the server died");
    assert_eq!(server.panics(), Vec::<String>::new(), "the server panicked");
    let after = server.fingerprint();
    assert_eq!(
        before, after,
        "the server answers differently after the run"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
