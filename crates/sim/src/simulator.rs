//! The [`Simulator`] handle: the shared state behind one simulated GitHub, and the Rust face of
//! the control API (enqueue jobs, inspect, count requests, set faults, advance time, delete out
//! of band, hold foreign sessions, start simulated runners).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SimTime};
use crate::config::{SimConfig, normalize_base, normalize_queue};
use crate::error::Error;
use crate::fault::Faults;
use crate::protocol;
use crate::quota::RestQuota;
use crate::request_log::RequestLog;
use crate::route::Mounts;
use crate::runner_download::RunnerDownloads;
use crate::scope::Scope;
use crate::snapshot::{JobSpec, Listening, RequestRecord, StateSnapshot};
use crate::state::{Label, SAVED_VERSION, Saved, ScaleSetInput, State};
use crate::token::Signer;

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Everything one simulator shares between its connections and its handle. Its `Debug` output
/// leaves out the state (which holds tokens).
pub(crate) struct Shared {
    pub(crate) config: SimConfig,
    pub(crate) mounts: Mounts,
    pub(crate) clock: Clock,
    pub(crate) signer: Signer,
    pub(crate) state: Mutex<State>,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) log: Mutex<RequestLog>,
    /// The PATs accepted now (seeded from `config.pats`; added and revoked while running).
    pub(crate) pats: Mutex<crate::pats::Pats>,
    /// REST calls counted for `GET /api/v3/rate_limit`.
    pub(crate) quota: Mutex<RestQuota>,
    /// The runner archives `…/actions/runners/downloads` lists.
    pub(crate) downloads: RunnerDownloads,
    pub(crate) shutdown: CancellationToken,
    pub(crate) waiting_polls: AtomicUsize,
    /// Message GETs held right now per scale set (for [`Simulator::listening`]). Never locked
    /// together with `state`.
    pub(crate) held_polls: Mutex<std::collections::HashMap<i64, usize>>,
    /// Client connections open right now.
    pub(crate) open_connections: AtomicUsize,
    /// Requests that arrived over HTTP/2, ever.
    pub(crate) http2_requests: AtomicUsize,
    /// Messages made undecodable by [`crate::Faults::undecodable_messages`]: every delivery
    /// of them is garbled until they are deleted.
    pub(crate) garbled_messages: Mutex<std::collections::HashSet<i64>>,
    /// The message each scale set was delivered last, for
    /// [`crate::Faults::redeliver_messages`].
    pub(crate) last_delivered: Mutex<std::collections::HashMap<i64, serde_json::Value>>,
    /// The TLS handshake side when serving HTTPS.
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("mounts", &self.mounts)
            .field("now", &self.clock.now())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Runs every timer that is due now.
    pub(crate) fn tick(&self) {
        let now = self.clock.now();
        let deleted = lock(&self.state).process(&self.config, now);
        for id in deleted {
            tracing::info!(scale_set.id = id, "deleted dormant scale set");
        }
    }
}

/// A scale set created by [`Simulator::create_foreign_scale_set`], with the session it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignScaleSet {
    /// The scale set's id.
    pub scale_set_id: i64,
    /// The id of the session held under the foreign owner name.
    pub session_id: String,
}

/// One simulated GitHub. Cheap to clone; every clone steers the same simulator.
///
/// Serve it with [`Simulator::serve`] on an already-bound listener; steer it with the methods
/// below (the same operations the `/_sim/` control API offers over HTTP).
#[derive(Debug, Clone)]
pub struct Simulator {
    pub(crate) shared: Arc<Shared>,
}

impl Simulator {
    /// A simulator seeded from `config`; fails if the configuration is invalid.
    pub fn new(config: SimConfig) -> Result<Self, Error> {
        Self::build(config, None)
    }

