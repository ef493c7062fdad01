//! What every scale set's task shares: the store, the clients, the providers, the settings
//! and the per-process caches. Its own module so the task and the steps it runs (ensure,
//! listen, scale) all depend on it and not on each other's modules.

use std::collections::BTreeMap;
use std::sync::Arc;

use scaleset_provider::Provider;
use scaleset_store::{Clock, EntityId, ScaleSetId, Store, Timestamp};

use crate::checkpoint::Checkpoints;
use crate::client_factory::ClientFactory;
use crate::identity::ControllerIdentity;
use crate::metrics::Metrics;
use crate::planner::bootstrap_backoff::Boots;
use crate::planner::provider_backoff::ProviderHealth;
use scaleset_settings::Settings;

/// What every task shares.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clients: Arc<dyn ClientFactory>,
    pub(crate) providers: BTreeMap<String, Arc<dyn Provider>>,
    pub(crate) identity: ControllerIdentity,
    pub(crate) settings: Settings,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) checkpoints: Arc<dyn Checkpoints>,
    /// Runner-group ids by entity and name, looked up once per process however many scale
    /// sets share the group (see `ensure::resolve_group`).
    pub(crate) runner_groups: RunnerGroups,
    /// Permits for scale sets that are starting (`Settings::max_concurrent_starts`).
    pub(crate) starting: tokio::sync::Semaphore,
    /// Permits for the recoveries of each provider's scale sets
    /// (`Settings::max_concurrent_recoveries`).
    pub(crate) recoveries: Recoveries,
    /// The listeners' lease renewals, joined into one store commit per short window.
    pub(crate) renewals: Renewals,
    /// The listeners' status-page samples, joined into one store commit per short window.
    pub(crate) samples: Arc<Samples>,
    /// Each scale set's provider, as its task last found it (the back-off of a failing
    /// provider outlives a pass: a failed pass must not make the provider be tried at once).
    pub(crate) provider_health: ProviderHealthBook,
    /// Each scale set's failed bootstraps in a row and the wait before its next create
    /// ([`crate::planner::bootstrap_backoff`]). In memory: a restart, or another worker taking
    /// the lease, starts the count again (the next failure backs off anew).
    pub(crate) boots: BootsBook,
    /// The scale sets with an operator's removal request, as the supervisor last read them.
    pub(crate) removal_requests: RemovalRequests,
    /// The operators' "retry now" requests the supervisor has seen, and the wake of each
    /// scale set's task.
    pub(crate) retries: Retries,
    /// Each entity's runner downloads (GARM's `tools`), read once per entity per refresh.
    pub(crate) runner_tools: crate::runner_tools::RunnerTools,
    /// The provider ids that came with a refused create answer ([`crate::planner::claim`]).
    pub(crate) refused_ids: RefusedIds,
}

/// The provider ids that came with a create answer the claim planner refused, in this
/// process: never recorded, and no delete is sent with one. One entry per refused create (a
/// provider refused again and again backs off), so it stays small.
#[derive(Default)]
pub(crate) struct RefusedIds(std::sync::Mutex<std::collections::HashSet<String>>);

