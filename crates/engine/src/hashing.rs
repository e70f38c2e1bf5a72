//! The reference's bucketing hash (`get_hashed_percentage_for_object_ids`), reproduced exactly:
//! MD5 of the ids joined with `,`, read as a big-endian 128-bit integer, `% 9999`, scaled to
//! [0, 100) in `f64`; a result of exactly 100 re-hashes with the id list repeated once more.
//!
//! Nearly every pair an evaluation hashes (`feature key,identity key`, `segment key,value`) fits
//! one 64-byte MD5 block, so that case builds the padded block on the stack and compresses it
//! directly; [`hashed_percentages`] hashes up to [`LANES`] such pairs at once (see `lanes.rs`).
//! Longer ids and the re-hash take the general path. Nothing here allocates.

mod lanes;

use md5::{Digest, Md5};

pub(crate) use lanes::LANES;

/// The divisor of the reference's `% 9999`.
const MODULUS: u64 = 9999;

/// Percentage in [0, 100) for the two ids, as the reference computes it for `[a, b]`.
pub fn hashed_percentage(a: &str, b: &str) -> f64 {
    if let Some(block) = padded_block(a, b) {
        let mut state = lanes::INIT;
        md5::block_api::compress(&mut state, &[block]);
        if let Some(p) = percentage(state) {
            return p;
        }
    }
    hashed_percentage_general(a, b)
}

/// [`hashed_percentage`] for each pair, computed together: `out[i]` for `pairs[i]`.
/// At most [`LANES`] pairs.
pub(crate) fn hashed_percentages(pairs: &[(&str, &str)], out: &mut [f64]) {
    assert!(pairs.len() <= LANES && out.len() >= pairs.len());
    // Eight lanes cost about two single hashes: fewer pairs go one by one.
    if pairs.len() <= 2 {
        for (&(a, b), out) in pairs.iter().zip(out) {
            *out = hashed_percentage(a, b);
        }
        return;
    }
    let mut words = [[0u32; LANES]; 16];
    let mut single = [false; LANES];
    for (lane, &(a, b)) in pairs.iter().enumerate() {
        match padded_block(a, b) {
            Some(block) => {
                for (i, word) in block.chunks_exact(4).enumerate() {
                    words[i][lane] = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                }
            }
            None => single[lane] = true,
        }
    }
    let state = lanes::compress(&words.map(lanes::Lanes::new)).map(|v| v.to_array());
    for (lane, &(a, b)) in pairs.iter().enumerate() {
        let lane_state = [
            state[0][lane],
            state[1][lane],
            state[2][lane],
            state[3][lane],
        ];
        out[lane] = match (single[lane], percentage(lane_state)) {
            (false, Some(p)) => p,
            _ => hashed_percentage_general(a, b),
        };
    }
}

/// `a,b` padded as MD5's only block, when it fits (at most 55 bytes).
fn padded_block(a: &str, b: &str) -> Option<[u8; 64]> {
    let len = a.len() + 1 + b.len();
    if len > 55 {
        return None;
    }
    let mut block = [0u8; 64];
    block[..a.len()].copy_from_slice(a.as_bytes());
    block[a.len()] = b',';
    block[a.len() + 1..len].copy_from_slice(b.as_bytes());
    block[len] = 0x80;
    block[56..].copy_from_slice(&((len as u64) * 8).to_le_bytes());
    Some(block)
}

/// The percentage for a finished MD5 state, or `None` when it is exactly 100 (the reference
/// then re-hashes). The digest is the state words in little-endian order; read big-endian as a
/// 128-bit `hi * 2^64 + lo`, its remainder is taken in 64-bit steps (a 128-bit division is a
/// slow library call).
fn percentage(state: [u32; 4]) -> Option<f64> {
    let mut digest = [0u8; 16];
    for (chunk, word) in digest.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    let hi = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    let lo = u64::from_be_bytes(digest[8..].try_into().expect("8 bytes"));
    // 2^64 mod 9999.
    const TWO_64: u64 = ((1u128 << 64) % MODULUS as u128) as u64;
    let rem = ((hi % MODULUS) * TWO_64 + lo % MODULUS) % MODULUS;
    // `rem / 9998 * 100` is exactly 100.0 only for rem == 9998.
    (rem != MODULUS - 1).then(|| (rem as f64 / 9998.0) * 100.0)
}

/// The reference's loop, for any length and for the re-hash.
fn hashed_percentage_general(a: &str, b: &str) -> f64 {
    let mut iterations = 1;
    loop {
        let mut hasher = Md5::new();
        for i in 0..iterations {
            if i > 0 {
                hasher.update(b",");
            }
            hasher.update(a.as_bytes());
            hasher.update(b",");
            hasher.update(b.as_bytes());
        }
        let digest = hasher.finalize();
        let n = u128::from_be_bytes(digest.into());
        let value = ((n % 9999) as f64 / 9998.0) * 100.0;
        if value != 100.0 {
            return value;
        }
        iterations += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_vectors() {
        assert_eq!(hashed_percentage("1", "2"), 26.59531906381276);
        assert_eq!(hashed_percentage("9", "10"), 57.17143428685737);
        assert_eq!(hashed_percentage("78986", "32103813"), 49.27985597119424);
        assert_eq!(
            hashed_percentage("12345", "test_env_foobar"),
            51.990398079615915
        );
        assert_eq!(hashed_percentage("seg", "ünïcödé"), 82.03640728145629);
        // m == 9998 on the first pass: re-hashed as "1,identity_4692,1,identity_4692".
        assert_eq!(hashed_percentage("1", "identity_4692"), 2.5805161032206443);
    }

    /// Every length around the one-block limit, and the batch, against the general path.
    #[test]
    fn fast_paths_equal_the_general_path() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZé";
        let mut pairs = Vec::new();
        for a_len in [0, 1, 5, 20, 27] {
            for b_len in 0..40 {
                let a = &text[..a_len];
                let b = &text[text.len() - 2 - b_len..];
                pairs.push((a, b));
            }
        }
        pairs.push(("1", "identity_4692"));
        for &(a, b) in &pairs {
            assert_eq!(
                hashed_percentage(a, b),
                hashed_percentage_general(a, b),
                "{a},{b}"
            );
        }
        for chunk in pairs.chunks(LANES) {
            let mut out = [0.0; LANES];
            hashed_percentages(chunk, &mut out);
            for (&(a, b), got) in chunk.iter().zip(out) {
                assert_eq!(got, hashed_percentage_general(a, b), "{a},{b}");
            }
        }
    }
}
