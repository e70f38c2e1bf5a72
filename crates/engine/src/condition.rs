//! Segment conditions: compiled once (condition values pre-parsed as int, float, bool, semver,
//! regex and IN set, exactly as the reference would parse them on every call), then matched
//! against the coerced context value.

use std::cmp::Ordering;
use std::collections::HashSet;

/// An IN list's values (hashed with a fixed-seed fast hasher: filled from the document only).
pub(crate) type ValueSet = HashSet<String, foldhash::fast::FixedState>;

use serde_json::Value;

use crate::error::{EvalError, PyErrorKind};
use crate::hashing::hashed_percentage;
use crate::property::Property;
use crate::python::number::{parse_py_float, parse_py_int, py_float_mod, PyInt};
use crate::python::regex::PyRegex;
use crate::python::repr::write_str_of_json;
use crate::semver::{self, SemVer};
use crate::value::{classify_number, JsonNumber, Scalar};

/// A compiled condition. `property` and `operator` are required keys: their absence is a
/// `KeyError` when the condition is evaluated.
#[derive(Debug)]
pub(crate) struct Condition {
    pub property: Result<Property, EvalError>,
    pub operator: Result<Operator, EvalError>,
    /// The operator and value as written, for `--explain`.
    pub source: ConditionSource,
    /// The slot, among the trait names its rule set reads, of the trait this condition reads by
    /// name (a trait property, or the literal trait a JSONPath property reads first);
    /// [`NO_SLOT`](crate::slots::NO_SLOT) when none (see `slots`).
    pub trait_slot: u16,
}

#[derive(Debug, Clone)]
pub(crate) struct ConditionSource {
    pub property: String,
    pub operator: String,
    pub value: String,
}

#[derive(Debug)]
pub(crate) enum Operator {
    /// The value set, or the error `_get_in_values` raises (missing/null/non-string value).
    In(Result<ValueSet, EvalError>),
    /// `float(value)`: `Ok(None)` when it is a `ValueError` (never matches).
    PercentageSplit(Result<Option<f64>, EvalError>),
    IsSet,
    IsNotSet,
    Compare(CompareOp, Result<CompareValue, EvalError>),
    NotContains(Result<String, EvalError>),
    Regex(Result<PyRegex, EvalError>),
    Modulo(Result<ModuloSpec, EvalError>),
    /// An operator the reference does not know: never matches.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Equal,
    NotEqual,
    GreaterThan,
    GreaterThanInclusive,
    LessThan,
    LessThanInclusive,
    Contains,
}

/// The condition value cast every way the reference may cast it (the cast follows the kind of
/// the context value, which is only known per call).
#[derive(Debug)]
pub(crate) struct CompareValue {
    /// For string context values.
    str_side: StrSide,
    /// `int(value)`: `Ok(None)` = ValueError/TypeError (false), `Err` = raises (OverflowError).
    int_side: Result<Option<PyInt>, EvalError>,
    float_side: Result<Option<f64>, EvalError>,
    /// `value not in ("False", "false")`.
    bool_side: bool,
}

impl CompareValue {
    /// Whether comparing with it cannot raise whatever the (tame) context value: the int and
    /// float casts of the value are errors only for an infinite or unconvertible value.
    pub(crate) fn cannot_raise(&self) -> bool {
        self.int_side.is_ok() && self.float_side.is_ok()
    }
}

#[derive(Debug)]
enum StrSide {
    /// `is_semver(value)` raised a TypeError (a non-string, non-list value): false.
    Never,
    Plain(String),
    /// `":semver"` suffix: the rest, and its parse.
    Semver {
        stripped: String,
        parsed: Option<SemVer<'static>>,
    },
}

#[derive(Debug)]
pub(crate) enum ModuloSpec {
    /// `not value`: false.
    Falsy,
    /// `value.split` on a non-string: AttributeError when reached.
    NotAString,
    /// Not `"<float>|<float>"`: false.
    Invalid,
    Valid {
        divisor: f64,
        remainder: f64,
    },
}

