//! The Unleash engine under the OpenFeature layer: the toggles an Unleash token opens as an
//! OpenFeature target ([`Toggles`]: its feed's view, scoped to the token's projects), the
//! caller's context as an Unleash context ([`Reading`]), and one toggle → one OpenFeature
//! [`Resolution`].
//!
//! A door presents the token where it carries its key (a client or a frontend token: both
//! read the same toggles, scoped alike). An Unleash toggle has an enabled bit and, when a
//! variant with a payload applies, a typed value, as a Flagsmith flag has an on/off bit and
//! an optional value, and maps the same way: the value is the payload typed by its `type`, or
//! the enabled bit when there is none; a boolean resolver reads the enabled bit whatever the
//! payload (`Typing::enabled_as_bool`), and a toggle off for the context reads `false` or the
//! caller's default. The variant is Unleash's own name (`disabled` where none applies, as
//! `/api/frontend` says). Reasons: `DISABLED` for a toggle switched off, `DEFAULT` for one on
//! that this context does not get, `STATIC` where nothing can vary and the value is the enabled
//! bit, else `TARGETING_MATCH`.
//! A payload that does not read as its `type` is `PARSE_ERROR`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use flagpole_unleash::{Context, Projects};
use serde_json::{Map, Value};

use super::resolution::{
    context_members, targeting_key, Declared, Fractions, Metadata, Refusal, Resolution, Typing,
    Unevaluated,
};
use super::{encode, tag, Encoded, Encoding};
use crate::unleash::{Admitted, TokenKind, Unleash, View};

/// The toggles one token reads: its feed's current view and the token's projects.
pub(super) struct Toggles {
    pub view: Arc<View>,
    projects: Projects,
    /// The scope as the answer's tag hashes it.
    scope: String,
}

/// A token's feed has no view yet (an upstream not fetched): the door's "not ready".
#[derive(Debug)]
pub(crate) struct NotLoaded;

/// The caller's context as Unleash reads it, and the context as received (which the tag
/// hashes: any member may be a property a constraint reads).
pub(super) struct Reading<'c> {
    context: Context,
    attributes: Cow<'c, Map<String, Value>>,
    targeting_key: Option<&'c str>,
}

/// The toggles `presented` opens, if it is one of the Unleash tokens (client or frontend);
/// `grace`: how long past its refresh interval a polled feed is still fresh. Returns the
/// toggles and whether they are stale.
pub(super) fn admit(
    unleash: &Unleash,
    presented: &str,
    grace: Option<Duration>,
) -> Option<Result<(Toggles, bool), NotLoaded>> {
    // A token opens these doors whatever API it was given for: the answer depends only on
    // its projects and its feed.
    let admitted: Admitted<'_> = unleash
        .admit(Some(presented), TokenKind::Client)
        .or_else(|_| unleash.admit(Some(presented), TokenKind::Frontend))
        .ok()?;
    let Some(view) = admitted.feed.view() else {
        return Some(Err(NotLoaded));
    };
    let stale = admitted.feed.is_stale(unleash.stale_after(grace));
    let projects = admitted.token.projects().clone();
    let scope = format!("unleash:{}", projects.to_list().join(","));
    Some(Ok((
        Toggles {
            view,
            projects,
            scope,
        },
        stale,
    )))
}

impl<'c> Reading<'c> {
    /// The context (absent or `null`: empty; anything but an object refused): `targetingKey`
    /// is `userId`; `userId`, `sessionId`, `remoteAddress`, `environment`, `appName` and
    /// `currentTime` are Unleash's fields; a `properties` object's members and every other
    /// member are properties. Strings are taken as they are, numbers and booleans as their
    /// text (as Unleash reads a context), anything else left out. `currentTime` is now unless
    /// given.
    pub(super) fn of(context: Option<&'c Value>) -> Result<Reading<'c>, Refusal> {
        let attributes = context_members(context)?;
        let mut unleash = Context::new();
        for (name, value) in attributes.iter() {
            match (name.as_str(), value) {
                ("targetingKey", _) => {}
                ("properties", Value::Object(properties)) => {
                    for (name, value) in properties {
                        if let Some(text) = text(value) {
                            unleash.set_property(name.as_str(), text);
                        }
                    }
                }
                (name, value) => {
                    if let Some(text) = text(value) {
                        unleash.set(name, text);
                    }
                }
            }
        }
        let targeting_key = targeting_key(&attributes);
        // Set last: OpenFeature's targeting key is the caller's identity, over a `userId`.
        if let Some(key) = targeting_key {
            unleash.set("userId", key);
        }
        unleash.fill_current_time(SystemTime::now());
        Ok(Reading {
            context: unleash,
            attributes,
            targeting_key,
        })
    }

    pub(super) fn targeting_key(&self) -> Option<&'c str> {
        self.targeting_key
    }
}

