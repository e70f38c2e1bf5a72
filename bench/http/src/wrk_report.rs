//! The report our wrk Lua scripts print (`FLAGPOLE_WRK {json}` on stdout), read into numbers,
//! and the small statistics both benchmark drivers use (`http-bench`, `ofrep-bench`, `soak`).

use std::process::Output;

use serde_json::Value;

/// One wrk run, as its script reported it.
pub struct WrkReport {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub requests: u64,
    /// Responses with a status ≥ 400 (as wrk counts them).
    pub errors_status: u64,
    /// Connect, read, write and timeout errors.
    pub errors_socket: u64,
}

impl WrkReport {
    /// Reads the report line from a finished wrk; panics with wrk's output if there is none.
    pub fn from_output(output: &Output) -> WrkReport {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("FLAGPOLE_WRK "))
            .unwrap_or_else(|| {
                panic!(
                    "wrk printed no report: {stdout}\n{}",
                    String::from_utf8_lossy(&output.stderr)
                )
            });
        let v: Value = serde_json::from_str(line).expect("wrk report JSON");
        let n = |k: &str| v[k].as_f64().unwrap_or(0.0);
        let e = |k: &str| v["errors"][k].as_u64().unwrap_or(0);
        let requests = n("requests");
        WrkReport {
            rps: requests / (n("duration_us") / 1e6).max(1e-9),
            p50_ms: n("p50_us") / 1000.0,
            p99_ms: n("p99_us") / 1000.0,
            p999_ms: n("p999_us") / 1000.0,
            requests: requests as u64,
            errors_status: e("status"),
            errors_socket: e("connect") + e("read") + e("write") + e("timeout"),
        }
    }

    /// Server CPU microseconds per request, from the server's CPU seconds before and after.
    pub fn cpu_us_per_req(&self, cpu_before: f64, cpu_after: f64) -> f64 {
        if self.requests > 0 {
            (cpu_after - cpu_before) * 1e6 / self.requests as f64
        } else {
            0.0
        }
    }
}

pub fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}
