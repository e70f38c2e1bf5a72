//! Response bodies prepared once per document revision: the bytes, their ETag, and compressed
//! variants (gzip, Brotli, zstd) for bodies large enough to gain from it. Serving one is a
//! reference-count increment: `Bytes` clones share the buffer.
//!
//! A small body's variants are made on demand, each by the first request that accepts its
//! encoding, then kept: an idle environment holds none. Compressing a multi-megabyte document
//! takes longer than compiling it, so such a body is compressed all at once and can be prepared
//! *deferred*: it is served uncompressed from the moment its snapshot is swapped in, and
//! its variants appear (once, atomically) when a background thread has made them. A new revision
//! is never held back by its compression.

use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;

/// Bodies smaller than this are never compressed (as the Flagsmith Edge Proxy does: compression from 1,000 bytes).
pub const COMPRESS_MIN_BYTES: usize = 1000;

/// Bodies smaller than this are compressed on demand, one encoding at a time; larger ones all at
/// once, off the request path (a large document is compressed after its snapshot is swapped in).
pub const ON_DEMAND_MAX_BYTES: usize = 256 * 1024;

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
    /// How this body gets compressed variants, if at all.
    compression: Compression,
    /// The variants (zstd, Brotli, gzip): a small body's each made by the first request that
    /// accepts its encoding; a large body's all together by [`compress`](Self::compress). Boxed,
    /// and absent for a body never compressed: most prepared bodies (one per feature and key
    /// kind) are too small to be.
    variants: Option<Box<[OnceLock<Bytes>; 3]>>,
}

/// Where each encoding's variant is kept, in order of preference.
const ZSTD: usize = 0;
const BROTLI: usize = 1;
const GZIP: usize = 2;

/// When a body's compressed variants are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    /// Never: too small to gain from it, or not wanted.
    None,
    /// Each on the first request for its encoding, then kept: compressing a body this small
    /// costs about what sending it uncompressed once does, and most bodies of an idle
    /// environment are never asked for in every encoding (or at all).
    OnDemand,
    /// All at once by [`PreparedBody::compress`] (now, or in the background after the swap for
    /// a deferred body): a large body's compression is too slow for a request to wait on.
    Together,
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
    /// Prepares `bytes`; when `compress`, a large body is compressed now, a small one on demand.
    pub fn new(bytes: impl Into<Bytes>, compress: bool) -> PreparedBody {
        let body = Self::deferred(bytes, compress);
        body.compress();
        body
    }

    /// Prepares `bytes` without compressing yet: [`compress`](Self::compress) makes a large
    /// body's variants later, and until then it is served uncompressed. A small body is
    /// compressed on demand either way.
    pub fn deferred(bytes: impl Into<Bytes>, compress: bool) -> PreparedBody {
        let bytes: Bytes = bytes.into();
        let etag = etag_of(&bytes);
        let compression = if !compress || bytes.len() < COMPRESS_MIN_BYTES {
            Compression::None
        } else if bytes.len() < ON_DEMAND_MAX_BYTES {
            Compression::OnDemand
        } else {
            Compression::Together
        };
        PreparedBody {
            etag_header: http::HeaderValue::from_str(&etag)
                .expect("a hex ETag is a valid header value"),
            etag,
            compression,
            variants: (compression != Compression::None).then(Default::default),
            bytes,
        }
    }

    /// Makes a large body's compressed variants if they are not there yet (a small body's are
    /// made on demand; nothing to do).
    pub fn compress(&self) {
        let Some(variants) = self.variants.as_deref() else {
            return;
        };
        if self.compression != Compression::Together || variants[ZSTD].get().is_some() {
            return;
        }
        let bytes = &self.bytes[..];
        // The three encoders run in parallel: a large document is compressed on every update.
        let (g, b, z) = std::thread::scope(|s| {
            let g = s.spawn(|| gzip(bytes, 6));
            let b = s.spawn(|| (bytes.len() <= BROTLI_MAX_BYTES).then(|| brotli(bytes)));
            let z = zstd::encode_all(bytes, 3).expect("in-memory zstd");
            (
                g.join().expect("gzip thread"),
                b.join().expect("brotli thread"),
                z,
            )
        });
        // zstd last: it marks the set as made.
        let _ = variants[GZIP].set(Bytes::from(g));
        if let Some(b) = b {
            let _ = variants[BROTLI].set(Bytes::from(b));
        }
        let _ = variants[ZSTD].set(Bytes::from(z));
    }

    /// The compressed variants, once made (all of them, for a large body).
    pub fn compressed(&self) -> Option<Compressed> {
        let variants = self.variants.as_deref()?;
        Some(Compressed {
            gzip: variants[GZIP].get()?.clone(),
            brotli: variants[BROTLI].get().cloned(),
            zstd: variants[ZSTD].get()?.clone(),
        })
    }

    /// The variant for an `Accept-Encoding` header, and its encoding.
    pub fn negotiate(&self, accept_encoding: Option<&str>) -> (Bytes, Encoding) {
        let Some(variants) = self.variants.as_deref() else {
            return (self.bytes.clone(), Encoding::Identity);
        };
        let accepted = accepted_encodings(accept_encoding);
        for (slot, encoding) in [Encoding::Zstd, Encoding::Brotli, Encoding::Gzip]
            .into_iter()
            .enumerate()
        {
            if !accepted.contains(encoding) {
                continue;
            }
            let variant = match self.compression {
                Compression::OnDemand => {
                    Some(variants[slot].get_or_init(|| Bytes::from(encode(&self.bytes, encoding))))
                }
                _ => variants[slot].get(),
            };
            if let Some(bytes) = variant {
                return (bytes.clone(), encoding);
            }
        }
        (self.bytes.clone(), Encoding::Identity)
    }
}

