//! Table tests: every row of `test_cases.rs` was produced by running the reference library
//! (`jsonpath_rfc9535` 0.2.0) on the same query and document, with a `$.flags` mapping whose
//! `__missing__` behaves like [`TestFlags`] below. The table checks the outcome kind, the value,
//! the exception class, and which flags were resolved by the evaluation (and in which order).

use serde_json::{json, Value};

use super::test_cases::CASES;
use super::{iregexp, Found, JsonPathQuery, LazyFlags, ParseError};
use crate::error::{EvalError, PyErrorKind};

const CTX: &str = r#"{"environment": {"key": "env-key", "name": "Production"}, "identity": {"identifier": "user-1", "key": "env-key_user-1", "traits": {"age": 30, "plan": "pro", "score": 10.5, "flag": false, "none": null, "tags": ["a", "b"], "nested": {"x": 1, "y": [1, 2, {"z": "deep"}]}, "$.weird": "lit", "big": 123456789012345678901234567890, "one": "x", "empty": "", "zero": 0, "neg": -3, "fl": 2.0, "t": true, "uni": "é😀", "nl": "ab\n"}}, "features": {"f1": {"key": "1", "name": "f1", "enabled": true, "value": "v1"}, "f2": {"key": "2", "name": "f2", "enabled": false, "value": 7}}, "segments": {"16": {"key": "16", "name": "seg16", "rules": []}}, "flags": null}"#;

const ARR: &str = r#"{"a": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "b": [false, true, 0, 1, 1.0, "", "a", null, [], {}, [1], {"k": 1}, [true], 2.5, -1], "c": {"x": {"y": {"z": 1}}, "w": [1, {"y": 2}]}, "n": [[1, 2], [3, [4, [5]]]], "s": ["ab", "a", "abc", "A", "é", "😀", "a\nb", "ab\n", "x.y", "Ab1", "&", "~", "-", "^a", "1"], "o": [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 2.0}, {"k": true}, {"k": "2"}, {"k": null}, {"v": [1]}, {"k": [1, 2]}, {"k": {"a": 1}}], "e": {"": "empty", " ": "space", "a b": 1, "'": "q", "\"": "dq", "\\": "bs", "é": 5, "😀": 6, "-x": 7, "_y": 8, "a-b": 9, "0": "zero"}}"#;

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |v, _| json!([v]))
}

fn document(name: &str) -> Value {
    match name {
        "ctx" => serde_json::from_str(CTX).unwrap(),
        "arr" => serde_json::from_str(ARR).unwrap(),
        "deep" => json!({"d": nested(120), "s": nested(98), "t": {"u": nested(99)}}),
        other => panic!("unknown document {other}"),
    }
}

/// The generator's `dict` subclass: `f1`, `f2`, `f3` (which resolves `f1` first) and `arr`
/// resolve; `kerr` raises `KeyError`; `boom` raises `ValueError`; anything else reads as `None`.
#[derive(Default)]
struct TestFlags {
    entries: Vec<(String, Value)>,
}

fn resolvable(name: &str) -> Option<Value> {
    Some(match name {
        "f1" => json!({"enabled": true, "value": "v1", "reason": "DEFAULT"}),
        "f2" => json!({"enabled": false, "value": 2, "reason": "STATIC"}),
        "f3" => json!({"enabled": true, "value": null, "reason": "DEFAULT"}),
        "arr" => json!({"enabled": true, "value": [1, "a"], "reason": "STATIC"}),
        _ => return None,
    })
}

impl TestFlags {
    fn get(&self, name: &str) -> Option<Value> {
        self.entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    fn insert(&mut self, name: &str) {
        if self.get(name).is_none() {
            let v = resolvable(name).expect("resolvable");
            self.entries.push((name.to_string(), v));
        }
    }
}

impl LazyFlags for TestFlags {
    fn lookup(&mut self, name: &str) -> Result<Option<Value>, EvalError> {
        if let Some(v) = self.get(name) {
            return Ok(Some(v));
        }
        match name {
            "kerr" => return Ok(None),
            "boom" => return Err(EvalError::new(PyErrorKind::ValueError, "boom")),
            _ => {}
        }
        if resolvable(name).is_some() {
            if name == "f3" {
                self.insert("f1");
            }
            self.insert(name);
        }
        Ok(Some(self.get(name).unwrap_or(Value::Null)))
    }

