use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use scaleset_adopt::{ControllerId, GithubScaleSetId, Identity, ScaleSet as GitHubScaleSet};
use scaleset_store::{
    AdoptionPolicy, AppIdentity, Auth, ClientId, Credentials, CredentialsId, Endpoint, Entity,
    EntityId, EntityKind, NewCredentials, ScaleSet, ScaleSetId, ScaleSetSpec, ScaleSetState,
    SecretString, Timestamp,
};

use super::*;

const OURS: &str = "0193b6a4-7d2e-7c1a-9f3e-123456789abc";
const THEIRS: &str = "0193b6a4-7d2e-7c1a-9f3e-cba987654321";

fn identity() -> Identity {
    Identity::new(ControllerId::parse(OURS).unwrap())
}

fn owner_label(id: &str) -> String {
    ControllerId::parse(id).unwrap().owner_label()
}

fn org(name: &str) -> EntityKind {
    EntityKind::Organization { name: name.into() }
}

/// The harness's scale set `name`, but labelled `linux`, with runner updates on and at most 4
/// runners: the values these plans were written against.
fn spec(name: &str) -> ScaleSetSpec {
    scaleset_store::test_util::spec(name)
        .edit(|r| {
            r.labels = vec!["linux".into()];
            r.disable_update = Some(false);
            r.max_runners = Some(i64::from(4));
        })
        .expect("a valid test spec")
}

fn new_credentials(name: &str, token: &str) -> NewCredentials {
    NewCredentials {
        name: name.into(),
        endpoint: Endpoint::github_com(),
        auth: Auth::Pat {
            token: SecretString::from(token),
        },
    }
}

fn declared(name: &str, credentials: &str) -> DeclaredScaleSet {
    DeclaredScaleSet {
        credentials: credentials.into(),
        entity: org("acme"),
        spec: spec(name),
        takeover: None,
    }
}

/// A world holding `main` credentials, the `acme` organization under them, and `sets`.
struct Stored {
    world: World,
    entity: EntityId,
}

fn stored(sets: &[ScaleSetSpec]) -> Stored {
    let credentials = Credentials {
        id: CredentialsId::generate(),
        name: "main".into(),
        endpoint: Endpoint::github_com(),
        auth: Auth::Pat {
            token: SecretString::from("ghp_one"),
        },
        key_id: "k1".into(),
        created_at: Timestamp::EPOCH,
        updated_at: Timestamp::EPOCH,
    };
    let entity = Entity {
        id: EntityId::generate(),
        kind: org("acme"),
        credentials_id: credentials.id,
        created_at: Timestamp::EPOCH,
    };
    let scale_sets = sets.iter().map(|s| row(entity.id, s.clone())).collect();
    Stored {
        entity: entity.id,
        world: World {
            credentials: vec![credentials],
            entities: vec![entity],
            scale_sets,
            instances: HashMap::new(),
            configured: Vec::new(),
        },
    }
}

fn row(entity_id: EntityId, spec: ScaleSetSpec) -> ScaleSet {
    ScaleSet {
        id: ScaleSetId::generate(),
        entity_id,
        spec,
        github_id: None,
        provenance: None,
        evidence: Vec::new(),
        refusal: None,
        takeover: None,
        state: ScaleSetState::Pending,
        state_reason: String::new(),
        last_message_id: 0,
        session_id: None,
        desired_runners: 0,
        last_message_at: None,
        jobs_waiting: 0,
        jobs_waiting_since: None,
        provider_error: None,
        retry_requested_at: None,
        generation: 1,
        created_at: Timestamp::EPOCH,
        updated_at: Timestamp::EPOCH,
    }
}

fn fleet(scale_sets: Vec<DeclaredScaleSet>) -> Fleet {
    Fleet {
        credentials: vec![new_credentials("main", "ghp_one")],
        scale_sets,
    }
}

fn run(
    fleet: &Fleet,
    world: &World,
    lookups: &HashMap<ScaleSetKey, Lookup>,
    prune: bool,
) -> FleetPlan {
    let identity = identity();
    plan(&FleetInput {
        fleet,
        world,
        lookups,
        identity: &identity,
        prune,
    })
}

fn listed(sets: Vec<GitHubScaleSet>) -> Lookup {
    Lookup::Listed {
        runner_group_id: 1,
        scale_sets: sets,
    }
}

fn github(id: i64, name: &str, labels: &[&str]) -> GitHubScaleSet {
    let mut all = vec![name.to_owned(), "linux".to_owned()];
    all.extend(labels.iter().map(|l| (*l).to_owned()));
    GitHubScaleSet {
        id: GithubScaleSetId(id),
        name: name.into(),
        runner_group_id: Some(scaleset_adopt::RunnerGroupId(1)),
        labels: all,
        disable_update: false,
    }
}

fn one(fleet: &Fleet, world: &World, lookup: Option<Lookup>) -> ScaleSetStep {
    let mut lookups = HashMap::new();
    if let Some(lookup) = lookup {
        lookups.insert(fleet.scale_sets[0].key(), lookup);
    }
    run(fleet, world, &lookups, false).scale_sets.remove(0)
}

#[test]
fn an_empty_store_creates_credentials_entity_and_scale_set() {
    let fleet = fleet(vec![declared("web", "main")]);
    let plan = run(&fleet, &World::default(), &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Create);
    assert_eq!(plan.credentials[0].existing, None);
    assert_eq!(plan.entities.len(), 1);
    assert_eq!(plan.entities[0].existing, None);
    assert_eq!(plan.entities[0].credentials, "main");
    let step = &plan.scale_sets[0];
    assert_eq!(step.action, Action::Create);
    assert_eq!(step.reason.code(), "not_looked_up");
    assert_eq!(step.existing, None);
    // Every field is written, the repair flag last.
    assert_eq!(step.changes.len(), 28);
    assert!(step.changes.iter().all(|c| c.from.is_none()));
    let max = step
        .changes
        .iter()
        .find(|c| c.field == "max_runners")
        .unwrap();
    assert_eq!(max.to.as_deref(), Some("4"));
    assert_eq!(step.changes.last().map(|c| c.field), Some("repair"));
    assert!(!plan.is_noop());
}

#[test]
fn the_same_world_plans_unchanged_and_is_a_noop() {
    let s = stored(&[spec("web")]);
    let fleet = fleet(vec![declared("web", "main")]);
    let plan = run(&fleet, &s.world, &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Unchanged);
    assert!(plan.credentials[0].changes.is_empty());
    assert!(plan.entities.is_empty());
    assert_eq!(plan.scale_sets[0].action, Action::Unchanged);
    assert_eq!(plan.scale_sets[0].reason, Reason::UpToDate);
    assert_eq!(plan.scale_sets[0].existing, Some(s.world.scale_sets[0].id));
    assert!(plan.is_noop());
}

