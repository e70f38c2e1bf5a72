//! Announcements of new documents: the lease holder publishes an environment's digest on one
//! channel when it writes its document, and every replica's listener wakes that environment's
//! task, which loads the document from Redis. A notice lost while the subscription was down is
//! made up for on reconnecting (every environment checks) and by each one's periodic check.
//! A subscription that cannot be made is tried again after the backoff's wait (`backoff.rs`).

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Fleet, CHANNEL};

/// Listens until shutdown, subscribing again after any failure.
pub(crate) async fn run(fleet: Arc<Fleet>, stop: CancellationToken) {
    let mut backoff = super::backoff::Backoff::default();
    loop {
        tokio::select! {
            subscribed = listen(&fleet) => if subscribed {
                backoff.succeeded();
            },
            _ = stop.cancelled() => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.failed(Instant::now())) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// One subscription, until it fails; whether it was made.
async fn listen(fleet: &Fleet) -> bool {
    let pubsub = tokio::time::timeout(4 * super::TIMEOUT, async {
        fleet.client().await?.get_async_pubsub().await
    })
    .await;
    let Ok(Ok(mut pubsub)) = pubsub else {
        return false;
    };
    if pubsub.subscribe(CHANNEL).await.is_err() {
        return false;
    }
    // Whatever was announced while nobody listened is read now.
    wake_all(fleet);
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        let Ok(id) = message.get_payload::<String>() else {
            continue;
        };
        let notice = fleet.notices.lock().get(&id).cloned();
        if let Some(notice) = notice {
            notice.notify_one();
        }
    }
    true
}

fn wake_all(fleet: &Fleet) {
    for notice in fleet.notices.lock().values() {
        notice.notify_one();
    }
}
