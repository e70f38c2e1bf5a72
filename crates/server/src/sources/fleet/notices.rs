//! Announcements of new documents: the lease holder publishes an environment's digest on one
//! channel when it writes its document, and every replica's listener wakes that environment's
//! task, which loads the document from Redis. A notice lost while the subscription was down is
//! made up for on reconnecting (every environment checks) and by each one's periodic check.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Fleet, CHANNEL};

/// Listens until shutdown, subscribing again after any failure.
pub(crate) async fn run(fleet: Arc<Fleet>, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = listen(&fleet) => {}
            _ = stop.cancelled() => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// One subscription, until it fails.
async fn listen(fleet: &Fleet) {
    let pubsub = tokio::time::timeout(4 * super::TIMEOUT, async {
        fleet.client().await?.get_async_pubsub().await
    })
    .await;
    let Ok(Ok(mut pubsub)) = pubsub else {
        return;
    };
    if pubsub.subscribe(CHANNEL).await.is_err() {
        return;
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
}

fn wake_all(fleet: &Fleet) {
    for notice in fleet.notices.lock().values() {
        notice.notify_one();
    }
}
