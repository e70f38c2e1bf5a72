//! A URL source in a fleet (`flagpole.fleet`): one replica polls each URL for the whole fleet,
//! so that a fleet of N asks the flag server as often as one proxy does. The loop is the one
//! every raw text polled for the fleet runs (`sources/fleet/raw.rs`): the lease per URL kept up
//! as an environment's is (`sources/fleet/tenure.rs`), the holder writing each new accepted flag
//! file, raw, with its ETag to Redis under a digest of the URL (never the URL, which may carry a
//! token) and announcing it, the others loading it on the announcement or at their own poll
//! times, compiled as a polled answer is (a text that does not compile never replaces a good
//! set: refused, logged and counted the same way), and each replica polling the URL itself
//! (`poll.rs`) while Redis does not answer or before anyone holds the lease. Here: what a URL
//! source is to that loop. Staleness is judged by when the holder last heard from the URL.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use super::poll::{Origin, UrlSource};
use crate::sources::fleet::{Fleet, Heard, RawSource, RawSubject};
use crate::telemetry::fleet::Refusal;

/// Polls (or follows the fleet's holder of) one URL source until `stop`.
pub(super) async fn run(url: UrlSource, fleet: Arc<Fleet>, stop: CancellationToken) {
    let uri = url.source().uri.clone();
    fleet
        .run_raw(url, RawSubject::FlagSource { uri }, stop)
        .await;
}

impl RawSource for UrlSource {
    fn text(&self) -> Option<Arc<[u8]>> {
        self.text.clone().map(Arc::from)
    }

    fn etag(&self) -> Option<String> {
        self.etag.clone()
    }

    fn last_good(&self) -> Option<SystemTime> {
        self.last_good
    }

    fn confirm(&mut self, at: SystemTime) {
        self.last_good = Some(at);
    }

    async fn poll(&mut self) -> Heard {
        UrlSource::poll(self).await
    }

    async fn take_stored(&mut self, text: Vec<u8>, etag: Option<String>) -> Result<bool, Refusal> {
        let Ok(text) = String::from_utf8(text) else {
            tracing::warn!(url = %self.source().uri, "refused the flag file the fleet's store holds (not UTF-8); the last good flags are kept");
            return Err(Refusal::Undecodable);
        };
        // Refused as a polled answer is (counted and logged by `take`).
        self.take(text, etag, Origin::Fleet)
            .await
            .map_err(|()| Refusal::Rejected)
    }

    fn interval(&self) -> Duration {
        UrlSource::interval(self)
    }

    fn judge(&self) {
        UrlSource::judge(self);
    }
}
