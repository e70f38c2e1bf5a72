//! A flag set as the front doors read it: one selector's flags (every source merged, one
//! source, or one `flagSetId`), compiled once per change, with what every door needs from it
//! prepared beside it (content revision, flagd's sync `flag_configuration` bytes, per-flag
//! fingerprints for change notices). Building every view happens here, when a source changes;
//! a request only looks one up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use flagpole_flagd::{DefinitionError, FlagSet};
use serde_json::{Map, Value};

use super::selector::Selector;

/// One selector's flags at one content revision. Immutable; replaced whole on a change.
#[derive(Debug)]
pub(crate) struct FlagView {
    /// The flags this selector picks, merged as flagd merges sources and compiled once.
    pub set: FlagSet,
    /// Content revision: SHA-256 of the canonical JSON of the flags (definitions and effective
    /// metadata) and set metadata, so equal on every replica serving the same definitions.
    pub revision: String,
    /// When the newest of its sources last changed content (Unix milliseconds).
    pub updated_at_ms: u64,
    /// The definitions as flagd's sync service sends them (`FetchAllFlags`/`SyncFlags`
    /// `flag_configuration`: `{"flags": {key: definition}}`, `$ref`s resolved, each flag's
    /// metadata merged over the set's), written once.
    #[allow(dead_code, reason = "flagd's sync service sends it")]
    pub configuration: Bytes,
    /// Indexes (configuration order) of the sources that contributed (tokens, status page).
    pub sources: Vec<usize>,
    /// Per flag: the SHA-256 of its canonical definition and metadata.
    fingerprints: HashMap<String, [u8; 32]>,
    /// The staleness of each polled source it reads; a switch needs no rebuild.
    stale: Vec<Arc<AtomicBool>>,
}

impl FlagView {
    /// True while any polled source this view reads is older than its poll period plus grace.
    pub(crate) fn stale(&self) -> bool {
        self.stale.iter().any(|s| s.load(Ordering::Relaxed))
    }

    /// The keys added, removed or changed since `older`, in key order.
    pub(crate) fn changed_keys<'a>(&'a self, older: &'a FlagView) -> Vec<&'a str> {
        let mut keys: Vec<&str> = self
            .fingerprints
            .iter()
            .filter(|(k, f)| older.fingerprints.get(*k) != Some(f))
            .map(|(k, _)| k.as_str())
            .chain(
                older
                    .fingerprints
                    .keys()
                    .filter(|k| !self.fingerprints.contains_key(*k))
                    .map(String::as_str),
            )
            .collect();
        keys.sort_unstable();
        keys
    }
}

/// One source's last good content, parsed and checked.
#[derive(Debug)]
pub(crate) struct SourceContent {
    /// The flag file as JSON.
    pub file: Value,
    /// When this content was first seen (Unix milliseconds).
    pub updated_at_ms: u64,
}

/// What view building reads of a source.
pub(crate) struct Input<'a> {
    pub names: &'a [String],
    pub content: Option<&'a SourceContent>,
    pub stale: &'a Arc<AtomicBool>,
}

/// Every view, by the canonical key of its selector.
#[derive(Debug, Default)]
pub(crate) struct Views {
    pub by_key: HashMap<String, Arc<FlagView>>,
    /// The selectors worth listing (status page, sync metadata), in a stable order.
    pub selectors: Vec<String>,
}

/// Checks a flag file: parsed and compiled, or why not (JSON path and message).
pub(crate) fn check(text: &str) -> Result<Value, DefinitionError> {
    let value: Value = serde_json::from_str(text).map_err(|e| DefinitionError {
        path: "$".into(),
        message: format!("not JSON: {e}"),
    })?;
    FlagSet::from_value(&value)?;
    Ok(value)
}