#[test]
fn a_cached_runner_group_id_is_no_change() {
    let mut cached = spec("web");
    cached.set_runner_group_id(Some(7));
    let s = stored(&[cached]);
    let step = one(&fleet(vec![declared("web", "main")]), &s.world, None);
    assert_eq!(step.action, Action::Unchanged);
}

#[test]
fn a_changed_field_is_an_update_naming_it() {
    let s = stored(&[spec("web")]);
    let mut d = declared("web", "main");
    d.spec
        .change(|r| r.max_runners = Some(i64::from(9)))
        .unwrap();
    d.spec.change(|r| r.labels.push("gpu".into())).unwrap();
    let step = one(&fleet(vec![d]), &s.world, None);
    assert_eq!(step.action, Action::Update);
    assert_eq!(step.reason, Reason::SpecChanged);
    let fields: Vec<&str> = step.changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, ["labels", "max_runners"]);
    assert_eq!(step.changes[1].from.as_deref(), Some("4"));
    assert_eq!(step.changes[1].to.as_deref(), Some("9"));
    assert_eq!(step.changes[0].to.as_deref(), Some("linux,gpu"));
}

#[test]
fn every_spec_field_is_compared() {
    // A written prefix, so that another name is not another prefix too.
    let base = spec("web")
        .edit(|r| r.runner_prefix = Some("p".into()))
        .expect("a valid test spec");
    let variants: Vec<(&str, ScaleSetSpec)> = vec![
        (
            "disable_update",
            base.clone()
                .edit(|r| r.disable_update = Some(true))
                .expect("a valid test spec"),
        ),
        (
            "provider",
            base.clone()
                .edit(|r| r.provider = Some("lxd".into()))
                .expect("a valid test spec"),
        ),
        (
            "image",
            base.clone()
                .edit(|r| r.image = Some("debian".into()))
                .expect("a valid test spec"),
        ),
        (
            "os_type",
            base.clone()
                .edit(|r| r.os_type = Some(scaleset_store::OsType::Windows.as_str().to_owned()))
                .expect("a valid test spec"),
        ),
        (
            "os_arch",
            base.clone()
                .edit(|r| r.os_arch = Some(scaleset_store::OsArch::Arm64.as_str().to_owned()))
                .expect("a valid test spec"),
        ),
        (
            "flavor",
            base.clone()
                .edit(|r| r.flavor = Some("big".into()))
                .expect("a valid test spec"),
        ),
        (
            "http_proxy",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        http_proxy: Some("http://p:3128".into()),
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "https_proxy",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        https_proxy: Some("http://p:3128".into()),
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "no_proxy",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        no_proxy: Some("localhost".into()),
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "ssh_keys",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        ssh_keys: vec!["ssh-ed25519 AAAA ops".into()],
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "extra_packages",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        extra_packages: vec!["jq".into()],
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "disable_updates_on_boot",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        disable_updates_on_boot: true,
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "runner_install_template",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        runner_install_template: Some("kiosk".into()),
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "enable_boot_debug",
            base.clone()
                .edit(|r| {
                    r.runner_setup = scaleset_store::RunnerSetup {
                        enable_boot_debug: true,
                        ..Default::default()
                    }
                })
                .expect("a valid test spec"),
        ),
        (
            "min_idle",
            base.clone()
                .edit(|r| r.min_idle = Some(i64::from(1)))
                .expect("a valid test spec"),
        ),
        (
            "bootstrap_timeout",
            base.clone()
                .edit(|r| r.bootstrap_timeout = Some(Duration::from_secs(5)))
                .expect("a valid test spec"),
        ),
        (
            "scale_down_delay",
            base.clone()
                .edit(|r| r.scale_down_delay = Some(Duration::from_secs(60)))
                .expect("a valid test spec"),
        ),
        (
            "max_idle_lifetime",
            base.clone()
                .edit(|r| r.max_idle_lifetime = Some(Duration::from_secs(60)))
                .expect("a valid test spec"),
        ),
        (
            "max_lifetime",
            base.clone()
                .edit(|r| r.max_lifetime = Some(Duration::from_secs(60)))
                .expect("a valid test spec"),
        ),
        (
            "runner_prefix",
            base.clone()
                .edit(|r| r.runner_prefix = Some("r".into()))
                .expect("a valid test spec"),
        ),
        (
            "extra_specs",
            base.clone()
                .edit(|r| r.extra_specs = Some(serde_json::json!({"a": 1})))
                .expect("a valid test spec"),
        ),
        (
            "enabled",
            base.clone()
                .edit(|r| r.enabled = Some(false))
                .expect("a valid test spec"),
        ),
        (
            "adoption_policy",
            base.clone()
                .edit(|r| r.adoption_policy = Some(AdoptionPolicy::Any))
                .expect("a valid test spec"),
        ),
        (
            "repair",
            base.clone()
                .edit(|r| r.repair = Some(true))
                .expect("a valid test spec"),
        ),
        (
            "name",
            base.clone()
                .edit(|r| r.name = Some("other".into()))
                .expect("a valid test spec"),
        ),
        (
            "runner_group",
            base.edit(|r| r.runner_group = Some("g".into()))
                .expect("a valid test spec"),
        ),
    ];
    for (field, variant) in variants {
        let changes = spec_changes(Some(&base), &variant);
        assert_eq!(changes.len(), 1, "{field}: {changes:?}");
        assert_eq!(changes[0].field, field);
    }
    assert_eq!(
        spec_changes(
            Some(&base),
            &base
                .clone()
                .edit(|r| r.bootstrap_timeout = Some(Duration::from_secs(5)))
                .expect("a valid test spec")
        )[0]
        .to
        .as_deref(),
        Some("5s")
    );
}

#[test]
fn changed_credentials_are_an_update_that_hides_the_secret() {
    let s = stored(&[]);
    let mut f = fleet(vec![]);
    f.credentials[0] = new_credentials("main", "ghp_two");
    f.credentials[0].endpoint.ca_bundle = Some("PEM".into());
    let plan = run(&f, &s.world, &HashMap::new(), false);
    let step = &plan.credentials[0];
    assert_eq!(step.action, CredentialsAction::Update);
    assert_eq!(step.existing, Some(s.world.credentials[0].id));
    let fields: Vec<&str> = step.changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, ["endpoint.ca_bundle", "secret"]);
    assert_eq!(step.changes[0].to.as_deref(), Some("3 bytes"));
    assert_eq!(step.changes[1].from.as_deref(), Some("sealed"));
    let shown = format!("{plan:?}");
    assert!(
        !shown.contains("ghp_two") && !shown.contains("PEM\""),
        "{shown}"
    );
}

