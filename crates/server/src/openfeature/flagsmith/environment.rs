//! A Flagsmith environment as an OpenFeature target: one snapshot read with one kind of key,
//! answering what `Target` asks of it (the caller's tag, one flag, every flag, the prepared
//! bulk pieces, the answer's metadata), and keeping the environment's usage counts.

use std::borrow::Cow;
use std::sync::Arc;

use flagpole_engine::{FlagResult, Identity};
use serde_json::{Map, Value};

use super::context::Input;
use super::{bulk, freshness, resolve};
use crate::keys::KeyKind;
use crate::openfeature::resolution::{failed, Resolution, Unevaluated};
use crate::openfeature::{tag, Encoded, Encoding};
use crate::snapshot::etag_memo::EtagMemo;
use crate::snapshot::Snapshot;
use crate::store::EnvSlot;
use crate::usage::Resource;
use flagpole_config::OfrepConfig;

/// One environment's snapshot, as a key of `kind` reads it.
pub(in crate::openfeature) struct Environment {
    pub kind: KeyKind,
    pub env: Arc<EnvSlot>,
    pub snapshot: Arc<Snapshot>,
    /// `ofrep.parse_json_strings`.
    pub parse_json_strings: bool,
}

impl Environment {
    /// Counts a call (with an identity as `/identities`, else as `/flags`).
    pub(in crate::openfeature) fn count(&self, identified: bool) {
        self.env.usage.count(if identified {
            Resource::Identities
        } else {
            Resource::Flags
        });
    }

    pub(in crate::openfeature) fn reject(&self) {
        self.env.usage.reject();
    }

    /// The answer's tag: everything a Flagsmith evaluation reads is the normalised identity.
    pub(in crate::openfeature) fn tag(
        &self,
        flag: Option<&str>,
        input: &Input<'_>,
        stale: bool,
        settings: &str,
    ) -> String {
        tag::environment(
            &self.snapshot.content_revision,
            self.kind,
            flag,
            stale,
            &input.normalised(),
            settings,
        )
    }

    pub(in crate::openfeature) fn memo_key(
        &self,
        flag: Option<&str>,
        stale: bool,
        body: &[u8],
    ) -> u128 {
        EtagMemo::key(self.kind, flag, stale, body)
    }

    pub(in crate::openfeature) fn recall(&self, key: u128) -> Option<(String, bool)> {
        self.snapshot.ofrep_etags.get(key)
    }

    pub(in crate::openfeature) fn remember(&self, key: u128, tag: &str, identified: bool) {
        self.snapshot.ofrep_etags.put(key, tag, identified);
    }

    /// Waits (bounded) for a revision the client says it has seen elsewhere, and reads it.
    pub(in crate::openfeature) async fn freshen(
        &mut self,
        query: Option<&str>,
        config: &OfrepConfig,
    ) {
        if let Some(fresher) = freshness::freshen(&self.env, &self.snapshot, query, config).await {
            self.snapshot = fresher;
        }
    }

    /// One flag: the feature alone for an identity, as the Flagsmith SDKs evaluate one flag
    /// read; a flag the key may not see is not found.
    pub(in crate::openfeature) fn one<R>(
        &self,
        key: &str,
        input: &Input<'_>,
        f: impl FnOnce(Resolution<'_>) -> R,
    ) -> Result<R, Unevaluated> {
        let snapshot = &self.snapshot;
        let traits = input.engine_traits();
        let identity = input.identifier.map(|id| Identity::new(id, &traits));
        let single;
        let all;
        let flag: Option<&FlagResult<'_>> = match &identity {
            Some(identity) => {
                single = snapshot
                    .env
                    .evaluate_feature(key, Some(identity))
                    .map_err(failed)?;
                single.as_ref()
            }
            None => {
                all = snapshot.env.own_flags().map_err(failed)?;
                all.flags.iter().find(|f| f.key == key)
            }
        };
        let flag = flag.filter(|f| snapshot.is_visible(self.kind, f.key, f.enabled));
        Ok(match flag {
            Some(flag) => f(self.resolve(flag)),
            // No metadata at all, as OFREP's failures for environments have always been.
            None => f(Resolution::not_found(
                key,
                format!("no flag named '{key}' in this environment"),
            )),
        })
    }

    /// Every flag the key may see, in key order (the first of a repeated name).
    pub(in crate::openfeature) fn each(
        &self,
        input: &Input<'_>,
        mut f: impl FnMut(Resolution<'_>),
    ) -> Result<(), Unevaluated> {
        self.with_flags(input, |flags| {
            let mut flags: Vec<_> = flags
                .iter()
                .filter(|f| self.snapshot.is_visible(self.kind, f.key, f.enabled))
                .collect();
            // Sorted by key so that equal inputs give byte-equal bodies.
            flags.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
            flags.dedup_by(|a, b| a.key == b.key);
            for flag in flags {
                f(self.resolve(flag));
            }
        })
    }

    /// The bulk answer's pieces, from the snapshot's prepared values where `E` is prepared.
    pub(in crate::openfeature) fn encoded<E: Encoding, R>(
        &self,
        input: &Input<'_>,
        stale: bool,
        f: impl FnOnce(&[Encoded<'_>]) -> R,
    ) -> Result<R, Unevaluated> {
        let options = bulk::Options {
            kind: self.kind,
            parse_json_strings: self.parse_json_strings,
            stale,
        };
        self.with_flags(input, |flags| {
            f(&bulk::pieces::<E>(&self.snapshot, flags, options))
        })
    }

    /// The revision (`version`) and when it was published (`lastModified`, Unix seconds).
    pub(in crate::openfeature) fn metadata(&self) -> Cow<'_, Map<String, Value>> {
        let mut map = Map::new();
        map.insert(
            "version".into(),
            Value::String(self.snapshot.content_revision.clone()),
        );
        if self.snapshot.updated_at_ms > 0 {
            map.insert(
                "lastModified".into(),
                (self.snapshot.updated_at_ms / 1000).into(),
            );
        }
        Cow::Owned(map)
    }

    fn resolve<'a>(&self, flag: &'a FlagResult<'a>) -> Resolution<'a> {
        let can_vary = self.snapshot.env.can_vary(flag.key);
        resolve(flag, self.kind, self.parse_json_strings, can_vary)
    }

    /// Every flag evaluated for the caller (no identity: the environment's own flags).
    fn with_flags<R>(
        &self,
        input: &Input<'_>,
        f: impl FnOnce(&[FlagResult<'_>]) -> R,
    ) -> Result<R, Unevaluated> {
        let traits = input.engine_traits();
        let identity = input.identifier.map(|id| Identity::new(id, &traits));
        let result = match &identity {
            Some(identity) => self.snapshot.env.evaluate(Some(identity)),
            None => self.snapshot.env.own_flags(),
        }
        .map_err(failed)?;
        Ok(f(&result.flags))
    }
}
