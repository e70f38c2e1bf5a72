//! `flagpole`: the command-line entry point. A thin shell: it parses arguments, reads files and
//! hands the work to the engine (and, for `serve`, to the server).

mod eval_cmd;
mod explain_table;
mod identity_response;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "flagpole",
    version,
    about = "A Flagsmith-compatible feature-flag edge proxy and evaluator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate flags locally, exactly as the Flagsmith engine would.
    #[command(subcommand)]
    Eval(EvalCommand),
}

#[derive(Subcommand)]
pub(crate) enum EvalCommand {
    /// Evaluate one engine evaluation context and print the engine's result JSON.
    Context(ContextArgs),
    /// Evaluate an identity against an environment document and print the `/api/v1/identities` body.
    Identity(IdentityArgs),
}

#[derive(Args)]
pub(crate) struct CommonArgs {
    /// Print a table explaining each flag's value instead of JSON.
    #[arg(long)]
    pub explain: bool,
    /// Read JSON Lines on standard input and answer each line with `{"ok": …}` or `{"error": …}`.
    #[arg(long)]
    pub batch: bool,
    /// Evaluate unknown operators as never matching (as the reference does) instead of rejecting
    /// the input.
    #[arg(long)]
    pub lenient: bool,
}

#[derive(Args)]
pub(crate) struct ContextArgs {
    /// The context file, or `-` for standard input.
    #[arg(default_value = "-")]
    pub file: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args)]
pub(crate) struct IdentityArgs {
    /// The environment document (as served by `/api/v1/environment-document/`).
    #[arg(long)]
    pub document: String,
    /// The identity's identifier.
    #[arg(long, required_unless_present = "batch")]
    pub identifier: Option<String>,
    /// Traits as a JSON object (`{"plan": "pro"}`) or a list of `{"trait_key", "trait_value"}`.
    #[arg(long)]
    pub traits: Option<String>,
    /// The hashing key used for percentage splits and variants (default `<api_key>_<identifier>`).
    #[arg(long)]
    pub identity_key: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Eval(cmd) => eval_cmd::run(cmd),
    }
}
