//! Re-implementations of the pieces of CPython behaviour that the reference
//! flag engine relies on implicitly: number parsing and printing, `str()` /
//! `repr()` of JSON-derived values, and the `re` regular expression dialect.
//!
//! These are hand-rolled because the reference implementation's observable
//! results (segment matches, string coercions) depend on Python semantics
//! that Rust's standard library and crates do not reproduce exactly.

pub mod number;
pub mod regex;
pub mod repr;
mod unicode_tables;

#[cfg(test)]
mod float_repr_vectors;
#[cfg(test)]
mod regex_vectors;

pub use number::{float_repr, parse_py_float, parse_py_int, py_float_mod, PyInt};
pub use regex::PyRegex;
pub use repr::{write_py_str_repr, write_str_of_json};
