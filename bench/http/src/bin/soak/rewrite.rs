//! The document rewriter of the soak: every `every` seconds (half an interval after each
//! sample, so each window holds one swap) the local document file gets a new value on its
//! first feature and a new `updated_at`, written to a temporary file and renamed over it (as
//! a deploy tool would), so the server's file watcher loads, builds and swaps a new snapshot.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Starts the rewriter thread; it returns the number of rewrites once `end` has passed.
pub(crate) fn start(
    path: PathBuf,
    mut doc: Value,
    every: Duration,
    start: Instant,
    end: Instant,
) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let tmp = path.with_extension("json.tmp");
        let mut n = 0u64;
        loop {
            let at = start + every / 2 + every * n as u32;
            if at >= end {
                return n;
            }
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            n += 1;
            doc["updated_at"] = Value::String(now_iso());
            if let Some(fs) = doc["feature_states"].get_mut(0) {
                fs["feature_state_value"] = Value::String(format!("soak-rewrite-{n}"));
            }
            std::fs::write(&tmp, serde_json::to_vec(&doc).expect("serialise")).expect("write");
            std::fs::rename(&tmp, &path).expect("rename");
        }
    })
}

/// Now as Flagsmith writes `updated_at`: `2026-11-01T12:00:00.000000Z`.
fn now_iso() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        now.subsec_micros()
    )
}
