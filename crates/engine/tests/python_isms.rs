//! The Python-isms the engine must reproduce (the reference is Python; its trait typing is
//! `flag_engine/context/mappers.py`, semver `flag_engine/utils/semver.py`, hashing
//! `flag_engine/utils/hashing.py`): trait coercion by strict ASCII regexes (`"007"` → 7, `"1.50"` →
//! 1.5, `"1e5"` stays a string), bool casting of condition values, Python `int()`/`float()` parsing
//! (`"+42"`, `" 42 "`, `"4_2"`, NaN, inf), semver with build metadata, prereleases and the
//! trailing-newline quirk, the `re.match` regex dialect, Python's float `%`, IN without trimming,
//! what PERCENTAGE_SPLIT hashes, known hashing vectors (incl. the 9998 re-hash), `str()` of
//! identifiers and float repr in reasons.
//!
//! Every expectation was produced by running the reference (`flagsmith-flag-engine` 11.1.1) on
//! the same context.

mod common;

use common::{run_id_rows, run_mv_rows, run_rows, Exp::*, IdRow, MvRow, Row};

/// How trait strings are typed (strict ASCII regexes) and JSON number kinds.
#[rustfmt::skip]
const COERCION_OF_CONTEXT_VALUES: &[Row] = &[
    (r#"{"t":"007"}"#, "t", "EQUAL", r#""7""#, M),
    (r#"{"t":"007"}"#, "t", "EQUAL", r#""007""#, M),
    (r#"{"t":"007"}"#, "t", "IN", r#""007""#, N),
    (r#"{"t":"007"}"#, "t", "IN", r#""7""#, M),
    (r#"{"t":"-0"}"#, "t", "EQUAL", r#""0""#, M),
    (r#"{"t":"-0"}"#, "t", "IN", r#""0""#, M),
    (r#"{"t":"1.50"}"#, "t", "EQUAL", r#""1.5""#, M),
    (r#"{"t":"1.50"}"#, "t", "REGEX", r#""1\\.50""#, N),
    (r#"{"t":"1.50"}"#, "t", "REGEX", r#""1\\.5$""#, M),
    (r#"{"t":"1.10"}"#, "t", "REGEX", r#""^1\\.10$""#, N),
    (r#"{"t":"-0.0"}"#, "t", "EQUAL", r#""0""#, M),
    (r#"{"t":"-0.0"}"#, "t", "REGEX", r#""-0\\.0""#, M),
    (r#"{"t":"1.0"}"#, "t", "EQUAL", r#""1""#, M),
    (r#"{"t":"1.0"}"#, "t", "IN", r#""1.0""#, N),
    (r#"{"t":"1e5"}"#, "t", "EQUAL", r#""100000""#, N),
    (r#"{"t":"1e5"}"#, "t", "EQUAL", r#""1e5""#, M),
    (r#"{"t":"1e5"}"#, "t", "CONTAINS", r#""e""#, M),
    (r#"{"t":"+1"}"#, "t", "EQUAL", r#""1""#, N),
    (r#"{"t":"+1"}"#, "t", "CONTAINS", r#""+""#, M),
    (r#"{"t":" 1"}"#, "t", "CONTAINS", r#"" ""#, M),
    (r#"{"t":"1."}"#, "t", "CONTAINS", r#"".""#, M),
    (r#"{"t":".5"}"#, "t", "GREATER_THAN", r#""0""#, N),
    (r#"{"t":"0x10"}"#, "t", "EQUAL", r#""16""#, N),
    (r#"{"t":"123"}"#, "t", "CONTAINS", r#""2""#, N),
    (r#"{"t":"123"}"#, "t", "MODULO", r#""2|1""#, M),
    (r#"{"t":"\u0663"}"#, "t", "EQUAL", r#""3""#, N),
    (r#"{"t":1.0}"#, "t", "IN", r#""1.0""#, N),
    (r#"{"t":1.0}"#, "t", "EQUAL", r#""1""#, M),
    (r#"{"t":1}"#, "t", "IN", r#""1""#, M),
    (r#"{"t":100000000000000000000000000000}"#, "t", "EQUAL", r#""100000000000000000000000000000""#, M),
    (r#"{"t":100000000000000000000000000000}"#, "t", "GREATER_THAN", r#""99999999999999999999999999999""#, M),
    (r#"{"t":"123456789012345678901234567890"}"#, "t", "LESS_THAN", r#""123456789012345678901234567891""#, M),
    (r#"{"t":"123456789012345678901234567890"}"#, "t", "IN", r#""123456789012345678901234567890""#, M),
    (r#"{"t":1e400}"#, "t", "EQUAL", r#""inf""#, M),
    (r#"{"t":-1e400}"#, "t", "LESS_THAN", r#""-1e308""#, M),
];

#[test]
fn coercion_of_context_values() {
    run_rows(COERCION_OF_CONTEXT_VALUES, true);
}

/// A bool context value compares with `sv not in {"False", "false"}`.
#[rustfmt::skip]
const BOOL_CONTEXT_VALUES: &[Row] = &[
    (r#"{"t":true}"#, "t", "EQUAL", r#""FALSE""#, M),
    (r#"{"t":true}"#, "t", "EQUAL", r#""0""#, M),
    (r#"{"t":true}"#, "t", "EQUAL", r#""""#, M),
    (r#"{"t":true}"#, "t", "EQUAL", r#"null"#, M),
    (r#"{"t":true}"#, "t", "EQUAL", r#""False""#, N),
    (r#"{"t":false}"#, "t", "EQUAL", r#""False""#, M),
    (r#"{"t":false}"#, "t", "EQUAL", r#""FALSE""#, N),
    (r#"{"t":false}"#, "t", "EQUAL", r#""false""#, M),
    (r#"{"t":false}"#, "t", "EQUAL", r#""no""#, N),
    (r#"{"t":true}"#, "t", "GREATER_THAN", r#""false""#, M),
    (r#"{"t":false}"#, "t", "LESS_THAN", r#""0""#, M),
    (r#"{"t":true}"#, "t", "NOT_EQUAL", r#""False""#, M),
    (r#"{"t":true}"#, "t", "GREATER_THAN_INCLUSIVE", r#""1""#, M),
    (r#"{"t":"true"}"#, "t", "EQUAL", r#""True""#, N),
];

#[test]
fn bool_context_values() {
    run_rows(BOOL_CONTEXT_VALUES, true);
}

/// `int()` on the condition value; the `null` value as `"None"`.
#[rustfmt::skip]
const INT_CONTEXT_VALUES: &[Row] = &[
    (r#"{"t":42}"#, "t", "EQUAL", r#""+42""#, M),
    (r#"{"t":42}"#, "t", "EQUAL", r#"" 42 ""#, M),
    (r#"{"t":42}"#, "t", "EQUAL", r#""4_2""#, M),
    (r#"{"t":42}"#, "t", "EQUAL", r#""42.0""#, N),
    (r#"{"t":42}"#, "t", "NOT_EQUAL", r#""42.0""#, N),
    (r#"{"t":42}"#, "t", "EQUAL", r#""4__2""#, N),
    (r#"{"t":42}"#, "t", "EQUAL", r#""_42""#, N),
    (r#"{"t":42}"#, "t", "EQUAL", r#""\u0664\u0662""#, M),
    (r#"{"t":42}"#, "t", "EQUAL", r#""0x2a""#, N),
    (r#"{"t":42}"#, "t", "EQUAL", r#""\t42\n""#, M),
    (r#"{"t":5}"#, "t", "NOT_EQUAL", r#""x""#, N),
    (r#"{"t":5}"#, "t", "LESS_THAN", r#""x""#, N),
    (r#"{"t":-3}"#, "t", "LESS_THAN", r#""-2""#, M),
    (r#"{"t":"None"}"#, "t", "EQUAL", r#"null"#, M),
    (r#"{"t":"x"}"#, "t", "NOT_EQUAL", r#"null"#, M),
];

#[test]
fn int_context_values() {
    run_rows(INT_CONTEXT_VALUES, true);
}

/// `float()` on the condition value, NaN and infinities.
#[rustfmt::skip]
const FLOAT_CONTEXT_VALUES: &[Row] = &[
    (r#"{"t":1.5}"#, "t", "EQUAL", r#""nan""#, N),
    (r#"{"t":1.5}"#, "t", "NOT_EQUAL", r#""nan""#, M),
    (r#"{"t":1.5}"#, "t", "LESS_THAN", r#""NaN""#, N),
    (r#"{"t":10.0}"#, "t", "EQUAL", r#""1e1""#, M),
    (r#"{"t":1e308}"#, "t", "LESS_THAN", r#""inf""#, M),
    (r#"{"t":1e308}"#, "t", "GREATER_THAN", r#""-Infinity""#, M),
    (r#"{"t":1.5}"#, "t", "EQUAL", r#"" 1.5 ""#, M),
    (r#"{"t":10.5}"#, "t", "EQUAL", r#""1_0.5""#, M),
    (r#"{"t":0.1}"#, "t", "EQUAL", r#""0.1000000000000000055511151231257827""#, M),
    (r#"{"t":1.5}"#, "t", "EQUAL", r#""1.5x""#, N),
    (r#"{"t":1.5}"#, "t", "NOT_EQUAL", r#""1.5x""#, N),
];

#[test]
fn float_context_values() {
    run_rows(FLOAT_CONTEXT_VALUES, true);
}

/// `:semver` comparisons (python-semver 3 strict grammar, build ignored).
#[rustfmt::skip]
const SEMVER: &[Row] = &[
    (r#"{"t":"1.2.3+build"}"#, "t", "EQUAL", r#""1.2.3:semver""#, M),
    (r#"{"t":"1.2.3-alpha"}"#, "t", "LESS_THAN", r#""1.2.3:semver""#, M),
    (r#"{"t":"1.2.3-alpha.1"}"#, "t", "LESS_THAN", r#""1.2.3-alpha.beta:semver""#, M),
    (r#"{"t":"1.2.3-alpha"}"#, "t", "LESS_THAN", r#""1.2.3-alpha.1:semver""#, M),
    (r#"{"t":"1.2.3-2"}"#, "t", "LESS_THAN", r#""1.2.3-10:semver""#, M),
    (r#"{"t":"1.2.3-B"}"#, "t", "LESS_THAN", r#""1.2.3-a:semver""#, M),
    (r#"{"t":"1.2.3\n"}"#, "t", "EQUAL", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.2.3"}"#, "t", "EQUAL", r#""1.2.3\n:semver""#, N),
    (r#"{"t":"1.2.3\n\n"}"#, "t", "EQUAL", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.2"}"#, "t", "EQUAL", r#""1.2.0:semver""#, N),
    (r#"{"t":"v1.2.3"}"#, "t", "EQUAL", r#""1.2.3:semver""#, N),
    (r#"{"t":"01.2.3"}"#, "t", "EQUAL", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.10.0"}"#, "t", "GREATER_THAN", r#""1.9.0:semver""#, M),
    (r#"{"t":"1.2.3"}"#, "t", "GREATER_THAN_INCLUSIVE", r#""1.2.3+zzz:semver""#, M),
    (r#"{"t":"1.2.3"}"#, "t", "NOT_EQUAL", r#""1.2.4:semver""#, M),
    (r#"{"t":"1.2.3"}"#, "t", "LESS_THAN_INCLUSIVE", r#""1.2.2:semver""#, N),
    (r#"{"t":"1.2.3"}"#, "t", "EQUAL", r#""1.2.3:SEMVER""#, N),
    (r#"{"t":"1.2.3-01"}"#, "t", "LESS_THAN", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.2.3-0a"}"#, "t", "LESS_THAN", r#""1.2.3:semver""#, M),
    (r#"{"t":"1.2.1\u0663"}"#, "t", "EQUAL", r#""1.2.13:semver""#, N),
    (r#"{"t":"1.2.3"}"#, "t", "CONTAINS", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.2.3:semver"}"#, "t", "NOT_CONTAINS", r#""1.2.3:semver""#, N),
    (r#"{"t":"1.2.3"}"#, "t", "EQUAL", r#""1.2:semver""#, N),
    (r#"{"t":"1.2.3"}"#, "t", "EQUAL", r#"":semver""#, N),
];

#[test]
fn semver() {
    run_rows(SEMVER, true);
}

/// `re.match` (anchored at the start only, `$` before a final newline), on `str(cv)`.
#[rustfmt::skip]
const REGEX_DIALECT: &[Row] = &[
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""b""#, N),
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""ab""#, M),
    (r#"{"t":"abc"}"#, "t", "REGEX", r#""abc$""#, M),
    (r#"{"t":"abc\n"}"#, "t", "REGEX", r#""abc$""#, M),
    (r#"{"t":"abc\n"}"#, "t", "REGEX", r#""^abc$""#, M),
    (r#"{"t":"abc\n"}"#, "t", "REGEX", r#""abc\\Z""#, N),
    (r#"{"t":"abc\n\n"}"#, "t", "REGEX", r#""abc$""#, N),
    (r#"{"t":"xabc"}"#, "t", "REGEX", r#"".*abc""#, M),
    (r#"{"t":"ABC"}"#, "t", "REGEX", r#""abc""#, N),
    (r#"{"t":"ABC"}"#, "t", "REGEX", r#""(?i)abc""#, M),
    (r#"{"t":"ab"}"#, "t", "REGEX", r#""a(?=b)""#, M),
    (r#"{"t":"aa"}"#, "t", "REGEX", r#""(a)\\1""#, M),
    (r#"{"t":"a\nb"}"#, "t", "REGEX", r#""a.b""#, N),
    (r#"{"t":"None"}"#, "t", "REGEX", r#"null"#, M),
    (r#"{"t":1e16}"#, "t", "REGEX", r#""1e\\+16$""#, M),
    (r#"{"t":100.0}"#, "t", "REGEX", r#""100\\.0$""#, M),
    (r#"{"t":0.00001}"#, "t", "REGEX", r#""1e-05$""#, M),
    (r#"{"t":false}"#, "t", "REGEX", r#""False$""#, M),
    (r#"{"t":"\u0663"}"#, "t", "REGEX", r#""\\d""#, M),
    (r#"{"t":"\u00e9"}"#, "t", "REGEX", r#""\\w$""#, M),
    (r#"{"t":"007"}"#, "t", "REGEX", r#""7""#, M),
    (r#"{"t":"a"}"#, "t", "REGEX", r#""""#, M),
    (r#"{"t":"x1"}"#, "t", "REGEX", r#""\\D\\d""#, M),
];

#[test]
fn regex_dialect() {
    run_rows(REGEX_DIALECT, true);
}

/// Float `%` takes the divisor's sign; `==` is exact.
#[rustfmt::skip]
const MODULO_PYTHON_SEMANTICS: &[Row] = &[
    (r#"{"t":-1}"#, "t", "MODULO", r#""3|2""#, M),
    (r#"{"t":0.3}"#, "t", "MODULO", r#""0.1|0.1""#, N),
    (r#"{"t":"4"}"#, "t", "MODULO", r#""2|0""#, M),
    (r#"{"t":-7}"#, "t", "MODULO", r#""-3|-1""#, M),
    (r#"{"t":7}"#, "t", "MODULO", r#""-3|-2""#, M),
    (r#"{"t":7.5}"#, "t", "MODULO", r#""2|1.5""#, M),
    (r#"{"t":4}"#, "t", "MODULO", r#"" 2 | 0 ""#, M),
    (r#"{"t":4}"#, "t", "MODULO", r#""2.0|0.0""#, M),
    (r#"{"t":4}"#, "t", "MODULO", r#""inf|4""#, M),
    (r#"{"t":-4}"#, "t", "MODULO", r#""inf|inf""#, M),
    (r#"{"t":4}"#, "t", "MODULO", r#""nan|nan""#, N),
    (r#"{"t":10}"#, "t", "MODULO", r#""3|1e0""#, M),
    (r#"{"t":"1.5"}"#, "t", "MODULO", r#""1|0.5""#, M),
    (r#"{"t":9007199254740993}"#, "t", "MODULO", r#""2|0""#, M),
];

#[test]
fn modulo_python_semantics() {
    run_rows(MODULO_PYTHON_SEMANTICS, true);
}

/// IN splits CSV without trimming, parses `[`-strings as JSON, never matches floats.
#[rustfmt::skip]
const IN_VALUES: &[Row] = &[
    (r#"{"t":"b"}"#, "t", "IN", r#""a, b""#, N),
    (r#"{"t":" b"}"#, "t", "IN", r#""a, b""#, M),
    (r#"{"t":"a"}"#, "t", "IN", r#""[bad""#, N),
    (r#"{"t":"[bad"}"#, "t", "IN", r#""[bad""#, M),
    (r#"{"t":"a"}"#, "t", "IN", r#"" [\"a\"]""#, N),
    (r#"{"t":""}"#, "t", "IN", r#""""#, M),
    (r#"{"t":"a"}"#, "t", "IN", r#""[\"a\", 1]""#, M),
    (r#"{"t":"1"}"#, "t", "IN", r#""[\"a\", 1]""#, M),
    (r#"{"t":"True"}"#, "t", "IN", r#"[true]"#, M),
    (r#"{"t":"True"}"#, "t", "IN", r#""[true]""#, M),
    (r#"{"t":"1.0"}"#, "t", "IN", r#"[1.0]"#, N),
    (r#"{"t":"x"}"#, "t", "IN", r#"["1.0", 1.0]"#, N),
    (r#"{"t":"None"}"#, "t", "IN", r#"[null]"#, M),
    (r#"{"t":"[1, 2]"}"#, "t", "IN", r#"[[1,2]]"#, M),
    (r#"{"t":1}"#, "t", "IN", r#""[1, 2]""#, M),
    (r#"{"t":"042"}"#, "t", "IN", r#""042""#, N),
    (r#"{"t":"042"}"#, "t", "IN", r#""42""#, M),
    (r#"{"t":-1}"#, "t", "IN", r#""-1""#, M),
    (r#"{"t":100000000000000000000000000000}"#, "t", "IN", r#""100000000000000000000000000000""#, M),
    (r#"{"t":"a,b"}"#, "t", "IN", r#""a,b""#, N),
    (r#"{"t":"a,b"}"#, "t", "IN", r#"["a,b"]"#, M),
    (r#"{"t":"{}"}"#, "t", "IN", r#""{}""#, M),
    (r#"{"t":"a"}"#, "t", "IN", r#""[\"a\"] ""#, M),
    (r#"{"t":"1.5"}"#, "t", "IN", r#"["1.5"]"#, N),
];

#[test]
fn in_values() {
    run_rows(IN_VALUES, true);
}

/// What a trait hashes as (`str(cv)` after coercion) and the inclusive threshold.
#[rustfmt::skip]
const PERCENTAGE_SPLIT_HASHING_OF_VALUES: &[Row] = &[
    (r#"{"t":true}"#, "t", "PERCENTAGE_SPLIT", r#""23.59471894378876""#, M),
    (r#"{"t":true}"#, "t", "PERCENTAGE_SPLIT", r#""23.594718943788756""#, N),
    (r#"{"t":"True"}"#, "t", "PERCENTAGE_SPLIT", r#""23.59471894378876""#, M),
    (r#"{"t":"1.10"}"#, "t", "PERCENTAGE_SPLIT", r#""45.699139827965595""#, M),
    (r#"{"t":1.1}"#, "t", "PERCENTAGE_SPLIT", r#""45.69913982796559""#, N),
    (r#"{"t":"007"}"#, "t", "PERCENTAGE_SPLIT", r#""3.75""#, M),
    (r#"{"t":"007"}"#, "t", "PERCENTAGE_SPLIT", r#""3.74""#, N),
    (r#"{"t":"x"}"#, "t", "PERCENTAGE_SPLIT", r#"" 100 ""#, M),
    (r#"{"t":"x"}"#, "t", "PERCENTAGE_SPLIT", r#""1e2""#, M),
    (r#"{"t":"x"}"#, "t", "PERCENTAGE_SPLIT", r#""inf""#, M),
    (r#"{"t":"x"}"#, "t", "PERCENTAGE_SPLIT", r#""nan""#, N),
    (r#"{"t":"x"}"#, "t", "PERCENTAGE_SPLIT", r#""-inf""#, N),
    (r#"{"t":"id9777"}"#, "t", "PERCENTAGE_SPLIT", r#""0""#, M),
    (r#"{"t":"id9777"}"#, "t", "PERCENTAGE_SPLIT", r#""-0.0""#, M),
    (r#"{"t":"id11437"}"#, "t", "PERCENTAGE_SPLIT", r#""50""#, M),
    (r#"{"t":"id11437"}"#, "t", "PERCENTAGE_SPLIT", r#""49.99999999999999""#, N),
];

#[test]
fn percentage_split_hashing_of_values() {
    run_rows(PERCENTAGE_SPLIT_HASHING_OF_VALUES, true);
}

/// Hashing vectors of `get_hashed_percentage_for_object_ids` (incl. the 9998 re-hash), exact 0/50
/// boundaries, raw vs coerced identity key, key enrichment.
#[rustfmt::skip]
const HASHING_VECTORS: &[IdRow] = &[
    (r#"{"identifier": "user", "key": "2"}"#, "1", "", "PERCENTAGE_SPLIT", r#""26.59531906381276""#, M),
    (r#"{"identifier": "user", "key": "2"}"#, "1", "", "PERCENTAGE_SPLIT", r#""26.595319063812756""#, N),
    (r#"{"identifier": "user", "key": "10"}"#, "9", "", "PERCENTAGE_SPLIT", r#""57.17143428685737""#, M),
    (r#"{"identifier": "user", "key": "10"}"#, "9", "", "PERCENTAGE_SPLIT", r#""57.17143428685736""#, N),
    (r#"{"identifier": "user", "key": "32103813"}"#, "78986", "", "PERCENTAGE_SPLIT", r#""49.27985597119424""#, M),
    (r#"{"identifier": "user", "key": "32103813"}"#, "78986", "", "PERCENTAGE_SPLIT", r#""49.27985597119423""#, N),
    (r#"{"identifier": "user", "key": "test_env_foobar"}"#, "12345", "", "PERCENTAGE_SPLIT", r#""51.990398079615915""#, M),
    (r#"{"identifier": "user", "key": "test_env_foobar"}"#, "12345", "", "PERCENTAGE_SPLIT", r#""51.99039807961591""#, N),
    (r#"{"identifier": "user", "key": "\u00fcn\u00efc\u00f6d\u00e9"}"#, "seg", "", "PERCENTAGE_SPLIT", r#""82.03640728145629""#, M),
    (r#"{"identifier": "user", "key": "\u00fcn\u00efc\u00f6d\u00e9"}"#, "seg", "", "PERCENTAGE_SPLIT", r#""82.03640728145628""#, N),
    (r#"{"identifier": "user", "key": "identity_4692"}"#, "1", "", "PERCENTAGE_SPLIT", r#""2.5805161032206443""#, M),
    (r#"{"identifier": "user", "key": "identity_4692"}"#, "1", "", "PERCENTAGE_SPLIT", r#""2.580516103220644""#, N),
    (r#"{"identifier": "user", "key": "id3141"}"#, "1", "", "PERCENTAGE_SPLIT", r#""86.05721144228846""#, M),
    (r#"{"identifier": "user", "key": "id3141"}"#, "1", "", "PERCENTAGE_SPLIT", r#""86.05721144228845""#, N),
    (r#"{"identifier": "user", "key": "id9777"}"#, "1", "", "PERCENTAGE_SPLIT", r#""0""#, M),
    (r#"{"identifier": "user", "key": "id11437"}"#, "1", "", "PERCENTAGE_SPLIT", r#""50""#, M),
    (r#"{"identifier": "user", "key": "id11437"}"#, "1", "", "PERCENTAGE_SPLIT", r#""49.99999999999999""#, N),
    (r#"{"identifier": "user", "key": "007"}"#, "1", "", "PERCENTAGE_SPLIT", r#""3.75""#, N),
    (r#"{"identifier": "user", "key": "007"}"#, "1", "$.identity.key", "PERCENTAGE_SPLIT", r#""3.75""#, M),
    (r#"{"identifier": "user", "key": "007"}"#, "1", "", "PERCENTAGE_SPLIT", r#""99.55""#, M),
    (r#"{"identifier": "user", "key": "007"}"#, "1", "$.identity.key", "PERCENTAGE_SPLIT", r#""3.74""#, N),
    (r#"{"identifier": "user", "key": ""}"#, "1", "", "PERCENTAGE_SPLIT", r#""25.96519303860772""#, M),
    (r#"{"identifier": "user", "key": ""}"#, "1", "", "PERCENTAGE_SPLIT", r#""25.965193038607715""#, N),
    (r#"{"identifier":"user","key":null}"#, "1", "", "PERCENTAGE_SPLIT", r#""25.96519303860772""#, M),
    (r#"{"identifier":"user"}"#, "1", "", "PERCENTAGE_SPLIT", r#""25.965193038607715""#, N),
    (r#"{"identifier":"user"}"#, "2", "", "PERCENTAGE_SPLIT", r#""47.409481896379276""#, M),
    (r#"{"identifier":"user"}"#, "", "", "PERCENTAGE_SPLIT", r#""95.97919583916783""#, M),
    (r#"{"identifier":"user"}"#, "", "", "PERCENTAGE_SPLIT", r#""95.97919583916782""#, N),
];

#[test]
fn hashing_vectors() {
    run_id_rows(HASHING_VECTORS);
}

/// Identifier coercion and `str()` of the identifier in the derived key.
#[rustfmt::skip]
const IDENTITY_VALUES_ARE_COERCED_AND_RENDERED: &[IdRow] = &[
    (r#"{"identifier":"007"}"#, "1", "$.identity.identifier", "EQUAL", r#""7""#, M),
    (r#"{"identifier":"007"}"#, "1", "$.identity.identifier", "IN", r#""007""#, N),
    (r#"{"identifier":"007"}"#, "1", "$.identity.identifier", "IN", r#""7""#, M),
    (r#"{"identifier":"007"}"#, "1", "$.identity.identifier", "EQUAL", r#""007""#, M),
    (r#"{"identifier":"007"}"#, "1", "$.identity.key", "EQUAL", r#""env_007""#, M),
    (r#"{"identifier":7}"#, "1", "$.identity.key", "EQUAL", r#""env_7""#, M),
    (r#"{"identifier":1.0}"#, "1", "$.identity.key", "EQUAL", r#""env_1.0""#, M),
    (r#"{"identifier":1e16}"#, "1", "$.identity.key", "EQUAL", r#""env_1e+16""#, M),
    (r#"{"identifier":true}"#, "1", "$.identity.key", "EQUAL", r#""env_True""#, M),
    (r#"{"identifier":null}"#, "1", "$.identity.key", "EQUAL", r#""env_None""#, M),
    (r#"{"identifier":"u","key":"123"}"#, "1", "$.identity.key", "GREATER_THAN", r#""99""#, M),
    (r#"{"identifier":"u","key":"1.50"}"#, "1", "$.identity.key", "EQUAL", r#""1.5""#, M),
    (r#"{"identifier":"u","key":0}"#, "1", "$.identity.key", "EQUAL", r#""env_u""#, M),
    (r#"{"identifier":"u","key":false}"#, "1", "$.identity.key", "EQUAL", r#""env_u""#, M),
    (r#"{"identifier":"u","traits":{"n":"1.50"}}"#, "1", "$.identity.traits.n", "EQUAL", r#""1.5""#, M),
    (r#"{"identifier":"u","traits":{"n":"007"}}"#, "1", "$.identity.traits.n", "IN", r#""7""#, M),
];

#[test]
fn identity_values_are_coerced_and_rendered() {
    run_id_rows(IDENTITY_VALUES_ARE_COERCED_AND_RENDERED);
}

/// `SPLIT; weight=<str(weight)>` keeps the JSON number kind and Python's float repr.
#[rustfmt::skip]
const SPLIT_REASON_USES_PYTHON_FLOAT_REPR: &[MvRow] = &[
    ("1", Some("2"), r#"[{"value": "v", "weight": 30, "priority": 1, "key": "k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "v", "weight": 30.0, "priority": 1, "key": "k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30.0","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":3e1,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=30.0","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value": "v", "weight": 54.54, "priority": 1, "key": "k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=54.54","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("id9777"), r#"[{"value":"v","weight":0.00001,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=1e-05","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("id9777"), r#"[{"value":"v","weight":1e-7,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=1e-07","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":1e2,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=100.0","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":100.5,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=100.5","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":1e16,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=1e+16","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":26.595319063812763,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"SPLIT; weight=26.595319063812763","value":"v","variant":"k"}},"segments":[]}"#),
    ("1", Some("2"), r#"[{"value":"v","weight":26.59531906381276,"priority":1,"key":"k"}]"#,
     r#"{"flags":{"mv":{"enabled":true,"name":"mv","reason":"STATIC","value":"control","variant":"control"}},"segments":[]}"#),
];

#[test]
fn split_reason_uses_python_float_repr() {
    run_mv_rows(SPLIT_REASON_USES_PYTHON_FLOAT_REPR);
}
