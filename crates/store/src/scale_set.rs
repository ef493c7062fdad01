//! The scale-set aggregate: the desired spec, what adoption found on GitHub, the visible
//! state, and the worker's message cursor. Spec and state are guarded by a generation
//! (optimistic concurrency); the cursor, session and desired count by the lease's fencing
//! token.

use std::time::Duration;

use async_trait::async_trait;

use scaleset_adopt::{DeletePermit, Evidence, Refusal, Takeover};

use scaleset_domain::{Label, ProviderName, RunnerPrefix, ScaleSetName};

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::{EntityId, ScaleSetId};
use crate::lease::Lease;

crate::text_enum! {
    /// Which same-name scale sets found on GitHub may be adopted (DESIGN §4).
    AdoptionPolicy {
        /// A same-name scale set we hold no record of is a refusal.
        Never = "never",
        /// Adopt only on ownership evidence (the default).
        Owned = "owned",
        /// Adopt unless there is evidence of a live foreign owner.
        Any = "any",
    }
}

impl AdoptionPolicy {
    /// Parses a policy as an operator writes it (`never`, `owned`, `any`: the stored text,
    /// which the API's JSON spells the same), for the doors that read text (the configuration
    /// file and its overrides).
    ///
    /// # Errors
    ///
    /// The `adoption_policy` problem for text that names no policy, listing those that exist.
    pub fn parse(text: &str) -> std::result::Result<Self, crate::SpecProblem> {
        Self::from_stored(text).ok_or_else(|| {
            let known: Vec<String> = Self::ALL
                .iter()
                .map(|p| format!("{:?}", p.as_str()))
                .collect();
            crate::SpecProblem {
                field: "adoption_policy".to_owned(),
                message: format!("{text:?} is not a policy; use {}", known.join(", ")),
            }
        })
    }
}

/// The adoption machine's policy for a stored one: the one mapping, used by the ensure step
/// and the fleet plan's adoption preview alike.
impl From<AdoptionPolicy> for scaleset_adopt::Policy {
    fn from(policy: AdoptionPolicy) -> Self {
        match policy {
            AdoptionPolicy::Never => Self::Never,
            AdoptionPolicy::Owned => Self::Owned,
            AdoptionPolicy::Any => Self::Any,
        }
    }
}

/// How this controller came to hold its GitHub scale set. It is history, kept per GitHub
/// scale set: once recorded, a later ensure that merely confirms the stored id (`Known`) never
/// replaces it (see [`Provenance::recorded`]); only a database loss forgets it, after which
/// the scale set is adopted by its owner label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Provenance {
    /// This controller created it: the only provenance under which deleting the scale set
    /// deletes it on GitHub. It carries the [`Creation`] record, which only the create path
    /// can make.
    Created(Creation),
    /// The stored GitHub id was confirmed, with no record of how it became ours (a row
    /// written before provenance was kept as history).
    Known,
    /// Adopted on evidence or policy.
    Adopted,
}

impl Provenance {
    /// The stored (and displayed) text: `created`, `known` or `adopted`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Created(_) => "created",
            Self::Known => "known",
            Self::Adopted => "adopted",
        }
    }

    /// Whether this controller created the GitHub scale set.
    pub fn is_created(&self) -> bool {
        matches!(self, Self::Created(_))
    }

    /// How much this provenance says about where the scale set came from: a record of
    /// creation says most, a bare confirmation of the stored id least.
    fn weight(provenance: Option<&Self>) -> u8 {
        match provenance {
            Some(Self::Created(_)) => 3,
            Some(Self::Adopted) => 2,
            Some(Self::Known) => 1,
            None => 0,
        }
    }

    /// What to record when `written` is written for GitHub scale set `github_id` over a row
    /// that holds `stored` for `stored_github_id`. For the same GitHub scale set provenance
    /// only gains information (created over adopted over known over none), so a later
    /// ensure's `Known` never replaces a `Created`; another GitHub scale set has its own
    /// history, and `written` stands.
    pub fn recorded(
        stored: Option<&Self>,
        stored_github_id: Option<i64>,
        written: Option<Self>,
        github_id: Option<i64>,
    ) -> Option<Self> {
        let same_scale_set = github_id.is_some() && github_id == stored_github_id;
        if same_scale_set && Self::weight(stored) > Self::weight(written.as_ref()) {
            stored.cloned()
        } else {
            written
        }
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The record that this controller created GitHub scale set [`Creation::github_id`]. Outside
/// the store it can only be made from the adoption machine's [`DeletePermit`], which the
/// machine hands out only on the create path and which nothing can deserialise: a row says
/// `created` only if a create earned it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Creation {
    github_id: i64,
}

