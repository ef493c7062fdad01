//! The scaleset configuration file, shared by the worker (and later the server): a TOML file,
//! every key overridable by a `SCALESET_…` environment variable, validated completely before
//! anything connects. Every problem is reported at once, each naming its key
//! (`database.url`, `scale_set[0].max_runners`, `SCALESET_DATABASE__URL`), its cause and what
//! to write instead.
//!
//! The environment is passed in as a map ([`Config::load`]), never read from the process here,
//! so tests give their own. Key files and token files named by the configuration are read
//! during validation: a missing key is a configuration error, not a later surprise.
//!
//! What it deliberately does not do: open the database, bind ports or build providers; it
//! returns typed, validated values ([`Config`]) for the binaries to wire.
//!
//! The format is documented in `docs/configuration.md`; `docs/examples/worker.toml` is a
//! commented example that a test loads.

mod files;
mod hint;
mod overrides;
mod raw;
mod secret_file;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The declared fleet and its scale sets: the fleet planner's types, which this crate fills.
pub use scaleset_fleet::{DeclaredScaleSet, Fleet};
use scaleset_provider::ProviderConfig;
use scaleset_settings::Settings;
use scaleset_store::StoreOptions;
use uuid::Uuid;

pub use secret_file::{SecretFile, SecretFileError, SecretForm};
pub use validate::describe_credentials;

/// The prefix of every environment override.
pub const ENV_PREFIX: &str = overrides::PREFIX;

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key (`database.url`, `scale_set[1].name`) or environment variable at fault.
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// Every problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration in {}:\n  {}", .source_name, list(.problems))]
pub struct ConfigError {
    /// Where the configuration came from (the file path).
    pub source_name: String,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// A validated configuration.
#[derive(Debug)]
pub struct Config {
    /// The pinned controller id; `None` lets the database supply (or generate) it.
    pub controller_id: Option<Uuid>,
    /// Whether created scale sets carry the owner label (default true).
    pub owner_label: bool,
    /// How to open the store (URL, keyring, pool, timeouts, controller id).
    pub store: StoreOptions,
    /// The worker's own settings.
    pub worker: WorkerConfig,
    /// The API server's own settings (`[server]`).
    pub server: ServerConfig,
    /// The control loop's settings (worker name, lease time, intervals).
    pub settings: Settings,
    /// The providers, by name.
    pub providers: Vec<ProviderConfig>,
    /// Where the fake provider keeps its instances and boots its runners (tests and demos).
    pub fake: FakeConfig,
    /// The declared fleet: credentials and the scale sets applied to the store on start.
    pub fleet: Fleet,
    /// The fleet's credentials whose secret is in a file, watched for rotation.
    pub secret_files: Vec<SecretFile>,
    /// Where it was read from (the file's path), as messages name it: the file a declared
    /// scale set is edited in.
    pub source: String,
}

/// The worker process's own settings (`[worker]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The worker's name: the holder of its leases (default: the host name).
    pub name: String,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (default `127.0.0.1:9464`).
    pub listen: SocketAddr,
    /// How long a shutdown may take before the process exits anyway (default 30 s).
    pub shutdown_timeout: Duration,
}

/// The API server's own settings (`[server]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Where the API is served (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// TLS: the PEM certificate chain and private key files (both or neither; checked to exist).
    pub tls: Option<TlsFiles>,
    /// The largest request body, in bytes (default 262144: 256 KiB).
    pub max_body_size: usize,
    /// How long a client may take to send a request's headers (default 10 s).
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight (default 60 s).
    pub idle_timeout: Duration,
    /// How many connections are served at once (default 1024).
    pub max_connections: usize,
    /// HTTP/2: the most concurrent streams per connection (default 100).
    pub http2_max_concurrent_streams: u32,
    /// HTTP/2: the largest request header list, in bytes (default 65536).
    pub http2_max_header_list_size: u32,
    /// Whether browsers reach the server through a TLS-terminating proxy: with it (or with the
    /// server's own TLS) the sign-in cookie is `Secure` and answers carry
    /// `Strict-Transport-Security` (default false).
    pub behind_tls_proxy: bool,
}

impl ServerConfig {
    /// Whether browsers reach this server over HTTPS: it serves TLS itself, or it is told it
    /// sits behind a TLS-terminating proxy.
    pub fn https(&self) -> bool {
        self.tls.is_some() || self.behind_tls_proxy
    }
}