/// Issue 31 item 4: credentials declared with `trust_roots = "system"` and stored so (the
/// column follows the endpoint) plan nothing on the next start with the same file.
#[test]
fn a_restart_with_the_same_trust_roots_plans_no_change() {
    let mut s = stored(&[spec("web")]);
    s.world.credentials[0].endpoint.system_trust = true;
    let mut f = fleet(vec![declared("web", "main")]);
    f.credentials[0].endpoint.system_trust = true;
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Unchanged);
    assert!(plan.is_noop(), "{plan:?}");
    f.credentials[0].endpoint.system_trust = false;
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Update);
    assert_eq!(plan.credentials[0].changes[0].field, "endpoint.trust_roots");
}

#[test]
fn endpoint_and_auth_kind_changes_are_named() {
    let s = stored(&[]);
    let mut f = fleet(vec![]);
    f.credentials[0].endpoint = Endpoint {
        base_url: "https://ghes.example".into(),
        api_base_url: "https://ghes.example/api/v3".into(),
        ca_bundle: None,
        system_trust: true,
    };
    f.credentials[0].auth = Auth::App {
        app: AppIdentity::Id(1),
        installation_id: 2,
        private_key: SecretString::from("key"),
    };
    let step = &run(&f, &s.world, &HashMap::new(), false).credentials[0];
    let fields: Vec<&str> = step.changes.iter().map(|c| c.field).collect();
    assert_eq!(
        fields,
        [
            "endpoint.base_url",
            "endpoint.api_base_url",
            "endpoint.trust_roots",
            "auth",
            "secret"
        ]
    );
    assert_eq!(step.changes[2].from.as_deref(), Some("builtin"));
    assert_eq!(step.changes[2].to.as_deref(), Some("system"));
    assert_eq!(step.changes[3].to.as_deref(), Some("app 1 installation 2"));
    assert_eq!(step.changes[3].from.as_deref(), Some("pat"));
}

/// The same App named by its client id instead of its App ID is a change the plan shows (the
/// JWT's issuer changes), with the client id in it; the key is not.
#[test]
fn an_app_renamed_from_its_app_id_to_its_client_id_is_an_auth_change() {
    let mut by_id = fleet(vec![]);
    by_id.credentials[0].auth = Auth::App {
        app: AppIdentity::Id(1),
        installation_id: 2,
        private_key: SecretString::from("key"),
    };
    let mut by_client_id = by_id.clone();
    by_client_id.credentials[0].auth = Auth::App {
        app: AppIdentity::ClientId(ClientId::parse("Iv23liABCDEF").unwrap()),
        installation_id: 2,
        private_key: SecretString::from("key"),
    };
    let mut s = stored(&[]);
    s.world.credentials[0].auth = by_id.credentials[0].auth.clone();
    assert!(
        run(&by_id, &s.world, &HashMap::new(), false).credentials[0]
            .changes
            .is_empty()
    );
    let step = &run(&by_client_id, &s.world, &HashMap::new(), false).credentials[0];
    assert_eq!(step.action, CredentialsAction::Update);
    let fields: Vec<&str> = step.changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, ["auth"]);
    assert_eq!(
        step.changes[0].from.as_deref(),
        Some("app 1 installation 2")
    );
    assert_eq!(
        step.changes[0].to.as_deref(),
        Some("app client id Iv23liABCDEF installation 2")
    );
}

#[test]
fn a_new_scale_set_that_github_lacks_is_a_create() {
    let s = stored(&[]);
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![])),
    );
    assert_eq!(step.action, Action::Create);
    assert_eq!(step.reason, Reason::NotOnGitHub);
    assert_eq!(step.changes.len(), 28);
}

#[test]
fn our_owner_label_on_github_is_an_adopt() {
    let s = stored(&[]);
    let found = github(42, "web", &[&owner_label(OURS)]);
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![found])),
    );
    assert_eq!(step.action, Action::Adopt);
    assert!(
        matches!(&step.reason, Reason::Adoptable { github_id: GithubScaleSetId(42), evidence, .. } if evidence.contains(&Evidence::OwnerLabel)),
        "{:?}",
        step.reason
    );
    assert_eq!(step.changes.len(), 28);
}

const GARM: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";

fn imported(name: &str, github_id: i64) -> DeclaredScaleSet {
    DeclaredScaleSet {
        takeover: Some(scaleset_adopt::Takeover {
            controller_id: GARM.into(),
            github_id: GithubScaleSetId(github_id),
            pool_id: None,
            runner_prefix: None,
        }),
        ..declared(name, "main")
    }
}

#[test]
fn an_imported_garm_set_is_an_adopt_naming_garm_and_needs_no_repair_flag() {
    let s = stored(&[]);
    // GARM's set carries no owner label of ours: adopting it adds ours (a patch), which the
    // plan shows as the import, not as a repair.
    let step = one(
        &fleet(vec![imported("web", 42)]),
        &s.world,
        Some(listed(vec![github(42, "web", &[])])),
    );
    assert_eq!(step.action, Action::Adopt);
    assert_eq!(
        step.reason,
        Reason::Adoptable {
            github_id: GithubScaleSetId(42),
            evidence: vec![Evidence::ImportedFrom],
            imported_from: Some(GARM.into()),
        }
    );
    assert!(
        step.reason
            .to_string()
            .starts_with(&format!("imported from GARM {GARM}: GitHub's scale set 42")),
        "{}",
        step.reason
    );
    // Already labelled ours: no patch, both proofs shown.
    let step = one(
        &fleet(vec![imported("web", 42)]),
        &s.world,
        Some(listed(vec![github(42, "web", &[&owner_label(OURS)])])),
    );
    assert_eq!(
        step.reason,
        Reason::Adoptable {
            github_id: GithubScaleSetId(42),
            evidence: vec![Evidence::OwnerLabel, Evidence::ImportedFrom],
            imported_from: Some(GARM.into()),
        }
    );
}

