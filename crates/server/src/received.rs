//! An environment document as the proxy receives it, read once into everything a snapshot
//! takes from it: the compiled environment, each feature's REST facts, the project's visibility
//! settings, `updated_at` and the content revision.
//!
//! Bytes that are exactly the document (one page, a file, the warm-start copy, the bundled
//! example) are read without a JSON tree: the engine's `DocumentView` compiles them, and the
//! revision is hashed from the text (`canonical_text`). Pages merged into a tree are read from
//! that tree. A document the fast reading does not take (an unusual one, or a broken one) is
//! parsed as a tree, so the outcome, and every error message, is the tree's. The content
//! revision can also be had alone ([`content_revision`], no compile): publishing asks it of a
//! document whose bytes differ from the served one's, and passes it on when it builds.
//!
//! Every document the process reads compiles its segment rules through one [`Shared`]:
//! the environments of one project carry the same segments, and a proxy serving many of them
//! holds each distinct rule set once (the engine decides what may be shared).

use std::collections::HashSet;

use bytes::Bytes;
use flagpole_engine::document::{
    document_to_context, feature_catalog_of, DocumentView, FeatureInfo,
};
use flagpole_engine::{Diagnostic, Environment, InputError, Shared};
use serde_json::Value;

/// The rule sets compiled for the environments this process serves (weakly held: a rule set
/// lives as long as an environment that has it).
static SHARED: std::sync::LazyLock<Shared> = std::sync::LazyLock::new(Shared::new);

/// A document as a source hands it over.
#[derive(Debug)]
pub enum Incoming {
    /// Bytes that are exactly the document: served as they are.
    Bytes(Bytes),
    /// Pages merged into one tree: serialised once, to be served.
    Tree(Value),
}

/// Why a document is not taken. The sources word the first three in their own terms.
#[derive(Debug)]
pub enum Rejected {
    /// Not JSON (the parser's message).
    InvalidJson(String),
    /// JSON, but not an object.
    NotAnObject,
    /// An object without a string `api_key`.
    NoApiKey,
    /// Another environment's document.
    OtherEnvironment,
    /// The engine refuses it.
    Engine(InputError),
    /// The build itself failed (a panic on the build thread).
    Internal(String),
}

impl Rejected {
    /// What publishing says when the document was meant for the environment `client_key`.
    pub fn message(&self, client_key: &str) -> String {
        match self {
            Rejected::InvalidJson(e) => format!("invalid JSON: {e}"),
            Rejected::NotAnObject => "not an environment document (not a JSON object)".into(),
            Rejected::NoApiKey | Rejected::OtherEnvironment => format!(
                "the document's api_key is not this environment's client key ({})",
                crate::keys::fingerprint(client_key)
            ),
            Rejected::Engine(e) => format!("the engine rejects the document: {e}"),
            Rejected::Internal(e) => format!("snapshot build failed: {e}"),
        }
    }
}

/// What a snapshot takes from a document.
#[derive(Debug)]
pub struct Received {
    pub env: Environment,
    /// The compiler's findings (unknown operators): the CLI refuses them unless told not to.
    pub diagnostics: Vec<Diagnostic>,
    /// Features in `feature_states` order.
    pub features: Vec<FeatureInfo>,
    /// `project.server_key_only_feature_ids`, each as JSON text.
    pub server_only_ids: HashSet<String>,
    /// `project.hide_disabled_flags`.
    pub hide_disabled: bool,
    /// `updated_at`, when it is a string.
    pub updated_at: Option<String>,
    /// The first 16 bytes of SHA-256 over the document's canonical JSON, as lowercase hex.
    pub content_revision: String,
}

impl Received {
    /// Reads document bytes. With `client_key`, the document must be an object whose `api_key`
    /// is that key (checked before it is compiled); without, only the engine judges it.
    pub fn from_bytes(bytes: &[u8], client_key: Option<&str>) -> Result<Received, Rejected> {
        Self::from_bytes_with(bytes, client_key, None)
    }