    /// A simulator that continues the world saved in `path` by [`Simulator::save_state`]
    /// (scale sets, sessions, message logs, jobs, agents, runner groups and simulated time),
    /// or, when the file does not exist, one seeded from `config` as [`Simulator::new`] does.
    /// The rest of `config` (paths, timings, switches) applies as given. Tokens issued before
    /// are not kept: clients fetch new ones, as after an expiry.
    pub fn with_saved_state(config: SimConfig, path: &Path) -> Result<Self, Error> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Self::new(config),
            Err(source) => {
                return Err(Error::StateFile {
                    action: "read",
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let saved: Saved = serde_json::from_slice(&text).map_err(|e| Error::StateFile {
            action: "decode",
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        if saved.version != SAVED_VERSION {
            return Err(Error::StateFile {
                action: "decode",
                path: path.to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "format version {} (this simulator reads {SAVED_VERSION}); delete the \
                         file to start from the seed",
                        saved.version
                    ),
                ),
            });
        }
        Self::build(config, Some(saved))
    }

    /// Writes the durable world to `path` as JSON, atomically (a sibling temporary file, synced,
    /// then renamed over `path`), so a crash leaves the previous file or the new one whole.
    pub fn save_state(&self, path: &Path) -> Result<(), Error> {
        let offset = u64::try_from(self.shared.clock.offset().as_millis()).unwrap_or(u64::MAX);
        let text = {
            let state = lock(&self.shared.state);
            serde_json::to_vec(&state.to_saved(offset))
        }
        .map_err(|e| Error::StateFile {
            action: "write",
            path: path.to_owned(),
            source: std::io::Error::other(e),
        })?;
        let write = |source| Error::StateFile {
            action: "write",
            path: path.to_owned(),
            source,
        };
        let mut staged = path.as_os_str().to_owned();
        staged.push(".tmp");
        let staged = std::path::PathBuf::from(staged);
        {
            let mut file = std::fs::File::create(&staged).map_err(write)?;
            std::io::Write::write_all(&mut file, &text).map_err(write)?;
            file.sync_all().map_err(write)?;
        }
        std::fs::rename(&staged, path).map_err(write)
    }

    fn build(config: SimConfig, saved: Option<Saved>) -> Result<Self, Error> {
        config
            .validate()
            .map_err(|problems| Error::InvalidConfig { problems })?;
        let mounts = Mounts {
            actions_base: normalize_base(&config.actions_base_path),
            queue: normalize_queue(&config.queue_path),
        };
        let tls = match &config.tls {
            Some(identity) => Some(tokio_rustls::TlsAcceptor::from(
                crate::tls::server_config(identity).map_err(|problem| Error::InvalidConfig {
                    problems: vec![problem.to_string()],
                })?,
            )),
            None => None,
        };
        let faults = Faults {
            conflict_names_owner: config.conflict_names_owner,
            ..Faults::default()
        };
        let (state, clock) = match saved {
            Some(saved) => {
                let offset = Duration::from_millis(saved.clock_offset_ms);
                (State::from_saved(saved), Clock::with_offset(offset))
            }
            None => (State::new(&config), Clock::default()),
        };
        let shared = Shared {
            state: Mutex::new(state),
            log: Mutex::new(RequestLog::new(config.request_log_capacity)),
            pats: Mutex::new(crate::pats::Pats::new(&config.pats)),
            quota: Mutex::new(RestQuota::default()),
            downloads: RunnerDownloads::new(),
            faults: Mutex::new(faults),
            mounts,
            clock,
            signer: Signer::random(),
            shutdown: CancellationToken::new(),
            waiting_polls: AtomicUsize::new(0),
            held_polls: Mutex::default(),
            open_connections: AtomicUsize::new(0),
            http2_requests: AtomicUsize::new(0),
            garbled_messages: Mutex::default(),
            last_delivered: Mutex::default(),
            tls,
            config,
        };
        Ok(Self {
            shared: Arc::new(shared),
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &SimConfig {
        &self.shared.config
    }

    /// A copy of the whole state: runner groups, scale sets (with sessions and unacknowledged
    /// messages), jobs and agents.
    pub fn state(&self) -> StateSnapshot {
        self.shared.tick();
        lock(&self.shared.state).snapshot()
    }

    /// Queues jobs for a scale set; returns their runner request ids. They are released to the
    /// listener on its next poll, within its `X-ScaleSetMaxCapacity`. Fails with
    /// [`Error::NotFound`] for an unknown scale set and [`Error::BadRequest`] for more than
    /// 10,000 jobs at once or an unrepresentable `run_seconds`.
    pub fn enqueue_jobs(&self, scale_set_id: i64, spec: &JobSpec) -> Result<Vec<i64>, Error> {
        let now = self.shared.clock.now();
        lock(&self.shared.state)
            .enqueue(scale_set_id, spec, self.shared.config.assignment, now)
            .map_err(Error::from_state)
    }

    /// Requests answered per endpoint name (`create_scale_set`, `get_message`, …).
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        lock(&self.shared.log).counts()
    }

    /// Requests answered by one endpoint.
    pub fn request_count(&self, endpoint: &str) -> u64 {
        lock(&self.shared.log)
            .counts()
            .get(endpoint)
            .copied()
            .unwrap_or(0)
    }

    /// The most recent requests, oldest first (bounded by the configured capacity).
    pub fn request_log(&self) -> Vec<RequestRecord> {
        lock(&self.shared.log).records()
    }

    /// Accepts a PAT from now on (the first half of a rotation; a revoked one is accepted
    /// again).
    pub fn add_pat(&self, pat: crate::PatSeed) {
        lock(&self.shared.pats).add(pat);
    }

    /// Revokes a PAT: presenting it is answered 401 from now on. False when the simulator
    /// never accepted it.
    pub fn revoke_pat(&self, token: &str) -> bool {
        lock(&self.shared.pats).revoke(token)
    }

    /// Every PAT the simulator accepted, with how often each was presented and whether it
    /// is revoked.
    pub fn pat_uses(&self) -> Vec<crate::PatUse> {
        lock(&self.shared.pats).uses()
    }

    /// Forgets request counts and the request log.
    pub fn clear_requests(&self) {
        lock(&self.shared.log).clear();
    }

    /// The faults currently armed.
    pub fn faults(&self) -> Faults {
        lock(&self.shared.faults).clone()
    }

    /// Replaces the armed faults.
    pub fn set_faults(&self, faults: Faults) {
        *lock(&self.shared.faults) = faults;
    }

    /// Changes the armed faults in place.
    pub fn update_faults(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut lock(&self.shared.faults));
    }

    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.shared.clock.now()
    }

    /// How far simulated time has been advanced beyond the wall clock.
    pub fn time_offset(&self) -> Duration {
        self.shared.clock.offset()
    }

    /// Moves simulated time forward and runs every timer that became due (token expiry,
    /// dormancy, reassignment, simulated runners finishing).
    pub fn advance(&self, by: Duration) {
        self.shared.clock.advance(by);
        self.shared.tick();
    }

    /// Deletes a scale set out of band, as GitHub does to inactive ones.
    pub fn delete_scale_set(&self, scale_set_id: i64) -> Result<(), Error> {
        lock(&self.shared.state)
            .delete_scale_set(scale_set_id)
            .map(|_| ())
            .ok_or_else(|| Error::NotFound {
                what: format!("scale set {scale_set_id}"),
            })
    }

    /// Deletes a scale set out of band and leaves its runners registered, as GitHub may (it
    /// is unverified whether it does): they keep the deleted set's id, an idle one never gets a
    /// job, a busy one ends its job at its time and deregisters.
    pub fn delete_scale_set_keeping_runners(&self, scale_set_id: i64) -> Result<(), Error> {
        lock(&self.shared.state)
            .delete_scale_set_keeping_runners(scale_set_id)
            .map(|_| ())
            .ok_or_else(|| Error::NotFound {
                what: format!("scale set {scale_set_id}"),
            })
    }

    /// Drops a scale set's session as an eviction would: refreshing it then answers 404 and its
    /// queue token 401.
    pub fn evict_session(&self, scale_set_id: i64) -> Result<(), Error> {
        let now = self.shared.clock.now();
        if lock(&self.shared.state).evict_session(scale_set_id, now) {
            Ok(())
        } else {
            Err(Error::NotFound {
                what: format!("a session on scale set {scale_set_id}"),
            })
        }
    }

    /// Creates a scale set as another controller would, and holds its session under
    /// `owner_name`. `scope` is a config-URL path (`acme`, `acme/widgets`, `enterprises/big`);
    /// `runner_group_id` 0 means the default group.
    pub fn create_foreign_scale_set(
        &self,
        scope: &str,
        runner_group_id: i64,
        name: &str,
        owner_name: &str,
    ) -> Result<ForeignScaleSet, Error> {
        self.create_foreign_scale_set_with_labels(scope, runner_group_id, name, owner_name, &[])
    }

    /// [`Simulator::create_foreign_scale_set`] with extra labels on the scale set (for
    /// example another controller's owner label, `scaleset-owner-<32 hex>`).
    pub fn create_foreign_scale_set_with_labels(
        &self,
        scope: &str,
        runner_group_id: i64,
        name: &str,
        owner_name: &str,
        labels: &[String],
    ) -> Result<ForeignScaleSet, Error> {
        let now = self.shared.clock.now();
        let (scope, id) = self.seed(scope, runner_group_id, name, labels)?;
        let mut state = lock(&self.shared.state);
        let session = state
            .create_session(&scope, id, owner_name, now, false)
            .map_err(Error::from_state)?;
        Ok(ForeignScaleSet {
            scale_set_id: id,
            session_id: session.id,
        })
    }

    /// Creates a scale set with `labels` (beside its name label) and no session, as an earlier
    /// install of some controller would have left it; returns its id. `scope` is a config-URL
    /// path, `runner_group_id` 0 means the default group.
    pub fn seed_scale_set(
        &self,
        scope: &str,
        runner_group_id: i64,
        name: &str,
        labels: &[String],
    ) -> Result<i64, Error> {
        self.seed(scope, runner_group_id, name, labels)
            .map(|(_, id)| id)
    }

    fn seed(
        &self,
        scope: &str,
        runner_group_id: i64,
        name: &str,
        labels: &[String],
    ) -> Result<(Scope, i64), Error> {
        let scope = Scope::parse_path(scope).ok_or_else(|| Error::BadRequest {
            what: format!("{scope:?} is not an organization, owner/repo or enterprises/slug"),
        })?;
        let now = self.shared.clock.now();
        let mut state = lock(&self.shared.state);
        if !state.has_scope(&scope) {
            return Err(Error::NotFound {
                what: format!("scope {scope}"),
            });
        }
        let mut all = Vec::new();
        if !labels.is_empty() {
            // As GitHub's clients send them: the name as a System label, the rest as User labels.
            all.push(Label {
                name: name.trim().to_owned(),
                kind: "System".to_owned(),
            });
            all.extend(labels.iter().map(|l| Label {
                name: l.clone(),
                kind: "User".to_owned(),
            }));
        }
        let input = ScaleSetInput {
            name: name.to_owned(),
            group_id: runner_group_id,
            labels: all,
            ..ScaleSetInput::default()
        };
        let id = state
            .create_scale_set(&scope, input, now)
            .map_err(Error::from_state)?;
        Ok((scope, id))
    }

    /// Creates a runner group in the seeded `scope` (a config-URL path); returns its id. Fails
    /// with [`Error::NotFound`] for an unseeded scope and [`Error::Conflict`] for a name the
    /// scope already has (case-insensitively).
    pub fn create_runner_group(&self, scope: &str, name: &str) -> Result<i64, Error> {
        let scope = Scope::parse_path(scope).ok_or_else(|| Error::BadRequest {
            what: format!("{scope:?} is not an organization, owner/repo or enterprises/slug"),
        })?;
        if name.trim().is_empty() {
            return Err(Error::BadRequest {
                what: "a runner group needs a name".to_owned(),
            });
        }
        let mut state = lock(&self.shared.state);
        if !state.has_scope(&scope) {
            return Err(Error::NotFound {
                what: format!("scope {scope} (seed it first)"),
            });
        }
        state.create_group(&scope, name).map_err(Error::from_state)
    }

    /// Boots a simulated runner from the JIT configuration `generatejitconfig` returned: it
    /// connects, takes one job assigned to its scale set, is reported started, completes after
    /// the configured (simulated) time and deregisters. Returns the agent id.
    pub fn start_runner(&self, jit_config: &str) -> Result<i64, Error> {
        let agent_id = protocol::decode_jit_config(jit_config).ok_or(Error::InvalidJitConfig)?;
        lock(&self.shared.state)
            .start_runner(agent_id)
            .map_err(Error::from_state)?;
        self.shared.tick();
        Ok(agent_id)
    }

    /// Takes the idle runner `agent_id` offline, as a machine that died in an outage leaves
    /// it: still registered, listed `offline`, never given a job. A busy runner is refused
    /// (409), as is one that never started (400), or an unknown one (404).
    pub fn disconnect_runner(&self, agent_id: i64) -> Result<(), Error> {
        lock(&self.shared.state)
            .disconnect_runner(agent_id)
            .map_err(Error::from_state)?;
        self.shared.tick();
        Ok(())
    }

    /// How many message GETs are being held right now.
    pub fn waiting_polls(&self) -> usize {
        self.shared.waiting_polls.load(Ordering::SeqCst)
    }

    /// How many of `scope`'s scale sets (a config-URL path: `acme`, `acme/widgets`,
    /// `enterprises/big`) exist, have a session, and have a message GET held now. Fails with
    /// [`Error::BadRequest`] for a path that is no scope and [`Error::NotFound`] for an unseeded
    /// one. Cheaper than [`Simulator::state`] (no copy of the world), so it can be asked often.
    pub fn listening(&self, scope: &str) -> Result<Listening, Error> {
        let scope = Scope::parse_path(scope).ok_or_else(|| Error::BadRequest {
            what: format!("{scope:?} is not an organization, owner/repo or enterprises/slug"),
        })?;
        let mut answer = Listening::default();
        // (id, has a session) of every scale set of the scope.
        let sets: Vec<(i64, bool)> = {
            let state = lock(&self.shared.state);
            if !state.has_scope(&scope) {
                return Err(Error::NotFound {
                    what: format!("scope {scope}"),
                });
            }
            state
                .scale_sets
                .values()
                .filter(|s| s.scope == scope)
                .map(|s| (s.id, s.session.is_some()))
                .collect()
        };
        // The held polls are read after the state lock is let go (queue.rs never holds both),
        // so this is a snapshot, not a fence: a poll may be counted beside a session closed a
        // moment ago.
        let held = lock(&self.shared.held_polls);
        for (id, session) in sets {
            let polls = held.get(&id).copied().unwrap_or(0);
            answer.scale_sets += 1;
            answer.sessions += usize::from(session);
            answer.polls += polls;
            answer.listening += usize::from(session && polls > 0);
        }
        Ok(answer)
    }

    /// How many client connections are open right now (HTTP/1.1 and HTTP/2 alike).
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections.load(Ordering::SeqCst)
    }

    /// How many requests have arrived over HTTP/2 since the simulator was built.
    pub fn http2_requests(&self) -> usize {
        self.shared.http2_requests.load(Ordering::SeqCst)
    }
}
