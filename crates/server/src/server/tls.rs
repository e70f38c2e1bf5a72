//! HTTPS termination (`server.tls`): rustls on the crypto provider the upstream client already
//! links, ALPN `h2` then `http/1.1`, and the certificate reloaded when its files change.
//!
//! The `ServerConfig` is built once; its certificate resolver hands out whichever
//! certificate-and-key pair is current, an atomic pointer a reload swaps whole. So a rotation
//! needs no restart and no new config, handshakes in progress finish with the pair they began
//! with, and connections already open are untouched. The files are watched by a cheap periodic
//! `stat` (modification time, size, inode: a Kubernetes secret's symlink swap changes them all)
//! rather than by file-system events, which miss renames of a watched file's parent symlink. A
//! pair that fails to load at start is an error naming the file; at a reload it is logged and the
//! pair in use is kept (and tried again only when the files change again).

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{InconsistentKeys, ServerConfig};
use sha2::{Digest, Sha256};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use flagpole_config::TlsConfig;

/// The acceptor every HTTPS connection goes through, and what reloads its certificate.
pub(crate) struct Tls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
    provider: Arc<CryptoProvider>,
    config: TlsConfig,
    /// The files as they were when the pair in use was read.
    loaded: Stamps,
}

/// The certificate in use.
#[derive(Debug)]
struct Current(ArcSwap<CertifiedKey>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

impl Tls {
    /// Reads the pair and builds the acceptor. Errors name the file and the key that points to it.
    pub(crate) fn new(config: &TlsConfig) -> Result<Tls, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        // Taken before reading, so a change made while reading is seen by the first check.
        let loaded = Stamps::of(config);
        let pair = load(config, &provider)?;
        tracing::info!(certificate = %fingerprint(&pair), "TLS certificate loaded");
        let current = Arc::new(Current(ArcSwap::from_pointee(pair)));
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("server.tls: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            current,
            provider,
            config: config.clone(),
            loaded,
        })
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    /// Checks the files every `reload_interval` until `stop`; a changed pair that loads
    /// replaces the one in use, one that does not is logged and the old one kept.
    pub(crate) async fn watch(self: Arc<Tls>, stop: CancellationToken) {
        let mut seen = self.loaded;
        let mut ticks = tokio::time::interval(self.config.reload_interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.cancelled() => return,
            }
            let now = Stamps::of(&self.config);
            if now == seen {
                continue;
            }
            seen = now;
            match load(&self.config, &self.provider) {
                Ok(pair) => {
                    tracing::info!(certificate = %fingerprint(&pair), "TLS certificate reloaded");
                    self.current.0.store(Arc::new(pair));
                    metrics::counter!("flagpole_tls_reloads_total", "result" => "success")
                        .increment(1);
                }
                Err(error) => {
                    tracing::warn!(%error, "TLS certificate not reloaded: the one in use is kept");
                    metrics::counter!("flagpole_tls_reloads_total", "result" => "failure")
                        .increment(1);
                }
            }
        }
    }
}

/// What a change to either file changes; `None`: the file is missing.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamps([Option<(SystemTime, u64, u64)>; 2]);

impl Stamps {
    fn of(config: &TlsConfig) -> Stamps {
        use std::os::unix::fs::MetadataExt;
        let stamp = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len(), meta.ino()))
        };
        Stamps([stamp(&config.cert_path), stamp(&config.key_path)])
    }
}

/// The certificate chain and key, checked to belong together.
fn load(config: &TlsConfig, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let cert_error = |what: String| {
        format!(
            "server.tls.cert_path {}: {what}",
            config.cert_path.display()
        )
    };
    let key_error =
        |what: String| format!("server.tls.key_path {}: {what}", config.key_path.display());
    let text = std::fs::read(&config.cert_path).map_err(|e| cert_error(e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(cert_error(
            "no certificate in it (expected PEM \"BEGIN CERTIFICATE\" blocks)".into(),
        ));
    }
    let text = std::fs::read(&config.key_path).map_err(|e| key_error(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&text).map_err(|e| {
        key_error(match e {
            pem::Error::NoItemsFound => {
                "no private key in it (expected PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\")".into()
            }
            e => format!("not a PEM private key: {e}"),
        })
    })?;
    let signer = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| key_error(format!("unusable private key: {e}")))?;
    let pair = CertifiedKey::new(chain, signer);
    match pair.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(pair),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            Err(key_error(format!(
                "does not match the certificate in server.tls.cert_path {}",
                config.cert_path.display()
            )))
        }
        Err(e) => Err(cert_error(format!("unusable certificate: {e}"))),
    }
}

/// The start of the SHA-256 of the server certificate, for the logs: which one is in use.
fn fingerprint(pair: &CertifiedKey) -> String {
    let digest = Sha256::digest(pair.cert[0].as_ref());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, cert: &str, key: &str) -> TlsConfig {
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, cert).unwrap();
        std::fs::write(&key_path, key).unwrap();
        TlsConfig {
            cert_path,
            key_path,
            plain_port: None,
            reload_interval: std::time::Duration::from_secs(1),
        }
    }

    #[test]
    fn errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("flagpole-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = config(&dir, "not pem", "not pem either");
        let error = Tls::new(&c).err().unwrap();
        assert!(error.starts_with("server.tls.cert_path "), "{error}");
        assert!(error.contains("cert.pem"), "{error}");
        let mut missing = c.clone();
        missing.cert_path = dir.join("absent.pem");
        let error = Tls::new(&missing).err().unwrap();
        assert!(error.contains("absent.pem"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
