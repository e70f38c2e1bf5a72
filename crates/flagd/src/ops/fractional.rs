//! flagd's `fractional`: a variant picked by a stable hash of a bucketing string, in
//! proportion to integer weights.
//!
//! The first argument, when it evaluates to a string, is the bucketing string; otherwise
//! (flagd's shorthand) it is the flag key followed by the context's `targetingKey`. The other
//! arguments are `[variant]` or `[variant, weight]` (weight an integer, missing 1, negative
//! counted as 0, total at most 2³¹−1). Anything else makes the operation `null`, as in the
//! reference.

use datalogic_rs::DataValue;

/// The largest total weight flagd accepts (a Go `int32`).
const MAX_TOTAL_WEIGHT: i64 = 2_147_483_647;

/// The bucket of `key` among `total` equal slots: MurmurHash3 x86_32 (seed 0) of its UTF-8
/// bytes, scaled as `(hash × total) >> 32` (flagd Go and `openfeature-flagd-core` 1.0.0).
/// The one place bucketing is decided: flagd-core 2.0 hashes a CBOR encoding instead.
pub fn bucket(key: &str, total: u64) -> u64 {
    let hash = murmur3::murmur3_32(&mut key.as_bytes(), 0).unwrap_or(0);
    (u64::from(hash) * total) >> 32
}

/// The chosen variant value (borrowed from the arguments), or `None` for the reference's `null`.
pub(crate) fn fractional<'a>(
    args: &[&'a DataValue<'a>],
    root: &'a DataValue<'a>,
) -> Result<Option<&'a DataValue<'a>>, &'static str> {
    let Some(first) = args.first() else {
        return Ok(None);
    };
    let (key, rest): (String, &[&'a DataValue<'a>]) = match first {
        DataValue::String(s) => ((*s).to_owned(), &args[1..]),
        _ => {
            let flag_key = root
                .get("$flagd")
                .and_then(|f| f.get("flagKey"))
                .and_then(DataValue::as_str)
                .unwrap_or("");
            match root.get("targetingKey") {
                None | Some(DataValue::Null) => return Ok(None),
                Some(DataValue::String("")) => return Ok(None),
                Some(DataValue::String(t)) => (format!("{flag_key}{t}"), args),
                // Python's `str + int` raises.
                Some(_) => return Err("the targetingKey is not a string"),
            }
        }
    };
    if key.is_empty() {
        return Ok(None);
    }
    let mut fractions = Vec::with_capacity(rest.len());
    let mut total: i64 = 0;
    for arg in rest {
        let DataValue::Array(parts) = arg else {
            return Ok(None);
        };
        let weight = match parts {
            [_] => 1,
            [_, DataValue::Number(n)] => match n.as_i64() {
                Some(w) if n.is_integer() => w.max(0),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        total = total.saturating_add(weight);
        fractions.push((&parts[0], weight));
    }
    if total > MAX_TOTAL_WEIGHT {
        return Ok(None);
    }
    let bucket = bucket(&key, total as u64) as i64;
    let mut end = 0;
    for (variant, weight) in fractions {
        end += weight;
        if bucket < end {
            return Ok(Some(variant));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucketing_is_flagds() {
        // MurmurHash3 x86_32 of "hello" is 0x248bfa47; 100 slots: (0x248bfa47 * 100) >> 32.
        assert_eq!(bucket("hello", 100), (0x248b_fa47_u64 * 100) >> 32);
        assert_eq!(bucket("", 100), 0);
    }
}
