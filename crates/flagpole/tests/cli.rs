//! End-to-end tests of the `flagpole` binary: `eval context` (file and stdin), `eval identity`
//! against the example environment document, `--explain` tables, `--batch` JSON Lines, and the
//! exit-code contract (0 success; 1 the reference engine would raise, with a one-line reason on
//! stderr; 2 malformed input, naming the JSON path; `--lenient` for unknown operators).
//!
//! Expected results were produced by the reference (`flagsmith-flag-engine` 11.1.1, with the
//! Python SDK's environment-document mapper for `eval identity`) on the same inputs.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_flagpole");
const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/environment.json"
);

/// A context with a matching segment, a non-matching one and a multivariate feature.
const CONTEXT: &str = r#"{"environment": {"key": "env", "name": "Env"},
 "identity": {"identifier": "user-1", "traits": {"plan": "pro", "age": 42}},
 "features": {
  "checkout": {"key": "1", "name": "checkout", "enabled": false, "value": "old", "metadata": {"id": 1}},
  "layout": {"key": "2", "name": "layout", "enabled": true, "value": "wide",
             "variants": [{"value": "compact", "weight": 50.0, "priority": 1, "key": "compact"}]},
  "limit": {"key": "3", "name": "limit", "enabled": true, "value": 10}},
 "segments": {
  "10": {"key": "10", "name": "pro_users",
         "rules": [{"type": "ALL", "conditions": [{"property": "plan", "operator": "EQUAL", "value": "pro"}]}],
         "overrides": [{"key": "1", "name": "checkout", "enabled": true, "value": "new", "priority": 0}]},
  "11": {"key": "11", "name": "seniors",
         "rules": [{"type": "ALL", "conditions": [{"property": "age", "operator": "GREATER_THAN", "value": "65"}]}],
         "overrides": [{"key": "3", "name": "limit", "enabled": true, "value": 99}]}}}"#;

/// The reference's result for [`CONTEXT`] (also with the `seniors` operator unknown).
const CONTEXT_RESULT: &str = r#"{"flags":{"checkout":{"enabled":true,"name":"checkout","reason":"TARGETING_MATCH; segment=pro_users","value":"new","variant":null},"layout":{"enabled":true,"name":"layout","reason":"STATIC","value":"wide","variant":"control"},"limit":{"enabled":true,"name":"limit","reason":"DEFAULT","value":10,"variant":null}},"segments":[{"name":"pro_users"}]}"#;

/// The reference's result for [`CONTEXT`] without an identity.
const CONTEXT_RESULT_NO_IDENTITY: &str = r#"{"flags":{"checkout":{"enabled":false,"name":"checkout","reason":"DEFAULT","value":"old","variant":null,"metadata":{"id":1}},"layout":{"enabled":true,"name":"layout","reason":"STATIC","value":"wide","variant":null},"limit":{"enabled":true,"name":"limit","reason":"DEFAULT","value":10,"variant":null}},"segments":[]}"#;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn flagpole(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run flagpole");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Output {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Writes `contents` to a file under Cargo's per-target temporary directory.
fn temp_file(name: &str, contents: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}.json"));
    std::fs::write(&path, contents).unwrap();
    path.to_string_lossy().into_owned()
}

