//! Writing JSON into byte buffers, the one way every module here does it. Responses are
//! assembled by hand from prepared slices and small values; each value goes through serde
//! (escaping, number formatting) straight into the buffer, never through a tree.

use serde::Serialize;

/// Appends `value` as JSON to `out`.
pub(crate) fn write(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Writing to a `Vec` cannot fail, and every value written here (strings, numbers,
    // `serde_json::Value`s, plain derived structs) serialises without error.
    serde_json::to_writer(out, value).expect("in-memory JSON write")
}

/// `value` as JSON bytes.
pub(crate) fn to_vec(value: &(impl Serialize + ?Sized)) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, value);
    out
}
