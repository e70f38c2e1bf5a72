//! One wrk run measured from outside: wrk's own report (our Lua `report.lua`), the server
//! process's CPU time around the run, and how busy each pinned CPU was. Shared by the drivers
//! that compare two servers under the same wrk load (`http-bench`: Flagpole and the limit
//! server; `peers-bench`: Flagpole and the Flagsmith Edge Proxy).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::procs::{command, cpu_seconds};
use crate::wrk_report::{median, round, WrkReport};

/// wrk's arguments every run starts with: `threads` (at most one per connection), `conc`
/// connections for `secs` seconds, a request counted as timed out after `timeout`, the Lua
/// `script`, and the environment key; the caller adds headers, the URL and the script's own
/// arguments.
pub fn wrk_args(
    threads: usize,
    conc: usize,
    secs: u64,
    timeout: &str,
    script: &Path,
    key: &str,
) -> Vec<String> {
    vec![
        "-t".into(),
        threads.min(conc).to_string(),
        "-c".into(),
        conc.to_string(),
        "-d".into(),
        format!("{secs}s"),
        "--timeout".into(),
        timeout.into(),
        "-s".into(),
        script.to_string_lossy().into_owned(),
        "-H".into(),
        format!("X-Environment-Key: {key}"),
    ]
}

/// The CPU the servers are pinned to when pinning (wrk gets CPU 0).
pub const SERVER_CPU: usize = 1;
pub const WRK_CPU: usize = 0;

#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub non2xx: u64,
    pub socket_errors: u64,
    pub requests: u64,
    pub cpu_us_per_req: f64,
    /// Busy fraction (not idle, not iowait, not stolen) of the servers' CPU and of wrk's CPU
    /// during the run (from /proc/stat; only meaningful when pinned).
    pub server_cpu_busy: f64,
    pub wrk_cpu_busy: f64,
}

impl Sample {
    pub fn json(&self) -> Value {
        json!({
            "rps": round(self.rps, 1), "p50_ms": round(self.p50_ms, 3), "p99_ms": round(self.p99_ms, 3),
            "p999_ms": round(self.p999_ms, 3), "errors_non2xx": self.non2xx,
            "errors_socket": self.socket_errors, "requests": self.requests,
            "server_cpu_us_per_request": round(self.cpu_us_per_req, 2),
            "server_cpu_busy": round(self.server_cpu_busy, 3),
            "wrk_cpu_busy": round(self.wrk_cpu_busy, 3),
        })
    }
}

/// Runs `wrk args…` (pinned to `wrk_cpu` when given) to completion and measures the server
/// `server_pid` around it. `args` must load a script that ends with `report.lua`.
pub fn measure(wrk_cpu: Option<usize>, args: &[String], server_pid: u32) -> Sample {
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let cpu0 = cpu_seconds(server_pid);
    let stat0 = cpu_times();
    let output = command(wrk_cpu, Path::new("wrk"), &arg_refs)
        .output()
        .expect("run wrk");
    let cpu1 = cpu_seconds(server_pid);
    let stat1 = cpu_times();
    let busy = |cpu: usize| -> f64 {
        match (stat0.get(cpu), stat1.get(cpu)) {
            (Some(a), Some(b)) => {
                let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
                let total: f64 = d.iter().sum();
                // user nice system idle iowait irq softirq steal
                let busy = total - d[3] - d[4] - d.get(7).copied().unwrap_or(0.0);
                if total > 0.0 {
                    busy / total
                } else {
                    0.0
                }
            }
            _ => 0.0,
        }
    };
    let report = WrkReport::from_output(&output);
    Sample {
        rps: report.rps,
        p50_ms: report.p50_ms,
        p99_ms: report.p99_ms,
        p999_ms: report.p999_ms,
        non2xx: report.errors_status,
        socket_errors: report.errors_socket,
        requests: report.requests,
        cpu_us_per_req: report.cpu_us_per_req(cpu0, cpu1),
        server_cpu_busy: busy(SERVER_CPU),
        wrk_cpu_busy: busy(WRK_CPU),
    }
}

/// Waits (up to `limit`) until a server has stopped working: a server that answers slower than
/// the load comes still owes the requests queued when wrk stopped, and would spend them on the
/// next run's CPU (and on the other server's, when they share a core). Idle: less than one
/// clock tick of CPU in 200 ms.
pub fn settle(server_pid: u32, limit: Duration) {
    let start = Instant::now();
    let mut before = cpu_seconds(server_pid);
    while start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(200));
        let now = cpu_seconds(server_pid);
        if now - before < 0.015 {
            return;
        }
        before = now;
    }
}

/// Per-CPU jiffies from /proc/stat: `cpuN` lines, first 8 fields.
pub fn cpu_times() -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
    {
        let mut parts = line.split_whitespace();
        let Some(name) = parts.next() else { continue };
        if name.len() > 3 && name.starts_with("cpu") {
            out.push(parts.take(8).filter_map(|v| v.parse().ok()).collect());
        }
    }
    out
}

/// The median of each figure over several runs; errors and requests summed.
pub fn summarise(samples: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    Sample {
        rps: m(|s| s.rps),
        p50_ms: m(|s| s.p50_ms),
        p99_ms: m(|s| s.p99_ms),
        p999_ms: m(|s| s.p999_ms),
        cpu_us_per_req: m(|s| s.cpu_us_per_req),
        server_cpu_busy: m(|s| s.server_cpu_busy),
        wrk_cpu_busy: m(|s| s.wrk_cpu_busy),
        non2xx: samples.iter().map(|s| s.non2xx).sum(),
        socket_errors: samples.iter().map(|s| s.socket_errors).sum(),
        requests: samples.iter().map(|s| s.requests).sum(),
    }
}

/// Milliseconds with as many digits as they deserve.
pub fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}
