//! What an evaluation reads besides the flag: the caller's context and the time.

use serde_json::{Map, Value};

/// What a caller evaluates against: the OpenFeature evaluation context (`targetingKey` and
/// the rest, as flagd receives it) and the time `$flagd.timestamp` reads (Unix seconds).
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub attributes: &'a Map<String, Value>,
    pub now_unix_secs: u64,
}

impl<'a> Context<'a> {
    pub fn new(attributes: &'a Map<String, Value>, now_unix_secs: u64) -> Context<'a> {
        Context {
            attributes,
            now_unix_secs,
        }
    }
}
