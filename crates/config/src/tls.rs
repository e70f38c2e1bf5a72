//! `server.tls` in `config.json` (or the `SERVER` variable holding the section): HTTPS on the
//! main port, from a PEM certificate chain and key, and an optional plain-HTTP port beside it for
//! health probes and metrics scrapes that cannot speak TLS. Only the paths live here; the files
//! are read by the listener (`server/tls.rs`), at start and whenever they change.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{Port, Seconds};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TlsConfig {
    /// PEM: the server certificate first, then its intermediates.
    pub cert_path: PathBuf,
    /// PEM: the private key (PKCS#8, PKCS#1 or SEC1).
    pub key_path: PathBuf,
    /// A plain-HTTP port serving only the health probes, `/metrics` and the status page.
    pub plain_port: Option<u16>,
    /// How often the two files are checked for a change (a `stat` each).
    #[serde(
        rename = "reload_interval_seconds",
        serialize_with = "super::settings::seconds"
    )]
    pub reload_interval: Duration,
}

/// The section as written: both paths are required once the section is there.
#[derive(Deserialize, Serialize, JsonSchema)]
pub(super) struct TlsFile {
    /// PEM: the server certificate first, then its intermediates (reloaded when it changes).
    cert_path: PathBuf,
    /// PEM: the private key (PKCS#8, PKCS#1 or SEC1), matching the certificate.
    key_path: PathBuf,
    /// A plain-HTTP port beside HTTPS serving only the health probes, `/metrics` and the status page; `null`: none. Must differ from the other listeners' ports.
    #[serde(default)]
    plain_port: Option<Port>,
    /// Seconds between checks of the two files for a change (a `stat` each; at least 0.1).
    #[serde(default)]
    #[schemars(range(min = 0.1))]
    reload_interval_seconds: Option<Seconds>,
}

impl TlsConfig {
    /// The section with only its two paths given.
    pub(super) fn with_paths(cert_path: PathBuf, key_path: PathBuf) -> TlsConfig {
        TlsConfig {
            cert_path,
            key_path,
            plain_port: None,
            reload_interval: Duration::from_secs(2),
        }
    }
}

impl TlsFile {
    pub(super) fn settings(self) -> TlsConfig {
        let mut c = TlsConfig::with_paths(self.cert_path, self.key_path);
        c.plain_port = self.plain_port.map(|p| p.0);
        if let Some(Seconds(d)) = self.reload_interval_seconds {
            c.reload_interval = d;
        }
        c
    }

    pub(super) fn from_settings(c: &TlsConfig) -> TlsFile {
        TlsFile {
            cert_path: c.cert_path.clone(),
            key_path: c.key_path.clone(),
            plain_port: c.plain_port.map(Port),
            reload_interval_seconds: Some(Seconds(c.reload_interval)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::from_json;

    fn load(v: serde_json::Value) -> Result<super::super::Config, String> {
        from_json(v.as_object().unwrap())
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn section_read_with_defaults() {
        let c =
            load(json!({"server": {"tls": {"cert_path": "c.pem", "key_path": "k.pem"}}})).unwrap();
        let tls = c.server.tls.unwrap();
        assert_eq!(tls.cert_path.to_str(), Some("c.pem"));
        assert_eq!(tls.plain_port, None);
        assert_eq!(tls.reload_interval, std::time::Duration::from_secs(2));
        let c = load(
            json!({"server": {"tls": {"cert_path": "c.pem", "key_path": "k.pem",
            "plain_port": 8080, "reload_interval_seconds": 0.5}}}),
        )
        .unwrap();
        let tls = c.server.tls.unwrap();
        assert_eq!(tls.plain_port, Some(8080));
        assert_eq!(tls.reload_interval, std::time::Duration::from_millis(500));
        assert_eq!(
            load(json!({"server": {"tls": null}})).unwrap().server.tls,
            None
        );
    }

    #[test]
    fn both_paths_required_and_typos_named() {
        let e = load(json!({"server": {"tls": {"cert_path": "c.pem"}}})).unwrap_err();
        assert!(e.contains("server.tls") && e.contains("key_path"), "{e}");
        let e = load(
            json!({"server": {"tls": {"cert_path": "c.pem", "key_path": "k.pem",
            "plain_prot": 1}}}),
        )
        .unwrap_err();
        assert!(e.contains("did you mean 'server.tls.plain_port'"), "{e}");
    }
}
