//! JSONPath exactly as the reference engine evaluates it: a hand-written port of the Python
//! package `jsonpath_rfc9535` 0.2.0, which `flagsmith-flag-engine` 11.1.1 uses for condition
//! properties starting with `$.` (`_get_context_value_getter` in the reference's
//! `segments/evaluator.py`).
//!
//! The port mirrors the library's behaviour rather than RFC 9535, quirks included, because the
//! quirks decide flag values: a query the library rejects with `JSONPathSyntaxError` makes the
//! engine fall back to a trait lookup, any other exception from `compile` aborts the evaluation,
//! and evaluation-time exceptions are either swallowed (`JSONPathError` subclasses: "no value") or
//! abort it (`TypeError`, `AttributeError`, `RuntimeError`, ...). Generic JSONPath crates differ on
//! all of these. Module map:
//! - `lexer`, `tokens`: `lex.py` and `tokens.py` (which strings tokenize);
//! - `parser`, `literals`, `ast`: `parse.py` plus the compile-time checks (well-typedness, index
//!   range) and the parsed form;
//! - `eval`: segments and selectors (`segments.py`, `selectors.py`), lazily like the library's
//!   generators, so `find_one` stops at the first node exactly where the library does;
//! - `filter`: filter expressions with Python comparison semantics (`filter_expressions.py`) and
//!   the function extensions (`function_extensions/`);
//! - `iregexp`, `regex_set`: the `iregexp_check` grammar and the translation of checked
//!   patterns to the `regex` module's semantics, used by `match()`/`search()`.
//!
//! `$.flags` is special: in the reference it is a `dict` subclass whose missing keys are resolved
//! on lookup (`__missing__`). The document passed in holds a placeholder under the root key
//! `flags`; whenever evaluation reaches it, the [`LazyFlags`] object answers instead.

mod ast;
mod eval;
mod filter;
mod iregexp;
mod lexer;
mod literals;
mod parser;
mod regex_set;
mod tokens;

#[cfg(test)]
mod test_cases;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::error::{EvalError, PyErrorKind};

/// Why `compile` failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// `JSONPathSyntaxError`: the reference's engine catches it and falls back to a plain trait
    /// lookup of the whole property string.
    Syntax(String),
    /// Any other exception raised by `compile`: it propagates out of the engine and aborts the
    /// evaluation. `JSONPathTypeError` (well-typedness) is reported as `TypeError`;
    /// `OverflowError` (`1e400` as an integer literal) as `OverflowError`; kinds without a
    /// [`PyErrorKind`] (`JSONPathNameError`, `JSONPathIndexError`, `RecursionError`) as
    /// `ValueError`, the Python class name leading the message.
    Raises(EvalError),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Syntax(m) => write!(f, "JSONPathSyntaxError: {m}"),
            ParseError::Raises(e) => write!(f, "{e}"),
        }
    }
}

pub(crate) fn raises(kind: PyErrorKind, class: &str, msg: impl std::fmt::Display) -> ParseError {
    ParseError::Raises(EvalError::new(kind, format!("{class}: {msg}")))
}

/// The first node of a query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// No node (also: a `JSONPathError` was raised during evaluation, which the engine swallows).
    Nothing,
    /// A node and its value; `Value(Null)` is a node whose value is null. `$.flags` itself is
    /// returned as an object of its current entries.
    Value(Value),
}

/// The reference's `_LazyFlags`: the `$.flags` mapping, a `dict` subclass that resolves a flag
/// when a missing key is looked up.
pub(crate) trait LazyFlags {
    /// `flags[name]`: `Ok(Some(v))` a node with value `v` (`Null` when `__missing__` returned
    /// `None`), `Ok(None)` the lookup raised `KeyError` (swallowed by the name selector: no
    /// node), `Err` any other exception (it propagates and aborts the evaluation).
    fn lookup(&mut self, name: &str) -> Result<Option<Value>, EvalError>;

    /// Current entries, in insertion order (what `.items()` sees: only flags resolved so far).
    fn entries(&self) -> Vec<(String, Value)>;

    /// `len(flags)`. Override when `entries` is costly.
    fn len(&self) -> usize {
        self.entries().len()
    }

    /// The `i`-th entry in insertion order. Override when `entries` is costly.
    fn entry(&self, i: usize) -> Option<(String, Value)> {
        self.entries().into_iter().nth(i)
    }
}

/// A compiled query (`jsonpath_rfc9535.compile(text)`).
#[derive(Clone, Debug)]
pub(crate) struct JsonPathQuery {
    query: ast::Query,
}

impl JsonPathQuery {
    /// `jsonpath_rfc9535.compile(text)`.
    pub(crate) fn parse(text: &str) -> Result<JsonPathQuery, ParseError> {
        let tokens = lexer::tokenize(text).map_err(ParseError::Syntax)?;
        let query = parser::parse(tokens)?;
        Ok(JsonPathQuery { query })
    }

    /// `query.find_one(root)` as the engine uses it: the first node, evaluated lazily (later
    /// nodes are never computed, so their errors and flag lookups never happen). A
    /// `JSONPathError` raised on the way (the descendant segment's recursion limit) reads as
    /// [`Found::Nothing`], as the engine catches it; other exceptions are `Err`.
    pub(crate) fn find_first(
        &self,
        root: &Value,
        lazy: &mut dyn LazyFlags,
    ) -> Result<Found, EvalError> {
        let mut ev = eval::Eval::new(root, lazy);
        match ev.find_first(&self.query) {
            Ok(found) => Ok(found),
            Err(eval::Raise::JsonPath) => Ok(Found::Nothing),
            Err(eval::Raise::Py(e)) => Err(e),
        }
    }
}
