use super::*;
use flagpole_config::flags::FlagSource;

fn sorted(mut list: Vec<(String, Change)>) -> Vec<(String, &'static str)> {
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list.into_iter().map(|(k, c)| (k, c.as_str())).collect()
}

fn want(list: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    list.iter().map(|(k, t)| ((*k).to_owned(), *t)).collect()
}

fn prints(entries: &[(&str, u64, bool, bool)]) -> Fingerprints {
    Fingerprints(
        entries
            .iter()
            .map(|&(k, h, vary, client)| (k.to_owned(), (h, vary, client)))
            .collect(),
    )
}

#[test]
fn an_environment_names_what_changed_as_the_key_sees_it() {
    let before = prints(&[
        ("same", 1, false, true),
        ("changed", 1, false, true),
        ("gone", 1, false, true),
        ("targeted", 1, true, true),
        ("secret", 1, false, false),
    ]);
    let after = prints(&[
        ("same", 1, false, true),
        ("changed", 2, false, true),
        ("new", 1, false, true),
        ("targeted", 1, true, true),
        ("secret", 2, false, false),
    ]);
    assert_eq!(
        sorted(before.changed(&after, KeyKind::Server, false)),
        want(&[
            ("changed", "update"),
            ("gone", "delete"),
            ("new", "write"),
            ("secret", "update"),
            ("targeted", "update"),
        ])
    );
    assert_eq!(
        sorted(before.changed(&after, KeyKind::Client, false)),
        want(&[
            ("changed", "update"),
            ("gone", "delete"),
            ("new", "write"),
            ("targeted", "update"),
        ])
    );
    let only_secret = prints(&[("secret", 3, false, false)]);
    let before_secret = prints(&[("secret", 1, false, false)]);
    assert!(before_secret
        .changed(&only_secret, KeyKind::Client, false)
        .is_empty());
    // Nothing known before (that snapshot is gone): everything it sees is news.
    let all = Fingerprints::default().changed(&after, KeyKind::Client, false);
    assert_eq!(all.len(), 4, "{all:?}");
    // A stale switch: every flag the key sees, unchanged ones too.
    assert_eq!(
        sorted(after.changed(&after, KeyKind::Client, true)),
        want(&[
            ("changed", "update"),
            ("new", "update"),
            ("same", "update"),
            ("targeted", "update"),
        ])
    );
}

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

#[test]
fn a_flag_set_names_what_changed_in_it() {
    let sets = Arc::new(FlagSets::new(&[FlagSource::from_uri("a.json")]));
    let mut followed = FlagSetFollower::new(&sets, None);
    // Nothing loaded yet: nothing to tell.
    assert_eq!(sorted(followed.tell()), want(&[]));
    sets.publish(0, &file(&[("a", "1"), ("b", "1")])).unwrap();
    // The first view: every flag.
    assert_eq!(
        sorted(followed.tell()),
        want(&[("a", "write"), ("b", "write")])
    );
    assert_eq!(sorted(followed.tell()), want(&[]));
    sets.publish(0, &file(&[("a", "2"), ("c", "1")])).unwrap();
    assert_eq!(
        sorted(followed.tell()),
        want(&[("a", "update"), ("b", "delete"), ("c", "write")])
    );
    // Stale, then fresh: every flag, each time.
    sets.set_stale(0, true);
    assert_eq!(
        sorted(followed.tell()),
        want(&[("a", "update"), ("c", "update")])
    );
    sets.set_stale(0, false);
    assert_eq!(
        sorted(followed.tell()),
        want(&[("a", "update"), ("c", "update")])
    );
}
