//! Command-line flags of `scaleset-sim` (parsed, not yet validated; see `config.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// A GitHub-faithful simulator of the runner scale-set service, for tests, the quick start and
/// disaster rehearsals.
///
/// Serves the GitHub REST surface under /api/v3/, the Actions service under the actions base
/// path, the message queue on its own path and the control API under /_sim/ on one listener.
/// Prints exactly one line, `scaleset-sim listening on http://ADDR`, when ready, then serves
/// until SIGINT or SIGTERM. The default seed (organization `acme`, repository `acme/widgets`,
/// enterprise `acme-corp`, PAT `ghp_simulator`, App installation 1 with App id 1 on `acme`) is
/// always present unless --no-default-seed is given or the file says `default_seed = false`.
/// Flags add to the file's seed and override its behaviour settings.
#[derive(Debug, Parser)]
#[command(name = "scaleset-sim", version)]
pub(crate) struct Cli {
    /// Address to listen on (port 0 picks a free port; the ready line shows the real one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,

    /// A TOML file with the seed and behaviour settings (see docs/simulator.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Start without the default seed (only what the file and flags add).
    #[arg(long)]
    pub(crate) no_default_seed: bool,

    /// Seed an organization (repeatable).
    #[arg(long = "org", value_name = "LOGIN")]
    pub(crate) orgs: Vec<String>,

    /// Seed a repository, written OWNER/NAME (repeatable).
    #[arg(long = "repo", value_name = "OWNER/NAME")]
    pub(crate) repos: Vec<String>,

    /// Seed an enterprise (repeatable).
    #[arg(long = "enterprise", value_name = "SLUG")]
    pub(crate) enterprises: Vec<String>,

    /// Seed a personal access token valid for every seeded scope (repeatable).
    #[arg(long = "pat", value_name = "TOKEN")]
    pub(crate) pats: Vec<String>,

    /// Seed a runner group, written SCOPE=NAME, e.g. `acme=gpu runners` (repeatable).
    #[arg(long = "runner-group", value_name = "SCOPE=NAME")]
    pub(crate) runner_groups: Vec<String>,

    /// Path prefix of the Actions service [default: /tenant/1/].
    #[arg(long, value_name = "PATH")]
    pub(crate) actions_base_path: Option<String>,

    /// Path of the message queue [default: /scalesets/message].
    #[arg(long, value_name = "PATH")]
    pub(crate) queue_path: Option<String>,

    /// How long a message GET is held before 202, e.g. `50s`, `200ms` [default: 50s].
    #[arg(long, value_name = "DURATION")]
    pub(crate) long_poll_hold: Option<String>,

    /// Lifetime of admin tokens [default: 1h].
    #[arg(long, value_name = "DURATION")]
    pub(crate) admin_token_ttl: Option<String>,

    /// Lifetime of message-queue tokens [default: 1h].
    #[arg(long, value_name = "DURATION")]
    pub(crate) queue_token_ttl: Option<String>,

    /// `auto` (github.com: JobAssigned) or `acquire` (GHES: JobAvailable, then acquirejobs)
    /// [default: auto].
    #[arg(long, value_name = "MODE")]
    pub(crate) assignment: Option<String>,

    /// Cancel and requeue an assignment no runner took within this simulated time, or `off`
    /// [default: off].
    #[arg(long, value_name = "DURATION|off")]
    pub(crate) reassign_after: Option<String>,

    /// Delete a scale set with no session for this simulated time, or `off` [default: 7d].
    #[arg(long, value_name = "DURATION|off")]
    pub(crate) dormancy: Option<String>,

    /// Drop a session neither polled nor refreshed for this simulated time, or `off`
    /// [default: off].
    #[arg(long, value_name = "DURATION|off")]
    pub(crate) session_expiry: Option<String>,

    /// How long a simulated runner's job runs, in simulated time [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub(crate) runner_job_duration: Option<String>,

    /// How long a `JobStarted` waits for the next batch before it goes out on its own, in
    /// simulated time; `0s` delivers it at once, waking a held long-poll [default: 50s, as
    /// github.com].
    #[arg(long, value_name = "DURATION")]
    pub(crate) job_started_delay: Option<String>,

    /// Name the active session's owner in 409 session-conflict messages.
    #[arg(long)]
    pub(crate) conflict_names_owner: bool,

    /// Log as JSON lines on stderr (the filter comes from RUST_LOG, default `info`).
    #[arg(long)]
    pub(crate) log_json: bool,
}
