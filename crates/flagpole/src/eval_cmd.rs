//! `flagpole eval context|identity`: evaluation from the command line.
//!
//! Exit codes: 0 success; 1 the reference engine would raise for this input (one-line reason on
//! stderr); 2 the input is malformed (message names the JSON path of the bad field).

use std::borrow::Cow;
use std::io::{self, BufRead, Read, Write};
use std::process::ExitCode;

use flagpole_engine::{Diagnostic, Environment, Identity, InputError, Trait, TraitValue};
use serde_json::{json, Value};

use crate::{ContextArgs, EvalCommand, IdentityArgs};
use flagpole_server::{identity_response, KeyKind, Received, Rejected, Snapshot};

/// Why a command failed, mapped to an exit code.
enum Failure {
    /// Malformed input (exit 2).
    Input(String),
    /// The reference raises (exit 1).
    Raises(String),
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e.to_string())
    }
}

pub(crate) fn run(cmd: EvalCommand) -> ExitCode {
    let outcome = match cmd {
        EvalCommand::Context(args) => run_context(&args),
        EvalCommand::Identity(args) => run_identity(&args),
        EvalCommand::Flagd(args) => return crate::flagd_eval_cmd::run(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Raises(message)) => {
            eprintln!("evaluation error: {message}");
            ExitCode::from(1)
        }
    }
}

fn read_input(file: &str) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    let read = if file == "-" {
        io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(file).map(|b| bytes = b)
    };
    read.map_err(|e| Failure::Input(format!("cannot read {file}: {e}")))?;
    Ok(bytes)
}

fn parse_json(bytes: &[u8], what: &str) -> Result<Value, Failure> {
    serde_json::from_slice(bytes)
        .map_err(|e| Failure::Input(format!("{what}: malformed JSON: {e}")))
}

/// Rejects unknown operators unless `--lenient`.
fn check_diagnostics(diagnostics: &[Diagnostic], lenient: bool) -> Result<(), Failure> {
    match diagnostics.first() {
        Some(d) if !lenient => Err(Failure::Input(format!(
            "{d} (use --lenient to evaluate it as never matching)"
        ))),
        _ => Ok(()),
    }
}

fn run_context(args: &ContextArgs) -> Result<(), Failure> {
    if args.common.batch {
        return batch(|line| {
            let context = parse_json(line.as_bytes(), "context")?;
            let mut out = Vec::new();
            evaluate_context(&context, args.common.lenient, false, &mut out)?;
            Ok(out)
        });
    }
    let context = parse_json(&read_input(&args.file)?, "context")?;
    let mut out = Vec::new();
    evaluate_context(&context, args.common.lenient, args.common.explain, &mut out)?;
    out.push(b'\n');
    io::stdout()
        .write_all(&out)
        .map_err(|e| Failure::Input(e.to_string()))
}

fn evaluate_context(
    context: &Value,
    lenient: bool,
    explain: bool,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let (env, diagnostics) = Environment::from_context(context)?;
    check_diagnostics(&diagnostics, lenient)?;
    let raw_identity = match context.get("identity") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) if map.is_empty() => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => return Err(InputError::new("$.identity", "must be an object or null").into()),
    };
    let traits = flagpole_engine::traits_from_json(
        raw_identity.and_then(|m| m.get("traits")),
        "$.identity",
    )?;
    let identity = raw_identity.map(|map| Identity {
        identifier: map.get("identifier").map(TraitValue::from_json),
        key: map.get("key").map(TraitValue::from_json),
        traits: &traits,
        raw: Some(map),
    });
    if explain {
        let explanation =
            flagpole_engine::explain::explain(&env, identity.as_ref()).map_err(raises)?;
        out.extend_from_slice(
            flagpole_engine::explain::render_table(&env, identity.as_ref(), &explanation)
                .as_bytes(),
        );
        return Ok(());
    }
    let result = env.evaluate(identity.as_ref()).map_err(raises)?;
    result
        .write_json(out)
        .map_err(|e| Failure::Input(e.to_string()))
}

fn raises(e: flagpole_engine::EvalError) -> Failure {
    Failure::Raises(e.to_string())
}

