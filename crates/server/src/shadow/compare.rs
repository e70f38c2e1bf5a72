//! Two identity answers compared per feature: the same features, each with the same `enabled`
//! and the same value of the same JSON type (`1`, `1.0` and `"1"` all differ). Pure.

use std::collections::BTreeMap;

use serde_json::Value;

/// One flag of an answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FlagState {
    pub enabled: Value,
    pub value: Value,
}

/// Longest value a log line shows (a flag value may be a whole JSON document).
const SHOWN_CHARS: usize = 200;

impl std::fmt::Display for FlagState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = self.value.to_string();
        match value.char_indices().nth(SHOWN_CHARS) {
            Some((cut, _)) => write!(f, "enabled={} value={}…", self.enabled, &value[..cut]),
            None => write!(f, "enabled={} value={value}", self.enabled),
        }
    }
}

/// A feature whose flag differs: `None` where a side has no such flag.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Difference {
    pub feature: String,
    pub ours: Option<FlagState>,
    pub theirs: Option<FlagState>,
}

/// The flags of an identities answer (`{"flags": [{"feature": {"name"}, "enabled",
/// "feature_state_value"}, …], …}`), by feature name.
pub(crate) fn flags_of(body: &[u8]) -> Result<BTreeMap<String, FlagState>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let flags = doc
        .get("flags")
        .and_then(Value::as_array)
        .ok_or("no \"flags\" array")?;
    let mut out = BTreeMap::new();
    for flag in flags {
        let name = flag
            .pointer("/feature/name")
            .and_then(Value::as_str)
            .ok_or("a flag without feature.name")?;
        out.insert(
            name.to_owned(),
            FlagState {
                enabled: flag.get("enabled").cloned().unwrap_or(Value::Null),
                value: flag
                    .get("feature_state_value")
                    .cloned()
                    .unwrap_or(Value::Null),
            },
        );
    }
    Ok(out)
}

/// Every feature whose flag differs, by name.
pub(crate) fn differences(
    ours: &BTreeMap<String, FlagState>,
    theirs: &BTreeMap<String, FlagState>,
) -> Vec<Difference> {
    let names: std::collections::BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (a, b) = (ours.get(name), theirs.get(name));
            (!same(a, b)).then(|| Difference {
                feature: name.clone(),
                ours: a.cloned(),
                theirs: b.cloned(),
            })
        })
        .collect()
}

/// Equal flags, numbers compared with their JSON type (serde_json keeps integers and floats
/// apart: `1 != 1.0`).
fn same(a: Option<&FlagState>, b: Option<&FlagState>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.enabled == b.enabled && a.value == b.value,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(flags: &[(&str, bool, &str)]) -> BTreeMap<String, FlagState> {
        let flags: Vec<String> = flags
            .iter()
            .map(|(n, e, v)| {
                format!(r#"{{"feature":{{"name":"{n}"}},"enabled":{e},"feature_state_value":{v}}}"#)
            })
            .collect();
        flags_of(format!(r#"{{"flags":[{}]}}"#, flags.join(",")).as_bytes()).unwrap()
    }

    #[test]
    fn equal_answers_have_no_difference() {
        let a = answer(&[("a", true, "1"), ("b", false, r#""x""#)]);
        assert!(differences(&a, &a.clone()).is_empty());
    }

    #[test]
    fn types_are_strict_and_missing_flags_differ() {
        let ours = answer(&[("a", true, "1"), ("b", true, "1"), ("c", true, "null")]);
        let theirs = answer(&[
            ("a", true, "1.0"),
            ("b", true, r#""1""#),
            ("d", true, "null"),
        ]);
        let names: Vec<_> = differences(&ours, &theirs)
            .into_iter()
            .map(|d| d.feature)
            .collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        let enabled = answer(&[("a", false, "1")]);
        assert_eq!(differences(&ours, &enabled).len(), 3);
    }

    #[test]
    fn bodies_without_flags_are_errors() {
        assert!(flags_of(b"[]").is_err());
        assert!(flags_of(b"{\"flags\":[{}]}").is_err());
        assert!(flags_of(b"<html>").is_err());
    }
}
