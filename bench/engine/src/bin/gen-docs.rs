//! `gen-docs --out DIR [--seed N]`: writes the seeded benchmark environment documents
//! `tiny.json`, `small.json` and `medium.json` into DIR.

use std::path::PathBuf;
use std::process::ExitCode;

use flagpole_bench::docgen;

const USAGE: &str = "usage: gen-docs --out DIR [--seed N]";

fn main() -> ExitCode {
    let mut out: Option<PathBuf> = None;
    let mut seed = docgen::DEFAULT_SEED;
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
    for size in docgen::ALL_SIZES {
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

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}
