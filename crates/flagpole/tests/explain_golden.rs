//! Golden tests of `flagpole eval identity --explain`: the whole text, compared byte for byte
//! with files under `tests/golden/explain/`, for a small document (`document.json`) holding a
//! trait-matched segment, a percentage-split segment, a multivariate feature and an identity
//! override. The text is what people read, so any change to it should be seen in a diff.
//!
//! After an intended change, rewrite the expected files and review the diff:
//!
//! ```sh
//! FLAGPOLE_UPDATE_GOLDEN=1 cargo test -p flagpole --test explain_golden
//! git diff crates/flagpole/tests/golden
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_flagpole");

/// (expected file, identifier, traits as JSON). Buckets are fixed by the hash of the keys, so
/// each case stays where it is described.
const CASES: &[(&str, &str, &str)] = &[
    // Matches the trait segment and the 25 % split; multivariate option "grid".
    ("in_split_trait_match", "user-12", r#"{"plan": "pro"}"#),
    // Fails the trait condition (saw "free") and the split (its bucket); option "list"; an
    // identity override decides `greeting`.
    (
        "identity_override",
        "vip",
        r#"{"plan": "free", "seats": 3}"#,
    ),
    // No traits; outside the split; past both multivariate options: the control value.
    ("control_value", "user-2", "{}"),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/explain")
}

fn explain(identifier: &str, traits: &str) -> String {
    let document = golden_dir().join("document.json");
    let out = Command::new(BIN)
        .args(["eval", "identity", "--document"])
        .arg(&document)
        .args(["--identifier", identifier, "--traits", traits, "--explain"])
        .output()
        .expect("run flagpole");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn explain_output_matches_the_golden_files() {
    let update = std::env::var_os("FLAGPOLE_UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for (name, identifier, traits) in CASES {
        let path = golden_dir().join(format!("{name}.txt"));
        let got = explain(identifier, traits);
        if update {
            std::fs::write(&path, &got).expect("write golden file");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            mismatches.push(format!(
                "{}:\n--- expected\n{want}\n--- got\n{got}",
                path.display()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "explain output changed (if intended: FLAGPOLE_UPDATE_GOLDEN=1 cargo test -p flagpole \
         --test explain_golden, then review the diff):\n{}",
        mismatches.join("\n")
    );
}

/// Outside the flag table (whose columns are padded to line up), words are separated by one
/// space; a percentage split shows its percentage and a bucket, never the raw hashing key.
#[test]
fn explain_text_reads_cleanly() {
    for (_, identifier, traits) in CASES {
        let text = explain(identifier, traits);
        let table_end = text.find("\nSEGMENTS").expect("a SEGMENTS section");
        let (head, segments) = text.split_at(table_end);
        let prose = head.lines().take_while(|l| !l.starts_with("FLAG "));
        for line in prose.chain(segments.lines()) {
            assert!(
                !line.trim_start().contains("  "),
                "double space in {line:?}"
            );
        }
        assert!(
            !text.contains("golden_client_key_"),
            "a raw identity key is shown:\n{text}"
        );
        assert!(text.contains("bucket "), "no bucket shown:\n{text}");
    }
}