impl Creation {
    /// The record of the creation `permit` proves.
    pub fn from_permit(permit: &DeletePermit) -> Self {
        Self {
            github_id: permit.id().0,
        }
    }

    /// A creation read back from a row (the store wrote it from a permit).
    pub(crate) fn stored(github_id: i64) -> Self {
        Self { github_id }
    }

    /// The GitHub scale set this controller created.
    pub fn github_id(&self) -> i64 {
        self.github_id
    }
}

crate::text_enum! {
    /// The visible state of a scale set.
    ScaleSetState {
        /// Not yet ensured on GitHub.
        Pending = "pending",
        /// Ensured; being served.
        Ready = "ready",
        /// Adoption refused (see the reason).
        Refused = "refused",
        /// Adopted but its labels or settings differ from the spec, and repair is off.
        Drifted = "drifted",
        /// A listener other than this run's holds the message session: another owner's, or
        /// one GitHub does not name, or our own from before a crash whose id was lost (see the
        /// reason).
        ForeignSession = "foreign_session",
        /// GitHub deleted it; waiting to be ensured again.
        Dormant = "dormant",
        /// Failing; being retried (see the reason).
        Error = "error",
    }
}

impl ScaleSetState {
    /// Whether an operator should look at a scale set in this state: every state but `ready`
    /// and `pending` (a scale set not served for a reason, or failing). The one rule the status
    /// page, the CLI and the metrics count by.
    pub fn needs_attention(self) -> bool {
        !matches!(self, Self::Ready | Self::Pending)
    }

    /// Whether the state is a refusal of the adoption machine, which a stored
    /// [`ScaleSet::refusal`] explains.
    pub fn is_refusal(self) -> bool {
        match self {
            Self::Refused | Self::Drifted | Self::ForeignSession => true,
            Self::Pending | Self::Ready | Self::Dormant | Self::Error => false,
        }
    }
}

/// The runner group a scale set lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerGroup {
    /// The group's name (part of the unique key).
    pub name: String,
    /// GitHub's id for the group, once resolved.
    pub id: Option<i64>,
}

/// What the operator asked for. Its fields are private: a spec exists only as
/// [`ScaleSetSpec::parse`] (or the store, reading a row it wrote) made it, so every rule of the
/// parser holds for every spec and no code that holds one checks it again. Read it through the
/// accessors named like its fields; change it through [`ScaleSetSpec::edit`] (any field, parsed
/// again as a whole) or the setters of the fields every value of which is valid.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSetSpec {
    pub(crate) name: ScaleSetName,
    pub(crate) runner_group: RunnerGroup,
    pub(crate) labels: Vec<Label>,
    pub(crate) disable_update: bool,
    pub(crate) provider: ProviderName,
    pub(crate) image: String,
    pub(crate) flavor: String,
    pub(crate) os_type: crate::OsType,
    pub(crate) os_arch: crate::OsArch,
    pub(crate) runner_setup: crate::RunnerSetup,
    pub(crate) min_idle: u32,
    pub(crate) max_runners: u32,
    pub(crate) bootstrap_timeout: Duration,
    pub(crate) runner_prefix: Option<RunnerPrefix>,
    pub(crate) extra_specs: serde_json::Value,
    pub(crate) enabled: bool,
    pub(crate) adoption_policy: AdoptionPolicy,
    pub(crate) repair: bool,
    pub(crate) scale_down_delay: Duration,
    pub(crate) max_idle_lifetime: Duration,
    pub(crate) max_lifetime: Duration,
}

