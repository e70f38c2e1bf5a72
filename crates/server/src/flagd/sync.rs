//! flagd's sync service, `flagd.sync.v1.FlagSyncService`: what the flagd providers' in-process
//! mode (and a flagd reading another flagd) takes flag definitions from, to evaluate them
//! locally. It serves the flag sets (`flagsets`), never Flagsmith environments.
//!
//! As flagd answers: the selector comes from the `flagd-selector` header, else the request's
//! (deprecated) `selector` field; `SyncFlags` sends the whole configuration at once and again on
//! each change of the selected set (a staleness switch changes nothing there), `FetchAllFlags`
//! sends it once, and `GetMetadata` answers the sync context (flagd's `--context-value`s; none
//! here, so an empty `Struct`). A selector naming no set gets an empty configuration, as flagd's
//! store answers a selector that matches nothing. A set given bearer tokens wants one in
//! `authorization`. The configuration is the view's, written once per change.

use std::sync::Arc;

use bytes::Bytes;
use prost_types::Struct;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use super::sync_v1::flag_sync_service_server::{FlagSyncService, FlagSyncServiceServer};
use super::sync_v1::{
    FetchAllFlagsRequest, FetchAllFlagsResponse, GetMetadataRequest, GetMetadataResponse,
    SyncFlagsRequest, SyncFlagsResponse,
};
use super::{keys, Events, Flagd};
use crate::flagsets::{FlagSets, FlagView, Refused};

/// What a selector that names no flag set receives: no flags.
const EMPTY: &str = r#"{"flags":{}}"#;

impl Flagd {
    /// The sync service, for a tonic router.
    pub(crate) fn sync(&self) -> FlagSyncServiceServer<Flagd> {
        FlagSyncServiceServer::new(self.clone())
    }
}

/// The selector a call names: the header wins over the body's field, as in flagd.
fn selector(metadata: &MetadataMap, field: &str) -> Option<String> {
    let header = metadata
        .get("flagd-selector")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| !s.is_empty());
    header
        .or(Some(field.trim()).filter(|s| !s.is_empty()))
        .map(str::to_owned)
}

/// Whether the call may read its selector's set; a selector naming nothing is let through
/// (it reads an empty configuration).
fn admit(sets: &FlagSets, metadata: &MetadataMap, selector: Option<&str>) -> Result<(), Status> {
    match sets.admit(selector, keys::bearer(metadata).as_deref()) {
        Ok(()) | Err(Refused::UnknownSelector) => Ok(()),
        Err(Refused::MissingToken) => Err(Status::unauthenticated(
            "this flag set wants a bearer token: send authorization: Bearer <token>",
        )),
        Err(Refused::WrongToken) => Err(Status::permission_denied(
            "this bearer token may not read this flag set",
        )),
    }
}

/// The configuration text of a view (or of no set at all).
fn configuration(view: Option<&FlagView>) -> String {
    match view {
        Some(view) => String::from_utf8_lossy(&view.configuration).into_owned(),
        None => EMPTY.to_owned(),
    }
}

#[tonic::async_trait]
impl FlagSyncService for Flagd {
    type SyncFlagsStream = Events<SyncFlagsResponse>;

    async fn sync_flags(
        &self,
        request: Request<SyncFlagsRequest>,
    ) -> Result<Response<Self::SyncFlagsStream>, Status> {
        let sets = self.state.flag_sets.clone();
        #[expect(
            deprecated,
            reason = "flagd still reads the field when no header names a set"
        )]
        let selector = selector(request.metadata(), &request.get_ref().selector);
        admit(&sets, request.metadata(), selector.as_deref())?;
        // Small: a slow reader gets the newest configuration late, never a queue of old ones.
        let (tx, rx) = mpsc::channel(2);
        let stopping = self.stopping.clone();
        self.tasks.spawn(async move {
            let end = follow(&sets, selector.as_deref(), &tx, &stopping).await;
            if let Err(status) = end {
                let _ = tx.send(Err(status)).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn fetch_all_flags(
        &self,
        request: Request<FetchAllFlagsRequest>,
    ) -> Result<Response<FetchAllFlagsResponse>, Status> {
        let sets = &self.state.flag_sets;
        #[expect(
            deprecated,
            reason = "flagd still reads the field when no header names a set"
        )]
        let selector = selector(request.metadata(), &request.get_ref().selector);
        admit(sets, request.metadata(), selector.as_deref())?;
        let view = sets.view(selector.as_deref());
        Ok(Response::new(FetchAllFlagsResponse {
            flag_configuration: configuration(view.as_deref()),
        }))
    }

    async fn get_metadata(
        &self,
        _request: Request<GetMetadataRequest>,
    ) -> Result<Response<GetMetadataResponse>, Status> {
        Ok(Response::new(GetMetadataResponse {
            metadata: Some(Struct::default()),
        }))
    }
}

/// One `SyncFlags` stream: the configuration now (once anything is loaded), then each new one
/// for the selector. `Err` is the status the stream ends with, `Ok` that the caller left.
async fn follow(
    sets: &Arc<FlagSets>,
    selector: Option<&str>,
    tx: &mpsc::Sender<Result<SyncFlagsResponse, Status>>,
    stopping: &CancellationToken,
) -> Result<(), Status> {
    let mut changes = sets.subscribe();
    // The configuration last sent (none yet).
    let mut sent: Option<Bytes> = None;
    loop {
        changes.borrow_and_update();
        let view = sets.view(selector);
        // Until the first load a set may be merely not there yet: nothing is sent.
        let ready = view.is_some() || sets.all_loaded();
        let now = view.as_ref().map_or_else(
            || Bytes::from_static(EMPTY.as_bytes()),
            |v| v.configuration.clone(),
        );
        if ready && sent.as_ref() != Some(&now) {
            let message = SyncFlagsResponse {
                flag_configuration: configuration(view.as_deref()),
                sync_context: Some(Struct::default()),
            };
            if tx.send(Ok(message)).await.is_err() {
                return Ok(());
            }
            sent = Some(now);
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return Err(Status::unavailable("the flag sets are no longer served: reconnect"));
                }
            }
            () = stopping.cancelled() => {
                return Err(Status::unavailable("the proxy is shutting down: reconnect"));
            }
            () = tx.closed() => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(pairs: &[(&'static str, &'static str)]) -> MetadataMap {
        let mut map = MetadataMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn the_header_selector_wins_over_the_field() {
        let header = metadata(&[("flagd-selector", "source=b")]);
        assert_eq!(selector(&header, "source=a").as_deref(), Some("source=b"));
        assert_eq!(
            selector(&metadata(&[]), " flagSetId=x ").as_deref(),
            Some("flagSetId=x")
        );
        assert_eq!(selector(&metadata(&[("flagd-selector", " ")]), ""), None);
    }

    #[test]
    fn no_set_is_an_empty_configuration() {
        let parsed: serde_json::Value = serde_json::from_str(&configuration(None)).unwrap();
        assert_eq!(parsed, serde_json::json!({"flags": {}}));
    }
}
