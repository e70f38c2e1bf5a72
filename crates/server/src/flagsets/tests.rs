use super::*;
use flagpole_config::flags::FlagSource;

fn sets(n: usize) -> FlagSets {
    let sources: Vec<FlagSource> = (0..n)
        .map(|i| FlagSource::from_uri(format!("f{i}.json")))
        .collect();
    FlagSets::new(&sources)
}

const A: &str = r#"{"metadata": {"team": "a", "flagSetId": "alpha"}, "flags": {
    "shared": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"},
    "only-a": {"state": "ENABLED", "variants": {"x": "a"}, "defaultVariant": "x",
               "metadata": {"flagSetId": "beta"}}}}"#;
const B: &str = r#"{"metadata": {"team": "b"}, "flags": {
    "shared": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off"},
    "only-b": {"state": "DISABLED", "variants": {"x": 1}, "defaultVariant": "x"}}}"#;

fn keys(view: &FlagView) -> Vec<&str> {
    view.set.flags().map(|f| f.key()).collect()
}

#[test]
fn nothing_loaded_no_view() {
    let s = sets(1);
    assert!(s.is_configured());
    assert!(s.view(None).is_none());
    assert_eq!(s.admit(None, None), Err(Refused::UnknownSelector));
    assert!(!FlagSets::new(&[]).is_configured());
}

#[test]
fn later_source_wins_and_selectors_pick() {
    let s = sets(2);
    assert!(s.publish(0, A).unwrap());
    assert!(s.publish(1, B).unwrap());
    let all = s.view(None).unwrap();
    assert_eq!(keys(&all), ["only-a", "only-b", "shared"]);
    // B is later: its `shared` wins, with B's set metadata under it.
    let shared = all.set.get("shared").unwrap();
    assert_eq!(shared.default_variant(), Some("off"));
    assert_eq!(shared.metadata()["team"], "b");
    assert_eq!(
        keys(&s.view(Some("source=f0.json")).unwrap()),
        ["only-a", "shared"]
    );
    assert_eq!(
        keys(&s.view(Some("f1.json")).unwrap()),
        ["only-b", "shared"]
    );
    // flagSetId: the flag's own over the set's; "" is the flags of no named set.
    assert_eq!(keys(&s.view(Some("flagSetId=alpha")).unwrap()), ["shared"]);
    assert_eq!(keys(&s.view(Some("flagSetId=beta")).unwrap()), ["only-a"]);
    assert_eq!(
        keys(&s.view(Some("flagSetId=")).unwrap()),
        ["only-b", "shared"]
    );
    assert!(s.view(Some("flagSetId=nope")).is_none());
    assert!(s.view(Some("source=nope")).is_none());
    let selectors = s.selectors();
    assert!(selectors.contains(&String::new()));
    assert!(selectors.contains(&"flagSetId=alpha".to_owned()));
}

#[test]
fn equal_content_is_no_change_and_revisions_are_stable() {
    let s = sets(1);
    assert!(s.publish(0, A).unwrap());
    let first = s.view(None).unwrap();
    let rx = s.subscribe();
    let before = *rx.borrow();
    // The same definitions, spelt differently: no new views.
    let respelt =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(A).unwrap())
            .unwrap();
    assert!(!s.publish(0, &respelt).unwrap());
    assert_eq!(*rx.borrow(), before);
    let other = sets(1);
    other.publish(0, A).unwrap();
    assert_eq!(other.view(None).unwrap().revision, first.revision);
    assert_eq!(first.revision.len(), 64);
}

#[test]
fn broken_file_keeps_the_last_good_set() {
    let s = sets(1);
    s.publish(0, A).unwrap();
    let error = s
        .publish(0, r#"{"flags": {"x": {"state": "ON", "variants": {}}}}"#)
        .unwrap_err();
    assert_eq!(error.path, "$.flags.x.state");
    assert_eq!(keys(&s.view(None).unwrap()), ["only-a", "shared"]);
    assert_eq!(s.sources[0].refused.load(Ordering::Relaxed), 1);
    assert!(s.sources[0]
        .last_error
        .lock()
        .as_deref()
        .unwrap()
        .contains("$.flags.x.state"));
}

#[test]
fn changed_keys_names_added_removed_and_changed() {
    let s = sets(1);
    s.publish(0, A).unwrap();
    let old = s.view(None).unwrap();
    s.publish(
        0,
        r#"{"metadata": {"team": "a", "flagSetId": "alpha"}, "flags": {
        "shared": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off"},
        "new": {"state": "ENABLED", "variants": {"x": 1}, "defaultVariant": "x"}}}"#,
    )
    .unwrap();
    let new = s.view(None).unwrap();
    assert_eq!(new.changed_keys(&old), ["new", "only-a", "shared"]);
    assert!(new.changed_keys(&new).is_empty());
}

#[test]
fn configuration_is_flagd_sync_shape() {
    let s = sets(1);
    s.publish(0, A).unwrap();
    let view = s.view(Some("flagSetId=beta")).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&view.configuration).unwrap();
    let flag = &config["flags"]["only-a"];
    assert_eq!(flag["defaultVariant"], "x");
    // Set metadata under the flag's own: the flag's flagSetId wins.
    assert_eq!(flag["metadata"]["team"], "a");
    assert_eq!(flag["metadata"]["flagSetId"], "beta");
    assert_eq!(config.as_object().unwrap().len(), 1);
}

#[test]
fn tokens_guard_the_sets_that_read_their_source() {
    let mut guarded = FlagSource::from_uri("g.json");
    guarded.tokens = vec!["secret".into()];
    let s = FlagSets::new(&[FlagSource::from_uri("open.json"), guarded]);
    s.publish(0, A).unwrap();
    s.publish(1, B).unwrap();
    assert_eq!(s.admit(Some("open.json"), None), Ok(()));
    assert_eq!(s.admit(Some("g.json"), None), Err(Refused::MissingToken));
    assert_eq!(
        s.admit(Some("g.json"), Some("nope")),
        Err(Refused::WrongToken)
    );
    assert_eq!(s.admit(Some("g.json"), Some("secret")), Ok(()));
    // The merged set reads the guarded source too.
    assert_eq!(s.admit(None, None), Err(Refused::MissingToken));
    assert_eq!(s.admit(Some("flagSetId=beta"), None), Ok(()));
}

#[test]
fn staleness_is_announced_without_a_rebuild() {
    let s = sets(1);
    s.publish(0, A).unwrap();
    let view = s.view(None).unwrap();
    let rx = s.subscribe();
    let before = *rx.borrow();
    s.set_stale(0, true);
    assert!(view.stale());
    assert!(s.sources[0].is_stale());
    // Change streams follow the selector's revision cell: the switch reached it too.
    assert!(s.revisions(None).borrow().as_ref().unwrap().stale);
    assert_eq!(*rx.borrow(), before + 1);
    s.set_stale(0, true);
    assert_eq!(*rx.borrow(), before + 1);
    s.set_stale(0, false);
    assert!(!view.stale());
}
