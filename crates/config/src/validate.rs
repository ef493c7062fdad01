//! From the raw file to typed values, every problem collected with the key it is about.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use scaleset_provider::{ProviderConfig, ProviderKind, RawProviderConfig};
use scaleset_settings::Settings;
use scaleset_store::{
    AdoptionPolicy, Auth, DatabaseUrl, EncryptionKey, Endpoint, EntityKind, Keyring,
    NewCredentials, RawScaleSetSpec, ScaleSetSpec, SecretString, SqliteSync, StoreOptions,
};
use uuid::Uuid;

use crate::raw::{RawConfig, RawCredentials, RawEncryption, RawScaleSet, RawServer, RawWorker};
use crate::{
    Config, DeclaredScaleSet, FakeConfig, Fleet, Problem, SecretFile, SecretForm, ServerConfig,
    TlsFiles, WorkerConfig, parse_duration,
};

mod app;
mod takeover;
pub use app::describe_credentials;

/// Collects problems.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem::new(key, message));
    }

    fn duration(&mut self, key: &str, text: Option<&str>, default: Duration) -> Duration {
        match text {
            None => default,
            Some(text) => match parse_duration(text) {
                Ok(d) if d > Duration::ZERO => d,
                Ok(_) => {
                    self.add(key, "must be longer than zero");
                    default
                }
                Err(e) => {
                    self.add(key, e.to_string());
                    default
                }
            },
        }
    }

    fn required<'a>(&mut self, key: &str, value: Option<&'a str>, what: &str) -> Option<&'a str> {
        match value.map(str::trim) {
            Some(v) if !v.is_empty() => Some(v),
            _ => {
                self.add(key, format!("missing; {what}"));
                None
            }
        }
    }
}

pub(crate) fn validate(
    raw: RawConfig,
    env: &BTreeMap<String, String>,
) -> Result<Config, Vec<Problem>> {
    let mut p = Problems::default();

    let controller_id =
        raw.controller_id
            .as_deref()
            .and_then(|text| match Uuid::parse_str(text.trim()) {
                Ok(id) => Some(id),
                Err(_) => {
                    p.add(
                        "controller_id",
                        format!(
                            "{text:?} is not a UUID; set it to the UUID this controller was first \
                         started with (it names our sessions, scale sets and instances), or \
                         remove it to use the one stored in the database"
                        ),
                    );
                    None
                }
            });

    let url = p
        .required(
            "database.url",
            raw.database.url.as_deref(),
            "write sqlite:///var/lib/scaleset/scaleset.db or postgres://user@host/db",
        )
        .and_then(|text| match DatabaseUrl::parse(text) {
            Ok(url) => Some(url),
            Err(e) => {
                p.add("database.url", e.to_string());
                None
            }
        });
    let pool_size = positive(&mut p, "database.pool_size", raw.database.pool_size, 8);
    let event_retention = positive(
        &mut p,
        "database.event_retention",
        raw.database.event_retention,
        200,
    );
    let busy_timeout = p.duration(
        "database.busy_timeout",
        raw.database.busy_timeout.as_deref(),
        Duration::from_secs(5),
    );
    let connect_timeout = p.duration(
        "database.connect_timeout",
        raw.database.connect_timeout.as_deref(),
        Duration::from_secs(30),
    );
    let sqlite_sync = match raw.database.sqlite_synchronous.as_deref().map(str::parse) {
        None => SqliteSync::default(),
        Some(Ok(mode)) => mode,
        Some(Err(e)) => {
            p.add("database.sqlite_synchronous", e.to_string());
            SqliteSync::default()
        }
    };
    let keyring = keyring(&mut p, &raw.encryption, env);

    let (worker, settings) = worker(&mut p, &raw.worker, env);
    let server = server(&mut p, &raw.server);
    let providers = providers(&mut p, raw.provider);
    if raw.worker.instance_api_url.is_none() {
        external_needs_instance_api_url(&mut p, &providers);
    }
    if !raw.fake.as_ref().and_then(|f| f.allow).unwrap_or(false) {
        fake_needs_opt_in(&mut p, &providers);
    }
    let fake = fake(&mut p, raw.fake);
    let (credentials, secret_files) = credentials(&mut p, &raw.credentials, env);
    let names: BTreeSet<&str> = credentials.iter().map(|c| c.name.as_str()).collect();
    let provider_names: BTreeSet<&str> = providers.iter().map(|c| c.name.as_str()).collect();
    let scale_sets = scale_sets(&mut p, &raw.scale_set, &names, Some(&provider_names));

    match (url, keyring) {
        (Some(url), Some(keyring)) if p.0.is_empty() => {
            let store = StoreOptions::new(url, keyring)
                .pool_size(pool_size)
                .busy_timeout(busy_timeout)
                .connect_timeout(connect_timeout)
                .event_retention(event_retention)
                .sqlite_synchronous(sqlite_sync)
                .controller_id(controller_id);
            Ok(Config {
                controller_id,
                owner_label: raw.owner_label.unwrap_or(true),
                store,
                worker,
                server,
                settings,
                providers,
                fake,
                fleet: Fleet {
                    credentials,
                    scale_sets,
                },
                secret_files,
                source: String::new(),
            })
        }
        _ => Err(p.0),
    }
}

