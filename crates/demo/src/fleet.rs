//! The demo's fleet: three scale sets in organization `acme`, declared in the store on every
//! start (as a fleet file is applied: what exists is left alone, what is missing, as after a
//! lost database, is declared again), and, on a brand-new simulated GitHub, one of them already
//! there carrying our owner label, as an earlier install would have left it, so the first run
//! adopts it on evidence.

use std::time::Duration;

use scaleset_control::ControllerIdentity;
use scaleset_sim::Simulator;
use scaleset_store::{
    AdoptionPolicy, Auth, Endpoint, EntityKind, NewCredentials, NewEntity, NewScaleSet,
    RunnerGroup, ScaleSetSpec, SecretString, Store,
};

use crate::error::Error;
use crate::github::{ORGANIZATION, PAT};

/// The name of the demo's credentials in the store.
pub const CREDENTIALS: &str = "simulated-github";
/// The provider name the demo's scale sets use.
pub const PROVIDER: &str = "fake";

/// One declared scale set of the demo.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    /// Its name.
    pub name: &'static str,
    /// Its labels (besides the name and the owner label).
    pub labels: &'static [&'static str],
    /// Runners kept idle.
    pub min_idle: u32,
    /// The most runners at once.
    pub max_runners: u32,
    /// Whether the simulated GitHub already has it (with our owner label) on the first run.
    pub pre_existing: bool,
}

/// The three scale sets.
pub const FLEET: [Declared; 3] = [
    Declared {
        name: "linux-x64",
        labels: &["linux", "x64"],
        min_idle: 1,
        max_runners: 6,
        pre_existing: false,
    },
    Declared {
        name: "linux-arm64",
        labels: &["linux", "arm64"],
        min_idle: 0,
        max_runners: 4,
        pre_existing: false,
    },
    Declared {
        name: "release",
        labels: &["linux", "release"],
        min_idle: 0,
        max_runners: 3,
        pre_existing: true,
    },
];

impl Declared {
    /// The spec stored for it.
    pub fn spec(&self) -> ScaleSetSpec {
        spec(self.name, self.labels, self.min_idle, self.max_runners)
    }
}

/// The spec of a demo scale set: default runner group, the fake provider, policy `owned`.
pub fn spec(name: &str, labels: &[&str], min_idle: u32, max_runners: u32) -> ScaleSetSpec {
    ScaleSetSpec {
        name: name.to_owned(),
        runner_group: RunnerGroup {
            name: "Default".to_owned(),
            id: None,
        },
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        disable_update: false,
        provider: PROVIDER.to_owned(),
        image: "ubuntu-24.04".to_owned(),
        flavor: "small".to_owned(),
        min_idle,
        max_runners,
        bootstrap_timeout: Duration::from_secs(60),
        runner_prefix: name.to_owned(),
        extra_specs: serde_json::json!({}),
        enabled: true,
        adoption_policy: AdoptionPolicy::Owned,
        repair: false,
    }
}

/// Puts the pre-existing scale set on a new simulated GitHub, labelled as ours.
pub(crate) fn seed_github(sim: &Simulator, identity: &ControllerIdentity) -> Result<(), Error> {
    let owner = identity.adoption().controller_id().owner_label();
    for declared in FLEET.iter().filter(|d| d.pre_existing) {
        let labels: Vec<String> = declared
            .labels
            .iter()
            .map(|l| (*l).to_owned())
            .chain(std::iter::once(owner.clone()))
            .collect();
        sim.seed_scale_set(ORGANIZATION, 0, declared.name, &labels)?;
    }
    Ok(())
}

/// Declares the credentials (pointing at `github_url`, which may change between runs), the
/// organization and the three scale sets in the store, creating only what is missing.
pub(crate) async fn declare(store: &dyn Store, github_url: &str) -> Result<usize, Error> {
    let endpoint = Endpoint {
        base_url: github_url.trim_end_matches('/').to_owned(),
        api_base_url: format!("{}/api/v3", github_url.trim_end_matches('/')),
        ca_bundle: None,
    };
    let new = NewCredentials {
        name: CREDENTIALS.to_owned(),
        endpoint: endpoint.clone(),
        auth: Auth::Pat {
            token: SecretString::from(PAT),
        },
    };
    let credentials = match store.get_credentials_by_name(CREDENTIALS).await {
        Ok(existing) if existing.endpoint == endpoint => existing,
        Ok(existing) => store
            .update_credentials(existing.id, new)
            .await
            .map_err(Error::store("updating the demo credentials"))?,
        Err(e) if e.is_not_found() => store
            .create_credentials(new)
            .await
            .map_err(Error::store("storing the demo credentials"))?,
        Err(e) => return Err(Error::store("reading the demo credentials")(e)),
    };
    let kind = EntityKind::Organization {
        name: ORGANIZATION.to_owned(),
    };
    let entities = store
        .list_entities()
        .await
        .map_err(Error::store("listing entities"))?;
    let entity = match entities
        .into_iter()
        .find(|e| e.kind == kind && e.credentials_id == credentials.id)
    {
        Some(entity) => entity,
        None => store
            .create_entity(NewEntity {
                kind,
                credentials_id: credentials.id,
            })
            .await
            .map_err(Error::store("storing the organization"))?,
    };
    let mut declared = 0;
    for set in &FLEET {
        let found = store
            .find_scale_set(entity.id, "Default", set.name)
            .await
            .map_err(Error::store("looking up a demo scale set"))?;
        if found.is_none() {
            store
                .create_scale_set(NewScaleSet {
                    entity_id: entity.id,
                    spec: set.spec(),
                })
                .await
                .map_err(Error::store("storing a demo scale set"))?;
            declared += 1;
        }
    }
    Ok(declared)
}
