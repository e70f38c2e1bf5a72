//! How the proxy introduces itself to the Unleash server, as an SDK does (the headers Unleash
//! reads, and the `connectVia` entry of the registrations it forwards), so the server's
//! applications and connected-instances views list it.

use std::time::Duration;

/// How the proxy introduces itself to the Unleash server (as an SDK does, so the server's
/// applications and connected-instances views list it).
#[derive(Debug)]
pub(crate) struct Identity {
    pub(crate) app_name: &'static str,
    pub(crate) instance_id: String,
    pub(crate) connection_id: String,
    interval_ms: String,
    interval: Duration,
}

impl Identity {
    pub(crate) fn new(interval: Duration) -> Identity {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "flagpole".into());
        Identity {
            app_name: "flagpole",
            instance_id: format!("{host}-{}", std::process::id()),
            connection_id: format!("{:032x}", rand::random::<u128>()),
            interval_ms: interval.as_millis().to_string(),
            interval,
        }
    }

    /// The refresh interval it announces.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// The headers Unleash reads from its SDKs.
    pub(crate) fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("unleash-appname", self.app_name)
            .header("unleash-instanceid", &self.instance_id)
            .header("unleash-connection-id", &self.connection_id)
            .header("unleash-interval", &self.interval_ms)
            .header(
                "unleash-sdk",
                concat!("flagpole:", env!("CARGO_PKG_VERSION")),
            )
    }
}