fn positive(p: &mut Problems, key: &str, value: Option<i64>, default: u32) -> u32 {
    match value {
        None => default,
        Some(n) => match u32::try_from(n) {
            Ok(n) if n > 0 => n,
            _ => {
                p.add(key, format!("{n} is not a positive number"));
                default
            }
        },
    }
}

fn keyring(
    p: &mut Problems,
    raw: &RawEncryption,
    env: &BTreeMap<String, String>,
) -> Option<Keyring> {
    let primary_id = p.required(
        "encryption.primary_key_id",
        raw.primary_key_id.as_deref(),
        "name the key that seals secrets, and give it in [[encryption.keys]] (see \
         docs/configuration.md, \"Encryption of secrets\")",
    );
    let mut keys = Vec::new();
    for (index, key) in raw.keys.iter().enumerate() {
        let at = format!("encryption.keys[{index}]");
        let Some(id) = p.required(&format!("{at}.id"), key.id.as_deref(), "give the key an id")
        else {
            continue;
        };
        let text = match (&key.file, &key.env) {
            (Some(file), None) => match std::fs::read_to_string(file) {
                Ok(text) => text,
                Err(e) => {
                    p.add(
                        format!("{at}.file"),
                        format!("cannot read key {id:?} from {}: {e}", file.display()),
                    );
                    continue;
                }
            },
            (None, Some(name)) => match env.get(name) {
                Some(text) => text.clone(),
                None => {
                    p.add(
                        format!("{at}.env"),
                        format!("the environment variable {name} holding key {id:?} is not set"),
                    );
                    continue;
                }
            },
            _ => {
                p.add(
                    at.clone(),
                    format!("key {id:?}: give exactly one of `file` or `env`"),
                );
                continue;
            }
        };
        match EncryptionKey::from_base64(id, &text) {
            Ok(key) => keys.push(key),
            // The store's message names the key id and never the key material.
            Err(e) => p.add(at, e.to_string()),
        }
    }
    let primary_id = primary_id?;
    let Some(position) = keys.iter().position(|k| k.id() == primary_id) else {
        if !p
            .0
            .iter()
            .any(|problem| problem.key.starts_with("encryption.keys"))
        {
            p.add(
                "encryption.primary_key_id",
                format!(
                    "no [[encryption.keys]] entry has id {primary_id:?}; add the key (a file or \
                     environment variable holding base64 of 32 random bytes)"
                ),
            );
        }
        return None;
    };
    let primary = keys.remove(position);
    let mut keyring = Keyring::new(primary);
    for key in keys {
        let id = key.id().to_owned();
        keyring = match keyring.with_older_key(key) {
            Ok(k) => k,
            Err(e) => {
                p.add(format!("encryption.keys ({id})"), e.to_string());
                return None;
            }
        };
    }
    Some(keyring)
}

