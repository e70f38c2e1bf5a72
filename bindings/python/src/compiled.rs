//! One compiled environment document, immutable and shared by `Arc` between Python objects,
//! threads and the refresher: the engine's `Environment`, its own flags (no segments, no
//! identity: what the Flagsmith API and the SDKs' `get_environment_flags()` return) evaluated
//! once by the engine's `Environment::own_flags`, and the feature names in result order so that
//! `Flags` can look a flag up by name without going back to the engine. Nothing in here touches
//! Python, so callers may run any of it with the GIL released.
//!
//! A document is read from its bytes by the engine's `DocumentView`, without a JSON tree of it
//! (nearly all of a large document is identity overrides, which the view groups as it reads
//! them); one the view does not map exactly, and every broken one, is parsed as a tree instead,
//! which gives the same environment or the same error.
//!
//! The own flags borrow from the environment they were evaluated on (`FlagResult<'a>`), and both
//! live in one `self_cell` (the environment is its owner), so no borrow is ever stretched.

use std::collections::HashMap;

use flagpole_engine::document::{document_to_context, DocumentView};
use flagpole_engine::{Environment, FlagResult};
use self_cell::self_cell;
use serde_json::Value;

use crate::gil::estimate_evaluation_ns;

/// The environment's own flags, in result (document) order.
type OwnFlags<'env> = Vec<FlagResult<'env>>;

self_cell!(
    /// An environment and its own flags, which borrow from it.
    struct EnvironmentCell {
        owner: Environment,
        #[covariant]
        dependent: OwnFlags,
    }
);

pub struct Compiled {
    cell: EnvironmentCell,
    /// Feature names in result order, and the reverse index.
    pub names: Vec<Box<str>>,
    pub index: HashMap<Box<str>, u32>,
    /// `api_key`, `name` and `updated_at` of the document, for display.
    pub api_key: String,
    pub name: String,
    pub updated_at: Option<String>,
    /// The estimated cost (ns) of one whole evaluation, which decides whether evaluations
    /// release the GIL (see `gil`).
    pub evaluation_ns: u64,
}

/// What `Compiled` keeps of a document besides its compiled form, read from its members before
/// it is compiled (the view is consumed by compiling).
struct Facts {
    api_key: String,
    name: String,
    updated_at: Option<String>,
    evaluation_ns: u64,
}

impl Facts {
    fn of(
        api_key: Option<&Value>,
        name: Option<&Value>,
        updated_at: Option<&Value>,
        feature_states: Option<&Value>,
        project: Option<&Value>,
    ) -> Facts {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        Facts {
            api_key: text(api_key).unwrap_or_default(),
            name: text(name).unwrap_or_default(),
            updated_at: text(updated_at),
            evaluation_ns: estimate_evaluation_ns(feature_states, project),
        }
    }
}

