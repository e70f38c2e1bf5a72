//! Engine benchmark: evaluation per identity, Flagpole vs the official `flagsmith-flag-engine`
//! crate vs the Python reference, on the seeded documents of `flagpole_bench::docgen`.
//!
//! Run with `cargo bench -p flagpole-bench --bench engine` (or `bench/engine.sh`). Prints one
//! Markdown table and writes `bench/out/engine.json`.
//!
//! What is measured, per document (tiny, small, medium), on the same bytes and the same identity
//! (`docgen::BENCH_IDENTIFIER` with `docgen::bench_traits_json()`):
//!
//! - compile: `flagpole_engine::Environment::from_document_json` (JSON parse + mapping + compile);
//! - served: from the document's bytes to the snapshot the proxy swaps in (`served.rs`);
//! - Flagpole: `env.evaluate_varied(Some(&identity))`, what the proxy evaluates per identity
//!   (the flags that can differ from the environment's own flags; the others are copied from
//!   `/flags`), result dropped each iteration; and, in its own column, `env.evaluate`, the whole
//!   result (one `FlagResult` per feature);
//! - official: `flagsmith_flag_engine::engine::get_evaluation_result(&context)` on a context the
//!   crate's own mapper built (`environment_to_context`) with the identity added once
//!   (`add_identity_to_context`). The per-request path through the crate's API, which clones the
//!   whole context in `add_identity_to_context`, is reported separately in the JSON;
//! - Python: `bench/engine/python_reference.py` (flagsmith-flag-engine 11.1.1 through the
//!   Flagsmith Python SDK 6.3.0 mapping), run with `$FLAGPOLE_BENCH_PYTHON`, else
//!   `<repo>/.venv/bin/python` when present, else skipped;
//! - allocations: a counting global allocator (alloc, alloc_zeroed and realloc calls) over N
//!   evaluations / N. For one evaluation the allocator also logs every event; blocks still alive
//!   when `evaluate` returns (following realloc chains) are the output, the rest is overhead.
//!
//! Timings are the median of batches after warm-up; a batch is sized to ~1/8 of the budget.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use flagpole_bench::counting::Counting;
use flagpole_bench::docgen::{self, DocSize};
use flagpole_engine::python::number::PyInt;
use flagpole_engine::{Environment, Identity, Trait, TraitValue};
use flagsmith_flag_engine::engine_eval::{
    add_identity_to_context, environment_to_context, EngineEvaluationContext,
};
use flagsmith_flag_engine::identities::Trait as OfficialTrait;
use flagsmith_flag_engine::types::{FlagsmithValue, FlagsmithValueType};
use serde_json::{json, Value};

#[path = "engine/measure.rs"]
mod measure;
#[path = "engine/python.rs"]
mod python;
#[path = "engine/served.rs"]
mod served;

use measure::{allocation_split, allocations_per_call, ms_per_run, ns_per_call};
use python::{find_python, python_outcome, run_python};

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The engines

fn official_value(v: &FlagsmithValue) -> Value {
    match v.value_type {
        FlagsmithValueType::None => Value::Null,
        FlagsmithValueType::Bool => Value::Bool(v.value == "true"),
        FlagsmithValueType::String => Value::String(v.value.clone()),
        FlagsmithValueType::Integer | FlagsmithValueType::Float => {
            serde_json::from_str(&v.value).unwrap_or_else(|_| Value::String(v.value.clone()))
        }
    }
}

fn official_trait(key: &str, value: &Value) -> OfficialTrait {
    let (value_type, text) = match value {
        Value::Null => (FlagsmithValueType::None, String::new()),
        Value::Bool(b) => (FlagsmithValueType::Bool, b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            (FlagsmithValueType::Integer, n.to_string())
        }
        Value::Number(n) => (FlagsmithValueType::Float, n.to_string()),
        Value::String(s) => (FlagsmithValueType::String, s.clone()),
        other => (FlagsmithValueType::String, other.to_string()),
    };
    OfficialTrait {
        trait_key: key.to_string(),
        trait_value: FlagsmithValue {
            value_type,
            value: text,
        },
    }
}

