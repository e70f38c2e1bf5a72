//! Per value source (a feature context, or one of its variants: what decides a flag's `enabled`
//! and `value`), what a front door writes for a flag it decides, prepared once per snapshot
//! together with the facts that otherwise take lookups by name per flag: whether each kind of
//! key sees the flag, whether its feature can vary ([`Environment::can_vary`]) and its place
//! among the features sorted by name.
//!
//! The flagd front door's `ResolveAll` keeps each flag's encoded value here (`flagd/all`):
//! an answer copies prepared bytes and finds the rest by index instead of converting values and
//! hashing each flag's name per request. The bytes are the front door's own; this table only
//! holds them. Written on the first call that needs it (an environment nobody asks this way
//! holds nothing), then for every later revision while it is built ([`Snapshot::write_like`]).
//!
//! [`Environment::can_vary`]: flagpole_engine::Environment::can_vary

use std::ops::Range;

use flagpole_engine::{FlagResult, SourcedValue, ValueSource};

use super::{KeyKind, Snapshot};

/// Writes one source's bytes: `(out, source, setting)`, the setting being the front door's
/// (it is kept with the table so that the next revision is written the same way).
pub(crate) type Writer = fn(&mut Vec<u8>, &SourcedValue<'_>, bool);

#[derive(Debug)]
struct Entry {
    /// The deciding context's name: the entry is right for a flag of that name only.
    name: Range<u32>,
    bytes: Range<u32>,
    /// Per [`KeyKind::index`].
    visible: [bool; 2],
    can_vary: bool,
    rank: u32,
}

/// What the table knows of one flag.
#[derive(Clone, Copy, Debug)]
pub struct Prepared<'a> {
    /// The front door's bytes for the flag's source.
    pub bytes: &'a [u8],
    /// Whether some caller could get another answer (`STATIC` is only for one nobody can).
    pub can_vary: bool,
    /// The flag's place among the environment's feature names sorted bytewise.
    pub rank: u32,
}

#[derive(Debug)]
pub struct BySource {
    /// Per context, the index of its own value's entry in `entries`; its variants follow it.
    first: Box<[u32]>,
    entries: Box<[Option<Entry>]>,
    /// Names and bytes, back to back.
    text: Box<[u8]>,
    /// The feature names sorted bytewise (distinct), as ranges of `text`.
    sorted: Box<[Range<u32>]>,
    writer: Writer,
    setting: bool,
}

impl BySource {
    /// Prepares every source of `snapshot`'s environment with `writer`.
    pub fn build(snapshot: &Snapshot, writer: Writer, setting: bool) -> BySource {
        let env = &snapshot.env;
        let mut text = Vec::new();
        let push = |text: &mut Vec<u8>, bytes: &[u8]| {
            let start = len_u32(text.len());
            text.extend_from_slice(bytes);
            start..len_u32(text.len())
        };
        // Ranks: feature names sorted bytewise; `rank_of` by index in `snapshot.features`.
        let mut names: Vec<(&str, usize)> = snapshot
            .feature_index
            .iter()
            .map(|(name, &i)| (name.as_str(), i))
            .collect();
        names.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut rank_of = vec![0u32; snapshot.features.len()];
        let mut sorted = Vec::with_capacity(names.len());
        for (rank, (name, index)) in names.iter().enumerate() {
            rank_of[*index] = len_u32(rank);
            sorted.push(push(&mut text, name.as_bytes()));
        }
        let mut first = vec![u32::MAX; env.context_count()];
        let mut entries: Vec<Option<Entry>> = Vec::new();
        let mut one = Vec::new();
        for sourced in env.value_sources() {
            let ValueSource { context, variant } = sourced.source;
            let index = match variant {
                None => {
                    first[context] = len_u32(entries.len());
                    entries.len()
                }
                Some(v) => first[context] as usize + 1 + v,
            };
            // A malformed variant is not listed: its slot stays empty.
            entries.resize_with(index, || None);
            let Some(&feature) = snapshot.feature_index.get(sourced.name) else {
                entries.push(None);
                continue;
            };
            one.clear();
            writer(&mut one, &sourced, setting);
            let mut visible = [false; 2];
            for kind in [KeyKind::Server, KeyKind::Client] {
                visible[kind.index()] = snapshot.is_visible(kind, sourced.name, sourced.enabled);
            }
            entries.push(Some(Entry {
                name: push(&mut text, sourced.name.as_bytes()),
                bytes: push(&mut text, &one),
                visible,
                can_vary: env.can_vary(sourced.name),
                rank: rank_of[feature],
            }));
        }
        BySource {
            first: first.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
            text: text.into_boxed_slice(),
            sorted: sorted.into_boxed_slice(),
            writer,
            setting,
        }
    }

