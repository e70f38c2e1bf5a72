//! The reference's bucketing hash (`get_hashed_percentage_for_object_ids`), reproduced exactly:
//! MD5 of the ids joined with `,`, read as a big-endian 128-bit integer, `% 9999`, scaled to
//! [0, 100) in `f64`; a result of exactly 100 re-hashes with the id list repeated once more.
//! Ids are fed to the hasher piecewise, so hashing allocates nothing.

use md5::{Digest, Md5};

/// Percentage in [0, 100) for the two ids, as the reference computes it for `[a, b]`.
pub fn hashed_percentage(a: &str, b: &str) -> f64 {
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
}