/// Every view of the loaded sources: all merged, one per source name, one per `flagSetId`.
/// Sources without content yet are left out; nothing loaded gives no view at all.
pub(crate) fn build(inputs: &[Input<'_>]) -> Views {
    // Compile each source once to learn its flags' resolved definitions and flag set ids.
    let compiled: Vec<Option<FlagSet>> = inputs
        .iter()
        .map(|i| i.content.and_then(|c| FlagSet::from_value(&c.file).ok()))
        .collect();
    let mut views = Views::default();
    if compiled.iter().all(Option::is_none) {
        return views;
    }
    let add = |views: &mut Views, selector: Selector, view: FlagView| {
        let key = selector.key();
        views.selectors.push(key.clone());
        views.by_key.insert(key, Arc::new(view));
    };
    add(
        &mut views,
        Selector::All,
        view_of(inputs, &compiled, None, |_, _| true),
    );
    for (index, input) in inputs.iter().enumerate() {
        if compiled[index].is_none() {
            continue;
        }
        let view = Arc::new(view_of(inputs, &compiled, Some(index), |i, _| i == index));
        for name in input.names {
            let key = Selector::Source(name.clone()).key();
            if !views.by_key.contains_key(&key) {
                views.selectors.push(key.clone());
                views.by_key.insert(key, view.clone());
            }
        }
    }
    let mut ids: Vec<String> = compiled
        .iter()
        .flatten()
        .flat_map(|set| set.flags().map(|f| flag_set_id(f.metadata()).to_owned()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let view = view_of(inputs, &compiled, None, |_, meta| flag_set_id(meta) == id);
        add(&mut views, Selector::FlagSetId(id), view);
    }
    views
}

/// A flag's effective `flagSetId` (flag metadata over set metadata); "" for none.
fn flag_set_id(metadata: &Map<String, Value>) -> &str {
    metadata
        .get("flagSetId")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The definitions as flagd's sync service sends them: no default variant is `""` (the
/// in-process resolvers read a null or absent one otherwise than flagd does), and each flag
/// names its `source`.
fn sync_configuration(mut flags: Map<String, Value>, source_of: &HashMap<String, &str>) -> Bytes {
    for (key, definition) in flags.iter_mut() {
        let Value::Object(o) = definition else {
            continue;
        };
        if !matches!(o.get("defaultVariant"), Some(Value::String(_))) {
            o.insert("defaultVariant".into(), Value::String(String::new()));
        }
        if let Some(source) = source_of.get(key) {
            o.insert("source".into(), Value::String((*source).to_owned()));
        }
    }
    let configuration = serde_json::json!({ "flags": flags });
    Bytes::from(serde_json::to_vec(&configuration).unwrap_or_default())
}

/// The view of the flags `pick(source index, effective metadata)` keeps, later sources winning.
fn view_of(
    inputs: &[Input<'_>],
    compiled: &[Option<FlagSet>],
    own: Option<usize>,
    pick: impl Fn(usize, &Map<String, Value>) -> bool,
) -> FlagView {
    let mut parts = Vec::new();
    // Each flag's source name (the later source wins, as in the merge), for the sync service.
    let mut source_of: HashMap<String, &str> = HashMap::new();
    let mut sources = Vec::new();
    let mut stale = Vec::new();
    let mut updated_at_ms = 0;
    for (index, set) in compiled.iter().enumerate() {
        let (Some(set), Some(content)) = (set, inputs[index].content) else {
            continue;
        };
        let flags: Map<String, Value> = set
            .flags()
            .filter(|f| pick(index, f.metadata()))
            .map(|f| (f.key().to_owned(), f.definition().clone()))
            .collect();
        // A source's own view keeps it even when empty: an empty file is still a set.
        if flags.is_empty() && own != Some(index) {
            continue;
        }
        let file = serde_json::json!({"flags": flags, "metadata": set.metadata()});
        // Definitions taken from a set that compiled compile again.
        if let Ok(part) = FlagSet::from_value(&file) {
            let name = inputs[index].names.first().map_or("", String::as_str);
            for flag in part.flags() {
                source_of.insert(flag.key().to_owned(), name);
            }
            parts.push(part);
            sources.push(index);
            stale.push(inputs[index].stale.clone());
            updated_at_ms = updated_at_ms.max(content.updated_at_ms);
        }
    }
    let set = FlagSet::merge(parts);
    let mut flags = Map::new();
    let mut fingerprints = HashMap::with_capacity(set.len());
    for flag in set.flags() {
        let mut definition = flag.definition().clone();
        if let Value::Object(o) = &mut definition {
            if flag.metadata().is_empty() {
                o.remove("metadata");
            } else {
                o.insert("metadata".into(), Value::Object(flag.metadata().clone()));
            }
        }
        fingerprints.insert(flag.key().to_owned(), crate::canonical::sha256(&definition));
        flags.insert(flag.key().to_owned(), definition);
    }
    let revision_input = serde_json::json!({"flags": flags, "metadata": set.metadata()});
    let revision = crate::canonical::hex(&crate::canonical::sha256(&revision_input), 32);
    let configuration = sync_configuration(flags, &source_of);
    FlagView {
        set,
        revision,
        updated_at_ms,
        configuration,
        sources,
        fingerprints,
        stale,
    }
}
