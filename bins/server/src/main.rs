//! `scaleset-server`: reads and validates the configuration (the worker's file, with its
//! `[server]` section), builds the process through the one composition root
//! (`scaleset_app::App`), and serves the REST API of `scaleset-api` until SIGTERM or SIGINT;
//! `--with-worker` builds it as the worker does (the SQLite lock, the declared fleet applied,
//! the providers and `[fake]` as configured, the control loop) and runs the loop in the process.
//! `token create NAME` prints a new API token once. `demo` (the default-on `demo` feature) runs
//! the whole product on one machine with no configuration (`scaleset-demo`). Thin on purpose:
//! the wiring lives in `scaleset-app`, the behaviour in `scaleset-api` and `scaleset-control`.
//!
//! Exit codes (`scaleset_app::Exit`, the table in docs/cli.md): 0 after a clean shutdown, 3 after
//! one abandoned when it took longer than `worker.shutdown_timeout` (`--with-worker`), 2 for
//! an invalid configuration (nothing was opened), 1 for a command line not understood, or when
//! starting or serving failed.

mod cli;
#[cfg(feature = "demo")]
mod demo;
mod token;

use std::process::ExitCode;

use clap::Parser as _;
use scaleset_app::console::init_tracing;
use scaleset_app::{App, Deferred, Env, Role};

use crate::cli::{Args, Command};

const PROGRAM: &str = "scaleset-server";

fn main() -> ExitCode {
    // First of all: a SIGTERM or SIGINT from here on waits for the handlers `serve` (or the
    // demo) installs, then stops the server cleanly.
    let signals = Deferred::block();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => return cli::usage(&e).into(),
    };
    if let Some(exit) = cli::manual(&args) {
        return exit.into();
    }
    #[cfg(feature = "demo")]
    if let Some(Command::Demo(demo)) = &args.command {
        return demo::main(&args, demo.clone(), signals).into();
    }
    let env = Env::from_process();
    let (path, config) = match scaleset_app::load(PROGRAM, args.config.as_deref(), &env) {
        Ok(loaded) => loaded,
        Err(exit) => return exit.into(),
    };
    if args.check {
        return scaleset_app::check(PROGRAM, &path, &config, &env).into();
    }
    init_tracing(args.log_format, "info");
    let pool = config.store.configured_pool_size();
    if let Some(Command::Token(command)) = args.command {
        // A one-shot command: a signal stops it at once.
        drop(signals);
        return scaleset_app::block_on(PROGRAM, pool, async {
            let app = App::build_api_only(&config, &env).await?;
            token::run(app.store().as_ref(), command).await
        })
        .into();
    }
    let role = Role::Server {
        with_worker: args.with_worker,
    };
    let serve = scaleset_app::serve(role, &config, &env, signals);
    scaleset_app::block_on(PROGRAM, pool, serve).into()
}
