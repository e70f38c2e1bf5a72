//! Polling the upstream API for environment documents: concurrent but
//! bounded, spread over the poll period (`poll_schedule.rs`), conditional (`If-Modified-Since` as an IMF-fixdate, `If-None-Match`), with
//! `Link: rel="next"` pages merged all-or-nothing (the engine's `document::pages` decides where the
//! next page is and merges it). A document that changes while its pages are fetched gives pages
//! of two versions: the engine refuses to merge them, and the fetch starts again from the first
//! page (a few times at most, within the poll timeout), so a document upstream never had is never
//! published. Any failure keeps the last good snapshot.
//! Every fetch is counted by result (`200`, `304` or the kind of failure, [`FetchError`]) and
//! timed, for the metrics.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use flagpole_engine::document::pages::{merge_page, next_page, MergeError};
use reqwest::header::{HeaderMap, HeaderValue, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LINK};
use reqwest::StatusCode;

use crate::telemetry::otel::spans::{Cause, ClientSpan};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::received::{Incoming, Rejected};
use crate::sources::warm_start::WarmStart;
use crate::store::{EnvSlot, Published, Source};
use flagpole_config::Config;

/// At most this many pages per document (a loop guard, far above real page counts).
const MAX_PAGES: usize = 1000;

/// At most this many starts of one fetch whose pages turn out to be of two versions of the
/// document (it changed between the requests); the poll timeout bounds them all the same.
const MAX_FETCH_STARTS: usize = 3;

/// The HTTP client for upstream requests (timeouts are applied per poll, body included).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(concat!("flagpole/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .expect("an HTTP client with default TLS settings builds")
}

/// What every upstream poller shares; `spawn` starts one for an environment (at startup, and
/// when key discovery adds one).
#[derive(Clone)]
pub(crate) struct Pollers {
    pub client: reqwest::Client,
    pub config: Arc<Config>,
    /// Bounds concurrent fetches across environments.
    pub limit: Arc<Semaphore>,
    pub warm: Option<Arc<WarmStart>>,
    /// Where pollers run (the proxy's shutdown waits for them).
    pub tasks: crate::tasks::Tasks,
    /// What keeps an environment up to date instead of the plain poll loop (the fleet's, which
    /// polls only while it holds the environment's lease); `None`: the poll loop.
    pub runner: Option<Arc<dyn EnvironmentRunner>>,
}

/// Keeps one environment up to date instead of the plain poll loop, polling with [`poll_one`]
/// when it should: the fleet implements it (`fleet/environment.rs`), so that this file knows
/// nothing of Redis.
pub(crate) trait EnvironmentRunner: Send + Sync {
    /// Runs `slot` until it stops (removed by discovery, or the proxy shutting down).
    fn run(
        self: Arc<Self>,
        slot: Arc<EnvSlot>,
        pollers: Pollers,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

impl Pollers {
    pub(crate) fn spawn(&self, slot: Arc<EnvSlot>) {
        if !matches!(slot.source, Source::Upstream { .. }) {
            return;
        }
        match &self.runner {
            Some(runner) => self.tasks.spawn(runner.clone().run(slot, self.clone())),
            None => self.tasks.spawn(poll(slot, self.clone())),
        };
    }
}

/// Polls one environment until it stops (removed by discovery, or the proxy shutting down).
async fn poll(slot: Arc<EnvSlot>, pollers: Pollers) {
    let mut schedule =
        crate::sources::poll_schedule::PollSchedule::new(pollers.period(), Instant::now());
    loop {
        poll_one(&slot, &pollers).await;
        let next = schedule.next_after(Instant::now());
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            // A client saw a newer revision on another replica (OFREP freshness hint).
            _ = slot.poll_now.notified() => {}
            _ = slot.stop.cancelled() => return,
        }
    }
}

impl Pollers {
    /// The poll period (at least 0.1 s).
    pub(crate) fn period(&self) -> Duration {
        self.config
            .upstream
            .poll_frequency
            .max(Duration::from_millis(100))
    }
}

/// One poll within the bound on concurrent fetches, with the environment's current server key.
pub(crate) async fn poll_one(slot: &Arc<EnvSlot>, pollers: &Pollers) {
    let _permit = pollers
        .limit
        .acquire()
        .await
        .expect("semaphore is never closed");
    // Read each time: discovery may have rotated the key.
    match slot.fetch_key() {
        Some(server_key) => {
            poll_once(
                slot,
                &pollers.client,
                &pollers.config,
                &server_key,
                pollers.warm.as_deref(),
            )
            .await
        }
        None => slot.mark_failure("no active server key for this environment".into()),
    }
}

/// One poll: fetch (bounded by the poll timeout, body included), publish, record the outcome.
pub(crate) async fn poll_once(
    slot: &Arc<EnvSlot>,
    client: &reqwest::Client,
    config: &Config,
    server_key: &str,
    warm: Option<&WarmStart>,
) {
    let started = std::time::Instant::now();
    let fetched = tokio::time::timeout(
        config.upstream.poll_timeout,
        fetch(slot, client, config, server_key),
    )
    .await;
    let took = started.elapsed();
    let outcome = match fetched {
        Err(_) => Err(FetchError::new(
            "timeout",
            format!("timed out after {:?}", config.upstream.poll_timeout),
        )),
        Ok(result) => result,
    };
    let result = match &outcome {
        Ok(Fetched::NotModified) => "304",
        Ok(Fetched::Document { .. }) => "200",
        Err(e) => e.kind,
    };
    match outcome {
        Ok(Fetched::NotModified) => {
            crate::telemetry::upstream_fetch(result, took);
            slot.mark_success(SystemTime::now())
        }
        Ok(Fetched::Document { document, etag }) => match slot.publish(document).await {
            Ok(published) => {
                crate::telemetry::upstream_fetch(result, took);
                *slot.upstream_etag.lock() = etag;
                let now = SystemTime::now();
                slot.mark_success(now);
                if let Published::NewRevision { revision, took } = published {
                    let build_ms = took.as_millis() as u64;
                    tracing::info!(environment = %crate::keys::fingerprint(&slot.client_key), revision, build_ms, "environment document updated");
                    if let (Some(warm), Some(snapshot)) = (warm, slot.snapshot()) {
                        warm.save(slot, &snapshot, now).await;
                    }
                }
            }
            Err(rejected) => {
                let error = rejection(&rejected, &slot.client_key);
                crate::telemetry::upstream_fetch(error.kind, took);
                slot.mark_failure(error.message)
            }
        },
        Err(error) => {
            crate::telemetry::upstream_fetch(result, took);
            slot.mark_failure(error.message)
        }
    }
}

/// Why a fetch failed: `kind` is the metrics' `result` label (`timeout`, `connect`, `network`,
/// `status_4xx`, `status_5xx`, `status_other`, `invalid_json`, `rejected_document`,
/// `pagination`, `config`, `internal`), `message` what the logs and the status page say.
#[derive(Debug)]
pub(crate) struct FetchError {
    pub kind: &'static str,
    pub message: String,
}

impl FetchError {
    fn new(kind: &'static str, message: impl Into<String>) -> FetchError {
        FetchError {
            kind,
            message: message.into(),
        }
    }

