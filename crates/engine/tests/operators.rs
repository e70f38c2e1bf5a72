//! Every condition operator of the reference engine (`context_matches_condition` in
//! `flag_engine/segments/evaluator.py`, flagsmith-flag-engine 11.1.1), with both outcomes and each
//! kind of context value (str, int, float, bool, null / missing): EQUAL, NOT_EQUAL, the four
//! orderings, CONTAINS, NOT_CONTAINS, REGEX, PERCENTAGE_SPLIT (including the empty property that
//! hashes the identity key), MODULO, IS_SET, IS_NOT_SET, IN (CSV string, JSON-array string, JSON
//! array) and unknown operators.
//!
//! Each row is one condition in a one-segment context (`common::cond_ctx`); `M`/`N` say whether
//! the reference (`flagsmith-flag-engine` 11.1.1) matched the segment, and the whole result JSON
//! is compared against the reference's output for that verdict (`common::MATCHED`/`UNMATCHED`).

mod common;

use common::{run_rows, Exp::*, Row};

#[rustfmt::skip]
const EQUAL: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "EQUAL", r#""abc""#, M),
    (r#"{"t":"abc"}"#, "t", "EQUAL", r#""abd""#, N),
    (r#"{"t":42}"#, "t", "EQUAL", r#""42""#, M),
    (r#"{"t":42}"#, "t", "EQUAL", r#""43""#, N),
    (r#"{"t":1.5}"#, "t", "EQUAL", r#""1.5""#, M),
    (r#"{"t":1.5}"#, "t", "EQUAL", r#""1.6""#, N),
    (r#"{"t":true}"#, "t", "EQUAL", r#""true""#, M),
    (r#"{"t":false}"#, "t", "EQUAL", r#""true""#, N),
    (r#"{"t":null}"#, "t", "EQUAL", r#""None""#, N),
    (r#"{}"#, "t", "EQUAL", r#""x""#, N),
];

#[test]
fn equal() {
    run_rows(EQUAL, true);
}

#[rustfmt::skip]
const NOT_EQUAL: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "NOT_EQUAL", r#""abd""#, M),
    (r#"{"t":"abc"}"#, "t", "NOT_EQUAL", r#""abc""#, N),
    (r#"{"t":42}"#, "t", "NOT_EQUAL", r#""43""#, M),
    (r#"{"t":42}"#, "t", "NOT_EQUAL", r#""42""#, N),
    (r#"{"t":1.5}"#, "t", "NOT_EQUAL", r#""2""#, M),
    (r#"{"t":1.5}"#, "t", "NOT_EQUAL", r#""1.5""#, N),
    (r#"{"t":true}"#, "t", "NOT_EQUAL", r#""false""#, M),
    (r#"{"t":true}"#, "t", "NOT_EQUAL", r#""true""#, N),
    (r#"{"t":null}"#, "t", "NOT_EQUAL", r#""x""#, N),
    (r#"{}"#, "t", "NOT_EQUAL", r#""x""#, N),
];

#[test]
fn not_equal() {
    run_rows(NOT_EQUAL, true);
}

#[rustfmt::skip]
const GREATER_THAN: &[Row] = &[
    (r#"{"t":"b"}"#, "t", "GREATER_THAN", r#""a""#, M),
    (r#"{"t":"a"}"#, "t", "GREATER_THAN", r#""b""#, N),
    (r#"{"t":10}"#, "t", "GREATER_THAN", r#""9""#, M),
    (r#"{"t":10}"#, "t", "GREATER_THAN", r#""10""#, N),
    (r#"{"t":2.5}"#, "t", "GREATER_THAN", r#""2.4""#, M),
    (r#"{"t":2.5}"#, "t", "GREATER_THAN", r#""2.5""#, N),
    (r#"{"t":true}"#, "t", "GREATER_THAN", r#""false""#, M),
    (r#"{"t":false}"#, "t", "GREATER_THAN", r#""true""#, N),
    (r#"{"t":null}"#, "t", "GREATER_THAN", r#""0""#, N),
];

#[test]
fn greater_than() {
    run_rows(GREATER_THAN, true);
}

#[rustfmt::skip]
const GREATER_THAN_INCLUSIVE: &[Row] = &[
    (r#"{"t":"b"}"#, "t", "GREATER_THAN_INCLUSIVE", r#""b""#, M),
    (r#"{"t":"a"}"#, "t", "GREATER_THAN_INCLUSIVE", r#""b""#, N),
    (r#"{"t":10}"#, "t", "GREATER_THAN_INCLUSIVE", r#""10""#, M),
    (r#"{"t":10}"#, "t", "GREATER_THAN_INCLUSIVE", r#""11""#, N),
    (r#"{"t":2.5}"#, "t", "GREATER_THAN_INCLUSIVE", r#""2.5""#, M),
    (r#"{"t":2.5}"#, "t", "GREATER_THAN_INCLUSIVE", r#""2.6""#, N),
    (r#"{"t":true}"#, "t", "GREATER_THAN_INCLUSIVE", r#""true""#, M),
    (r#"{"t":false}"#, "t", "GREATER_THAN_INCLUSIVE", r#""true""#, N),
    (r#"{}"#, "t", "GREATER_THAN_INCLUSIVE", r#""0""#, N),
];

#[test]
fn greater_than_inclusive() {
    run_rows(GREATER_THAN_INCLUSIVE, true);
}

#[rustfmt::skip]
const LESS_THAN: &[Row] = &[
    (r#"{"t":"a"}"#, "t", "LESS_THAN", r#""b""#, M),
    (r#"{"t":"b"}"#, "t", "LESS_THAN", r#""a""#, N),
    (r#"{"t":9}"#, "t", "LESS_THAN", r#""10""#, M),
    (r#"{"t":10}"#, "t", "LESS_THAN", r#""10""#, N),
    (r#"{"t":-0.5}"#, "t", "LESS_THAN", r#""0""#, M),
    (r#"{"t":2.5}"#, "t", "LESS_THAN", r#""2.5""#, N),
    (r#"{"t":false}"#, "t", "LESS_THAN", r#""true""#, M),
    (r#"{"t":true}"#, "t", "LESS_THAN", r#""true""#, N),
    (r#"{"t":null}"#, "t", "LESS_THAN", r#""1""#, N),
];

#[test]
fn less_than() {
    run_rows(LESS_THAN, true);
}

#[rustfmt::skip]
const LESS_THAN_INCLUSIVE: &[Row] = &[
    (r#"{"t":"a"}"#, "t", "LESS_THAN_INCLUSIVE", r#""a""#, M),
    (r#"{"t":"b"}"#, "t", "LESS_THAN_INCLUSIVE", r#""a""#, N),
    (r#"{"t":10}"#, "t", "LESS_THAN_INCLUSIVE", r#""10""#, M),
    (r#"{"t":11}"#, "t", "LESS_THAN_INCLUSIVE", r#""10""#, N),
    (r#"{"t":2.5}"#, "t", "LESS_THAN_INCLUSIVE", r#""2.5""#, M),
    (r#"{"t":2.6}"#, "t", "LESS_THAN_INCLUSIVE", r#""2.5""#, N),
    (r#"{"t":false}"#, "t", "LESS_THAN_INCLUSIVE", r#""false""#, M),
    (r#"{"t":true}"#, "t", "LESS_THAN_INCLUSIVE", r#""false""#, N),
    (r#"{}"#, "t", "LESS_THAN_INCLUSIVE", r#""1""#, N),
];

#[test]
fn less_than_inclusive() {
    run_rows(LESS_THAN_INCLUSIVE, true);
}

#[rustfmt::skip]
const CONTAINS: &[Row] = &[
    (r#"{"t":"hello"}"#, "t", "CONTAINS", r#""ell""#, M),
    (r#"{"t":"hello"}"#, "t", "CONTAINS", r#""xyz""#, N),
    (r#"{"t":"hello"}"#, "t", "CONTAINS", r#""""#, M),
    (r#"{"t":123}"#, "t", "CONTAINS", r#""2""#, N),
    (r#"{"t":1.5}"#, "t", "CONTAINS", r#""1""#, N),
    (r#"{"t":true}"#, "t", "CONTAINS", r#""T""#, N),
    (r#"{"t":null}"#, "t", "CONTAINS", r#""""#, N),
];

#[test]
fn contains() {
    run_rows(CONTAINS, true);
}

#[rustfmt::skip]
const NOT_CONTAINS: &[Row] = &[
    (r#"{"t":"hello"}"#, "t", "NOT_CONTAINS", r#""xyz""#, M),
    (r#"{"t":"hello"}"#, "t", "NOT_CONTAINS", r#""ell""#, N),
    (r#"{"t":123}"#, "t", "NOT_CONTAINS", r#""9""#, N),
    (r#"{"t":1.5}"#, "t", "NOT_CONTAINS", r#""9""#, N),
    (r#"{"t":false}"#, "t", "NOT_CONTAINS", r#""x""#, N),
    (r#"{}"#, "t", "NOT_CONTAINS", r#""x""#, N),
];

#[test]
fn not_contains() {
    run_rows(NOT_CONTAINS, true);
}

#[rustfmt::skip]
const REGEX: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""a.c""#, M),
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""b""#, N),
    (r#"{"t":7}"#, "t", "REGEX", r#""^7$""#, M),
    (r#"{"t":7}"#, "t", "REGEX", r#""8""#, N),
    (r#"{"t":1.5}"#, "t", "REGEX", r#""1\\.5""#, M),
    (r#"{"t":1.5}"#, "t", "REGEX", r#""1\\.6""#, N),
    (r#"{"t":true}"#, "t", "REGEX", r#""True""#, M),
    (r#"{"t":true}"#, "t", "REGEX", r#""true""#, N),
    (r#"{"t":null}"#, "t", "REGEX", r#"".*""#, N),
    (r#"{}"#, "t", "REGEX", r#""None""#, N),
];

#[test]
fn regex() {
    run_rows(REGEX, true);
}

#[rustfmt::skip]
const PERCENTAGE_SPLIT: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "PERCENTAGE_SPLIT", r#""100""#, M),
    (r#"{"t":"abc"}"#, "t", "PERCENTAGE_SPLIT", r#""1""#, N),
    (r#"{"t":42}"#, "t", "PERCENTAGE_SPLIT", r#""100""#, M),
    (r#"{"t":42}"#, "t", "PERCENTAGE_SPLIT", r#""0""#, N),
    (r#"{"t":1.5}"#, "t", "PERCENTAGE_SPLIT", r#""99.9""#, M),
    (r#"{"t":1.5}"#, "t", "PERCENTAGE_SPLIT", r#""0.5""#, N),
    (r#"{"t":true}"#, "t", "PERCENTAGE_SPLIT", r#""100""#, M),
    (r#"{"t":true}"#, "t", "PERCENTAGE_SPLIT", r#""1""#, N),
    (r#"{"t":null}"#, "t", "PERCENTAGE_SPLIT", r#""100""#, N),
    (r#"{}"#, "t", "PERCENTAGE_SPLIT", r#""100""#, N),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""100""#, M),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""0""#, N),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""50""#, M),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""40""#, M),
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""abc""#, N),
];

#[test]
fn percentage_split() {
    run_rows(PERCENTAGE_SPLIT, true);
}

#[rustfmt::skip]
const MODULO: &[Row] = &[
    (r#"{"t":4}"#, "t", "MODULO", r#""2|0""#, M),
    (r#"{"t":4}"#, "t", "MODULO", r#""2|1""#, N),
    (r#"{"t":5.5}"#, "t", "MODULO", r#""2|1.5""#, M),
    (r#"{"t":5.5}"#, "t", "MODULO", r#""2|1""#, N),
    (r#"{"t":true}"#, "t", "MODULO", r#""2|1""#, M),
    (r#"{"t":false}"#, "t", "MODULO", r#""2|1""#, N),
    (r#"{"t":"abc"}"#, "t", "MODULO", r#""2|0""#, N),
    (r#"{"t":null}"#, "t", "MODULO", r#""2|0""#, N),
    (r#"{"t":4}"#, "t", "MODULO", r#""2""#, N),
    (r#"{"t":4}"#, "t", "MODULO", r#""a|b""#, N),
    (r#"{"t":4}"#, "t", "MODULO", r#""2|0|0""#, N),
    (r#"{"t":4}"#, "t", "MODULO", r#""""#, N),
];

#[test]
fn modulo() {
    run_rows(MODULO, true);
}

#[rustfmt::skip]
const IS_SET: &[Row] = &[
    (r#"{"t":""}"#, "t", "IS_SET", r#""""#, M),
    (r#"{"t":0}"#, "t", "IS_SET", r#""""#, M),
    (r#"{"t":0.0}"#, "t", "IS_SET", r#""""#, M),
    (r#"{"t":false}"#, "t", "IS_SET", r#""""#, M),
    (r#"{"t":null}"#, "t", "IS_SET", r#""""#, N),
    (r#"{}"#, "t", "IS_SET", r#""""#, N),
];

#[test]
fn is_set() {
    run_rows(IS_SET, true);
}

#[rustfmt::skip]
const IS_NOT_SET: &[Row] = &[
    (r#"{"t":""}"#, "t", "IS_NOT_SET", r#""""#, N),
    (r#"{"t":0}"#, "t", "IS_NOT_SET", r#""""#, N),
    (r#"{"t":0.0}"#, "t", "IS_NOT_SET", r#""""#, N),
    (r#"{"t":false}"#, "t", "IS_NOT_SET", r#""""#, N),
    (r#"{"t":null}"#, "t", "IS_NOT_SET", r#""""#, M),
    (r#"{}"#, "t", "IS_NOT_SET", r#"null"#, M),
];

#[test]
fn is_not_set() {
    run_rows(IS_NOT_SET, true);
}

#[rustfmt::skip]
const IN: &[Row] = &[
    (r#"{"t":"b"}"#, "t", "IN", r#""a,b,c""#, M),
    (r#"{"t":"d"}"#, "t", "IN", r#""a,b,c""#, N),
    (r#"{"t":"a"}"#, "t", "IN", r#""[\"a\",\"b\"]""#, M),
    (r#"{"t":"c"}"#, "t", "IN", r#""[\"a\",\"b\"]""#, N),
    (r#"{"t":"a"}"#, "t", "IN", r#"["a","b"]"#, M),
    (r#"{"t":"c"}"#, "t", "IN", r#"["a","b"]"#, N),
    (r#"{"t":1}"#, "t", "IN", r#""1,2""#, M),
    (r#"{"t":3}"#, "t", "IN", r#""1,2""#, N),
    (r#"{"t":1}"#, "t", "IN", r#"[1,2]"#, M),
    (r#"{"t":1}"#, "t", "IN", r#""[1,2]""#, M),
    (r#"{"t":3}"#, "t", "IN", r#"[1,2]"#, N),
    (r#"{"t":1.5}"#, "t", "IN", r#""1.5""#, N),
    (r#"{"t":1.5}"#, "t", "IN", r#"["1.5"]"#, N),
    (r#"{"t":true}"#, "t", "IN", r#""True""#, N),
    (r#"{"t":true}"#, "t", "IN", r#"[true]"#, N),
    (r#"{"t":null}"#, "t", "IN", r#""None""#, N),
    (r#"{}"#, "t", "IN", r#""""#, N),
];

#[test]
fn in_operator() {
    run_rows(IN, true);
}

#[rustfmt::skip]
const UNKNOWN_OPERATOR: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "FOO", r#""abc""#, N),
    (r#"{}"#, "t", "FOO", r#""abc""#, N),
    (r#"{"t":1}"#, "t", "equal", r#""1""#, N),
    (r#"{"t":"abc"}"#, "t", "", r#""abc""#, N),
];

#[test]
fn unknown_operator() {
    run_rows(UNKNOWN_OPERATOR, true);
}

/// No identity at all: every trait reads as null.
#[rustfmt::skip]
const NO_IDENTITY: &[Row] = &[
    (r#"{}"#, "", "PERCENTAGE_SPLIT", r#""100""#, N),
    (r#"{}"#, "t", "IS_NOT_SET", r#""""#, M),
    (r#"{}"#, "t", "IS_SET", r#""""#, N),
    (r#"{}"#, "$.identity.identifier", "IS_NOT_SET", r#""""#, M),
    (r#"{}"#, "$.environment.key", "EQUAL", r#""env""#, M),
    (r#"{}"#, "t", "IN", r#""None""#, N),
    (r#"{}"#, "t", "NOT_EQUAL", r#""x""#, N),
    (r#"{}"#, "t", "MODULO", r#""2|0""#, N),
    (r#"{}"#, "t", "REGEX", r#"".*""#, N),
];

#[test]
fn without_identity() {
    run_rows(NO_IDENTITY, false);
}

/// Unknown operators are reported as diagnostics by the compiler but still evaluate (as never
/// matching, like the reference).
#[test]
fn unknown_operator_is_a_diagnostic() {
    let ctx = common::cond_ctx(
        Some(serde_json::json!({"t": "abc"})),
        "t",
        "FOO",
        serde_json::json!("abc"),
    );
    let (_env, diagnostics) = flagpole_engine::Environment::from_context(&ctx).unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert!(
        diagnostics[0].path.contains("operator"),
        "{}",
        diagnostics[0]
    );
}
