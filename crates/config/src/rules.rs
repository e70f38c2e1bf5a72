//! Rules between keys, which a schema of each key alone cannot state: the health check's grace
//! period is not shorter than the poll period (one late poll would make an environment stale),
//! no two of the proxy's own listeners share a port (`serve` would fail to bind the second
//! after the first already listens), and a fleet names its Redis one way: a URL, or sentinels
//! with the master's name. Both `serve` and `flagpole check` apply them, before
//! anything listens.

use std::time::Duration;

use super::{Config, ConfigError};

/// The grace period against the poll period.
pub(super) fn grace(c: &Config) -> Result<(), ConfigError> {
    match c.health.stale_grace {
        Some(grace) if grace < c.upstream.poll_frequency => Err(ConfigError(format!(
            "health_check.environment_update_grace_period_seconds: {} is shorter than \
             api_poll_frequency_seconds ({}): a single late poll would make an environment \
             stale; give at least {}, or null (never stale)",
            seconds(grace),
            seconds(c.upstream.poll_frequency),
            seconds(c.upstream.poll_frequency)
        ))),
        _ => Ok(()),
    }
}

/// The ports of the listeners `serve` opens on `server.host`, by the key that sets each (0:
/// any free port, never a conflict). `from_command_line`: `server.port` came from `--port`.
pub(super) fn listeners(c: &Config, from_command_line: bool) -> Result<(), ConfigError> {
    let main = match from_command_line {
        true => "--port",
        false => "server.port",
    };
    let ports = [
        (main, Some(c.server.port)),
        ("flagpole.grpc.port", c.server.grpc_port),
        ("flagpole.grpc.sync_port", c.server.sync_port),
        (
            "server.tls.plain_port",
            c.server.tls.as_ref().and_then(|t| t.plain_port),
        ),
    ];
    let given: Vec<(&str, u16)> = ports
        .iter()
        .filter_map(|(key, port)| Some((*key, (*port)?)))
        .filter(|(_, port)| *port != 0)
        .collect();
    for (i, (key, port)) in given.iter().enumerate() {
        if let Some((first, _)) = given[..i].iter().find(|(_, p)| p == port) {
            return Err(ConfigError(format!(
                "{key}: {port} is also {first}: two listeners cannot share a port; give {key} \
                 another port"
            )));
        }
    }
    Ok(())
}

/// `flagpole.fleet`: `redis_url`, or `sentinels` and `sentinel_master`; never both.
pub(super) fn fleet(c: &Config) -> Result<(), ConfigError> {
    let Some(f) = &c.fleet else {
        return Ok(());
    };
    let sentinel = !f.sentinels.is_empty() || f.sentinel_master.is_some();
    let problem = if !f.redis_url.is_empty() && sentinel {
        "flagpole.fleet: redis_url and sentinels/sentinel_master name Redis twice; give one \
         or the other, not both"
    } else if !f.redis_url.is_empty() {
        return Ok(());
    } else if !sentinel {
        "flagpole.fleet.redis_url: missing; give the Redis URL, or sentinels and sentinel_master \
         (Redis Sentinel)"
    } else if f.sentinels.is_empty() {
        "flagpole.fleet.sentinels: missing or empty; give the sentinels (host:port) that \
         monitor sentinel_master"
    } else if f
        .sentinel_master
        .as_deref()
        .is_none_or(|m| m.trim().is_empty())
    {
        "flagpole.fleet.sentinel_master: missing or empty; give the name the sentinels monitor \
         the master by"
    } else {
        return Ok(());
    };
    Err(ConfigError(problem.to_owned()))
}

/// Seconds as the file writes them.
fn seconds(d: Duration) -> String {
    match d.subsec_nanos() {
        0 => d.as_secs().to_string(),
        _ => d.as_secs_f64().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{from_json, start, ServeOptions};

    fn error(v: serde_json::Value) -> String {
        let loaded = from_json(v.as_object().unwrap());
        match loaded.and_then(|l| start(l, &ServeOptions::default())) {
            Ok(_) => panic!("{v} was accepted"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn a_grace_period_shorter_than_the_poll_period_is_refused() {
        let e = error(json!({"api_poll_frequency_seconds": 60,
            "health_check": {"environment_update_grace_period_seconds": 5}}));
        assert!(
            e.starts_with(
                "health_check.environment_update_grace_period_seconds: 5 is shorter than \
                 api_poll_frequency_seconds (60)"
            ),
            "{e}"
        );
        // Not given: 30 s, or the poll period when that is longer.
        let c = from_json(
            json!({"api_poll_frequency_seconds": 60})
                .as_object()
                .unwrap(),
        )
        .unwrap()
        .config;
        assert_eq!(
            c.health.stale_grace,
            Some(std::time::Duration::from_secs(60))
        );
        let never = json!({"api_poll_frequency_seconds": 60,
            "health_check": {"environment_update_grace_period_seconds": null}});
        assert!(from_json(never.as_object().unwrap()).is_ok());
    }

    #[test]
    fn two_listeners_on_one_port_are_refused() {
        let pairs = json!([{"server_side_key": "ser.a", "client_side_key": "a"}]);
        let e = error(
            json!({"environment_key_pairs": pairs, "server": {"port": 8000},
            "flagpole": {"grpc": {"port": 8000}}}),
        );
        assert_eq!(
            e,
            "flagpole.grpc.port: 8000 is also server.port: two listeners cannot share a port; \
             give flagpole.grpc.port another port"
        );
        let e = error(
            json!({"environment_key_pairs": pairs, "server": {"port": 8443,
            "tls": {"cert_path": "c", "key_path": "k", "plain_port": 8443}}}),
        );
        assert!(
            e.starts_with("server.tls.plain_port: 8443 is also server.port"),
            "{e}"
        );
        // Port 0 picks a free port each time: never a conflict.
        let ok = json!({"environment_key_pairs": pairs, "server": {"port": 0},
            "flagpole": {"grpc": {"port": 0}}});
        start(
            from_json(ok.as_object().unwrap()).unwrap(),
            &ServeOptions::default(),
        )
        .unwrap();
    }
}
