//! The command line: `scaleset-server [serve] [--with-worker]`, `token create NAME`,
//! `token list`, `token revoke NAME`, with the configuration file named by `--config`; and
//! `demo [--data-dir DIR] [--listen ADDR] [--github-listen ADDR] [--reset]`, which needs none.

#[cfg(feature = "demo")]
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
pub(crate) use scaleset_app::console::LogFormat;
use scaleset_app::manual::{ManArgs, Shell};

/// The scaleset REST API server.
#[derive(Debug, Parser)]
#[command(name = "scaleset-server", version, long_version = scaleset_api::LONG_VERSION)]
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

/// `demo --help` as it should read: without `--config` and `--with-worker` (the demo makes its
/// own configuration and always runs the worker) and with the demo's log level, `warn`.
/// `None` for any other error or help, which clap's text serves.
#[cfg(feature = "demo")]
pub(crate) fn demo_help(error: &clap::Error, args: &[String]) -> Option<String> {
    if error.kind() != clap::error::ErrorKind::DisplayHelp || !args.iter().any(|a| a == "demo") {
        return None;
    }
    let mut command = built_for_help();
    let mut demo = command.find_subcommand_mut("demo")?.clone();
    Some(demo.render_help().to_string())
}

/// The whole command as built for help and man pages: `demo` without the global flags it
/// refuses (`--config`, `--with-worker`), and with its own log level (see [`demo_help`]).
pub(crate) fn built_for_help() -> clap::Command {
    use clap::CommandFactory as _;
    let mut command = Args::command();
    // Global flags reach the subcommands only when the command is built.
    command.build();
    command.mut_subcommand("demo", |demo| {
        demo.mut_arg("config", |a| a.hide(true))
            .mut_arg("with_worker", |a| a.hide(true))
            .mut_arg("log_format", |a| {
                a.help("Log format; the level is set by RUST_LOG (default: warn)")
            })
    })
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the API (the default).
    Serve,
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `scaleset-server completions bash > /etc/bash_completion.d/scaleset-server`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (or write one per command with --dir).
    Man(ManArgs),
    /// Run the whole product on this machine: simulated GitHub, fake cloud, SQLite, worker,
    /// API and status page, in one process (no --config; docs/quickstart.md).
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
}

/// `demo …`.
#[cfg(feature = "demo")]
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DemoArgs {
    /// Where the demo keeps its database, simulated GitHub and fake machines.
    #[arg(long, value_name = "DIR", default_value = ".scaleset-demo")]
    pub(crate) data_dir: PathBuf,
    /// The API and status page address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// The simulated GitHub's address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    pub(crate) github_listen: SocketAddr,
    /// Delete everything in the data directory first and start over.
    #[arg(long)]
    pub(crate) reset: bool,
}

/// `token …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a token and print it once (it is stored only as a hash).
    Create {
        /// A unique name saying who or what uses it.
        name: String,
        /// What it may do: `read` (the status page and GET routes), `operate` (also drain,
        /// enable/disable, retry, edit and delete scale sets), `admin` (everything).
        #[arg(long, value_name = "SCOPE", default_value = "admin", value_parser = ["read", "operate", "admin"])]
        scope: String,
    },
    /// List the tokens' names, ids, creation times and scopes (never the tokens).
    List,
    /// Revoke a token by name.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// The exit of a command line clap could not parse, after printing clap's text (the demo's own
/// `--help` where it applies).
pub(crate) fn usage(error: &clap::Error) -> scaleset_app::Exit {
    #[cfg(feature = "demo")]
    if let Some(help) = demo_help(error, &std::env::args().collect::<Vec<_>>()) {
        scaleset_app::console::out(&help);
        return scaleset_app::Exit::Done;
    }
    scaleset_app::Exit::usage(error)
}

/// `completions` and `man`, which need no configuration; `None` for every other command.
pub(crate) fn manual(args: &Args) -> Option<scaleset_app::Exit> {
    use clap::CommandFactory as _;
    match &args.command {
        Some(Command::Completions { shell }) => Some(scaleset_app::manual::print_completions(
            Args::command(),
            *shell,
        )),
        Some(Command::Man(man)) => Some(scaleset_app::manual::print_man(built_for_help(), man)),
        _ => None,
    }
}
