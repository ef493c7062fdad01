//! `scalesetctl`: the command-line client of scaleset-server's REST API. Parses the command
//! line, reads the environment once into a map, runs the command on a small runtime, prints
//! an error as one `scalesetctl: …` line on stderr, and exits with the code `exit` chooses
//! (0 done, 1 error, 2 refused or plan has changes). The commands live in `commands`, the
//! connection settings in `settings`, the HTTP client in `client`, printing in `output`.

mod cli;
mod client;
mod commands;
mod exit;
mod fleet_file;
mod garm;
mod output;
mod progress;
mod settings;

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser as _;

use crate::client::ApiError;
use crate::output::{Format, Output};

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return exit::usage(&e);
        }
    };
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let out = Output::new(cli.output, cli.color, &env);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            commands::print_err(&format!("scalesetctl: cannot start the async runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(commands::run(cli, &env, &out));
    if let Err(e) = &result {
        // Scripts reading JSON get the server's error body on stdout too.
        if out.format == Format::Json
            && let Some(ApiError::Status {
                body: Some(body), ..
            }) = e.downcast_ref::<ApiError>()
        {
            commands::print(&Output::json(body));
        }
        commands::print_err(&format!("scalesetctl: {e:#}"));
    }
    exit::code(&result)
}
