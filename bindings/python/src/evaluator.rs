//! The evaluation entry points `Environment` and `Flagpole` share: both hand an `Evaluator` (the
//! compiled document they currently serve, and the default flag handler) to the same methods,
//! so their Python methods are one-line delegations.
//!
//! Arguments are converted with the GIL held (one pass over each trait dict, by type); the
//! engine runs with the GIL released (`Python::detach`) where the work is large enough to pay
//! for the hand-off (`gil`: a whole evaluation of a large document, a batch of more than a few
//! identities; an explanation always). A single flag read lazily is decided in `flags.rs`.

use std::sync::Arc;

use flagpole_engine::Identity;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::compiled::Compiled;
use crate::convert::traits_from_py;
use crate::errors::eval_error;
use crate::explain;
use crate::flags::Flags;
use crate::gil::Gil;
use crate::identity::{IdentityFlags, Subject};

/// What an evaluation runs against: one compiled document (loaded once per call, so a refresh
/// is seen whole or not at all) and the handler for features the document does not have.
pub(crate) struct Evaluator {
    pub compiled: Arc<Compiled>,
    pub default_flag_handler: Option<Py<PyAny>>,
}

impl Evaluator {
    /// The document's own flags (precomputed at compile time).
    pub(crate) fn environment_flags(self) -> Flags {
        Flags::environment(self.compiled, self.default_flag_handler)
    }

    /// An identity's flags, evaluated lazily: nothing is evaluated until a flag is read.
    pub(crate) fn identity_flags(
        self,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
        gil: Gil,
    ) -> PyResult<Flags> {
        let subject = Subject::of(identifier, traits_from_py(traits)?);
        let lazy = IdentityFlags::of(self.compiled.clone(), subject);
        Ok(Flags::identity(
            self.compiled,
            lazy,
            self.default_flag_handler,
            gil,
        ))
    }

    /// Benchmark-only: [`Evaluator::identity_flags`] in the GIL mode named by `gil` (`"auto"`,
    /// `"release"` or `"hold"`; see `gil::Gil`).
    pub(crate) fn identity_flags_in(
        self,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
        gil: &str,
    ) -> PyResult<Flags> {
        let mode = Gil::named(gil).ok_or_else(|| {
            PyValueError::new_err(format!(
                "gil must be \"auto\", \"release\" or \"hold\", not {gil:?}"
            ))
        })?;
        self.identity_flags(identifier, traits, mode)
    }

    /// Many identities' flags, every one evaluated whole, in a single release of the GIL unless
    /// the whole batch is estimated to cost less than a hand-off of the GIL (see `gil`).
    pub(crate) fn identity_flags_batch(
        self,
        py: Python<'_>,
        identities: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Flags>> {
        let mut batch = Vec::with_capacity(identities.len().unwrap_or(0));
        for item in identities.try_iter()? {
            let item = item?;
            let (identifier, traits) = identity_item(&item)?;
            let subject = Subject::of(&identifier, traits_from_py(traits.as_ref())?);
            batch.push(IdentityFlags::of(self.compiled.clone(), subject));
        }
        let evaluate = || {
            for lazy in &batch {
                lazy.evaluate_all();
            }
        };
        let work = self
            .compiled
            .evaluation_ns
            .saturating_mul(batch.len() as u64);
        if Gil::Auto.releases(work) {
            py.detach(evaluate);
        } else {
            evaluate();
        }
        Ok(batch
            .into_iter()
            .map(|lazy| {
                let handler = self.default_flag_handler.as_ref().map(|h| h.clone_ref(py));
                Flags::identity(self.compiled.clone(), lazy, handler, Gil::Auto)
            })
            .collect())
    }

    /// Why this identity gets each value, as a readable table.
    pub(crate) fn explain(
        &self,
        py: Python<'_>,
        identifier: &str,
        traits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let traits = traits_from_py(traits)?;
        let compiled = &self.compiled;
        py.detach(|| explain::render(compiled, &Identity::new(identifier, &traits)))
            .map_err(eval_error)
    }
}

/// One item of a batch: `(identifier, traits)` (traits may be `None`), or just an identifier.
fn identity_item<'py>(item: &Bound<'py, PyAny>) -> PyResult<(String, Option<Bound<'py, PyAny>>)> {
    if let Ok(identifier) = item.cast::<PyString>() {
        return Ok((identifier.to_cow()?.into_owned(), None));
    }
    let pair = if let Ok(t) = item.cast::<PyTuple>() {
        (t.len() == 2).then(|| (t.get_item(0), t.get_item(1)))
    } else if let Ok(l) = item.cast::<PyList>() {
        (l.len() == 2).then(|| (l.get_item(0), l.get_item(1)))
    } else {
        None
    };
    let Some((identifier, traits)) = pair else {
        return Err(PyTypeError::new_err(
            "each identity must be an (identifier, traits) pair or an identifier",
        ));
    };
    let identifier = identifier?;
    let identifier = identifier
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err("each identity's identifier must be a str"))?;
    Ok((identifier.to_cow()?.into_owned(), Some(traits?)))
}
