//! Response bodies prepared once per document revision: the bytes, their ETag, and compressed
//! variants (gzip, Brotli, zstd) for bodies large enough to gain from it. Serving one is a
//! reference-count increment: `Bytes` clones share the buffer.
//!
//! Variants are made only for encodings clients ask for, then kept with the body: an idle
//! environment holds none, and a proxy whose SDKs all send `Accept-Encoding: gzip` holds only
//! gzip. A small body's variant is made by the first request that accepts its encoding (it
//! costs about what sending the body once does); a variant already made that the client
//! accepts is served before another is made. A large body's takes longer than compiling the
//! document, so no request waits for it: the first request that accepts an encoding none of the
//! variants has is served uncompressed and has the variant made in the background (deferred
//! work, one at a time); requests after that get it. A new revision of the body is compressed
//! after its swap in the encodings its predecessor was asked for
//! ([`PreparedBody::compress_like`]), so a steady client keeps getting compressed answers.
//!
//! A *packed* body ([`PreparedBody::packed`], the environment document below
//! [`ON_DEMAND_MAX_BYTES`]) is kept gzipped only: the clients that fetch documents (server-side
//! SDKs, peers) all accept gzip, and an idle proxy of a thousand environments then holds a fifth
//! of their bytes. Its uncompressed form is made when first needed and kept from then on.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

/// Bodies smaller than this are never compressed (as the Flagsmith Edge Proxy does: compression from 1,000 bytes).
pub(crate) const COMPRESS_MIN_BYTES: usize = 1000;

/// Bodies smaller than this are compressed by the request that first asks; larger ones in the
/// background (see the module documentation).
pub(crate) const ON_DEMAND_MAX_BYTES: usize = 256 * 1024;

/// Bodies larger than this get no Brotli variant. At the quality an update can afford, Brotli
/// is no smaller than gzip on multi-megabyte documents (medium bench document: 1.44 vs
/// 1.50 MiB) while costing its size in memory per environment and ~100 ms of CPU per update;
/// clients that accept `br` accept gzip too.
pub(crate) const BROTLI_MAX_BYTES: usize = 1 << 20;

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
    /// The body uncompressed: set from the start, except for a packed body (made from its gzip
    /// variant when first needed).
    plain: OnceLock<Bytes>,
    /// The uncompressed length.
    len: usize,
    /// Quoted strong ETag (a hash of the bytes, so equal across replicas and restarts), ready
    /// to put in a response; [`etag`](Self::etag) as text.
    pub etag_header: http::HeaderValue,
    variants: Variants,
}

/// The encodings variants are kept for, in order of preference (a variant's slot).
const PREFERENCE: [Encoding; 3] = [Encoding::Zstd, Encoding::Brotli, Encoding::Gzip];
const GZIP_SLOT: usize = 2;

/// How a body gets its compressed variants, and where they are kept (by slot of
/// [`PREFERENCE`]). Boxed or shared, and absent for a body never compressed: most prepared
/// bodies (one per feature and key kind) are too small to be.
#[derive(Debug)]
enum Variants {
    /// Never: too small to gain from it, or not wanted.
    None,
    /// Each made by the first request for its encoding, then kept.
    OnDemand(Box<[OnceLock<Bytes>; 3]>),
    /// Made off the request path for the encodings asked for (shared with the work making them).
    Background(Arc<BackgroundVariants>),
}

#[derive(Debug)]
struct BackgroundVariants {
    bytes: Bytes,
    made: [OnceLock<Bytes>; 3],
    /// Slots asked for (a bit per slot); a slot asked and not made is being made, or will be.
    asked: AtomicU8,
}

impl BackgroundVariants {
    /// Asks for the slots in `bits`; deferred work makes those newly asked.
    fn ask(self: &Arc<Self>, bits: u8) {
        let before = self.asked.fetch_or(bits, Ordering::AcqRel);
        if bits & !before != 0 {
            let variants = self.clone();
            crate::background::defer(move || variants.make_asked());
        }
    }

