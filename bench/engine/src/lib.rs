//! Flagpole benchmarks: the seeded environment-document generator ([`docgen`]), shared by the
//! engine benchmark (`benches/engine.rs`) and later load benchmarks.

pub mod docgen;
