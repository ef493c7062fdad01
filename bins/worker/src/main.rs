//! `scaleset-worker`: reads and validates the configuration, builds the process through the one
//! composition root (`scaleset_app::App::build`: the SQLite lock, the store, the declared fleet,
//! the providers, the control loop), serves `/healthz`, `/readyz` and `/metrics` on
//! `worker.listen`, and runs until SIGTERM or SIGINT. Thin on purpose: the wiring lives in
//! `scaleset-app`, the behaviour in `scaleset-control`.
//!
//! Exit codes (`scaleset_app::Exit`, the table in docs/cli.md): 0 after a clean shutdown, 3 after
//! one abandoned when it took longer than `worker.shutdown_timeout`, 2 for
//! an invalid configuration (nothing was opened), 1 for a command line not understood, or when
//! starting failed (database, lock, port) or the loop failed.
//!
//! `scaleset-worker decommission --config FILE` tears down what this controller owns, with no
//! server and with or without its database (`decommission.rs`, docs/operations.md
//! "Decommission").

mod cli;
mod decommission;

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use scaleset_app::console::init_tracing;
use scaleset_app::{Deferred, Env, Exit, Role};

use crate::cli::{Args, Command};

const PROGRAM: &str = "scaleset-worker";

fn main() -> ExitCode {
    // First of all: a SIGTERM or SIGINT from here on waits for the handlers `serve` installs,
    // then stops the worker cleanly.
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
    let (path, config) = match scaleset_app::load(PROGRAM, args.config.as_deref(), &env) {
        Ok(loaded) => loaded,
        Err(exit) => return exit.into(),
    };
    if let Some(Command::Decommission(decommission)) = &args.command {
        // A one-shot command whose steps can be run again: a signal stops it at once.
        drop(signals);
        return decommission::main(&path, &config, &env, decommission);
    }
    if args.check {
        return scaleset_app::check(PROGRAM, &path, &config, &env).into();
    }
    init_tracing(args.log_format, "info");
    let serve = scaleset_app::serve(Role::Worker, &config, &env, signals);
    scaleset_app::block_on(PROGRAM, config.store.configured_pool_size(), serve).into()
}
