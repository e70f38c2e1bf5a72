//! `EventStream` of a flag set: `provider_ready`, then a `configuration_change` naming every
//! flag of the set (a reconnecting provider may hold answers from before), then one naming the
//! keys added (`write`), removed (`delete`) or changed (`update`) on each new view of the
//! stream's selector, every flag when the set turns stale or fresh (the OpenFeature layer's
//! `changes::FlagSetFollower`), `keep_alive` between them and `UNAVAILABLE` at shutdown, as
//! the environments' streams do.

use std::time::Duration;

use prost_types::Struct;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::{notice, ready, send};
use crate::openfeature::changes::FlagSetFollower;

/// The stream's life; `Err` is the status it ends with, `Ok` that the caller left.
pub(in crate::flagd) async fn run<T, F>(
    tx: &mpsc::Sender<Result<T, Status>>,
    mut set: FlagSetFollower,
    stopping: &CancellationToken,
    keep_alive: Duration,
    message: &F,
) -> Result<(), Status>
where
    F: Fn(&str, Option<Struct>) -> T + Sync,
{
    let Some(mut ticks) = ready(tx, keep_alive, message).await else {
        return Ok(());
    };
    loop {
        if let Some(data) = notice(set.tell()) {
            if !send(tx, message("configuration_change", Some(data))).await {
                return Ok(());
            }
        }
        tokio::select! {
            biased;
            () = stopping.cancelled() => {
                return Err(Status::unavailable("the proxy is shutting down: reconnect"));
            }
            () = tx.closed() => return Ok(()),
            changed = set.changed() => {
                if !changed {
                    return Err(Status::unavailable("the flag sets are no longer served: reconnect"));
                }
            }
            _ = ticks.tick() => {
                if !send(tx, message("keep_alive", None)).await {
                    return Ok(());
                }
            }
        }
    }
}
