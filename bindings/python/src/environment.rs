//! `Environment`: one loaded environment document (offline mode), and the evaluation entry points
//! shared with the `Flagpole` client.
//!
//! Every evaluation converts the arguments with the GIL held (one pass over the trait dict), then
//! runs the engine inside `Python::detach` (the GIL is released), then wraps the owned result. The
//! `_holding_gil` variant skips the release; it exists only so the benchmark can show what the
//! release is worth.

use std::sync::Arc;

use flagpole_engine::{EvalError, Identity};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::compiled::Compiled;
use crate::convert::{json_from_py, traits_from_py};
use crate::flags::Flags;
use crate::{explain, DocumentError, EvaluationError};

pub fn eval_error(e: EvalError) -> PyErr {
    EvaluationError::new_err(format!(
        "the Flagsmith engine raises {:?} for this identity: {}",
        e.kind, e.message
    ))
}

pub fn environment_flags(compiled: &Arc<Compiled>, handler: Option<Py<PyAny>>) -> Flags {
    Flags::environment(compiled.clone(), handler)
}

pub fn identity_flags(
    py: Python<'_>,
    compiled: &Arc<Compiled>,
    identifier: &str,
    traits: Option<&Bound<'_, PyAny>>,
    handler: Option<Py<PyAny>>,
    release_gil: bool,
) -> PyResult<Flags> {
    let traits = traits_from_py(traits)?;
    let evaluate = || compiled.evaluate_identity(identifier, traits);
    let evaluated = if release_gil {
        py.detach(evaluate)
    } else {
        evaluate()
    }
    .map_err(eval_error)?;
    Ok(Flags::identity(compiled.clone(), evaluated, handler))
}

pub fn explain_identity(
    py: Python<'_>,
    compiled: &Compiled,
    identifier: &str,
    traits: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let traits = traits_from_py(traits)?;
    py.detach(|| explain::render(compiled, &Identity::new(identifier, &traits)))
        .map_err(eval_error)
}

pub fn compile_bytes(py: Python<'_>, bytes: &[u8]) -> PyResult<Arc<Compiled>> {
    py.detach(|| Compiled::from_bytes(bytes))
        .map(Arc::new)
        .map_err(DocumentError::new_err)
}

/// An environment document, compiled. Immutable and safe to share between threads.
#[pyclass(frozen, module = "flagpole")]
pub struct Environment {
    pub(crate) inner: Arc<Compiled>,
}

#[pymethods]
impl Environment {
    /// Loads an environment document (`/api/v1/environment-document/` JSON) from a file.
    #[staticmethod]
    fn from_path(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Environment> {
        let bytes = py
            .detach(|| std::fs::read(&path))
            .map_err(|e| DocumentError::new_err(format!("cannot read {}: {e}", path.display())))?;
        Ok(Environment {
            inner: compile_bytes(py, &bytes)?,
        })
    }

    /// Loads an environment document from JSON text (`bytes` or `str`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Environment> {
        let inner = if let Ok(b) = data.cast::<PyBytes>() {
            compile_bytes(py, b.as_bytes())?
        } else if let Ok(s) = data.extract::<String>() {
            compile_bytes(py, s.as_bytes())?
        } else {
            let data = data.call_method0("__bytes__").map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("from_bytes expects bytes or str")
            })?;
            compile_bytes(py, data.cast::<PyBytes>()?.as_bytes())?
        };
        Ok(Environment { inner })
    }

    /// Loads an environment document that is already a Python `dict` (as `json.loads` gives).
    #[staticmethod]
    fn from_dict(py: Python<'_>, document: &Bound<'_, PyAny>) -> PyResult<Environment> {
        let doc = json_from_py(document, &mut "$".to_owned())
            .map_err(|e| DocumentError::new_err(format!("invalid environment document: {e}")))?;
        let compiled = py
            .detach(|| Compiled::from_document(&doc))
            .map_err(DocumentError::new_err)?;
        Ok(Environment {
            inner: Arc::new(compiled),
        })
    }

    /// The environment's own flags: no identity, no segments (as the Flagsmith SDK returns them).
    fn get_environment_flags(&self) -> Flags {
        environment_flags(&self.inner, None)
    }

    /// Every flag for one identity. `traits` maps trait names to str/int/float/bool/None.
    #[pyo3(signature = (identifier, traits=None))]
    fn get_identity_flags(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Flags> {
        identity_flags(py, &self.inner, identifier, traits, None, true)
    }

    /// Benchmark-only: `get_identity_flags` without releasing the GIL.
    #[pyo3(signature = (identifier, traits=None))]
    fn _get_identity_flags_holding_gil(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Flags> {
        identity_flags(py, &self.inner, identifier, traits, None, false)
    }

    /// Why this identity gets each flag value, as a readable table.
    #[pyo3(signature = (identifier, traits=None))]
    fn explain(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        explain_identity(py, &self.inner, identifier, traits)
    }

    /// The document's `api_key` (the client-side environment key).
    #[getter]
    fn api_key(&self) -> &str {
        &self.inner.api_key
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    #[getter]
    fn updated_at(&self) -> Option<&str> {
        self.inner.updated_at.as_deref()
    }

    /// Feature names in document order.
    fn feature_names(&self) -> Vec<String> {
        self.inner.names.iter().map(|n| n.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<flagpole.Environment {:?} ({} features)>",
            self.inner.name,
            self.inner.names.len()
        )
    }
}
