//! Turning a validated [`ProviderConfig`] into a running [`Provider`]. Apart from the
//! configuration module so configuration stays plain data that the provider implementations
//! read, and only this module knows them all.

use std::sync::Arc;

use uuid::Uuid;

use crate::config::{ProviderConfig, ProviderKind};
use crate::environment::EnvSource;
use crate::external::ExternalProvider;
use crate::fake::FakeCloud;
use crate::provider::Provider;

impl ProviderConfig {
    /// Builds the provider this configuration describes, acting for
    /// `controller_id`. External providers read their allowed variables from
    /// `env`; the fake one lives in `fake_cloud`, so the caller can install a
    /// create hook (the simulator boots runners from it) or inspect it.
    pub fn build(
        &self,
        controller_id: Uuid,
        env: &dyn EnvSource,
        fake_cloud: &FakeCloud,
    ) -> Arc<dyn Provider> {
        match &self.kind {
            ProviderKind::External(config) => Arc::new(ExternalProvider::new(
                self.name.clone(),
                config.clone(),
                controller_id,
                env,
            )),
            ProviderKind::Fake => Arc::new(fake_cloud.provider(controller_id)),
        }
    }
}
