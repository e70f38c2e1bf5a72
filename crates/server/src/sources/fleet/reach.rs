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
            // Under the lock, so that the gauge ends as the state does when tasks race.
            crate::telemetry::fleet::store_reachable(true);
            drop(state);
            tracing::info!(redis = %self.shown, "the fleet's Redis answers: environments polled once for the fleet");
        }
    }

    /// Redis did not answer (or refused the connection): `why`.
    pub(crate) fn failed(&self, why: &str) {
        let said = {
            let mut state = self.state.lock();
            if state.up == Some(true) {
                crate::telemetry::fleet::store_reachable(false);
            }
            state.failed(Instant::now())
        };
        let redis = &self.shown;
        match said {
            None => {}
            Some(Said::Lost) => {
                tracing::warn!(%redis, reason = %why, "the fleet's Redis does not answer: this replica polls upstream itself until it does")
            }
            Some(Said::Unreachable) => {
                tracing::warn!(%redis, reason = %why, "cannot reach the fleet's Redis: this replica polls upstream itself until it can")
            }
            Some(Said::Still) => {
                tracing::warn!(%redis, reason = %why, "the fleet's Redis still does not answer: this replica polls upstream itself until it does")
            }
        }
    }
}

/// What a failure is logged as, if at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    /// It answered before.
    Lost,
    /// It never answered since the start.
    Unreachable,
    /// A reminder, a minute or more after the last warning.
    Still,
}

impl State {
    /// A failure at `now`: what to log.
    fn failed(&mut self, now: Instant) -> Option<Said> {
        let was = self.up.replace(false);
        if self
            .warned
            .is_some_and(|t| now.duration_since(t) < REMIND_EVERY)
        {
            return None;
        }
        let first = self.warned.replace(now).is_none();
        Some(match (was, first) {
            (Some(true), _) => Said::Lost,
            (_, true) => Said::Unreachable,
            (_, false) => Said::Still,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Said, State, REMIND_EVERY};
    use std::time::{Duration, Instant};

    #[test]
    fn one_warning_then_a_reminder_a_minute_while_it_lasts() {
        let start = Instant::now();
        let mut state = State::default();
        assert_eq!(state.failed(start), Some(Said::Unreachable));
        for s in 1..60 {
            assert_eq!(state.failed(start + Duration::from_secs(s)), None);
        }
        assert_eq!(state.failed(start + REMIND_EVERY), Some(Said::Still));
        assert_eq!(
            state.failed(start + REMIND_EVERY + Duration::from_secs(1)),
            None
        );
    }

    #[test]
    fn losing_it_later_is_told_at_once() {
        let start = Instant::now();
        let mut state = State {
            up: Some(true),
            warned: None,
        };
        assert_eq!(state.failed(start), Some(Said::Lost));
        assert_eq!(state.failed(start + Duration::from_secs(5)), None);
    }
}
