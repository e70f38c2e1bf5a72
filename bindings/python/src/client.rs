//! `Flagpole` (alias `Client`): what a Flagsmith SDK user constructs. Either offline, around an
//! `Environment`, or following an upstream environment document with a server key and
//! refreshing it on a background Rust thread. The current environment lives in an `ArcSwap`:
//! each evaluation loads one `Arc` and evaluates against that whole document, so a refresh that
//! lands mid-evaluation is seen by the next call, never half by this one.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, UNIX_EPOCH};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::compiled::Compiled;
use crate::environment::Environment;
use crate::errors::UpstreamError;
use crate::evaluator::Evaluator;
use crate::flags::Flags;
use crate::gil::Gil;
use crate::upstream::{Shared, Upstream};

const DEFAULT_API_URL: &str = "https://edge.api.flagsmith.com/api/v1/";

#[pyclass(frozen, module = "flagpole_python")]
pub struct Flagpole {
    shared: Arc<Shared>,
    default_flag_handler: Option<Py<PyAny>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[pymethods]
impl Flagpole {
    /// `Flagpole(environment_key, api_url=...)` follows `<api_url>/environment-document/` with a
    /// server key (`ser.…`); `Flagpole(environment=Environment.from_path(...))` is offline. With
    /// both, the environment is the fallback used while the upstream cannot be reached.
    #[new]
    #[pyo3(signature = (
        environment_key=None,
        api_url=None,
        *,
        environment=None,
        refresh_interval_seconds=60.0,
        request_timeout_seconds=10.0,
        default_flag_handler=None,
    ))]
    fn new(
        py: Python<'_>,
        environment_key: Option<String>,
        api_url: Option<String>,
        environment: Option<PyRef<'_, Environment>>,
        refresh_interval_seconds: f64,
        request_timeout_seconds: f64,
        default_flag_handler: Option<Py<PyAny>>,
    ) -> PyResult<Flagpole> {
        let fallback = environment.map(|e| e.inner.clone());
        let seconds = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(PyValueError::new_err(format!(
                    "{name} must be a number of seconds >= 0"
                )))
            }
        };
        let interval = seconds("refresh_interval_seconds", refresh_interval_seconds)?;
        let timeout = seconds("request_timeout_seconds", request_timeout_seconds)?;
        let Some(key) = environment_key else {
            let Some(env) = fallback else {
                return Err(PyValueError::new_err(
                    "give an environment_key (a server key) to follow an upstream, or environment= to run offline",
                ));
            };
            return Ok(Flagpole {
                shared: Arc::new(Shared::new(env, None)),
                default_flag_handler,
                thread: Mutex::new(None),
            });
        };
        if !key.starts_with("ser.") {
            return Err(PyValueError::new_err(
                "environment_key must be a server-side key (ser.…): the environment document is only served for those",
            ));
        }
        let upstream = Upstream::new(api_url.as_deref().unwrap_or(DEFAULT_API_URL), &key, timeout);
        // The first fetch happens now, so that the first evaluation has a document. The fallback
        // (or an empty placeholder) is only installed if it fails.
        let placeholder = match fallback.clone() {
            Some(env) => env,
            None => Arc::new(
                Compiled::from_bytes(
                    br#"{"api_key":"","name":"","feature_states":[],"project":{"segments":[]}}"#,
                )
                .map_err(UpstreamError::new_err)?,
            ),
        };
        let shared = Arc::new(Shared::new(placeholder, Some(upstream)));
        if let Err(e) = py.detach(|| shared.refresh()) {
            if fallback.is_none() {
                return Err(UpstreamError::new_err(format!(
                    "cannot load the environment document: {e}"
                )));
            }
        }
        let thread = if interval.is_zero() {
            None
        } else {
            let worker = shared.clone();
            Some(
                std::thread::Builder::new()
                    .name("flagpole-refresh".into())
                    .spawn(move || worker.run(interval))
                    .map_err(|e| UpstreamError::new_err(format!("cannot start refresh: {e}")))?,
            )
        };
        Ok(Flagpole {
            shared,
            default_flag_handler,
            thread: Mutex::new(thread),
        })
    }

    /// The environment's own flags (no identity, no segments), from the current document.
    fn get_environment_flags(&self, py: Python<'_>) -> Flags {
        self.evaluator(py).environment_flags()
    }

    /// One identity's flags from the current document, evaluated lazily (see `Environment`).
    #[pyo3(signature = (identifier, traits=None))]
    fn get_identity_flags(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Flags> {
        self.evaluator(py)
            .identity_flags(identifier, traits, Gil::Auto)
    }

    /// Benchmark-only: `get_identity_flags` with the GIL treated as `gil` says: `"hold"` never
    /// releases it, `"release"` always releases it for `all_flags()` (the behaviour before the
    /// release threshold), `"auto"` is `get_identity_flags`.
    #[pyo3(signature = (identifier, traits=None, *, gil))]
    fn _get_identity_flags_gil(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
        gil: &str,
    ) -> PyResult<Flags> {
        self.evaluator(py)
            .identity_flags_in(identifier, traits, gil)
    }

    /// Many identities' flags from the current document, each evaluated whole, all in one
    /// release of the GIL (see `Environment.get_identity_flags_batch`).
    fn get_identity_flags_batch(
        &self,
        py: Python<'_>,
        identities: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Flags>> {
        self.evaluator(py).identity_flags_batch(py, identities)
    }

    /// Why this identity gets each flag value, as a readable table.
    #[pyo3(signature = (identifier, traits=None))]
    fn explain(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        self.evaluator(py).explain(py, identifier, traits)
    }

    /// Fetches the document now (GIL released). True if a new document is now served, False if
    /// it was unchanged or there is no upstream; raises `UpstreamError` on failure, in which case
    /// the last good document is still served.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.shared.refresh())
            .map_err(UpstreamError::new_err)
    }

    /// The environment currently served.
    #[getter]
    fn environment(&self) -> Environment {
        Environment {
            inner: self.shared.current.load_full(),
        }
    }

    /// The last refresh's error, or None if it succeeded (or none ran).
    #[getter]
    fn last_error(&self) -> Option<String> {
        self.status().last_error.clone()
    }

    /// Seconds since the epoch of the last successful fetch (a 304 counts), or None.
    #[getter]
    fn last_success(&self) -> Option<f64> {
        self.status()
            .last_success
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64())
    }

    /// `(fetches, failures)` so far.
    #[getter]
    fn refresh_counts(&self) -> (u64, u64) {
        let status = self.status();
        (status.refreshes, status.failures)
    }

    /// Stops the refresh thread (waits for a fetch in flight). Evaluation keeps working on the
    /// last document.
    fn close(&self, py: Python<'_>) {
        self.shared.stop();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            py.detach(|| {
                let _ = handle.join();
            });
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}

impl Flagpole {
    /// The current document (one `Arc` load: a refresh is seen whole or not at all).
    fn evaluator(&self, py: Python<'_>) -> Evaluator {
        Evaluator {
            compiled: self.shared.current.load_full(),
            default_flag_handler: self.default_flag_handler.as_ref().map(|h| h.clone_ref(py)),
        }
    }

    fn status(&self) -> std::sync::MutexGuard<'_, crate::upstream::Status> {
        self.shared.status.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Flagpole {
    fn drop(&mut self) {
        // The thread exits at its next wake-up; it holds no Python objects.
        self.shared.stop();
    }
}