pub(crate) fn parse_operator(op: &str) -> Option<fn(Option<&Value>) -> Operator> {
    Some(match op {
        "IN" => |v| Operator::In(in_values(v)),
        "PERCENTAGE_SPLIT" => |v| Operator::PercentageSplit(split_threshold(v)),
        "IS_SET" => |_| Operator::IsSet,
        "IS_NOT_SET" => |_| Operator::IsNotSet,
        "EQUAL" => |v| Operator::Compare(CompareOp::Equal, compare_value(v)),
        "NOT_EQUAL" => |v| Operator::Compare(CompareOp::NotEqual, compare_value(v)),
        "GREATER_THAN" => |v| Operator::Compare(CompareOp::GreaterThan, compare_value(v)),
        "GREATER_THAN_INCLUSIVE" => {
            |v| Operator::Compare(CompareOp::GreaterThanInclusive, compare_value(v))
        }
        "LESS_THAN" => |v| Operator::Compare(CompareOp::LessThan, compare_value(v)),
        "LESS_THAN_INCLUSIVE" => {
            |v| Operator::Compare(CompareOp::LessThanInclusive, compare_value(v))
        }
        "CONTAINS" => |v| Operator::Compare(CompareOp::Contains, compare_value(v)),
        "NOT_CONTAINS" => |v| Operator::NotContains(required(v).map(pystr)),
        "REGEX" => |v| regex(v, PyRegex::compile),
        "MODULO" => |v| Operator::Modulo(required(v).map(modulo_spec)),
        _ => return None,
    })
}

/// A `REGEX` condition's operator: its pattern compiled by `compile` (the compiler hands in the
/// one compiled regex `Shared` keeps for an equal pattern; conditions know nothing of sharing).
pub(crate) fn regex(
    v: Option<&Value>,
    compile: impl FnOnce(&str) -> Result<PyRegex, String>,
) -> Operator {
    Operator::Regex(
        required(v).and_then(|v| {
            compile(&pystr(v)).map_err(|e| EvalError::new(PyErrorKind::RegexError, e))
        }),
    )
}

fn required(v: Option<&Value>) -> Result<&Value, EvalError> {
    v.ok_or_else(|| EvalError::key("'value'"))
}

/// Python `str()` of a JSON-loaded value.
pub(crate) fn pystr(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            write_str_of_json(other, &mut out);
            out
        }
    }
}

fn in_values(v: Option<&Value>) -> Result<ValueSet, EvalError> {
    let item = |x: &Value| pystr(x);
    match required(v)? {
        Value::Array(items) => Ok(items.iter().map(item).collect()),
        Value::String(s) => {
            if s.starts_with('[') {
                // Python's json.loads also accepts NaN/Infinity; serde_json does not, and such
                // a list then falls back to comma splitting (a documented gap).
                if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(s) {
                    return Ok(items.iter().map(item).collect());
                }
            }
            Ok(s.split(',').map(str::to_owned).collect())
        }
        Value::Object(_) => Err(EvalError::type_error("unhashable type: 'dict'")),
        other => Err(EvalError::new(
            PyErrorKind::AttributeError,
            format!(
                "'{}' object has no attribute 'startswith'",
                py_type_name(other)
            ),
        )),
    }
}

fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(_) => "int",
            JsonNumber::Float(_) => "float",
        },
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `float(value)` for a JSON-loaded value: `Ok(None)` on ValueError, `Err` on TypeError/Overflow.
fn py_float_of(v: &Value) -> Result<Option<f64>, EvalError> {
    match v {
        Value::String(s) => Ok(parse_py_float(s)),
        Value::Bool(b) => Ok(Some(*b as i64 as f64)),
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Float(f) => Ok(Some(f)),
            JsonNumber::Int(i) => i.to_f64().map(Some).ok_or_else(|| {
                EvalError::new(
                    PyErrorKind::OverflowError,
                    "int too large to convert to float",
                )
            }),
        },
        other => Err(EvalError::type_error(format!(
            "float() argument must be a string or a real number, not '{}'",
            py_type_name(other)
        ))),
    }
}

fn split_threshold(v: Option<&Value>) -> Result<Option<f64>, EvalError> {
    py_float_of(required(v)?)
}