    /// Makes every variant asked for and not made yet.
    fn make_asked(&self) {
        let asked = self.asked.load(Ordering::Acquire);
        for (slot, encoding) in PREFERENCE.into_iter().enumerate() {
            if asked & (1 << slot) != 0 && self.made[slot].get().is_none() {
                let _ = self.made[slot].set(Bytes::from(encode(&self.bytes, encoding)));
            }
        }
    }
}

impl PreparedBody {
    /// Prepares `bytes`; when `compress`, variants are made as clients ask for them.
    pub fn new(bytes: impl Into<Bytes>, compress: bool) -> PreparedBody {
        let bytes: Bytes = bytes.into();
        let etag = etag_of(&bytes);
        let variants = Self::variants_for(&bytes, compress);
        PreparedBody {
            etag_header: http::HeaderValue::from_str(&etag)
                .expect("a hex ETag is a valid header value"),
            variants,
            len: bytes.len(),
            plain: OnceLock::from(bytes),
        }
    }

    /// Prepares `bytes` to be kept gzipped only (see the module documentation), when they are
    /// large enough to compress, small enough to compress now, and gain from it; otherwise as
    /// [`new`](Self::new) with compression.
    pub fn packed(bytes: impl Into<Bytes>) -> PreparedBody {
        let bytes: Bytes = bytes.into();
        if !(COMPRESS_MIN_BYTES..ON_DEMAND_MAX_BYTES).contains(&bytes.len()) {
            return Self::new(bytes, true);
        }
        let gzipped = encode(&bytes, Encoding::Gzip);
        if gzipped.len() >= bytes.len() {
            return Self::new(bytes, true);
        }
        let body = PreparedBody {
            plain: OnceLock::new(),
            ..Self::new(bytes, true)
        };
        if let Variants::OnDemand(made) = &body.variants {
            let _ = made[GZIP_SLOT].set(Bytes::from(gzipped));
        }
        body
    }

    fn variants_for(bytes: &Bytes, compress: bool) -> Variants {
        if !compress || bytes.len() < COMPRESS_MIN_BYTES {
            Variants::None
        } else if bytes.len() < ON_DEMAND_MAX_BYTES {
            Variants::OnDemand(Default::default())
        } else {
            Variants::Background(Arc::new(BackgroundVariants {
                bytes: bytes.clone(),
                made: Default::default(),
                asked: AtomicU8::new(0),
            }))
        }
    }

    /// The body uncompressed (for a packed body, made once and kept).
    pub fn bytes(&self) -> Bytes {
        self.plain.get_or_init(|| self.unpack()).clone()
    }

    /// The body uncompressed, without keeping it when it has to be made (for a one-off copy,
    /// such as a warm-start file).
    pub fn bytes_once(&self) -> Bytes {
        self.plain.get().cloned().unwrap_or_else(|| self.unpack())
    }

    /// The quoted ETag.
    pub fn etag(&self) -> &str {
        self.etag_header
            .to_str()
            .expect("made from a hex string, so visible ASCII")
    }

    /// The uncompressed length.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the body is `bytes`: compared directly when held, else by length and hash (the
    /// ETag's 128-bit hash).
    pub fn is(&self, bytes: &[u8]) -> bool {
        match self.plain.get() {
            Some(plain) => plain.as_ref() == bytes,
            None => self.len == bytes.len() && self.etag() == etag_of(bytes),
        }
    }

