//! What a caller's key is, and how a key may be shown. Everything above this module (store,
//! front doors, logs, the status page) refers to keys through these two things, so that a key
//! never reaches a log line or a page in the clear.

/// Which kind of key a caller presented. Client keys see filtered results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Server,
    Client,
}

impl KeyKind {
    /// A dense index, for per-kind tables.
    pub(crate) fn index(self) -> usize {
        match self {
            KeyKind::Server => 0,
            KeyKind::Client => 1,
        }
    }
}

/// `abc…` + 8 hex digits of a hash (the configuration's, so a key reads the same in its
/// errors and in the server's logs).
pub(crate) use flagpole_config::fingerprint;