/// The traits object as the official engine's traits.
fn official_traits(traits: &Value) -> Vec<OfficialTrait> {
    traits
        .as_object()
        .expect("traits are an object")
        .iter()
        .map(|(k, v)| official_trait(k, v))
        .collect()
}

fn flagpole_traits(traits: &Value) -> Vec<Trait<'static>> {
    traits
        .as_object()
        .expect("traits are an object")
        .iter()
        .map(|(k, v)| Trait {
            key: Cow::Owned(k.clone()),
            value: match v {
                Value::String(s) => TraitValue::Str(Cow::Owned(s.clone())),
                Value::Number(n) if n.as_i64().is_some() => {
                    TraitValue::Int(PyInt::Small(n.as_i64().unwrap()))
                }
                Value::Number(n) => TraitValue::Float(n.as_f64().unwrap()),
                Value::Bool(b) => TraitValue::Bool(*b),
                _ => TraitValue::Null,
            },
        })
        .collect()
}

fn official_compile(bytes: &[u8]) -> EngineEvaluationContext {
    let env: flagsmith_flag_engine::environments::Environment =
        serde_json::from_slice(bytes).expect("the official crate reads the document");
    environment_to_context(env)
}

/// `{flag: (enabled, value)}` and the matched segment names.
type Outcome = (BTreeMap<String, (bool, Value)>, Vec<String>);

/// Flagpole's outcome, from the varied flags merged with the own flags (checked equal to the
/// whole evaluation).
fn flagpole_outcome(env: &Environment, identity: &Identity<'_>) -> Outcome {
    let varied = env
        .evaluate_varied(Some(identity))
        .expect("the benchmark documents take the varied path")
        .expect("flagpole evaluates");
    let result = env.merge_varied(varied).expect("flagpole merges");
    assert_eq!(Ok(&result), env.evaluate(Some(identity)).as_ref());
    let flags = result
        .flags
        .iter()
        .map(|f| {
            let enabled = f.enabled.as_bool().unwrap_or(false);
            (f.key.to_string(), (enabled, f.value.clone()))
        })
        .collect();
    let segments = result
        .segments
        .iter()
        .map(|s| s.name.as_str().unwrap_or_default().to_string())
        .collect();
    (flags, segments)
}

fn official_outcome(context: &EngineEvaluationContext) -> Outcome {
    let result = flagsmith_flag_engine::engine::get_evaluation_result(context);
    let flags = result
        .flags
        .iter()
        .map(|(k, f)| (k.clone(), (f.enabled, official_value(&f.value))))
        .collect();
    let segments = result.segments.iter().map(|s| s.name.clone()).collect();
    (flags, segments)
}

/// Flags on which two outcomes differ, as printable lines.
fn differences(a_name: &str, a: &Outcome, b_name: &str, b: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let names: std::collections::BTreeSet<&String> = a.0.keys().chain(b.0.keys()).collect();
    for name in names {
        let (x, y) = (a.0.get(name), b.0.get(name));
        let same = match (x, y) {
            (Some((ea, va)), Some((eb, vb))) => ea == eb && json_eq(va, vb),
            _ => false,
        };
        if !same {
            out.push(format!(
                "{name}: {a_name} {} vs {b_name} {}",
                show(x),
                show(y)
            ));
        }
    }
    if a.1 != b.1 {
        out.push(format!(
            "segments: {a_name} {:?} vs {b_name} {:?}",
            a.1, b.1
        ));
    }
    out
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        _ => a == b,
    }
}

fn show(v: Option<&(bool, Value)>) -> String {
    match v {
        Some((enabled, value)) => format!("(enabled={enabled}, value={value})"),
        None => "(missing)".to_string(),
    }
}

struct Row {
    size: DocSize,
    bytes: usize,
    compile_ms: f64,
    served_ms: f64,
    official_compile_ms: f64,
    flagpole_ns: f64,
    flagpole_full_ns: f64,
    varied_flags: usize,
    official_ns: f64,
    official_with_identity_ns: f64,
    flagpole_allocs: f64,
    flagpole_split: Option<(u64, u64)>,
    official_allocs: f64,
    official_split: Option<(u64, u64)>,
    flags: usize,
    segments_matched: usize,
    official_disagreements: Vec<String>,
}