    /// Whether the table was written with this setting.
    pub fn has_setting(&self, setting: bool) -> bool {
        self.setting == setting
    }

    fn slice(&self, range: &Range<u32>) -> &[u8] {
        &self.text[range.start as usize..range.end as usize]
    }

    /// The flag as prepared: `None` when nothing is (the caller takes the general way),
    /// `Some(None)` when a key of this kind does not see it.
    pub fn get(&self, kind: KeyKind, flag: &FlagResult<'_>) -> Option<Option<Prepared<'_>>> {
        let ValueSource { context, variant } = flag.source();
        let first = *self.first.get(context)?;
        let index = first.checked_add(u32::try_from(variant.map_or(0, |v| v + 1)).ok()?)?;
        let entry = self.entries.get(index as usize)?.as_ref()?;
        if self.slice(&entry.name) != flag.key.as_bytes() {
            return None;
        }
        Some(entry.visible[kind.index()].then(|| Prepared {
            bytes: self.slice(&entry.bytes),
            can_vary: entry.can_vary,
            rank: entry.rank,
        }))
    }

    /// The place of a feature name among the sorted names (`None`: not a feature here).
    pub fn rank(&self, name: &str) -> Option<u32> {
        self.sorted
            .binary_search_by(|r| self.slice(r).cmp(name.as_bytes()))
            .ok()
            .map(len_u32)
    }

    /// How many distinct feature names there are (ranks are below it).
    pub fn names(&self) -> usize {
        self.sorted.len()
    }

    /// This table's writer and setting, for the next revision.
    pub fn how(&self) -> (Writer, bool) {
        (self.writer, self.setting)
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).expect("a snapshot's prepared sources fit in 4 GiB")
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    const EXAMPLE: &str = include_str!("../../../../examples/environment.json");

    /// Writes the source's value as JSON: enough to tell sources apart.
    fn writer(out: &mut Vec<u8>, source: &SourcedValue<'_>, _: bool) {
        crate::json::write(out, source.value);
    }

    #[test]
    fn written_on_first_use_carried_to_the_next_revision_and_found_by_index() {
        let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        let first = Snapshot::build(&doc, 1).unwrap();
        let next = Snapshot::build(&doc, 2).unwrap();
        next.write_like(&first);
        assert!(next.by_source.get().is_none(), "nothing before a call asks");
        let table = first.by_source(writer, true);
        let result = first.env.own_flags().unwrap();
        let mut ranks = Vec::new();
        for flag in &result.flags {
            let prepared = table
                .get(KeyKind::Server, flag)
                .expect("prepared")
                .expect("shown");
            assert_eq!(
                prepared.bytes,
                crate::json::to_vec(flag.value),
                "{}",
                flag.key
            );
            assert_eq!(
                prepared.can_vary,
                first.env.can_vary(flag.key),
                "{}",
                flag.key
            );
            assert_eq!(Some(prepared.rank), table.rank(flag.key), "{}", flag.key);
            ranks.push((flag.key, prepared.rank));
            let client = table.get(KeyKind::Client, flag).expect("prepared");
            assert_eq!(
                client.is_some(),
                first.is_visible(KeyKind::Client, flag.key, flag.enabled)
            );
        }
        ranks.sort_by_key(|(_, rank)| *rank);
        assert!(
            ranks.windows(2).all(|w| w[0].0 < w[1].0),
            "ranks follow names: {ranks:?}"
        );
        // The next revision, built after a call asked, is written with the same writer.
        let third = Snapshot::build(&doc, 3).unwrap();
        third.write_like(&first);
        let carried = third.by_source.get().expect("written while built");
        assert!(carried.has_setting(true) && !carried.has_setting(false));
    }
}
