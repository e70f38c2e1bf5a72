//! Unleash toggles served offline, as Unleash Edge's offline mode serves its bootstrap file:
//! client-features files (`unleash.features`, `--unleash-features`) read and compiled before
//! the proxy listens, then watched (`sources.rs`); each accepted state is one immutable
//! [`View`] swapped in atomically, so a request reads one consistent body and never waits for
//! a reload. The tokens (`unleash.client_tokens`, `unleash.frontend_tokens`) are parsed once
//! here; the Unleash front door (`api/unleash/`) asks [`Unleash::admit`] which token a request
//! presents and reads the current view.

pub(crate) mod sources;
mod view;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use flagpole_unleash::Token;
use parking_lot::Mutex;

use crate::config::unleash::Unleash as UnleashConfig;
pub(crate) use view::View;

/// Which API a token opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// `/api/client/*`: server-side SDKs.
    Client,
    /// `/api/frontend*`, `/api/proxy*`: browser and mobile SDKs.
    Frontend,
}

/// Why a request's token is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No `Authorization` header.
    Missing,
    /// A token no list holds.
    Unknown,
    /// A token of the other kind.
    WrongKind,
}

/// The Unleash toggles of the process and who may read them.
#[derive(Debug)]
pub(crate) struct Unleash {
    client_tokens: Vec<Token>,
    frontend_tokens: Vec<Token>,
    files: Vec<PathBuf>,
    /// Each file's last good text, in order (what the current view was built from).
    texts: Mutex<Vec<Arc<[u8]>>>,
    view: ArcSwap<View>,
    /// Reloads refused since start (a file that did not load; the last good view kept).
    pub(crate) refused: AtomicU64,
}

/// What the preflight read: the files' texts, compiled, and the tokens parsed.
#[derive(Debug)]
pub(crate) struct Loaded {
    client_tokens: Vec<Token>,
    frontend_tokens: Vec<Token>,
    files: Vec<PathBuf>,
    texts: Vec<Arc<[u8]>>,
    view: View,
}

/// Reads and compiles the configured files and parses the tokens; `None` when nothing Unleash
/// is configured. The error names the file (or the token's place in its list, never the token)
/// and, for a file, the JSON path of the fault.
pub(crate) fn load(config: &UnleashConfig) -> Result<Option<Loaded>, String> {
    if !config.is_configured() {
        if !config.client_tokens.is_empty() || !config.frontend_tokens.is_empty() {
            return Err("unleash: tokens are configured but no features file \
                        (unleash.features, --unleash-features FILE)"
                .into());
        }
        return Ok(None);
    }
    let client_tokens = tokens(&config.client_tokens, "client_tokens")?;
    let frontend_tokens = tokens(&config.frontend_tokens, "frontend_tokens")?;
    let mut texts = Vec::new();
    for path in &config.features {
        let text = std::fs::read(path).map_err(|e| {
            format!(
                "unleash features file {}: cannot read it: {e}",
                path.display()
            )
        })?;
        flagpole_unleash::Features::from_slice(&text)
            .map_err(|e| format!("unleash features file {}: {e}", path.display()))?;
        texts.push(Arc::<[u8]>::from(text));
    }
    let view = View::build(&texts).map_err(|e| format!("unleash features files: {e}"))?;
    Ok(Some(Loaded {
        client_tokens,
        frontend_tokens,
        files: config.features.clone(),
        texts,
        view,
    }))
}

fn tokens(texts: &[String], list: &str) -> Result<Vec<Token>, String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            text.parse::<Token>().map_err(|e| {
                format!(
                    "unleash.{list}[{i}] ({}): not an Unleash token \
                     (project:environment.secret): {e}",
                    crate::keys::fingerprint(text)
                )
            })
        })
        .collect()
}

/// `/metrics`: the toggles served now, and the files' reloads taken and refused.
const TOGGLES: &str = "flagpole_unleash_toggles";
const RELOADS: &str = "flagpole_unleash_reloads_total";

impl Unleash {
    pub(crate) fn new(loaded: Loaded) -> Unleash {
        metrics::describe_gauge!(TOGGLES, "Unleash toggles served (unleash.features)");
        metrics::describe_counter!(
            RELOADS,
            "Unleash features file reloads since start, by result (taken, refused)"
        );
        metrics::gauge!(TOGGLES).set(loaded.view.features.len() as f64);
        for result in ["taken", "refused"] {
            metrics::counter!(RELOADS, "result" => result).increment(0);
        }
        Unleash {
            client_tokens: loaded.client_tokens,
            frontend_tokens: loaded.frontend_tokens,
            files: loaded.files,
            texts: Mutex::new(loaded.texts),
            view: ArcSwap::from_pointee(loaded.view),
            refused: AtomicU64::new(0),
        }
    }

    /// The toggles served now.
    pub(crate) fn view(&self) -> Arc<View> {
        self.view.load_full()
    }

