//! What the HTTP benchmark drivers (`http-bench`, `ofrep-bench`, `soak`) share: a small blocking
//! HTTP client, child processes and /proc readings, and the report our wrk scripts print.

pub mod net;
pub mod procs;
pub mod wrk_report;
