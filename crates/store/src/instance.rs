//! The instance aggregate: one provider instance running (or about to run) one ephemeral
//! runner, with its status transition table. Every write carries the scale set's lease.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::ScaleSetId;
use crate::lease::Lease;

crate::text_enum! {
    /// Where an instance is in its life.
    ///
    /// Allowed moves (anything else is [`crate::Error::InvalidTransition`]; moving to the
    /// current status is an idempotent no-op). `creating → busy` is a runner that took its job
    /// before the provider's create landed (a job start is a fact whatever the row's state);
    /// the create then records the provider id and the row stays `busy`:
    ///
    /// | from | to |
    /// | --- | --- |
    /// | pending | creating, deleting, failed |
    /// | creating | running, busy, deleting, failed |
    /// | running | busy, deleting, failed |
    /// | busy | deleting, failed |
    /// | failed | deleting |
    /// | deleting | deleted, failed |
    /// | deleted | (none) |
    InstanceStatus {
        /// Intent recorded; the provider has not been asked yet.
        Pending = "pending",
        /// The provider is creating it.
        Creating = "creating",
        /// Running; the runner is booting or idle.
        Running = "running",
        /// The runner is running a job.
        Busy = "busy",
        /// Being deleted from the provider.
        Deleting = "deleting",
        /// Gone from the provider; the row can be removed.
        Deleted = "deleted",
        /// Failed; to be deleted.
        Failed = "failed",
    }
}

impl InstanceStatus {
    /// Whether the transition table allows moving from `self` to `to`.
    pub fn can_move_to(self, to: Self) -> bool {
        use InstanceStatus::{Busy, Creating, Deleted, Deleting, Failed, Pending, Running};
        self == to
            || matches!(
                (self, to),
                (Pending, Creating | Deleting | Failed)
                    | (Creating, Running | Busy | Deleting | Failed)
                    | (Running, Busy | Deleting | Failed)
                    | (Busy, Deleting | Failed)
                    | (Failed, Deleting)
                    | (Deleting, Deleted | Failed)
            )
    }
}

/// An instance to record: usually [`NewInstance::pending`], before the provider is asked to
/// create it; reconciliation re-records an instance found at the provider with the status
/// and ids it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInstance {
    /// The unique runner and instance name.
    pub name: String,
    /// The provider pool key (`<controller id>_<GitHub scale-set id>`, built by the control crate).
    pub pool_key: String,
    /// The initial status (no transition check applies to it).
    pub status: InstanceStatus,
    /// The provider's id, if already known.
    pub provider_id: Option<String>,
    /// GitHub's runner id, if already known.
    pub github_runner_id: Option<i64>,
    /// When it must have registered by.
    pub bootstrap_deadline: Option<Timestamp>,
}

impl NewInstance {
    /// A pending instance with no ids yet.
    pub fn pending(
        name: impl Into<String>,
        pool_key: impl Into<String>,
        bootstrap_deadline: Option<Timestamp>,
    ) -> Self {
        Self {
            name: name.into(),
            pool_key: pool_key.into(),
            status: InstanceStatus::Pending,
            provider_id: None,
            github_runner_id: None,
            bootstrap_deadline,
        }
    }
}

/// One instance's move in [`InstanceStore::advance_instances`]: to `to` (checked against the
/// transition table), with the ids given (`None` keeps a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceAdvance {
    /// The instance.
    pub name: String,
    /// Where it moves.
    pub to: InstanceStatus,
    /// The provider's id, once known.
    pub provider_id: Option<String>,
    /// GitHub's runner id, once known.
    pub github_runner_id: Option<i64>,
}

/// A stored instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The unique name.
    pub name: String,
    /// The scale set it serves.
    pub scale_set_id: ScaleSetId,
    /// The provider's id for it, once known.
    pub provider_id: Option<String>,
    /// GitHub's runner id, once known.
    pub github_runner_id: Option<i64>,
    /// The provider pool key.
    pub pool_key: String,
    /// The status.
    pub status: InstanceStatus,
    /// When it must have registered by.
    pub bootstrap_deadline: Option<Timestamp>,
    /// When it was recorded.
    pub created_at: Timestamp,
    /// When it was last written.
    pub updated_at: Timestamp,
    /// When an operator asked for it to go, if one did (the worker retires it).
    pub removal_requested_at: Option<Timestamp>,
}

