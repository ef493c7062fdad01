//! `scalesetctl`: the command-line client of scaleset-server's REST API. Parses the command
//! line, reads the environment once into a map, runs the command on a small runtime, prints
//! an error as one `scalesetctl: …` line on stderr, and exits with the code `exit` chooses
//! (0 done, 1 error, 2 refused or changes pending, 3 partially done). The commands live in `commands`, the
//! connection settings in `settings`, the HTTP client in `client`, printing in `output`.

mod cli;
mod client;
mod commands;
mod exit;
mod fleet_file;
mod garm;
mod manual;
mod output;
mod progress;
mod settings;

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser as _;

use crate::client::{ApiError, ErrorBody};
use crate::output::{Format, Output};

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let args: Vec<String> = std::env::args().collect();
            match cli::garm_help(&e, &args) {
                Some(help) => commands::print(&help),
                None => {
                    let _ = e.print();
                }
            }
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
        // Scripts reading JSON get an error body on stdout too: the server's, or one of the
        // same shape for a failure on this side.
        if out.format == Format::Json {
            commands::print(&Output::json(&json_error(e)));
        }
        commands::print_err(&format!("scalesetctl: {e:#}"));
    }
    exit::code(&result)
}

/// The API's error body (`{code, message, request_id}`) for `-o json`: the server's when it
/// answered with one, else this side's code and message with no request id.
fn json_error(error: &anyhow::Error) -> ErrorBody {
    if let Some(api) = error.downcast_ref::<ApiError>() {
        if let ApiError::Status {
            body: Some(body), ..
        } = api
        {
            return body.clone();
        }
        return ErrorBody {
            code: api.json_code().to_owned(),
            message: format!("{error:#}"),
            request_id: String::new(),
        };
    }
    let code = if error.downcast_ref::<commands::NotFound>().is_some() {
        "not_found"
    } else {
        "client_error"
    };
    ErrorBody {
        code: code.to_owned(),
        message: format!("{error:#}"),
        request_id: String::new(),
    }
}
