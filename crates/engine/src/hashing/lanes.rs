//! MD5 of up to [`LANES`] independent one-block messages at once.
//!
//! An evaluation hashes one `feature key,identity key` pair per multivariate flag (a medium
//! document: ~40 per request), and MD5 was the largest single cost of an evaluation. One MD5
//! block is a chain of 64 dependent steps, so a single hash cannot use the CPU's width; several
//! independent hashes can: the steps below run on `wide`'s 8-lane vectors (two SSE2 registers
//! on any x86-64 CPU, one AVX2 register when built for one), so eight messages cost about as
//! much as one or two. No maintained crate offers a multi-message MD5 (the RustCrypto crate
//! hashes one stream); that crate remains the reference in the tests.

use wide::u32x8;

/// Messages hashed together.
pub(crate) const LANES: usize = 8;

/// One value per lane.
pub(crate) type Lanes = u32x8;

/// `floor(abs(sin(i + 1)) * 2^32)`, the MD5 step constants (RFC 1321).
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/// The MD5 initial state.
pub(crate) const INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

/// One MD5 step for every lane: `a = b + rotl(a + f(b, c, d) + k + w, s)`.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "the MD5 step as the specification writes it: state words, message word, constant, shift, round function"
)]
fn step(
    a: &mut Lanes,
    b: Lanes,
    c: Lanes,
    d: Lanes,
    w: Lanes,
    k: u32,
    s: u32,
    f: fn(Lanes, Lanes, Lanes) -> Lanes,
) {
    let t = *a + f(b, c, d) + u32x8::splat(k) + w;
    *a = b + ((t << s) | (t >> (32 - s)));
}

/// Compresses one block per lane, from the initial state. `words[i]` holds every lane's message
/// word `i` (little-endian, as MD5 reads it). Returns the state words, each for every lane.
pub(crate) fn compress(words: &[Lanes; 16]) -> [Lanes; 4] {
    let [mut a, mut b, mut c, mut d] = INIT.map(u32x8::splat);
    let f: fn(Lanes, Lanes, Lanes) -> Lanes = |x, y, z| (x & y) | (!x & z);
    let g: fn(Lanes, Lanes, Lanes) -> Lanes = |x, y, z| (x & z) | (y & !z);
    let h: fn(Lanes, Lanes, Lanes) -> Lanes = |x, y, z| x ^ y ^ z;
    let i: fn(Lanes, Lanes, Lanes) -> Lanes = |x, y, z| y ^ (x | !z);
    // Four rounds of 16 steps; the roles of a, b, c, d rotate every step.
    for r in 0..4 {
        let s = [7, 12, 17, 22];
        let i0 = r * 4;
        step(&mut a, b, c, d, words[i0], K[i0], s[0], f);
        step(&mut d, a, b, c, words[i0 + 1], K[i0 + 1], s[1], f);
        step(&mut c, d, a, b, words[i0 + 2], K[i0 + 2], s[2], f);
        step(&mut b, c, d, a, words[i0 + 3], K[i0 + 3], s[3], f);
    }
    for r in 0..4 {
        let s = [5, 9, 14, 20];
        let i0 = 16 + r * 4;
        let w = |j: usize| words[(5 * j + 1) % 16];
        step(&mut a, b, c, d, w(i0), K[i0], s[0], g);
        step(&mut d, a, b, c, w(i0 + 1), K[i0 + 1], s[1], g);
        step(&mut c, d, a, b, w(i0 + 2), K[i0 + 2], s[2], g);
        step(&mut b, c, d, a, w(i0 + 3), K[i0 + 3], s[3], g);
    }
    for r in 0..4 {
        let s = [4, 11, 16, 23];
        let i0 = 32 + r * 4;
        let w = |j: usize| words[(3 * j + 5) % 16];
        step(&mut a, b, c, d, w(i0), K[i0], s[0], h);
        step(&mut d, a, b, c, w(i0 + 1), K[i0 + 1], s[1], h);
        step(&mut c, d, a, b, w(i0 + 2), K[i0 + 2], s[2], h);
        step(&mut b, c, d, a, w(i0 + 3), K[i0 + 3], s[3], h);
    }
    for r in 0..4 {
        let s = [6, 10, 15, 21];
        let i0 = 48 + r * 4;
        let w = |j: usize| words[(7 * j) % 16];
        step(&mut a, b, c, d, w(i0), K[i0], s[0], i);
        step(&mut d, a, b, c, w(i0 + 1), K[i0 + 1], s[1], i);
        step(&mut c, d, a, b, w(i0 + 2), K[i0 + 2], s[2], i);
        step(&mut b, c, d, a, w(i0 + 3), K[i0 + 3], s[3], i);
    }
    let init = INIT.map(u32x8::splat);
    [a + init[0], b + init[1], c + init[2], d + init[3]]
}