#[test]
fn a_takeover_note_for_another_id_vouches_for_nothing() {
    let s = stored(&[]);
    // The same name under another GitHub id (GARM's set was replaced): not what was imported.
    let step = one(
        &fleet(vec![imported("web", 41)]),
        &s.world,
        Some(listed(vec![github(42, "web", &[])])),
    );
    assert_eq!(step.action, Action::Refuse);
    assert_eq!(step.reason.code(), "adoption_refused");
    // A drifted set of ours with a note for another id is a plain repair.
    let mut spec = spec("web");
    spec.set_repair(true);
    let mut other = imported("web", 41);
    other.spec = spec;
    let step = one(
        &fleet(vec![other]),
        &s.world,
        Some(listed(vec![github(
            42,
            "web",
            &[&owner_label(OURS), "extra"],
        )])),
    );
    assert_eq!(
        step.reason,
        Reason::AdoptRepairing {
            github_id: GithubScaleSetId(42)
        }
    );
}

#[test]
fn a_thin_list_item_is_read_back_from_the_listing() {
    let s = stored(&[]);
    let mut thin = github(42, "web", &[&owner_label(OURS)]);
    thin.runner_group_id = None;
    let full = github(42, "web", &[&owner_label(OURS)]);
    // The machine re-reads an incomplete item by id: the planner answers from the listing.
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![
            GitHubScaleSet {
                labels: vec![],
                ..thin
            },
            full,
        ])),
    );
    assert_ne!(step.action, Action::Create);
}

#[test]
fn a_foreign_owner_label_is_a_refusal_with_its_remedy() {
    let s = stored(&[]);
    let found = github(42, "web", &[&owner_label(THEIRS)]);
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![found])),
    );
    assert_eq!(step.action, Action::Refuse);
    assert!(matches!(&step.reason, Reason::Refused(r) if r.code() == "ForeignOwner"));
    assert!(step.reason.to_string().contains("what to do"));
    assert!(step.changes.is_empty());
}

#[test]
fn policy_decides_an_unlabelled_scale_set() {
    let s = stored(&[]);
    let found = github(42, "web", &[]);
    let mut d = declared("web", "main");
    let step = one(
        &fleet(vec![d.clone()]),
        &s.world,
        Some(listed(vec![found.clone()])),
    );
    assert_eq!(step.action, Action::Refuse, "owned: no evidence");
    d.spec.set_adoption_policy(AdoptionPolicy::Never);
    let step = one(
        &fleet(vec![d.clone()]),
        &s.world,
        Some(listed(vec![found.clone()])),
    );
    assert!(matches!(&step.reason, Reason::Refused(r) if r.code() == "ScaleSetExists"));
    d.spec.set_adoption_policy(AdoptionPolicy::Any);
    let step = one(&fleet(vec![d]), &s.world, Some(listed(vec![found])));
    assert_eq!(step.action, Action::Adopt);
    assert_eq!(
        step.reason,
        Reason::AdoptAfterProbe {
            github_id: GithubScaleSetId(42)
        }
    );
}

#[test]
fn drift_with_repair_is_an_adopt_that_patches() {
    let s = stored(&[]);
    let mut found = github(42, "web", &[&owner_label(OURS)]);
    found.labels.push("extra".into());
    let mut d = declared("web", "main");
    let step = one(
        &fleet(vec![d.clone()]),
        &s.world,
        Some(listed(vec![found.clone()])),
    );
    assert!(matches!(&step.reason, Reason::Refused(r) if r.code() == "Drifted"));
    d.spec.set_repair(true);
    let step = one(&fleet(vec![d]), &s.world, Some(listed(vec![found])));
    assert_eq!(step.action, Action::Adopt);
    assert_eq!(
        step.reason,
        Reason::AdoptRepairing {
            github_id: GithubScaleSetId(42)
        }
    );
}

#[test]
fn two_matches_are_ambiguous() {
    let s = stored(&[]);
    let a = github(1, "web", &[&owner_label(OURS)]);
    let b = github(2, "web", &[&owner_label(OURS)]);
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![a, b])),
    );
    assert!(matches!(&step.reason, Reason::Refused(r) if r.code() == "Ambiguous"));
}

#[test]
fn a_missing_runner_group_and_a_skipped_lookup_are_said() {
    let s = stored(&[]);
    let f = fleet(vec![declared("web", "main")]);
    let step = one(&f, &s.world, Some(Lookup::NoRunnerGroup));
    assert_eq!(step.action, Action::Refuse);
    assert_eq!(step.reason, Reason::NoRunnerGroup);
    assert!(step.changes.is_empty());
    let step = one(
        &f,
        &s.world,
        Some(Lookup::Skipped {
            why: "offline".into(),
        }),
    );
    assert_eq!(step.action, Action::Create);
    assert!(step.reason.to_string().contains("offline"));
}

#[test]
fn unknown_credentials_are_refused() {
    let s = stored(&[]);
    let step = one(&fleet(vec![declared("web", "nobody")]), &s.world, None);
    assert_eq!(step.action, Action::Refuse);
    assert_eq!(step.reason, Reason::UnknownCredentials);
    // Stored credentials need not be declared again.
    let mut f = fleet(vec![declared("web", "main")]);
    f.credentials.clear();
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert_eq!(plan.scale_sets[0].action, Action::Create);
    assert_eq!(plan.entities[0].existing, Some(s.entity));
}

#[test]
fn a_scale_set_stored_under_other_credentials_is_refused_not_duplicated() {
    let s = stored(&[spec("web")]);
    let mut f = fleet(vec![declared("web", "other")]);
    f.credentials.push(new_credentials("other", "ghp_x"));
    let plan = run(&f, &s.world, &HashMap::new(), false);
    let step = &plan.scale_sets[0];
    assert_eq!(step.action, Action::Refuse);
    assert_eq!(
        step.reason,
        Reason::HeldByOtherCredentials {
            existing: s.world.scale_sets[0].id
        }
    );
    assert!(plan.entities.is_empty());
    assert_eq!(
        plan.scale_sets.len(),
        1,
        "the stored row is matched, not listed again"
    );
}

