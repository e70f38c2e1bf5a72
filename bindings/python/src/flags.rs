//! `Flags` and `Flag`: the result objects, shaped like the Flagsmith Python SDK's
//! (`flags.is_feature_enabled(name)`, `get_feature_value(name)`, `get_flag(name)`, `all_flags()`;
//! a `Flag` has `enabled`, `value`, `feature_id`, `feature_name`, `is_default`, `reason`).
//!
//! An identity's `Flags` is lazy, as the SDK 6.3.0's is: reading one flag evaluates that feature
//! only (memoised), `all_flags()` runs the whole evaluation once and lists the flags read before
//! it first, in read order, then the others, exactly as the SDK does. Results are the engine's,
//! borrowed from the environment the `Flags` keeps alive (see `compiled` and `identity`); a
//! `Flag` keeps its `Flags` alive and names its result by position ([`Which`]), so it copies
//! nothing and borrows nothing. Python objects are made only for what is read.

use std::sync::Arc;

use flagpole_engine::FlagResult;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::compiled::Compiled;
use crate::convert::value_to_py;
use crate::errors::{eval_error, FeatureNotFoundError};
use crate::gil::Gil;
use crate::identity::{IdentityFlags, Pick};

/// Whether a lazily read flag is evaluated with the GIL released. It is not: the engine takes
/// 0.26-0.31 µs for one feature of the benchmark documents, and releasing cost more than it
/// gave. Measured on `get_identity_flags` + one `is_feature_enabled` (2 vCPUs, best of 3 runs):
/// 1 thread 0.89 → 0.92 µs per call (small), 0.82 → 0.87 µs (medium) when releasing; 2 threads
/// 1.03M → 1.00M calls/s (small), 1.18M → 1.14M (medium): the call is Python-bound, so there is
/// nothing for a second thread to run in parallel.
const RELEASE_FOR_ONE_FLAG: bool = false;

enum Source {
    /// The environment flags precomputed in `Compiled`.
    Environment,
    Identity(IdentityFlags),
}

/// Which flag of a `Flags`: a position in the environment's own flags, or in an identity's memo.
#[derive(Clone, Copy)]
enum Which {
    Own(usize),
    Identity(Pick),
}

/// The flags of one evaluation (an identity, or the environment).
#[pyclass(frozen, module = "flagpole_python")]
pub struct Flags {
    source: Source,
    compiled: Arc<Compiled>,
    default_flag_handler: Option<Py<PyAny>>,
    gil: Gil,
}

impl Flags {
    pub fn environment(compiled: Arc<Compiled>, handler: Option<Py<PyAny>>) -> Flags {
        Flags {
            source: Source::Environment,
            compiled,
            default_flag_handler: handler,
            gil: Gil::Auto,
        }
    }

    pub fn identity(
        compiled: Arc<Compiled>,
        lazy: IdentityFlags,
        handler: Option<Py<PyAny>>,
        gil: Gil,
    ) -> Flags {
        Flags {
            source: Source::Identity(lazy),
            compiled,
            default_flag_handler: handler,
            gil,
        }
    }

    /// The flag of a feature, evaluated now if it has not been; `None` when the document has no
    /// feature of that name.
    fn flag(&self, py: Python<'_>, feature_name: &str) -> PyResult<Option<Which>> {
        let Some(slot) = self.compiled.slot(feature_name) else {
            return Ok(None);
        };
        let lazy = match &self.source {
            Source::Environment => {
                let own = self.compiled.position(self.compiled.env_flags(), slot);
                return Ok(own.map(Which::Own));
            }
            Source::Identity(lazy) => lazy,
        };
        if let Some(pick) = lazy.known(slot) {
            return Ok(Some(Which::Identity(pick)));
        }
        let result = if RELEASE_FOR_ONE_FLAG && self.gil != Gil::Hold {
            py.detach(|| lazy.evaluate_one(slot))
        } else {
            lazy.evaluate_one(slot)
        };
        Ok(result.map_err(eval_error)?.map(Which::Identity))
    }

    /// Every flag (the whole evaluation, run once), in the order `all_flags()` lists them.
    fn every_flag(&self, py: Python<'_>) -> PyResult<Vec<Which>> {
        match &self.source {
            Source::Environment => Ok((0..self.compiled.env_flags().len())
                .map(Which::Own)
                .collect()),
            Source::Identity(lazy) => {
                if !lazy.is_evaluated() {
                    if self.gil.releases(self.compiled.evaluation_ns) {
                        py.detach(|| lazy.evaluate_all());
                    } else {
                        lazy.evaluate_all();
                    }
                }
                let listed = lazy.listed().map_err(eval_error)?;
                Ok(listed.into_iter().map(Which::Identity).collect())
            }
        }
    }

