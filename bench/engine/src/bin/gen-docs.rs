//! `gen-docs --out DIR [--seed N] [--shape NAME:FEATURES:SEGMENTS]...`: writes the seeded
//! benchmark environment documents `tiny.json`, `small.json` and `medium.json` into DIR, or, with
//! `--shape` (repeatable), `NAME.json` of that many features and segments instead (identity
//! overrides in the proportions of `small`: 15 per feature, from a pool of 4 profiles per 5
//! features), for sweeps over document sizes.

use std::path::PathBuf;
use std::process::ExitCode;

use flagpole_bench::docgen;

const USAGE: &str = "usage: gen-docs --out DIR [--seed N] [--shape NAME:FEATURES:SEGMENTS]...";

fn main() -> ExitCode {
    let mut out: Option<PathBuf> = None;
    let mut seed = docgen::DEFAULT_SEED;
    let mut shapes: Vec<docgen::DocSize> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            "--seed" => match args.next().and_then(|s| parse_seed(&s)) {
                Some(s) => seed = s,
                None => {
                    eprintln!("gen-docs: --seed needs an integer (decimal or 0x hex)\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--shape" => match args.next().and_then(|s| parse_shape(&s)) {
                Some(shape) => shapes.push(shape),
                None => {
                    eprintln!("gen-docs: --shape needs NAME:FEATURES:SEGMENTS\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("gen-docs: unexpected argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(out) = out else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("gen-docs: cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    if shapes.is_empty() {
        shapes = docgen::ALL_SIZES.to_vec();
    }
    for size in shapes {
        let bytes = docgen::generate_json(&size, seed);
        let path = out.join(format!("{}.json", size.name));
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("gen-docs: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    ExitCode::SUCCESS
}

/// `NAME:FEATURES:SEGMENTS`, e.g. `f100s25:100:25`.
fn parse_shape(s: &str) -> Option<docgen::DocSize> {
    let mut parts = s.split(':');
    let (name, features, segments) = (parts.next()?, parts.next()?, parts.next()?);
    let features: usize = features.parse().ok()?;
    let segments: usize = segments.parse().ok()?;
    let valid = parts.next().is_none()
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && features > 0;
    valid.then(|| docgen::DocSize {
        // One leaked name per shape on the command line: a process that exits at once.
        name: Box::leak(name.to_owned().into_boxed_str()),
        features,
        segments,
        identity_overrides: 15 * features,
        override_profiles: (features * 4 / 5).max(1),
    })
}

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}