    /// [`from_bytes`](Self::from_bytes), with the content revision when it is already known
    /// ([`content_revision`]), so that it is not hashed twice.
    pub fn from_bytes_with(
        bytes: &[u8],
        client_key: Option<&str>,
        known: Option<String>,
    ) -> Result<Received, Rejected> {
        if let Some(received) = Self::from_text(bytes, client_key, known.as_ref()) {
            return received;
        }
        let doc: Value =
            serde_json::from_slice(bytes).map_err(|e| Rejected::InvalidJson(e.to_string()))?;
        Self::from_tree_with(&doc, client_key, known)
    }

    /// The fast reading; `None` when the tree must decide.
    fn from_text(
        bytes: &[u8],
        client_key: Option<&str>,
        known: Option<&String>,
    ) -> Option<Result<Received, Rejected>> {
        let text = std::str::from_utf8(bytes).ok()?;
        let view = DocumentView::parse_str(text)?;
        if let Err(rejected) = check_key(view.api_key.as_ref(), client_key) {
            return Some(Err(rejected));
        }
        let features = feature_catalog_of(view.feature_states.as_ref());
        let (server_only_ids, hide_disabled) = project_settings(view.project.as_ref());
        let updated_at = updated_at(view.updated_at.as_ref());
        let (env, diagnostics) = view.compile_sharing(&SHARED)?;
        let content_revision = match known {
            Some(known) => known.clone(),
            None => crate::canonical::hex(&crate::canonical_text::sha256(text)?, 16),
        };
        Some(Ok(Received {
            env,
            diagnostics,
            features,
            server_only_ids,
            hide_disabled,
            updated_at,
            content_revision,
        }))
    }

    /// Reads a parsed document (merged pages, or a document the fast reading left to the tree).
    pub fn from_tree(doc: &Value, client_key: Option<&str>) -> Result<Received, Rejected> {
        Self::from_tree_with(doc, client_key, None)
    }

    /// [`from_tree`](Self::from_tree), with the content revision when it is already known.
    pub fn from_tree_with(
        doc: &Value,
        client_key: Option<&str>,
        known: Option<String>,
    ) -> Result<Received, Rejected> {
        if client_key.is_some() && !doc.is_object() {
            return Err(Rejected::NotAnObject);
        }
        check_key(doc.get("api_key"), client_key)?;
        let context = document_to_context(doc).map_err(Rejected::Engine)?;
        let (env, diagnostics) =
            Environment::from_context_sharing(&context, &SHARED).map_err(Rejected::Engine)?;
        let (server_only_ids, hide_disabled) = project_settings(doc.get("project"));
        Ok(Received {
            env,
            diagnostics,
            features: feature_catalog_of(doc.get("feature_states")),
            server_only_ids,
            hide_disabled,
            updated_at: updated_at(doc.get("updated_at")),
            content_revision: known
                .unwrap_or_else(|| crate::canonical::hex(&crate::canonical::sha256(doc), 16)),
        })
    }
}

/// The content revision of a document as a source hands it over (what [`Received`] would
/// hold), without compiling it: hashed from the text for bytes, from the tree for merged pages.
/// `None` when the text is not what the text reading takes (a broken or unusual document: the
/// build reads it as a tree and decides).
pub fn content_revision(document: &Incoming, bytes: &[u8]) -> Option<String> {
    let digest = match document {
        Incoming::Tree(doc) => crate::canonical::sha256(doc),
        Incoming::Bytes(_) => crate::canonical_text::sha256(std::str::from_utf8(bytes).ok()?)?,
    };
    Some(crate::canonical::hex(&digest, 16))
}

fn check_key(api_key: Option<&Value>, client_key: Option<&str>) -> Result<(), Rejected> {
    let Some(client_key) = client_key else {
        return Ok(());
    };
    match api_key.and_then(Value::as_str) {
        None => Err(Rejected::NoApiKey),
        Some(key) if key != client_key => Err(Rejected::OtherEnvironment),
        Some(_) => Ok(()),
    }
}

/// (`server_key_only_feature_ids` as JSON texts, `hide_disabled_flags`) of `project`.
fn project_settings(project: Option<&Value>) -> (HashSet<String>, bool) {
    let server_only_ids = project
        .and_then(|p| p.get("server_key_only_feature_ids"))
        .and_then(Value::as_array)
        .map(|ids| ids.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    let hide_disabled = project
        .and_then(|p| p.get("hide_disabled_flags"))
        .and_then(Value::as_bool)
        == Some(true);
    (server_only_ids, hide_disabled)
}

fn updated_at(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests;
