//! Runs a parsed command line: resolves the connection settings, calls the API, prints the
//! answer as a table or JSON, and says which [`Outcome`] it was (the exit code is chosen from
//! it in `exit`). One module per resource.

mod controller;
mod credential;
mod decommission;
mod entity;
mod events;
mod fleet;
mod import;
mod instance;
mod pick;
mod scale_set;
mod token;
mod worker;

use std::collections::BTreeMap;
use std::io::Write as _;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{Cli, Command, FleetCommand, ImportCommand};
use crate::client::Api;
use crate::exit::Outcome;
use crate::output::{Format, Output};
use crate::settings::Settings;

pub(crate) use pick::NotFound;

/// What every command works with.
pub(crate) struct Ctx<'a> {
    /// The API.
    pub(crate) api: Api,
    /// The printer.
    pub(crate) out: &'a Output,
    /// The process environment, as a map (`credential create --pat-env` reads it).
    pub(crate) env: &'a BTreeMap<String, String>,
}

impl Ctx<'_> {
    /// Prints `value` as JSON, or the table text `render` makes, to stdout.
    pub(crate) fn show<T: Serialize + ?Sized>(&self, value: &T, render: impl FnOnce() -> String) {
        let text = match self.out.format {
            Format::Json => Output::json(value),
            Format::Table => render(),
        };
        print(&text);
    }

    /// Prints a one-line confirmation (tables) or the JSON answer.
    pub(crate) fn done<T: Serialize + ?Sized>(&self, value: &T, line: &str) {
        self.show(value, || format!("{line}\n"));
    }
}

/// Writes to stdout; a closed pipe (`scalesetctl … | head`) is not an error worth a message.
pub(crate) fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes one line to stderr; a closed pipe is ignored as for [`print`] (`eprintln!` would
/// panic on it, exit 101, instead of the command's own exit code).
pub(crate) fn print_err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Runs the command.
pub(crate) async fn run(cli: Cli, env: &BTreeMap<String, String>, out: &Output) -> Result<Outcome> {
    // Nothing to connect to: generated from the command line's definition.
    match &cli.command {
        Command::Completions { shell } => {
            print(&crate::manual::completions(*shell));
            return Ok(Outcome::Done);
        }
        Command::Man { dir } => {
            print(&crate::manual::man(dir.as_deref())?);
            return Ok(Outcome::Done);
        }
        _ => {}
    }
    // GARM's URL and token are not scaleset-server's: resolve nothing from the environment.
    if let Command::Import(ImportCommand::Garm(args)) = cli.command {
        return import::garm(&cli.connection, args, out).await;
    }
    let settings = Settings::resolve(&cli.connection.flags(), env)?;
    if let Command::Config = cli.command {
        return config(&settings, out);
    }
    let ctx = Ctx {
        api: Api::new(&settings)?,
        out,
        env,
    };
    match cli.command {
        Command::Config => config(&settings, out),
        Command::Controller => controller::show(&ctx).await,
        Command::Credential(command) => credential::run(&ctx, command).await,
        Command::Entity(command) => entity::run(&ctx, command).await,
        Command::ScaleSet(command) => scale_set::run(&ctx, command).await,
        Command::Events(args) => events::run(&ctx, args).await,
        Command::Instance(command) => instance::run(&ctx, command).await,
        Command::Token(command) => token::run(&ctx, command).await,
        Command::Worker(command) => worker::run(&ctx, command).await,
        Command::Plan(args) => fleet::plan(&ctx, args).await,
        Command::Fleet(FleetCommand::Export(args)) => fleet::export(&ctx, args).await,
        Command::Fleet(FleetCommand::Undeclared) => fleet::undeclared(&ctx).await,
        Command::Apply { fleet, digest } => fleet::apply(&ctx, fleet, digest).await,
        Command::Import(ImportCommand::Garm(args)) => {
            import::garm(&cli.connection, args, out).await
        }
        Command::Decommission(args) => decommission::run(&ctx, args).await,
        Command::Completions { .. } | Command::Man { .. } => Ok(Outcome::Done),
    }
}

/// `config`: the resolved connection settings, without the token.
fn config(settings: &Settings, out: &Output) -> Result<Outcome> {
    let file = settings
        .config_file
        .as_ref()
        .map_or_else(|| "none".to_owned(), |p| p.display().to_string());
    let token = settings
        .token_source
        .clone()
        .unwrap_or_else(|| "none (requests will be refused with 401)".to_owned());
    let value = serde_json::json!({
        "url": settings.url.as_str(),
        "url_source": settings.url_source,
        "token_source": settings.token_source,
        "ca_bundle": settings.ca_bundle.is_some(),
        "timeout_secs": settings.timeout.as_secs_f64(),
        "config_file": settings.config_file,
    });
    let text = match out.format {
        Format::Json => Output::json(&value),
        Format::Table => out.details(vec![
            (
                "url",
                comfy_table::Cell::new(format!("{} (from {})", settings.url, settings.url_source)),
            ),
            ("token", comfy_table::Cell::new(token)),
            (
                "ca bundle",
                comfy_table::Cell::new(if settings.ca_bundle.is_some() {
                    "given"
                } else {
                    "system trust store"
                }),
            ),
            (
                "timeout",
                comfy_table::Cell::new(format!("{}s", settings.timeout.as_secs_f64())),
            ),
            ("config file", comfy_table::Cell::new(file)),
        ]),
    };
    print(&text);
    Ok(Outcome::Done)
}
