//! Unleash toggles evaluated by Unleash's own engine (`unleash-yggdrasil`), for serving
//! Unleash's client and frontend APIs and the OpenFeature doors from one client-features body.
//!
//! A body (`/api/client/features`) is read once into [`Features`]; after that everything is a
//! read of it: [`Features::is_enabled`] and [`Features::variant`] for a [`Context`], the
//! frontend API's answer ([`Features::enabled_toggles`]), a filtered client body for a
//! [`ClientScope`] (a [`Token`]'s projects and the SDKs' query filters:
//! [`Features::client_body`]), what OpenFeature needs ([`Features::resolve_for_openfeature`])
//! which toggles a new body changed ([`changed_toggles`]), and what SDKs report gathered for
//! the server ([`Usage`]).
//!
//! Like the other engine crates this one does no I/O, reads no clock (the caller fills
//! `currentTime`: [`Context::fill_current_time`]) and keeps no global state. The engine draws
//! random numbers where Unleash does (`gradualRolloutRandom`, a variant without stickiness
//! for a context without `userId`/`sessionId`).
#![forbid(unsafe_code)]

mod canonical;
mod changes;
mod client_body;
mod context;
mod error;
mod evaluate;
mod features;
mod frontend;
mod openfeature;
mod payload;
mod scope;
mod toggle;
mod token;
mod usage;

pub use changes::changed_toggles;
pub use context::{Context, ContextError};
pub use error::FeaturesError;
pub use evaluate::{Variant, VariantPayload};
pub use features::{CompileWarning, Features};
pub use frontend::{FrontendToggle, FrontendToggles, FrontendVariant};
pub use openfeature::Resolution;
pub use payload::{PayloadError, TypedValue};
pub use scope::ClientScope;
pub use token::{Projects, Token, TokenError};
pub use usage::{Batch, Usage, UsageError, MAX_KEYS};