fn context_with(edit: impl FnOnce(&mut Value)) -> String {
    let mut ctx: Value = serde_json::from_str(CONTEXT).unwrap();
    edit(&mut ctx);
    ctx.to_string()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn assert_ok_json(out: &Output, expected: &str) {
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(parse(&out.stdout), parse(expected));
}

#[test]
fn eval_context_from_file() {
    let file = temp_file("context", CONTEXT);
    assert_ok_json(&flagpole(&["eval", "context", &file], ""), CONTEXT_RESULT);
}

#[test]
fn eval_context_from_stdin() {
    assert_ok_json(
        &flagpole(&["eval", "context", "-"], CONTEXT),
        CONTEXT_RESULT,
    );
    let no_identity = context_with(|c| c["identity"] = Value::Null);
    assert_ok_json(
        &flagpole(&["eval", "context", "-"], &no_identity),
        CONTEXT_RESULT_NO_IDENTITY,
    );
}

/// `(identifier, traits, the reference's /identities body)` for the example document.
const IDENTITIES: &[(&str, &str, &str)] = &[
    (
        "vip-customer",
        r#"{"beta":"true"}"#,
        r#"{"identifier":"vip-customer","traits":[{"trait_key":"beta","trait_value":"true"}],"flags":[{"feature":{"id":1,"name":"welcome_message","type":"STANDARD"},"enabled":true,"feature_state_value":"Welcome back, VIP!"},{"feature":{"id":2,"name":"new_checkout","type":"STANDARD"},"enabled":true,"feature_state_value":null},{"feature":{"id":3,"name":"max_projects","type":"STANDARD"},"enabled":true,"feature_state_value":10},{"feature":{"id":4,"name":"banner_text","type":"STANDARD"},"enabled":true,"feature_state_value":"Welcome, beta tester!"},{"feature":{"id":5,"name":"dark_mode","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":6,"name":"price_display","type":"STANDARD"},"enabled":true,"feature_state_value":"EUR"},{"feature":{"id":7,"name":"internal_debug_panel","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":8,"name":"layout","type":"MULTIVARIATE"},"enabled":true,"feature_state_value":"compact"},{"feature":{"id":9,"name":"discount_rate","type":"STANDARD"},"enabled":true,"feature_state_value":"0.15"}]}"#,
    ),
    (
        "user-42",
        r#"{"plan":"enterprise","app_version":"2.1.0","country":"FR","age":30}"#,
        r#"{"identifier":"user-42","traits":[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"app_version","trait_value":"2.1.0"},{"trait_key":"country","trait_value":"FR"},{"trait_key":"age","trait_value":30}],"flags":[{"feature":{"id":1,"name":"welcome_message","type":"STANDARD"},"enabled":true,"feature_state_value":"Hello from Flagpole"},{"feature":{"id":2,"name":"new_checkout","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":3,"name":"max_projects","type":"STANDARD"},"enabled":true,"feature_state_value":10},{"feature":{"id":4,"name":"banner_text","type":"STANDARD"},"enabled":false,"feature_state_value":""},{"feature":{"id":5,"name":"dark_mode","type":"STANDARD"},"enabled":true,"feature_state_value":null},{"feature":{"id":6,"name":"price_display","type":"STANDARD"},"enabled":true,"feature_state_value":"EUR"},{"feature":{"id":7,"name":"internal_debug_panel","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":8,"name":"layout","type":"MULTIVARIATE"},"enabled":true,"feature_state_value":"standard"},{"feature":{"id":9,"name":"discount_rate","type":"STANDARD"},"enabled":true,"feature_state_value":"0.15"}]}"#,
    ),
    (
        "anon",
        "{}",
        r#"{"identifier":"anon","traits":[],"flags":[{"feature":{"id":1,"name":"welcome_message","type":"STANDARD"},"enabled":true,"feature_state_value":"Hello from Flagpole"},{"feature":{"id":2,"name":"new_checkout","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":3,"name":"max_projects","type":"STANDARD"},"enabled":true,"feature_state_value":10},{"feature":{"id":4,"name":"banner_text","type":"STANDARD"},"enabled":false,"feature_state_value":""},{"feature":{"id":5,"name":"dark_mode","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":6,"name":"price_display","type":"STANDARD"},"enabled":true,"feature_state_value":"EUR"},{"feature":{"id":7,"name":"internal_debug_panel","type":"STANDARD"},"enabled":false,"feature_state_value":null},{"feature":{"id":8,"name":"layout","type":"MULTIVARIATE"},"enabled":true,"feature_state_value":"standard"},{"feature":{"id":9,"name":"discount_rate","type":"STANDARD"},"enabled":true,"feature_state_value":"0.15"}]}"#,
    ),
];

#[test]
fn eval_identity_prints_the_identities_body() {
    for &(identifier, traits, expected) in IDENTITIES {
        let out = flagpole(
            &[
                "eval",
                "identity",
                "--document",
                DOCUMENT,
                "--identifier",
                identifier,
                "--traits",
                traits,
            ],
            "",
        );
        assert_ok_json(&out, expected);
    }
}

/// Every flag name of the example document.
const DOCUMENT_FLAGS: &[&str] = &[
    "welcome_message",
    "new_checkout",
    "max_projects",
    "banner_text",
    "dark_mode",
    "price_display",
    "internal_debug_panel",
    "layout",
    "discount_rate",
];

/// Asserts that the `--explain` table names `segment` as not matching, with the failing
/// condition's property and operator in that segment's block.
fn assert_explains_failure(table: &str, segment: &str, property: &str, operator: &str) {
    let start = table
        .lines()
        .position(|l| l.contains("no match") && l.contains(segment))
        .unwrap_or_else(|| panic!("{segment} not reported as not matching:\n{table}"));
    let block: Vec<&str> = table
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.contains("match "))
        .collect();
    let block = block.join("\n");
    assert!(
        block.contains(operator) && block.contains(property),
        "failing condition {property} {operator} of {segment} not shown:\n{table}"
    );
}