impl ScaleSetSpec {
    /// The scale set's name on GitHub.
    pub fn name(&self) -> &ScaleSetName {
        &self.name
    }

    /// The runner group.
    pub fn runner_group(&self) -> &RunnerGroup {
        &self.runner_group
    }

    /// Labels (the owner label is added by the control crate, not stored here); no two the
    /// same to GitHub.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// The labels as text, in order.
    pub fn label_texts(&self) -> Vec<String> {
        self.labels.iter().map(|l| l.as_str().to_owned()).collect()
    }

    /// GitHub's `disableUpdate`.
    pub fn disable_update(&self) -> bool {
        self.disable_update
    }

    /// The provider's name.
    pub fn provider(&self) -> &ProviderName {
        &self.provider
    }

    /// The provider image.
    pub fn image(&self) -> &str {
        &self.image
    }

    /// The provider flavor.
    pub fn flavor(&self) -> &str {
        &self.flavor
    }

    /// The runners' operating system (GARM's `os_type`).
    pub fn os_type(&self) -> crate::OsType {
        self.os_type
    }

    /// The runners' CPU architecture (GARM's `arch`).
    pub fn os_arch(&self) -> crate::OsArch {
        self.os_arch
    }

    /// What the machines are given besides the runner: the runners' proxy, SSH keys and the
    /// user-data options of GARM's bootstrap.
    pub fn runner_setup(&self) -> &crate::RunnerSetup {
        &self.runner_setup
    }

    /// Idle runners kept warm (at most [`Self::max_runners`]).
    pub fn min_idle(&self) -> u32 {
        self.min_idle
    }

    /// The most runners at once.
    pub fn max_runners(&self) -> u32 {
        self.max_runners
    }

    /// How long an instance may take to register before it is deleted (zero only in a row an
    /// older version wrote: see [`Self::bootstrap_timeout_or`]).
    pub fn bootstrap_timeout(&self) -> Duration {
        self.bootstrap_timeout
    }

    /// The runner-name prefix as written, if one was (see [`Self::runner_prefix`] for the one
    /// runner names use).
    pub fn own_runner_prefix(&self) -> Option<&RunnerPrefix> {
        self.runner_prefix.as_ref()
    }

    /// Provider-specific settings, passed through (a table).
    pub fn extra_specs(&self) -> &serde_json::Value {
        &self.extra_specs
    }

    /// Whether the scale set is served.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The adoption policy.
    pub fn adoption_policy(&self) -> AdoptionPolicy {
        self.adoption_policy
    }

    /// Whether adoption may repair drift.
    pub fn repair(&self) -> bool {
        self.repair
    }

    /// How long surplus idle runners stay after a burst before they are retired (zero: retired
    /// at once).
    pub fn scale_down_delay(&self) -> Duration {
        self.scale_down_delay
    }

    /// How long a runner may stay idle while no job waits for it before it is retired (zero:
    /// off).
    pub fn max_idle_lifetime(&self) -> Duration {
        self.max_idle_lifetime
    }

    /// How long a runner may live; past it, it is retired once idle (zero: off).
    pub fn max_lifetime(&self) -> Duration {
        self.max_lifetime
    }

    /// Serves the scale set or stops serving it (every value is valid).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Sets whether adoption may repair drift.
    pub fn set_repair(&mut self, repair: bool) {
        self.repair = repair;
    }

    /// Sets the adoption policy.
    pub fn set_adoption_policy(&mut self, policy: AdoptionPolicy) {
        self.adoption_policy = policy;
    }

