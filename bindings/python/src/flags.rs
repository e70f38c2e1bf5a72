//! `Flags` and `Flag`: the result objects, shaped like the Flagsmith Python SDK's
//! (`flags.is_feature_enabled(name)`, `get_feature_value(name)`, `get_flag(name)`, `all_flags()`;
//! a `Flag` has `enabled`, `value`, `feature_id`, `feature_name`, `is_default`, `reason`).
//!
//! A `Flags` holds the engine's results as they are (borrowed from the environment it keeps
//! alive, see `compiled`); a `Flag` is a view of one of them. Python objects are made only for
//! the attributes that are read, so a caller that reads one flag pays for one.

use std::sync::Arc;

use flagpole_engine::FlagResult;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::compiled::{Compiled, Evaluated};
use crate::convert::value_to_py;
use crate::FeatureNotFoundError;

enum Source {
    /// The environment flags precomputed in `Compiled`.
    Environment,
    Identity(Evaluated),
}

/// The flags of one evaluation (an identity, or the environment).
#[pyclass(frozen, module = "flagpole")]
pub struct Flags {
    compiled: Arc<Compiled>,
    source: Source,
    default_flag_handler: Option<Py<PyAny>>,
}

impl Flags {
    pub fn environment(compiled: Arc<Compiled>, handler: Option<Py<PyAny>>) -> Flags {
        Flags {
            compiled,
            source: Source::Environment,
            default_flag_handler: handler,
        }
    }

    pub fn identity(
        compiled: Arc<Compiled>,
        evaluated: Evaluated,
        handler: Option<Py<PyAny>>,
    ) -> Flags {
        Flags {
            compiled,
            source: Source::Identity(evaluated),
            default_flag_handler: handler,
        }
    }

    fn results(&self) -> &[FlagResult<'_>] {
        match &self.source {
            Source::Environment => self.compiled.env_flags(),
            Source::Identity(evaluated) => evaluated.flags(),
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        let results = self.results();
        // Results are in feature order; the scan is only a fallback.
        match self.compiled.slot(name) {
            Some(i) if results.get(i).is_some_and(|f| f.key == name) => Some(i),
            _ => results.iter().position(|f| f.key == name),
        }
    }

    fn missing(&self, py: Python<'_>, feature_name: &str) -> PyResult<Py<PyAny>> {
        match &self.default_flag_handler {
            Some(handler) => handler.call1(py, (feature_name,)),
            None => Err(FeatureNotFoundError::new_err(format!(
                "Feature does not exist: {feature_name}"
            ))),
        }
    }
}

#[pymethods]
impl Flags {
    /// Every flag, in the document's feature order.
    fn all_flags(slf: &Bound<'_, Self>) -> Vec<Flag> {
        (0..slf.get().results().len())
            .map(|index| Flag {
                parent: slf.clone().unbind(),
                index,
            })
            .collect()
    }

    /// The flag of a feature. A feature the environment does not have goes to the
    /// `default_flag_handler` if one was given, else raises `FeatureNotFoundError`.
    fn get_flag(slf: &Bound<'_, Self>, feature_name: &str) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match slf.get().find(feature_name) {
            Some(index) => Ok(Py::new(
                py,
                Flag {
                    parent: slf.clone().unbind(),
                    index,
                },
            )?
            .into_any()),
            None => slf.get().missing(py, feature_name),
        }
    }

    fn is_feature_enabled(&self, py: Python<'_>, feature_name: &str) -> PyResult<Py<PyAny>> {
        match self.find(feature_name) {
            Some(i) => value_to_py(py, self.results()[i].enabled),
            None => self.missing(py, feature_name)?.getattr(py, "enabled"),
        }
    }

    fn get_feature_value(&self, py: Python<'_>, feature_name: &str) -> PyResult<Py<PyAny>> {
        match self.find(feature_name) {
            Some(i) => value_to_py(py, self.results()[i].value),
            None => self.missing(py, feature_name)?.getattr(py, "value"),
        }
    }

    /// Feature names, in the document's feature order.
    fn feature_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.results().iter().map(|f| f.key))
    }

    fn __len__(&self) -> usize {
        self.results().len()
    }

    fn __contains__(&self, feature_name: &str) -> bool {
        self.find(feature_name).is_some()
    }

    fn __repr__(&self) -> String {
        format!("<flagpole.Flags: {} flags>", self.results().len())
    }
}

/// One flag (a view of one result of a `Flags`). Immutable.
#[pyclass(frozen, module = "flagpole")]
pub struct Flag {
    parent: Py<Flags>,
    index: usize,
}

impl Flag {
    fn result(&self) -> &FlagResult<'_> {
        &self.parent.get().results()[self.index]
    }
}

#[pymethods]
impl Flag {
    #[getter]
    fn enabled(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        value_to_py(py, self.result().enabled)
    }

    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        value_to_py(py, self.result().value)
    }

    /// The feature id, from the deciding feature state's metadata (as the SDK reads it).
    #[getter]
    fn feature_id(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.result().metadata.and_then(|m| m.get("id")) {
            Some(id) => value_to_py(py, id),
            None => Ok(py.None()),
        }
    }

    #[getter]
    fn feature_name<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        PyString::new(py, self.result().key)
    }

    /// The engine's reason (`DEFAULT`, `STATIC`, `TARGETING_MATCH; segment=…`, `SPLIT; …`).
    #[getter]
    fn reason<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        PyString::new(py, self.result().reason.as_str())
    }

    #[getter]
    fn is_default(&self) -> bool {
        false
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Flag(feature_name={}, enabled={}, value={}, feature_id={}, is_default=False)",
            self.feature_name(py).repr()?,
            self.enabled(py)?.bind(py).repr()?,
            self.value(py)?.bind(py).repr()?,
            self.feature_id(py)?.bind(py).repr()?,
        ))
    }
}