    fn entries(&self) -> Vec<(String, Value)> {
        self.entries.clone()
    }
}

/// Runs one row; `Err` describes a mismatch.
fn run_case(
    query: &str,
    doc: &str,
    pre: &str,
    expected: &str,
    resolved: &str,
) -> Result<(), String> {
    let (kind, detail) = expected.split_once(':').unwrap_or((expected, ""));
    let compiled = match JsonPathQuery::parse(query) {
        Ok(q) => q,
        Err(ParseError::Syntax(m)) if kind == "syntax" => {
            let _ = m;
            return Ok(());
        }
        Err(ParseError::Raises(e)) if kind == "raise" => {
            let class_ok = match detail {
                "OverflowError" => e.kind == PyErrorKind::OverflowError,
                "JSONPathTypeError" => e.kind == PyErrorKind::TypeError,
                _ => e.kind == PyErrorKind::ValueError,
            };
            return if class_ok && e.message.starts_with(detail) {
                Ok(())
            } else {
                Err(format!("wrong exception {e}"))
            };
        }
        Err(e) => return Err(format!("compile: got {e}")),
    };
    if kind == "syntax" || kind == "raise" {
        return Err("compiled, but the reference rejects it".into());
    }
    let root = document(doc);
    let mut flags = TestFlags::default();
    for p in pre.split(',').filter(|p| !p.is_empty()) {
        flags.insert(p);
    }
    let got = compiled.find_first(&root, &mut flags);
    let ok = match (&got, kind) {
        (Ok(Found::Nothing), "nothing" | "jperr") => true,
        (Ok(Found::Value(v)), "value") => *v == serde_json::from_str::<Value>(detail).unwrap(),
        (Err(e), "error") => match detail {
            "TypeError" => e.kind == PyErrorKind::TypeError,
            "AttributeError" => e.kind == PyErrorKind::AttributeError,
            "ValueError" => e.kind == PyErrorKind::ValueError && e.message == "boom",
            other => e.kind == PyErrorKind::ValueError && e.message.starts_with(other),
        },
        _ => false,
    };
    if !ok {
        return Err(format!("got {got:?}"));
    }
    if doc == "ctx" {
        let names: Vec<&str> = flags.entries.iter().map(|(k, _)| k.as_str()).collect();
        if names.join(",") != resolved {
            return Err(format!("resolved {names:?}, reference {resolved:?}"));
        }
    }
    Ok(())
}

#[test]
fn jsonpath_agrees_with_the_reference_table() {
    let mut failures = Vec::new();
    for (query, doc, pre, expected, resolved) in CASES {
        if let Err(why) = run_case(query, doc, pre, expected, resolved) {
            failures.push(format!(
                "{query:?} on {doc} (pre {pre:?}): expected {expected}: {why}"
            ));
        }
    }
    assert!(CASES.len() >= 200);
    assert!(
        failures.is_empty(),
        "{} of {} rows differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn jsonpath_iregexp_check_matches_the_grammar() {
    for p in [
        "a{1}", "a{1,}", "a{1,2}", "[a-]", "[-a]", "[^-]", "\\p{L}", "a|", "()", "[a&&b]", "^*",
        "$",
    ] {
        assert!(iregexp::check(p), "{p}");
    }
    for p in [
        "a{10}",
        "a{,2}",
        "\\d",
        "[]",
        "[^]",
        "[]a]",
        "\\p{Cs}",
        "\\p{LC}",
        "[a--b]",
        "[\\p{L}-z]",
        "a**",
        "(?:a)",
    ] {
        assert!(!iregexp::check(p), "{p}");
    }
}

#[test]
fn jsonpath_parser_recursion_limit_matches_the_reference_engine() {
    fn recursion_error(q: &str) -> bool {
        matches!(JsonPathQuery::parse(q), Err(ParseError::Raises(e)) if e.message.starts_with("RecursionError"))
    }
    // The deepest nesting the reference engine compiles, then one level more.
    let cases: [(&dyn Fn(usize) -> String, usize); 4] = [
        (&|n| format!("$.a[?{}@]", "!".repeat(n)), 487),
        (
            &|n| format!("$.a[?{}@{}]", "(".repeat(n), ")".repeat(n)),
            487,
        ),
        (&|n| format!("$.a{}{}", "[?@".repeat(n), "]".repeat(n)), 163),
        (&|n| format!("$.a[?@{}]", "&&@".repeat(n)), 487),
    ];
    for (make, deepest) in cases {
        assert!(!recursion_error(&make(deepest)), "{}", make(1));
        assert!(recursion_error(&make(deepest + 1)), "{}", make(1));
    }
}
