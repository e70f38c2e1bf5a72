//! Where environment documents come from: the upstream API (polled), local files (watched),
//! the snapshot directory (warm start), and a fleet's shared Redis (`fleet/`). Each source hands documents to
//! [`EnvSlot::publish`](crate::store::EnvSlot::publish), which keeps the last good one on failure.

pub(crate) mod discovery;
pub(crate) mod file_watcher;
pub(crate) mod fleet;
pub(crate) mod local_file;
pub(crate) mod poll_schedule;
pub(crate) mod startup;
pub(crate) mod upstream;
pub(crate) mod usage_report;
pub(crate) mod warm_start;
