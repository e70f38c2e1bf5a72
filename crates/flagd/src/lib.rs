//! Flagpole's flagd engine: flagd flag definitions (the `flags` + `$evaluators` + `metadata`
//! JSON that flagd and the in-process OpenFeature providers read) compiled once and evaluated
//! exactly as flagd's reference evaluator (`openfeature-flagd-core` 1.0.0) evaluates them.
//!
//! Like `flagpole-engine` (Flagsmith), this crate does no I/O, starts no threads and keeps no
//! global state; the server and the CLI are shells around it. Its shape is *compile once,
//! evaluate many*: [`FlagSet::from_json`] checks the file as the reference does, substitutes
//! `$ref`s (`evaluators`), compiles every targeting rule (`targeting`, JSONLogic by
//! datalogic-rs with the reference's operators in `ops`) and merges set metadata under flag
//! metadata, so that [`FlagSet::evaluate`] (`evaluate`) only runs the rule.
//!
//! ```
//! use flagpole_flagd::{Context, FlagSet, Reason};
//! let set = FlagSet::from_json(r#"{"flags": {"banner": {"state": "ENABLED",
//!     "variants": {"on": true, "off": false}, "defaultVariant": "off",
//!     "targeting": {"if": [{"ends_with": [{"var": "email"}, "@example.com"]}, "on"]}}}}"#).unwrap();
//! let mut context = serde_json::Map::new();
//! context.insert("email".into(), "ada@example.com".into());
//! let answer = set.evaluate("banner", &Context::new(&context, 0));
//! assert_eq!(answer.value, Some(&serde_json::json!(true)));
//! assert_eq!(answer.reason, Reason::TargetingMatch);
//! ```

#![forbid(unsafe_code)]

mod context;
mod definition;
mod evaluate;
mod evaluators;
mod ops;
mod refusal;
mod targeting;

pub use context::Context;
pub use definition::{DefinitionError, Flag, FlagSet, State};
pub use evaluate::{ErrorCode, Evaluation, Reason};
pub use ops::bucket;
