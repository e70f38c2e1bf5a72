//! Renders an [`Explanation`] as a table a person can read to answer "why does this user get
//! this value": per flag the value, the reason and what decided it; per segment whether it
//! matched and, if not, the first condition that failed and the value it saw.

use std::fmt::Write;

use flagpole_engine::explain::{decided_by, Explanation};
use flagpole_engine::{Environment, Identity, VariantChoice};

pub fn render(
    env: &Environment,
    identity: Option<&Identity<'_>>,
    explanation: &Explanation<'_>,
    out: &mut Vec<u8>,
) {
    let mut s = String::new();
    match identity {
        Some(identity) => {
            let mut identifier = String::new();
            if let Some(id) = &identity.identifier {
                id.write_pystr(&mut identifier);
            }
            let _ = writeln!(s, "Identity {identifier:?}");
            if identity.traits.is_empty() {
                let _ = writeln!(s, "  traits: (none)");
            }
            for t in identity.traits {
                let mut v = String::new();
                t.value.write_pystr(&mut v);
                let _ = writeln!(s, "  trait {} = {}", t.key, v);
            }
        }
        None => {
            let _ = writeln!(
                s,
                "No identity (environment defaults; no percentage splits or variants)"
            );
        }
    }
    let _ = writeln!(s);

    let rows: Vec<[String; 4]> = explanation
        .result
        .flags
        .iter()
        .map(|f| {
            let variant = match f.variant {
                VariantChoice::None => String::new(),
                VariantChoice::Control => " (variant control)".into(),
                VariantChoice::Key(k) => format!(" (variant {k})"),
            };
            [
                format!(
                    "{}{}",
                    f.key,
                    if f.enabled.as_bool() == Some(true) {
                        ""
                    } else {
                        " [off]"
                    }
                ),
                format!("{}{variant}", f.value),
                f.reason.as_str().to_owned(),
                decided_by(env, f),
            ]
        })
        .collect();
    table(&mut s, ["FLAG", "VALUE", "REASON", "DECIDED BY"], &rows);

    let _ = writeln!(s, "\nSEGMENTS (in evaluation order)");
    if explanation.segments.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for seg in &explanation.segments {
        let overrides = if seg.overrides.is_empty() {
            String::new()
        } else {
            format!("  overrides: {}", seg.overrides.join(", "))
        };
        if seg.matched {
            let _ = writeln!(s, "  match     {}{}", seg.name, overrides);
        } else {
            let _ = writeln!(s, "  no match  {}{}", seg.name, overrides);
            if let Some(at) = &seg.failed_at {
                let _ = writeln!(s, "            failed at {at}");
            }
            if let Some(c) = &seg.condition {
                let _ = writeln!(s, "            condition {c}");
            }
            if let Some(v) = &seg.saw {
                let _ = writeln!(s, "            saw       {v}");
            }
        }
    }
    out.extend_from_slice(s.as_bytes());
}

fn table(s: &mut String, header: [&str; 4], rows: &[[String; 4]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count()).min(48);
        }
    }
    let line = |s: &mut String, cells: [&str; 4]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 3 {
                let _ = write!(s, "{cell}");
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        let _ = writeln!(s);
    };
    line(s, header);
    for row in rows {
        line(s, [&row[0], &row[1], &row[2], &row[3]]);
    }
}
