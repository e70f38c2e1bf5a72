//! Flagpole benchmarks: the seeded environment-document generator ([`docgen`]), shared by the
//! engine benchmark (`benches/engine.rs`) and the load benchmarks, and the one counting
//! allocator every benchmark that counts allocations installs ([`counting`]).

pub mod counting;
pub mod docgen;
