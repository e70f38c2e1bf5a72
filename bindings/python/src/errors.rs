//! The exceptions the package raises, and the one conversion every evaluation path shares (an
//! engine `EvalError` → `EvaluationError`). A module of its own so that the modules raising them
//! (`evaluator`, `flags`, `environment`, `client`) depend on it and not on one another.

use flagpole_engine::EvalError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(
    flagpole_python,
    FlagpoleError,
    PyException,
    "Base class of flagpole's errors."
);
create_exception!(
    flagpole_python,
    DocumentError,
    FlagpoleError,
    "The environment document cannot be read or compiled."
);
create_exception!(
    flagpole_python,
    EvaluationError,
    FlagpoleError,
    "The Flagsmith engine raises for this input (for example an invalid regex in a segment)."
);
create_exception!(
    flagpole_python,
    FeatureNotFoundError,
    FlagpoleError,
    "The environment has no feature of this name (and no default_flag_handler was given)."
);
create_exception!(
    flagpole_python,
    UpstreamError,
    FlagpoleError,
    "The environment document could not be fetched; the last good document is still served."
);

/// The engine raising for this input, as the `EvaluationError` Python sees.
pub(crate) fn eval_error(e: EvalError) -> PyErr {
    EvaluationError::new_err(format!(
        "the Flagsmith engine raises {:?} for this identity: {}",
        e.kind, e.message
    ))
}