#[test]
fn explain_context_mentions_flags_and_failing_conditions() {
    let out = flagpole(&["eval", "context", "--explain", "-"], CONTEXT);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    for flag in ["checkout", "layout", "limit"] {
        assert!(out.stdout.contains(flag), "{flag} missing:\n{}", out.stdout);
    }
    assert_explains_failure(&out.stdout, "seniors", "age", "GREATER_THAN");
}

#[test]
fn explain_identity_mentions_flags_and_failing_conditions() {
    let out = flagpole(
        &[
            "eval",
            "identity",
            "--document",
            DOCUMENT,
            "--identifier",
            "x",
            "--traits",
            r#"{"beta":"true"}"#,
            "--explain",
        ],
        "",
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    for flag in DOCUMENT_FLAGS {
        assert!(out.stdout.contains(flag), "{flag} missing:\n{}", out.stdout);
    }
    // The reference matches only `beta_testers` for this identity.
    for (segment, property, operator) in [
        ("enterprise", "plan", "IN"),
        ("mobile_app_2_plus", "app_version", "GREATER_THAN_INCLUSIVE"),
        ("ten_percent_rollout", "", "PERCENTAGE_SPLIT"),
        ("not_in_eu", "country", "IS_SET"),
        ("identity_overrides", "$.identity.identifier", "IN"),
    ] {
        assert_explains_failure(&out.stdout, segment, property, operator);
    }
}

#[test]
fn malformed_json_exits_2() {
    let out = flagpole(&["eval", "context", "-"], "{\"environment\": ");
    assert_eq!(out.code, 2, "stdout: {}", out.stdout);
    assert!(out.stderr.contains("malformed JSON"), "{}", out.stderr);
    let out = flagpole(
        &[
            "eval",
            "identity",
            "--document",
            DOCUMENT,
            "--identifier",
            "x",
            "--traits",
            "{oops",
        ],
        "",
    );
    assert_eq!(out.code, 2, "stdout: {}", out.stdout);
    assert!(out.stderr.contains("--traits"), "{}", out.stderr);
}

#[test]
fn wrong_types_exit_2_naming_the_path() {
    let cases = [
        (context_with(|c| c["segments"] = json!([])), "$.segments"),
        (context_with(|c| c["features"] = json!(7)), "$.features"),
        (
            context_with(|c| c["segments"]["10"]["rules"] = json!({})),
            "rules",
        ),
        (
            context_with(|c| c["identity"] = json!("user")),
            "$.identity",
        ),
        (
            context_with(|c| c["identity"]["traits"] = json!([1])),
            "traits",
        ),
    ];
    for (ctx, path) in cases {
        let out = flagpole(&["eval", "context", "-"], &ctx);
        assert_eq!(out.code, 2, "{ctx}\nstdout: {}", out.stdout);
        assert!(
            out.stderr.contains(path),
            "{path} not named: {}",
            out.stderr
        );
    }
}

#[test]
fn a_document_missing_what_every_document_has_exits_2_naming_the_path() {
    let example: Value = parse(&std::fs::read_to_string(DOCUMENT).unwrap());
    let without = |pointer: &str| {
        let mut doc = example.clone();
        let (parent, member) = pointer.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() {
            &mut doc
        } else {
            doc.pointer_mut(parent).unwrap()
        };
        parent.as_object_mut().unwrap().remove(member);
        doc.to_string()
    };
    let cases = [
        (
            json!({"api_key": "example_client_key", "hello": 1}).to_string(),
            "$.feature_states",
        ),
        (without("/feature_states"), "$.feature_states"),
        (without("/project"), "$.project"),
        (without("/project/segments"), "$.project.segments"),
    ];
    for (i, (doc, path)) in cases.iter().enumerate() {
        let file = temp_file(&format!("structure-{i}"), doc);
        let out = flagpole(
            &["eval", "identity", "--document", &file, "--identifier", "x"],
            "",
        );
        assert_eq!(out.code, 2, "{path}\nstdout: {}", out.stdout);
        assert!(
            out.stderr.contains(path),
            "{path} not named: {}",
            out.stderr
        );
    }
}

#[test]
fn unknown_operator_exits_2_unless_lenient() {
    let ctx = context_with(|c| {
        c["segments"]["11"]["rules"][0]["conditions"][0]["operator"] = json!("OLDER_THAN")
    });
    let out = flagpole(&["eval", "context", "-"], &ctx);
    assert_eq!(out.code, 2, "stdout: {}", out.stdout);
    assert!(
        out.stderr.contains("OLDER_THAN") || out.stderr.contains("operator"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("rules[0].conditions[0]"),
        "path not named: {}",
        out.stderr
    );
    // The reference evaluates an unknown operator as never matching.
    assert_ok_json(
        &flagpole(&["eval", "context", "--lenient", "-"], &ctx),
        CONTEXT_RESULT,
    );
}

#[test]
fn reference_raising_input_exits_1_with_one_line() {
    let set = |op: &'static str, value: &'static str| {
        context_with(move |c| {
            c["segments"]["11"]["rules"][0]["conditions"][0]["operator"] = json!(op);
            c["segments"]["11"]["rules"][0]["conditions"][0]["value"] = json!(value);
        })
    };
    // Python: `re.error: missing ), unterminated subpattern` / `ZeroDivisionError: float modulo`.
    for ctx in [set("REGEX", "("), set("MODULO", "0|1")] {
        let out = flagpole(&["eval", "context", "-"], &ctx);
        assert_eq!(out.code, 1, "{ctx}\nstdout: {}", out.stdout);
        assert!(out.stdout.is_empty(), "printed a result: {}", out.stdout);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn batch_context_answers_line_per_line() {
    let raising = context_with(|c| {
        c["segments"]["11"]["rules"][0]["conditions"][0]["operator"] = json!("REGEX");
        c["segments"]["11"]["rules"][0]["conditions"][0]["value"] = json!("(");
    });
    let one_line = |s: &str| parse(s).to_string();
    let input = format!(
        "{}\n{{broken\n\n{}\n{}\n",
        one_line(CONTEXT),
        raising,
        one_line(CONTEXT)
    );
    let out = flagpole(&["eval", "context", "--batch"], &input);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines: Vec<Value> = out.stdout.lines().map(parse).collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert_eq!(lines[0], json!({"ok": parse(CONTEXT_RESULT)}));
    assert!(lines[1]["error"].is_string(), "{}", lines[1]);
    assert!(lines[2]["error"].is_string(), "{}", lines[2]);
    assert_eq!(lines[3], json!({"ok": parse(CONTEXT_RESULT)}));
}

#[test]
fn batch_identity_answers_line_per_line() {
    let mut input = String::new();
    for &(identifier, traits, _) in IDENTITIES {
        input.push_str(&json!({"identifier": identifier, "traits": parse(traits)}).to_string());
        input.push('\n');
    }
    input.push_str("{\"traits\": {}}\n");
    let out = flagpole(
        &["eval", "identity", "--document", DOCUMENT, "--batch"],
        &input,
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines: Vec<Value> = out.stdout.lines().map(parse).collect();
    assert_eq!(lines.len(), IDENTITIES.len() + 1, "{}", out.stdout);
    for (line, &(_, _, expected)) in lines.iter().zip(IDENTITIES) {
        assert_eq!(*line, json!({"ok": parse(expected)}));
    }
    assert!(
        lines[IDENTITIES.len()]["error"].is_string(),
        "{}",
        out.stdout
    );
}