/// The longest repository or workflow text [`JobShown::new`] keeps, in characters: GitHub's
/// names are far shorter; anything longer is cut (with `…`) so one odd message cannot bloat
/// the row or the status page.
pub const JOB_TEXT_MAX: usize = 256;

/// The job a busy runner runs, as GitHub's `JobStarted` named it, for display: each part is
/// absent when GitHub left it out or empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobShown {
    /// `owner/repo` (or the repository alone when GitHub gave no owner).
    pub repository: Option<String>,
    /// The workflow ref, e.g. `owner/repo/.github/workflows/ci.yml@refs/heads/main`.
    pub workflow: Option<String>,
}

impl JobShown {
    /// From a job message's `ownerName`, `repositoryName` and `jobWorkflowRef`, any of which
    /// may be empty: blanks are dropped, over-long text is cut at [`JOB_TEXT_MAX`].
    pub fn new(owner: &str, repository: &str, workflow_ref: &str) -> Self {
        let (owner, repository) = (owner.trim(), repository.trim());
        let repository = match (owner.is_empty(), repository.is_empty()) {
            (_, true) => None,
            (true, false) => Some(repository.to_owned()),
            // The repository name may already carry its owner (`owner/repo`).
            (false, false) if repository.contains('/') => Some(repository.to_owned()),
            (false, false) => Some(format!("{owner}/{repository}")),
        };
        Self {
            repository: repository.map(|r| cut(&r)),
            workflow: Some(workflow_ref.trim()).filter(|w| !w.is_empty()).map(cut),
        }
    }

    /// Whether GitHub named nothing to show.
    pub fn is_empty(&self) -> bool {
        self.repository.is_none() && self.workflow.is_none()
    }
}

/// `text` cut to [`JOB_TEXT_MAX`] characters (on a character boundary), with control
/// characters dropped.
fn cut(text: &str) -> String {
    let clean: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
    if clean.len() <= JOB_TEXT_MAX {
        return clean.into_iter().collect();
    }
    clean[..JOB_TEXT_MAX - 1]
        .iter()
        .chain(['…'].iter())
        .collect()
}

/// Instances. Writes carry the lease of the instance's scale set and fail with
/// [`crate::Error::LeaseLost`] once another holder has taken it over.
#[async_trait]
pub trait InstanceStore: Send + Sync {
    /// Records a new instance of the lease's scale set. A duplicate name is
    /// [`crate::Error::Conflict`].
    async fn create_instance(&self, lease: &Lease, new: NewInstance) -> Result<Instance>;

    /// Records several new instances of the lease's scale set in one commit, all or none (a
    /// duplicate name among them is [`crate::Error::Conflict`] and records none): a message
    /// that asks for N runners writes their N intents at once. Returned in the order given.
    async fn create_instances(&self, lease: &Lease, new: Vec<NewInstance>)
    -> Result<Vec<Instance>>;

    /// Reads an instance by name.
    async fn get_instance(&self, name: &str) -> Result<Instance>;

    /// The instances of a scale set, by name.
    async fn list_instances(&self, scale_set_id: ScaleSetId) -> Result<Vec<Instance>>;

    /// The rows of every scale set that claim provider id `id`: recorded with it, or named
    /// it (a row without a provider id is addressed by its name). A provider's answer naming
    /// such a row's instance for another runner is not ours to record.
    async fn instances_claiming(&self, id: &str) -> Result<Vec<Instance>>;

    /// How many instances of all scale sets are in each status (statuses with none left out),
    /// in one query: metrics read it every few seconds over fleets of thousands of scale sets.
    async fn count_instances_by_status(&self) -> Result<Vec<(InstanceStatus, u64)>>;

    /// How many instances each scale set has in each status (pairs with none left out), in
    /// one query: the per-scale-set metrics read it every few seconds.
    async fn count_instances_by_scale_set(&self) -> Result<Vec<(ScaleSetId, InstanceStatus, u64)>>;

    /// The scale sets that have any instance recorded, in one query: the supervisor reads it
    /// every watch to find disabled scale sets it must still drain.
    async fn scale_sets_with_instances(&self) -> Result<Vec<ScaleSetId>>;

