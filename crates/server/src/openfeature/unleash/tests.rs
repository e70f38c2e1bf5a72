use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::*;

const BODY: &str = r##"{"version":1,"features":[
    {"name":"plain","enabled":true,"project":"a"},
    {"name":"off","enabled":false,"project":"a"},
    {"name":"users","enabled":true,"project":"a",
     "strategies":[{"name":"userWithId","parameters":{"userIds":"u1"}}]},
    {"name":"plan","enabled":true,"project":"a",
     "strategies":[{"name":"default","constraints":[{"contextName":"plan","operator":"IN","values":["gold"]}]}]},
    {"name":"text","enabled":true,"project":"a",
     "variants":[{"name":"blue","weight":1000,"payload":{"type":"string","value":"#00f"}}]},
    {"name":"count","enabled":true,"project":"a",
     "variants":[{"name":"ten","weight":1000,"payload":{"type":"number","value":"10"}}]},
    {"name":"object","enabled":true,"project":"a",
     "variants":[{"name":"o","weight":1000,"payload":{"type":"json","value":"{\"k\":[1]}"}}]},
    {"name":"broken","enabled":true,"project":"a",
     "variants":[{"name":"b","weight":1000,"payload":{"type":"number","value":"ten"}}]},
    {"name":"elsewhere","enabled":true,"project":"b"}
]}"##;

fn toggles(projects: Projects) -> Toggles {
    let view = View::build(&[Arc::from(BODY.as_bytes())]).unwrap();
    Toggles {
        view: Arc::new(view),
        scope: format!("unleash:{}", projects.to_list().join(",")),
        projects,
    }
}

fn only_a() -> Projects {
    Projects::Only(BTreeSet::from(["a".to_owned()]))
}

/// (value, reason, variant, error code) of one toggle for a context.
fn answer(
    toggles: &Toggles,
    key: &str,
    context: Value,
) -> (
    Option<Value>,
    &'static str,
    Option<String>,
    Option<&'static str>,
) {
    let reading = Reading::of(Some(&context)).unwrap();
    toggles
        .one(key, &reading, |r| {
            (
                r.value.map(Cow::into_owned),
                r.reason,
                r.variant.map(Cow::into_owned),
                r.error.map(|(code, _)| code),
            )
        })
        .unwrap()
}

#[test]
fn the_context_maps_to_unleash_fields_and_properties() {
    let context = json!({
        "targetingKey": "t", "userId": "ignored", "sessionId": "s", "remoteAddress": "10.0.0.1",
        "environment": "e", "appName": "app", "currentTime": "2024-01-01T00:00:00.000Z",
        "plan": "gold", "seats": 3, "beta": true, "nested": {"x": 1},
        "properties": {"tier": "t1"}
    });
    let reading = Reading::of(Some(&context)).unwrap();
    let c = &reading.context;
    assert_eq!(c.get("userId"), Some("t"), "targetingKey wins over userId");
    assert_eq!(c.get("sessionId"), Some("s"));
    assert_eq!(c.get("remoteAddress"), Some("10.0.0.1"));
    assert_eq!(c.get("environment"), Some("e"));
    assert_eq!(c.get("appName"), Some("app"));
    assert_eq!(c.get("currentTime"), Some("2024-01-01T00:00:00.000Z"));
    assert_eq!(c.property("plan"), Some("gold"));
    assert_eq!(c.property("seats"), Some("3"));
    assert_eq!(c.property("beta"), Some("true"));
    assert_eq!(c.property("nested"), None);
    assert_eq!(c.property("tier"), Some("t1"));
    assert_eq!(reading.targeting_key(), Some("t"));

    // Nothing given: the time is filled in, nothing else.
    let empty = Reading::of(None).unwrap();
    assert!(empty.context.get("currentTime").is_some());
    assert_eq!(empty.context.get("userId"), None);
    assert!(Reading::of(Some(&json!([1]))).is_err());
}

