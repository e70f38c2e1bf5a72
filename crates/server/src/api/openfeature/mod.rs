//! What the OpenFeature front doors (OFREP and flagd) share, so they cannot disagree: an
//! evaluation context → the Flagsmith identity and traits (`context`), and one engine-neutral
//! resolution (`mapping`: value, variant, reason, error, metadata) with each engine's mapping
//! into it side by side (`flagsmith`, `flagd`).

pub(crate) mod context;
pub(crate) mod flagd;
pub(crate) mod flagsmith;
pub(crate) mod mapping;
