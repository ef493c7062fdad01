//! `scaleset-worker`: reads and validates the configuration, builds the process through the one
//! composition root (`scaleset_app::App::build`: the SQLite lock, the store, the declared fleet,
//! the providers, the control loop), serves `/healthz`, `/readyz` and `/metrics` on
//! `worker.listen`, and runs until SIGTERM or SIGINT. Thin on purpose: the wiring lives in
//! `scaleset-app`, the behaviour in `scaleset-control`.
//!
//! Exit codes (`scaleset_app::Exit`, the table in docs/cli.md): 0 after a clean shutdown, 2 for
//! an invalid configuration (nothing was opened), 1 for a command line not understood, or when
//! starting failed (database, lock, port) or the loop failed.
//!
//! `scaleset-worker decommission --config FILE` tears down what this controller owns, with no
//! server and with or without its database (`decommission.rs`, docs/operations.md
//! "Decommission").

mod decommission;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{CommandFactory as _, Parser};
use scaleset_app::console::{LogFormat, init_tracing};
use scaleset_app::manual::{ManArgs, Shell};
use scaleset_app::{App, Deferred, Env, Exit, Stopped, errln, outln};
use scaleset_config::Config;
use tokio_util::sync::CancellationToken;

/// Serves GitHub Actions runner scale sets from the configured fleet.
#[derive(Debug, Parser)]
#[command(name = "scaleset-worker", version, long_version = scaleset_api::LONG_VERSION)]
struct Args {
    /// The configuration file (TOML; every key overridable as SCALESET_<SECTION>__<KEY>).
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Log format; the level is set by RUST_LOG (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Validate the configuration, print "configuration ok" and exit.
    #[arg(long)]
    check: bool,
    /// What to do instead of serving.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
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

fn main() -> ExitCode {
    // First of all: a SIGTERM or SIGINT from here on waits for the handlers `run` installs,
    // then stops the worker cleanly (issue 36).
    let signals = Deferred::block();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => return Exit::usage(&e).into(),
    };
    match &args.command {
        Some(Command::Completions { shell }) => {
            return scaleset_app::manual::print_completions(Args::command(), *shell).into();
        }
        Some(Command::Man(man)) => {
            return scaleset_app::manual::print_man(Args::command(), man).into();
        }
        _ => {}
    }
    let env = Env::from_process();
    let Some(path) = &args.config else {
        errln!("scaleset-worker: --config FILE is required (the worker's configuration file)");
        return Exit::Refused.into();
    };
    let config = match Config::load(path, &env.vars) {
        Ok(config) => config,
        Err(e) => {
            errln!("scaleset-worker: {e}");
            return Exit::Refused.into();
        }
    };
    if let Some(Command::Decommission(decommission)) = &args.command {
        // A one-shot command whose steps can be run again: a signal stops it at once.
        drop(signals);
        return decommission::main(path, &config, &env, decommission);
    }
    if args.check {
        // Every file and directory the configuration names, as the process will use them.
        if let Err(e) = config.check_files(&path.display().to_string()) {
            errln!("scaleset-worker: {e}");
            return Exit::Refused.into();
        }
        outln!("configuration ok");
        // What each declared scale set's runners would be installed from, or why none
        // (warnings: GitHub's list may change, and the worker retries).
        match scaleset_app::check_runner_tools(&config, &env) {
            Ok(found) => {
                for check in found {
                    if check.warning {
                        errln!("scaleset-worker: warning: {}", check.text);
                    } else {
                        outln!("{}", check.text);
                    }
                }
            }
            Err(e) => {
                errln!("scaleset-worker: warning: the runner downloads were not checked: {e}")
            }
        }
        // Which App each key is for (read from the key files).
        for credentials in &config.fleet.credentials {
            outln!("{}", scaleset_config::describe_credentials(credentials));
        }
        return Exit::Done.into();
    }
    init_tracing(args.log_format, "info");
    let runtime = match scaleset_app::runtime(config.store.configured_pool_size()) {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("scaleset-worker: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    let result = runtime.block_on(run(&config, &env, signals));
    // Dropping the runtime would wait for every blocking thread, and one stuck in a database
    // call over a partitioned link (no answer, no reset) never returns: the exit does not wait
    // for it (the chaos soak's partitions found a SIGTERM that never exited).
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => Exit::Done.into(),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "scaleset-worker stopped");
            errln!("scaleset-worker: {e:#}");
            Exit::Failed.into()
        }
    }
}

async fn run(config: &Config, env: &Env, signals: Deferred) -> Result<()> {
    // Before anything a signal must stop cleanly; a signal that came while the process was
    // starting is delivered now, and the loop below stops right after it started.
    let signals = signals
        .install()
        .context("installing the SIGTERM and SIGINT handlers")?;
    let stop = signals.wait();
    tokio::pin!(stop);
    // The build is raced with a signal: it waits on the database (the connection, the
    // migrations, the fleet's apply), which a partition holds for as long as TCP retries, and a
    // SIGTERM must still end the process (the partition soak found one that never did).
    let app = tokio::select! {
        app = App::build(config, env) => app?,
        signal = &mut stop => {
            tracing::info!(signal, "stopped while starting: nothing was served yet");
            return Ok(());
        }
    };
    let listener = tokio::net::TcpListener::bind(config.worker.listen)
        .await
        .with_context(|| format!("cannot listen on {} (worker.listen)", config.worker.listen))?;
    let listen = listener.local_addr().context("reading the bound address")?;
    let (controller_id, database) = (app.controller_id(), app.database().to_owned());
    let mut running = app.start();
    let http_stop = CancellationToken::new();
    let http = tokio::spawn(scaleset_api::serve(
        listener,
        running.probes_router(),
        None,
        http_stop.clone().cancelled_owned(),
    ));
    tracing::info!(
        listen = %listen,
        worker = %config.settings.worker,
        controller_id = %controller_id,
        database = %database,
        "scaleset-worker started"
    );
    let signal = tokio::select! {
        signal = &mut stop => signal,
        failed = running.failed() => {
            http_stop.cancel();
            return Err(failed.into());
        }
    };
    tracing::info!(
        signal,
        "stopping: deleting message sessions and releasing leases; instances stay running"
    );
    let stopped = running.stop().await;
    http_stop.cancel();
    let _ = http.await;
    if stopped.context("stopping the control loop")? == Stopped::Cleanly {
        tracing::info!("stopped cleanly");
    }
    Ok(())
}
