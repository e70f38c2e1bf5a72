//! SDK flag analytics through the proxy. Every Flagsmith SDK with analytics on posts
//! `{"<feature name>": <evaluations>, …}` to `{api_url}analytics/flags/` every ~10 s; pointed at
//! Flagpole those counts would otherwise be lost. They are validated (`request`), added to the
//! environment's counts (`counts`: sharded maps, a lock held only for one map update, never
//! across I/O), and posted upstream the way an SDK would (`forward`), one request per
//! environment every `flagpole.analytics.flush_interval_seconds`, kept and merged across
//! failures within a bound, and flushed once more at shutdown. Environments without an upstream
//! (local files, the example) are counted and shown, not forwarded.

pub(crate) mod counts;
pub(crate) mod forward;
pub(crate) mod registry;
pub(crate) mod request;

pub(crate) use registry::Analytics;
