//! Following an upstream `/api/v1/environment-document/` (a Flagpole or the Flagsmith API) with a
//! server key: a blocking `ureq` client, conditional requests (`If-None-Match` with the last ETag,
//! `If-Modified-Since` with the last `Last-Modified`), `Link: rel="next"` pages merged
//! all-or-nothing, and the shared state the refresher swaps new documents into.
//!
//! No Python here: the refresh thread never takes the GIL, and callers that fetch on a Python
//! thread do it with the GIL released. A fetch, parse or compile failure never replaces the
//! document being served; it is recorded as `last_error`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use serde_json::Value;

use crate::compiled::Compiled;

const MAX_PAGES: usize = 100;
const MAX_BODY_BYTES: u64 = 256 * 1024 * 1024;

pub struct Upstream {
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
    Document(Value, Validators),
}

impl Upstream {
    pub fn new(api_url: &str, key: &str, timeout: Duration) -> Upstream {
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
        let (mut document, mut next) = self.read_page(response, &self.url)?;
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
                .map_err(|e| format!("page {pages}: {e}"))?;
            merge_page(&mut document, page).map_err(|e| format!("page {pages}: {e}"))?;
            next = following;
        }
        Ok(Fetched::Document(document, validators))
    }

    fn read_page(
        &self,
        mut response: ureq::http::Response<ureq::Body>,
        url: &str,
    ) -> Result<(Value, Option<String>), String> {
        let status = response.status();
        if !status.is_success() {
            return Err(format!("GET {url}: upstream answered {status}"));
        }
        let next = match response.headers().get("link").and_then(|v| v.to_str().ok()) {
            Some(link) => next_link(link, url)?,
            None => None,
        };
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
        let document: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("GET {url}: invalid JSON from upstream: {e}"))?;
        if !document.is_object() {
            return Err(format!(
                "GET {url}: upstream sent JSON that is not an environment document"
            ));
        }
        Ok((document, next))
    }
}

/// `scheme://authority` of an absolute URL.
fn origin(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let end = rest.find('/').map_or(url.len(), |i| scheme_end + i);
    Some(&url[..end])
}

/// The `rel="next"` target of a `Link` header; relative targets resolve against the page's
/// origin, and a target on another origin is an error (the server key must not leak).
fn next_link(header: &str, base: &str) -> Result<Option<String>, String> {
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let target = pieces.next().unwrap_or("").trim();
        let is_next = pieces.any(|p| {
            p.trim().strip_prefix("rel=").is_some_and(|rel| {
                rel.trim_matches('"')
                    .split_whitespace()
                    .any(|r| r == "next")
            })
        });
        if !is_next {
            continue;
        }
        let target = target
            .strip_prefix('<')
            .and_then(|t| t.strip_suffix('>'))
            .ok_or("malformed Link header")?;
        let base_origin = origin(base).ok_or("bad api_url")?;
        let url = if target.contains("://") {
            target.to_owned()
        } else if target.starts_with('/') {
            format!("{base_origin}{target}")
        } else {
            let dir = &base[..base.rfind('/').map_or(base.len(), |i| i + 1)];
            format!("{dir}{target}")
        };
        if origin(&url) != Some(base_origin) {
            return Err(format!("next link {url} is on another origin"));
        }
        return Ok(Some(url));
    }
    Ok(None)
}

/// Appends a later page's identity overrides to the first page.
fn merge_page(document: &mut Value, page: Value) -> Result<(), String> {
    let extra = match page.get("identity_overrides") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => return Err("identity_overrides is not a list".into()),
    };
    match document.get_mut("identity_overrides") {
        Some(Value::Array(items)) => items.extend(extra),
        _ => {
            if let Some(map) = document.as_object_mut() {
                map.insert("identity_overrides".into(), Value::Array(extra));
            }
        }
    }
    Ok(())
}

#[derive(Default)]
pub struct Status {
    validators: Validators,
    /// The document being served, to recognise an unchanged one without recompiling.
    document: Option<Value>,
    pub last_error: Option<String>,
    pub last_success: Option<SystemTime>,
    pub refreshes: u64,
    pub failures: u64,
}

/// Everything the client and its refresh thread share.
pub struct Shared {
    pub current: ArcSwap<Compiled>,
    pub upstream: Option<Upstream>,
    pub status: Mutex<Status>,
    /// Serialises fetches (the refresh thread and explicit `refresh()` calls).
    fetching: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    pub fn new(current: Arc<Compiled>, upstream: Option<Upstream>) -> Shared {
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
    pub fn refresh(&self) -> Result<bool, String> {
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
                let compiled = Compiled::from_document(&doc)?;
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
    pub fn run(self: Arc<Self>, interval: Duration) {
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

    pub fn stop(&self) {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links_resolve_on_the_same_origin_only() {
        let base = "http://h:1/api/v1/environment-document/";
        assert_eq!(
            next_link(
                r#"</api/v1/environment-document/?page=2>; rel="next""#,
                base
            )
            .unwrap(),
            Some("http://h:1/api/v1/environment-document/?page=2".into())
        );
        assert!(next_link(r#"<http://evil/x>; rel="next""#, base).is_err());
        assert_eq!(next_link(r#"</x>; rel="prev""#, base).unwrap(), None);
    }
}
