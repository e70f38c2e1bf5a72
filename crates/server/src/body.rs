//! Response bodies prepared once per document revision: the bytes, their ETag, and compressed
//! variants (gzip, Brotli, zstd) for bodies large enough to gain from it. Serving one is a
//! reference-count increment: `Bytes` clones share the buffer.

use std::io::Write;

use bytes::Bytes;

/// Bodies smaller than this are never compressed (spec: compression from 1,000 bytes).
pub const COMPRESS_MIN_BYTES: usize = 1000;

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

#[derive(Clone, Debug)]
pub struct PreparedBody {
    pub bytes: Bytes,
    /// Quoted strong ETag: a hash of the bytes, so equal across replicas and restarts.
    pub etag: String,
    /// The same, ready to put in a response.
    pub etag_header: http::HeaderValue,
    pub gzip: Option<Bytes>,
    pub brotli: Option<Bytes>,
    pub zstd: Option<Bytes>,
}

impl PreparedBody {
    /// Prepares `bytes`, compressing when `compress` and the body is large enough.
    pub fn new(bytes: Vec<u8>, compress: bool) -> PreparedBody {
        let etag = etag_of(&bytes);
        let large = compress && bytes.len() >= COMPRESS_MIN_BYTES;
        // The three encoders run in parallel: a large document is compressed on every update.
        let (gzip, brotli, zstd) = if large {
            std::thread::scope(|s| {
                let g = s.spawn(|| gzip(&bytes, 6));
                let b = s.spawn(|| brotli(&bytes));
                let z = zstd::encode_all(&bytes[..], 3).expect("in-memory zstd");
                (
                    Some(Bytes::from(g.join().expect("gzip thread"))),
                    Some(Bytes::from(b.join().expect("brotli thread"))),
                    Some(Bytes::from(z)),
                )
            })
        } else {
            (None, None, None)
        };
        PreparedBody {
            etag_header: http::HeaderValue::from_str(&etag)
                .expect("a hex ETag is a valid header value"),
            etag,
            gzip,
            brotli,
            zstd,
            bytes: Bytes::from(bytes),
        }
    }

    /// The variant for an `Accept-Encoding` header, and its encoding.
    pub fn negotiate(&self, accept_encoding: Option<&str>) -> (Bytes, Encoding) {
        let accepted = accepted_encodings(accept_encoding);
        let candidates = [
            (Encoding::Zstd, &self.zstd),
            (Encoding::Brotli, &self.brotli),
            (Encoding::Gzip, &self.gzip),
        ];
        for (encoding, variant) in candidates {
            if let Some(bytes) = variant {
                if accepted.contains(&encoding) {
                    return (bytes.clone(), encoding);
                }
            }
        }
        (self.bytes.clone(), Encoding::Identity)
    }
}

/// `"<xxh3-128 hex>"`.
pub fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// Encodings a client accepts (q=0 excluded), in our order of preference.
pub fn accepted_encodings(header: Option<&str>) -> Vec<Encoding> {
    let mut out = Vec::new();
    let Some(header) = header else { return out };
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let name = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = pieces.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                == Some(0.0)
        });
        if refused {
            continue;
        }
        match name.as_str() {
            "gzip" | "x-gzip" => out.push(Encoding::Gzip),
            "br" => out.push(Encoding::Brotli),
            "zstd" => out.push(Encoding::Zstd),
            "*" => out.extend([Encoding::Gzip, Encoding::Brotli, Encoding::Zstd]),
            _ => {}
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
    fn etag_depends_only_on_bytes() {
        assert_eq!(etag_of(b"abc"), etag_of(b"abc"));
        assert_ne!(etag_of(b"abc"), etag_of(b"abd"));
    }
}
