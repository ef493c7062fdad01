//! The command line: `scaleset-worker --config FILE [--check]`, `decommission`, `completions`,
//! `man`.

use std::path::PathBuf;

use clap::Parser;
use scaleset_app::console::LogFormat;
use scaleset_app::manual::{ManArgs, Shell};

use crate::decommission;

/// Serves GitHub Actions runner scale sets from the configured fleet.
#[derive(Debug, Parser)]
#[command(name = "scaleset-worker", version, long_version = scaleset_api::LONG_VERSION)]
pub(crate) struct Args {
    /// The configuration file (TOML; every key overridable as SCALESET_<SECTION>__<KEY>).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) config: Option<PathBuf>,
    /// Log format; the level is set by RUST_LOG (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
    /// Validate the configuration, print "configuration ok" and exit.
    #[arg(long)]
    pub(crate) check: bool,
    /// What to do instead of serving.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Tears down everything this controller owns, and nothing else: prints the plan, applies
    /// it with --apply --digest (docs/operations.md, "Decommission").
    Decommission(decommission::DecommissionArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `scaleset-worker completions bash > /etc/bash_completion.d/scaleset-worker`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (or write one per command with --dir).
    Man(ManArgs),
}