/// The TLS certificate and key of the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// The private key (PEM).
    pub key: PathBuf,
}

/// `[fake]`: how the in-process fake provider behaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeConfig {
    /// A directory where the fake provider records its instances, so they outlive the process
    /// (as a cloud's would). `None`: in memory.
    pub state_dir: Option<PathBuf>,
    /// A simulator base URL: each created instance's runner is started there with its JIT
    /// config (`POST /_sim/runners`), as a booting machine would.
    pub simulator_url: Option<url::Url>,
}

impl Config {
    /// Reads `path`, applies the `SCALESET_…` overrides from `env`, and validates everything.
    pub fn load(path: &Path, env: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let source_name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source_name: source_name.clone(),
            problems: vec![Problem::new(
                "--config",
                format!("cannot read the configuration file: {e}"),
            )],
        })?;
        Self::parse(&source_name, &text, env)
    }

    /// Validates `text` (the file's content) with the overrides from `env`; relative paths in
    /// it are taken as they are (relative to the working directory).
    pub fn parse(
        source_name: &str,
        text: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let fail = |problems| ConfigError {
            source_name: source_name.to_owned(),
            problems,
        };
        let mut table: toml::Table = toml::from_str(text)
            .map_err(|e| fail(vec![Problem::new("file", syntax(&e.to_string()))]))?;
        let mut problems = Vec::new();
        let applied = overrides::apply(&mut table, env, &mut problems);
        if !problems.is_empty() {
            return Err(fail(problems));
        }
        let raw: raw::RawConfig = toml::Value::Table(table).try_into().map_err(|e| {
            let mut message = syntax(&e.to_string());
            message.push_str(hint::for_message(&key_of(&message), &message).unwrap_or(""));
            if !applied.is_empty() {
                message.push_str(&format!(
                    " (after applying the environment overrides {})",
                    applied.join(", ")
                ));
            }
            fail(vec![Problem::new(key_of(&message), message)])
        })?;
        let mut config = validate::validate(raw, env).map_err(fail)?;
        config.source = source_name.to_owned();
        Ok(config)
    }
}

/// Parses a fleet on its own: TOML with only `[[credentials]]` and `[[scale_set]]` tables, as
/// `POST /api/v1/plan` and `/apply` take it. With `env`, secrets are read as in the
/// configuration file (`token_env` from `env`, `token_file` from this machine); without it
/// (text from an API request) `[[credentials]]` tables are refused. Scale sets may name
/// credentials declared in the text or among `stored` (already in the store), and, when
/// `providers` is given, only those providers. Every scale set is parsed by the one spec
/// parser ([`scaleset_store::ScaleSetSpec::parse`]). Every problem is reported at once, each
/// naming its key.
pub fn parse_fleet(
    source_name: &str,
    text: &str,
    env: Option<&BTreeMap<String, String>>,
    stored: &std::collections::BTreeSet<String>,
    providers: Option<&std::collections::BTreeSet<String>>,
) -> Result<Fleet, ConfigError> {
    let fail = |problems| ConfigError {
        source_name: source_name.to_owned(),
        problems,
    };
    let raw: raw::RawFleet = toml::from_str(text).map_err(|e| {
        let message = syntax(&e.to_string());
        fail(vec![Problem::new(key_of(&message), message)])
    })?;
    validate::fleet(raw, env, stored, providers).map_err(fail)
}

/// One line of a TOML error, without its source excerpt.
fn syntax(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|') && !l.chars().all(|c| c == '^'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The key an `unknown field` error names, for the problem's key.
fn key_of(message: &str) -> String {
    message
        .split_once("unknown field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map_or_else(|| "file".to_owned(), |(key, _)| key.to_owned())
}

/// Parses a duration in the file: the one grammar of every door ([`scaleset_duration`]:
/// `"500ms"`, `"30s"`, `"1m30s"`, `"7d"`, a bare number of seconds).
///
/// # Errors
///
/// [`scaleset_duration::Error`] naming the text and what to write instead.
pub fn parse_duration(text: &str) -> Result<Duration, scaleset_duration::Error> {
    scaleset_duration::parse(text)
}

#[cfg(test)]
mod tests;