fn run_identity(args: &IdentityArgs) -> Result<(), Failure> {
    let bytes = read_input(&args.document)?;
    // Read as the proxy reads a document, with the same errors as parsing it, mapping it and
    // compiling it one after the other.
    let received = Received::from_bytes(&bytes, None).map_err(|rejected| match rejected {
        Rejected::InvalidJson(e) => {
            Failure::Input(format!("{}: malformed JSON: {e}", args.document))
        }
        Rejected::Engine(e) => e.into(),
        other => Failure::Input(other.message("")),
    })?;
    check_diagnostics(&received.diagnostics, args.common.lenient)?;
    let snapshot = Snapshot::from_received(received, bytes, 1, false)?;
    if args.common.batch {
        return batch(|line| {
            let request = parse_json(line.as_bytes(), "request")?;
            let identifier = match request.get("identifier") {
                Some(Value::String(s)) => s.as_str(),
                _ => return Err(InputError::new("$.identifier", "must be a string").into()),
            };
            let traits = parse_traits(request.get("traits"))?;
            let key = request.get("identity_key").and_then(Value::as_str);
            let mut out = Vec::new();
            identity_body(&snapshot, identifier, &traits, key, false, &mut out)?;
            Ok(out)
        });
    }
    let identifier = args.identifier.as_deref().unwrap_or_default();
    let traits_json = match &args.traits {
        Some(text) => Some(parse_json(text.as_bytes(), "--traits")?),
        None => None,
    };
    let traits = parse_traits(traits_json.as_ref())?;
    let mut out = Vec::new();
    identity_body(
        &snapshot,
        identifier,
        &traits,
        args.identity_key.as_deref(),
        args.common.explain,
        &mut out,
    )?;
    out.push(b'\n');
    io::stdout()
        .write_all(&out)
        .map_err(|e| Failure::Input(e.to_string()))
}

fn identity_body(
    snapshot: &Snapshot,
    identifier: &str,
    traits: &[Trait<'_>],
    identity_key: Option<&str>,
    explain: bool,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let mut identity = Identity::new(identifier, traits);
    identity.key = identity_key.map(|k| TraitValue::Str(Cow::Borrowed(k)));
    if explain {
        let explanation =
            flagpole_engine::explain::explain(&snapshot.env, Some(&identity)).map_err(raises)?;
        out.extend_from_slice(
            flagpole_engine::explain::render_table(&snapshot.env, Some(&identity), &explanation)
                .as_bytes(),
        );
        return Ok(());
    }
    identity_response::evaluate_and_write(
        out,
        snapshot,
        KeyKind::Server,
        &identity,
        identifier,
        traits,
    )
    .map_err(raises)
}

/// Traits from `{"k": v}` or `[{"trait_key": k, "trait_value": v}]`; a repeated key keeps its
/// first position and its last value. Null values are kept: the SDKs' local evaluation puts them
/// in the context as they are (a JSONPath filter over the traits sees them), unlike
/// `POST /identities/`, where null means "delete this trait".
fn parse_traits(v: Option<&Value>) -> Result<Vec<Trait<'_>>, InputError> {
    fn push<'v>(traits: &mut Vec<Trait<'v>>, key: &'v str, value: &'v Value) {
        let value = TraitValue::from_json(value);
        match traits.iter_mut().find(|t| t.key == key) {
            Some(existing) => existing.value = value,
            None => traits.push(Trait {
                key: Cow::Borrowed(key),
                value,
            }),
        }
    }
    let mut traits = Vec::new();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => map.iter().for_each(|(k, v)| push(&mut traits, k, v)),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Some(key) = item.get("trait_key").and_then(Value::as_str) else {
                    return Err(InputError::new(
                        format!("$.traits[{i}].trait_key"),
                        "must be a string",
                    ));
                };
                push(
                    &mut traits,
                    key,
                    item.get("trait_value").unwrap_or(&Value::Null),
                );
            }
        }
        Some(_) => {
            return Err(InputError::new(
                "$.traits",
                "must be an object or a list of traits",
            ))
        }
    }
    if let Some(i) = traits
        .iter()
        .position(|t| matches!(t.value, TraitValue::Json(_)))
    {
        return Err(InputError::new(
            format!("$.traits[{i}].trait_value"),
            "must be a string, number, boolean or null",
        ));
    }
    Ok(traits)
}

/// Runs `f` on each line of standard input; answers `{"ok": …}` or `{"error": …}` per line.
fn batch(mut f: impl FnMut(&str) -> Result<Vec<u8>, Failure>) -> Result<(), Failure> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| Failure::Input(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let written = match f(&line) {
            Ok(body) => out
                .write_all(b"{\"ok\":")
                .and_then(|()| out.write_all(&body))
                .and_then(|()| out.write_all(b"}\n")),
            Err(Failure::Input(m) | Failure::Raises(m)) => {
                writeln!(out, "{}", json!({ "error": m }))
            }
        };
        written.map_err(|e| Failure::Input(e.to_string()))?;
    }
    out.flush().map_err(|e| Failure::Input(e.to_string()))
}
