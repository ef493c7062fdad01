//! The command line: `scaleset-server [serve] [--with-worker]`, `token create NAME`,
//! `token list`, `token revoke NAME`, with the configuration file named by `--config`.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// The scaleset REST API server.
#[derive(Debug, Parser)]
#[command(name = "scaleset-server", version)]
pub(crate) struct Args {
    /// The configuration file (TOML; every key overridable as SCALESET_<SECTION>__<KEY>).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) config: Option<PathBuf>,
    /// Log format; the level is set by RUST_LOG (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub(crate) log_format: LogFormat,
    /// Also run the worker's control loop in this process (one-machine installs).
    #[arg(long, global = true)]
    pub(crate) with_worker: bool,
    /// Validate the configuration, print "configuration ok" and exit.
    #[arg(long)]
    pub(crate) check: bool,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the API (the default).
    Serve,
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `token …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a token and print it once (it is stored only as a hash).
    Create {
        /// A unique name saying who or what uses it.
        name: String,
    },
    /// List the tokens' names and creation times (never the tokens).
    List,
    /// Revoke a token by name.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}
