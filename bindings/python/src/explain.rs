//! `explain()`: why an identity gets each value, as readable text. The explanation itself comes
//! from `flagpole_engine::explain` (built on the evaluator's own matching, so it cannot disagree
//! with an evaluation); this renders it like `flagpole eval --explain`: per flag the value, the
//! reason and what decided it; per segment whether it matched and, if not, the first condition
//! that failed and the value it saw.

use std::fmt::Write;

use flagpole_engine::explain::{decided_by, explain};
use flagpole_engine::{EvalError, Identity, VariantChoice};

use crate::compiled::Compiled;

/// Evaluates, explains and renders. Pure Rust (runs with the GIL released).
pub fn render(compiled: &Compiled, identity: &Identity<'_>) -> Result<String, EvalError> {
    let env = &compiled.env;
    let explanation = explain(env, Some(identity))?;
    let mut s = String::new();
    let mut identifier = String::new();
    if let Some(id) = &identity.identifier {
        id.write_pystr(&mut identifier);
    }
    let _ = writeln!(
        s,
        "Identity {identifier:?} in environment {:?}",
        compiled.name
    );
    if identity.traits.is_empty() {
        let _ = writeln!(s, "  traits: (none)");
    }
    for t in identity.traits {
        let mut v = String::new();
        t.value.write_pystr(&mut v);
        let _ = writeln!(s, "  trait {} = {}", t.key, v);
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
            let off = if f.enabled.as_bool() == Some(true) {
                ""
            } else {
                " [off]"
            };
            [
                format!("{}{off}", f.key),
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
        let status = if seg.matched { "match   " } else { "no match" };
        let _ = writeln!(s, "  {status}  {}{overrides}", seg.name);
        if !seg.matched {
            for (label, text) in [
                ("failed at", &seg.failed_at),
                ("condition", &seg.condition),
                ("saw      ", &seg.saw),
            ] {
                if let Some(text) = text {
                    let _ = writeln!(s, "            {label} {text}");
                }
            }
        }
    }
    Ok(s)
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