/// What the proxy evaluates per identity: the flags that can differ from the own flags.
fn varied<'a>(
    env: &'a Environment,
    identity: &'a Identity<'a>,
) -> flagpole_engine::VariedResult<'a> {
    env.evaluate_varied(Some(identity))
        .expect("the benchmark documents take the varied path")
        .expect("flagpole evaluates")
}

/// `FLAGPOLE_BENCH_PROFILE=<doc>:<eval|full|official|compile|served>[:N]`: only runs N evaluations
/// (`eval`: the varied flags, `full`: the whole result)
/// (or compiles, or snapshot builds) of one document, for profilers (`valgrind --tool=callgrind`,
/// `perf record`).
fn profile(spec: &str) {
    let mut parts = spec.split(':');
    let doc = parts.next().unwrap_or("medium");
    let what = parts.next().unwrap_or("eval");
    let n: u64 = parts.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let size = docgen::ALL_SIZES
        .into_iter()
        .find(|s| s.name == doc)
        .expect("FLAGPOLE_BENCH_PROFILE: unknown document");
    let bytes = docgen::generate_json(&size, docgen::DEFAULT_SEED);
    let traits_json = docgen::bench_traits_json();
    let fp_traits = flagpole_traits(&traits_json);
    let identity = Identity::new(docgen::BENCH_IDENTIFIER, &fp_traits);
    let mut started = Instant::now();
    match what {
        "compile" => {
            for _ in 0..n {
                black_box(Environment::from_document_json(black_box(&bytes)).unwrap());
            }
        }
        "served" => {
            let served = served::Served::new(&bytes);
            for _ in 0..n {
                black_box(served.build());
            }
        }
        "official" => {
            let off_traits = official_traits(&traits_json);
            let base = official_compile(&bytes);
            let context = add_identity_to_context(&base, docgen::BENCH_IDENTIFIER, &off_traits);
            started = Instant::now();
            for _ in 0..n {
                black_box(flagsmith_flag_engine::engine::get_evaluation_result(
                    black_box(&context),
                ));
            }
        }
        "full" => {
            let env = Environment::from_document_json(&bytes).unwrap();
            started = Instant::now();
            for _ in 0..n {
                black_box(env.evaluate(Some(black_box(&identity))).unwrap());
            }
        }
        _ => {
            let env = Environment::from_document_json(&bytes).unwrap();
            started = Instant::now();
            for _ in 0..n {
                black_box(varied(&env, black_box(&identity)));
            }
        }
    }
    // The loop's own time (set-up excluded for `eval`), for A/B runs of two builds.
    let per_iteration = started.elapsed().as_nanos() as f64 / n.max(1) as f64;
    eprintln!("{doc} {what}: {per_iteration:.0} ns per iteration over {n}");
}

