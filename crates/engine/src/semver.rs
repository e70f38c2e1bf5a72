//! Strict SemVer parsing and ordering exactly as the reference's `semver`
//! package (3.1.1) does it: `Version.parse(s)` and `Version.compare`.
//!
//! Hand-rolled because the reference's `:semver` comparisons depend on that
//! library's Python-level rules rather than on any Rust crate's: the grammar
//! is the strict `major.minor.patch[-pre][+build]` regex compiled with
//! `re.ASCII` and anchored with `\Z` (so a trailing newline is rejected, and
//! only ASCII digits count), numbers are arbitrary-precision Python ints, and
//! prereleases are ordered by `_nat_cmp` (numeric identifiers by value and
//! before alphanumeric ones, which compare as code point strings; a shorter
//! identifier list sorts first when all shared identifiers are equal). Build
//! metadata is ignored when comparing.

use std::borrow::Cow;
use std::cmp::Ordering;

/// A parsed version. Numeric parts are kept as their (canonical, no leading
/// zero) ASCII digit strings so arbitrarily large values compare exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SemVer<'a> {
    pub major: Cow<'a, str>,
    pub minor: Cow<'a, str>,
    pub patch: Cow<'a, str>,
    pub prerelease: Option<Cow<'a, str>>,
    pub build: Option<Cow<'a, str>>,
}

impl SemVer<'_> {
    /// An owned copy, for versions kept in a compiled condition.
    pub fn into_owned(self) -> SemVer<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        SemVer {
            major: own(self.major),
            minor: own(self.minor),
            patch: own(self.patch),
            prerelease: self.prerelease.map(own),
            build: self.build.map(own),
        }
    }
}

/// `semver.Version.parse(s)`; `None` where it raises `ValueError`.
pub fn parse(s: &str) -> Option<SemVer<'_>> {
    let (core, build) = match s.split_once('+') {
        Some((core, build)) => (core, Some(build)),
        None => (s, None),
    };
    let (nums, prerelease) = match core.split_once('-') {
        Some((nums, pre)) => (nums, Some(pre)),
        None => (core, None),
    };
    let mut parts = nums.split('.');
    let major = parts.next().filter(|p| is_numeric_identifier(p))?;
    let minor = parts.next().filter(|p| is_numeric_identifier(p))?;
    let patch = parts.next().filter(|p| is_numeric_identifier(p))?;
    if parts.next().is_some() {
        return None;
    }
    if let Some(pre) = prerelease {
        if !pre.split('.').all(is_prerelease_identifier) {
            return None;
        }
    }
    if let Some(build) = build {
        if !build.split('.').all(is_build_identifier) {
            return None;
        }
    }
    Some(SemVer {
        major: Cow::Borrowed(major),
        minor: Cow::Borrowed(minor),
        patch: Cow::Borrowed(patch),
        prerelease: prerelease.map(Cow::Borrowed),
        build: build.map(Cow::Borrowed),
    })
}

/// `0|[1-9]\d*` with ASCII `\d`.
fn is_numeric_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

/// `0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*`.
fn is_prerelease_identifier(s: &str) -> bool {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        is_numeric_identifier(s)
    } else {
        is_build_identifier(s)
    }
}

