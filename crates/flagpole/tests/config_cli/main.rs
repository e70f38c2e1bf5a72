//! End-to-end tests of the configuration as a user meets it, on the real `flagpole` binary: a
//! mistaken configuration never starts the proxy on the bundled example (a typo, `{}`, an empty
//! `ENVIRONMENT_KEY_PAIRS` all exit 2 with one line saying why), the example is served when
//! nothing is configured or `--example` asks for it, `flagpole check` validates exactly as
//! `serve` does and prints the configuration with keys redacted, a real Edge Proxy config is
//! accepted as it is, and with `logging.log_format = "json"` every line on stderr is JSON.
//! Values that cannot be meant (a misspelt variable, an unknown log level, a zero poll period
//! or timeout, a rate out of range, a grace period shorter than the poll period, two listeners
//! on one port, a snapshot directory that cannot be written) exit 2 from both `check` and
//! `serve`, naming the key, the value and what is allowed, before anything listens. The
//! printed configuration is valid input, and docs/configuration.md is what `flagpole config
//! reference` prints.
//!
//! Every process runs in a directory of its own with an empty environment, so nothing from the
//! machine (a `./config.json`, a `CONFIG_PATH`) leaks in. One file per concern: `refusals`,
//! `starting` (what an accepted configuration serves), `printed` (what `check` and `config`
//! print); `support` runs the binary.

mod printed;
mod refusals;
mod starting;
mod support;
