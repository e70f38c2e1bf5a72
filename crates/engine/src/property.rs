//! What a condition reads: a trait by name, or a JSONPath query over the whole context.
//!
//! The reference (`get_context_value`) treats a property starting with `$.` as JSONPath when it
//! parses as RFC 9535, after first trying a trait literally named like the path. Queries are
//! classified once, at compile time:
//! - rooted in a static part of the context (`$.environment…`, `$.features…`, `$.segments…`):
//!   answered at compile time;
//! - rooted in `$.identity` or `$.flags.<name>`: a short walk per call, nothing allocated;
//! - anything else (wildcards, descendants, filters at the root): evaluated per call over a
//!   materialised context (slow, rare in real documents).

use serde_json::Value;

use crate::error::EvalError;
use crate::jsonpath::{JsonPathQuery, ParseError};
use crate::value::{coerce_json, Scalar};

#[derive(Debug)]
pub(crate) enum Property {
    /// Percentage split with an empty property: the raw identity key.
    IdentityKey,
    /// A plain trait lookup (also a `$.` string that is not valid JSONPath).
    Trait(String),
    /// A valid JSONPath: the literal trait of that name wins when set.
    Path { literal: String, query: Query },
    /// A property the reference cannot even look up (`None.startswith`).
    Invalid(EvalError),
}

#[derive(Debug)]
pub(crate) enum Query {
    /// Answered at compile time (already coerced).
    Static(Result<Scalar<'static>, EvalError>),
    /// Steps below `$.identity`.
    Identity(Vec<Step>),
    /// `$.flags.<name>` then steps into the flag result.
    Flag(String, Vec<Step>),
    /// Needs the whole context (with `$.flags` resolved lazily, as in the reference).
    General(Box<JsonPathQuery>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Name(String),
    Index(i64),
}

impl Property {
    /// Compiles a property. `root` is the context without identity; `root_static` says whether a
    /// root key is static data (not `identity`/`flags`).
    pub(crate) fn compile(
        property: &Value,
        percentage_split: bool,
        root: &serde_json::Map<String, Value>,
    ) -> Property {
        let text = match property {
            Value::String(s) => s.as_str(),
            Value::Null if percentage_split => return Property::IdentityKey,
            other => {
                return Property::Invalid(EvalError::new(
                    crate::error::PyErrorKind::AttributeError,
                    format!("property {other} has no attribute 'startswith'"),
                ))
            }
        };
        if percentage_split && text.is_empty() {
            return Property::IdentityKey;
        }
        if !text.starts_with("$.") {
            return Property::Trait(text.to_owned());
        }
        let path = match JsonPathQuery::parse(text) {
            Ok(path) => path,
            // Not JSONPath: the reference falls back to a trait of that name.
            Err(ParseError::Syntax(_)) => return Property::Trait(text.to_owned()),
            // Any other compile error aborts the evaluation when the condition is reached.
            Err(ParseError::Raises(e)) => return Property::Invalid(e),
        };
        let query = match simple_steps(text) {
            Some(steps) => classify(steps, root).unwrap_or_else(|| Query::General(Box::new(path))),
            None => Query::General(Box::new(path)),
        };
        Property::Path {
            literal: text.to_owned(),
            query,
        }
    }
}

fn classify(mut steps: Vec<Step>, root: &serde_json::Map<String, Value>) -> Option<Query> {
    let Step::Name(first) = steps.first()?.clone() else {
        return None;
    };
    match first.as_str() {
        "identity" => {
            steps.remove(0);
            Some(Query::Identity(steps))
        }
        "flags" => {
            if steps.len() < 2 {
                return None;
            }
            let Step::Name(flag) = steps[1].clone() else {
                return None;
            };
            steps.drain(..2);
            Some(Query::Flag(flag, steps))
        }
        _ => {
            let mut node = root.get(&first);
            for step in &steps[1..] {
                node = node.and_then(|n| walk(n, step));
            }
            let value = match node {
                Some(v) if is_scalar(v) => coerce_json(v).map(into_static),
                _ => Ok(Scalar::Null),
            };
            Some(Query::Static(value))
        }
    }
}

pub(crate) fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

pub(crate) fn into_static(s: Scalar<'_>) -> Scalar<'static> {
    match s {
        Scalar::Null => Scalar::Null,
        Scalar::Bool(b) => Scalar::Bool(b),
        Scalar::Int(i) => Scalar::Int(i),
        Scalar::Float(f) => Scalar::Float(f),
        Scalar::Str(s) => Scalar::Str(std::borrow::Cow::Owned(s.into_owned())),
    }
}

/// One name or index step over JSON, as RFC 9535 defines it (negative indexes count from the end).
pub(crate) fn walk<'v>(node: &'v Value, step: &Step) -> Option<&'v Value> {
    match (node, step) {
        (Value::Object(map), Step::Name(name)) => map.get(name),
        (Value::Array(items), Step::Index(i)) => {
            let len = items.len() as i64;
            let i = if *i < 0 { len + i } else { *i };
            if (0..len).contains(&i) {
                items.get(i as usize)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Parses the common query shape (`$` then name and index selectors only), or `None` when the
/// query needs the general evaluator. Only called on strings that already parsed as RFC 9535.
fn simple_steps(text: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = text.strip_prefix('$')?;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        if rest.is_empty() {
            return Some(steps);
        }
        if let Some(r) = rest.strip_prefix('.') {
            if r.starts_with('.') || r.starts_with('*') {
                return None;
            }
            let end = r
                .char_indices()
                .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c as u32 >= 0x80))
                .map(|(i, _)| i)
                .unwrap_or(r.len());
            steps.push(Step::Name(r[..end].to_owned()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let r = r.trim_start_matches([' ', '\t', '\n', '\r']);
            let (step, after) = bracket_selector(r)?;
            let after = after.trim_start_matches([' ', '\t', '\n', '\r']);
            rest = after.strip_prefix(']')?;
            steps.push(step);
        } else {
            return None;
        }
    }
}

fn bracket_selector(r: &str) -> Option<(Step, &str)> {
    let quote = r.chars().next()?;
    if quote == '\'' || quote == '"' {
        let mut out = String::new();
        let mut chars = r[1..].char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                return Some((Step::Name(out), &r[1 + i + 1..]));
            }
            if c == '\\' {
                let (_, e) = chars.next()?;
                match e {
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    '/' | '\\' | '\'' | '"' => out.push(e),
                    // \u escapes (and surrogate pairs) are left to the general evaluator.
                    _ => return None,
                }
            } else {
                out.push(c);
            }
        }
        return None;
    }
    let end = r
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(r.len());
    let index: i64 = r[..end].parse().ok()?;
    Some((Step::Index(index), &r[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_paths_are_split_into_steps() {
        assert_eq!(
            simple_steps("$.identity.traits['x y']"),
            Some(vec![
                Step::Name("identity".into()),
                Step::Name("traits".into()),
                Step::Name("x y".into())
            ])
        );
        assert_eq!(
            simple_steps("$.a[-1]"),
            Some(vec![Step::Name("a".into()), Step::Index(-1)])
        );
        assert_eq!(simple_steps("$..name"), None);
        assert_eq!(simple_steps("$.flags.*.enabled"), None);
        assert_eq!(simple_steps("$.a[1:2]"), None);
        assert_eq!(simple_steps("$.a['b','c']"), None);
    }
}
