//! Response bodies prepared once per document revision: the bytes, their ETag, and compressed
//! variants (gzip, Brotli, zstd) for bodies large enough to gain from it. Serving one is a
//! reference-count increment: `Bytes` clones share the buffer.
//!
//! Compressing a multi-megabyte document takes longer than compiling it, so such a body can be
//! prepared *deferred*: it is served uncompressed from the moment its snapshot is swapped in, and
//! its variants appear (once, atomically) when a background thread has made them. A new revision
//! is never held back by its compression.

use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;

/// Bodies smaller than this are never compressed (as the Flagsmith Edge Proxy does: compression from 1,000 bytes).
pub const COMPRESS_MIN_BYTES: usize = 1000;

/// Bodies larger than this get no Brotli variant. At the quality an update can afford, Brotli
/// is no smaller than gzip on multi-megabyte documents (medium bench document: 1.44 vs
/// 1.50 MiB) while costing its size in memory per environment and ~100 ms of CPU per update;
/// clients that accept `br` accept gzip too.
pub const BROTLI_MAX_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Brotli,
    Zstd,
}

impl Encoding {
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Brotli => Some("br"),
            Encoding::Zstd => Some("zstd"),
        }
    }
}

#[derive(Debug)]
pub struct PreparedBody {
    pub bytes: Bytes,
    /// Quoted strong ETag: a hash of the bytes, so equal across replicas and restarts.
    pub etag: String,
    /// The same, ready to put in a response.
    pub etag_header: http::HeaderValue,
    /// Whether this body gets compressed variants at all.
    compressible: bool,
    /// The variants, once made (immediately, or later for a deferred body).
    compressed: OnceLock<Compressed>,
}

/// The compressed variants of one body.
#[derive(Debug)]
pub struct Compressed {
    pub gzip: Bytes,
    /// Absent for bodies over [`BROTLI_MAX_BYTES`].
    pub brotli: Option<Bytes>,
    pub zstd: Bytes,
}

impl PreparedBody {
    /// Prepares `bytes`, compressing now when `compress` and the body is large enough.
    pub fn new(bytes: impl Into<Bytes>, compress: bool) -> PreparedBody {
        let body = Self::deferred(bytes, compress);
        body.compress();
        body
    }

    /// Prepares `bytes` without compressing yet: [`compress`](Self::compress) makes the variants
    /// later, and until then the body is served uncompressed.
    pub fn deferred(bytes: impl Into<Bytes>, compress: bool) -> PreparedBody {
        let bytes: Bytes = bytes.into();
        let etag = etag_of(&bytes);
        PreparedBody {
            etag_header: http::HeaderValue::from_str(&etag)
                .expect("a hex ETag is a valid header value"),
            etag,
            compressible: compress && bytes.len() >= COMPRESS_MIN_BYTES,
            compressed: OnceLock::new(),
            bytes,
        }
    }

    /// Makes the compressed variants if this body gets them and they are not there yet.
    pub fn compress(&self) {
        if !self.compressible {
            return;
        }
        self.compressed.get_or_init(|| {
            let bytes = &self.bytes[..];
            // The three encoders run in parallel: a large document is compressed on every update.
            std::thread::scope(|s| {
                let g = s.spawn(|| gzip(bytes, 6));
                let b = s.spawn(|| (bytes.len() <= BROTLI_MAX_BYTES).then(|| brotli(bytes)));
                let z = zstd::encode_all(bytes, 3).expect("in-memory zstd");
                Compressed {
                    gzip: Bytes::from(g.join().expect("gzip thread")),
                    brotli: b.join().expect("brotli thread").map(Bytes::from),
                    zstd: Bytes::from(z),
                }
            })
        });
    }

    /// The compressed variants, if made.
    pub fn compressed(&self) -> Option<&Compressed> {
        self.compressed.get()
    }

