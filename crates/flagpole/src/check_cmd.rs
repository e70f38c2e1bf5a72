//! `flagpole check [--config FILE]`: the configuration `serve` would start with, validated by
//! the same functions (load, the start plan, and `preflight::run`: every check `serve` makes
//! before it listens) without listening or fetching anything. Warnings go to stderr; the
//! effective configuration to stdout, in the file's own key names with every default, keys
//! shown as the logs show them: valid input to `serve` once the keys are put back. Exit 0 when
//! `serve` would start, 2 with `serve`'s message when not.

use std::process::ExitCode;

use flagpole_server::config::{self, Example, ServeOptions};

use crate::CheckArgs;

pub(crate) fn run(args: &CheckArgs) -> ExitCode {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let mut options = ServeOptions {
        config: args.config.clone(),
        flags: args.flags.clone(),
        ..Default::default()
    };
    args.unleash.apply(&mut options);
    match check(&options, &env) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn check(options: &ServeOptions, env: &[(String, String)]) -> Result<(), String> {
    let loaded = config::load(options.config.as_deref(), env).map_err(|e| e.to_string())?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let startup = config::start(loaded, options).map_err(|e| e.to_string())?;
    flagpole_server::preflight(&startup.config)?;
    let effective = serde_json::to_string_pretty(&config::effective(&startup.config))
        .map_err(|e| format!("cannot print the configuration: {e}"))?;
    println!("{effective}");
    let serves = match startup.plan.example {
        Example::No => {
            let envs = &startup.config.environments;
            let mut what = vec![
                count(envs.key_pairs.len(), "key pair"),
                count(envs.documents.len(), "document"),
            ];
            if envs.proxy_key.is_some() {
                what.push("environments discovered with proxy_key".into());
            }
            what.join(", ")
        }
        Example::NothingConfigured | Example::Asked => "the bundled example environment".into(),
    };
    eprintln!(
        "configuration valid (read: {}); serves {serves}",
        startup.plan.sources
    );
    Ok(())
}

fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}