/// `[0-9a-zA-Z-]+`.
fn is_build_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Compare two non-negative decimal digit strings by value.
fn cmp_digits(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// `Version._nat_cmp`: each identifier keys as `(0, len, digits)` when it is
/// all digits, else `(1, 0, identifier)`; keys compare pairwise, then the
/// number of identifiers decides. A missing prerelease is the single
/// identifier `""`.
fn nat_cmp(a: Option<&str>, b: Option<&str>) -> Ordering {
    let (a, b) = (a.unwrap_or(""), b.unwrap_or(""));
    for (x, y) in a.split('.').zip(b.split('.')) {
        let x_num = !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        let y_num = !y.is_empty() && y.bytes().all(|c| c.is_ascii_digit());
        let ord = match (x_num, y_num) {
            (true, true) => cmp_digits(x, y),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.split('.').count().cmp(&b.split('.').count())
}

/// `Version.compare`: major, minor, patch numerically, then prerelease (a
/// version without one is greater); build metadata is ignored.
pub fn compare(a: &SemVer<'_>, b: &SemVer<'_>) -> Ordering {
    let core = cmp_digits(&a.major, &b.major)
        .then_with(|| cmp_digits(&a.minor, &b.minor))
        .then_with(|| cmp_digits(&a.patch, &b.patch));
    if core != Ordering::Equal {
        return core;
    }
    let (rc1, rc2) = (a.prerelease.as_deref(), b.prerelease.as_deref());
    let rccmp = nat_cmp(rc1, rc2);
    if rccmp == Ordering::Equal {
        return Ordering::Equal;
    }
    // `if not rc1` / `if not rc2` (a parsed prerelease is never empty).
    if rc1.is_none_or(str::is_empty) {
        return Ordering::Greater;
    }
    if rc2.is_none_or(str::is_empty) {
        return Ordering::Less;
    }
    rccmp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_vectors() {
        // (input, Some((prerelease, build)) or None) from semver 3.1.1.
        type Parsed = Option<(Option<&'static str>, Option<&'static str>)>;
        let cases: &[(&str, Parsed)] = &[
            ("1.2.3", Some((None, None))),
            ("0.0.0", Some((None, None))),
            ("1.2.3-0a", Some((Some("0a"), None))),
            ("1.2.3-0", Some((Some("0"), None))),
            ("1.2.3+01", Some((None, Some("01")))),
            (
                "1.2.3-alpha.1+build.5",
                Some((Some("alpha.1"), Some("build.5"))),
            ),
            ("1.2.3-a-b--c", Some((Some("a-b--c"), None))),
            ("1.2.3--", Some((Some("-"), None))),
            ("1.2.3-a+b-c.d", Some((Some("a"), Some("b-c.d")))),
            ("99999999999999999999999.0.0", Some((None, None))),
            ("1.2.3+-", Some((None, Some("-")))),
            ("1.2.3--1", Some((Some("-1"), None))),
        ];
        for (s, want) in cases {
            let got = parse(s).map(|v| {
                (
                    v.prerelease.map(Cow::into_owned),
                    v.build.map(Cow::into_owned),
                )
            });
            let want = want.map(|(p, b)| (p.map(String::from), b.map(String::from)));
            assert_eq!(got, want, "{s:?}");
        }
        let bad = [
            "1.2.3\n",
            "1.2.3 ",
            " 1.2.3",
            "01.2.3",
            "1.02.3",
            "1.2.03",
            "1.2",
            "1",
            "1.2.3.4",
            "1.2.3-",
            "1.2.3+",
            "1.2.3-01",
            "1.2.3-00",
            "1.2.3-a..b",
            "1.2.3-.a",
            "1.2.3-a.",
            "1.2.3+a..b",
            "1.2.3-+b",
            "1.2.3+b+c",
            "v1.2.3",
            "1.2.3-\u{ff41}",
            "\u{661}.2.3",
            "1.2.3-rc.1:semver",
            "1.2.3-\u{e9}",
            "1.2.3_4",
            "1.2.3-a_b",
            "",
            "1..3",
        ];
        for s in bad {
            assert_eq!(parse(s), None, "{s:?}");
        }
        let v = parse("10.20.30").unwrap();
        assert_eq!(
            (v.major.as_ref(), v.minor.as_ref(), v.patch.as_ref()),
            ("10", "20", "30")
        );
    }

    #[test]
    fn compare_matrix() {
        // EXPECTED[i][j] is the sign of VERSIONS[i].compare(VERSIONS[j]).
        const VERSIONS: &[&str] = &[
            "1.0.0",
            "1.0.0+b",
            "1.0.0+a.1",
            "2.0.0",
            "1.10.0",
            "1.9.0",
            "1.0.10",
            "1.0.9",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0-rc.1+x",
            "1.0.0-1",
            "1.0.0-2",
            "1.0.0-10",
            "1.0.0-0",
            "1.0.0-a",
            "1.0.0-A",
            "1.0.0--",
            "1.0.0-0a",
            "1.0.0-1.2.3",
            "1.0.0-1.2",
            "1.0.0-99999999999999999999999",
            "1.0.0-100000000000000000000000",
            "99999999999999999999999.0.0",
            "100000000000000000000000.0.0",
            "0.0.0",
            "1.0.0-alpha.-",
            "1.0.0-alpha.0",
        ];
        const EXPECTED: &[&str] = &[
            "===<<<<<>>>>>>>>>>>>>>>>>>>><<>>>",
            "===<<<<<>>>>>>>>>>>>>>>>>>>><<>>>",
            "===<<<<<>>>>>>>>>>>>>>>>>>>><<>>>",
            ">>>=>>>>>>>>>>>>>>>>>>>>>>>><<>>>",
            ">>><=>>>>>>>>>>>>>>>>>>>>>>><<>>>",
            ">>><<=>>>>>>>>>>>>>>>>>>>>>><<>>>",
            ">>><<<=>>>>>>>>>>>>>>>>>>>>><<>>>",
            ">>><<<<=>>>>>>>>>>>>>>>>>>>><<>>>",
            "<<<<<<<<=<<<<<<<>>>>>>>>>>>><<><<",
            "<<<<<<<<>=<<<<<<>>>>>>>>>>>><<><>",
            "<<<<<<<<>>=<<<<<>>>>>>>>>>>><<>>>",
            "<<<<<<<<>>>=<<<<>>>>>>>>>>>><<>>>",
            "<<<<<<<<>>>>=<<<>>>>>>>>>>>><<>>>",
            "<<<<<<<<>>>>>=<<>>>>>>>>>>>><<>>>",
            "<<<<<<<<>>>>>>==>>>>>>>>>>>><<>>>",
            "<<<<<<<<>>>>>>==>>>>>>>>>>>><<>>>",
            "<<<<<<<<<<<<<<<<=<<><<<<<<<<<<><<",
            "<<<<<<<<<<<<<<<<>=<><<<<>><<<<><<",
            "<<<<<<<<<<<<<<<<>>=><<<<>><<<<><<",
            "<<<<<<<<<<<<<<<<<<<=<<<<<<<<<<><<",
            "<<<<<<<<<<<<<<<<>>>>=>>>>>>><<><<",
            "<<<<<<<<<<<<<<<<>>>><=>>>>>><<><<",
            "<<<<<<<<<<<<<<<<>>>><<=<>>>><<><<",
            "<<<<<<<<<<<<<<<<>>>><<>=>>>><<><<",
            "<<<<<<<<<<<<<<<<><<><<<<=><<<<><<",
            "<<<<<<<<<<<<<<<<><<><<<<<=<<<<><<",
            "<<<<<<<<<<<<<<<<>>>><<<<>>=<<<><<",
            "<<<<<<<<<<<<<<<<>>>><<<<>>>=<<><<",
            ">>>>>>>>>>>>>>>>>>>>>>>>>>>>=<>>>",
            ">>>>>>>>>>>>>>>>>>>>>>>>>>>>>=>>>",
            "<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<=<<",
            "<<<<<<<<>><<<<<<>>>>>>>>>>>><<>=>",
            "<<<<<<<<><<<<<<<>>>>>>>>>>>><<><=",
        ];
        for (i, a) in VERSIONS.iter().enumerate() {
            let va = parse(a).unwrap();
            for (j, b) in VERSIONS.iter().enumerate() {
                let want = match EXPECTED[i].as_bytes()[j] {
                    b'<' => Ordering::Less,
                    b'=' => Ordering::Equal,
                    _ => Ordering::Greater,
                };
                assert_eq!(compare(&va, &parse(b).unwrap()), want, "{a} vs {b}");
            }
        }
    }
}