fn compare_value(v: Option<&Value>) -> Result<CompareValue, EvalError> {
    let v = required(v)?;
    let str_side = match v {
        Value::String(s) if s.ends_with(":semver") => {
            let cut = s.char_indices().rev().nth(6).map(|(i, _)| i).unwrap_or(0);
            let stripped = s[..cut].to_owned();
            let parsed = semver::parse(&stripped).map(SemVer::into_owned);
            StrSide::Semver { stripped, parsed }
        }
        Value::String(_) | Value::Null | Value::Array(_) => StrSide::Plain(pystr(v)),
        _ => StrSide::Never,
    };
    let int_side = match v {
        Value::String(s) => Ok(parse_py_int(s)),
        Value::Bool(b) => Ok(Some(PyInt::Small(*b as i64))),
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(i) => Ok(Some(i)),
            JsonNumber::Float(f) if f.is_nan() => Ok(None),
            JsonNumber::Float(f) if f.is_infinite() => Err(EvalError::new(
                PyErrorKind::OverflowError,
                "cannot convert float infinity to integer",
            )),
            JsonNumber::Float(f) => Ok(Some(PyInt::from_f64_trunc(f))),
        },
        _ => Ok(None),
    };
    let float_side = match v {
        Value::Null | Value::Array(_) | Value::Object(_) => Ok(None),
        other => py_float_of(other),
    };
    let bool_side = !matches!(v, Value::String(s) if s == "False" || s == "false");
    Ok(CompareValue {
        str_side,
        int_side,
        float_side,
        bool_side,
    })
}

fn modulo_spec(v: &Value) -> ModuloSpec {
    if !crate::value::json_truthy(v) {
        return ModuloSpec::Falsy;
    }
    let Value::String(s) = v else {
        return ModuloSpec::NotAString;
    };
    let mut parts = s.split('|');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(d), Some(r), None) => match (parse_py_float(d), parse_py_float(r)) {
            (Some(divisor), Some(remainder)) => ModuloSpec::Valid { divisor, remainder },
            _ => ModuloSpec::Invalid,
        },
        _ => ModuloSpec::Invalid,
    }
}

/// The bucket, in [0, 100), a percentage split puts a (non-null) context value in: the hash of
/// the segment key and `str(value)`.
pub(crate) fn split_bucket(cv: &Scalar<'_>, segment_key: &str) -> f64 {
    match cv {
        Scalar::Str(s) => hashed_percentage(segment_key, s),
        other => {
            let mut text = String::new();
            other.write_pystr(&mut text);
            hashed_percentage(segment_key, &text)
        }
    }
}

impl Operator {
    /// Matches a context value (already resolved and coerced; for a percentage split with an
    /// empty property it is the raw identity key rendered with `str()`).
    pub(crate) fn matches(&self, cv: &Scalar<'_>, segment_key: &str) -> Result<bool, EvalError> {
        self.matches_parsed(cv, segment_key, None)
    }

    /// Whether this compares versions (a `:semver` value): then the caller may hand
    /// [`matches_parsed`](Self::matches_parsed) the context value's parse.
    pub(crate) fn compares_versions(&self) -> bool {
        matches!(
            self,
            Operator::Compare(
                _,
                Ok(CompareValue {
                    str_side: StrSide::Semver { .. },
                    ..
                })
            )
        )
    }