    /// Sets GitHub's `disableUpdate`.
    pub fn set_disable_update(&mut self, disable_update: bool) {
        self.disable_update = disable_update;
    }

    /// Sets the runners' operating system.
    pub fn set_os_type(&mut self, os_type: crate::OsType) {
        self.os_type = os_type;
    }

    /// Sets the runners' CPU architecture.
    pub fn set_os_arch(&mut self, os_arch: crate::OsArch) {
        self.os_arch = os_arch;
    }

    /// Records GitHub's id of the runner group once resolved (or forgets it with `None`).
    pub fn set_runner_group_id(&mut self, id: Option<i64>) {
        self.runner_group.id = id;
    }
}

/// A scale set to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewScaleSet {
    /// The entity it belongs to.
    pub entity_id: EntityId,
    /// The spec.
    pub spec: ScaleSetSpec,
}

/// A stored scale set. Change it by editing the public fields and passing it to
/// [`ScaleSetStore::update_scale_set`], which checks [`ScaleSet::generation`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSet {
    /// The id.
    pub id: ScaleSetId,
    /// The entity it belongs to (fixed at create).
    pub entity_id: EntityId,
    /// The spec.
    pub spec: ScaleSetSpec,
    /// GitHub's id, once ensured; `None` after GitHub deleted it.
    pub github_id: Option<i64>,
    /// How the GitHub scale set came to be ours (history: see [`Provenance::recorded`]).
    pub provenance: Option<Provenance>,
    /// The ownership evidence the last ensure saw (empty before the first, and for an
    /// adoption on policy alone).
    pub evidence: Vec<Evidence>,
    /// The adoption machine's refusal, kept while the state is a refusal (`refused`,
    /// `drifted`, `foreign_session`); the store clears it with any other state.
    pub refusal: Option<Refusal>,
    /// The takeover note of a scale set imported from GARM (`scalesetctl import garm`, kept
    /// from the fleet file's `[scale_set.takeover]`): the adoption machine's evidence on every
    /// ensure (so the worker adds our owner label), and the pool id and runner prefix under
    /// which GARM's running instances and runners are taken over. Written by
    /// [`ScaleSetStore::update_scale_set`]; `None` for every other scale set.
    pub takeover: Option<Takeover>,
    /// The visible state.
    pub state: ScaleSetState,
    /// Why it is in that state, for operators.
    pub state_reason: String,
    /// The last message id handled (fenced; see [`ScaleSetStore::set_message_cursor`]).
    pub last_message_id: i64,
    /// The message session id (fenced; see [`ScaleSetStore::set_message_session`]).
    pub session_id: Option<String>,
    /// The runner count the scaler wants (fenced; see [`ScaleSetStore::set_desired_runners`]).
    pub desired_runners: u32,
    /// Bumped by every [`ScaleSetStore::update_scale_set`].
    pub generation: i64,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last written.
    pub updated_at: Timestamp,
    /// When the message cursor last moved past a handled message (fenced, written by
    /// [`ScaleSetStore::set_message_cursor`]); `None` before the first message and after a
    /// cursor reset.
    pub last_message_at: Option<Timestamp>,
    /// Jobs waiting for a runner as the last statistics GitHub sent said (available, acquired
    /// and assigned but not yet running); fenced, see [`ScaleSetStore::set_jobs_waiting`].
    pub jobs_waiting: u32,
    /// Since when [`ScaleSet::jobs_waiting`] has been above 0 without a break: the store sets
    /// it when the figure leaves 0 and clears it when it returns to 0.
    pub jobs_waiting_since: Option<Timestamp>,
    /// The provider's last failure for this scale set, until a provider call succeeds again
    /// (fenced, see [`ScaleSetStore::set_provider_error`]).
    pub provider_error: Option<ProviderError>,
    /// When an operator last asked to retry now ([`ScaleSetStore::request_retry`]); the
    /// worker serving the scale set ends its back-off when it sees this move.
    pub retry_requested_at: Option<Timestamp>,
}