impl RefusedIds {
    /// Remembers `id` as refused.
    pub(crate) fn insert(&self, id: &str) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.to_owned());
    }

    /// Runs `f` with the ids refused so far.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&std::collections::HashSet<String>) -> T) -> T {
        f(&self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// The scale sets with an instance an operator asked to go, read by the supervisor once per
/// watch (one query for the fleet): the one write to a scale set's rows from outside the
/// worker, so a listener standing on its last instance list knows to list again
/// ([`crate::planner::idle`]). Unknown (before the first read, or after one failed) counts as
/// every scale set having one.
#[derive(Default)]
pub(crate) struct RemovalRequests(std::sync::Mutex<Option<std::collections::HashSet<ScaleSetId>>>);

impl RemovalRequests {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<std::collections::HashSet<ScaleSetId>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what the supervisor read (`None`: the read failed).
    pub(crate) fn set(&self, read: Option<std::collections::HashSet<ScaleSetId>>) {
        *self.lock() = read;
    }

    /// Whether scale set `id` may have a removal request the listener has not seen.
    pub(crate) fn may_have(&self, id: ScaleSetId) -> bool {
        self.lock().as_ref().is_none_or(|ids| ids.contains(&id))
    }
}

/// An operator's "retry now" (`scalesetctl scale-set retry`): the API writes its time in the
/// store ([`scaleset_store::ScaleSetStore::request_retry`]), since the back-off it cuts short
/// lives in the memory of the worker holding the lease, maybe another process. The supervisor
/// reads the times with the scale sets at every watch ([`Retries::noticed`] decides which are
/// new); for each new one it ends the set's provider back-off
/// ([`ProviderHealthBook::retry_now`]) and wakes its task ([`Retries::wake`]), whether the task
/// listens (it scales at once) or waits after a failed pass (it tries again at once).
#[derive(Default)]
pub(crate) struct Retries {
    /// The request times seen, by scale set; `None` before the first watch of this process.
    seen: std::sync::Mutex<Option<std::collections::HashMap<ScaleSetId, Timestamp>>>,
    /// Each scale set task's wake.
    wakes: std::sync::Mutex<std::collections::HashMap<ScaleSetId, Arc<tokio::sync::Notify>>>,
}

impl Retries {
    /// The scale sets whose request is new in `read` (every stored scale set with the time of
    /// its last request). The first read of a process is the baseline: a request made before
    /// this process started found nothing of it backing off, so there is nothing to cut short.
    /// After it, a time not seen before is a request (also for a scale set stored since).
    pub(crate) fn noticed(&self, read: &[(ScaleSetId, Option<Timestamp>)]) -> Vec<ScaleSetId> {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now: std::collections::HashMap<ScaleSetId, Timestamp> = read
            .iter()
            .filter_map(|(id, at)| at.map(|at| (*id, at)))
            .collect();
        let new = match seen.as_ref() {
            None => Vec::new(),
            Some(before) => {
                let mut new: Vec<ScaleSetId> = now
                    .iter()
                    .filter(|(id, at)| before.get(id) != Some(at))
                    .map(|(id, _)| *id)
                    .collect();
                new.sort_unstable();
                new
            }
        };
        *seen = Some(now);
        new
    }

    /// The wake of scale set `id`'s task (one per scale set, made on first use).
    pub(crate) fn wake_of(&self, id: ScaleSetId) -> Arc<tokio::sync::Notify> {
        self.wakes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(id)
            .or_default()
            .clone()
    }

    /// Wakes scale set `id`'s task if it waits (a task in a pass needs no wake: the pass reads
    /// the provider's health as it goes).
    pub(crate) fn wake(&self, id: ScaleSetId) {
        if let Some(wake) = self
            .wakes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
        {
            wake.notify_waiters();
        }
    }

    /// Forgets scale set `id`'s wake (its task ended).
    pub(crate) fn forget(&self, id: ScaleSetId) {
        self.wakes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
    }
}

/// The provider back-off of every scale set served in this process
/// ([`crate::planner::provider_backoff`]).
#[derive(Default)]
pub(crate) struct ProviderHealthBook {
    sets: std::sync::Mutex<
        std::collections::HashMap<scaleset_store::ScaleSetId, (String, ProviderHealth)>,
    >,
}

impl ProviderHealthBook {
    /// The scale set's provider health (healthy when never seen failing).
    pub(crate) fn get(&self, id: scaleset_store::ScaleSetId) -> ProviderHealth {
        self.sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .map(|(_, health)| *health)
            .unwrap_or_default()
    }

    /// Records the scale set's health of its provider `provider` (a healthy one is forgotten).
    pub(crate) fn set(
        &self,
        id: scaleset_store::ScaleSetId,
        provider: &str,
        health: ProviderHealth,
    ) {
        let mut sets = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if health == ProviderHealth::default() {
            sets.remove(&id);
        } else {
            sets.insert(id, (provider.to_owned(), health));
        }
    }

    /// An operator asked scale set `id` to retry now: its back-off ends at `now` (the count,
    /// and so any flag, stays until its own call works, as after another set's answer).
    pub(crate) fn retry_now(&self, id: ScaleSetId, now: std::time::Instant) {
        if let Some((_, health)) = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_mut(&id)
        {
            *health = health.provider_answered(now);
        }
    }

    /// `provider` answered a call at `now`: the other scale sets backing off from it try again
    /// at once ([`ProviderHealth::provider_answered`]).
    pub(crate) fn provider_answered(&self, provider: &str, now: std::time::Instant) {
        let mut sets = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (of, health) in sets.values_mut() {
            if of == provider {
                *health = health.provider_answered(now);
            }
        }
    }
}

/// The bootstrap back-off of every scale set served in this process
/// ([`crate::planner::bootstrap_backoff`]).
#[derive(Default)]
pub(crate) struct BootsBook(std::sync::Mutex<std::collections::HashMap<ScaleSetId, Boots>>);

impl BootsBook {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<ScaleSetId, Boots>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The scale set's bootstraps (none failing when never seen failing).
    pub(crate) fn get(&self, id: ScaleSetId) -> Boots {
        self.lock().get(&id).copied().unwrap_or_default()
    }

    /// Records the scale set's bootstraps (a healthy one is forgotten).
    pub(crate) fn set(&self, id: ScaleSetId, boots: Boots) {
        let mut sets = self.lock();
        if boots == Boots::default() {
            sets.remove(&id);
        } else {
            sets.insert(id, boots);
        }
    }

    /// An operator asked scale set `id` to retry now: its wait ends at `now`.
    pub(crate) fn retry_now(&self, id: ScaleSetId, now: Timestamp) {
        if let Some(boots) = self.lock().get_mut(&id) {
            *boots = boots.retry_now(now);
        }
    }
}

/// One semaphore per provider for the recoveries running beside the listeners: a provider
/// slow to list holds up its own scale sets' recoveries, never another provider's, and never a
/// start (issue 35).
#[derive(Default)]
pub(crate) struct Recoveries {
    by_provider: BTreeMap<String, Arc<tokio::sync::Semaphore>>,
}

impl Recoveries {
    /// A semaphore of `permits` (at least one) for each provider named.
    pub(crate) fn new<'a>(providers: impl IntoIterator<Item = &'a String>, permits: usize) -> Self {
        Self {
            by_provider: providers
                .into_iter()
                .map(|name| {
                    let permits = Arc::new(tokio::sync::Semaphore::new(permits.max(1)));
                    (name.clone(), permits)
                })
                .collect(),
        }
    }

    /// The semaphore of `provider` (none for a provider this process does not run).
    pub(crate) fn of(&self, provider: &str) -> Option<Arc<tokio::sync::Semaphore>> {
        self.by_provider.get(provider).cloned()
    }
}

