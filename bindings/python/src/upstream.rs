//! Following an upstream `/api/v1/environment-document/` (a Flagpole or the Flagsmith API) with a
//! server key: a blocking `ureq` client, conditional requests (`If-None-Match` with the last ETag,
//! `If-Modified-Since` with the last `Last-Modified`), `Link: rel="next"` pages merged
//! all-or-nothing (where the next page is, and how pages merge, is the engine's
//! `document::pages`, shared with the server), and the shared state the refresher swaps new
//! documents into.
//!
//! A document of one page (the usual case) is kept as its bytes and compiled by the engine's
//! document view, without a JSON tree (`Compiled::from_view`); pages are merged as trees. A page
//! the view does not take is parsed as a tree, with the errors a tree always gave.
//!
//! No Python here: the refresh thread never takes the GIL, and callers that fetch on a Python
//! thread do it with the GIL released. A fetch, parse or compile failure never replaces the
//! document being served; it is recorded as `last_error`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use flagpole_engine::document::pages::{merge_page, next_page, Url};
use serde_json::Value;

use crate::compiled::Compiled;

const MAX_PAGES: usize = 100;
const MAX_BODY_BYTES: u64 = 256 * 1024 * 1024;

pub(crate) struct Upstream {
    agent: ureq::Agent,
    url: String,
    key: String,
}

/// What the last good response said about itself.
#[derive(Default)]
struct Validators {
    etag: Option<String>,
    last_modified: Option<String>,
}

enum Fetched {
    NotModified,
    Document(Document, Validators),
}

/// A fetched document: the body of its only page, or its pages merged.
#[derive(PartialEq)]
enum Document {
    Bytes(Vec<u8>),
    Tree(Value),
}

impl Upstream {
    pub(crate) fn new(api_url: &str, key: &str, timeout: Duration) -> Upstream {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .user_agent("flagpole-python")
            .build()
            .into();
        Upstream {
            agent,
            url: format!("{}/environment-document/", api_url.trim_end_matches('/')),
            key: key.to_owned(),
        }
    }

    fn fetch(&self, previous: &Validators) -> Result<Fetched, String> {
        let mut request = self
            .agent
            .get(&self.url)
            .header("X-Environment-Key", &self.key)
            .header("Accept", "application/json");
        if let Some(etag) = &previous.etag {
            request = request.header("If-None-Match", etag);
        }
        if let Some(date) = &previous.last_modified {
            request = request.header("If-Modified-Since", date);
        }
        let response = request
            .call()
            .map_err(|e| format!("GET {}: {e}", self.url))?;
        if response.status().as_u16() == 304 {
            return Ok(Fetched::NotModified);
        }
        let header = |r: &ureq::http::Response<ureq::Body>, name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let validators = Validators {
            etag: header(&response, "etag"),
            last_modified: header(&response, "last-modified"),
        };
        let (body, mut next) = self.read_page(response, &self.url)?;
        if next.is_none() {
            return Ok(Fetched::Document(Document::Bytes(body), validators));
        }
        let mut document = parse_page(&body, &self.url)?;
        let mut pages = 1;
        while let Some(url) = next {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(format!("more than {MAX_PAGES} pages"));
            }
            let response = self
                .agent
                .get(&url)
                .header("X-Environment-Key", &self.key)
                .call()
                .map_err(|e| format!("GET {url}: {e}"))?;
            let (page, following) = self
                .read_page(response, &url)
                .and_then(|(body, following)| Ok((parse_page(&body, &url)?, following)))
                .map_err(|e| format!("page {pages}: {e}"))?;
            merge_page(&mut document, page).map_err(|e| format!("page {pages}: {e}"))?;
            next = following;
        }
        Ok(Fetched::Document(Document::Tree(document), validators))
    }

    /// Compiles a fetched document; a single page the view does not take is parsed as a tree.
    fn compile(&self, document: &Document) -> Result<Compiled, String> {
        match document {
            Document::Tree(doc) => Compiled::from_document(doc),
            Document::Bytes(body) => Compiled::from_view(body)
                .unwrap_or_else(|| Compiled::from_document(&parse_page(body, &self.url)?)),
        }
    }

    fn read_page(
        &self,
        mut response: ureq::http::Response<ureq::Body>,
        url: &str,
    ) -> Result<(Vec<u8>, Option<String>), String> {
        let status = response.status();
        if !status.is_success() {
            return Err(format!("GET {url}: upstream answered {status}"));
        }
        let next = match response.headers().get("link").and_then(|v| v.to_str().ok()) {
            Some(link) => {
                let page = Url::parse(url).map_err(|e| format!("bad api_url: {e}"))?;
                next_page(link, &page)?.map(String::from)
            }
            None => None,
        };
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
        Ok((body, next))
    }
}

