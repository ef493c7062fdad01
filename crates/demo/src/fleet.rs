//! The demo's fleet: three scale sets in organization `acme`, applied to the store on every
//! start as a fleet file is (`scaleset_fleet::apply_declared`: what exists is left alone,
//! what is missing, as after a lost database, is declared again), and, on a brand-new
//! simulated GitHub, one of them already there carrying our owner label, as an earlier install
//! would have left it, so the first run adopts it on evidence.

use std::path::Path;
use std::time::Duration;

use scaleset_control::ControllerIdentity;

use scaleset_fleet::{DeclaredScaleSet, Fleet};
use scaleset_sim::Simulator;
use scaleset_store::{
    AdoptionPolicy, Auth, Endpoint, EntityKind, NewCredentials, RawScaleSetSpec, ScaleSetSpec,
    SecretString,
};

use crate::error::Error;
use crate::github::{APP_ID, INSTALLATION_ID, ORGANIZATION};

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
    /// The runners' CPU architecture, as GARM spells it (`amd64`, `arm64`).
    pub os_arch: &'static str,
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
        os_arch: "amd64",
        pre_existing: false,
    },
    Declared {
        name: "linux-arm64",
        labels: &["linux", "arm64"],
        min_idle: 0,
        max_runners: 4,
        os_arch: "arm64",
        pre_existing: false,
    },
    Declared {
        name: "release",
        labels: &["linux", "release"],
        min_idle: 0,
        max_runners: 3,
        os_arch: "amd64",
        pre_existing: true,
    },
];

impl Declared {
    /// The spec stored for it.
    ///
    /// # Errors
    ///
    /// [`Error::Spec`] if it breaks the spec rules (a bug in the demo's fleet).
    pub fn spec(&self) -> Result<ScaleSetSpec, Error> {
        let mut spec = spec(self.name, self.labels, self.min_idle, self.max_runners)?;
        spec.set_os_arch(scaleset_store::OsArch::parse(self.os_arch).ok_or_else(|| {
            Error::Spec {
                name: self.name.to_owned(),
                problems: format!("os_arch: {:?} is not an architecture", self.os_arch),
            }
        })?);
        Ok(spec)
    }
}