fn worker(
    p: &mut Problems,
    raw: &RawWorker,
    env: &BTreeMap<String, String>,
) -> (WorkerConfig, Settings) {
    let name = match raw.name.as_deref().map(str::trim) {
        Some(name) => {
            if let Some(problem) = scaleset_store::worker_name_problem(name) {
                p.add("worker.name", problem);
            }
            name.to_owned()
        }
        None => env
            .get("HOSTNAME")
            .filter(|h| !h.trim().is_empty())
            .cloned()
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_owned())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| "scaleset-worker".to_owned()),
    };
    let listen = match raw.listen.as_deref() {
        None => SocketAddr::from(([127, 0, 0, 1], 9464)),
        Some(text) => text.trim().parse().unwrap_or_else(|_| {
            p.add(
                "worker.listen",
                format!("{text:?} is not an address and port; write e.g. \"127.0.0.1:9464\""),
            );
            SocketAddr::from(([127, 0, 0, 1], 9464))
        }),
    };
    let defaults = Settings::default();
    let mut settings = Settings {
        worker: name.clone(),
        ..Settings::default()
    };
    settings.lease_ttl = p.duration(
        "worker.lease_ttl",
        raw.lease_ttl.as_deref(),
        defaults.lease_ttl,
    );
    settings.watch_interval = p.duration(
        "worker.watch_interval",
        raw.watch_interval.as_deref(),
        defaults.watch_interval,
    );
    settings.backoff_base = p.duration(
        "worker.backoff_base",
        raw.backoff_base.as_deref(),
        defaults.backoff_base,
    );
    settings.backoff_max = p.duration(
        "worker.backoff_max",
        raw.backoff_max.as_deref(),
        defaults.backoff_max,
    );
    settings.refused_recheck = p.duration(
        "worker.refused_recheck",
        raw.refused_recheck.as_deref(),
        defaults.refused_recheck,
    );
    settings.foreign_session_recheck = p.duration(
        "worker.foreign_session_recheck",
        raw.foreign_session_recheck.as_deref(),
        defaults.foreign_session_recheck,
    );
    settings.reconcile_interval = p.duration(
        "worker.reconcile_interval",
        raw.reconcile_interval.as_deref(),
        defaults.reconcile_interval,
    );
    settings.takeover_session_recheck = p.duration(
        "worker.takeover_session_recheck",
        raw.takeover_session_recheck.as_deref(),
        defaults.takeover_session_recheck,
    );
    settings.provider_backoff_base = p.duration(
        "worker.provider_backoff_base",
        raw.provider_backoff_base.as_deref(),
        defaults.provider_backoff_base,
    );
    settings.provider_backoff_max = p.duration(
        "worker.provider_backoff_max",
        raw.provider_backoff_max.as_deref(),
        defaults
            .provider_backoff_max
            .max(settings.provider_backoff_base),
    );
    if settings.provider_backoff_max < settings.provider_backoff_base {
        p.add(
            "worker.provider_backoff_max",
            format!(
                "{:?} is shorter than provider_backoff_base ({:?}); make it at least as long",
                settings.provider_backoff_max, settings.provider_backoff_base
            ),
        );
    }
    settings.bootstrap_backoff_base = p.duration(
        "worker.bootstrap_backoff_base",
        raw.bootstrap_backoff_base.as_deref(),
        defaults.bootstrap_backoff_base,
    );
    settings.bootstrap_backoff_max = p.duration(
        "worker.bootstrap_backoff_max",
        raw.bootstrap_backoff_max.as_deref(),
        defaults
            .bootstrap_backoff_max
            .max(settings.bootstrap_backoff_base),
    );
    if settings.bootstrap_backoff_max < settings.bootstrap_backoff_base {
        p.add(
            "worker.bootstrap_backoff_max",
            format!(
                "{:?} is shorter than bootstrap_backoff_base ({:?}); make it at least as long",
                settings.bootstrap_backoff_max, settings.bootstrap_backoff_base
            ),
        );
    }
    settings.max_concurrent_starts = positive(
        p,
        "worker.max_concurrent_starts",
        raw.max_concurrent_starts,
        u32::try_from(defaults.max_concurrent_starts).unwrap_or(u32::MAX),
    ) as usize;
    settings.max_concurrent_recoveries = positive(
        p,
        "worker.max_concurrent_recoveries",
        raw.max_concurrent_recoveries,
        u32::try_from(defaults.max_concurrent_recoveries).unwrap_or(u32::MAX),
    ) as usize;
    for (name, file) in &raw.runner_install_templates {
        let key = format!("worker.runner_install_templates.{name}");
        if !scaleset_store::is_template_name(name) {
            p.add(
                key,
                "a template name is 1–64 of A-Z a-z 0-9 . _ -, starting with a letter or digit",
            );
        } else if !file.is_absolute() {
            p.add(
                key,
                format!(
                    "{} is not an absolute path; give the template file's full path",
                    file.display()
                ),
            );
        } else {
            settings
                .runner_install_templates
                .insert(name.clone(), file.clone());
        }
    }
    settings.instance_api_url = raw.instance_api_url.as_deref().and_then(|text| {
        let url = http_url(p, "worker.instance_api_url", text)?;
        if url.query().is_some() || url.fragment().is_some() {
            p.add(
                "worker.instance_api_url",
                format!(
                    "{text:?} has a query or fragment; give the server's base URL as \
                     instances reach it, e.g. \"https://scaleset.example.com\""
                ),
            );
            return None;
        }
        Some(url)
    });
    let shutdown_timeout = p.duration(
        "worker.shutdown_timeout",
        raw.shutdown_timeout.as_deref(),
        Duration::from_secs(30),
    );
    (
        WorkerConfig {
            name,
            listen,
            shutdown_timeout,
        },
        settings,
    )
}

