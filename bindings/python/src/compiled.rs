//! One compiled environment document, immutable and shared by `Arc` between Python objects,
//! threads and the refresher: the engine's `Environment`, its own flags (no segments, no
//! identity: what the Flagsmith API and the SDKs' `get_environment_flags()` return) evaluated
//! once by the engine's `Environment::own_flags`, and the feature names in result order so that
//! `Flags` can look a flag up by name without going back to the engine. Nothing in here touches
//! Python, so callers may run any of it with the GIL released.
//!
//! The own flags borrow from the environment they were evaluated on (`FlagResult<'a>`), and both
//! live in one `self_cell` (the environment is its owner), so no borrow is ever stretched.

use std::collections::HashMap;

use flagpole_engine::document::document_to_context;
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

impl Compiled {
    /// Compiles a parsed environment document. The error is a sentence for `DocumentError`.
    pub fn from_document(doc: &Value) -> Result<Compiled, String> {
        let invalid = |e: &dyn std::fmt::Display| format!("invalid environment document: {e}");
        let context = document_to_context(doc).map_err(|e| invalid(&e))?;
        let (env, _) = Environment::from_context(&context).map_err(|e| invalid(&e))?;
        let evaluation_ns = estimate_evaluation_ns(&context);
        drop(context);
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
        let text = |key: &str| doc.get(key).and_then(Value::as_str);
        Ok(Compiled {
            cell,
            names,
            index,
            api_key: text("api_key").unwrap_or_default().to_owned(),
            name: text("name").unwrap_or_default().to_owned(),
            updated_at: text("updated_at").map(str::to_owned),
            evaluation_ns,
        })
    }

    /// Parses and compiles document bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compiled, String> {
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("invalid environment document: not JSON: {e}"))?;
        Self::from_document(&doc)
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