/// The spec of a demo scale set, parsed by the one spec parser as every door's is: default
/// runner group, the fake provider, image `ubuntu-24.04`, flavor `small`, a one-minute
/// bootstrap timeout, policy `owned`.
///
/// # Errors
///
/// [`Error::Spec`] naming every problem, as the API would answer them.
pub fn spec(
    name: &str,
    labels: &[&str],
    min_idle: u32,
    max_runners: u32,
) -> Result<ScaleSetSpec, Error> {
    ScaleSetSpec::parse(RawScaleSetSpec {
        name: Some(name.to_owned()),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        provider: Some(PROVIDER.to_owned()),
        image: Some("ubuntu-24.04".to_owned()),
        flavor: Some("small".to_owned()),
        min_idle: Some(i64::from(min_idle)),
        max_runners: Some(i64::from(max_runners)),
        bootstrap_timeout: Some(Duration::from_secs(60)),
        runner_prefix: Some(name.to_owned()),
        adoption_policy: Some(AdoptionPolicy::Owned),
        ..RawScaleSetSpec::default()
    })
    .map_err(|problems| Error::Spec {
        name: name.to_owned(),
        problems: problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// The demo credentials' endpoint for the simulated GitHub at `github_url`: the store's
/// [`Endpoint::parse`], so the API base URL is derived as for every other endpoint.
fn endpoint(github_url: &str) -> Result<Endpoint, Error> {
    Endpoint::parse(github_url, None, None).map_err(|problems| Error::Spec {
        name: CREDENTIALS.to_owned(),
        problems: problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    })
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

/// Another controller sharing the demo's organization and cloud (issue 34): its id, whose
/// owner label its scale set carries and whose pool key its machine is tagged with.
pub const FOREIGN_CONTROLLER: &str = "9b1d2c3e-0000-4000-8000-00000000beef";
/// The other controller's scale set on the simulated GitHub (beside ours, in the same group).
pub const FOREIGN_SCALE_SET: &str = "their-linux";
/// The other controller's machine in the fake cloud.
pub const FOREIGN_INSTANCE: &str = "their-runner";

/// Seeds, on a brand-new simulated GitHub and fake cloud, another controller's scale set
/// (carrying its owner label) and one of its machines (tagged with its pool key), so a
/// decommission walk can show that nothing of theirs is touched.
pub(crate) fn seed_foreign(sim: &Simulator, instances: &Path) -> Result<(), Error> {
    let label = format!("scaleset-owner-{}", FOREIGN_CONTROLLER.replace('-', ""));
    let id = sim.seed_scale_set(
        ORGANIZATION,
        0,
        FOREIGN_SCALE_SET,
        &["linux".to_owned(), label],
    )?;
    let pool = instances.join(format!("{FOREIGN_CONTROLLER}_{id}"));
    std::fs::create_dir_all(&pool).map_err(|e| Error::file("create", &pool, e))?;
    let file = pool.join(format!("{FOREIGN_INSTANCE}.json"));
    let text = serde_json::json!({
        "name": FOREIGN_INSTANCE,
        "pool": format!("{FOREIGN_CONTROLLER}_{id}"),
    })
    .to_string();
    std::fs::write(&file, text).map_err(|e| Error::file("write", &file, e))
}

/// The demo's fleet as a fleet file would declare it: the credentials for the simulated GitHub
/// at `github_url` (which may change between runs), the demo's GitHub App with
/// `private_key` (read from the data directory), and the three scale sets in organization
/// `acme`. Applied on every start through `scaleset_fleet::apply_declared`, the production
/// path: what exists is left alone, what is missing (after a lost database) is stored again.
pub(crate) fn declared(github_url: &str, private_key: SecretString) -> Result<Fleet, Error> {
    let credentials = NewCredentials {
        name: CREDENTIALS.to_owned(),
        endpoint: endpoint(github_url)?,
        auth: Auth::App {
            app: scaleset_store::AppIdentity::Id(APP_ID),
            installation_id: INSTALLATION_ID,
            private_key,
        },
    };
    let scale_sets = FLEET
        .iter()
        .map(|set| {
            Ok(DeclaredScaleSet {
                credentials: CREDENTIALS.to_owned(),
                entity: EntityKind::Organization {
                    name: ORGANIZATION.to_owned(),
                },
                spec: set.spec()?,
                takeover: None,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(Fleet {
        credentials: vec![credentials],
        scale_sets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_fleet_parses() {
        for declared in FLEET {
            let spec = declared.spec().unwrap();
            assert_eq!(spec.runner_prefix(), declared.name);
            assert_eq!(spec.os_arch().as_str(), declared.os_arch);
        }
        let arm = FLEET.iter().find(|d| d.name == "linux-arm64").unwrap();
        assert_eq!(arm.spec().unwrap().os_arch(), scaleset_store::OsArch::Arm64);
        assert!(matches!(
            spec("../escape", &[], 0, 1),
            Err(Error::Spec { .. })
        ));
    }

    /// The demo derives its endpoint as every door does (issue 29 item 12: it once wrote
    /// `…/api/v3` whatever the host).
    #[test]
    fn the_demo_endpoint_uses_the_one_derivation() {
        let local = endpoint("http://127.0.0.1:8080/").unwrap();
        assert_eq!(local.base_url, "http://127.0.0.1:8080");
        assert_eq!(local.api_base_url, "http://127.0.0.1:8080/api/v3");
        let ghe = endpoint("https://acme.ghe.com").unwrap();
        assert_eq!(ghe.api_base_url, "https://api.acme.ghe.com");
        assert!(endpoint("not a url").is_err());
    }
}