/// Lease renewals waiting for their batch (see `Listener::renew_lease`).
pub(crate) type Renewals = crate::coalesce::Coalesce<
    scaleset_store::Lease,
    Result<scaleset_store::Lease, scaleset_store::Error>,
>;

/// Status-page samples waiting for their batch (see `Listener::sample`).
pub(crate) type Samples = crate::coalesce::Coalesce<
    (scaleset_store::Lease, scaleset_store::Sample),
    Result<(), scaleset_store::Error>,
>;

/// One lookup per (entity, runner-group name): the first scale set to need it looks it up,
/// the others wait for that answer (a failed or empty lookup is not kept).
#[derive(Default)]
pub(crate) struct RunnerGroups {
    cells: std::sync::Mutex<std::collections::HashMap<GroupKey, GroupCell>>,
}

/// An entity and a runner-group name.
type GroupKey = (EntityId, String);
/// The group's id, once looked up.
type GroupCell = Arc<tokio::sync::OnceCell<i64>>;

impl RunnerGroups {
    pub(crate) fn cell(&self, entity: EntityId, name: &str) -> GroupCell {
        self.cells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry((entity, name.to_owned()))
            .or_default()
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::provider_backoff::BackoffPolicy;
    use std::time::{Duration, Instant};

    /// Regression: a 55 s provider outage kept a scale set waiting out its back-off minutes
    /// after another set of the same provider was served again.
    #[test]
    fn an_answer_of_a_provider_wakes_its_other_backing_off_scale_sets_only() {
        let book = ProviderHealthBook::default();
        let policy = BackoffPolicy {
            base: Duration::from_secs(60),
            max: Duration::from_secs(300),
            flag_after: 1,
        };
        let now = Instant::now();
        let (failing, _) = ProviderHealth::default().failed(&policy, now, 0.9);
        let (a, b, other) = (
            ScaleSetId::generate(),
            ScaleSetId::generate(),
            ScaleSetId::generate(),
        );
        book.set(a, "cloud", failing);
        book.set(b, "cloud", failing);
        book.set(other, "elsewhere", failing);
        let later = now + Duration::from_secs(1);
        assert!(!book.get(b).may_call(later));
        // `a`'s call works: `b` tries again at once; the other provider's set still waits.
        book.set(a, "cloud", ProviderHealth::default());
        book.provider_answered("cloud", later);
        assert_eq!(book.get(a), ProviderHealth::default());
        assert!(book.get(b).may_call(later));
        assert_eq!(book.get(b).failures, 1);
        assert!(!book.get(other).may_call(later));
    }

    #[test]
    fn a_retry_request_ends_that_scale_sets_back_off_only() {
        let book = ProviderHealthBook::default();
        let policy = BackoffPolicy {
            base: Duration::from_secs(3600),
            max: Duration::from_secs(3600),
            flag_after: 1,
        };
        let now = Instant::now();
        let (failing, _) = ProviderHealth::default().failed(&policy, now, 0.9);
        let (asked, other) = (ScaleSetId::generate(), ScaleSetId::generate());
        book.set(asked, "cloud", failing);
        book.set(other, "cloud", failing);
        let later = now + Duration::from_secs(1);
        book.retry_now(asked, later);
        assert!(book.get(asked).may_call(later));
        assert_eq!(
            book.get(asked).failures,
            1,
            "the flag stays until a call works"
        );
        assert!(!book.get(other).may_call(later));
        // A healthy scale set has nothing to cut short.
        let healthy = ScaleSetId::generate();
        book.retry_now(healthy, later);
        assert_eq!(book.get(healthy), ProviderHealth::default());
    }

    #[test]
    fn a_retry_request_is_noticed_once_and_the_first_read_is_the_baseline() {
        let retries = Retries::default();
        let (old, fresh, stored_later) = (
            ScaleSetId::generate(),
            ScaleSetId::generate(),
            ScaleSetId::generate(),
        );
        let t = Timestamp::from_unix_millis;
        // Requests made before this process started are not acted on.
        assert!(
            retries
                .noticed(&[(old, Some(t(10))), (fresh, None)])
                .is_empty()
        );
        // Unchanged: nothing.
        assert!(
            retries
                .noticed(&[(old, Some(t(10))), (fresh, None)])
                .is_empty()
        );
        // A new request, on a set seen before and on one stored since.
        let mut both = vec![fresh, stored_later];
        both.sort_unstable();
        assert_eq!(
            retries.noticed(&[
                (old, Some(t(10))),
                (fresh, Some(t(20))),
                (stored_later, Some(t(21)))
            ]),
            both
        );
        // Seen: not again; a later request on the old set is.
        assert_eq!(
            retries.noticed(&[
                (old, Some(t(30))),
                (fresh, Some(t(20))),
                (stored_later, Some(t(21)))
            ]),
            vec![old]
        );
    }
}