/// A provider call that failed for a scale set: the provider's own message and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// What the provider said (its error output, as the scaler reported it).
    pub message: String,
    /// When the failure was recorded (the first of a run of failures keeps its time).
    pub at: Timestamp,
}

/// Why an operator should look at a scale set, and what to run: the one rule
/// ([`ScaleSet::attention`]) the status page, the API, the CLI and the metrics go by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attention {
    /// The reason in words.
    pub reason: String,
    /// A `scalesetctl` command that shows or fixes it.
    pub remedy: String,
}

/// A name quoted for a POSIX shell (single quotes; an embedded one closed and reopened).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `90 s`, `12 min`, `3 h`.
fn span_words(span: Duration) -> String {
    let secs = span.as_secs();
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        _ => format!("{} h", secs / 3600),
    }
}

impl ScaleSet {
    /// Whether, and why, an operator should look at this scale set at `now`: its state needs
    /// attention ([`ScaleSetState::needs_attention`]: refused, drifted, a held session,
    /// dormant, failing), or its provider's last call failed, or jobs have waited for a runner
    /// without a break for longer than the bootstrap timeout (a runner should have come by
    /// then). The first that applies, in that order.
    pub fn attention(&self, now: Timestamp) -> Option<Attention> {
        let name = shell_quote(self.spec.name.as_str());
        let show = format!("scalesetctl scale-set show {name}");
        if self.state.needs_attention() {
            let reason = if self.state_reason.is_empty() {
                format!("state {}", self.state)
            } else {
                format!("{}: {}", self.state, self.state_reason)
            };
            let remedy = match self.state {
                ScaleSetState::Drifted => {
                    format!("scalesetctl scale-set update {name} --repair true")
                }
                _ => show,
            };
            return Some(Attention { reason, remedy });
        }
        if let Some(error) = &self.provider_error {
            return Some(Attention {
                reason: format!(
                    "provider {:?} failing: {}",
                    self.spec.provider, error.message
                ),
                // Its events carry the provider's messages; fix the provider, or point the
                // scale set at another (`scalesetctl scale-set update NAME --provider OTHER`).
                remedy: show,
            });
        }
        let since = self.jobs_waiting_since.filter(|_| self.jobs_waiting > 0)?;
        let waited = Duration::from_millis(
            u64::try_from(now.unix_millis().saturating_sub(since.unix_millis())).unwrap_or(0),
        );
        if waited <= self.spec.bootstrap_timeout {
            return None;
        }
        let at_max = self.desired_runners >= self.spec.max_runners;
        Some(Attention {
            reason: format!(
                "{} jobs have waited for a runner for {} without a break, longer than the \
                 bootstrap timeout ({}){}",
                self.jobs_waiting,
                span_words(waited),
                span_words(self.spec.bootstrap_timeout),
                if at_max {
                    format!(
                        "; it runs at its maximum of {} runners",
                        self.spec.max_runners
                    )
                } else {
                    String::new()
                }
            ),
            remedy: if at_max {
                format!(
                    "scalesetctl scale-set update {name} --max-runners {}",
                    self.spec.max_runners.saturating_mul(2).max(1)
                )
            } else {
                show
            },
        })
    }
}

/// A scale set's figures at one minute, for the status page's charts (the worker writes one
/// when they change, [`SAMPLE_HELD_AT_MOST`] apart at most; the store keeps the last
/// [`SAMPLE_WINDOW`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When it was taken.
    pub at: Timestamp,
    /// Jobs waiting for a runner.
    pub jobs_waiting: u32,
    /// Runners idle.
    pub idle: u32,
    /// Runners busy.
    pub busy: u32,
    /// Runners starting (requested, not yet online).
    pub starting: u32,
    /// The longest a job started in this minute waited from queued to started, if any did.
    pub start_latency: Option<Duration>,
}