fn server(p: &mut Problems, raw: &RawServer) -> ServerConfig {
    let default_listen = SocketAddr::from(([127, 0, 0, 1], 8080));
    let listen = match raw.listen.as_deref() {
        None => default_listen,
        Some(text) => text.trim().parse().unwrap_or_else(|_| {
            p.add(
                "server.listen",
                format!("{text:?} is not an address and port; write e.g. \"127.0.0.1:8080\""),
            );
            default_listen
        }),
    };
    let tls = match (&raw.tls_cert_file, &raw.tls_key_file) {
        (None, None) => None,
        (Some(cert), Some(key)) => {
            for (name, path) in [("server.tls_cert_file", cert), ("server.tls_key_file", key)] {
                if !path.is_file() {
                    p.add(
                        name,
                        format!(
                            "{} is not a readable file; give the PEM file's path",
                            path.display()
                        ),
                    );
                }
            }
            Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            })
        }
        (Some(_), None) => {
            p.add(
                "server.tls_key_file",
                "is missing: TLS needs both the certificate and its key",
            );
            None
        }
        (None, Some(_)) => {
            p.add(
                "server.tls_cert_file",
                "is missing: TLS needs both the certificate and its key",
            );
            None
        }
    };
    let max_body_size = match raw.max_body_size {
        None => 256 * 1024,
        Some(n) if (1024..=64 * 1024 * 1024).contains(&n) => {
            usize::try_from(n).unwrap_or(256 * 1024)
        }
        Some(n) => {
            p.add(
                "server.max_body_size",
                format!("{n} is outside 1024–67108864 bytes"),
            );
            256 * 1024
        }
    };
    let header_read_timeout = p.duration(
        "server.header_read_timeout",
        raw.header_read_timeout.as_deref(),
        Duration::from_secs(10),
    );
    let idle_timeout = p.duration(
        "server.idle_timeout",
        raw.idle_timeout.as_deref(),
        Duration::from_secs(60),
    );
    let max_connections = positive(p, "server.max_connections", raw.max_connections, 1024);
    let http2_max_concurrent_streams = positive(
        p,
        "server.http2_max_concurrent_streams",
        raw.http2_max_concurrent_streams,
        100,
    );
    let http2_max_header_list_size = match raw.http2_max_header_list_size {
        None => 64 * 1024,
        Some(n) if (1024..=16 * 1024 * 1024).contains(&n) => u32::try_from(n).unwrap_or(64 * 1024),
        Some(n) => {
            p.add(
                "server.http2_max_header_list_size",
                format!("{n} is outside 1024–16777216 bytes"),
            );
            64 * 1024
        }
    };
    ServerConfig {
        listen,
        tls,
        max_body_size,
        header_read_timeout,
        idle_timeout,
        max_connections: usize::try_from(max_connections).unwrap_or(1024),
        http2_max_concurrent_streams,
        http2_max_header_list_size,
        behind_tls_proxy: raw.behind_tls_proxy.unwrap_or(false),
    }
}

