//! The `unleash` section: Unleash Edge's offline mode on Flagpole. Client-features files
//! (Unleash's `/api/client/features` body, as exported or fetched once) are served to Unleash
//! SDKs through `/api/client/*` and `/api/frontend` with the tokens listed here; the command
//! line (`--unleash-features`, `--unleash-client-token`, `--unleash-frontend-token`) adds to it.
//! Tokens are secrets: the printed configuration redacts them, logs show fingerprints only.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Unleash settings, as the server reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unleash {
    /// Client-features files, merged in order (a later file's toggle wins on a name).
    pub features: Vec<PathBuf>,
    /// Tokens for the client API (`/api/client/*`, server-side SDKs).
    pub client_tokens: Vec<String>,
    /// Tokens for the frontend API (`/api/frontend`, `/api/proxy`, browser and mobile SDKs).
    pub frontend_tokens: Vec<String>,
}

impl Unleash {
    /// Whether anything Unleash is configured.
    pub fn is_configured(&self) -> bool {
        !self.features.is_empty()
    }
}

/// The `unleash` section of config.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(super) struct UnleashFile {
    /// Unleash client-features files (the body of Unleash's `GET /api/client/features`),
    /// served offline as Unleash Edge's offline mode serves its bootstrap file, watched and
    /// reloaded when they change (a file that does not load keeps the last good toggles);
    /// several files are merged, a later file's toggle winning on a name.
    /// `flagpole serve --unleash-features FILE` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<PathBuf>,
    /// Unleash client tokens (`project:environment.secret`, `*` for every project,
    /// `[a,b]` for several) accepted on `/api/client/features`, `/api/client/register` and
    /// `/api/client/metrics`, in the `Authorization` header. `--unleash-client-token` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_tokens: Vec<String>,
    /// Unleash frontend tokens (same shape) accepted on `/api/frontend` and the legacy
    /// `/api/proxy`. `--unleash-frontend-token` adds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontend_tokens: Vec<String>,
}

impl UnleashFile {
    pub(super) fn to_settings(&self) -> Unleash {
        Unleash {
            features: self.features.clone(),
            client_tokens: self.client_tokens.clone(),
            frontend_tokens: self.frontend_tokens.clone(),
        }
    }

    pub(super) fn from_settings(u: &Unleash) -> UnleashFile {
        let redacted = |tokens: &[String]| tokens.iter().map(|_| "<redacted>".to_owned()).collect();
        UnleashFile {
            features: u.features.clone(),
            client_tokens: redacted(&u.client_tokens),
            frontend_tokens: redacted(&u.frontend_tokens),
        }
    }
}
