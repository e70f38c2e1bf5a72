//! `explain()`: why an identity gets each value, as readable text: the engine's explanation
//! (built on the evaluator's own matching, so it cannot disagree with an evaluation), rendered
//! by the same table renderer `flagpole eval --explain` prints.

use flagpole_engine::explain::{explain, render_table};
use flagpole_engine::{EvalError, Identity};

use crate::compiled::Compiled;

/// Evaluates, explains and renders. Pure Rust (runs with the GIL released).
pub(crate) fn render(compiled: &Compiled, identity: &Identity<'_>) -> Result<String, EvalError> {
    let explanation = explain(compiled.env(), Some(identity))?;
    Ok(render_table(compiled.env(), Some(identity), &explanation))
}