fn providers(p: &mut Problems, raw: Vec<RawProviderConfig>) -> Vec<ProviderConfig> {
    match ProviderConfig::from_raw_list(raw) {
        Ok(list) => list,
        Err(e) => {
            for problem in e.problems {
                p.add(
                    format!("provider {}.{}", problem.provider, problem.field),
                    problem.message,
                );
            }
            Vec::new()
        }
    }
}

/// An external provider's instances are GARM images: they fetch their runner's JIT config from
/// `worker.instance_api_url` with the token the controller grants them, and are given neither
/// without it (external executables never see the JIT config). Such a worker would start
/// machines that can never register, each costing a bootstrap timeout, so the file is refused
/// at load (and by `--check`) rather than warned about at start, where it scrolls away.
fn external_needs_instance_api_url(p: &mut Problems, providers: &[ProviderConfig]) {
    let external: Vec<String> = providers
        .iter()
        .filter(|provider| matches!(provider.kind, ProviderKind::External(_)))
        .map(|provider| format!("{:?}", provider.name))
        .collect();
    if external.is_empty() {
        return;
    }
    p.add(
        "worker.instance_api_url",
        format!(
            "not set, but external provider {} needs it: its instances fetch their runner \
             configuration from scaleset-server's metadata endpoint with an instance token, and \
             without this URL they get neither and never register; set it to scaleset-server's \
             URL as the machines reach it, e.g. \"https://scaleset.example.com\" \
             (docs/providers.md)",
            external.join(", ")
        ),
    );
}

/// The fake provider starts no machine: on a real GitHub its runners are registered and never
/// come online, so jobs wait for them. A file that names it is a test's, a demo's, or a copied
/// example nobody finished beside a real token, and only the first two say so with
/// `[fake] allow = true`.
fn fake_needs_opt_in(p: &mut Problems, providers: &[ProviderConfig]) {
    for provider in providers {
        if matches!(provider.kind, ProviderKind::Fake) {
            p.add(
                format!("provider {:?}.kind", provider.name),
                "\"fake\" is the in-process stand-in for tests and the demo: it starts no \
                 machine, so the runners it registers on GitHub never come online and jobs wait \
                 for them; use a real provider (kind = \"external\", docs/providers.md), or, \
                 for a test or a demo against the simulator, opt in with `[fake] allow = true` \
                 (or SCALESET_FAKE__ALLOW=true)",
            );
        }
    }
}

fn fake(p: &mut Problems, raw: Option<crate::raw::RawFake>) -> FakeConfig {
    let Some(raw) = raw else {
        return FakeConfig::default();
    };
    let simulator_url = raw
        .simulator_url
        .as_deref()
        .and_then(|text| http_url(p, "fake.simulator_url", text));
    FakeConfig {
        state_dir: raw.state_dir,
        simulator_url,
    }
}

fn http_url(p: &mut Problems, key: &str, text: &str) -> Option<url::Url> {
    match url::Url::parse(text.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Some(url),
        Ok(_) => {
            p.add(key, format!("{text:?} is not an http(s) URL with a host"));
            None
        }
        Err(e) => {
            p.add(key, format!("{text:?} is not a URL: {e}"));
            None
        }
    }
}

