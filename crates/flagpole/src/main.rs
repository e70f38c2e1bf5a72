//! `flagpole`: the command-line entry point. A thin shell: it parses arguments, reads files and
//! hands the work to the engine (and, for `serve`, to the server).

mod allocator;
mod check_cmd;
mod config_cmd;
mod eval_cmd;
mod flagd_eval_cmd;
mod health_cmd;

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
    /// Run the proxy: a drop-in Flagsmith Edge Proxy (the bundled example when nothing is configured).
    Serve(ServeArgs),
    /// Load and validate the configuration as `serve` would (every check before it listens), and
    /// print the effective configuration in the file's key names (keys redacted): exit 0 when
    /// `serve` would start, 2 when not.
    Check(CheckArgs),
    /// The configuration's JSON Schema and reference.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Evaluate flags locally, exactly as the Flagsmith engine would.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Probe whether a running proxy can serve: exit 0 on 200, 1 otherwise (for Docker
    /// HEALTHCHECK).
    Health(HealthArgs),
}

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The configuration file (default: $CONFIG_PATH, else ./config.json if present).
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Serve an environment document from this file (repeatable); reloaded when it changes.
    #[arg(long)]
    pub document: Vec<std::path::PathBuf>,
    /// Serve a flagd flag-definition file (repeatable; later files win on a key, as flagd
    /// merges sources); keyless to the OpenFeature doors, reloaded when it changes.
    #[arg(long)]
    pub flags: Vec<String>,
    #[command(flatten)]
    pub unleash: UnleashArgs,
    /// Address to listen on (overrides server.host).
    #[arg(long)]
    pub host: Option<String>,
    /// Port to listen on (overrides server.port; 0 picks a free port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Also serve the bundled example environment (its keys are public), whatever else is
    /// configured.
    #[arg(long)]
    pub example: bool,
}

/// The Unleash edge's options, the same for `serve` and `check`.
#[derive(Args)]
pub(crate) struct UnleashArgs {
    /// Serve Unleash toggles from a client-features file (Unleash's `/api/client/features`
    /// body; repeatable, later files win on a name), as Unleash Edge's offline mode does;
    /// reloaded when it changes.
    #[arg(long)]
    pub unleash_features: Vec<std::path::PathBuf>,
    /// Serve Unleash toggles from an Unleash server (its base URL, without `/api`, as Unleash
    /// Edge's --upstream-url): its client API is polled with each client token.
    #[arg(long, value_name = "URL")]
    pub unleash_upstream: Option<String>,
    /// An Unleash client token (`project:environment.secret`) accepted on `/api/client/*`
    /// and, with an upstream, polled with (repeatable).
    #[arg(long)]
    pub unleash_client_token: Vec<String>,
    /// An Unleash frontend token accepted on `/api/frontend` and `/api/proxy` (repeatable).
    #[arg(long)]
    pub unleash_frontend_token: Vec<String>,
    /// Seconds between two fetches of one client token's features from the upstream
    /// [default: 15].
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub unleash_refresh_interval: Option<std::time::Duration>,
    /// Seconds between two forwardings of SDK registrations and metrics to the upstream
    /// [default: 60].
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub unleash_metrics_interval: Option<std::time::Duration>,
}

impl UnleashArgs {
    /// The options of the server's start these set.
    pub(crate) fn apply(&self, options: &mut flagpole_server::ServeOptions) {
        options.unleash_features = self.unleash_features.clone();
        options.unleash_upstream = self.unleash_upstream.clone();
        options.unleash_client_tokens = self.unleash_client_token.clone();
        options.unleash_frontend_tokens = self.unleash_frontend_token.clone();
        options.unleash_refresh_interval = self.unleash_refresh_interval;
        options.unleash_metrics_interval = self.unleash_metrics_interval;
    }
}

/// A positive number of seconds (fractions allowed).
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{text:?} is not a positive number of seconds"))
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// The configuration file (default: $CONFIG_PATH, else ./config.json if present).
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// A flagd flag file `serve --flags` would serve (repeatable): compiled, or exit 2 naming
    /// the file and the JSON path of the fault.
    #[arg(long)]
    pub flags: Vec<String>,
    #[command(flatten)]
    pub unleash: UnleashArgs,
}

#[derive(Args)]
pub(crate) struct HealthArgs {
    /// A base URL (`http://127.0.0.1:8000`: the probe's path is added) or a full URL
    /// [default: http://127.0.0.1:<port>/proxy/health/serving, the port from the configuration
    /// `serve` reads ($CONFIG_PATH or ./config.json, $SERVER), else 8000]
    #[arg(long)]
    pub url: Option<String>,
    /// Probe the Edge Proxy's readiness (`/proxy/health/readiness`: not ready once a document is
    /// stale) instead of whether the proxy can serve (`/proxy/health/serving`: every environment
    /// has a document, stale or not).
    #[arg(long)]
    pub strict: bool,
    /// Seconds to wait for the whole answer.
    #[arg(long, default_value = "3", value_parser = health_cmd::parse_timeout)]
    pub timeout: f64,
}

#[derive(Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the JSON Schema of `config.json` (save it and point `"$schema"` at it, so an
    /// editor checks keys, types and ranges).
    Schema,
    /// Print the reference table of every key in Markdown (type, default, environment
    /// variable).
    Reference,
}

#[derive(Subcommand)]
pub(crate) enum EvalCommand {
    /// Evaluate one engine evaluation context and print the engine's result JSON.
    Context(ContextArgs),
    /// Evaluate an identity against an environment document and print the `/api/v1/identities` body.
    Identity(IdentityArgs),
    /// Evaluate flags of a flagd flag file and print each answer (value, variant, reason,
    /// error, metadata) as JSON.
    Flagd(FlagdArgs),
}

#[derive(Args)]
pub(crate) struct FlagdArgs {
    /// The flagd flag file (`flags`, `$evaluators`, `metadata`).
    #[arg(long)]
    pub flags: String,
    /// The flag to evaluate (without `--batch`).
    #[arg(long, required_unless_present = "batch")]
    pub flag: Option<String>,
    /// The evaluation context as a JSON object (`targetingKey` and attributes).
    #[arg(long)]
    pub context: Option<String>,
    /// The time `$flagd.timestamp` reads, in Unix seconds (default: now).
    #[arg(long)]
    pub now: Option<u64>,
    /// Read JSON Lines `{"flag": KEY, "context": {...}}` on standard input and answer each on
    /// a line.
    #[arg(long)]
    pub batch: bool,
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
        Command::Serve(args) => serve(args),
        Command::Check(args) => check_cmd::run(&args),
        Command::Config(command) => config_cmd::run(&command),
        Command::Health(args) => health_cmd::run(&args),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    flagpole_server::configure_allocator();
    allocator::install();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(flagpole_server::blocking_threads())
        .on_thread_park(flagpole_server::on_worker_park)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut options = flagpole_server::ServeOptions {
        config: args.config,
        documents: args.document,
        flags: args.flags,
        host: args.host,
        port: args.port,
        example: args.example,
        ..Default::default()
    };
    args.unleash.apply(&mut options);
    match runtime.block_on(flagpole_server::serve(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            flagpole_server::fatal(&e);
            ExitCode::from(2)
        }
    }
}
