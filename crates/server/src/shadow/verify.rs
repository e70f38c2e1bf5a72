//! One comparison: the sampled identity asked of the Flagsmith API, then the revision check
//! (Flagpole still serves the snapshot that answered, and upstream's document is that one: a
//! conditional fetch answered 304, or a document with the same content revision), then the
//! flags compared. A mismatch is logged once per (feature, content revision), with the
//! identity's fingerprint, both flags and Flagpole's explanation of its own.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use reqwest::header::IF_MODIFIED_SINCE;
use reqwest::StatusCode;

use super::compare::{differences, flags_of};
use super::explain;
use super::job::Job;
use super::outcome::{Outcome, Tally};
use crate::keys::{fingerprint, KeyKind};
use crate::telemetry::otel::spans::{Cause, ClientSpan};

/// (feature, content revision) pairs logged at most; past it the memory starts over.
const MAX_LOGGED: usize = 10_000;

pub(crate) struct Verifier {
    pub client: reqwest::Client,
    pub api_url: String,
    pub timeout: Duration,
    pub tally: Arc<Tally>,
    pub logged: Mutex<HashSet<(String, String)>>,
}

impl Verifier {
    pub(crate) async fn verify(&self, job: Job) {
        let outcome = self.compare(&job).await;
        self.tally.record(outcome);
    }

    async fn compare(&self, job: &Job) -> Outcome {
        let environment = fingerprint(&job.env.client_key);
        let key = match job.kind {
            KeyKind::Client => job.env.client_key.clone(),
            KeyKind::Server => match job.env.fetch_key() {
                Some(key) => key,
                None => return Outcome::Skipped,
            },
        };
        let theirs = match self.ask(&key, job).await {
            Ok(theirs) => theirs,
            Err(reason) => {
                tracing::debug!(%environment, %reason, "shadow comparison failed");
                return Outcome::Error;
            }
        };
        let theirs = match flags_of(&theirs) {
            Ok(flags) => flags,
            Err(reason) => {
                tracing::debug!(%environment, %reason, "shadow answer is not an identities answer");
                return Outcome::Error;
            }
        };
        if !self.same_revision(job).await {
            return Outcome::Skipped;
        }
        let Ok(ours) = flags_of(&job.answer) else {
            return Outcome::Error;
        };
        let differences = differences(&ours, &theirs);
        if differences.is_empty() {
            return Outcome::Match;
        }
        let revision = &job.snapshot.content_revision;
        for d in differences {
            if !self.first_time(&d.feature, revision) {
                continue;
            }
            let show = |s: &Option<super::compare::FlagState>| {
                s.as_ref().map_or("absent".to_owned(), ToString::to_string)
            };
            let why = explain::feature(&job.snapshot.env, &job.identifier, &job.traits, &d.feature);
            tracing::warn!(
                %environment,
                feature = %d.feature,
                content_revision = %revision,
                identity = %fingerprint(&job.identifier),
                flagpole = %show(&d.ours),
                flagsmith = %show(&d.theirs),
                explain = %why,
                "shadow mismatch: Flagpole and the Flagsmith API disagree"
            );
        }
        Outcome::Mismatch
    }

    /// `POST {api_url}/identities/` with the identity and its traits (in a client span when
    /// spans are exported, as every request Flagpole sends).
    async fn ask(&self, key: &str, job: &Job) -> Result<bytes::Bytes, String> {
        let request = self
            .client
            .post(format!("{}/identities/", self.api_url))
            .header("X-Environment-Key", key)
            .header("Content-Type", "application/json")
            .body(job.request_body())
            .timeout(self.timeout)
            .build()
            .map_err(|e| e.to_string())?;
        let response = ClientSpan::send(
            &self.client,
            request,
            ("POST /identities/", Cause::Request),
            Some(key),
        )
        .await
        .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        response.bytes().await.map_err(|e| e.to_string())
    }

    /// Whether both sides answered from the same document: Flagpole still serves the snapshot
    /// that answered, and upstream's current document is that one.
    async fn same_revision(&self, job: &Job) -> bool {
        let still = |job: &Job| {
            job.env
                .snapshot()
                .is_some_and(|s| s.revision == job.snapshot.revision)
        };
        if !still(job) {
            return false;
        }
        let Some(server_key) = job.env.fetch_key() else {
            return false;
        };
        let mut request = self
            .client
            .get(format!("{}/environment-document/", self.api_url))
            .header("X-Environment-Key", &server_key)
            .timeout(self.timeout);
        if let Some(date) = &job.snapshot.last_modified {
            request = request.header(IF_MODIFIED_SINCE, date);
        }
        let sent = match request.build() {
            Ok(request) => {
                ClientSpan::send(
                    &self.client,
                    request,
                    ("GET /environment-document/", Cause::Request),
                    Some(&server_key),
                )
                .await
            }
            Err(e) => Err(e),
        };
        let same = match sent {
            Ok(r) if r.status() == StatusCode::NOT_MODIFIED => true,
            Ok(r) if r.status().is_success() => match r.bytes().await {
                Ok(body) => {
                    let ours = job.snapshot.content_revision.clone();
                    crate::background::run(move || content_revision(&body) == Some(ours))
                        .await
                        .unwrap_or(false)
                }
                Err(_) => false,
            },
            _ => false,
        };
        same && still(job)
    }

    fn first_time(&self, feature: &str, revision: &str) -> bool {
        let mut logged = self.logged.lock();
        if logged.len() >= MAX_LOGGED {
            logged.clear();
        }
        logged.insert((feature.to_owned(), revision.to_owned()))
    }
}

/// A document's content revision, as a snapshot computes it.
fn content_revision(body: &[u8]) -> Option<String> {
    let digest = match std::str::from_utf8(body)
        .ok()
        .and_then(crate::canonical_text::sha256)
    {
        Some(digest) => digest,
        None => crate::canonical::sha256(&serde_json::from_slice(body).ok()?),
    };
    Some(crate::canonical::hex(&digest, 16))
}