/// The declared credentials, and which of their secrets live in files (to re-read on rotation).
fn credentials(
    p: &mut Problems,
    raw: &[RawCredentials],
    env: &BTreeMap<String, String>,
) -> (Vec<NewCredentials>, Vec<SecretFile>) {
    let mut out: Vec<NewCredentials> = Vec::new();
    let mut files = Vec::new();
    for (index, c) in raw.iter().enumerate() {
        let at = format!("credentials[{index}]");
        let name = p.required(
            &format!("{at}.name"),
            c.name.as_deref(),
            "name the credentials",
        );
        // The API base URL is derived by the store's Endpoint, the one derivation.
        let endpoint = Endpoint::parse(
            c.base_url.as_deref().unwrap_or("https://github.com"),
            c.api_base_url.as_deref(),
            None,
        )
        .map_err(|problems| {
            for problem in problems {
                p.add(format!("{at}.{}", problem.field), problem.message);
            }
        })
        .ok();
        let auth = if app::declared(c) {
            app::auth(p, &at, c, env)
        } else {
            pat(p, &at, c, env).map(|token| Auth::Pat {
                token: SecretString::from(token),
            })
        };
        let ca_bundle = c
            .ca_bundle_file
            .as_ref()
            .and_then(|file| ca_bundle(p, &format!("{at}.ca_bundle_file"), file));
        let system_trust = trust_roots(p, &at, c);
        if let Some(name) = name
            && out.iter().any(|o| o.name == name)
        {
            p.add(format!("{at}.name"), format!("{name:?} is declared twice"));
            continue;
        }
        if let (Some(name), Some(endpoint), Some(auth)) = (name, endpoint, auth) {
            let file = match &auth {
                Auth::Pat { .. } => c.token_file.clone().map(|path| (path, SecretForm::Pat)),
                Auth::App {
                    app,
                    installation_id,
                    ..
                } => c.private_key_file.clone().map(|path| {
                    (
                        path,
                        SecretForm::AppKey {
                            app: app.clone(),
                            installation_id: *installation_id,
                        },
                    )
                }),
            };
            if let Some((path, form)) = file {
                files.push(SecretFile {
                    credentials: name.to_owned(),
                    path,
                    form,
                });
            }
            out.push(NewCredentials {
                name: name.to_owned(),
                endpoint: Endpoint {
                    ca_bundle,
                    system_trust,
                    ..endpoint
                },
                auth,
            });
        }
    }
    (out, files)
}

/// The CA bundle in `file`, parsed by the GitHub client's own parser
/// ([`scaleset_github::ca_bundle_roots`]): a bundle the client could not trust is refused here,
/// naming its key, not at the first connection.
fn ca_bundle(p: &mut Problems, key: &str, file: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| p.add(key, format!("cannot read {}: {e}", file.display())))
        .ok()?;
    match scaleset_github::ca_bundle_roots(text.as_bytes()) {
        Ok(_) => Some(text),
        Err(e) => {
            p.add(
                key,
                format!(
                    "{}: {e}; give the PEM certificates of the CA that signed the server's \
                     certificate",
                    file.display()
                ),
            );
            None
        }
    }
}

/// `trust_roots` of table `at`: whether the machine's certificate store is trusted instead of
/// the built-in roots.
fn trust_roots(p: &mut Problems, at: &str, c: &RawCredentials) -> bool {
    let key = format!("{at}.trust_roots");
    let system = match c.trust_roots.as_deref().map(str::trim) {
        None | Some("builtin") => false,
        Some("system") => true,
        Some(other) => {
            p.add(
                &key,
                format!(
                    "{other:?} is not a choice; write \"builtin\" (the web PKI roots built in: \
                     github.com, GHE.com) or \"system\" (this machine's certificate store, for \
                     a GHES whose CA is installed there)"
                ),
            );
            false
        }
    };
    if c.trust_roots.is_some() && c.ca_bundle_file.is_some() {
        p.add(
            key,
            "give trust_roots or ca_bundle_file, not both: a CA bundle is the only thing \
             trusted when it is given; remove one of them",
        );
    }
    system
}

/// The PAT form of table `at`: `token_env` or `token_file`, the token trimmed and one the
/// GitHub client can send ([`scaleset_github::check_pat`]).
fn pat(
    p: &mut Problems,
    at: &str,
    c: &RawCredentials,
    env: &BTreeMap<String, String>,
) -> Option<String> {
    let key = if c.token_env.is_some() {
        format!("{at}.token_env")
    } else {
        format!("{at}.token_file")
    };
    let token = pat_text(p, at, c, env)?;
    match scaleset_github::check_pat(&token) {
        Ok(()) => Some(token),
        Err(e) => {
            p.add(key, e.to_string());
            None
        }
    }
}

