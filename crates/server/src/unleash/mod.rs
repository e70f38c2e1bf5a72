//! Unleash toggles served as Unleash Edge serves them, in either of its modes: offline from
//! client-features files (`unleash.features`, `--unleash-features`), read and compiled before
//! the proxy listens and then watched (`sources.rs`); or from an Unleash server
//! (`unleash.upstream`), its client API polled with each client token (`upstream.rs`; in a
//! fleet, by one replica for all, the others reading its answers from Redis: `fleet.rs`). Each
//! stream of toggles is a [`Feed`] whose accepted state is one immutable [`View`] swapped in
//! atomically, so a request reads one consistent body and never waits for an update. The
//! tokens (`unleash.client_tokens`, `unleash.frontend_tokens`) are parsed once here; the
//! Unleash front door (`api/unleash/`) asks [`Unleash::admit`] which token a request presents
//! and reads that token's feed.

pub(crate) mod feed;
mod fleet;
mod identity;
pub(crate) mod sources;
mod upstream;
mod usage;
mod view;

use std::path::PathBuf;
use std::sync::Arc;

use flagpole_unleash::{Projects, Token};

pub(crate) use feed::Feed;
use flagpole_config::unleash::Unleash as UnleashConfig;
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

/// Where the toggles come from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// Features files, merged into one feed every token reads.
    Files(Vec<PathBuf>),
    /// An Unleash server's base URL: a feed per client token.
    Upstream(String),
}

/// The Unleash toggles of the process and who may read them.
#[derive(Debug)]
pub(crate) struct Unleash {
    client_tokens: Vec<Token>,
    frontend_tokens: Vec<Token>,
    /// The feed each token reads, by its index in its list.
    client_feeds: Vec<usize>,
    frontend_feeds: Vec<usize>,
    feeds: Vec<Arc<Feed>>,
    origin: Origin,
    /// How the proxy introduces itself upstream.
    pub(crate) identity: identity::Identity,
}

/// A request's token, admitted, and the feed it reads.
#[derive(Debug)]
pub(crate) struct Admitted<'u> {
    pub(crate) token: &'u Token,
    pub(crate) feed: &'u Feed,
}

/// What the preflight read: the files' texts compiled (offline), the tokens parsed and each
/// token's feed chosen.
#[derive(Debug)]
pub(crate) struct Loaded {
    client_tokens: Vec<Token>,
    frontend_tokens: Vec<Token>,
    client_feeds: Vec<usize>,
    frontend_feeds: Vec<usize>,
    /// Offline: the files' texts and their view.
    files: Option<(Vec<Arc<[u8]>>, View)>,
    origin: Origin,
    refresh_interval: std::time::Duration,
}

