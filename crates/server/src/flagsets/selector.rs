//! flagd's selector syntax, read once per request: `source=<name>`, `flagSetId=<id>` (empty:
//! the flags of no named set), or a bare `<name>`, which flagd reads as a source for backward
//! compatibility. Kept apart so every door (OFREP, gRPC, sync) reads selectors the same way.

/// What a selector picks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Selector {
    /// Every source merged (no selector, or an empty one).
    All,
    /// One source, by its name (its `uri` unless configured otherwise).
    Source(String),
    /// The flags whose effective `flagSetId` (flag metadata over set metadata) is this one;
    /// the empty string selects the flags of no named set.
    FlagSetId(String),
}

impl Selector {
    /// Reads a selector expression as flagd does; surrounding whitespace is ignored.
    pub(crate) fn parse(expression: Option<&str>) -> Selector {
        let Some(text) = expression.map(str::trim).filter(|t| !t.is_empty()) else {
            return Selector::All;
        };
        match text.split_once('=') {
            Some((key, value)) if key.trim() == "flagSetId" => {
                Selector::FlagSetId(value.trim().to_owned())
            }
            Some((key, value)) if key.trim() == "source" => {
                Selector::Source(value.trim().to_owned())
            }
            _ => Selector::Source(text.to_owned()),
        }
    }

    /// What flagd answers as a bulk evaluation's own `metadata` (and a missing flag's): the
    /// selector the call named, as one key and value; nothing without one.
    pub(crate) fn metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        match self {
            Selector::All => {}
            Selector::Source(name) => {
                map.insert("source".into(), name.clone().into());
            }
            Selector::FlagSetId(id) => {
                map.insert("flagSetId".into(), id.clone().into());
            }
        }
        map
    }

    /// The canonical spelling, the key views are kept under.
    pub(crate) fn key(&self) -> String {
        match self {
            Selector::All => String::new(),
            Selector::Source(name) => format!("source={name}"),
            Selector::FlagSetId(id) => format!("flagSetId={id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Selector;

    #[test]
    fn reads_flagd_selectors() {
        assert_eq!(Selector::parse(None), Selector::All);
        assert_eq!(Selector::parse(Some("  ")), Selector::All);
        assert_eq!(
            Selector::parse(Some("flagSetId=payments")),
            Selector::FlagSetId("payments".into())
        );
        assert_eq!(
            Selector::parse(Some("flagSetId=")),
            Selector::FlagSetId(String::new())
        );
        assert_eq!(
            Selector::parse(Some("source=flags/a.json")),
            Selector::Source("flags/a.json".into())
        );
        assert_eq!(
            Selector::parse(Some("a.json")),
            Selector::Source("a.json".into())
        );
        assert_eq!(
            Selector::parse(Some("https://x/f?a=b")),
            Selector::Source("https://x/f?a=b".into())
        );
        assert_eq!(Selector::parse(Some("source=x")).key(), "source=x");
        assert!(Selector::parse(None).metadata().is_empty());
        assert_eq!(
            serde_json::Value::Object(Selector::parse(Some("flagSetId=p")).metadata()),
            serde_json::json!({"flagSetId": "p"})
        );
    }
}
