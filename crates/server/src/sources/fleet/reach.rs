//! Whether the fleet's Redis answers, and what the log says about it. An operator must learn
//! that Redis cannot be reached (a wrong address, a refused password) from the log, not only
//! from a gauge: the first failure is logged at WARN with the redacted URL and the reason,
//! whether Redis never answered since the start or stopped answering later, and while it lasts
//! a reminder follows at most once a minute. Its coming back is logged once.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// At most one reminder this often while Redis does not answer.
const REMIND_EVERY: Duration = Duration::from_secs(60);

pub(crate) struct Reach {
    /// Where Redis is, as logs may show it (passwords redacted).
    shown: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// `None` until the first answer or failure.
    up: Option<bool>,
    /// The last warning about Redis not answering.
    warned: Option<Instant>,
}

impl Reach {
    pub(crate) fn new(shown: String) -> Reach {
        Reach {
            shown,
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn up(&self) -> bool {
        self.state.lock().up == Some(true)
    }

    /// Redis answered.
    pub(crate) fn answered(&self) {
        let mut state = self.state.lock();
        if state.up != Some(true) {
            state.up = Some(true);
            state.warned = None;
            drop(state);
            crate::telemetry::fleet::store_reachable(true);
            tracing::info!(redis = %self.shown, "the fleet's Redis answers: environments polled once for the fleet");
        }
    }

    /// Redis did not answer (or refused the connection): `why`.
    pub(crate) fn failed(&self, why: &str) {
        let mut state = self.state.lock();
        let was = state.up.replace(false);
        if was == Some(true) {
            crate::telemetry::fleet::store_reachable(false);
        }
        let now = Instant::now();
        if state
            .warned
            .is_some_and(|t| now.duration_since(t) < REMIND_EVERY)
        {
            return;
        }
        let first = state.warned.is_none();
        state.warned = Some(now);
        drop(state);
        let redis = &self.shown;
        match (was, first) {
            (Some(true), _) => {
                tracing::warn!(%redis, reason = %why, "the fleet's Redis does not answer: this replica polls upstream itself until it does")
            }
            (_, true) => {
                tracing::warn!(%redis, reason = %why, "cannot reach the fleet's Redis: this replica polls upstream itself until it can")
            }
            (_, false) => {
                tracing::warn!(%redis, reason = %why, "the fleet's Redis still does not answer: this replica polls upstream itself until it does")
            }
        }
    }
}
