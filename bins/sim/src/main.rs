//! `scaleset-sim`: runs the GitHub scale-set simulator on a TCP listener until SIGINT/SIGTERM.
//! Parsing lives in `cli.rs`, configuration in `config.rs`, behaviour in `scaleset-sim`.

mod cli;
mod config;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use scaleset_sim::Simulator;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    install_tracing(cli.log_json);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scaleset-sim: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn install_tracing(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn run(cli: cli::Cli) -> Result<()> {
    // Load and validate everything before binding.
    let raw = config::read_file(cli.config.as_deref())?;
    let sim_config = config::build(raw, &cli)?;
    let scheme = if sim_config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let simulator = Simulator::new(sim_config)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(cli.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cli.listen))?;
        let addr = listener
            .local_addr()
            .context("cannot read the listener's address")?;
        let mut stdout = std::io::stdout();
        writeln!(stdout, "scaleset-sim listening on {scheme}://{addr}")
            .and_then(|()| stdout.flush())
            .context("cannot write the ready line")?;
        tracing::info!(%addr, "serving");
        simulator.serve(listener, shutdown_signal()).await?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the simulator");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
