//! What the OpenFeature front doors (OFREP and flagd) share, so they cannot disagree: an
//! evaluation context → the Flagsmith identity and traits (`context`), and an evaluated flag →
//! value, reason, variant and metadata (`mapping`).

pub(crate) mod context;
pub(crate) mod mapping;
