//! Every environment's analytics counts, by client key. Looked up per analytics request under
//! a read lock (a write lock only the first time an environment reports); the forwarder and
//! the status page list them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::counts::{EnvCounts, Facts};
use super::request::Evaluations;
use flagpole_config::AnalyticsConfig;

pub(crate) struct Analytics {
    pub config: AnalyticsConfig,
    envs: RwLock<HashMap<String, Arc<EnvCounts>>>,
}

impl Analytics {
    pub(crate) fn new(config: AnalyticsConfig) -> Analytics {
        super::counts::describe();
        Analytics {
            config,
            envs: RwLock::new(HashMap::new()),
        }
    }

    /// Adds one request's counts to the environment of `client_key`; `upstream`: whether that
    /// environment has an upstream to forward them to.
    pub(crate) fn record(&self, client_key: &str, upstream: bool, counts: &Evaluations<'_>) {
        let env = self.envs.read().get(client_key).cloned();
        let env = env.unwrap_or_else(|| {
            self.envs
                .write()
                .entry(client_key.to_owned())
                .or_insert_with(|| Arc::new(EnvCounts::new(client_key, upstream)))
                .clone()
        });
        env.record(counts.iter(), self.config.max_pending_features);
    }

    /// The environments that have reported, in no particular order.
    pub(crate) fn environments(&self) -> Vec<Arc<EnvCounts>> {
        self.envs.read().values().cloned().collect()
    }

    /// Per environment, what the status page shows (sorted by fingerprint).
    pub(crate) fn facts(&self) -> Vec<Facts> {
        let mut facts: Vec<Facts> = self.environments().iter().map(|e| e.facts()).collect();
        facts.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        facts
    }
}
