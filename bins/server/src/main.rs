//! `scaleset-server`: reads and validates the configuration (the worker's file, with its
//! `[server]` section), builds the process through the one composition root
//! (`scaleset_app::App`), and serves the REST API of `scaleset-api` until SIGTERM or SIGINT;
//! `--with-worker` builds it as the worker does (the SQLite lock, the declared fleet applied,
//! the providers and `[fake]` as configured, the control loop) and runs the loop in the process.
//! `token create NAME` prints a new API token once. `demo` (the default-on `demo` feature) runs
//! the whole product on one machine with no configuration (`scaleset-demo`). Thin on purpose:
//! the wiring lives in `scaleset-app`, the behaviour in `scaleset-api` and `scaleset-control`.
//!
//! Exit codes (`scaleset_app::Exit`, the table in docs/cli.md): 0 after a clean shutdown, 2 for
//! an invalid configuration (nothing was opened), 1 for a command line not understood, or when
//! starting or serving failed.

mod cli;
#[cfg(feature = "demo")]
mod demo;
mod token;

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{CommandFactory as _, Parser as _};
use scaleset_app::console::init_tracing;
use scaleset_app::{App, Deferred, Env, Exit, Stopped, errln, outln};
use scaleset_config::Config;
use tokio_util::sync::CancellationToken;

use crate::cli::{Args, Command};

fn main() -> ExitCode {
    // First of all: a SIGTERM or SIGINT from here on waits for the handlers `serve` (or the
    // demo) installs, then stops the server cleanly (issue 36).
    let signals = Deferred::block();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            #[cfg(feature = "demo")]
            if let Some(help) = cli::demo_help(&e, &std::env::args().collect::<Vec<_>>()) {
                scaleset_app::console::out(&help);
                return Exit::Done.into();
            }
            return Exit::usage(&e).into();
        }
    };
    match &args.command {
        Some(Command::Completions { shell }) => {
            return scaleset_app::manual::print_completions(Args::command(), *shell).into();
        }
        Some(Command::Man(man)) => {
            return scaleset_app::manual::print_man(cli::built_for_help(), man).into();
        }
        _ => {}
    }
    #[cfg(feature = "demo")]
    if let Some(Command::Demo(demo)) = &args.command {
        if args.config.is_some() || args.with_worker {
            errln!(
                "scaleset-server demo: the demo takes no --config or --with-worker: it makes its \
                 own configuration and always runs the worker (scaleset-server demo --help)"
            );
            return Exit::Failed.into();
        }
        init_tracing(args.log_format, "warn");
        // The demo's store keeps the default pool of 8 connections.
        return block_on(8, demo::run(demo.clone(), signals));
    }
    let env = Env::from_process();
    let Some(path) = args.config.clone() else {
        errln!("scaleset-server: --config FILE is required (docs/configuration.md)");
        return Exit::Refused.into();
    };
    let config = match Config::load(&path, &env.vars) {
        Ok(config) => config,
        Err(e) => {
            errln!("scaleset-server: {e}");
            return Exit::Refused.into();
        }
    };
    if args.check {
        // Every file and directory the configuration names, as the process will use them.
        if let Err(e) = config.check_files(&path.display().to_string()) {
            errln!("scaleset-server: {e}");
            return Exit::Refused.into();
        }
        outln!("configuration ok");
        // What each declared scale set's runners would be installed from, or why none
        // (warnings: GitHub's list may change, and the worker retries).
        match scaleset_app::check_runner_tools(&config, &env) {
            Ok(found) => {
                for check in found {
                    if check.warning {
                        errln!("scaleset-server: warning: {}", check.text);
                    } else {
                        outln!("{}", check.text);
                    }
                }
            }
            Err(e) => {
                errln!("scaleset-server: warning: the runner downloads were not checked: {e}")
            }
        }
        return Exit::Done.into();
    }
    init_tracing(args.log_format, "info");
    block_on(config.store.configured_pool_size(), async move {
        match args.command {
            Some(Command::Token(command)) => {
                // A one-shot command: a signal stops it at once.
                drop(signals);
                let app = App::build_api_only(&config, &env).await?;
                token::run(app.store().as_ref(), command).await
            }
            Some(Command::Serve) | None => serve(&config, &env, args.with_worker, signals).await,
            // main runs these before any configuration is read.
            Some(Command::Completions { .. } | Command::Man(_)) => Ok(()),
            #[cfg(feature = "demo")]
            Some(Command::Demo(_)) => anyhow::bail!("the demo takes no --config"),
        }
    })
}

/// Runs `work` on the binaries' runtime, its blocking pool sized for a store of `pool_size`
/// connections.
fn block_on(pool_size: u32, work: impl std::future::Future<Output = Result<()>>) -> ExitCode {
    let runtime = match scaleset_app::runtime(pool_size) {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("scaleset-server: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    match runtime.block_on(work) {
        Ok(()) => Exit::Done.into(),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "scaleset-server stopped");
            errln!("scaleset-server: {e:#}");
            Exit::Failed.into()
        }
    }
}

/// `serve`: the API (and with `with_worker` the control loop) until a signal.
async fn serve(config: &Config, env: &Env, with_worker: bool, signals: Deferred) -> Result<()> {
    // Before anything a signal must stop cleanly (and so before the ready line); a signal that
    // came while the process was starting is delivered now, and the server stops right after
    // it started.
    let signals = signals
        .install()
        .context("installing the SIGTERM and SIGINT handlers")?;
    let tls = match &config.server.tls {
        Some(files) => Some(
            scaleset_api::tls_config(&files.cert, &files.key)
                .context("loading server.tls_cert_file and server.tls_key_file")?,
        ),
        None => None,
    };
    let app = if with_worker {
        App::build(config, env).await?
    } else {
        App::build_api_only(config, env).await?
    };
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {} (server.listen)", config.server.listen))?;
    let listen = listener.local_addr().context("reading the bound address")?;
    let (id, database) = (app.controller_id(), app.database().to_owned());
    let mut running = app.start();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let stop = CancellationToken::new();
    let server = tokio::spawn(scaleset_api::serve_with(
        listener,
        running.api_router(),
        tls,
        scaleset_api::ConnectionLimits {
            header_read_timeout: config.server.header_read_timeout,
            idle_timeout: config.server.idle_timeout,
            max_connections: config.server.max_connections,
            http2_max_concurrent_streams: config.server.http2_max_concurrent_streams,
            http2_max_header_list_size: config.server.http2_max_header_list_size,
        },
        stop.clone().cancelled_owned(),
    ));
    tracing::info!(listen = %listen, controller_id = %id, with_worker, database = %database, "scaleset-server started");
    errln!("scaleset-server listening on {scheme}://{listen}");

    let failed = tokio::select! {
        signal = signals.wait() => {
            tracing::info!(signal, "stopping");
            None
        }
        failed = running.failed() => Some(failed),
    };
    stop.cancel();
    let stopped = running.stop().await;
    server.await.context("the API server panicked")?;
    if let Some(failed) = failed {
        return Err(failed.into());
    }
    if stopped.context("stopping the control loop")? == Stopped::Cleanly {
        tracing::info!("stopped cleanly");
    }
    Ok(())
}