/// Reads and compiles the configured files (or checks the upstream's settings) and parses the
/// tokens; `None` when nothing Unleash is configured. The error names the file (or the token's
/// place in its list, never the token) and, for a file, the JSON path of the fault.
pub(crate) fn load(config: &UnleashConfig) -> Result<Option<Loaded>, String> {
    if !config.is_configured() {
        if !config.client_tokens.is_empty() || !config.frontend_tokens.is_empty() {
            return Err(
                "unleash: tokens are configured but nothing to serve them from \
                        (unleash.features / --unleash-features FILE, or \
                        unleash.upstream / --unleash-upstream URL)"
                    .into(),
            );
        }
        return Ok(None);
    }
    let client_tokens = tokens(&config.client_tokens, "client_tokens")?;
    let frontend_tokens = tokens(&config.frontend_tokens, "frontend_tokens")?;
    let Some(upstream) = &config.upstream else {
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
        return Ok(Some(Loaded {
            client_feeds: vec![0; client_tokens.len()],
            frontend_feeds: vec![0; frontend_tokens.len()],
            client_tokens,
            frontend_tokens,
            files: Some((texts, view)),
            origin: Origin::Files(config.features.clone()),
            refresh_interval: config.refresh_interval,
        }));
    };
    if !config.features.is_empty() {
        return Err(
            "unleash: features files and an upstream are both configured; \
                    serve from one (Unleash Edge's offline mode or its edge mode)"
                .into(),
        );
    }
    url::Url::parse(upstream)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| format!("unleash.upstream {upstream:?}: not an http:// or https:// URL"))?;
    if client_tokens.is_empty() {
        return Err(
            "unleash.upstream is polled with client tokens: give at least one \
                    (unleash.client_tokens, --unleash-client-token)"
                .into(),
        );
    }
    let frontend_feeds = frontend_tokens
        .iter()
        .enumerate()
        .map(|(i, front)| {
            client_tokens
                .iter()
                .position(|client| covers(client, front))
                .ok_or_else(|| {
                    format!(
                        "unleash.frontend_tokens[{i}] ({}): no client token fetches its toggles \
                         (one of environment {:?} whose projects include the frontend token's)",
                        crate::keys::fingerprint(front.secret_text()),
                        front.environment()
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Loaded {
        client_feeds: (0..client_tokens.len()).collect(),
        frontend_feeds,
        client_tokens,
        frontend_tokens,
        files: None,
        origin: Origin::Upstream(upstream.clone()),
        refresh_interval: config.refresh_interval,
    }))
}

/// Whether the toggles fetched with `client` hold every toggle `front` may see.
fn covers(client: &Token, front: &Token) -> bool {
    client.environment() == front.environment()
        && match (client.projects(), front.projects()) {
            (Projects::All, _) => true,
            (Projects::Only(_), Projects::All) => false,
            (Projects::Only(have), Projects::Only(want)) => want.is_subset(have),
        }
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

impl Unleash {
    pub(crate) fn new(loaded: Loaded) -> Unleash {
        feed::describe_metrics();
        let feeds = match loaded.files {
            Some((texts, view)) => vec![Arc::new(Feed::loaded("files".into(), texts, view))],
            None => loaded
                .client_tokens
                .iter()
                .map(|t| Arc::new(Feed::empty(crate::keys::fingerprint(t.secret_text()), 1)))
                .collect(),
        };
        Unleash {
            client_tokens: loaded.client_tokens,
            frontend_tokens: loaded.frontend_tokens,
            client_feeds: loaded.client_feeds,
            frontend_feeds: loaded.frontend_feeds,
            feeds,
            origin: loaded.origin,
            identity: identity::Identity::new(loaded.refresh_interval),
        }
    }

    /// The token an `Authorization` header presents (`Bearer ` allowed), if it opens `kind`,
    /// and the feed it reads.
    pub(crate) fn admit(
        &self,
        authorization: Option<&str>,
        kind: TokenKind,
    ) -> Result<Admitted<'_>, Refused> {
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
        let (own, feeds, other) = match kind {
            TokenKind::Client => (
                &self.client_tokens,
                &self.client_feeds,
                &self.frontend_tokens,
            ),
            TokenKind::Frontend => (
                &self.frontend_tokens,
                &self.frontend_feeds,
                &self.client_tokens,
            ),
        };
        match (find(own), find(other)) {
            (Some(i), _) => Ok(Admitted {
                token: &own[i],
                feed: &self.feeds[feeds[i]],
            }),
            (None, Some(_)) => Err(Refused::WrongKind),
            (None, None) => Err(Refused::Unknown),
        }
    }

    /// Every feed, in order (one for the files; one per client token with an upstream).
    pub(crate) fn feeds(&self) -> &[Arc<Feed>] {
        &self.feeds
    }

    /// Whether every feed has toggles to serve (Unleash Edge's readiness).
    pub(crate) fn is_ready(&self) -> bool {
        self.feeds.iter().all(|f| f.view().is_some())
    }

    /// Where the toggles come from.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// How old a polled feed's last update may be before it is stale: the refresh interval
    /// plus the grace readiness allows (`health.stale_grace`); `None`: never stale.
    pub(crate) fn stale_after(
        &self,
        grace: Option<std::time::Duration>,
    ) -> Option<std::time::Duration> {
        grace.map(|g| self.identity.interval().saturating_add(g))
    }

    /// Whether SDK registrations and metrics go upstream (offline they are checked, counted
    /// in `/metrics` by route, and let go).
    pub(crate) fn forwards_usage(&self) -> bool {
        matches!(self.origin, Origin::Upstream(_))
    }

    /// The client tokens, in order (feed `i` of an upstream is fetched with token `i`).
    pub(crate) fn client_tokens(&self) -> &[Token] {
        &self.client_tokens
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
            ..Default::default()
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
            ..Default::default()
        };
        let e = load(&config).unwrap_err();
        assert!(e.starts_with("unleash.client_tokens[0]"), "{e}");
        assert!(!e.contains("secretwithoutcolon"), "{e}");
    }

    #[test]
    fn with_an_upstream_a_frontend_token_reads_a_client_token_of_its_environment() {
        let config = |frontend: &str| UnleashConfig {
            upstream: Some("http://127.0.0.1:4242".into()),
            client_tokens: vec!["[a,b]:production.one".into(), "*:development.two".into()],
            frontend_tokens: vec![frontend.into()],
            ..Default::default()
        };
        let u = Unleash::new(load(&config("a:production.f")).unwrap().unwrap());
        assert_eq!(u.feeds().len(), 2);
        assert!(!u.is_ready(), "nothing fetched yet");
        let front = u
            .admit(Some("a:production.f"), TokenKind::Frontend)
            .unwrap();
        assert!(std::ptr::eq(front.feed, &*u.feeds()[0]));
        let dev = Unleash::new(load(&config("*:development.f")).unwrap().unwrap());
        let front = dev
            .admit(Some("*:development.f"), TokenKind::Frontend)
            .unwrap();
        assert!(std::ptr::eq(front.feed, &*dev.feeds()[1]));
        let e = load(&config("*:production.f")).unwrap_err();
        assert!(e.starts_with("unleash.frontend_tokens[0]"), "{e}");
    }
}