/// One encoding of `bytes`, at the levels the prepared variants use.
fn encode(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Gzip => gzip(bytes, 6),
        Encoding::Brotli => brotli(bytes),
        Encoding::Zstd => zstd::encode_all(bytes, 3).expect("in-memory zstd"),
        Encoding::Identity => bytes.to_vec(),
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
    // A window larger than the input finds nothing more, and the encoder allocates (and
    // clears) all of it: 4 MiB at 22 bits, for a body of a few KB.
    let needed = usize::BITS - bytes.len().max(1).leading_zeros();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 5,
        lgwin: needed.clamp(10, 22) as i32,
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
        let body = PreparedBody::deferred(vec![b'a'; ON_DEMAND_MAX_BYTES], true);
        assert_eq!(body.negotiate(Some("gzip")).1, Encoding::Identity);
        body.compress();
        assert_eq!(body.negotiate(Some("gzip")).1, Encoding::Gzip);
        assert!(body.compressed().unwrap().gzip.len() < 5000);
    }

    #[test]
    fn a_small_body_is_compressed_on_demand_one_encoding_at_a_time() {
        let text: Vec<u8> = (0..400)
            .flat_map(|i| format!("flag{i},").into_bytes())
            .collect();
        let body = PreparedBody::deferred(text.clone(), true);
        let variants = body.variants.as_deref().unwrap();
        assert!(variants.iter().all(|v| v.get().is_none()));
        let (gzipped, encoding) = body.negotiate(Some("gzip"));
        assert_eq!(encoding, Encoding::Gzip);
        assert!(gzipped.len() < text.len());
        let variants = body.variants.as_deref().unwrap();
        assert!(variants[ZSTD].get().is_none() && variants[BROTLI].get().is_none());
        let (br, encoding) = body.negotiate(Some("br"));
        assert_eq!(encoding, Encoding::Brotli);
        let mut plain = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut plain).unwrap();
        assert_eq!(plain, text);
        // Kept: the same bytes again.
        assert_eq!(body.negotiate(Some("br")).0, br);
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