#[test]
fn enabled_is_the_boolean_and_reasons_say_why() {
    let t = toggles(Projects::All);
    let none = json!({});
    assert_eq!(
        answer(&t, "plain", none.clone()),
        (Some(json!(true)), "STATIC", Some("disabled".into()), None)
    );
    assert_eq!(
        answer(&t, "off", none.clone()),
        (
            Some(json!(false)),
            "DISABLED",
            Some("disabled".into()),
            None
        )
    );
    assert_eq!(answer(&t, "users", none.clone()).1, "DEFAULT");
    assert_eq!(answer(&t, "users", none.clone()).0, Some(json!(false)));
    let u1 = answer(&t, "users", json!({"targetingKey": "u1"}));
    assert_eq!((u1.0, u1.1), (Some(json!(true)), "TARGETING_MATCH"));
    assert_eq!(
        answer(&t, "plan", json!({"plan": "gold"})).0,
        Some(json!(true))
    );
    assert_eq!(
        answer(&t, "plan", json!({"properties": {"plan": "lead"}})).0,
        Some(json!(false))
    );
}

#[test]
fn payloads_are_typed_values_and_variants_their_names() {
    let t = toggles(Projects::All);
    let none = json!({});
    assert_eq!(
        answer(&t, "text", none.clone()),
        (
            Some(json!("#00f")),
            "TARGETING_MATCH",
            Some("blue".into()),
            None
        )
    );
    assert_eq!(answer(&t, "count", none.clone()).0, Some(json!(10)));
    assert_eq!(
        answer(&t, "object", none.clone()).0,
        Some(json!({"k": [1]}))
    );
    let broken = answer(&t, "broken", none.clone());
    assert_eq!((broken.1, broken.3), ("ERROR", Some("PARSE_ERROR")));
    assert_eq!(answer(&t, "nope", none).3, Some("FLAG_NOT_FOUND"));
}

#[test]
fn a_boolean_resolver_reads_enabled_whatever_the_payload() {
    let t = toggles(Projects::All);
    let reading = Reading::of(None).unwrap();
    t.one("text", &reading, |r| {
        assert!(r.typing.enabled_as_bool && r.enabled);
        assert_eq!(r.metadata.fields().count(), 1);
    })
    .unwrap();
    // Off for the context: other types read the caller's default.
    t.one("users", &reading, |r| {
        assert!(r.typing.lenient && !r.enabled)
    })
    .unwrap();
}

#[test]
fn the_token_scopes_the_toggles() {
    let t = toggles(only_a());
    assert_eq!(answer(&t, "elsewhere", json!({})).3, Some("FLAG_NOT_FOUND"));
    let reading = Reading::of(None).unwrap();
    let mut keys = Vec::new();
    t.each(&reading, |r| keys.push(r.key.to_owned())).unwrap();
    assert!(!keys.contains(&"elsewhere".to_owned()));
    assert_eq!(keys.len(), 8);
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let all = toggles(Projects::All);
    let mut count = 0;
    all.each(&reading, |_| count += 1).unwrap();
    assert_eq!(count, 9);
}

#[test]
fn tags_follow_the_scope_the_context_and_the_revision() {
    let a = toggles(only_a());
    let all = toggles(Projects::All);
    let (u1, u2) = (json!({"targetingKey": "u1"}), json!({"targetingKey": "u2"}));
    let one = Reading::of(Some(&u1)).unwrap();
    let other = Reading::of(Some(&u2)).unwrap();
    let tag = a.tag(None, &one, false, "s");
    assert_eq!(tag, a.tag(None, &one, false, "s"));
    assert_ne!(tag, all.tag(None, &one, false, "s"));
    assert_ne!(tag, a.tag(None, &other, false, "s"));
    assert_ne!(tag, a.tag(Some("plain"), &one, false, "s"));
    assert_ne!(tag, a.tag(None, &one, true, "s"));
}