#[test]
fn undeclared_scale_sets_are_kept_unless_pruned() {
    let mut s = stored(&[spec("api"), spec("old")]);
    let f = fleet(vec![declared("web", "main")]);
    let plan = run(&f, &s.world, &HashMap::new(), false);
    let kept: Vec<(&str, Action)> = plan.scale_sets[1..]
        .iter()
        .map(|s| (s.key.name.as_str(), s.action))
        .collect();
    assert_eq!(
        kept,
        [("api", Action::Unchanged), ("old", Action::Unchanged)]
    );
    assert_eq!(plan.scale_sets[1].reason, Reason::NotDeclared);
    assert_eq!(plan.scale_sets[1].credentials, "main");
    let old = s.world.scale_sets[1].id;
    s.world.instances.insert(old, 2);
    let plan = run(&f, &s.world, &HashMap::new(), true);
    assert!(plan.prune);
    assert_eq!(plan.scale_sets[1].action, Action::Detach);
    assert_eq!(plan.scale_sets[1].reason, Reason::Pruned);
    assert_eq!(plan.scale_sets[2].action, Action::Refuse);
    assert_eq!(plan.scale_sets[2].reason, Reason::HasInstances { count: 2 });
    assert_eq!(plan.count(Action::Detach), 1);
}

#[test]
fn the_digest_is_stable_and_follows_every_part_of_the_plan() {
    let s = stored(&[spec("web")]);
    let f = fleet(vec![declared("web", "main")]);
    let base = run(&f, &s.world, &HashMap::new(), false).digest;
    assert_eq!(run(&f, &s.world, &HashMap::new(), false).digest, base);
    assert_eq!(PlanDigest::parse(base.as_str()), Some(base.clone()));
    assert_eq!(base.to_string().len(), 64);

    let mut secret = f.clone();
    secret.credentials[0] = new_credentials("main", "ghp_two");
    let mut app = f.clone();
    app.credentials[0].auth = Auth::App {
        app: AppIdentity::Id(1),
        installation_id: 2,
        private_key: SecretString::from("k"),
    };
    let mut changed = f.clone();
    changed.scale_sets[0]
        .spec
        .change(|r| r.max_runners = Some(i64::from(1)))
        .unwrap();
    let mut more = f.clone();
    more.scale_sets.push(declared("api", "main"));
    let mut other_world = stored(&[spec("web")]);
    other_world.world.scale_sets[0].id = ScaleSetId::generate();
    let mut entity_world = stored(&[]);
    entity_world.world.entities[0].kind = org("other");
    let others = [
        run(&secret, &s.world, &HashMap::new(), false).digest,
        run(&app, &s.world, &HashMap::new(), false).digest,
        run(&changed, &s.world, &HashMap::new(), false).digest,
        run(&more, &s.world, &HashMap::new(), false).digest,
        run(&f, &s.world, &HashMap::new(), true).digest,
        run(&f, &other_world.world, &HashMap::new(), false).digest,
        run(&f, &entity_world.world, &HashMap::new(), false).digest,
        run(&f, &World::default(), &HashMap::new(), false).digest,
    ];
    for (i, other) in others.iter().enumerate() {
        assert_ne!(other, &base, "variant {i}");
    }
    // What the plan does not depend on leaves the digest alone.
    let mut busy = stored(&[spec("web")]);
    busy.world.scale_sets = s.world.scale_sets.clone();
    busy.world.credentials = s.world.credentials.clone();
    busy.world.entities = s.world.entities.clone();
    busy.world.scale_sets[0].generation = 9;
    busy.world.scale_sets[0].state = ScaleSetState::Ready;
    busy.world.scale_sets[0].github_id = Some(5);
    assert_eq!(run(&f, &busy.world, &HashMap::new(), false).digest, base);
}

#[test]
fn the_digest_tells_lookups_apart() {
    let s = stored(&[]);
    let f = fleet(vec![declared("web", "main")]);
    let digest = |lookup: Lookup| {
        let mut lookups = HashMap::new();
        lookups.insert(f.scale_sets[0].key(), lookup);
        run(&f, &s.world, &lookups, false).digest
    };
    let absent = digest(listed(vec![]));
    let ours = digest(listed(vec![github(42, "web", &[&owner_label(OURS)])]));
    let ours_other_id = digest(listed(vec![github(43, "web", &[&owner_label(OURS)])]));
    assert_ne!(absent, ours);
    assert_ne!(ours, ours_other_id);
}

/// The digest of one plan of `web` (stored, declared) with its step's reason replaced.
fn digest_with_reason() -> impl Fn(Reason) -> PlanDigest {
    let s = stored(&[spec("web")]);
    let f = fleet(vec![declared("web", "main")]);
    let plan = run(&f, &s.world, &HashMap::new(), false);
    move |reason| {
        let mut steps = plan.scale_sets.clone();
        steps[0].reason = reason;
        digest(&f, &plan.credentials, &plan.entities, &steps, plan.prune)
    }
}

/// Issue 30 item 7: the digest hashes a reason's data, not its words. A reason whose message
/// reads differently (here the free-text `why`, the only words a reason carries; the messages
/// themselves are code) keeps the digest; a different code, id, count, evidence or refusal
/// changes it.
#[test]
fn rewording_a_reason_keeps_the_digest_and_changing_its_data_does_not() {
    let digest_with_reason = digest_with_reason();
    let reworded = [
        (
            Reason::NotLookedUp {
                why: "no lookup was made".into(),
            },
            Reason::NotLookedUp {
                why: "GitHub was not consulted".into(),
            },
        ),
        (
            Reason::Undecided {
                why: "the adoption preview did not end".into(),
            },
            Reason::Undecided {
                why: "no decision".into(),
            },
        ),
    ];
    for (a, b) in reworded {
        assert_ne!(a.to_string(), b.to_string());
        assert_eq!(digest_with_reason(a.clone()), digest_with_reason(b), "{a}");
    }

    let foreign = |labels: Vec<String>| {
        Reason::Refused(Refusal::ForeignOwner {
            scale_set: scaleset_adopt::ScaleSetRef {
                id: GithubScaleSetId(42),
                name: "web".into(),
                runner_group_id: Some(scaleset_adopt::RunnerGroupId(1)),
            },
            labels,
        })
    };
    let adoptable = |github_id, evidence| Reason::Adoptable {
        github_id,
        evidence,
        imported_from: None,
    };
    let imported = |garm: &str| Reason::Adoptable {
        github_id: GithubScaleSetId(42),
        evidence: vec![Evidence::ImportedFrom],
        imported_from: Some(garm.to_owned()),
    };
    let differing = [
        (Reason::NotOnGitHub, Reason::NoRunnerGroup),
        (
            Reason::NotLookedUp { why: "x".into() },
            Reason::Undecided { why: "x".into() },
        ),
        (
            adoptable(GithubScaleSetId(42), vec![Evidence::OwnerLabel]),
            adoptable(GithubScaleSetId(43), vec![Evidence::OwnerLabel]),
        ),
        (
            adoptable(GithubScaleSetId(42), vec![Evidence::OwnerLabel]),
            adoptable(GithubScaleSetId(42), vec![Evidence::StoredId]),
        ),
        (
            adoptable(GithubScaleSetId(42), vec![]),
            adoptable(GithubScaleSetId(42), vec![Evidence::OwnerLabel]),
        ),
        (imported("garm-a"), imported("garm-b")),
        (
            imported("garm-a"),
            adoptable(GithubScaleSetId(42), vec![Evidence::ImportedFrom]),
        ),
        (
            Reason::AdoptRepairing {
                github_id: GithubScaleSetId(42),
            },
            Reason::AdoptRepairing {
                github_id: GithubScaleSetId(43),
            },
        ),
        (
            Reason::AdoptAfterProbe {
                github_id: GithubScaleSetId(42),
            },
            Reason::AdoptAfterProbe {
                github_id: GithubScaleSetId(43),
            },
        ),
        (
            Reason::AdoptRepairing {
                github_id: GithubScaleSetId(42),
            },
            Reason::AdoptAfterProbe {
                github_id: GithubScaleSetId(42),
            },
        ),
        (
            foreign(vec![owner_label(THEIRS)]),
            foreign(vec![owner_label(OURS)]),
        ),
        (
            Reason::HeldByOtherCredentials {
                existing: ScaleSetId::generate(),
            },
            Reason::HeldByOtherCredentials {
                existing: ScaleSetId::generate(),
            },
        ),
        (
            Reason::HasInstances { count: 1 },
            Reason::HasInstances { count: 2 },
        ),
    ];
    for (a, b) in differing {
        assert_ne!(
            digest_with_reason(a.clone()),
            digest_with_reason(b.clone()),
            "{a:?} / {b:?}"
        );
    }
}

