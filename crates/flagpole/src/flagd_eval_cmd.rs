//! `flagpole eval flagd`: flags of a flagd flag file evaluated by the flagd engine, one answer
//! per flag and context, as JSON. The differential test drives the batch mode against flagd's
//! reference evaluator; a person uses the one-shot form to see why a flag answers what it does.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use flagpole_flagd::{Context, Evaluation, FlagSet};
use serde_json::{json, Map, Value};

use crate::FlagdArgs;

pub(crate) fn run(args: &FlagdArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.flags) {
        Ok(text) => text,
        Err(e) => return fail(&format!("{}: {e}", args.flags)),
    };
    let set = match FlagSet::from_json(&text) {
        Ok(set) => set,
        Err(e) => return fail(&format!("{}: {e}", args.flags)),
    };
    let now = args.now.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    if args.batch {
        return batch(&set, now);
    }
    let context = match args.context.as_deref().map(serde_json::from_str::<Value>) {
        None => Map::new(),
        Some(Ok(Value::Object(map))) => map,
        Some(Ok(_)) => return fail("--context: must be a JSON object"),
        Some(Err(e)) => return fail(&format!("--context: not JSON: {e}")),
    };
    let key = args.flag.as_deref().unwrap_or_default();
    let answer = answer(key, &set.evaluate(key, &Context::new(&context, now)));
    println!("{answer}");
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn batch(set: &FlagSet, now: u64) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let empty = Map::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let Ok(line) = line else {
            return fail("standard input is not UTF-8 text");
        };
        if line.trim().is_empty() {
            continue;
        }
        let written = match serde_json::from_str::<Value>(&line) {
            Ok(request) => {
                let key = request
                    .get("flag")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let context = request
                    .get("context")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                writeln!(
                    out,
                    "{}",
                    answer(key, &set.evaluate(key, &Context::new(context, now)))
                )
            }
            Err(e) => writeln!(
                out,
                "{}",
                json!({"error": format!("line {}: not JSON: {e}", n + 1)})
            ),
        };
        if written.is_err() {
            return ExitCode::from(1);
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `{"key", "value"?, "variant"?, "reason", "errorCode"?, "errorMessage"?, "metadata"}`.
fn answer(key: &str, evaluation: &Evaluation<'_>) -> Value {
    let mut out = Map::new();
    out.insert("key".into(), key.into());
    if let Some(value) = evaluation.value {
        out.insert("value".into(), value.clone());
    }
    if let Some(variant) = evaluation.variant {
        out.insert("variant".into(), variant.into());
    }
    out.insert("reason".into(), evaluation.reason.as_str().into());
    if let Some((code, message)) = &evaluation.error {
        out.insert("errorCode".into(), code.as_str().into());
        out.insert("errorMessage".into(), message.as_str().into());
    }
    out.insert(
        "metadata".into(),
        Value::Object(evaluation.metadata.clone()),
    );
    Value::Object(out)
}
