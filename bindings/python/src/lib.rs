//! `flagpole` for Python: in-process, Flagsmith-compatible flag evaluation on Flagpole's Rust
//! engine, with the GIL released while it evaluates whenever that pays.
//!
//! Why: the Flagsmith SDK's local evaluation runs a pure-Python engine that holds the GIL for the
//! whole evaluation, so a threaded service evaluates flags one thread at a time. Here the trait
//! dict is converted by type in one pass, the engine runs inside `Python::detach` when the work is
//! estimated to outweigh handing the GIL to another thread (`gil`; a short evaluation holds it),
//! and the compiled environment is shared by `Arc` and swapped atomically when a refresh brings a
//! new document.
//!
//! Modules: `compiled` (a document compiled once: engine environment + its own flags),
//! `identity` (one identity's lazily evaluated, memoised flags), `convert` (Python ↔ engine
//! values, by type), `evaluator` (the evaluation entry points `Environment` and `Flagpole`
//! share), `environment` (`Environment`), `client` (`Flagpole`/`Client`), `upstream` (fetch +
//! refresh thread), `flags` (`Flags`/`Flag`), `gil` (when a call releases the GIL), `explain`
//! (the readable explanation), `errors` (the exceptions).
// No FFI of our own: PyO3 wraps every call into Python, and results that borrow what they are
// stored beside live in `self_cell`s.
#![forbid(unsafe_code)]

use pyo3::prelude::*;

mod client;
mod compiled;
mod convert;
mod environment;
mod errors;
mod evaluator;
mod explain;
mod flags;
mod gil;
mod identity;
mod upstream;

use errors::{DocumentError, EvaluationError, FeatureNotFoundError, FlagpoleError, UpstreamError};

#[pymodule]
fn flagpole_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<environment::Environment>()?;
    m.add_class::<client::Flagpole>()?;
    m.add("Client", m.getattr("Flagpole")?)?;
    m.add_class::<flags::Flags>()?;
    m.add_class::<flags::Flag>()?;
    m.add("FlagpoleError", py.get_type::<FlagpoleError>())?;
    m.add("DocumentError", py.get_type::<DocumentError>())?;
    m.add("EvaluationError", py.get_type::<EvaluationError>())?;
    m.add(
        "FeatureNotFoundError",
        py.get_type::<FeatureNotFoundError>(),
    )?;
    m.add("UpstreamError", py.get_type::<UpstreamError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Benchmark-only: see `Environment._evaluation_cost_ns`.
    m.add("_GIL_RELEASE_THRESHOLD_NS", gil::RELEASE_THRESHOLD_NS)?;
    Ok(())
}