#[test]
fn digests_parse_only_as_64_lowercase_hex_digits() {
    assert!(PlanDigest::parse(&"a".repeat(64)).is_some());
    assert!(PlanDigest::parse(&format!(" {} ", "0".repeat(64))).is_some());
    assert!(PlanDigest::parse(&"a".repeat(63)).is_none());
    assert!(PlanDigest::parse(&"A".repeat(64)).is_none());
    assert!(PlanDigest::parse(&"g".repeat(64)).is_none());
    assert!(PlanDigest::parse(&"f".repeat(64)).is_some());
    assert!(PlanDigest::parse(&"9".repeat(64)).is_some());
}

#[test]
fn actions_and_reasons_have_stable_names() {
    let names: Vec<&str> = [
        Action::Create,
        Action::Adopt,
        Action::Update,
        Action::Detach,
        Action::Refuse,
        Action::Unchanged,
    ]
    .iter()
    .map(|a| a.as_str())
    .collect();
    assert_eq!(
        names,
        ["create", "adopt", "update", "detach", "refuse", "unchanged"]
    );
    assert!(Action::Detach.writes() && Action::Update.writes());
    assert!(!Action::Refuse.writes() && !Action::Unchanged.writes());
    assert_eq!(Action::Adopt.to_string(), "adopt");
    assert_eq!(CredentialsAction::Update.as_str(), "update");
    assert_eq!(CredentialsAction::Create.as_str(), "create");
    assert_eq!(CredentialsAction::Unchanged.as_str(), "unchanged");
}

#[test]
fn a_scale_set_key_displays_name_group_and_entity() {
    let key = declared("web", "main").key();
    assert_eq!(
        key.to_string(),
        "\"web\" in runner group \"Default\" of organization acme"
    );
}

#[test]
fn changed_credentials_alone_are_not_a_noop() {
    let s = stored(&[spec("web")]);
    let mut f = fleet(vec![declared("web", "main")]);
    f.credentials[0] = new_credentials("main", "ghp_rotated");
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Update);
    assert!(plan.entities.is_empty());
    assert_eq!(plan.scale_sets[0].action, Action::Unchanged);
    assert!(!plan.is_noop());
}

#[test]
fn a_scale_set_update_alone_is_not_a_noop() {
    let s = stored(&[spec("web")]);
    let mut d = declared("web", "main");
    d.spec
        .change(|r| r.max_runners = Some(i64::from(9)))
        .unwrap();
    let plan = run(&fleet(vec![d]), &s.world, &HashMap::new(), false);
    assert_eq!(plan.credentials[0].action, CredentialsAction::Unchanged);
    assert!(plan.entities.iter().all(|e| e.existing.is_some()));
    assert_eq!(plan.scale_sets[0].action, Action::Update);
    assert!(!plan.is_noop());
}

#[test]
fn count_counts_the_steps_with_that_action() {
    let f = fleet(vec![declared("web", "main"), declared("api", "main")]);
    let plan = run(&f, &World::default(), &HashMap::new(), false);
    assert_eq!(plan.count(Action::Create), 2);
    assert_eq!(plan.count(Action::Adopt), 0);
}

#[test]
fn a_stored_entity_is_reused_only_for_the_same_kind_and_credentials() {
    // Same credentials, another organization: not reused.
    let mut s = stored(&[]);
    s.world.entities[0].kind = org("beta");
    let plan = run(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        &HashMap::new(),
        false,
    );
    assert_eq!(plan.entities.len(), 1);
    assert_eq!(plan.entities[0].existing, None);

    // Same organization, other credentials: not reused either.
    let mut s = stored(&[]);
    let mut other = s.world.credentials[0].clone();
    other.id = CredentialsId::generate();
    other.name = "other".into();
    s.world.credentials.push(other);
    let mut f = fleet(vec![declared("web", "other")]);
    f.credentials.clear();
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert_eq!(plan.scale_sets[0].action, Action::Create);
    assert_eq!(plan.entities.len(), 1);
    assert_eq!(plan.entities[0].credentials, "other");
    assert_eq!(plan.entities[0].existing, None);
}

#[test]
fn each_entity_is_planned_once_per_credentials() {
    let mut beta = declared("db", "main");
    beta.entity = org("beta");
    let mut f = fleet(vec![
        declared("web", "main"),
        declared("api", "main"),
        beta,
        declared("ci", "other"),
    ]);
    f.credentials.push(new_credentials("other", "ghp_x"));
    let plan = run(&f, &World::default(), &HashMap::new(), false);
    let entities: Vec<(EntityKind, &str)> = plan
        .entities
        .iter()
        .map(|e| (e.kind.clone(), e.credentials.as_str()))
        .collect();
    assert_eq!(
        entities,
        [
            (org("acme"), "main"),
            (org("beta"), "main"),
            (org("acme"), "other"),
        ]
    );
}