    /// The variant for an `Accept-Encoding` header, and its encoding.
    pub fn negotiate(&self, accept_encoding: Option<&str>) -> (Bytes, Encoding) {
        let Some(variants) = self.compressed.get() else {
            return (self.bytes.clone(), Encoding::Identity);
        };
        let accepted = accepted_encodings(accept_encoding);
        let candidates = [
            (Encoding::Zstd, Some(&variants.zstd)),
            (Encoding::Brotli, variants.brotli.as_ref()),
            (Encoding::Gzip, Some(&variants.gzip)),
        ];
        for (encoding, bytes) in candidates {
            if let Some(bytes) = bytes.filter(|_| accepted.contains(encoding)) {
                return (bytes.clone(), encoding);
            }
        }
        (self.bytes.clone(), Encoding::Identity)
    }
}

/// `"<xxh3-128 hex>"`.
pub fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// The encodings a client accepts (q=0 excluded): a set of [`Encoding`]s, without allocating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accepted(u8);

impl Accepted {
    fn bit(encoding: Encoding) -> u8 {
        match encoding {
            Encoding::Identity => 0,
            Encoding::Gzip => 1,
            Encoding::Brotli => 2,
            Encoding::Zstd => 4,
        }
    }

    pub fn contains(self, encoding: Encoding) -> bool {
        self.0 & Self::bit(encoding) != 0
    }

    fn insert(&mut self, encoding: Encoding) {
        self.0 |= Self::bit(encoding);
    }
}

/// Parses `Accept-Encoding`.
pub fn accepted_encodings(header: Option<&str>) -> Accepted {
    let mut out = Accepted::default();
    let Some(header) = header else { return out };
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let name = pieces.next().unwrap_or("").trim();
        let refused = pieces.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                == Some(0.0)
        });
        if refused {
            continue;
        }
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            out.insert(Encoding::Gzip);
        } else if name.eq_ignore_ascii_case("br") {
            out.insert(Encoding::Brotli);
        } else if name.eq_ignore_ascii_case("zstd") {
            out.insert(Encoding::Zstd);
        } else if name == "*" {
            out.insert(Encoding::Gzip);
            out.insert(Encoding::Brotli);
            out.insert(Encoding::Zstd);
        }
    }
    out
}

/// gzip at `level` (used per request, at a low level, for large dynamic bodies).
pub fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::new(level),
    );
    encoder.write_all(bytes).expect("in-memory gzip");
    encoder.finish().expect("in-memory gzip")
}

fn brotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let params = brotli::enc::BrotliEncoderParams {
        quality: 5,
        lgwin: 22,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).expect("in-memory brotli");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_prefers_zstd_then_br_then_gzip_and_respects_q0() {
        let body = PreparedBody::new(vec![b'a'; 5000], true);
        assert_eq!(
            body.negotiate(Some("gzip, deflate, br")).1,
            Encoding::Brotli
        );
        assert_eq!(body.negotiate(Some("gzip;q=1.0, zstd")).1, Encoding::Zstd);
        assert_eq!(body.negotiate(Some("br;q=0, gzip")).1, Encoding::Gzip);
        assert_eq!(body.negotiate(None).1, Encoding::Identity);
        let small = PreparedBody::new(b"[]".to_vec(), true);
        assert_eq!(small.negotiate(Some("gzip")).1, Encoding::Identity);
    }

    #[test]
    fn a_deferred_body_is_served_uncompressed_until_compressed() {
        let body = PreparedBody::deferred(vec![b'a'; 5000], true);
        assert_eq!(body.negotiate(Some("gzip")).1, Encoding::Identity);
        body.compress();
        assert_eq!(body.negotiate(Some("gzip")).1, Encoding::Gzip);
        assert!(body.compressed().unwrap().gzip.len() < 5000);
    }

    #[test]
    fn large_bodies_fall_back_from_brotli_to_gzip() {
        let body = PreparedBody::new(vec![b'a'; BROTLI_MAX_BYTES + 1], true);
        assert!(body.compressed().unwrap().brotli.is_none());
        assert_eq!(body.negotiate(Some("br, gzip")).1, Encoding::Gzip);
        assert_eq!(body.negotiate(Some("br")).1, Encoding::Identity);
    }

    #[test]
    fn etag_depends_only_on_bytes() {
        assert_eq!(etag_of(b"abc"), etag_of(b"abc"));
        assert_ne!(etag_of(b"abc"), etag_of(b"abd"));
    }
}
