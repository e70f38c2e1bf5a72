//! `EventStream` of a flag set: `provider_ready`, then a `configuration_change` naming every
//! flag of the set (a reconnecting provider may hold answers from before), then one naming the
//! keys added (`write`), removed (`delete`) or changed (`update`) on each new view of the
//! stream's selector (`FlagView::changed_keys`), every flag when the set turns stale or fresh
//! (each answer's reason changes), `keep_alive` between them and `UNAVAILABLE` at shutdown, as
//! the environments' streams do.

use std::sync::Arc;
use std::time::Duration;

use prost_types::Struct;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::notice;
use crate::flagsets::{FlagSets, FlagView};

/// A stream's flag set and what it last told of it.
pub(in crate::flagd) struct Followed {
    sets: Arc<FlagSets>,
    selector: Option<String>,
    changes: watch::Receiver<u64>,
    told: Option<(Arc<FlagView>, bool)>,
}

impl Followed {
    pub(in crate::flagd) fn new(sets: &Arc<FlagSets>, selector: Option<String>) -> Followed {
        Followed {
            sets: sets.clone(),
            selector,
            changes: sets.subscribe(),
            told: None,
        }
    }

    /// The notice for the current view, if it names anything.
    fn tell(&mut self) -> Option<Struct> {
        self.changes.borrow_and_update();
        let now = self.sets.view(self.selector.as_deref());
        let stale = now.as_ref().is_some_and(|v| v.stale());
        let told = self.told.take();
        self.told = now.clone().map(|v| (v, stale));
        changes(
            told.as_ref().map(|(v, s)| (&**v, *s)),
            now.as_deref(),
            stale,
        )
    }
}

/// What changed from `told` (the view last told and whether it was stale) to `now`.
fn changes(told: Option<(&FlagView, bool)>, now: Option<&FlagView>, stale: bool) -> Option<Struct> {
    let keys =
        |view: &FlagView| -> Vec<String> { view.set.flags().map(|f| f.key().to_owned()).collect() };
    let named: Vec<(String, &'static str)> = match (told, now) {
        (None, None) => return None,
        (None, Some(now)) => keys(now).into_iter().map(|k| (k, "write")).collect(),
        (Some((told, _)), None) => keys(told).into_iter().map(|k| (k, "delete")).collect(),
        (Some((told, told_stale)), Some(now)) if told_stale != stale => {
            let mut named: Vec<(String, &str)> =
                keys(now).into_iter().map(|k| (k, "update")).collect();
            let gone = keys(told).into_iter().filter(|k| now.set.get(k).is_none());
            named.extend(gone.map(|k| (k, "delete")));
            named
        }
        (Some((told, _)), Some(now)) => now
            .changed_keys(told)
            .into_iter()
            .map(|key| {
                let change = match (told.set.get(key).is_some(), now.set.get(key).is_some()) {
                    (false, _) => "write",
                    (true, false) => "delete",
                    (true, true) => "update",
                };
                (key.to_owned(), change)
            })
            .collect(),
    };
    notice(named.iter().map(|(k, c)| (k.as_str(), *c)))
}

/// The stream's life; `Err` is the status it ends with, `Ok` that the caller left.
pub(in crate::flagd) async fn run<T, F>(
    tx: &mpsc::Sender<Result<T, Status>>,
    mut set: Followed,
    stopping: &CancellationToken,
    keep_alive: Duration,
    message: &F,
) -> Result<(), Status>
where
    F: Fn(&str, Option<Struct>) -> T + Sync,
{
    let send = |event| async move { tx.send(Ok(event)).await.is_ok() };
    if !send(message("provider_ready", None)).await {
        return Ok(());
    }
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    loop {
        if let Some(data) = set.tell() {
            if !send(message("configuration_change", Some(data))).await {
                return Ok(());
            }
        }
        tokio::select! {
            biased;
            () = stopping.cancelled() => {
                return Err(Status::unavailable("the proxy is shutting down: reconnect"));
            }
            () = tx.closed() => return Ok(()),
            changed = set.changes.changed() => {
                if changed.is_err() {
                    return Err(Status::unavailable("the flag sets are no longer served: reconnect"));
                }
            }
            _ = ticks.tick() => {
                if !send(message("keep_alive", None)).await {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::flags::FlagSource;

    fn file(flags: &[(&str, &str)]) -> String {
        let flags: Vec<String> = flags
            .iter()
            .map(|(key, value)| {
                format!(
                    r#""{key}": {{"state": "ENABLED", "variants": {{"v": "{value}"}}, "defaultVariant": "v"}}"#
                )
            })
            .collect();
        format!(r#"{{"flags": {{{}}}}}"#, flags.join(","))
    }

    /// The flags a notice names, with their kind of change.
    fn named(notice: Option<Struct>) -> Vec<(String, String)> {
        use prost_types::value::Kind;
        let Some(notice) = notice else {
            return Vec::new();
        };
        let Some(Kind::StructValue(flags)) = notice.fields["flags"].kind.clone() else {
            panic!("{notice:?}")
        };
        flags
            .fields
            .into_iter()
            .map(|(key, value)| match value.kind {
                Some(Kind::StructValue(s)) => match &s.fields["type"].kind {
                    Some(Kind::StringValue(t)) => (key, t.clone()),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, c)| ((*k).to_owned(), (*c).to_owned()))
            .collect()
    }

    #[test]
    fn notices_name_what_changed_in_the_set() {
        let sets = Arc::new(FlagSets::new(&[FlagSource::from_uri("a.json")]));
        let mut followed = Followed::new(&sets, None);
        // Nothing loaded yet: nothing to tell.
        assert_eq!(named(followed.tell()), pairs(&[]));
        sets.publish(0, &file(&[("a", "1"), ("b", "1")])).unwrap();
        // The first view: every flag.
        assert_eq!(
            named(followed.tell()),
            pairs(&[("a", "write"), ("b", "write")])
        );
        assert_eq!(named(followed.tell()), pairs(&[]));
        sets.publish(0, &file(&[("a", "2"), ("c", "1")])).unwrap();
        assert_eq!(
            named(followed.tell()),
            pairs(&[("a", "update"), ("b", "delete"), ("c", "write")])
        );
        // Stale, then fresh: every flag, each time.
        sets.set_stale(0, true);
        assert_eq!(
            named(followed.tell()),
            pairs(&[("a", "update"), ("c", "update")])
        );
        sets.set_stale(0, false);
        assert_eq!(
            named(followed.tell()),
            pairs(&[("a", "update"), ("c", "update")])
        );
    }

    #[test]
    fn a_selector_follows_its_own_set() {
        let sets = Arc::new(FlagSets::new(&[
            FlagSource::from_uri("a.json"),
            FlagSource::from_uri("b.json"),
        ]));
        let mut only_b = Followed::new(&sets, Some("source=b.json".to_owned()));
        sets.publish(0, &file(&[("a", "1")])).unwrap();
        sets.publish(1, &file(&[("b", "1")])).unwrap();
        assert_eq!(named(only_b.tell()), pairs(&[("b", "write")]));
        sets.publish(0, &file(&[("a", "2")])).unwrap();
        assert_eq!(named(only_b.tell()), pairs(&[]));
    }
}