    /// [`matches`](Self::matches), with the string context value's parse as a version when the
    /// caller has it (`Some(None)`: it is not one; `None`: parse it here).
    pub(crate) fn matches_parsed(
        &self,
        cv: &Scalar<'_>,
        segment_key: &str,
        version: Option<Option<&SemVer<'_>>>,
    ) -> Result<bool, EvalError> {
        match self {
            Operator::In(set) => {
                let set = set.as_ref().map_err(Clone::clone)?;
                Ok(match cv {
                    Scalar::Str(s) => set.contains(s.as_ref()),
                    Scalar::Int(PyInt::Small(i)) => set.contains(itoa::Buffer::new().format(*i)),
                    Scalar::Int(i) => set.contains(&i.to_string()),
                    _ => false,
                })
            }
            Operator::PercentageSplit(threshold) => {
                if cv.is_null() {
                    return Ok(false);
                }
                let Some(threshold) = *threshold.as_ref().map_err(Clone::clone)? else {
                    return Ok(false);
                };
                Ok(split_bucket(cv, segment_key) <= threshold)
            }
            Operator::IsSet => Ok(!cv.is_null()),
            Operator::IsNotSet => Ok(cv.is_null()),
            _ if cv.is_null() => Ok(false),
            Operator::Compare(op, value) => {
                compare(*op, cv, value.as_ref().map_err(Clone::clone)?, version)
            }
            Operator::NotContains(value) => {
                let value = value.as_ref().map_err(Clone::clone)?;
                Ok(matches!(cv, Scalar::Str(s) if !s.contains(value.as_str())))
            }
            Operator::Regex(regex) => {
                let regex = regex.as_ref().map_err(Clone::clone)?;
                Ok(match cv {
                    Scalar::Str(s) => regex.matches_at_start(s),
                    other => {
                        let mut text = String::new();
                        other.write_pystr(&mut text);
                        regex.matches_at_start(&text)
                    }
                })
            }
            Operator::Modulo(spec) => {
                let x = match cv {
                    Scalar::Bool(b) => *b as i64 as f64,
                    Scalar::Int(i) => match spec.as_ref().map_err(Clone::clone)? {
                        ModuloSpec::Valid { .. } => i.to_f64().ok_or_else(|| {
                            EvalError::new(
                                PyErrorKind::OverflowError,
                                "int too large to convert to float",
                            )
                        })?,
                        _ => 0.0,
                    },
                    Scalar::Float(f) => *f,
                    _ => return Ok(false),
                };
                match spec.as_ref().map_err(Clone::clone)? {
                    ModuloSpec::Falsy | ModuloSpec::Invalid => Ok(false),
                    ModuloSpec::NotAString => Err(EvalError::new(
                        PyErrorKind::AttributeError,
                        "condition value has no attribute 'split'",
                    )),
                    ModuloSpec::Valid { divisor, remainder } => {
                        if *divisor == 0.0 {
                            return Err(EvalError::new(
                                PyErrorKind::ZeroDivisionError,
                                "float modulo",
                            ));
                        }
                        Ok(py_float_mod(x, *divisor) == *remainder)
                    }
                }
            }
            Operator::Unknown => Ok(false),
        }
    }
}

fn compare(
    op: CompareOp,
    cv: &Scalar<'_>,
    value: &CompareValue,
    version: Option<Option<&SemVer<'_>>>,
) -> Result<bool, EvalError> {
    let ordering = match cv {
        Scalar::Str(s) => match &value.str_side {
            StrSide::Never => return Ok(false),
            StrSide::Plain(v) => {
                if op == CompareOp::Contains {
                    return Ok(s.contains(v.as_str()));
                }
                Some(s.as_ref().cmp(v.as_str()))
            }
            StrSide::Semver { stripped, parsed } => {
                let own;
                let version = match version {
                    Some(version) => version,
                    None => {
                        own = semver::parse(s);
                        own.as_ref()
                    }
                };
                let Some(version) = version else {
                    return Ok(false);
                };
                if op == CompareOp::Contains {
                    // `str in Version` iterates (major, minor, patch, prerelease, build).
                    return Ok(version.prerelease.as_deref() == Some(stripped.as_str())
                        || version.build.as_deref() == Some(stripped.as_str()));
                }
                let Some(other) = parsed else {
                    return Ok(false);
                };
                Some(semver::compare(version, other))
            }
        },
        _ if op == CompareOp::Contains => return Ok(false),
        Scalar::Int(i) => match value.int_side.as_ref().map_err(Clone::clone)? {
            Some(v) => Some(i.cmp(v)),
            None => return Ok(false),
        },
        Scalar::Float(f) => match value.float_side.as_ref().map_err(Clone::clone)? {
            Some(v) => f.partial_cmp(v),
            None => return Ok(false),
        },
        Scalar::Bool(b) => Some(b.cmp(&value.bool_side)),
        Scalar::Null => return Ok(false),
    };
    Ok(match ordering {
        // NaN: every comparison is false except `!=`.
        None => op == CompareOp::NotEqual,
        Some(o) => match op {
            CompareOp::Equal => o == Ordering::Equal,
            CompareOp::NotEqual => o != Ordering::Equal,
            CompareOp::GreaterThan => o == Ordering::Greater,
            CompareOp::GreaterThanInclusive => o != Ordering::Less,
            CompareOp::LessThan => o == Ordering::Less,
            CompareOp::LessThanInclusive => o != Ordering::Greater,
            CompareOp::Contains => unreachable!("handled above"),
        },
    })
}
