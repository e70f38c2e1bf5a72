//! `flagpole config schema` and `flagpole config reference`: the configuration's JSON Schema
//! (for editors, through `"$schema"` in `config.json`) and its reference table in Markdown
//! (docs/configuration.md is this output), both derived from the server's configuration structs.

use std::process::ExitCode;

use flagpole_server::config;

use crate::ConfigCommand;

pub(crate) fn run(command: &ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Schema => match serde_json::to_string_pretty(config::schema()) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: cannot print the schema: {e}");
                return ExitCode::FAILURE;
            }
        },
        ConfigCommand::Reference => print!("{}", config::reference()),
    }
    ExitCode::SUCCESS
}