    /// Calls `f` with the flag `which` names.
    fn with_flag<R>(&self, which: Which, f: impl FnOnce(&FlagResult<'_>) -> R) -> R {
        match (which, &self.source) {
            (Which::Own(i), _) => f(&self.compiled.env_flags()[i]),
            (Which::Identity(pick), Source::Identity(lazy)) => lazy.with_flag(pick, f),
            (Which::Identity(_), Source::Environment) => {
                unreachable!("environment flags are named by Which::Own")
            }
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
    /// Every flag (for an identity, the whole evaluation runs once, with the GIL released if
    /// the document is large enough for that to pay: see `gil`).
    /// Flags already read come first, in read order, then the others in document order.
    fn all_flags(slf: &Bound<'_, Self>) -> PyResult<Vec<Flag>> {
        let flags = slf.get().every_flag(slf.py())?;
        Ok(flags
            .into_iter()
            .map(|which| Flag::new(slf, which))
            .collect())
    }

    /// The flag of a feature (for an identity, only that feature is evaluated, once). A feature
    /// the environment does not have goes to the `default_flag_handler` if one was given, else
    /// raises `FeatureNotFoundError`.
    fn get_flag(slf: &Bound<'_, Self>, feature_name: &str) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match slf.get().flag(py, feature_name)? {
            Some(which) => Ok(Py::new(py, Flag::new(slf, which))?.into_any()),
            None => slf.get().missing(py, feature_name),
        }
    }

    fn is_feature_enabled(&self, py: Python<'_>, feature_name: &str) -> PyResult<Py<PyAny>> {
        match self.flag(py, feature_name)? {
            Some(which) => self.with_flag(which, |flag| value_to_py(py, flag.enabled)),
            None => self.missing(py, feature_name)?.getattr(py, "enabled"),
        }
    }

    fn get_feature_value(&self, py: Python<'_>, feature_name: &str) -> PyResult<Py<PyAny>> {
        match self.flag(py, feature_name)? {
            Some(which) => self.with_flag(which, |flag| value_to_py(py, flag.value)),
            None => self.missing(py, feature_name)?.getattr(py, "value"),
        }
    }

    /// Feature names, in the document's feature order (nothing is evaluated).
    fn feature_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.compiled.names.iter().map(|n| &**n))
    }

    fn __len__(&self) -> usize {
        self.compiled.names.len()
    }

    fn __contains__(&self, feature_name: &str) -> bool {
        self.compiled.slot(feature_name).is_some()
    }

    fn __repr__(&self) -> String {
        format!(
            "<flagpole_python.Flags: {} flags>",
            self.compiled.names.len()
        )
    }
}

/// One flag (one result of a `Flags`, which it keeps alive). Immutable.
#[pyclass(frozen, module = "flagpole_python")]
pub struct Flag {
    parent: Py<Flags>,
    which: Which,
}

impl Flag {
    fn new(parent: &Bound<'_, Flags>, which: Which) -> Flag {
        Flag {
            parent: parent.clone().unbind(),
            which,
        }
    }

    fn with_result<R>(&self, f: impl FnOnce(&FlagResult<'_>) -> R) -> R {
        self.parent.get().with_flag(self.which, f)
    }
}

#[pymethods]
impl Flag {
    #[getter]
    fn enabled(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with_result(|r| value_to_py(py, r.enabled))
    }

    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with_result(|r| value_to_py(py, r.value))
    }

    /// The feature id, from the deciding feature state's metadata (as the SDK reads it).
    #[getter]
    fn feature_id(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.with_result(|r| match r.metadata.and_then(|m| m.get("id")) {
            Some(id) => value_to_py(py, id),
            None => Ok(py.None()),
        })
    }

    #[getter]
    fn feature_name<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        self.with_result(|r| PyString::new(py, r.key))
    }

    /// The engine's reason (`DEFAULT`, `STATIC`, `TARGETING_MATCH; segment=…`, `SPLIT; …`).
    #[getter]
    fn reason<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        self.with_result(|r| PyString::new(py, r.reason.as_str()))
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