/// How far back samples are kept: the charts draw the last hour. The newest sample before
/// the hour is kept too, because its figures hold into it ([`SAMPLE_HELD_AT_MOST`]).
pub const SAMPLE_WINDOW: Duration = Duration::from_secs(3600);

/// The longest a sample's figures are drawn as holding: a listener writes a sample when its
/// figures change, and at least this often while they do not, so the page draws the minutes
/// after a sample as that sample up to this long, and nothing after it (a scale set nobody
/// serves shows a gap, not figures nobody measured).
pub const SAMPLE_HELD_AT_MOST: Duration = Duration::from_secs(15 * 60);

/// How many times [`ScaleSetStore::modify_scale_set`] reads and writes before it gives up on
/// concurrent writers: each write that meets another one is a worker and the API touching the
/// same row within milliseconds, which does not go on for long.
pub const MODIFY_ATTEMPTS: u32 = 5;

/// What [`ScaleSetStore::record_progress`] writes; each `None` leaves its column as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// The last handled message id ([`ScaleSet::last_message_id`]; above 0 also dates
    /// [`ScaleSet::last_message_at`], 0 clears it).
    pub last_message_id: Option<i64>,
    /// [`ScaleSet::desired_runners`].
    pub desired_runners: Option<u32>,
    /// [`ScaleSet::jobs_waiting`] (display only).
    pub jobs_waiting: Option<u32>,
}

/// Where a scale set's row stands in the order of writes: every write of the row or of its
/// health takes a higher one. What [`ScaleSetStore::scale_sets_changed_since`] reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Revision(i64);

impl Revision {
    /// The revision the store wrote as `value`.
    #[must_use]
    pub const fn new(value: i64) -> Self {
        Self(value)
    }

    /// The stored value.
    #[must_use]
    pub const fn get(self) -> i64 {
        self.0
    }
}

/// What [`ScaleSetStore::scale_sets_changed_since`] read.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSetChanges {
    /// The scale sets written (they or their health) after the revision asked for, each as it
    /// is now; every scale set when none was given.
    pub changed: Vec<ScaleSet>,
    /// Which database this is: a new one (wiped, or another) has another, and its revisions
    /// say nothing of a copy read from the one before.
    pub incarnation: String,
    /// How many scale sets were ever deleted, read before `changed`: a reader that saw
    /// another number lists the ids ([`ScaleSetStore::list_scale_set_ids`]) to drop them.
    pub deletions: u64,
    /// The highest revision written, read before `changed`: every later write is above it.
    pub revision: Revision,
}

/// Scale sets.
#[async_trait]
pub trait ScaleSetStore: Send + Sync {
    /// Stores a new scale set (state pending, generation 1). A duplicate
    /// (entity, runner group name, name) is [`crate::Error::Conflict`].
    async fn create_scale_set(&self, new: NewScaleSet) -> Result<ScaleSet>;

    /// Reads a scale set.
    async fn get_scale_set(&self, id: ScaleSetId) -> Result<ScaleSet>;

    /// Finds a scale set by its unique key.
    async fn find_scale_set(
        &self,
        entity_id: EntityId,
        runner_group: &str,
        name: &str,
    ) -> Result<Option<ScaleSet>>;

    /// All scale sets, or those of one entity.
    async fn list_scale_sets(&self, entity_id: Option<EntityId>) -> Result<Vec<ScaleSet>>;

    /// The scale sets written since `since` (all when `None`), with the deletions counted and
    /// the highest revision, for a reader that keeps a copy of every row and reads only what
    /// changed (the worker's watch). On PostgreSQL a revision is taken before its write
    /// commits, so a write can become visible after a higher revision was read: a reader
    /// passes a revision a few reads old, not the last one. A deleted row is not in
    /// `changed`; `deletions` tells the reader to look ([`ScaleSetStore::list_scale_set_ids`]).
    async fn scale_sets_changed_since(&self, since: Option<Revision>) -> Result<ScaleSetChanges>;