    /// A transport error: its kind from what failed, its text with every cause.
    fn transport(e: reqwest::Error) -> FetchError {
        FetchError::new(
            crate::telemetry::otel::spans::transport_kind(&e),
            describe(e),
        )
    }

    /// The same failure, its message prefixed (`page 2: …`).
    fn context(self, prefix: impl std::fmt::Display) -> FetchError {
        FetchError::new(self.kind, format!("{prefix}: {}", self.message))
    }
}

/// How a document upstream sent is refused: the words and `result` label a failure to parse
/// it has when pages are parsed here (`invalid_json`; JSON that is not an object), and
/// `rejected_document` with publishing's reason otherwise.
fn rejection(rejected: &Rejected, client_key: &str) -> FetchError {
    match rejected {
        Rejected::InvalidJson(e) => invalid_json(e),
        Rejected::NotAnObject => not_a_document(),
        other => FetchError::new("rejected_document", other.message(client_key)),
    }
}

fn invalid_json(e: impl std::fmt::Display) -> FetchError {
    FetchError::new("invalid_json", format!("invalid JSON from upstream: {e}"))
}

fn not_a_document() -> FetchError {
    FetchError::new(
        "rejected_document",
        "upstream sent JSON that is not an environment document",
    )
}

enum Fetched {
    NotModified,
    Document {
        /// A single page's body as received, or the pages merged.
        document: Incoming,
        etag: Option<String>,
    },
}

/// Fetches the document; pages of two versions start the fetch again from the first page.
async fn fetch(
    slot: &EnvSlot,
    client: &reqwest::Client,
    config: &Config,
    server_key: &str,
) -> Result<Fetched, FetchError> {
    let mut starts = 1;
    loop {
        match fetch_once(slot, client, config, server_key).await {
            Err(Attempt::Torn(_)) if starts < MAX_FETCH_STARTS => starts += 1,
            Err(Attempt::Torn(error) | Attempt::Failed(error)) => return Err(error),
            Ok(fetched) => return Ok(fetched),
        }
    }
}

/// Why one pass over the pages did not give a document.
enum Attempt {
    /// A later page is of another version of the document than the first (worth another pass).
    Torn(FetchError),
    Failed(FetchError),
}

impl From<FetchError> for Attempt {
    fn from(error: FetchError) -> Attempt {
        Attempt::Failed(error)
    }
}

async fn fetch_once(
    slot: &EnvSlot,
    client: &reqwest::Client,
    config: &Config,
    server_key: &str,
) -> Result<Fetched, Attempt> {
    let url = format!("{}/environment-document/", config.upstream.api_url);
    let base = reqwest::Url::parse(&url)
        .map_err(|e| FetchError::new("config", format!("bad api_url: {e}")))?;
    let mut headers = HeaderMap::new();
    headers.insert(
        "X-Environment-Key",
        HeaderValue::from_str(server_key)
            .map_err(|_| FetchError::new("config", "server key is not a valid header value"))?,
    );
    if let Some(proxy_key) = &config.environments.proxy_key {
        if let Ok(v) = HeaderValue::from_str(proxy_key) {
            headers.insert("X-Proxy-Key", v);
        }
    }
    let mut first_page_headers = headers.clone();
    if let Some(snapshot) = slot.snapshot() {
        if let Some(date) = snapshot
            .last_modified
            .as_deref()
            .and_then(|d| HeaderValue::from_str(d).ok())
        {
            first_page_headers.insert(IF_MODIFIED_SINCE, date);
        }
        if let Some(etag) = slot
            .upstream_etag
            .lock()
            .as_deref()
            .and_then(|e| HeaderValue::from_str(e).ok())
        {
            first_page_headers.insert(IF_NONE_MATCH, etag);
        }
    }

    let response = get(client, &base, first_page_headers, server_key)
        .await
        .map_err(FetchError::transport)?;
    if response.status() == StatusCode::NOT_MODIFIED {
        return Ok(Fetched::NotModified);
    }
    let etag = response
        .headers()
        .get(ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (first_body, mut next) = read_page(response, &base).await?;
    if next.is_none() {
        // One page: the document as received, parsed once, when the snapshot is built.
        return Ok(Fetched::Document {
            document: Incoming::Bytes(first_body),
            etag,
        });
    }
    let mut document = parse_page(first_body).await?;
    let mut pages = 1;
    while let Some(url) = next {
        pages += 1;
        if pages > MAX_PAGES {
            return Err(
                FetchError::new("pagination", format!("more than {MAX_PAGES} pages")).into(),
            );
        }
        let response = get(client, &url, headers.clone(), server_key)
            .await
            .map_err(|e| FetchError::transport(e).context(format_args!("page {pages}")))?;
        let (body, following) = read_page(response, &url)
            .await
            .map_err(|e| e.context(format_args!("page {pages}")))?;
        let page = parse_page(body)
            .await
            .map_err(|e| e.context(format_args!("page {pages}")))?;
        document = merge_in_background(document, page)
            .await
            .map_err(|e| match e {
                Some(e @ MergeError::OtherVersion(_)) => {
                    Attempt::Torn(FetchError::new("pagination", format!("page {pages}: {e}")))
                }
                Some(e) => FetchError::new("pagination", format!("page {pages}: {e}")).into(),
                None => FetchError::new("internal", format!("page {pages}: merging failed")).into(),
            })?;
        next = following;
    }
    Ok(Fetched::Document {
        document: Incoming::Tree(document),
        etag,
    })
}

/// One `GET` of a page, in its client span when spans are exported (its `traceparent` sent on).
async fn get(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: HeaderMap,
    server_key: &str,
) -> Result<reqwest::Response, reqwest::Error> {
    let request = client.get(url.clone()).headers(headers).build()?;
    ClientSpan::send(
        client,
        request,
        ("GET /environment-document/", Cause::Background),
        Some(server_key),
    )
    .await
}

fn describe(e: reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Reads one page: a 200, its body, and the `next` link if any (same origin only).
async fn read_page(
    response: reqwest::Response,
    base: &reqwest::Url,
) -> Result<(Bytes, Option<reqwest::Url>), FetchError> {
    let status = response.status();
    if !status.is_success() {
        let kind = match status.as_u16() {
            400..=499 => "status_4xx",
            500..=599 => "status_5xx",
            _ => "status_other",
        };
        return Err(FetchError::new(kind, format!("upstream answered {status}")));
    }
    let next = match response.headers().get(LINK).and_then(|v| v.to_str().ok()) {
        Some(link) => next_page(link, base).map_err(|e| FetchError::new("pagination", e))?,
        None => None,
    };
    let body = response.bytes().await.map_err(FetchError::transport)?;
    Ok((body, next))
}

/// Merges a later page into the document on the blocking pool: comparing the page's repeated
/// members with the first page's walks most of both. `None`: the merge itself failed (a panic).
async fn merge_in_background(
    mut document: Value,
    page: Value,
) -> Result<Value, Option<MergeError>> {
    crate::background::run(move || merge_page(&mut document, page).map(|()| document))
        .await
        .map_err(|_| None)?
        .map_err(Some)
}

/// Parses a page of a paginated document, which must be a JSON object, to be merged.
async fn parse_page(body: Bytes) -> Result<Value, FetchError> {
    // Parsing megabytes is background work, not the async workers' (they serve requests).
    let document = crate::background::run(move || serde_json::from_slice::<Value>(&body))
        .await
        .map_err(|e| FetchError::new("internal", format!("parsing failed: {e}")))?
        .map_err(invalid_json)?;
    if !document.is_object() {
        return Err(not_a_document());
    }
    Ok(document)
}
