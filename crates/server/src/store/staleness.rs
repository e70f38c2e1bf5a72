//! When an environment's document is stale, the one rule for it: a polled document whose last
//! successful update is older than the poll period plus the grace period per environment served
//! (`health_check.environment_update_grace_period_seconds`, the Edge Proxy's readiness rule).
//! Readiness judges it when asked; the store's judge keeps each environment's `stale` flag by
//! it, so that the OpenFeature front doors can say `STALE` for the price of one atomic load.
//!
//! The judge looks at every environment once a second, and at once when a stale environment
//! succeeds (its next successful poll makes it fresh without waiting). Each switch of the flag
//! is announced in the environment's revision cell (same content revision, `stale` flipped), so
//! the change streams that care tell their clients to drop what they cached: prepared bodies and
//! snapshots stay as they are.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{EnvSlot, Revision, Source, Store};
use flagpole_config::Config;

/// How often the judge looks when nothing wakes it.
const ROUND: Duration = Duration::from_secs(1);

/// The staleness rule's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StaleRule {
    poll: Duration,
    /// `None`: never stale.
    grace: Option<Duration>,
}

impl StaleRule {
    pub(crate) fn new(poll: Duration, grace: Option<Duration>) -> StaleRule {
        StaleRule { poll, grace }
    }

    /// The configured rule (`api_poll_frequency_seconds`, the grace period).
    pub(crate) fn of(config: &Config) -> StaleRule {
        StaleRule::new(config.upstream.poll_frequency, config.health.stale_grace)
    }

    /// The age past which a polled document is stale while `environments` are served (`None`:
    /// never).
    pub(crate) fn allowed(&self, environments: usize) -> Option<Duration> {
        let environments = u32::try_from(environments).unwrap_or(u32::MAX);
        self.grace
            .map(|grace| self.poll.saturating_add(grace.saturating_mul(environments)))
    }

    /// Whether `env`'s document is stale at `now`, `allowed` being [`StaleRule::allowed`]: a
    /// polled environment with a document whose last success is older than that. Local files
    /// and the bundled example never are; an environment without a document has nothing stale
    /// to serve.
    pub(crate) fn is_stale(env: &EnvSlot, now: SystemTime, allowed: Option<Duration>) -> bool {
        let (Some(allowed), Source::Upstream { .. }) = (allowed, &env.source) else {
            return false;
        };
        match env.last_success() {
            Some(at) if env.snapshot.load().is_some() => {
                now.duration_since(at).unwrap_or_default() > allowed
            }
            _ => false,
        }
    }
}

impl EnvSlot {
    /// Whether the document is stale now (as the judge last found it).
    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Acquire)
    }

    /// Sets the flag; a switch is announced in the revision cell. Returns whether it switched.
    fn set_stale(&self, stale: bool) -> bool {
        if self.stale.swap(stale, Ordering::AcqRel) == stale {
            return false;
        }
        self.revisions.send_if_modified(|latest| {
            // The flag read again under the cell's lock (a publish announces it the same way).
            let stale = self.is_stale();
            match latest {
                Some(current) if current.stale != stale => {
                    *latest = Some(Arc::new(Revision {
                        stale,
                        ..Revision::clone(current)
                    }));
                    true
                }
                _ => false,
            }
        });
        let environment = crate::keys::fingerprint(&self.client_key);
        if stale {
            tracing::warn!(%environment, "environment document stale: OpenFeature answers say STALE until an update succeeds");
        } else {
            tracing::info!(%environment, "environment document fresh again");
        }
        true
    }
}

impl Store {
    /// Judges every environment at `now` and sets its flag.
    pub(crate) fn judge_staleness(&self, rule: StaleRule, now: SystemTime) {
        let table = self.table.load();
        let allowed = rule.allowed(table.envs.len());
        for env in &table.envs {
            env.set_stale(StaleRule::is_stale(env, now, allowed));
        }
    }

    /// Keeps judging (every [`ROUND`], and when a stale environment succeeds) until the proxy
    /// shuts down. With no grace period nothing is ever stale, and it returns at once.
    pub(crate) async fn judge_staleness_until_shutdown(self: Arc<Self>, rule: StaleRule) {
        if rule.grace.is_none() {
            return;
        }
        loop {
            self.judge_staleness(rule, SystemTime::now());
            tokio::select! {
                () = tokio::time::sleep(ROUND) => {}
                () = self.judge.notified() => {}
                () = self.shutdown.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../../examples/environment.json");

    #[test]
    fn the_rule_is_the_poll_period_plus_the_grace_per_environment() {
        let rule = StaleRule::new(Duration::from_secs(10), Some(Duration::from_secs(30)));
        assert_eq!(rule.allowed(1), Some(Duration::from_secs(40)));
        assert_eq!(rule.allowed(3), Some(Duration::from_secs(100)));
        assert_eq!(
            StaleRule::new(Duration::from_secs(10), None).allowed(3),
            None
        );
    }

    #[tokio::test]
    async fn a_polled_document_goes_stale_and_back_and_each_switch_is_announced() {
        let store = Store::default();
        let polled = EnvSlot::new(
            "polled".into(),
            Source::Upstream {
                server_key: "ser.x".into(),
            },
        );
        let file = EnvSlot::new("file".into(), Source::File("f.json".into()));
        let added = store.add_all(vec![(polled, vec![]), (file, vec![])]);
        let rule = StaleRule::new(Duration::from_secs(1), Some(Duration::from_secs(1)));
        // Whole milliseconds, as the last success is kept.
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for env in &added {
            let document = crate::received::Incoming::Bytes(bytes::Bytes::from(
                EXAMPLE.replace("example_client_key", &env.client_key),
            ));
            env.publish(document).await.expect("published");
            env.mark_success(start);
        }
        let (polled, file) = (&added[0], &added[1]);
        let mut changes = polled.revisions.subscribe();
        changes.borrow_and_update();
        // Two environments: stale past 1 + 2 × 1 s.
        store.judge_staleness(rule, start + Duration::from_secs(3));
        assert!(!polled.is_stale() && !changes.has_changed().unwrap());
        store.judge_staleness(rule, start + Duration::from_millis(3001));
        assert!(polled.is_stale(), "past the rule");
        assert!(!file.is_stale(), "a local file is never stale");
        let announced = changes.borrow_and_update().clone().unwrap();
        assert!(announced.stale);
        assert_eq!(
            announced.content_revision,
            polled.snapshot().unwrap().content_revision
        );
        // Judged again: nothing new to announce.
        store.judge_staleness(rule, start + Duration::from_secs(5));
        assert!(!changes.has_changed().unwrap());
        // A success: fresh again, and the judge is woken for it.
        let now = start + Duration::from_secs(5);
        polled.mark_success(now);
        tokio::time::timeout(Duration::from_secs(5), store.judge.notified())
            .await
            .expect("the judge is woken");
        store.judge_staleness(rule, now);
        assert!(!polled.is_stale());
        assert!(!changes.borrow_and_update().clone().unwrap().stale);
    }
}
