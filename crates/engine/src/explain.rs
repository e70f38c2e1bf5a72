//! Explanations: why an identity gets each value. Placeholder until the explain pass lands.
