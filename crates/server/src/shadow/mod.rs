//! Shadow verification: proof, for a team migrating, that Flagpole answers as the Flagsmith API
//! does. A sampled fraction (`flagpole.shadow.sample_rate`) of identity requests is also asked
//! of the Flagsmith API (`flagpole.shadow.api_url`) after the answer is ready, never on the
//! request path: `sampler` decides and queues (bounded queue, rate limit, bounded concurrency);
//! `verify` asks upstream, makes sure both sides answered from the same document revision
//! (else the comparison is skipped and counted) and compares per feature (`compare`: enabled and
//! value, type-strict); a mismatch is logged once per (feature, revision) with the identity's
//! fingerprint and why Flagpole decided as it did (`explain`).

pub(crate) mod compare;
pub(crate) mod explain;
pub(crate) mod job;
pub(crate) mod outcome;
pub(crate) mod sampler;
pub(crate) mod verify;

pub(crate) use sampler::Shadow;