fn main() {
    if let Ok(spec) = std::env::var("FLAGPOLE_BENCH_PROFILE") {
        profile(&spec);
        return;
    }
    // `cargo bench` passes `--bench`; a name filter is not supported (the table is one piece).
    let quick = std::env::var_os("FLAGPOLE_BENCH_QUICK").is_some();
    let budget = if quick {
        Duration::from_millis(200)
    } else {
        Duration::from_millis(1000)
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../..");
    let out_dir = manifest.join("../out");
    let docs_dir = out_dir.join("docs");
    std::fs::create_dir_all(&docs_dir).expect("create bench/out/docs");

    let traits_json = docgen::bench_traits_json();
    let fp_traits = flagpole_traits(&traits_json);
    let identity = Identity::new(docgen::BENCH_IDENTIFIER, &fp_traits);
    let off_traits = official_traits(&traits_json);

    let mut rows = Vec::new();
    for size in docgen::ALL_SIZES {
        let bytes = docgen::generate_json(&size, docgen::DEFAULT_SEED);
        std::fs::write(docs_dir.join(format!("{}.json", size.name)), &bytes)
            .expect("write benchmark document");
        eprintln!("{}: {} bytes", size.name, bytes.len());

        assert!(
            flagpole_engine::document::DocumentView::parse(&bytes).is_some(),
            "{}: the document must take the engine's fast path",
            size.name
        );
        let compile_ms = ms_per_run(budget, || {
            Environment::from_document_json(&bytes).expect("flagpole compiles the document")
        });
        let served_ms = served::Served::new(&bytes).ms(budget);
        let official_compile_ms = ms_per_run(budget, || official_compile(&bytes));

        let env = Environment::from_document_json(&bytes).unwrap();
        let base = official_compile(&bytes);
        let context = add_identity_to_context(&base, docgen::BENCH_IDENTIFIER, &off_traits);

        let fp = flagpole_outcome(&env, &identity);
        let off = official_outcome(&context);
        assert_eq!(
            fp.1.len(),
            docgen::BENCH_MATCHED_SEGMENTS,
            "{}: the benchmark identity must match exactly {} segments, got {:?}",
            size.name,
            docgen::BENCH_MATCHED_SEGMENTS,
            fp.1
        );
        let official_disagreements = differences("flagpole", &fp, "official", &off);

        let flagpole_ns = ns_per_call(budget, || varied(&env, &identity));
        let flagpole_full_ns = ns_per_call(budget, || env.evaluate(Some(&identity)));
        let varied_flags = varied(&env, &identity).flags.len();
        let official_ns = ns_per_call(budget, || {
            flagsmith_flag_engine::engine::get_evaluation_result(&context)
        });
        let official_with_identity_ns = ns_per_call(budget / 2, || {
            let ctx = add_identity_to_context(&base, docgen::BENCH_IDENTIFIER, &off_traits);
            flagsmith_flag_engine::engine::get_evaluation_result(&ctx)
        });
        eprintln!(
            "{}: compile {compile_ms:.2} ms, served {served_ms:.2} ms, flagpole {flagpole_ns:.0} ns, official {official_ns:.0} ns",
            size.name
        );

        let n = 200;
        let flagpole_allocs = allocations_per_call(n, || varied(&env, &identity));
        let flagpole_split = allocation_split(|| varied(&env, &identity));
        let official_allocs = allocations_per_call(n, || {
            flagsmith_flag_engine::engine::get_evaluation_result(&context)
        });
        let official_split =
            allocation_split(|| flagsmith_flag_engine::engine::get_evaluation_result(&context));

        rows.push(Row {
            size,
            bytes: bytes.len(),
            compile_ms,
            served_ms,
            official_compile_ms,
            flagpole_ns,
            flagpole_full_ns,
            varied_flags,
            official_ns,
            official_with_identity_ns,
            flagpole_allocs,
            flagpole_split,
            official_allocs,
            official_split,
            flags: fp.0.len(),
            segments_matched: fp.1.len(),
            official_disagreements,
        });
    }

    // Python reference.
    let names: Vec<&str> = rows.iter().map(|r| r.size.name).collect();
    let script = manifest.join("python_reference.py");
    let (python_ns, python_status, python_flags) = match find_python(&repo) {
        None => (
            BTreeMap::new(),
            "skipped (set FLAGPOLE_BENCH_PYTHON or create .venv)".to_string(),
            Value::Null,
        ),
        Some(python) => {
            eprintln!("python: running {} …", python.display());
            let flags_path = out_dir.join("python_flags.json");
            match run_python(
                &python,
                &script,
                &docs_dir,
                &names,
                &traits_json,
                &flags_path,
            ) {
                Ok((t, f)) => (t, "ok".to_string(), f),
                Err(e) => (BTreeMap::new(), format!("skipped ({e})"), Value::Null),
            }
        }
    };

    // Agreement report.
    println!();
    for row in &rows {
        let name = row.size.name;
        if row.official_disagreements.is_empty() {
            println!(
                "agreement: {name}: flagpole and official agree on enabled/value of all {} flags",
                row.flags
            );
        } else {
            println!(
                "agreement: {name}: flagpole and official DIFFER on {} item(s) (known divergences of the official crate from the Python reference):",
                row.official_disagreements.len()
            );
            for line in &row.official_disagreements {
                println!("  {line}");
            }
        }
        if let Some(py) = python_outcome(&python_flags, name) {
            let env = Environment::from_document_json(&docgen::generate_json(
                &row.size,
                docgen::DEFAULT_SEED,
            ))
            .unwrap();
            let fp = flagpole_outcome(&env, &identity);
            let diffs = differences("flagpole", &fp, "python", &py);
            if diffs.is_empty() {
                println!(
                    "agreement: {name}: flagpole and python agree on all {} flags and the {} matched segments",
                    row.flags, row.segments_matched
                );
            } else {
                println!(
                    "agreement: {name}: flagpole and python DIFFER on {} item(s):",
                    diffs.len()
                );
                for line in &diffs {
                    println!("  {line}");
                }
            }
        }
    }

    // The table.
    println!();
    println!("| document | size | compile ms | served ms | flagpole ns/eval | flags evaluated | flagpole whole result ns | official ns/eval | python ns/eval | speedup vs official | speedup vs python | allocs/eval (flagpole) | allocs/eval (official) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        let s = &row.size;
        let py = python_ns.get(s.name).copied();
        let py_cell = py.map_or("python: skipped".to_string(), |ns| format!("{ns:.0}"));
        let py_speedup = py.map_or("–".to_string(), |ns| {
            format!("{:.0}×", ns / row.flagpole_ns)
        });
        let fp_allocs = match row.flagpole_split {
            Some((total, output)) => format!(
                "{:.1} ({} excl. output)",
                row.flagpole_allocs,
                total - output
            ),
            None => format!("{:.1}", row.flagpole_allocs),
        };
        println!(
            "| {} | {} ({} features, {} segments, {} identity overrides) | {:.2} | {:.2} | {:.0} | {} of {} | {:.0} | {:.0} | {} | {:.1}× | {} | {} | {:.1} |",
            s.name,
            human_bytes(row.bytes),
            s.features,
            s.segments,
            s.identity_overrides,
            row.compile_ms,
            row.served_ms,
            row.flagpole_ns,
            row.varied_flags,
            row.flags,
            row.flagpole_full_ns,
            row.official_ns,
            py_cell,
            row.official_ns / row.flagpole_ns,
            py_speedup,
            fp_allocs,
            row.official_allocs,
        );
    }
    println!();
    println!(
        "official ns/eval = get_evaluation_result on a context with the identity already added; \
         with add_identity_to_context per evaluation (the crate's per-request API, clones the context): {}",
        rows.iter()
            .map(|r| format!("{} {:.0} ns", r.size.name, r.official_with_identity_ns))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "compile ms (official crate: serde + environment_to_context): {}",
        rows.iter()
            .map(|r| format!("{} {:.2} ms", r.size.name, r.official_compile_ms))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("python: {python_status}");

    // JSON results.
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let py = python_ns.get(r.size.name).copied();
            json!({
                "document": r.size.name,
                "bytes": r.bytes,
                "features": r.size.features,
                "segments": r.size.segments,
                "identity_overrides": r.size.identity_overrides,
                "flags_evaluated": r.flags,
                "segments_matched": r.segments_matched,
                "compile_ms": r.compile_ms,
                "served_ms": r.served_ms,
                "official_compile_ms": r.official_compile_ms,
                "flagpole_ns_per_eval": r.flagpole_ns,
                "flagpole_whole_result_ns_per_eval": r.flagpole_full_ns,
                "flags_varied": r.varied_flags,
                "official_ns_per_eval": r.official_ns,
                "official_with_add_identity_ns_per_eval": r.official_with_identity_ns,
                "python_ns_per_eval": py,
                "speedup_vs_official": r.official_ns / r.flagpole_ns,
                "speedup_vs_python": py.map(|ns| ns / r.flagpole_ns),
                "flagpole_allocs_per_eval": r.flagpole_allocs,
                "flagpole_allocs_output": r.flagpole_split.map(|(_, o)| o),
                "flagpole_allocs_excluding_output": r.flagpole_split.map(|(t, o)| t - o),
                "official_allocs_per_eval": r.official_allocs,
                "official_allocs_output": r.official_split.map(|(_, o)| o),
                "official_disagreements": r.official_disagreements,
            })
        })
        .collect();
    let report = json!({
        "benchmark": "engine: evaluation per identity",
        "seed": docgen::DEFAULT_SEED,
        "identity": {"identifier": docgen::BENCH_IDENTIFIER, "traits": traits_json},
        "python": python_status,
        "results": json_rows,
    });
    let path = out_dir.join("engine.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&report).unwrap()).expect("write engine.json");
    println!("results: bench/out/engine.json");
}

fn human_bytes(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} kB", n as f64 / 1e3)
    }
}
