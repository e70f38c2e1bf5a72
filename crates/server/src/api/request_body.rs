//! Reading a request body whole, bounded, and the media type it is declared as. Shared by the
//! front doors that take a body (identities POST, OFREP, Unleash, flagd's Connect); each maps
//! a failure to its own error shape.

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

/// Why a body was not read.
#[derive(Debug)]
pub(super) enum BodyError {
    /// Longer than the limit.
    TooLarge,
    /// The connection failed or the framing was broken.
    Unreadable(String),
}

/// Reads a request body of at most `limit` bytes. The body is read up to the limit even when
/// `Content-Length` already says it is too large: a client still sending would otherwise see a
/// broken connection instead of the 413.
pub(super) async fn read(body: Incoming, limit: usize) -> Result<bytes::Bytes, BodyError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(e) => Err(BodyError::Unreadable(format!(
            "the request body could not be read: {e}"
        ))),
    }
}

/// The media type `Content-Type` declares, lower-cased and without parameters (`charset`);
/// `None` when the header is absent, `""` when it is not text.
pub(crate) fn media_type(headers: &http::HeaderMap) -> Option<String> {
    let declared = headers.get(http::header::CONTENT_TYPE)?;
    Some(
        declared
            .to_str()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}