impl Compiled {
    /// Compiles document bytes (a file, `bytes`, a page from the upstream): read without a JSON
    /// tree where the engine's `DocumentView` maps the document exactly, else parsed as a tree,
    /// which gives the same result or the error it always gave. The error is a sentence for
    /// `DocumentError`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compiled, String> {
        Self::from_view(bytes).unwrap_or_else(|| {
            let doc: Value = serde_json::from_slice(bytes)
                .map_err(|e| format!("invalid environment document: not JSON: {e}"))?;
            Self::from_document(&doc)
        })
    }

    /// The fast reading of [`Compiled::from_bytes`]: `None` when the document is one the view
    /// does not take (an unusual or a broken one), for the caller to parse as a tree.
    pub fn from_view(bytes: &[u8]) -> Option<Result<Compiled, String>> {
        let view = DocumentView::parse(bytes)?;
        let facts = Facts::of(
            view.api_key.as_ref(),
            view.name.as_ref(),
            view.updated_at.as_ref(),
            view.feature_states.as_ref(),
            view.project.as_ref(),
        );
        let (env, _) = view.compile()?;
        Some(Self::with_own_flags(env, facts))
    }

    /// Compiles a parsed environment document (merged pages, or one the view left to the tree).
    pub fn from_document(doc: &Value) -> Result<Compiled, String> {
        let invalid = |e: &dyn std::fmt::Display| format!("invalid environment document: {e}");
        let context = document_to_context(doc).map_err(|e| invalid(&e))?;
        let (env, _) = Environment::from_context(&context).map_err(|e| invalid(&e))?;
        drop(context);
        let facts = Facts::of(
            doc.get("api_key"),
            doc.get("name"),
            doc.get("updated_at"),
            doc.get("feature_states"),
            doc.get("project"),
        );
        Self::with_own_flags(env, facts)
    }

    /// Evaluates the own flags of a compiled environment and indexes them by name.
    fn with_own_flags(env: Environment, facts: Facts) -> Result<Compiled, String> {
        let cell =
            EnvironmentCell::try_new(env, |env| env.own_flags().map(|r| r.flags)).map_err(|e| {
                format!("invalid environment document: its flags cannot be evaluated: {e}")
            })?;
        let names: Vec<Box<str>> = cell
            .borrow_dependent()
            .iter()
            .map(|f| f.key.into())
            .collect();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        Ok(Compiled {
            cell,
            names,
            index,
            api_key: facts.api_key,
            name: facts.name,
            updated_at: facts.updated_at,
            evaluation_ns: facts.evaluation_ns,
        })
    }

    /// The whole document compiled: segments, identity overrides, multivariate splits.
    pub fn env(&self) -> &Environment {
        self.cell.borrow_owner()
    }

    /// The environment's own flags (no identity, no segments).
    pub fn env_flags(&self) -> &[FlagResult<'_>] {
        self.cell.borrow_dependent()
    }

    /// The position of a feature in results, by name.
    pub fn slot(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// Where the flag of `slot` is in a whole result (results are in feature order; the scan is
    /// only a fallback).
    pub fn position(&self, flags: &[FlagResult<'_>], slot: u32) -> Option<usize> {
        let name = &*self.names[slot as usize];
        match flags.get(slot as usize) {
            Some(f) if f.key == name => Some(slot as usize),
            _ => flags.iter().position(|f| f.key == name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../examples/environment.json");

    #[test]
    fn own_flags_are_the_documents_states_in_feature_order() {
        let compiled = Compiled::from_bytes(EXAMPLE.as_bytes()).unwrap();
        let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
        let states = doc["feature_states"].as_array().unwrap();
        assert_eq!(compiled.env_flags().len(), states.len());
        for (i, (flag, state)) in compiled.env_flags().iter().zip(states).enumerate() {
            assert_eq!(flag.key, state["feature"]["name"]);
            assert_eq!(*flag.enabled, state["enabled"]);
            assert_eq!(flag.reason.as_str(), "STATIC");
            assert_eq!(compiled.slot(flag.key), Some(i as u32));
            assert_eq!(compiled.position(compiled.env_flags(), i as u32), Some(i));
        }
        assert_eq!(compiled.slot("no such feature"), None);
    }

    #[test]
    fn the_view_and_the_tree_compile_alike() {
        let viewed = Compiled::from_view(EXAMPLE.as_bytes()).unwrap().unwrap();
        let tree = Compiled::from_document(&serde_json::from_str(EXAMPLE).unwrap()).unwrap();
        assert_eq!(viewed.names, tree.names);
        assert_eq!(
            (&viewed.api_key, &viewed.name, &viewed.updated_at),
            (&tree.api_key, &tree.name, &tree.updated_at)
        );
        assert_eq!(viewed.evaluation_ns, tree.evaluation_ns);
        let flags = |c: &Compiled| {
            c.env_flags()
                .iter()
                .map(|f| (f.key.to_owned(), f.enabled.to_string(), f.value.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(flags(&viewed), flags(&tree));
        // Broken documents are left to the tree, which says what is wrong with them.
        for broken in [&b"{"[..], b"[1]", b"{\"name\": \"x\"}", b"\xff"] {
            assert!(Compiled::from_view(broken).is_none());
        }
    }

    #[test]
    fn documents_that_do_not_compile_are_refused_with_a_sentence() {
        let refused = Compiled::from_bytes(b"[1]").err().unwrap();
        assert!(
            refused.starts_with("invalid environment document: "),
            "{refused}"
        );
        let refused = Compiled::from_bytes(b"{").err().unwrap();
        assert!(
            refused.starts_with("invalid environment document: not JSON"),
            "{refused}"
        );
    }
}
