//! `Environment`: one loaded environment document (offline mode). Its evaluation methods
//! delegate to the `Evaluator` it shares with the `Flagpole` client.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::compiled::Compiled;
use crate::convert::{json_from_py, json_text_from_py};
use crate::errors::DocumentError;
use crate::evaluator::Evaluator;
use crate::flags::Flags;
use crate::gil::Gil;

pub(crate) fn compile_bytes(py: Python<'_>, bytes: &[u8]) -> PyResult<Arc<Compiled>> {
    py.detach(|| Compiled::from_bytes(bytes))
        .map(Arc::new)
        .map_err(DocumentError::new_err)
}

/// An environment document, compiled. Immutable and safe to share between threads.
#[pyclass(frozen, module = "flagpole_python")]
pub struct Environment {
    pub(crate) inner: Arc<Compiled>,
}

impl Environment {
    fn evaluator(&self) -> Evaluator {
        Evaluator {
            compiled: self.inner.clone(),
            default_flag_handler: None,
        }
    }
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
        } else if let Ok(s) = data.cast::<PyString>() {
            // Its UTF-8 `bytes`: a `String` would copy them once more (see `convert::utf8`).
            compile_bytes(py, s.encode_utf8()?.as_bytes())?
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
        // The dict is written as JSON text and read by the engine's document view: measured
        // faster than converting it to a JSON tree and mapping that (bench/RESULTS.md, "Python
        // bindings", document loads), as it skips the tree's allocations. A dict the writer or
        // the view does not take is converted to a tree, which gives the result or the error it
        // always gave (a nesting deeper than the parser's limit included).
        let viewed =
            json_text_from_py(document).and_then(|text| py.detach(|| Compiled::from_view(&text)));
        let compiled = match viewed {
            Some(compiled) => compiled,
            None => {
                let doc = json_from_py(document, &mut "$".to_owned()).map_err(|e| {
                    DocumentError::new_err(format!("invalid environment document: {e}"))
                })?;
                py.detach(|| Compiled::from_document(&doc))
            }
        };
        Ok(Environment {
            inner: Arc::new(compiled.map_err(DocumentError::new_err)?),
        })
    }

    /// The environment's own flags: no identity, no segments (as the Flagsmith SDK returns them).
    fn get_environment_flags(&self) -> Flags {
        self.evaluator().environment_flags()
    }

    /// One identity's flags, evaluated lazily as the Flagsmith SDK does: a flag that is read is
    /// evaluated on its own (once); `all_flags()` runs the whole evaluation (once, with the GIL
    /// released when the document is large enough for that to pay: see `gil`). `traits` maps
    /// trait names to str/int/float/bool/None.
    #[pyo3(signature = (identifier, traits=None))]
    fn get_identity_flags(
        &self,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Flags> {
        self.evaluator()
            .identity_flags(identifier, traits, Gil::Auto)
    }

    /// Benchmark-only: `get_identity_flags` with the GIL treated as `gil` says: `"hold"` never
    /// releases it, `"release"` always releases it for `all_flags()` (the behaviour before the
    /// release threshold), `"auto"` is `get_identity_flags`.
    #[pyo3(signature = (identifier, traits=None, *, gil))]
    fn _get_identity_flags_gil(
        &self,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
        gil: &str,
    ) -> PyResult<Flags> {
        self.evaluator().identity_flags_in(identifier, traits, gil)
    }

    /// Many identities' flags, each evaluated whole, all in one release of the GIL (unless the
    /// batch is too small for a release to pay). Items are
    /// `(identifier, traits)` pairs (traits may be None) or identifiers; returns a list of
    /// `Flags` in the same order.
    fn get_identity_flags_batch(
        &self,
        py: Python<'_>,
        identities: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Flags>> {
        self.evaluator().identity_flags_batch(py, identities)
    }

    /// Why this identity gets each flag value, as a readable table.
    #[pyo3(signature = (identifier, traits=None))]
    fn explain(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        self.evaluator().explain(py, identifier, traits)
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

    /// Benchmark-only: the estimated cost (ns) of one whole evaluation, made when the document
    /// was compiled; `all_flags()` releases the GIL when it reaches
    /// `_GIL_RELEASE_THRESHOLD_NS`, a batch when its length times this does.
    #[getter]
    fn _evaluation_cost_ns(&self) -> u64 {
        self.inner.evaluation_ns
    }

    /// Feature names in document order.
    fn feature_names(&self) -> Vec<String> {
        self.inner.names.iter().map(|n| n.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<flagpole_python.Environment {:?} ({} features)>",
            self.inner.name,
            self.inner.names.len()
        )
    }
}
