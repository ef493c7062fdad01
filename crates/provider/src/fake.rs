//! The fake provider: an in-process, deterministic cloud for tests and the
//! quick start. Instances are recorded with the controller ID and pool key
//! they were created for; faults (failing creates and deletes, slowness, lost
//! instances, lost create responses) are switched on at run time; a hook
//! receives each created runner's JIT config so a simulator can boot it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use crate::bootstrap::{CreateRequest, OsType};
use crate::command::Command;
use crate::error::Error;
use crate::instance::{InstanceId, InstanceStatus, ProviderInstance, check_instance_name};
use crate::pool::{Pool, PoolKey};
use crate::provider::Provider;
use secrecy::SecretString;

/// An instance held by the fake cloud, with the tags it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeInstance {
    /// The provider's view of it.
    pub instance: ProviderInstance,
    /// The controller that created it (`GARM_CONTROLLER_ID`).
    pub controller_id: Uuid,
    /// Its pool key (`GARM_POOL_ID`).
    pub pool: PoolKey,
}

/// What the create hook receives for each created instance.
#[derive(Debug, Clone)]
pub struct CreatedRunner {
    /// The instance (runner) name.
    pub name: String,
    /// The provider ID given to it.
    pub provider_id: String,
    /// Its pool key.
    pub pool: PoolKey,
    /// The controller that created it.
    pub controller_id: Uuid,
    /// The runner's JIT config, when the request carried one.
    pub jit_config: Option<SecretString>,
    /// The bootstrap parameters' `metadata-url` (empty when the controller gave none).
    pub metadata_url: String,
    /// The bootstrap parameters' `callback-url`.
    pub callback_url: String,
    /// The bootstrap parameters' `instance-token`.
    pub instance_token: SecretString,
    /// The whole bootstrap, as an external provider would read it on stdin.
    pub bootstrap: crate::BootstrapInstance,
}

type CreateHook = Arc<dyn Fn(&CreatedRunner) + Send + Sync>;

#[derive(Default)]
struct Faults {
    failing_creates: usize,
    failing_deletes: usize,
    failing_lists: usize,
    lost_create_responses: usize,
    delay: Duration,
}

#[derive(Default)]
struct CloudState {
    instances: BTreeMap<String, FakeInstance>,
    /// Provider ids by instance name, so a create's duplicate check and a lookup by name do not
    /// compare every instance's name (issue 35: at 1,000 jobs/s the fake cloud's scan was a
    /// tenth of the benchmark's CPU). Changed only by [`CloudState::add`] and
    /// [`CloudState::take`].
    names: BTreeMap<String, BTreeSet<String>>,
    next_id: u64,
    faults: Faults,
    hook: Option<CreateHook>,
    /// Every create and delete asked for, failed or not.
    create_calls: usize,
    delete_calls: usize,
}

impl CloudState {
    fn add(&mut self, provider_id: String, instance: FakeInstance) {
        self.names
            .entry(instance.instance.name.clone())
            .or_default()
            .insert(provider_id.clone());
        self.instances.insert(provider_id, instance);
    }

    fn take(&mut self, provider_id: &str) -> Option<FakeInstance> {
        let instance = self.instances.remove(provider_id)?;
        if let Some(ids) = self.names.get_mut(&instance.instance.name) {
            ids.remove(provider_id);
            if ids.is_empty() {
                self.names.remove(&instance.instance.name);
            }
        }
        Some(instance)
    }

    /// Finds an instance by provider ID, or by name (GARM passes the name when a create never
    /// returned a provider ID): its provider id.
    fn find(&self, id: &InstanceId) -> Option<String> {
        if self.instances.contains_key(id.as_str()) {
            return Some(id.as_str().to_owned());
        }
        self.names.get(id.as_str())?.first().cloned()
    }
}

/// The shared fake cloud. Several [`FakeProvider`]s (one per controller ID)
/// can share one cloud, as controllers share a real one.
#[derive(Clone, Default)]
pub struct FakeCloud {
    state: Arc<Mutex<CloudState>>,
}

impl fmt::Debug for FakeCloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeCloud")
            .field("instances", &self.lock().instances.len())
            .finish_non_exhaustive()
    }
}

impl FakeCloud {
    /// An empty cloud with no faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts a running instance named `name` into the cloud as another manager made it
    /// (tagged with its `controller_id` and `pool`), without a create call or the hook: what
    /// GARM left running, for takeover tests. Returns its provider id.
    pub fn plant(&self, controller_id: Uuid, pool: PoolKey, name: &str) -> String {
        let mut state = self.lock();
        state.next_id += 1;
        let provider_id = format!("fake-{:06}", state.next_id);
        let instance = ProviderInstance {
            provider_id: provider_id.clone(),
            name: name.to_owned(),
            os_type: Some("linux".to_owned()),
            os_name: Some("fake".to_owned()),
            os_version: None,
            os_arch: Some("amd64".to_owned()),
            addresses: Vec::new(),
            status: InstanceStatus::Running,
            provider_fault: None,
            pool_id: None,
        };
        state.add(
            provider_id.clone(),
            FakeInstance {
                instance,
                controller_id,
                pool,
            },
        );
        provider_id
    }