    /// The token an `Authorization` header presents (`Bearer ` allowed), if it opens `kind`.
    pub(crate) fn admit(
        &self,
        authorization: Option<&str>,
        kind: TokenKind,
    ) -> Result<&Token, Refused> {
        let presented = authorization.map(str::trim).filter(|t| !t.is_empty());
        let presented = presented.ok_or(Refused::Missing)?;
        let presented = presented
            .strip_prefix("Bearer ")
            .or_else(|| presented.strip_prefix("bearer "))
            .map_or(presented, str::trim);
        let find = |list: &'_ [Token]| -> Option<usize> {
            // Every token compared, so the time taken does not say where a match is.
            list.iter()
                .enumerate()
                .fold(None, |found, (i, t)| match t.matches(presented) {
                    true => found.or(Some(i)),
                    false => found,
                })
        };
        let (own, other) = match kind {
            TokenKind::Client => (&self.client_tokens, &self.frontend_tokens),
            TokenKind::Frontend => (&self.frontend_tokens, &self.client_tokens),
        };
        match (find(own), find(other)) {
            (Some(i), _) => Ok(&own[i]),
            (None, Some(_)) => Err(Refused::WrongKind),
            (None, None) => Err(Refused::Unknown),
        }
    }

    /// Takes new text for file `index` (on the blocking pool: compiling is CPU work no request
    /// should wait behind): `Ok(true)` when it changed the toggles, `Ok(false)` when it is the
    /// content already served; a refused file keeps the last good view.
    pub(crate) async fn publish_off_the_side(
        self: &Arc<Self>,
        index: usize,
        text: Vec<u8>,
    ) -> Result<bool, String> {
        let unleash = self.clone();
        crate::background::run(move || unleash.publish(index, text.into()))
            .await
            .unwrap_or_else(|e| Err(format!("building the Unleash toggles failed: {e}")))
    }

    fn publish(&self, index: usize, text: Arc<[u8]>) -> Result<bool, String> {
        // One rebuild at a time, so views are never published out of order.
        let mut texts = self.texts.lock();
        if texts[index] == text {
            return Ok(false);
        }
        let refuse = |e: flagpole_unleash::FeaturesError| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(RELOADS, "result" => "refused").increment(1);
            e.to_string()
        };
        flagpole_unleash::Features::from_slice(&text).map_err(refuse)?;
        let mut next = texts.clone();
        next[index] = text;
        let view = View::build(&next).map_err(refuse)?;
        let before = self.view();
        let changed = flagpole_unleash::changed_toggles(&before.features, &view.features);
        for warning in view.features.warnings() {
            tracing::warn!(toggle = %warning.toggle, reason = %warning.message, "Unleash toggle not compiled; it evaluates off");
        }
        *texts = next;
        metrics::gauge!(TOGGLES).set(view.features.len() as f64);
        metrics::counter!(RELOADS, "result" => "taken").increment(1);
        self.view.store(Arc::new(view));
        if !changed.is_empty() {
            tracing::info!(file = %self.files[index].display(), changed = ?changed, "Unleash toggles changed");
        }
        Ok(true)
    }

    /// The features files, in order.
    pub(crate) fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// How many tokens of each kind are configured (for the start-up line).
    pub(crate) fn token_counts(&self) -> (usize, usize) {
        (self.client_tokens.len(), self.frontend_tokens.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unleash(dir: &std::path::Path) -> Unleash {
        let path = dir.join("features.json");
        std::fs::write(&path, br#"{"version":2,"features":[]}"#).unwrap();
        let config = UnleashConfig {
            features: vec![path],
            client_tokens: vec!["*:development.client".into()],
            frontend_tokens: vec!["*:development.front".into()],
        };
        Unleash::new(load(&config).unwrap().unwrap())
    }

    #[test]
    fn tokens_open_their_own_api_only() {
        let dir = std::env::temp_dir().join(format!("flagpole-unleash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let u = unleash(&dir);
        let client = Some("*:development.client");
        assert!(u.admit(client, TokenKind::Client).is_ok());
        assert!(u
            .admit(Some("Bearer *:development.client"), TokenKind::Client)
            .is_ok());
        assert_eq!(
            u.admit(client, TokenKind::Frontend).unwrap_err(),
            Refused::WrongKind
        );
        assert_eq!(
            u.admit(Some("x:y.z"), TokenKind::Client).unwrap_err(),
            Refused::Unknown
        );
        assert_eq!(
            u.admit(None, TokenKind::Client).unwrap_err(),
            Refused::Missing
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_bad_token_is_refused_without_showing_it() {
        let config = UnleashConfig {
            features: vec!["/nonexistent".into()],
            client_tokens: vec!["secretwithoutcolon".into()],
            frontend_tokens: vec![],
        };
        let e = load(&config).unwrap_err();
        assert!(e.starts_with("unleash.client_tokens[0]"), "{e}");
        assert!(!e.contains("secretwithoutcolon"), "{e}");
    }
}
