//! The simulator's configuration: what GitHub "contains" at start (organizations, repositories,
//! enterprises, PATs, App installations, runner groups) and the behaviour switches the protocol
//! reference asks a fake to offer (TTLs, long-poll hold, assignment mode, timers).

use std::time::Duration;

use crate::app_auth::AppPublicKey;
use crate::scope::Scope;
use crate::tls::TlsIdentity;

/// How jobs reach a scale set's listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AssignmentMode {
    /// github.com's broker: jobs arrive as `JobAssigned` (`runnerRequestId` 0, `jobId` set);
    /// `acquirejobs` answers a router-level text/plain 404.
    #[default]
    AutoAssign,
    /// GHES: jobs arrive as `JobAvailable` with `runnerRequestId`s that the listener must
    /// acquire; acquired jobs are then assigned.
    AvailableThenAcquire,
}

/// A personal access token seeded into the simulator (its `Debug` output hides the token).
#[derive(Clone, PartialEq, Eq)]
pub struct PatSeed {
    /// The token text clients send as `Authorization: Bearer <token>`.
    pub token: String,
    /// The scopes (config-URL paths such as `acme`, `acme/widgets`, `enterprises/big`) the token
    /// may register runners for; empty means every seeded scope.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for PatSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PatSeed")
            .field("token", &"[redacted]")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// A GitHub App registered with the simulator: the ids its JWTs may carry as `iss` and the
/// public key their RS256 signatures must verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSeed {
    /// The App id (`iss` may be it, as a string or a number).
    pub id: String,
    /// The App's client id (`Iv1.…`), which `iss` may be instead.
    pub client_id: Option<String>,
    /// The App's public key.
    pub public_key: AppPublicKey,
}

/// A GitHub App installation seeded into the simulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationSeed {
    /// The installation id (`/app/installations/{id}/access_tokens`).
    pub id: i64,
    /// The App id or client id that App JWTs must carry as `iss`. When an [`AppSeed`] has that
    /// id, JWTs are checked against its key; an App no seed registers is known by its
    /// installations alone and its signatures are not checked.
    pub app_id: String,
    /// The accounts (organizations or repository owners) the installation may act on.
    pub accounts: Vec<String>,
}

/// A runner group seeded into one scope, in addition to the default group (id 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerGroupSeed {
    /// The scope's config-URL path (`acme`, `acme/widgets`, `enterprises/big`).
    pub scope: String,
    /// The group's name.
    pub name: String,
}

