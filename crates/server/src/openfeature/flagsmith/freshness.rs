//! The freshness hints an OFREP client sends with a bulk evaluation: what it has seen, through a
//! stream held by another replica, of a revision this one may not have yet.

use std::sync::Arc;

use crate::snapshot::Snapshot;
use crate::store::EnvSlot;
use flagpole_config::OfrepConfig;

/// `flagConfigLastModified` / `flagConfigEtag`: the client has seen, through
/// a stream held by another replica, a revision this one may not have yet. A newer
/// `flagConfigLastModified` makes this replica fetch now and wait (bounded) for it; an unknown
/// `flagConfigEtag` alone only starts the fetch. Never a cause of a 304, never an error: the
/// answer is whatever is current when the wait ends.
pub(in crate::openfeature) async fn freshen(
    env: &Arc<EnvSlot>,
    snapshot: &Arc<Snapshot>,
    query: Option<&str>,
    config: &OfrepConfig,
) -> Option<Arc<Snapshot>> {
    let query = query?;
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let ours = snapshot.updated_at_ms / 1000;
    let newer = param("flagConfigLastModified")
        .and_then(|v| parse_last_modified(&v))
        .is_some_and(|theirs| theirs > ours);
    if !newer {
        if param("flagConfigEtag")
            .is_some_and(|etag| etag.trim_matches('"') != snapshot.content_revision)
        {
            env.request_refresh();
        }
        return None;
    }
    let mut changes = env.revisions.subscribe();
    if !env.request_refresh() && !matches!(env.source, crate::store::Source::Upstream { .. }) {
        return None; // a local document is never behind
    }
    let wait = std::time::Duration::from_millis(config.freshness_wait_ms);
    let _ = tokio::time::timeout(wait, async {
        while changes.changed().await.is_ok() {
            let current = changes.borrow_and_update().clone();
            if current.is_some_and(|c| c.updated_at_ms / 1000 > ours) {
                break;
            }
        }
    })
    .await;
    env.snapshot()
}

/// Unix seconds, or an RFC 3339 time.
fn parse_last_modified(text: &str) -> Option<u64> {
    if let Ok(seconds) = text.trim().parse::<u64>() {
        return Some(seconds);
    }
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .and_then(|t| u64::try_from(t.timestamp()).ok())
}
