//! The fleet's Redis connection, each command a client span when spans are exported and
//! `flagpole.telemetry.background_spans` is on (the fleet's work is all background), with the
//! OpenTelemetry database conventions: named by the command (`EVALSHA`), `db.system.name`
//! `redis`, `db.operation.name`, `db.namespace` (the database number), `server.address` and
//! `server.port`. No argument is recorded: they are key names (digests of client keys),
//! documents and replica names, none of which belongs in a trace.
//!
//! What every command shares is made once per connection; without those spans a command
//! costs one branch more than on the bare connection.

use std::sync::Arc;

use opentelemetry::KeyValue;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisFuture, Value};

use crate::telemetry::otel::spans::ClientSpan;

/// A connection to the fleet's Redis (multiplexed and reconnecting: cheap to clone).
#[derive(Clone)]
pub(crate) struct Connection {
    inner: ConnectionManager,
    peer: Arc<[KeyValue]>,
}

impl Connection {
    pub(super) fn new(inner: ConnectionManager, info: &ConnectionInfo) -> Connection {
        Connection {
            inner,
            peer: peer(info).into(),
        }
    }
}

/// The attributes of every command on a connection to `info`.
fn peer(info: &ConnectionInfo) -> Vec<KeyValue> {
    let mut out = vec![
        KeyValue::new("db.system.name", "redis"),
        KeyValue::new("db.namespace", info.redis_settings().db().to_string()),
    ];
    match info.addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            out.push(KeyValue::new("server.address", host.clone()));
            out.push(KeyValue::new("server.port", i64::from(*port)));
        }
        ConnectionAddr::Unix(path) => {
            out.push(KeyValue::new("network.transport", "unix"));
            out.push(KeyValue::new(
                "server.address",
                path.to_string_lossy().into_owned(),
            ));
        }
        _ => {}
    }
    out
}

/// A command's name (its first argument), upper case: `EVALSHA`, `HMGET`.
fn command_name(cmd: &Cmd) -> String {
    let name = match cmd.args_iter().next() {
        Some(redis::Arg::Simple(name)) => name,
        _ => b"",
    };
    match std::str::from_utf8(name) {
        Ok(name) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            name.to_ascii_uppercase()
        }
        _ => "UNKNOWN".to_owned(),
    }
}

/// A pipeline's operation as the conventions name a batch: `BATCH HSET` when every command is
/// the same one, `BATCH` otherwise.
fn batch_name(pipeline: &Pipeline) -> String {
    let mut names = pipeline.cmd_iter().map(command_name);
    let Some(first) = names.next() else {
        return "BATCH".to_owned();
    };
    if names.all(|n| n == first) {
        format!("BATCH {first}")
    } else {
        "BATCH".to_owned()
    }
}

/// A failed command's `error.type`: the error code Redis replied with (`NOSCRIPT`,
/// `READONLY`), else what failed on the way.
fn error_type(e: &redis::RedisError) -> String {
    if let Some(code) = e.code() {
        return code.to_owned();
    }
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connection_refusal() || e.is_connection_dropped() || e.is_io_error() {
        "connection"
    } else {
        "client"
    };
    kind.to_owned()
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        if !crate::telemetry::otel::background_spans() {
            return self.inner.req_packed_command(cmd);
        }
        Box::pin(async move {
            let span = ClientSpan::database(|| command_name(cmd), &self.peer);
            let result = self.inner.req_packed_command(cmd).await;
            if let Some(span) = span {
                span.finish_database(result.as_ref().err().map(error_type));
            }
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        if !crate::telemetry::otel::background_spans() {
            return self.inner.req_packed_commands(pipeline, offset, count);
        }
        Box::pin(async move {
            let span = ClientSpan::database(|| batch_name(pipeline), &self.peer);
            let result = self
                .inner
                .req_packed_commands(pipeline, offset, count)
                .await;
            if let Some(span) = span {
                span.finish_database(result.as_ref().err().map(error_type));
            }
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_named_and_their_arguments_left_out() {
        let mut cmd = redis::cmd("hmget");
        cmd.arg("flagpole:env:secret-digest").arg("body");
        assert_eq!(command_name(&cmd), "HMGET");
        let mut pipeline = redis::pipe();
        pipeline.cmd("HSET").arg("a").arg("b");
        pipeline.cmd("HSET").arg("c").arg("d");
        assert_eq!(batch_name(&pipeline), "BATCH HSET");
        pipeline.cmd("EXPIRE").arg("a").arg(5);
        assert_eq!(batch_name(&pipeline), "BATCH");
    }

    #[test]
    fn the_peer_is_the_address_and_database() {
        use redis::IntoConnectionInfo;
        let info = "redis://:pw@cache.internal:6380/3"
            .into_connection_info()
            .unwrap();
        let peer = peer(&info);
        let get = |k: &str| {
            peer.iter()
                .find(|kv| kv.key.as_str() == k)
                .map(|kv| kv.value.to_string())
        };
        assert_eq!(get("db.system.name").as_deref(), Some("redis"));
        assert_eq!(get("server.address").as_deref(), Some("cache.internal"));
        assert_eq!(get("server.port").as_deref(), Some("6380"));
        assert_eq!(get("db.namespace").as_deref(), Some("3"));
        assert!(!format!("{peer:?}").contains("pw"), "{peer:?}");
    }
}