/// Everything a simulator starts from. [`SimConfig::default`] is the quick-start seed documented
/// in `docs/simulator.md`: organization `acme`, repository `acme/widgets`, enterprise
/// `acme-corp`, PAT `ghp_simulator` for all of them, and App installation 1 (App id `1`) on
/// `acme`.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Organization logins.
    pub organizations: Vec<String>,
    /// Repositories as `owner/name`.
    pub repositories: Vec<String>,
    /// Enterprise slugs.
    pub enterprises: Vec<String>,
    /// Personal access tokens.
    pub pats: Vec<PatSeed>,
    /// GitHub Apps with their public keys: the JWTs of these Apps must carry a valid RS256
    /// signature (default: none registered).
    pub apps: Vec<AppSeed>,
    /// GitHub App installations.
    pub installations: Vec<InstallationSeed>,
    /// Extra runner groups (every scope has the default group, id 1, named `Default`).
    pub runner_groups: Vec<RunnerGroupSeed>,
    /// Path prefix of the Actions service, returned by `runner-registration` (default `/tenant/1/`).
    pub actions_base_path: String,
    /// Path of the message queue, returned as `messageQueueUrl` (default `/scalesets/message`).
    pub queue_path: String,
    /// Lifetime of admin tokens (default 1 h).
    pub admin_token_ttl: Duration,
    /// Lifetime of message-queue tokens (default 1 h).
    pub queue_token_ttl: Duration,
    /// Lifetime of registration tokens (default 1 h).
    pub registration_token_ttl: Duration,
    /// Lifetime of installation tokens (default 1 h).
    pub installation_token_ttl: Duration,
    /// How long a message GET is held before answering 202 (real time; default 50 s).
    pub long_poll_hold: Duration,
    /// Auto-assign (github.com) or available-then-acquire (GHES).
    pub assignment: AssignmentMode,
    /// A job assigned to a scale set but not taken by a runner within this simulated time is
    /// cancelled and requeued (`None`, the default, disables reassignment).
    pub reassign_after: Option<Duration>,
    /// How many times a job is requeued before it is cancelled for good (default 3).
    pub max_reassignments: u32,
    /// A scale set with no session for this simulated time is deleted (default 7 days;
    /// `None` disables dormancy).
    pub dormancy: Option<Duration>,
    /// A session neither polled nor refreshed for this simulated time is dropped, as a leaked
    /// session eventually is on GitHub (`None`, the default: sessions never expire; the real
    /// expiry time is unverified).
    pub session_expiry: Option<Duration>,
    /// How long a simulated runner's job runs, in simulated time (default 30 s).
    pub runner_job_duration: Duration,
    /// How `JobStarted` reaches the listener. Above zero (the default, 50 s, as github.com):
    /// it wakes no held long-poll; it goes out with the next message the scale set gets for
    /// another job event, or on its own once it is this old in simulated time. Zero: it wakes a
    /// held long-poll at once (fast tests).
    pub job_started_delay: Duration,
    /// Whether a 409 session conflict names the owner of the active session (default `false`,
    /// today's wording).
    pub conflict_names_owner: bool,
    /// How often timers (dormancy, reassignment, simulated runners) are checked in real time
    /// (default 100 ms). Advancing time checks them at once.
    pub tick_interval: Duration,
    /// How many requests the request log keeps (default 10 000).
    pub request_log_capacity: usize,
    /// Serve HTTPS with this certificate (ALPN `h2` and `http/1.1`) instead of plain HTTP
    /// (default `None`: plain HTTP, HTTP/1.1 or h2c by prior knowledge).
    pub tls: Option<TlsIdentity>,
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` advertised on HTTP/2 connections: how many
    /// requests (held long-polls included) one connection carries at once (default 200; tests
    /// use a low limit to make clients open more connections).
    pub http2_max_concurrent_streams: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            organizations: vec!["acme".to_owned()],
            repositories: vec!["acme/widgets".to_owned()],
            enterprises: vec!["acme-corp".to_owned()],
            pats: vec![PatSeed {
                token: "ghp_simulator".to_owned(),
                scopes: Vec::new(),
            }],
            apps: Vec::new(),
            installations: vec![InstallationSeed {
                id: 1,
                app_id: "1".to_owned(),
                accounts: vec!["acme".to_owned()],
            }],
            runner_groups: Vec::new(),
            actions_base_path: "/tenant/1/".to_owned(),
            queue_path: "/scalesets/message".to_owned(),
            admin_token_ttl: Duration::from_secs(3600),
            queue_token_ttl: Duration::from_secs(3600),
            registration_token_ttl: Duration::from_secs(3600),
            installation_token_ttl: Duration::from_secs(3600),
            long_poll_hold: Duration::from_secs(50),
            assignment: AssignmentMode::AutoAssign,
            reassign_after: None,
            max_reassignments: 3,
            dormancy: Some(Duration::from_secs(7 * 24 * 3600)),
            session_expiry: None,
            runner_job_duration: Duration::from_secs(30),
            job_started_delay: Duration::from_secs(50),
            conflict_names_owner: false,
            tick_interval: Duration::from_millis(100),
            request_log_capacity: 10_000,
            tls: None,
            http2_max_concurrent_streams: 200,
        }
    }
}

impl SimConfig {
    /// A configuration with nothing seeded (no organizations, PATs or installations) and the
    /// default behaviour switches.
    pub fn empty() -> Self {
        Self {
            organizations: Vec::new(),
            repositories: Vec::new(),
            enterprises: Vec::new(),
            pats: Vec::new(),
            apps: Vec::new(),
            installations: Vec::new(),
            ..Self::default()
        }
    }

    /// Checks the configuration, reporting every problem at once.
    pub(crate) fn validate(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        for path in [&self.actions_base_path, &self.queue_path] {
            if !path.starts_with('/') || path.contains(['?', '#']) {
                problems.push(format!(
                    "path {path:?} must start with '/' and carry no query"
                ));
            }
        }
        let base = normalize_base(&self.actions_base_path);
        let queue = normalize_queue(&self.queue_path);
        if queue.starts_with(&base) || base == "/" || base.starts_with("/api/v3/") {
            problems.push(format!(
                "actions base path {base:?} must not contain the queue path {queue:?}, be '/', or sit under /api/v3/"
            ));
        }
        if base.starts_with("/_sim/") || queue.starts_with("/_sim") {
            problems.push("paths under /_sim/ are reserved for the control API".to_owned());
        }
        for repo in &self.repositories {
            if Scope::parse_path(repo).is_none_or(|s| !matches!(s, Scope::Repository { .. })) {
                problems.push(format!("repository {repo:?} must be written owner/name"));
            }
        }
        for group in &self.runner_groups {
            if Scope::parse_path(&group.scope).is_none() {
                problems.push(format!(
                    "runner group {:?}: scope {:?} is not an organization, owner/repo or enterprises/slug",
                    group.name, group.scope
                ));
            }
            if group.name.trim().is_empty() {
                problems.push(format!(
                    "runner group in {:?} has an empty name",
                    group.scope
                ));
            }
        }
        for (index, app) in self.apps.iter().enumerate() {
            if app.id.trim().is_empty() {
                problems.push(format!("apps[{index}]: the App id is empty"));
            }
            if self.apps[..index].iter().any(|other| {
                other.id == app.id
                    || (other.client_id.is_some() && other.client_id == app.client_id)
            }) {
                problems.push(format!(
                    "apps[{index}]: App {:?} is registered twice (by id or client id)",
                    app.id
                ));
            }
        }
        for pat in &self.pats {
            if pat.token.is_empty() {
                problems.push("a PAT has an empty token".to_owned());
            }
        }
        if self.http2_max_concurrent_streams == 0 {
            problems.push(
                "http2_max_concurrent_streams must be at least 1 (0 would refuse every HTTP/2 request)"
                    .to_owned(),
            );
        }
        if let Some(identity) = &self.tls
            && let Err(problem) = crate::tls::server_config(identity)
        {
            problems.push(problem.to_string());
        }
        if self.tick_interval.is_zero() {
            problems.push("tick interval must be above zero".to_owned());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// `/tenant/1` or `tenant/1/` → `/tenant/1/`.
pub(crate) fn normalize_base(path: &str) -> String {
    format!("/{}/", path.trim_matches('/')).replace("//", "/")
}

/// `/scalesets/message/` → `/scalesets/message`.
pub(crate) fn normalize_queue(path: &str) -> String {
    format!("/{}", path.trim_matches('/'))
}
