//! `flagpole` for Python: in-process, Flagsmith-compatible flag evaluation on Flagpole's Rust
//! engine, with the GIL released while it evaluates.
//!
//! Why: the Flagsmith SDK's local evaluation runs a pure-Python engine that holds the GIL for the
//! whole evaluation, so a threaded service evaluates flags one thread at a time. Here the trait
//! dict is converted by type in one pass, the engine runs inside `Python::detach`, and the
//! compiled environment is shared by `Arc` and swapped atomically when a refresh brings a new
//! document.
//!
//! Modules: `compiled` (a document compiled once: engine environment + environment flags; one
//! identity's lazily evaluated, memoised flags), `convert` (Python ↔ engine values, by type),
//! `evaluator` (the evaluation entry points `Environment` and `Flagpole` share), `environment`
//! (`Environment`), `client` (`Flagpole`/`Client`), `upstream` (fetch + refresh thread), `flags`
//! (`Flags`/`Flag`), `explain` (the readable explanation).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

mod client;
mod compiled;
mod convert;
mod environment;
mod evaluator;
mod explain;
mod flags;
mod upstream;

create_exception!(
    flagpole,
    FlagpoleError,
    PyException,
    "Base class of flagpole's errors."
);
create_exception!(
    flagpole,
    DocumentError,
    FlagpoleError,
    "The environment document cannot be read or compiled."
);
create_exception!(
    flagpole,
    EvaluationError,
    FlagpoleError,
    "The Flagsmith engine raises for this input (for example an invalid regex in a segment)."
);
create_exception!(
    flagpole,
    FeatureNotFoundError,
    FlagpoleError,
    "The environment has no feature of this name (and no default_flag_handler was given)."
);
create_exception!(
    flagpole,
    UpstreamError,
    FlagpoleError,
    "The environment document could not be fetched; the last good document is still served."
);

#[pymodule]
fn flagpole(m: &Bound<'_, PyModule>) -> PyResult<()> {
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
    Ok(())
}