    /// A provider acting for `controller_id` in this cloud.
    pub fn provider(&self, controller_id: Uuid) -> FakeProvider {
        FakeProvider {
            cloud: self.clone(),
            controller_id,
        }
    }

    fn lock(&self) -> MutexGuard<'_, CloudState> {
        // No code panics while holding the lock; recover the data regardless.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every instance, ordered by provider ID (creation order).
    pub fn instances(&self) -> Vec<FakeInstance> {
        self.lock().instances.values().cloned().collect()
    }

    /// How many creates were asked for so far, failed ones included.
    pub fn create_calls(&self) -> usize {
        self.lock().create_calls
    }

    /// How many deletes were asked for so far, failed ones included.
    pub fn delete_calls(&self) -> usize {
        self.lock().delete_calls
    }

    /// The next `count` creates fail (exit code 1) without creating anything.
    pub fn fail_creates(&self, count: usize) {
        self.lock().faults.failing_creates = count;
    }

    /// The next `count` deletes fail (exit code 1) without deleting anything.
    pub fn fail_deletes(&self, count: usize) {
        self.lock().faults.failing_deletes = count;
    }

    /// The next `count` lists (`ListInstances`) fail (exit code 1).
    pub fn fail_lists(&self, count: usize) {
        self.lock().faults.failing_lists = count;
    }

    /// The next `count` creates create the instance but report a timeout, as
    /// a call whose response was lost: look before you create again.
    pub fn lose_create_responses(&self, count: usize) {
        self.lock().faults.lost_create_responses = count;
    }

    /// Every call waits this long before acting (use paused tokio time in tests).
    pub fn set_delay(&self, delay: Duration) {
        self.lock().faults.delay = delay;
    }

    /// The instance disappears, as if deleted out of band (matched by provider
    /// ID or name). Returns whether it existed.
    pub fn lose_instance(&self, instance: &InstanceId) -> bool {
        let mut state = self.lock();
        match state.find(instance) {
            Some(key) => state.take(&key).is_some(),
            None => false,
        }
    }

    /// The instance dies (a crashed or preempted machine): it stays listed, with `status`
    /// (stopped or error). Returns whether it existed.
    pub fn kill_instance(&self, instance: &InstanceId, status: InstanceStatus) -> bool {
        let mut state = self.lock();
        match state.find(instance) {
            Some(key) => state
                .instances
                .get_mut(&key)
                .map(|i| i.instance.status = status)
                .is_some(),
            None => false,
        }
    }

    /// Calls `hook` with every created runner (after the instance exists).
    pub fn on_create(&self, hook: impl Fn(&CreatedRunner) + Send + Sync + 'static) {
        self.lock().hook = Some(Arc::new(hook));
    }

    fn delay(&self) -> Duration {
        self.lock().faults.delay
    }
}

fn injected(command: Command, what: &str) -> Error {
    Error::Failed {
        command,
        exit_code: Some(1),
        stderr_tail: format!("fake provider: injected {what} failure"),
        provider_fault: None,
    }
}

/// The fake cloud as seen by one controller.
#[derive(Debug, Clone)]
pub struct FakeProvider {
    cloud: FakeCloud,
    controller_id: Uuid,
}

impl FakeProvider {
    /// A provider with its own, empty cloud.
    pub fn new(controller_id: Uuid) -> Self {
        FakeCloud::new().provider(controller_id)
    }

    /// The cloud, to inspect instances and switch faults.
    pub fn cloud(&self) -> &FakeCloud {
        &self.cloud
    }

    #[allow(
        clippy::disallowed_methods,
        reason = "the fake cloud's configured create delay stands in for a real cloud's"
    )]
    async fn pause(&self) {
        let delay = self.cloud.delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }

    fn set_status(
        &self,
        command: Command,
        instance: &InstanceId,
        status: InstanceStatus,
    ) -> Result<(), Error> {
        let mut state = self.cloud.lock();
        // As an external provider's exit code 30 from a start or stop now is:
        // a failure with its reason, not "not found" (only `get` says that).
        let key = state.find(instance).ok_or_else(|| Error::Failed {
            command,
            exit_code: Some(30),
            stderr_tail: format!("fake provider: no instance {instance}"),
            provider_fault: None,
        })?;
        if let Some(found) = state.instances.get_mut(&key) {
            found.instance.status = status;
        }
        Ok(())
    }
}