    /// Every pool key an instance row names, once each, in one query: the orphan sweep leaves
    /// a pool any row names to its scale set's own cleanup.
    async fn instance_pool_keys(&self) -> Result<Vec<String>>;

    /// Moves an instance to `to` if the transition table allows it.
    async fn transition_instance(
        &self,
        lease: &Lease,
        name: &str,
        to: InstanceStatus,
    ) -> Result<Instance>;

    /// Records the provider id and GitHub runner id once known (`None` leaves a value as is).
    async fn set_instance_ids(
        &self,
        lease: &Lease,
        name: &str,
        provider_id: Option<&str>,
        github_runner_id: Option<i64>,
    ) -> Result<Instance>;

    /// Moves an instance to `to` (checked as by [`InstanceStore::transition_instance`]) and
    /// records the ids given (as by [`InstanceStore::set_instance_ids`]) in one commit: a
    /// runner's GitHub id with `creating`, its provider id with `running`. Either both are
    /// stored or neither.
    async fn advance_instance(
        &self,
        lease: &Lease,
        name: &str,
        to: InstanceStatus,
        provider_id: Option<&str>,
        github_runner_id: Option<i64>,
    ) -> Result<Instance>;

    /// [`InstanceStore::advance_instance`] for several instances of the lease's scale set in
    /// one commit, all or none (a refused move or an unknown name among them writes none): the
    /// GitHub ids of a message's N runners with `creating`, then their provider ids with
    /// `running`. Returned in the order given.
    async fn advance_instances(
        &self,
        lease: &Lease,
        moves: Vec<InstanceAdvance>,
    ) -> Result<Vec<Instance>>;

    /// Removes an instance row.
    async fn delete_instance(&self, lease: &Lease, name: &str) -> Result<()>;

    /// Records an operator's request that instance `name` go. Not fenced: the API holds no
    /// lease; the worker serving the scale set retires the instance when it next plans (a
    /// busy runner finishes its job first). Asking again keeps the first time.
    async fn request_instance_removal(&self, name: &str) -> Result<Instance>;

    /// The scale sets with an instance an operator asked to go
    /// ([`InstanceStore::request_instance_removal`]), once each, in one query: the supervisor
    /// reads it every watch, so a listener that stands on its last instance list between empty
    /// polls still sees the one write to its rows that comes from outside the worker.
    async fn scale_sets_with_removal_requests(&self) -> Result<Vec<ScaleSetId>>;

    /// Records the job instance `name` of the lease's scale set runs (a later start replaces
    /// it). Display only: an instance that is gone, or not the lease's set's, is ignored
    /// (`Ok(false)`); the row goes with the instance.
    async fn record_job(&self, lease: &Lease, name: &str, job: JobShown) -> Result<bool>;

    /// The jobs recorded for the instances of `scale_set_id`, by instance name.
    async fn list_instance_jobs(&self, scale_set_id: ScaleSetId)
    -> Result<Vec<(String, JobShown)>>;
}

#[cfg(test)]
mod tests {
    use super::{JOB_TEXT_MAX, JobShown};

    #[test]
    fn a_job_joins_owner_and_repository_and_drops_what_github_left_empty() {
        assert_eq!(
            JobShown::new(
                "octo",
                "app",
                "octo/app/.github/workflows/ci.yml@refs/heads/main"
            ),
            JobShown {
                repository: Some("octo/app".to_owned()),
                workflow: Some("octo/app/.github/workflows/ci.yml@refs/heads/main".to_owned()),
            }
        );
        assert_eq!(
            JobShown::new("", "app", " ").repository.as_deref(),
            Some("app")
        );
        assert_eq!(
            JobShown::new("octo", "octo/app", "").repository.as_deref(),
            Some("octo/app")
        );
        assert!(JobShown::new("octo", "", "").is_empty());
        assert!(JobShown::new("", "  ", "\t").is_empty());
    }

    #[test]
    fn an_absurdly_long_name_is_cut_on_a_character_boundary() {
        let job = JobShown::new("", &"é".repeat(10_000), &"w\u{7}".repeat(10));
        let repository = job.repository.unwrap();
        assert_eq!(repository.chars().count(), JOB_TEXT_MAX);
        assert!(repository.ends_with('…'));
        // Control characters are dropped, not shown.
        assert_eq!(job.workflow.as_deref(), Some("wwwwwwwwww"));
    }
}
