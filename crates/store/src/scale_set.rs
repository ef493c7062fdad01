//! The scale-set aggregate: the desired spec, what adoption found on GitHub, the visible
//! state, and the worker's message cursor. Spec and state are guarded by a generation
//! (optimistic concurrency); the cursor, session and desired count by the lease's fencing
//! token.

use std::time::Duration;

use async_trait::async_trait;

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

crate::text_enum! {
    /// How this controller came to hold the GitHub scale set.
    Provenance {
        /// This controller created it (only this may be rolled back).
        Created = "created",
        /// The stored GitHub id was confirmed.
        Known = "known",
        /// Adopted on evidence or policy.
        Adopted = "adopted",
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
}

/// The runner group a scale set lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerGroup {
    /// The group's name (part of the unique key).
    pub name: String,
    /// GitHub's id for the group, once resolved.
    pub id: Option<i64>,
}

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSetSpec {
    /// The scale set's name on GitHub.
    pub name: String,
    /// The runner group.
    pub runner_group: RunnerGroup,
    /// Labels (the owner label is added by the control crate, not stored here).
    pub labels: Vec<String>,
    /// GitHub's `disableUpdate`.
    pub disable_update: bool,
    /// The provider's name.
    pub provider: String,
    /// The provider image.
    pub image: String,
    /// The provider flavor.
    pub flavor: String,
    /// Idle runners kept warm.
    pub min_idle: u32,
    /// The most runners at once.
    pub max_runners: u32,
    /// How long an instance may take to register before it is deleted.
    pub bootstrap_timeout: Duration,
    /// The runner name prefix.
    pub runner_prefix: String,
    /// Provider-specific settings, passed through.
    pub extra_specs: serde_json::Value,
    /// Whether the scale set is served.
    pub enabled: bool,
    /// The adoption policy.
    pub adoption_policy: AdoptionPolicy,
    /// Whether adoption may repair drift.
    pub repair: bool,
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
    /// How the GitHub scale set came to be ours.
    pub provenance: Option<Provenance>,
    /// The adoption evidence, as the control crate records it (opaque JSON).
    pub evidence: serde_json::Value,
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
}

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

    /// Writes the spec, GitHub id, provenance, evidence, state and reason of `scale_set` if
    /// its generation is still the stored one, and returns the row with the generation bumped.
    /// Otherwise [`crate::Error::Stale`] and nothing is written. A changed GitHub id resets
    /// the message cursor and session, which belonged to the old GitHub scale set.
    async fn update_scale_set(&self, scale_set: &ScaleSet) -> Result<ScaleSet>;

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

    /// Deletes a scale set at `generation` with its lease and events. Instances still
    /// recorded are [`crate::Error::Conflict`]; a changed row is [`crate::Error::Stale`].
    async fn delete_scale_set(&self, id: ScaleSetId, generation: i64) -> Result<()>;
}
