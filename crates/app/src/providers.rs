//! The providers of the configuration, built the same way for every process: a `fake`
//! provider with `[fake] state_dir` keeps its machines as files there
//! (`DirectoryProvider`), booting them with the environment's hook or over the simulator's
//! control API at `[fake] simulator_url`; without it, in memory; `external` runs the GARM
//! executable.

use std::collections::BTreeMap;
use std::sync::Arc;

use scaleset_config::Config;
use scaleset_provider::{DirectoryProvider, FakeCloud, ProcessEnv, Provider, ProviderKind};
use uuid::Uuid;

use crate::boot::HttpBoot;
use crate::env::Env;

/// Every configured provider, by name.
pub(crate) fn build(
    config: &Config,
    env: &Env,
    controller_id: Uuid,
) -> BTreeMap<String, Arc<dyn Provider>> {
    let cloud = FakeCloud::new();
    let mut providers: BTreeMap<String, Arc<dyn Provider>> = BTreeMap::new();
    for provider in &config.providers {
        let built: Arc<dyn Provider> = match (&provider.kind, &config.fake.state_dir) {
            (ProviderKind::Fake, Some(dir)) => {
                let directory = DirectoryProvider::new(dir.clone(), controller_id);
                let boot =
                    env.fake_boot.clone().or_else(|| {
                        config.fake.simulator_url.clone().map(|url| {
                            Arc::new(HttpBoot::new(url)) as Arc<dyn scaleset_provider::Boot>
                        })
                    });
                Arc::new(match boot {
                    Some(boot) => directory.with_boot(boot),
                    None => directory,
                })
            }
            _ => provider.build(controller_id, &ProcessEnv, &cloud),
        };
        providers.insert(provider.name.clone(), built);
    }
    providers
}