    /// A packed body's uncompressed form, from its gzip variant.
    fn unpack(&self) -> Bytes {
        let gzipped = self
            .variant(Encoding::Gzip)
            .expect("a body without its uncompressed form is kept gzipped");
        let mut plain = Vec::with_capacity(self.len);
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut plain)
            .expect("the body's own gzip variant decodes");
        Bytes::from(plain)
    }

    /// Asks for the variants `previous` (the same body's last revision) was asked for, so they
    /// are made now, in the background, rather than after the next request that wants one.
    pub fn compress_like(&self, previous: &PreparedBody) {
        if let (Variants::Background(this), Variants::Background(before)) =
            (&self.variants, &previous.variants)
        {
            let asked = before.asked.load(Ordering::Acquire);
            if asked != 0 {
                this.ask(asked);
            }
        }
    }

    /// The variant made for `encoding`, if any.
    pub fn variant(&self, encoding: Encoding) -> Option<Bytes> {
        let slot = PREFERENCE.iter().position(|e| *e == encoding)?;
        match &self.variants {
            Variants::None => None,
            Variants::OnDemand(made) => made[slot].get().cloned(),
            Variants::Background(variants) => variants.made[slot].get().cloned(),
        }
    }

    /// The variant for an `Accept-Encoding` header, and its encoding.
    pub fn negotiate(&self, accept_encoding: Option<&str>) -> (Bytes, Encoding) {
        match &self.variants {
            Variants::None => (self.bytes(), Encoding::Identity),
            Variants::OnDemand(made) => {
                let accepted = accepted_encodings(accept_encoding);
                let wanted = |(_, encoding): &(usize, Encoding)| accepted.contains(*encoding);
                // One already made first: each variant is kept as long as the body is served.
                for (slot, encoding) in PREFERENCE.into_iter().enumerate().filter(wanted) {
                    if let Some(variant) = made[slot].get() {
                        return (variant.clone(), encoding);
                    }
                }
                if let Some((slot, encoding)) = PREFERENCE.into_iter().enumerate().find(wanted) {
                    let variant = made[slot]
                        .get_or_init(|| Bytes::from(encode(&self.bytes_once(), encoding)));
                    return (variant.clone(), encoding);
                }
                (self.bytes(), Encoding::Identity)
            }
            Variants::Background(variants) => {
                let accepted = accepted_encodings(accept_encoding);
                let mut wanted = None;
                for (slot, encoding) in PREFERENCE.into_iter().enumerate() {
                    if !accepted.contains(encoding)
                        || (encoding == Encoding::Brotli && self.len > BROTLI_MAX_BYTES)
                    {
                        continue;
                    }
                    if let Some(variant) = variants.made[slot].get() {
                        return (variant.clone(), encoding);
                    }
                    wanted = wanted.or(Some(slot));
                }
                // None of the accepted variants is there: have the client's preferred one made
                // (only that one: each variant of a large body costs memory for as long as the
                // body is served).
                if let Some(slot) = wanted {
                    variants.ask(1 << slot);
                }
                (self.bytes(), Encoding::Identity)
            }
        }
    }
}

/// One encoding of `bytes`, at the levels the prepared variants use, sized exactly (a variant
/// is kept as long as its body; the encoders' buffers grow by doubling).
fn encode(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
    let mut encoded = encode_with_slack(bytes, encoding);
    encoded.shrink_to_fit();
    encoded
}

fn encode_with_slack(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Gzip => gzip(bytes, 6),
        Encoding::Brotli => brotli(bytes),
        Encoding::Zstd => zstd::encode_all(bytes, 3).expect("in-memory zstd"),
        Encoding::Identity => bytes.to_vec(),
    }
}

/// `"<xxh3-128 hex>"`.
pub(crate) fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// The encodings a client accepts (q=0 excluded): a set of [`Encoding`]s, without allocating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Accepted(u8);

impl Accepted {
    fn bit(encoding: Encoding) -> u8 {
        match encoding {
            Encoding::Identity => 0,
            Encoding::Gzip => 1,
            Encoding::Brotli => 2,
            Encoding::Zstd => 4,
        }
    }

    pub(crate) fn contains(self, encoding: Encoding) -> bool {
        self.0 & Self::bit(encoding) != 0
    }

    fn insert(&mut self, encoding: Encoding) {
        self.0 |= Self::bit(encoding);
    }
}

