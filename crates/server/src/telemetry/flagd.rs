//! flagd calls in Prometheus. gRPC answers every call with HTTP 200 and puts its outcome in a
//! trailer, so the HTTP request table (`http`) cannot tell a resolved flag from an unknown one;
//! the flagd front door counts its calls here instead, by method and gRPC status code
//! (`flagpole_flagd_calls_total{method,code}`) with a latency histogram per method
//! (`flagpole_flagd_call_duration_seconds{method}`). As in `http`, the handles sit in a fixed
//! table registered on first use: a call costs an index computation and two atomic updates.

use std::sync::OnceLock;
use std::time::Instant;

use tonic::{Code, Status};

/// A flagd evaluation method (v1 and v2 count together: the same call in either version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    ResolveBoolean,
    ResolveString,
    ResolveInt,
    ResolveFloat,
    ResolveObject,
    ResolveAll,
    EventStream,
}

impl Method {
    const COUNT: usize = 7;

    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::ResolveBoolean => "resolve_boolean",
            Method::ResolveString => "resolve_string",
            Method::ResolveInt => "resolve_int",
            Method::ResolveFloat => "resolve_float",
            Method::ResolveObject => "resolve_object",
            Method::ResolveAll => "resolve_all",
            Method::EventStream => "event_stream",
        }
    }
}

impl Method {
    /// The method as flagd's services name it (`rpc.method`).
    pub(crate) fn rpc_name(self) -> &'static str {
        match self {
            Method::ResolveBoolean => "ResolveBoolean",
            Method::ResolveString => "ResolveString",
            Method::ResolveInt => "ResolveInt",
            Method::ResolveFloat => "ResolveFloat",
            Method::ResolveObject => "ResolveObject",
            Method::ResolveAll => "ResolveAll",
            Method::EventStream => "EventStream",
        }
    }
}

/// gRPC status codes 0–16 by number, as the `code` label.
const CODES: [&str; 17] = [
    "ok",
    "cancelled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
];

/// Handles for every method × code and a histogram per method, registered on first use.
struct Table {
    calls: [OnceLock<metrics::Counter>; Method::COUNT * CODES.len()],
    durations: [OnceLock<metrics::Histogram>; Method::COUNT],
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table {
        calls: std::array::from_fn(|_| OnceLock::new()),
        durations: std::array::from_fn(|_| OnceLock::new()),
    })
}

/// Counts one call that began at `started` and passes its outcome through (streams count when
/// opened, as the HTTP table counts them).
#[inline]
pub(crate) fn observed<T>(
    method: Method,
    started: Instant,
    outcome: Result<T, Status>,
) -> Result<T, Status> {
    let code = outcome.as_ref().map_or_else(Status::code, |_| Code::Ok) as usize;
    let code = code.min(CODES.len() - 1);
    let table = table();
    table.calls[method as usize * CODES.len() + code]
        .get_or_init(|| {
            let labels = [("method", method.name()), ("code", CODES[code])];
            metrics::counter!(super::FLAGD_CALLS, &labels)
        })
        .increment(1);
    table.durations[method as usize]
        .get_or_init(|| metrics::histogram!(super::FLAGD_DURATION, "method" => method.name()))
        .record(started.elapsed().as_secs_f64());
    if let Some(meters) = super::otel::meters::get() {
        meters.rpc(method.rpc_name(), code as i64, started.elapsed());
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_labelled_by_their_number() {
        assert_eq!(CODES[Code::Ok as usize], "ok");
        assert_eq!(CODES[Code::NotFound as usize], "not_found");
        assert_eq!(CODES[Code::InvalidArgument as usize], "invalid_argument");
        assert_eq!(CODES[Code::Unauthenticated as usize], "unauthenticated");
        assert_eq!(Method::EventStream as usize + 1, Method::COUNT);
    }
}
