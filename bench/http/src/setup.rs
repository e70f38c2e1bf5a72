//! What the drivers set up alike: the seeded documents (`bench/out/docs`, written by the
//! engine bench's generator) under the keys every driver serves them with, and a Flagpole
//! started on a configuration that names them, waited for until it serves each one.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::args::Places;
use crate::net::wait_serving;
use crate::procs::{command, spawn, Proc};

/// A seeded document: its file, size and the keys it is served under.
pub struct Doc {
    pub name: String,
    pub path: PathBuf,
    pub bytes: usize,
    pub client_key: String,
    pub server_key: String,
}

/// `<dir>/<name>.json`: its client key is its `api_key`, its server key `ser.bench-<name>`.
pub fn load_doc(dir: &Path, name: &str) -> Doc {
    let path = std::fs::canonicalize(dir.join(format!("{name}.json")))
        .unwrap_or_else(|e| panic!("document {name}: {e}"));
    let bytes = std::fs::read(&path).expect("read document");
    let v: Value = serde_json::from_slice(&bytes).expect("document JSON");
    Doc {
        name: name.to_owned(),
        client_key: v["api_key"].as_str().expect("api_key").to_owned(),
        server_key: format!("ser.bench-{name}"),
        path,
        bytes: bytes.len(),
    }
}

/// The documents named, in that order, from `dir`.
pub fn load_docs(dir: &Path, names: &[String]) -> Vec<Doc> {
    names.iter().map(|name| load_doc(dir, name)).collect()
}

/// The configuration's `environment_key_pairs` for `docs`.
pub fn key_pairs<'a>(docs: impl IntoIterator<Item = &'a Doc>) -> Value {
    docs.into_iter()
        .map(|d| json!({"server_side_key": d.server_key, "client_side_key": d.client_key}))
        .collect()
}

/// The configuration's `flagpole.documents` serving `docs` as local files.
pub fn local_documents<'a>(docs: impl IntoIterator<Item = &'a Doc>) -> Value {
    docs.into_iter().map(|d| json!({"path": d.path})).collect()
}

/// `flagpole serve` (from the binaries' directory, pinned to `cpu` if given) on `config`,
/// written as `config-<label>.json` in the work directory (its log: `flagpole-<label>.log`);
/// returns once the process, listening on `port` (the config's), serves every one of `docs`.
pub fn start_flagpole(
    places: &Places,
    label: &str,
    cpu: Option<usize>,
    config: &Value,
    port: u16,
    docs: &[&Doc],
) -> Proc {
    let path = places.work.join(format!("config-{label}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(config).unwrap()).expect("write config");
    let path = path.to_string_lossy().into_owned();
    let p = spawn(
        &format!("flagpole ({label})"),
        command(
            cpu,
            &places.bin_dir.join("flagpole"),
            &["serve", "--config", &path],
        ),
        &places.work.join(format!("flagpole-{label}.log")),
    );
    for d in docs {
        wait_serving(port, &d.name, &d.client_key);
    }
    p
}
