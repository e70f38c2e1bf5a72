//! One spelling per JSON value, so two bodies that say the same thing about a toggle compare
//! equal whatever their key order or whitespace: object keys sorted (by their UTF-16 code
//! units, as JavaScript and RFC 8785 sort them), no whitespace, strings escaped by serde_json,
//! numbers as written (the workspace's serde_json keeps their text).

use serde_json::Value;

/// `value` written canonically.
pub(crate) fn to_canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        // Scalars have one spelling already (numbers keep the text they were read from).
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push_str(&Value::String(text.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::to_canonical;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b": 1, "a": [ {"y":2,"x":"é"} ]}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a":[{"x":"é","y":2}],"b":1}"#).unwrap();
        assert_eq!(to_canonical(&a), to_canonical(&b));
        assert_eq!(to_canonical(&a), r#"{"a":[{"x":"é","y":2}],"b":1}"#);
    }

    #[test]
    fn values_still_differ() {
        let a: serde_json::Value = serde_json::from_str(r#"{"a":"1"}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":1}"#).unwrap();
        assert_ne!(to_canonical(&a), to_canonical(&b));
    }
}