/// The PAT's text as `token_env` or `token_file` holds it, trimmed.
fn pat_text(
    p: &mut Problems,
    at: &str,
    c: &RawCredentials,
    env: &BTreeMap<String, String>,
) -> Option<String> {
    match (&c.token_env, &c.token_file) {
        (Some(var), None) => match env.get(var) {
            Some(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
            _ => {
                p.add(
                    format!("{at}.token_env"),
                    format!("the environment variable {var} holding the token is not set"),
                );
                None
            }
        },
        (None, Some(file)) => match std::fs::read_to_string(file) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
            Ok(_) => {
                p.add(
                    format!("{at}.token_file"),
                    format!("{} is empty", file.display()),
                );
                None
            }
            Err(e) => {
                p.add(
                    format!("{at}.token_file"),
                    format!("cannot read {}: {e}", file.display()),
                );
                None
            }
        },
        _ => {
            p.add(
                at,
                "give exactly one of `token_env` or `token_file` (never a token inline), or a \
                 GitHub App (`app_id` or `client_id`, `installation_id` and `private_key_file` or \
                 `private_key_env`)",
            );
            None
        }
    }
}

fn scale_sets(
    p: &mut Problems,
    raw: &[RawScaleSet],
    credentials: &BTreeSet<&str>,
    providers: Option<&BTreeSet<&str>>,
) -> Vec<DeclaredScaleSet> {
    let mut out: Vec<DeclaredScaleSet> = Vec::new();
    for (index, s) in raw.iter().enumerate() {
        let at = format!("scale_set[{index}]");
        let key = |field: &str| format!("{at}.{field}");
        let cred = p.required(
            &key("credentials"),
            s.credentials.as_deref(),
            "name one of the [[credentials]]",
        );
        if let Some(cred) = cred
            && !credentials.contains(cred)
            && !p.0.iter().any(|pr| pr.key.starts_with("credentials"))
        {
            p.add(
                key("credentials"),
                format!("no [[credentials]] is named {cred:?}"),
            );
        }
        let entity = match (&s.organization, &s.repository, &s.enterprise) {
            (Some(org), None, None) if !org.trim().is_empty() => Some(EntityKind::Organization {
                name: org.trim().to_owned(),
            }),
            (None, Some(repo), None) => match repo.trim().split_once('/') {
                Some((owner, name))
                    if !owner.is_empty() && !name.is_empty() && !name.contains('/') =>
                {
                    Some(EntityKind::Repository {
                        owner: owner.to_owned(),
                        name: name.to_owned(),
                    })
                }
                _ => {
                    p.add(key("repository"), format!("{repo:?} is not \"owner/name\""));
                    None
                }
            },
            (None, None, Some(slug)) if !slug.trim().is_empty() => Some(EntityKind::Enterprise {
                slug: slug.trim().to_owned(),
            }),
            _ => {
                p.add(
                    at.clone(),
                    "give exactly one of `organization`, `repository` (\"owner/name\") or `enterprise`",
                );
                None
            }
        };
        // Only this door's syntax is read here (a duration's text, a policy's name, a TOML
        // table); every rule of the spec itself is the store's one parser.
        let bootstrap_timeout = s.bootstrap_timeout.as_deref().and_then(|text| {
            parse_duration(text)
                .map_err(|e| p.add(key("bootstrap_timeout"), e.to_string()))
                .ok()
        });
        let mut lifecycle = |field: &str, text: Option<&str>| {
            text.and_then(|text| {
                parse_duration(text)
                    .map_err(|e| p.add(key(field), e.to_string()))
                    .ok()
            })
        };
        let scale_down_delay = lifecycle("scale_down_delay", s.scale_down_delay.as_deref());
        let max_idle_lifetime = lifecycle("max_idle_lifetime", s.max_idle_lifetime.as_deref());
        let max_lifetime = lifecycle("max_lifetime", s.max_lifetime.as_deref());
        let adoption_policy = s.adoption_policy.as_deref().and_then(|text| {
            AdoptionPolicy::parse(text)
                .map_err(|problem| p.add(key(&problem.field), problem.message))
                .ok()
        });
        let extra_specs = s.extra_specs.as_ref().and_then(|value| {
            serde_json::to_value(value)
                .map_err(|e| {
                    p.add(
                        key("extra_specs"),
                        format!("cannot be passed to the provider as JSON: {e}"),
                    );
                })
                .ok()
        });
        let parsed = ScaleSetSpec::parse(RawScaleSetSpec {
            name: s.name.clone(),
            runner_group: s.runner_group.clone(),
            labels: s.labels.clone(),
            disable_update: s.disable_update,
            provider: s.provider.clone(),
            image: s.image.clone(),
            flavor: s.flavor.clone(),
            os_type: s.os_type.clone(),
            os_arch: s.os_arch.clone(),
            runner_setup: scaleset_store::RunnerSetup {
                http_proxy: s.http_proxy.clone(),
                https_proxy: s.https_proxy.clone(),
                no_proxy: s.no_proxy.clone(),
                ssh_keys: s.ssh_keys.clone(),
                extra_packages: s.extra_packages.clone(),
                disable_updates_on_boot: s.disable_updates_on_boot.unwrap_or(false),
                enable_boot_debug: s.enable_boot_debug.unwrap_or(false),
                runner_install_template: s.runner_install_template.clone(),
            },
            min_idle: s.min_idle,
            max_runners: s.max_runners,
            bootstrap_timeout,
            runner_prefix: s.runner_prefix.clone(),
            extra_specs,
            enabled: s.enabled,
            adoption_policy,
            repair: s.repair,
            scale_down_delay,
            max_idle_lifetime,
            max_lifetime,
        });
        let spec = match parsed {
            Ok(spec) => spec,
            Err(problems) => {
                for problem in problems {
                    p.add(key(&problem.field), problem.message);
                }
                continue;
            }
        };
        if let Some(known) = providers
            && !p.0.iter().any(|pr| pr.key.starts_with("provider "))
            && let Some(problem) = spec.unknown_provider(known.iter().copied())
        {
            p.add(key(&problem.field), problem.message);
            continue;
        }
        if let (Some(cred), Some(entity)) = (cred, entity) {
            if out.iter().any(|o| {
                o.entity == entity
                    && o.spec.name() == spec.name()
                    && o.spec.runner_group().name == spec.runner_group().name
            }) {
                p.add(
                    key("name"),
                    format!(
                        "{:?} is declared twice in runner group {:?}",
                        spec.name(),
                        spec.runner_group().name
                    ),
                );
                continue;
            }
            let takeover = s
                .takeover
                .as_ref()
                .and_then(|raw| takeover::note(p, &key("takeover"), raw, spec.runner_prefix()));
            out.push(DeclaredScaleSet {
                credentials: cred.to_owned(),
                entity,
                spec,
                takeover,
            });
        }
    }
    out
}

