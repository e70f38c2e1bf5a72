//! Where environment documents come from: the upstream API (polled), local files (watched),
//! the snapshot directory (warm start), and a fleet's shared Redis (`fleet/`). Each source hands documents to
//! [`EnvSlot::publish`](crate::store::EnvSlot::publish), which keeps the last good one on failure.

pub mod discovery;
pub mod file_watcher;
pub mod fleet;
pub mod local_file;
pub mod poll_schedule;
pub mod startup;
pub mod upstream;
pub mod usage_report;
pub mod warm_start;
