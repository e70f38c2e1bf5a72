//! flagd's `sem_ver`: `[version, operator, version]` with `=`, `!=`, `<`, `<=`, `>`, `>=`, `^`
//! (same major) and `~` (same major and minor). Each side is read as the reference reads it:
//! Python's `str()` of the value, a `v`/`V` prefix dropped, a partial version padded with
//! `.0`, then strict SemVer 2.0; precedence ignores build metadata. Anything unreadable makes
//! the operation `null`.

use std::cmp::Ordering;

use datalogic_rs::datavalue::NumberValue;
use datalogic_rs::DataValue;
use flagpole_engine::python::number::float_repr;

/// Python's `str()` of an argument.
fn python_str(v: &DataValue<'_>) -> Option<String> {
    Some(match v {
        DataValue::String(s) => (*s).to_owned(),
        DataValue::Number(NumberValue::Integer(i)) => i.to_string(),
        DataValue::Number(NumberValue::Float(f)) => {
            let mut out = String::new();
            float_repr(*f, &mut out);
            out
        }
        DataValue::Bool(true) => "True".to_owned(),
        DataValue::Bool(false) => "False".to_owned(),
        DataValue::Null => "None".to_owned(),
        // A list or dict's `str()` never parses as a version.
        _ => return None,
    })
}

fn version(v: &DataValue<'_>) -> Option<semver::Version> {
    let text = python_str(v)?;
    let text = text
        .strip_prefix('v')
        .or_else(|| text.strip_prefix('V'))
        .unwrap_or(&text);
    let numeric = text.split('-').next().unwrap_or("");
    let numeric = numeric.split('+').next().unwrap_or("");
    let dots = numeric.matches('.').count();
    let padded = if dots < 2 {
        format!(
            "{numeric}{}{}",
            ".0".repeat(2 - dots),
            &text[numeric.len()..]
        )
    } else {
        text.to_owned()
    };
    semver::Version::parse(&padded).ok()
}

pub(crate) fn sem_ver(args: &[&DataValue<'_>]) -> Option<bool> {
    let [left, DataValue::String(op), right] = args else {
        return None;
    };
    let (a, b) = (version(left)?, version(right)?);
    let order = a.cmp_precedence(&b);
    Some(match *op {
        "=" => order == Ordering::Equal,
        "!=" => order != Ordering::Equal,
        "<" => order == Ordering::Less,
        "<=" => order != Ordering::Greater,
        ">" => order == Ordering::Greater,
        ">=" => order != Ordering::Less,
        "^" => a.major == b.major,
        "~" => a.major == b.major && a.minor == b.minor,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: &str, op: &str, b: &str) -> Option<bool> {
        sem_ver(&[
            &DataValue::String(a),
            &DataValue::String(op),
            &DataValue::String(b),
        ])
    }

    #[test]
    fn versions_are_read_as_flagd_reads_them() {
        assert_eq!(check("v1.2", "=", "1.2.0"), Some(true));
        assert_eq!(check("1.2.3+build.5", "=", "1.2.3"), Some(true));
        assert_eq!(check("1.2.3-alpha", "<", "1.2.3"), Some(true));
        assert_eq!(check("1.5.0", "^", "1.0.0"), Some(true));
        assert_eq!(check("1.5.0", "~", "1.4.0"), Some(false));
        assert_eq!(check("1.2.3.4", "=", "1.2.3"), None);
        assert_eq!(check("1.2.3", "?", "1.2.3"), None);
        assert_eq!(
            sem_ver(&[
                &DataValue::from_f64(1.5),
                &DataValue::String("="),
                &DataValue::String("1.5.0")
            ]),
            Some(true)
        );
    }
}
