//! Flagpole's flagd engine: flagd flag definitions (the `flags` + `$evaluators` + `metadata`
//! JSON that flagd and the in-process OpenFeature providers read) compiled once and evaluated
//! exactly as flagd evaluates them.
//!
//! Like `flagpole-engine` (Flagsmith), this crate does no I/O, starts no threads and keeps no
//! global state; the server and the CLI are shells around it. Its shape is *compile once,
//! evaluate many*: [`FlagSet::from_json`] resolves `$ref`s, compiles every targeting rule and
//! merges set metadata under flag metadata, so that [`FlagSet::evaluate`] only runs the rule.
//!
//! ```
//! use flagpole_flagd::{Context, FlagSet, Reason};
//! let set = FlagSet::from_json(r#"{"flags": {"banner": {"state": "ENABLED",
//!     "variants": {"on": true, "off": false}, "defaultVariant": "off"}}}"#).unwrap();
//! let context = serde_json::Map::new();
//! let answer = set.evaluate("banner", &Context::new(&context, 0));
//! assert_eq!(answer.value, Some(&serde_json::json!(false)));
//! assert_eq!(answer.reason, Reason::Static);
//! ```

#![forbid(unsafe_code)]

mod definition;
mod evaluate;

pub use definition::{DefinitionError, Flag, FlagSet, State};
pub use evaluate::{Context, ErrorCode, Evaluation, Reason};