    /// The id of every scale set, in id order.
    async fn list_scale_set_ids(&self) -> Result<Vec<ScaleSetId>>;

    /// Writes the spec, GitHub id, provenance, evidence, refusal, state and reason of
    /// `scale_set` if its generation is still the stored one, and returns the row with the
    /// generation bumped. Otherwise [`crate::Error::Stale`] and nothing is written. A changed
    /// GitHub id resets the message cursor and session, which belonged to the old GitHub scale
    /// set. Provenance is history: for the same GitHub id a stored provenance is never
    /// replaced by one that says less ([`Provenance::recorded`]); a [`Creation`] for another
    /// GitHub id than the row's is [`crate::Error::Invalid`]. The refusal is written only with
    /// a refusing state ([`ScaleSetState::is_refusal`]) and cleared otherwise.
    async fn update_scale_set(&self, scale_set: &ScaleSet) -> Result<ScaleSet>;

    /// Reads scale set `id`, lets `change` edit it, and writes it
    /// ([`ScaleSetStore::update_scale_set`]); when another write came first
    /// ([`crate::Error::Stale`]) it reads again and calls `change` again, up to
    /// [`MODIFY_ATTEMPTS`] times in all. A row `change` leaves as it was is not written (its
    /// generation stays), so a recheck that finds nothing new costs one read. Returns the row
    /// as written, or as read when nothing changed. The one read-modify-write of a scale set:
    /// `change` must be safe to run more than once, as it runs once per attempt.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Stale`] when every attempt met a concurrent write; any error of the
    /// read or the write ([`crate::Error::NotFound`] for an unknown id).
    async fn modify_scale_set(
        &self,
        id: ScaleSetId,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
    ) -> Result<ScaleSet> {
        let mut attempt = 1;
        loop {
            let stored = self.get_scale_set(id).await?;
            let mut changed = stored.clone();
            change(&mut changed);
            if changed == stored {
                return Ok(stored);
            }
            match self.update_scale_set(&changed).await {
                Err(e) if e.is_stale() && attempt < MODIFY_ATTEMPTS => attempt += 1,
                written => return written,
            }
        }
    }

    /// [`ScaleSetStore::modify_scale_set`] and [`crate::EventStore::append_event`]`(id, code,
    /// detail)` in one commit: a state change and the event that records it are written
    /// together or not at all, and cost one commit, not two (a start of 10,000 scale sets
    /// makes two such records each: `docs/benchmarks.md`, issue 35: recovery). The event is
    /// appended (or counted as a repeat) also when `change` leaves the row as it was.
    ///
    /// # Errors
    ///
    /// As [`ScaleSetStore::modify_scale_set`]; any error of the event's append, in which case
    /// the change is not written either.
    async fn modify_scale_set_with_event(
        &self,
        id: ScaleSetId,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: crate::event::ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, crate::event::Event)>;

    /// [`ScaleSetStore::modify_scale_set_with_event`] on the lease's scale set, if `lease` is
    /// still current ([`crate::Error::LeaseLost`] otherwise, with neither the change nor the
    /// event written). How a serving worker records its scale set's state: one cut off from
    /// the database long enough to lose the lease must not overwrite, after the heal, what the
    /// worker that took the set over recorded (a late `error` would stay on a set that is
    /// served: nothing of the new holder's writes it again).
    ///
    /// # Errors
    ///
    /// As [`ScaleSetStore::modify_scale_set_with_event`], and [`crate::Error::LeaseLost`].
    async fn modify_leased_scale_set_with_event(
        &self,
        lease: &Lease,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: crate::event::ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, crate::event::Event)>;

    /// Records a listener's progress in one commit, if `lease` is still current
    /// ([`crate::Error::LeaseLost`] otherwise): after a message its cursor with the figures
    /// that changed while handling it, so a job costs one scale-set write, not three. An
    /// empty `progress` writes nothing and checks nothing.
    async fn record_progress(&self, lease: &Lease, progress: Progress) -> Result<()>;