#[async_trait]
impl Provider for FakeProvider {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let command = Command::CreateInstance;
        // Refused as every provider refuses it, so tests over the fake meet the same rule.
        check_instance_name(command, &request.bootstrap.name)?;
        self.pause().await;
        let bootstrap = &request.bootstrap;
        let (instance, hook, lost) = {
            let mut state = self.cloud.lock();
            state.create_calls += 1;
            if state.faults.failing_creates > 0 {
                state.faults.failing_creates -= 1;
                return Err(injected(command, "create"));
            }
            if state.names.contains_key(&bootstrap.name) {
                return Err(Error::Duplicate {
                    command,
                    stderr_tail: String::new(),
                });
            }
            state.next_id += 1;
            let provider_id = format!("fake-{:06}", state.next_id);
            let instance = ProviderInstance {
                provider_id: provider_id.clone(),
                name: bootstrap.name.clone(),
                os_type: Some(
                    match bootstrap.os_type {
                        OsType::Windows => "windows",
                        OsType::Linux => "linux",
                        OsType::Osx => "osx",
                        OsType::Unknown => "unknown",
                    }
                    .to_owned(),
                ),
                os_name: Some("fake".to_owned()),
                os_version: None,
                os_arch: serde_json::to_value(bootstrap.arch)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned)),
                addresses: Vec::new(),
                status: InstanceStatus::Running,
                provider_fault: None,
                pool_id: None,
            };
            state.add(
                provider_id,
                FakeInstance {
                    instance: instance.clone(),
                    controller_id: self.controller_id,
                    pool: bootstrap.pool_id.clone(),
                },
            );
            let lost = state.faults.lost_create_responses > 0;
            if lost {
                state.faults.lost_create_responses -= 1;
            }
            (instance, state.hook.clone(), lost)
        };
        if let Some(hook) = hook {
            hook(&CreatedRunner {
                name: instance.name.clone(),
                provider_id: instance.provider_id.clone(),
                pool: bootstrap.pool_id.clone(),
                controller_id: self.controller_id,
                jit_config: request.jit_config.clone(),
                metadata_url: bootstrap.metadata_url.clone(),
                callback_url: bootstrap.callback_url.clone(),
                instance_token: bootstrap.instance_token.clone(),
                bootstrap: bootstrap.clone(),
            });
        }
        if lost {
            return Err(Error::Timeout {
                command,
                after: self.cloud.delay(),
            });
        }
        Ok(instance)
    }

    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        let pools: std::collections::BTreeSet<PoolKey> = self
            .cloud
            .lock()
            .instances
            .values()
            .filter(|i| i.controller_id == self.controller_id)
            .map(|i| i.pool.clone())
            .collect();
        Ok(Some(pools.into_iter().collect()))
    }

    async fn delete(&self, _pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.pause().await;
        let mut state = self.cloud.lock();
        state.delete_calls += 1;
        if state.faults.failing_deletes > 0 {
            state.faults.failing_deletes -= 1;
            return Err(injected(Command::DeleteInstance, "delete"));
        }
        if let Some(key) = state.find(instance) {
            state.take(&key);
        }
        Ok(())
    }

    async fn get(&self, _pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        self.pause().await;
        let state = self.cloud.lock();
        state
            .find(instance)
            .and_then(|key| state.instances.get(&key))
            .map(|i| i.instance.clone())
            .ok_or(Error::NotFound {
                command: Command::GetInstance,
                stderr_tail: String::new(),
            })
    }

    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        self.pause().await;
        let mut state = self.cloud.lock();
        if state.faults.failing_lists > 0 {
            state.faults.failing_lists -= 1;
            return Err(injected(Command::ListInstances, "list"));
        }
        Ok(state
            .instances
            .values()
            .filter(|i| i.pool == pool.key)
            .filter(|i| pool.controller_id.is_none_or(|c| c == i.controller_id))
            .map(|i| i.instance.clone())
            .collect())
    }

    async fn remove_all(&self) -> Result<(), Error> {
        self.pause().await;
        let controller = self.controller_id;
        self.cloud
            .lock()
            .instances
            .retain(|_, i| i.controller_id != controller);
        Ok(())
    }

    async fn start(&self, _pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.pause().await;
        self.set_status(Command::StartInstance, instance, InstanceStatus::Running)
    }

    async fn stop(&self, _pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.pause().await;
        self.set_status(Command::StopInstance, instance, InstanceStatus::Stopped)
    }

    async fn version(&self) -> Result<String, Error> {
        Ok(format!("scaleset-fake-{}", env!("CARGO_PKG_VERSION")))
    }
}