/// A fleet on its own (`[[credentials]]` and `[[scale_set]]` only): credentials named by scale
/// sets may be declared here or be among `stored`; provider names are checked against
/// `providers` when given. Without `env`, `[[credentials]]`
/// tables are refused: reading a secret from the environment or a file is for the operator's
/// own files, never for text sent by an API caller.
pub(crate) fn fleet(
    raw: crate::raw::RawFleet,
    env: Option<&BTreeMap<String, String>>,
    stored: &BTreeSet<String>,
    providers: Option<&BTreeSet<String>>,
) -> Result<Fleet, Vec<Problem>> {
    let mut p = Problems::default();
    let credentials = match env {
        Some(env) => credentials(&mut p, &raw.credentials, env).0,
        None => {
            for index in 0..raw.credentials.len() {
                p.add(
                    format!("credentials[{index}]"),
                    "a fleet sent to the API cannot declare credentials (the server reads no \
                     secret from its environment or files for a request); create them with \
                     scalesetctl credential create NAME --pat-env VAR and name them in the \
                     scale sets",
                );
            }
            Vec::new()
        }
    };
    let names: BTreeSet<&str> = credentials
        .iter()
        .map(|c| c.name.as_str())
        .chain(stored.iter().map(String::as_str))
        .collect();
    let providers: Option<BTreeSet<&str>> =
        providers.map(|known| known.iter().map(String::as_str).collect());
    let scale_sets = scale_sets(&mut p, &raw.scale_set, &names, providers.as_ref());
    if p.0.is_empty() {
        Ok(Fleet {
            credentials,
            scale_sets,
        })
    } else {
        Err(p.0)
    }
}