    /// Records the last handled message id, and (for an id above 0) now as
    /// [`ScaleSet::last_message_at`], if `lease` is still current
    /// ([`crate::Error::LeaseLost`] otherwise).
    async fn set_message_cursor(&self, lease: &Lease, last_message_id: i64) -> Result<()> {
        self.record_progress(
            lease,
            Progress {
                last_message_id: Some(last_message_id),
                ..Progress::default()
            },
        )
        .await
    }

    /// Records how many jobs wait for a runner ([`ScaleSet::jobs_waiting`]), if `lease` is
    /// still current. For display only: no decision reads it back.
    async fn set_jobs_waiting(&self, lease: &Lease, jobs_waiting: u32) -> Result<()> {
        self.record_progress(
            lease,
            Progress {
                jobs_waiting: Some(jobs_waiting),
                ..Progress::default()
            },
        )
        .await
    }

    /// Records the message session id, if `lease` is still current.
    async fn set_message_session(&self, lease: &Lease, session_id: Option<&str>) -> Result<()>;

    /// Records a provider failure for the lease's scale set ([`ScaleSet::provider_error`]),
    /// or clears it with `None`, if `lease` is still current. A failure while one is recorded
    /// keeps the first one's time and takes the new message.
    async fn set_provider_error(&self, lease: &Lease, message: Option<&str>) -> Result<()>;

    /// Stores a sample of the lease's scale set, if `lease` is still current, and drops its
    /// samples older than [`SAMPLE_WINDOW`] before `sample.at` but the newest of those (its
    /// figures hold into the window), so a scale set holds at most about one a minute for an
    /// hour. A second sample at the same millisecond replaces the first.
    async fn record_sample(&self, lease: &Lease, sample: &Sample) -> Result<()>;

    /// Stores several scale sets' samples in one commit, each as
    /// [`ScaleSetStore::record_sample`] would (fenced by its own lease): one answer per sample,
    /// in order, a taken-over lease's answer being [`crate::Error::LeaseLost`] with nothing of
    /// it written. An error of the backend fails the whole batch and stores none. A worker
    /// serving 10,000 scale sets takes 167 samples a second; batched, that is a few commits a
    /// second. Lease rows are locked in scale-set order, as [`crate::LeaseStore::renew_leases`]
    /// locks them, so a batch of samples and a batch of renewals of one worker cannot
    /// deadlock on PostgreSQL.
    async fn record_samples(&self, samples: &[(Lease, Sample)]) -> Result<Vec<Result<()>>>;

    /// The samples of `ids` taken at or after `since`, oldest first per scale set, each set's
    /// preceded by its newest sample before `since` when there is one (its figures hold from
    /// then until the next sample, [`SAMPLE_HELD_AT_MOST`] at most).
    async fn list_samples(
        &self,
        ids: &[ScaleSetId],
        since: Timestamp,
    ) -> Result<Vec<(ScaleSetId, Sample)>>;

    /// Records the desired runner count, if `lease` is still current.
    async fn set_desired_runners(&self, lease: &Lease, desired: u32) -> Result<()> {
        self.record_progress(
            lease,
            Progress {
                desired_runners: Some(desired),
                ..Progress::default()
            },
        )
        .await
    }

    /// Records an operator's "retry now" and returns its time: later than any request before
    /// it, even within one millisecond, so the worker that watches it sees every request.
    /// Written whatever the scale set's state (the caller decides whether a retry makes
    /// sense); an unknown scale set is [`crate::Error::NotFound`].
    async fn request_retry(&self, id: ScaleSetId) -> Result<Timestamp>;

    /// Deletes a scale set at `generation` with its lease and events. Instances still
    /// recorded are [`crate::Error::Conflict`]; a changed row is [`crate::Error::Stale`].
    async fn delete_scale_set(&self, id: ScaleSetId, generation: i64) -> Result<()>;
}