#[test]
fn the_digest_follows_the_values_a_change_writes() {
    let s = stored(&[spec("web")]);
    let digest = |max: u32| {
        let mut d = declared("web", "main");
        d.spec
            .change(|r| r.max_runners = Some(i64::from(max)))
            .unwrap();
        let plan = run(&fleet(vec![d]), &s.world, &HashMap::new(), false);
        assert_eq!(plan.scale_sets[0].action, Action::Update);
        plan.digest
    };
    // Same steps, actions and reasons: only the changed value tells them apart.
    assert_ne!(digest(8), digest(9));
}

#[test]
fn the_digest_follows_the_declared_secret() {
    let s = stored(&[]);
    let digest = |auth: Auth| {
        let mut f = fleet(vec![]);
        f.credentials[0].auth = auth;
        let plan = run(&f, &s.world, &HashMap::new(), false);
        assert_eq!(plan.credentials[0].action, CredentialsAction::Update);
        plan.digest
    };
    let pat = |token: &str| Auth::Pat {
        token: SecretString::from(token),
    };
    let app = |key: &str| Auth::App {
        app: AppIdentity::Id(1),
        installation_id: 2,
        private_key: SecretString::from(key),
    };
    // The steps only say "replaced": the secret itself must still change the plan.
    assert_ne!(digest(pat("ghp_aaa")), digest(pat("ghp_bbb")));
    assert_ne!(digest(app("key-a")), digest(app("key-b")));
}

#[test]
fn a_by_id_read_is_answered_with_the_listed_scale_set_of_that_id() {
    let s = stored(&[]);
    // No runner group on the list item: the machine reads it by id before judging it.
    let mut thin = github(42, "web", &[&owner_label(OURS)]);
    thin.runner_group_id = None;
    let step = one(
        &fleet(vec![declared("web", "main")]),
        &s.world,
        Some(listed(vec![thin])),
    );
    assert_eq!(step.action, Action::Adopt);
    assert!(
        matches!(
            &step.reason,
            Reason::Adoptable {
                github_id: GithubScaleSetId(42),
                ..
            }
        ),
        "{:?}",
        step.reason
    );
}

fn arb_spec() -> impl Strategy<Value = ScaleSetSpec> {
    (0..3u8, 1..4u32, any::<bool>(), 0..3u8).prop_map(|(name, max, enabled, group)| {
        spec("x")
            .edit(|r| {
                r.name = Some(format!("set{name}"));
                r.runner_group = Some(format!("g{group}"));
                r.max_runners = Some(i64::from(max));
                r.enabled = Some(enabled);
            })
            .expect("a valid test spec")
    })
}

proptest! {
    /// Every declared scale set gets one step, every stored one is matched or listed once, a
    /// stored key is never created again, and only undeclared, instance-free sets detach.
    #[test]
    fn steps_cover_the_fleet_and_never_duplicate_a_stored_row(
        stored_specs in proptest::collection::vec(arb_spec(), 0..5),
        declared_specs in proptest::collection::vec((arb_spec(), any::<bool>()), 0..5),
        instances in proptest::collection::vec(0..3usize, 5),
        prune in any::<bool>(),
    ) {
        let mut s = stored(&[]);
        for spec in stored_specs {
            let dup = s.world.scale_sets.iter().any(|r| r.spec.name() == spec.name() && r.spec.runner_group().name == spec.runner_group().name);
            if !dup {
                s.world.scale_sets.push(row(s.entity, spec));
            }
        }
        for (row, count) in s.world.scale_sets.iter().zip(&instances) {
            s.world.instances.insert(row.id, *count);
        }
        let mut f = fleet(vec![]);
        f.credentials.push(new_credentials("other", "ghp_o"));
        for (spec, other) in declared_specs {
            let d = DeclaredScaleSet { credentials: if other { "other" } else { "main" }.into(), entity: org("acme"), spec, takeover: None };
            if !f.scale_sets.iter().any(|x| x.key() == d.key()) {
                f.scale_sets.push(d);
            }
        }
        let plan = run(&f, &s.world, &HashMap::new(), prune);
        let declared_keys: Vec<ScaleSetKey> = f.scale_sets.iter().map(DeclaredScaleSet::key).collect();
        for (step, key) in plan.scale_sets.iter().zip(&declared_keys) {
            prop_assert_eq!(&step.key, key);
        }
        let stored_keys: Vec<ScaleSetKey> = s.world.scale_sets.iter().map(|r| key_of(&s.world, r).unwrap()).collect();
        for step in &plan.scale_sets {
            if matches!(step.action, Action::Create | Action::Adopt) {
                prop_assert!(!stored_keys.contains(&step.key), "{} is stored already", step.key);
                prop_assert_eq!(step.existing, None);
            }
            if step.action == Action::Detach {
                prop_assert!(prune);
                prop_assert!(!declared_keys.contains(&step.key));
                prop_assert_eq!(s.world.instances.get(&step.existing.unwrap()).copied().unwrap_or(0), 0);
            }
            if step.action == Action::Update {
                prop_assert!(!step.changes.is_empty());
            }
        }
        // Each stored row appears at most once, and every undeclared one appears.
        for row in &s.world.scale_sets {
            let n = plan.scale_sets.iter().filter(|st| st.existing == Some(row.id)).count();
            let key = key_of(&s.world, row).unwrap();
            prop_assert!(n <= 1);
            if !declared_keys.contains(&key) {
                prop_assert_eq!(n, 1);
            }
        }
        prop_assert_eq!(plan.scale_sets.len(), declared_keys.len() + s.world.scale_sets.iter().filter(|r| !declared_keys.contains(&key_of(&s.world, r).unwrap())).count());
        // Planning is deterministic.
        prop_assert_eq!(run(&f, &s.world, &HashMap::new(), prune), plan);
    }
}

/// Plans `declared` over a store holding `stored` (both the harness's set `web`).
fn update_of(stored_spec: ScaleSetSpec, declared_spec: ScaleSetSpec) -> ScaleSetStep {
    let s = stored(&[stored_spec]);
    let mut d = declared("web", "main");
    d.spec = declared_spec;
    one(&fleet(vec![d]), &s.world, None)
}

fn custom_prefix(prefix: &str) -> ScaleSetSpec {
    spec("web")
        .edit(|r| r.runner_prefix = Some(prefix.into()))
        .expect("a valid test spec")
}

fn shown(step: &ScaleSetStep) -> Vec<(&'static str, Option<&str>, Option<&str>)> {
    step.changes
        .iter()
        .map(|c| (c.field, c.from.as_deref(), c.to.as_deref()))
        .collect()
}