/// Parses `Accept-Encoding`.
pub(crate) fn accepted_encodings(header: Option<&str>) -> Accepted {
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
pub(crate) fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
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
    fn a_large_body_is_served_uncompressed_until_its_asked_variant_is_made() {
        // No runtime here: the deferred work runs during the request that asks.
        let body = PreparedBody::new(vec![b'a'; ON_DEMAND_MAX_BYTES], true);
        assert!(
            body.variant(Encoding::Gzip).is_none(),
            "nothing made before a request asks"
        );
        assert_eq!(body.negotiate(Some("gzip")).1, Encoding::Identity);
        assert!(body.variant(Encoding::Gzip).unwrap().len() < 5000);
        assert!(
            body.variant(Encoding::Zstd).is_none(),
            "only the asked encoding is made"
        );
        assert_eq!(body.negotiate(Some("gzip, zstd")).1, Encoding::Gzip);
        assert_eq!(body.negotiate(Some("zstd")).1, Encoding::Identity);
        assert_eq!(body.negotiate(Some("zstd, gzip")).1, Encoding::Zstd);
        // The next revision is compressed as this one was asked.
        let next = PreparedBody::new(vec![b'b'; ON_DEMAND_MAX_BYTES], true);
        next.compress_like(&body);
        assert!(next.variant(Encoding::Gzip).is_some() && next.variant(Encoding::Zstd).is_some());
        assert!(next.variant(Encoding::Brotli).is_none());
    }

    #[test]
    fn a_small_body_is_compressed_on_demand_one_encoding_at_a_time() {
        let text: Vec<u8> = (0..400)
            .flat_map(|i| format!("flag{i},").into_bytes())
            .collect();
        let body = PreparedBody::new(text.clone(), true);
        let encodings = [Encoding::Gzip, Encoding::Brotli, Encoding::Zstd];
        assert!(encodings.iter().all(|e| body.variant(*e).is_none()));
        let (gzipped, encoding) = body.negotiate(Some("gzip"));
        assert_eq!(encoding, Encoding::Gzip);
        assert!(gzipped.len() < text.len());
        assert!(body.variant(Encoding::Zstd).is_none() && body.variant(Encoding::Brotli).is_none());
        let (br, encoding) = body.negotiate(Some("br"));
        assert_eq!(encoding, Encoding::Brotli);
        let mut plain = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut plain).unwrap();
        assert_eq!(plain, text);
        // Kept: the same bytes again.
        assert_eq!(body.negotiate(Some("br")).0, br);
    }

    #[test]
    fn a_packed_body_is_kept_gzipped_and_unpacked_only_when_asked_uncompressed() {
        let text: Vec<u8> = (0..400)
            .flat_map(|i| format!("flag{i},").into_bytes())
            .collect();
        let body = PreparedBody::packed(text.clone());
        assert!(body.plain.get().is_none(), "no uncompressed copy at first");
        assert_eq!(
            (body.len(), body.etag().to_owned()),
            (text.len(), etag_of(&text))
        );
        assert!(body.is(&text) && !body.is(b"other"));
        let (gzipped, encoding) = body.negotiate(Some("gzip, br"));
        assert_eq!(
            encoding,
            Encoding::Gzip,
            "the variant it has, not a new one"
        );
        assert!(body.variant(Encoding::Brotli).is_none());
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, text);
        // A one-off copy leaves nothing behind; a client without gzip gets it kept.
        assert_eq!(body.bytes_once(), text);
        assert!(body.plain.get().is_none());
        assert_eq!(body.negotiate(Some("zstd")).1, Encoding::Zstd);
        assert!(
            body.plain.get().is_none(),
            "other variants are made from a one-off copy"
        );
        assert_eq!(
            body.negotiate(None),
            (Bytes::from(text.clone()), Encoding::Identity)
        );
        assert!(body.plain.get().is_some());
        // Too small or too large to pack: held as given.
        assert!(PreparedBody::packed(b"[]".to_vec()).plain.get().is_some());
        let large = PreparedBody::packed(vec![b'a'; ON_DEMAND_MAX_BYTES]);
        assert!(large.plain.get().is_some() && large.variant(Encoding::Gzip).is_none());
    }

    #[test]
    fn large_bodies_fall_back_from_brotli_to_gzip() {
        let body = PreparedBody::new(vec![b'a'; BROTLI_MAX_BYTES + 1], true);
        assert_eq!(body.negotiate(Some("br, gzip")).1, Encoding::Identity);
        assert!(body.variant(Encoding::Brotli).is_none());
        assert_eq!(body.negotiate(Some("br, gzip")).1, Encoding::Gzip);
        assert_eq!(body.negotiate(Some("br")).1, Encoding::Identity);
        assert!(body.variant(Encoding::Brotli).is_none());
    }

    #[test]
    fn etag_depends_only_on_bytes() {
        assert_eq!(etag_of(b"abc"), etag_of(b"abc"));
        assert_ne!(etag_of(b"abc"), etag_of(b"abd"));
    }
}
