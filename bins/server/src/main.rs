//! `scaleset-server`: reads and validates the configuration (the worker's file, with its
//! `[server]` section), opens the store (running migrations), and serves the REST API of
//! `scaleset-api` until SIGTERM or SIGINT; `--with-worker` also runs the worker's control loop
//! in the process. `token create NAME` prints a new API token once. `demo` runs the whole
//! product on one machine with no configuration (`scaleset-demo`). Thin on purpose: the
//! behaviour lives in `scaleset-api` and `scaleset-control`.
//!
//! Exit codes: 0 after a clean shutdown, 2 for an invalid command line or configuration
//! (nothing was opened), 1 when starting or serving failed.

#[macro_use]
mod console;
mod cli;
mod demo;
mod serve;
mod token;

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Parser as _;
use scaleset_config::Config;
use scaleset_store::DieselStore;

use crate::cli::{Args, Command, LogFormat};

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Demo(demo)) = &args.command {
        init_tracing(args.log_format, "warn");
        return block_on(demo::run(demo.clone()));
    }
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let Some(path) = args.config.clone() else {
        errln!("scaleset-server: --config FILE is required (docs/configuration.md)");
        return ExitCode::from(2);
    };
    let config = match Config::load(&path, &env) {
        Ok(config) => config,
        Err(e) => {
            errln!("scaleset-server: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        outln!("configuration ok");
        return ExitCode::SUCCESS;
    }
    init_tracing(args.log_format, "info");
    block_on(run(args, config, &env))
}

fn block_on(work: impl std::future::Future<Output = Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("scaleset-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "scaleset-server stopped");
            errln!("scaleset-server: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, config: Config, env: &BTreeMap<String, String>) -> Result<()> {
    match args.command {
        Some(Command::Token(command)) => {
            let url = config.store.url().clone();
            let store = DieselStore::open(config.store)
                .await
                .with_context(|| format!("cannot open the database {}", url.redacted()))?;
            token::run(&store, command).await
        }
        Some(Command::Serve) | None => serve::run(config, env, args.with_worker).await,
        // main runs the demo before any configuration is read.
        Some(Command::Demo(_)) => anyhow::bail!("the demo takes no --config"),
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (else `default`).
fn init_tracing(format: LogFormat, default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a terminal: in a file or a log collector they are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