/// A page's body as a JSON tree (an object), or why it is not one.
fn parse_page(body: &[u8], url: &str) -> Result<Value, String> {
    let document: Value = serde_json::from_slice(body)
        .map_err(|e| format!("GET {url}: invalid JSON from upstream: {e}"))?;
    if !document.is_object() {
        return Err(format!(
            "GET {url}: upstream sent JSON that is not an environment document"
        ));
    }
    Ok(document)
}

#[derive(Default)]
pub(crate) struct Status {
    validators: Validators,
    /// The document being served, to recognise an unchanged one without recompiling (the same
    /// bytes, or the same merged pages).
    document: Option<Document>,
    pub last_error: Option<String>,
    pub last_success: Option<SystemTime>,
    pub refreshes: u64,
    pub failures: u64,
}

/// Everything the client and its refresh thread share.
pub(crate) struct Shared {
    pub current: ArcSwap<Compiled>,
    pub upstream: Option<Upstream>,
    pub status: Mutex<Status>,
    /// Serialises fetches (the refresh thread and explicit `refresh()` calls).
    fetching: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    pub(crate) fn new(current: Arc<Compiled>, upstream: Option<Upstream>) -> Shared {
        Shared {
            current: ArcSwap::new(current),
            upstream,
            status: Mutex::new(Status::default()),
            fetching: Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    /// Fetches once; installs a new document if there is one. `Ok(true)`: a new document is now
    /// served; `Ok(false)`: unchanged (304 or the same document). On `Err` the last good document
    /// stays.
    pub(crate) fn refresh(&self) -> Result<bool, String> {
        let Some(upstream) = &self.upstream else {
            return Ok(false);
        };
        let _one_at_a_time = self.fetching.lock().unwrap_or_else(|e| e.into_inner());
        let previous = {
            let status = self.status.lock().unwrap_or_else(|e| e.into_inner());
            Validators {
                etag: status.validators.etag.clone(),
                last_modified: status.validators.last_modified.clone(),
            }
        };
        let outcome = upstream.fetch(&previous).and_then(|fetched| match fetched {
            Fetched::NotModified => Ok(None),
            Fetched::Document(doc, validators) => {
                let same = self
                    .status
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .document
                    .as_ref()
                    == Some(&doc);
                if same {
                    return Ok(Some((None, doc, validators)));
                }
                let compiled = upstream.compile(&doc)?;
                Ok(Some((Some(compiled), doc, validators)))
            }
        });
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.refreshes += 1;
        match outcome {
            Ok(None) => {
                status.last_error = None;
                status.last_success = Some(SystemTime::now());
                Ok(false)
            }
            Ok(Some((compiled, doc, validators))) => {
                status.last_error = None;
                status.last_success = Some(SystemTime::now());
                status.validators = validators;
                status.document = Some(doc);
                let changed = compiled.is_some();
                if let Some(compiled) = compiled {
                    self.current.store(Arc::new(compiled));
                }
                Ok(changed)
            }
            Err(e) => {
                status.failures += 1;
                status.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The refresh loop of the background thread: every `interval` until `stop()`.
    pub(crate) fn run(self: Arc<Self>, interval: Duration) {
        loop {
            {
                let stopped = self.stop.lock().unwrap_or_else(|e| e.into_inner());
                let (stopped, _) = self
                    .wake
                    .wait_timeout_while(stopped, interval, |stopped| !*stopped)
                    .unwrap_or_else(|e| e.into_inner());
                if *stopped {
                    return;
                }
            }
            let _ = self.refresh();
        }
    }

    pub(crate) fn stop(&self) {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }
}
