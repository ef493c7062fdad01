//! Draining: what becomes of the instances of a scale set that is no longer served (disabled,
//! or drained through the API). No listener hears about its jobs any more, so each pass asks
//! GitHub about every recorded runner instead: an idle runner is removed with its instance
//! (no new job can reach it), a busy one is left to finish its job (GitHub refuses its
//! removal), and one GitHub no longer has (an ephemeral runner that finished) is cleaned up.
//! Pending and creating instances, which never ran a job, are undone like idle ones.

use scaleset_provider::{Pool, PoolKey};
use scaleset_store::{InstanceStatus, ReasonCode};

use super::Runners;
use crate::error::{Error, store};

/// What one drain pass left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Left {
    /// Instances still recorded.
    pub(crate) instances: usize,
    /// Of those, running a job.
    pub(crate) busy: usize,
    /// How many this pass removed.
    pub(crate) removed: usize,
}

impl Runners<'_> {
    /// One drain pass over every recorded instance; says what is left.
    pub(crate) async fn drain(&mut self) -> Result<Left, Error> {
        let before = self.instances().await?;
        for instance in &before {
            // Each instance is deleted under the pool key it was created with (an instance of
            // an earlier GitHub id of this scale set carries that id's key).
            let key =
                PoolKey::parse(&instance.pool_key).map_err(|source| Error::StoredPoolKey {
                    instance: instance.name.clone(),
                    pool_key: instance.pool_key.clone(),
                    source,
                })?;
            self.pool = Pool::new(key);
            self.remove_everywhere(instance).await?;
        }
        let instances = self.instances().await?;
        Ok(Left {
            removed: before.len().saturating_sub(instances.len()),
            instances: instances.len(),
            busy: instances
                .iter()
                .filter(|i| i.status == InstanceStatus::Busy)
                .count(),
        })
    }

    /// Records a drain event.
    pub(crate) async fn drain_event(&self, code: ReasonCode, reason: &str) -> Result<(), Error> {
        tracing::info!(event = %code, %reason, "draining");
        self.shared
            .store
            .append_event(self.scale_set.id, code, reason)
            .await
            .map_err(store("appending an event"))?;
        Ok(())
    }
}
