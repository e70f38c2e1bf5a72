//! The Python reference's side of the engine bench: finding the interpreter, running
//! `python_reference.py` on the same documents and identity, and reading what it computed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use flagpole_bench::docgen;
use serde_json::Value;

use super::Outcome;

pub(crate) fn find_python(repo: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLAGPOLE_BENCH_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let venv = repo.join(".venv/bin/python");
    venv.exists().then_some(venv)
}

/// Runs python_reference.py; returns its `{"doc": ns}` map and the flags it computed.
pub(crate) fn run_python(
    python: &Path,
    script: &Path,
    docs_dir: &Path,
    names: &[&str],
    traits: &Value,
    flags_out: &Path,
) -> Result<(BTreeMap<String, f64>, Value), String> {
    let output = Command::new(python)
        .arg(script)
        .arg(docs_dir)
        .arg("--names")
        .arg(names.join(","))
        .arg("--identifier")
        .arg(docgen::BENCH_IDENTIFIER)
        .arg("--traits")
        .arg(traits.to_string())
        .arg("--min-seconds")
        .arg("1.0")
        .arg("--flags-out")
        .arg(flags_out)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("").to_string();
        return Err(format!("{} failed: {last}", python.display()));
    }
    let timings: BTreeMap<String, f64> = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("unexpected output from python_reference.py: {e}"))?;
    let flags = std::fs::read(flags_out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Ok((timings, flags))
}

pub(crate) fn python_outcome(flags: &Value, name: &str) -> Option<Outcome> {
    let doc = flags.get(name)?;
    let map = doc
        .get("flags")?
        .as_object()?
        .iter()
        .map(|(k, v)| {
            let enabled = v[0].as_bool().unwrap_or(false);
            (k.clone(), (enabled, v[1].clone()))
        })
        .collect();
    let segments = doc
        .get("segments")?
        .as_array()?
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_string())
        .collect();
    Some((map, segments))
}