/// A context value as Unleash reads it: text, or a number's or boolean's text.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Toggles {
    /// The answer's tag: the view's revision, the token's projects, and the whole context
    /// (a constraint may read any property).
    pub(super) fn tag(
        &self,
        flag: Option<&str>,
        reading: &Reading<'_>,
        stale: bool,
        settings: &str,
    ) -> String {
        // The flag sets' form: the scope is prefixed (`unleash:`), so no selector shares it.
        tag::flag_set(
            &self.view.revision,
            &self.scope,
            flag,
            stale,
            &reading.attributes,
            settings,
        )
    }

    fn in_scope(&self, key: &str) -> bool {
        self.view
            .features
            .project(key)
            .is_some_and(|project| self.projects.contains(project))
    }

    pub(super) fn one<R>(
        &self,
        key: &str,
        reading: &Reading<'_>,
        f: impl FnOnce(Resolution<'_>) -> R,
    ) -> Result<R, Unevaluated> {
        let toggle = self
            .in_scope(key)
            .then(|| {
                self.view
                    .features
                    .resolve_for_openfeature(key, &reading.context)
            })
            .flatten();
        Ok(match &toggle {
            Some(toggle) => f(resolve(key, toggle)),
            // A toggle the view does not hold, or of a project the token does not see.
            None => f(Resolution::not_found(
                key,
                format!("no toggle named '{key}' for this token"),
            )),
        })
    }

    /// Every toggle of the token's projects, by name.
    pub(super) fn each(
        &self,
        reading: &Reading<'_>,
        mut f: impl FnMut(Resolution<'_>),
    ) -> Result<(), Unevaluated> {
        let features = &self.view.features;
        for name in features.toggle_names().filter(|n| self.in_scope(n)) {
            if let Some(toggle) = features.resolve_for_openfeature(name, &reading.context) {
                f(resolve(name, &toggle));
            }
        }
        Ok(())
    }

    /// The bulk pieces: every toggle of the token's projects, by name.
    pub(super) fn encoded<E: Encoding, R>(
        &self,
        reading: &Reading<'_>,
        stale: bool,
        f: impl FnOnce(&[Encoded<'_>]) -> R,
    ) -> Result<R, Unevaluated> {
        let features = &self.view.features;
        let toggles: Vec<_> = features
            .toggle_names()
            .filter(|n| self.in_scope(n))
            .filter_map(|name| {
                let toggle = features.resolve_for_openfeature(name, &reading.context)?;
                Some((name, toggle))
            })
            .collect();
        let pieces: Vec<Encoded<'_>> = toggles
            .iter()
            .map(|(name, toggle)| encode::<E>(resolve(name, toggle), stale))
            .collect();
        Ok(f(&pieces))
    }

    /// The bulk answer's own metadata: the view's revision (`version`).
    pub(super) fn metadata(&self) -> Cow<'_, Map<String, Value>> {
        let mut map = Map::new();
        map.insert("version".into(), Value::String(self.view.revision.clone()));
        Cow::Owned(map)
    }

    pub(super) fn len(&self) -> usize {
        self.view.features.len()
    }
}

/// Maps one toggle resolved for a context.
pub(super) fn resolve<'a>(
    key: &'a str,
    toggle: &'a flagpole_unleash::Resolution<'a>,
) -> Resolution<'a> {
    let (value, error) = match (toggle.enabled, &toggle.value) {
        (false, _) => (Some(Cow::Owned(Value::Bool(false))), None),
        (true, None) => (Some(Cow::Owned(Value::Bool(true))), None),
        (true, Some(Ok(typed))) => (Some(Cow::Borrowed(typed.as_json())), None),
        (true, Some(Err(e))) => (
            None,
            Some((
                "PARSE_ERROR",
                Cow::Owned(format!(
                    "the variant's payload (type {:?}) does not read: {}",
                    e.kind, e.message
                )),
            )),
        ),
    };
    let reason = if error.is_some() {
        "ERROR"
    } else if !toggle.switched_on {
        "DISABLED"
    } else if !toggle.enabled {
        // On, but none of its strategies takes this context.
        "DEFAULT"
    } else if toggle.is_static && toggle.value.is_none() {
        "STATIC"
    } else {
        // A payload is never `STATIC`: the caching flagd providers keep a `STATIC` answer by
        // flag key alone, whatever type is asked next, and this toggle's boolean (its enabled
        // bit) is not its payload. Its unconditional strategy matched: a targeting match.
        "TARGETING_MATCH"
    };
    Resolution {
        key,
        value,
        reason,
        // Unleash's name for "no variant applies", as `/api/frontend` answers it (OFREP's
        // Python provider wants a variant on every answer).
        variant: Some(Cow::Borrowed(
            toggle.variant.as_deref().unwrap_or("disabled"),
        )),
        error,
        metadata: Metadata::unleash(toggle.enabled),
        typing: Typing {
            lenient: !toggle.enabled,
            fractions: Fractions::Refused,
            declared: Declared::Any,
            enabled_as_bool: true,
        },
        enabled: toggle.enabled,
    }
}

#[cfg(test)]
mod tests;
