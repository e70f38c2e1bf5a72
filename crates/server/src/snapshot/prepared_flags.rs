//! Every flag object an identity's response can contain, written once per snapshot.
//!
//! A flag in an identities response, `{"feature":{…},"enabled":…,"feature_state_value":…}`,
//! depends on the caller only through which feature context (and which multivariate variant)
//! decided it. The engine lists those sources ([`Environment::value_sources`]); here each one's
//! object is serialised when the snapshot is built, so answering an identity copies prepared
//! slices into one buffer instead of serialising 50–200 flags through serde per request.

use flagpole_engine::{Environment, FlagResult, ValueSource};
use serde_json::Value;

use super::KeyKind;

/// One source's flag object and who may see it.
#[derive(Debug)]
struct PreparedFlag {
    /// The deciding context's name: the object is right for a flag of that name only (a
    /// document whose override is named unlike its feature takes the general path).
    name: std::ops::Range<u32>,
    bytes: std::ops::Range<u32>,
    /// Per [`KeyKind::index`]: whether a key of that kind sees the flag.
    visible: [bool; 2],
}

#[derive(Debug, Default)]
pub(crate) struct PreparedFlags {
    /// Per context, the index of its own value's entry in `flags`; its variants follow it.
    first: Vec<u32>,
    flags: Vec<Option<PreparedFlag>>,
    /// The names and objects, back to back.
    text: Vec<u8>,
}

impl PreparedFlags {
    /// Prepares every source's object with `write_flag(out, kind, name, enabled, value)`, the
    /// snapshot's writer of one flag (which returns whether a key of that kind sees it).
    pub(crate) fn build(
        env: &Environment,
        write_flag: impl Fn(&mut Vec<u8>, KeyKind, &str, &Value, &Value) -> bool,
    ) -> PreparedFlags {
        let mut prepared = PreparedFlags {
            first: vec![u32::MAX; env.context_count()],
            ..Default::default()
        };
        let (mut one, mut scratch) = (Vec::new(), Vec::new());
        for sourced in env.value_sources() {
            let ValueSource { context, variant } = sourced.source;
            let index = match variant {
                None => {
                    prepared.first[context] = len_u32(prepared.flags.len());
                    prepared.flags.len()
                }
                Some(v) => prepared.first[context] as usize + 1 + v,
            };
            // A malformed variant is not listed: its slot stays empty.
            prepared.flags.resize_with(index, || None);
            one.clear();
            scratch.clear();
            let (name, enabled, value) = (sourced.name, sourced.enabled, sourced.value);
            // The object is the same for both kinds; only whether it is shown differs.
            let server = write_flag(&mut one, KeyKind::Server, name, enabled, value);
            let client = write_flag(&mut scratch, KeyKind::Client, name, enabled, value);
            let mut visible = [false; 2];
            visible[KeyKind::Server.index()] = server;
            visible[KeyKind::Client.index()] = client;
            if !server && client {
                std::mem::swap(&mut one, &mut scratch);
            }
            let name = prepared.push_text(name.as_bytes());
            let bytes = prepared.push_text(&one);
            prepared.flags.push(Some(PreparedFlag {
                name,
                bytes,
                visible,
            }));
        }
        // Kept for the whole revision (and a proxy may hold thousands): no growth slack.
        prepared.flags.shrink_to_fit();
        prepared.text.shrink_to_fit();
        prepared
    }

    fn push_text(&mut self, bytes: &[u8]) -> std::ops::Range<u32> {
        let start = len_u32(self.text.len());
        self.text.extend_from_slice(bytes);
        start..len_u32(self.text.len())
    }

    fn slice(&self, range: &std::ops::Range<u32>) -> &[u8] {
        &self.text[range.start as usize..range.end as usize]
    }

    /// Appends the prepared object of this flag if the key kind sees it. `None` when nothing is
    /// prepared for it (the caller writes it the general way); `Some(wrote)` otherwise.
    pub(crate) fn write(
        &self,
        out: &mut Vec<u8>,
        kind: KeyKind,
        flag: &FlagResult<'_>,
    ) -> Option<bool> {
        let ValueSource { context, variant } = flag.source();
        let first = *self.first.get(context)?;
        let index = first.checked_add(u32::try_from(variant.map_or(0, |v| v + 1)).ok()?)?;
        let prepared = self.flags.get(index as usize)?.as_ref()?;
        if self.slice(&prepared.name) != flag.key.as_bytes() {
            return None;
        }
        if !prepared.visible[kind.index()] {
            return Some(false);
        }
        out.extend_from_slice(self.slice(&prepared.bytes));
        Some(true)
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).expect("a snapshot's prepared flags fit in 4 GiB")
}

#[cfg(test)]
mod tests {
    use flagpole_engine::python::number::PyInt;
    use flagpole_engine::{Identity, Trait, TraitValue};

    use super::super::Snapshot;
    use super::*;

    const EXAMPLE: &str = include_str!("../../../../examples/environment.json");

    /// The prepared objects are byte for byte what the general writer writes, for every flag of
    /// many identities (overrides, segments, multivariate variants), for both key kinds.
    #[test]
    fn prepared_objects_equal_the_general_writer() {
        let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        let snapshot = Snapshot::build(&doc, 1).unwrap();
        let mut prepared_hits = 0;
        for i in 0..400 {
            let identifier = if i == 0 {
                "vip-customer".to_owned()
            } else {
                format!("user-{i}")
            };
            let plan = ["free", "pro", "enterprise"][i % 3];
            let text = |key: &'static str, value: &'static str| Trait {
                key: key.into(),
                value: TraitValue::Str(value.into()),
            };
            let traits = [
                text("plan", plan),
                text("country", ["GB", "US", "DE"][i % 3]),
                Trait {
                    key: "seats".into(),
                    value: TraitValue::Int(PyInt::Small(i as i64 % 40)),
                },
            ];
            let identity = Identity::new(&identifier, &traits);
            let result = snapshot.env.evaluate(Some(&identity)).unwrap();
            for kind in [KeyKind::Server, KeyKind::Client] {
                for flag in &result.flags {
                    let (mut fast, mut general) = (Vec::new(), Vec::new());
                    let wrote = snapshot.prepared.write(&mut fast, kind, flag);
                    let general_wrote =
                        snapshot.write_flag(&mut general, kind, flag.key, flag.enabled, flag.value);
                    if let Some(wrote) = wrote {
                        prepared_hits += 1;
                        assert_eq!(wrote, general_wrote, "{} for {identifier}", flag.key);
                        assert_eq!(fast, general, "{} for {identifier}", flag.key);
                    }
                }
            }
        }
        assert!(prepared_hits > 0);
    }
}