/// Regression: a key removed from the file read as a change to nothing (`image: ubuntu-24.04
/// →`), and a runner prefix equal to the name against an empty one (which means the name) as
/// a change at all.
#[test]
fn a_reset_to_a_default_shows_the_default_and_an_empty_prefix_is_the_name() {
    let custom = spec("web")
        .edit(|r| {
            r.image = Some("ubuntu-24.04".into());
            r.flavor = Some("big".into());
            r.max_runners = Some(i64::from(7));
            r.runner_prefix = Some("lx".into());
        })
        .expect("a valid test spec");
    let reset = spec("web")
        .edit(|r| {
            r.image = Some(String::new());
            r.flavor = Some(String::new());
        })
        .expect("a valid test spec");
    let step = update_of(custom, reset.clone());
    assert_eq!(step.action, Action::Update);
    assert_eq!(
        shown(&step),
        [
            ("image", Some("ubuntu-24.04"), Some("(default: empty)")),
            ("flavor", Some("big"), Some("(default: empty)")),
            ("max_runners", Some("7"), Some("4")),
            ("runner_prefix", Some("lx"), Some("(default: web)")),
        ]
    );
    // max_runners 4 is the harness's, not the default (10): a reset to 10 says so.
    let step = update_of(
        spec("web"),
        spec("web")
            .edit(|r| {
                r.max_runners = Some(i64::from(10));
                r.provider = Some("lxd".into());
            })
            .expect("a valid test spec"),
    );
    assert_eq!(
        shown(&step),
        [
            ("provider", Some("fake"), Some("lxd")),
            ("max_runners", Some("4"), Some("(default: 10)")),
        ]
    );
    // The prefix written as the name, or left empty: the same prefix, no change.
    let named = spec("web")
        .edit(|r| r.runner_prefix = Some("web".into()))
        .expect("a valid test spec");
    let step = update_of(named.clone(), spec("web"));
    assert_eq!(
        (step.action, step.reason),
        (Action::Unchanged, Reason::UpToDate)
    );
    let step = update_of(spec("web"), named);
    assert_eq!(step.action, Action::Unchanged);
    // A change to a value that is not the default shows the value.
    let step = update_of(
        reset,
        spec("web")
            .edit(|r| {
                r.image = Some("debian".into());
                r.runner_prefix = Some("r".into());
            })
            .expect("a valid test spec"),
    );
    assert_eq!(
        shown(&step),
        [
            ("image", Some(""), Some("debian")),
            ("flavor", Some(""), Some("small")),
            ("runner_prefix", Some("web"), Some("r")),
        ]
    );
    // A prefix written as the name is the default prefix too.
    let step = update_of(
        custom_prefix("lx"),
        spec("web")
            .edit(|r| r.runner_prefix = Some("web".into()))
            .expect("a valid test spec"),
    );
    assert_eq!(
        shown(&step),
        [("runner_prefix", Some("lx"), Some("(default: web)"))]
    );
    // A create shows every value written, unmarked.
    let created = spec_changes(None, &spec("web"));
    assert_eq!(created.len(), 28, "{created:?}");
    assert!(
        created
            .iter()
            .all(|c| !c.to.as_deref().unwrap_or("").contains("default"))
    );
}

/// Regression: a set drained through the API (stored disabled) was enabled again by the next
/// start's apply of the file. A fleet only ever disables.
#[test]
fn a_set_disabled_through_the_api_stays_disabled_under_a_fleet_that_enables_it() {
    let disabled = spec("web")
        .edit(|r| r.enabled = Some(false))
        .expect("a valid test spec");
    let step = update_of(disabled.clone(), spec("web"));
    assert_eq!(step.action, Action::Unchanged);
    assert_eq!(step.reason, Reason::KeptDisabled);
    assert_eq!(step.reason.code(), "kept_disabled");
    assert!(step.reason.to_string().contains("--enabled true"));
    // With another change: an update that leaves `enabled` alone.
    let more = spec("web")
        .edit(|r| r.max_runners = Some(i64::from(9)))
        .expect("a valid test spec");
    let step = update_of(disabled.clone(), more.clone());
    assert_eq!(step.action, Action::Update);
    assert_eq!(shown(&step), [("max_runners", Some("4"), Some("9"))]);
    let mut stored_spec = disabled.clone();
    stored_spec.set_runner_group_id(Some(17));
    let written = applied_spec(&stored_spec, &more);
    assert!(!written.enabled());
    assert_eq!(written.max_runners(), 9);
    assert_eq!(written.runner_group().id, Some(17));
    // The file disabling an enabled set is a change, and applied.
    let step = update_of(spec("web"), disabled.clone());
    assert_eq!(shown(&step), [("enabled", Some("true"), Some("false"))]);
    assert!(!applied_spec(&spec("web"), &disabled).enabled());
    assert!(applied_spec(&spec("web"), &spec("web")).enabled());
}

/// Regression: a plan of another file labelled the sets of the server's own configuration
/// (the demo's `linux-arm64`, `release`) "made through the API"; and pruning would detach
/// them, to be stored again at the next start.
#[test]
fn a_stored_set_the_configuration_declares_is_shown_as_declared_there_and_never_pruned() {
    let mut s = stored(&[spec("conf"), spec("api")]);
    let f = fleet(vec![declared("web", "main")]);
    let conf = declared("conf", "main");
    s.world.configured = Fleet {
        credentials: Vec::new(),
        scale_sets: vec![conf.clone()],
    }
    .keys();
    assert_eq!(s.world.configured, [conf.key()]);
    for prune in [false, true] {
        let plan = run(&f, &s.world, &HashMap::new(), prune);
        let reasons: Vec<(&str, Action, &str)> = plan.scale_sets[1..]
            .iter()
            .map(|s| (s.key.name.as_str(), s.action, s.reason.code()))
            .collect();
        let api = if prune {
            (Action::Detach, "pruned")
        } else {
            (Action::Unchanged, "not_declared")
        };
        assert_eq!(
            reasons,
            [
                ("api", api.0, api.1),
                ("conf", Action::Unchanged, "declared_in_configuration"),
            ]
        );
    }
    let plan = run(&f, &s.world, &HashMap::new(), false);
    assert!(
        plan.scale_sets[1]
            .reason
            .to_string()
            .contains("lost on a database loss")
    );
    assert!(
        plan.scale_sets[2]
            .reason
            .to_string()
            .contains("configuration file")
    );
}
