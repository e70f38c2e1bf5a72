//! What the HTTP benchmark drivers (`http-bench`, `peers-bench`, `ofrep-bench`, `soak`) share: a
//! small blocking HTTP client, child processes and /proc readings, the report our wrk scripts
//! print, a wrk run measured from outside, an open-loop driver for latency at a constant
//! rate, the command line every driver reads and the documents and Flagpole they set up.

pub mod args;
pub mod net;
pub mod open_loop;
pub mod procs;
pub mod setup;
pub mod wrk_report;
pub mod wrk_run;
