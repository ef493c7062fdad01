//! The decommission rules, each a test: what is ours (owner label, the store's creation, pool
//! key), what never is (another owner's label, another pool key, nothing provable), adopted sets
//! detached, busy runners waited for / skipped / killed, the order, the scopes and the digest.

use std::collections::BTreeSet;

use scaleset_store::Provenance;

use super::super::deletion::tests::{creation, stored};
use super::*;

const OURS: &str = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab";
const THEIRS: &str = "9b1d2c3e-0000-4000-8000-00000000beef";

fn ours() -> Uuid {
    Uuid::parse_str(OURS).unwrap()
}

fn label_of(controller: &str) -> String {
    format!("scaleset-owner-{}", controller.replace('-', ""))
}

fn set(entity: &str, id: i64, name: &str, labels: &[&str]) -> GitHubSet {
    GitHubSet {
        entity: entity.to_owned(),
        github_id: id,
        name: name.to_owned(),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
    }
}

fn runner(set: i64, id: i64, name: &str, busy: bool) -> GitHubRunner {
    GitHubRunner {
        scale_set_id: set,
        id,
        name: name.to_owned(),
        busy,
    }
}

fn instance(controller: &str, set: i64, name: &str) -> FoundInstance {
    FoundInstance {
        provider: "fake".to_owned(),
        pool_key: format!("{controller}_{set}"),
        name: name.to_owned(),
    }
}

fn record(entity: &str, name: &str, github_id: Option<i64>, p: Option<Provenance>) -> StoredSet {
    let mut record = stored(github_id, p);
    record
        .spec
        .change(|r| r.name = Some(name.to_owned()))
        .unwrap();
    StoredSet {
        entity: entity.to_owned(),
        record,
    }
}

fn created(entity: &str, name: &str, id: i64) -> StoredSet {
    let creation = creation(id);
    record(entity, name, Some(id), Some(Provenance::Created(creation)))
}

struct World {
    github: Vec<GitHubSet>,
    runners: Vec<GitHubRunner>,
    instances: Vec<FoundInstance>,
    stored: Vec<StoredSet>,
    scope: Scope,
    include_adopted: bool,
    force_busy: bool,
    waited_out: bool,
}

impl World {
    fn new() -> Self {
        Self {
            github: vec![],
            runners: vec![],
            instances: vec![],
            stored: vec![],
            scope: Scope::Controller,
            include_adopted: false,
            force_busy: false,
            waited_out: true,
        }
    }

    fn plan(&self) -> DecommissionPlan {
        let label = label_of(OURS);
        plan(&DecommissionInput {
            controller: ours(),
            owner_label: &label,
            github: &self.github,
            runners: &self.runners,
            instances: &self.instances,
            stored: &self.stored,
            scope: &self.scope,
            include_adopted: self.include_adopted,
            force_busy: self.force_busy,
            waited_out: self.waited_out,
        })
    }
}

/// The plan as `(act, why, subject)` triples, in order.
fn steps(plan: &DecommissionPlan) -> Vec<(Act, Why, String)> {
    plan.items
        .iter()
        .map(|i| (i.act, i.why, i.subject.to_string()))
        .collect()
}

fn step(act: Act, why: Why, subject: &str) -> (Act, Why, String) {
    (act, why, subject.to_owned())
}

/// A shared runner group: ours (labelled), another controller's, and a hand-made one.
fn shared_group() -> World {
    let mut w = World::new();
    let ours = label_of(OURS);
    let theirs = label_of(THEIRS);
    w.github = vec![
        set("acme", 1, "web", &["linux", &ours]),
        set("acme", 2, "their-web", &["linux", &theirs]),
        set("acme", 3, "hand-made", &["linux"]),
    ];
    w.runners = vec![
        runner(1, 11, "web-a", false),
        runner(2, 21, "their-a", false),
        runner(3, 31, "hand-a", false),
    ];
    w.instances = vec![
        instance(OURS, 1, "web-a"),
        instance(OURS, 1, "web-booting"),
        instance(THEIRS, 2, "their-a"),
    ];
    w
}

#[test]
fn only_what_carries_our_owner_label_or_pool_key_goes_in_the_order_applied() {
    let plan = shared_group().plan();
    assert_eq!(
        steps(&plan),
        vec![
            step(
                Act::Delete,
                Why::OnOurSet,
                "runner web-a (id 11, scale set 1)"
            ),
            step(
                Act::Delete,
                Why::PoolKey,
                &format!("instance web-a (provider fake, pool {OURS}_1)")
            ),
            step(
                Act::Delete,
                Why::PoolKey,
                &format!("instance web-booting (provider fake, pool {OURS}_1)")
            ),
            step(
                Act::Skip,
                Why::ForeignPoolKey,
                &format!("instance their-a (provider fake, pool {THEIRS}_2)")
            ),
            step(
                Act::Delete,
                Why::OwnerLabel,
                "scale set acme/web (GitHub id 1)"
            ),
            step(
                Act::Skip,
                Why::ForeignOwner,
                "scale set acme/their-web (GitHub id 2)"
            ),
            step(
                Act::Skip,
                Why::NotProvablyOurs,
                "scale set acme/hand-made (GitHub id 3)"
            ),
        ]
    );
    assert_eq!(plan.count(Act::Delete), 4);
    assert_eq!(plan.count(Act::Skip), 3);
    assert_eq!(plan.count(Act::Wait), 0);
}

#[test]
fn another_owners_label_is_never_ours_whatever_the_flags_and_the_store() {
    let mut w = shared_group();
    w.include_adopted = true;
    w.force_busy = true;
    // Even a record claiming creation does not outweigh another controller's label.
    w.stored = vec![created("acme", "their-web", 2)];
    let plan = w.plan();
    let their_set = plan
        .items
        .iter()
        .find(|i| matches!(&i.subject, Subject::ScaleSet { github_id: 2, .. }))
        .unwrap();
    assert_eq!(
        (their_set.act, their_set.why),
        (Act::Skip, Why::ForeignOwner)
    );
    assert!(
        !plan.items.iter().any(|i| matches!(
            &i.subject,
            Subject::Runner {
                scale_set_id: 2,
                ..
            }
        )),
        "no runner of a foreign set is even listed"
    );
}

#[test]
fn our_label_is_recognised_in_any_case_and_a_foreign_owner_label_by_its_prefix() {
    let mut w = World::new();
    let upper = label_of(OURS).to_uppercase();
    w.github = vec![
        set("acme", 1, "web", &[&upper]),
        set("acme", 2, "x", &["scaleset-owner-"]),
        set("acme", 3, "y", &["owner-scaleset-thing"]),
    ];
    let acts: Vec<(Act, Why)> = w.plan().items.iter().map(|i| (i.act, i.why)).collect();
    assert_eq!(
        acts,
        vec![
            (Act::Delete, Why::OwnerLabel),
            (Act::Skip, Why::ForeignOwner),
            (Act::Skip, Why::NotProvablyOurs),
        ]
    );
}

#[test]
fn a_busy_runner_is_waited_for_then_skipped_or_killed_by_flag() {
    let mut w = World::new();
    w.github = vec![set("acme", 1, "web", &[&label_of(OURS)])];
    w.runners = vec![
        runner(1, 11, "web-busy", true),
        runner(1, 12, "web-idle", false),
    ];
    w.instances = vec![instance(OURS, 1, "web-busy"), instance(OURS, 1, "web-idle")];

    w.waited_out = false;
    let acts = |plan: &DecommissionPlan| -> Vec<(Act, Why)> {
        plan.items.iter().map(|i| (i.act, i.why)).collect()
    };
    assert_eq!(
        acts(&w.plan()),
        vec![
            (Act::Wait, Why::Busy),
            (Act::Delete, Why::OnOurSet),
            (Act::Wait, Why::Busy),
            (Act::Delete, Why::PoolKey),
            (Act::Wait, Why::HasBusyRunners),
        ]
    );
    w.waited_out = true;
    assert_eq!(
        acts(&w.plan()),
        vec![
            (Act::Skip, Why::StillBusy),
            (Act::Delete, Why::OnOurSet),
            (Act::Skip, Why::StillBusy),
            (Act::Delete, Why::PoolKey),
            (Act::Skip, Why::HasBusyRunners),
        ]
    );
    w.force_busy = true;
    assert_eq!(
        acts(&w.plan()),
        vec![
            (Act::Kill, Why::ForcedBusy),
            (Act::Delete, Why::OnOurSet),
            (Act::Delete, Why::ForcedBusy),
            (Act::Delete, Why::PoolKey),
            (Act::Delete, Why::OwnerLabel),
        ]
    );
    // Forcing does nothing before the wait ran out.
    w.waited_out = false;
    assert_eq!(w.plan().items[0].act, Act::Wait);
}

#[test]
fn the_store_proves_creation_and_an_adopted_set_is_detached_unless_included() {
    let mut w = World::new();
    w.github = vec![
        set("acme", 1, "made", &["linux"]),
        set("acme", 2, "adopted", &["linux"]),
        set("acme", 3, "known", &["linux"]),
    ];
    w.runners = vec![
        runner(2, 21, "adopted-ours", false),
        runner(2, 22, "someone", false),
    ];
    w.instances = vec![instance(OURS, 2, "adopted-ours")];
    w.stored = vec![
        created("acme", "made", 1),
        record("acme", "adopted", Some(2), Some(Provenance::Adopted)),
        record("acme", "known", Some(3), Some(Provenance::Known)),
    ];
    w.stored[1].record.session_id = Some("s-2".to_owned());
    let plan = w.plan();
    assert_eq!(
        steps(&plan),
        vec![
            step(
                Act::Delete,
                Why::OurInstance,
                "runner adopted-ours (id 21, scale set 2)"
            ),
            step(
                Act::Skip,
                Why::NotOurRunner,
                "runner someone (id 22, scale set 2)"
            ),
            step(
                Act::Delete,
                Why::PoolKey,
                &format!("instance adopted-ours (provider fake, pool {OURS}_2)")
            ),
            step(
                Act::Delete,
                Why::Created,
                "scale set acme/made (GitHub id 1)"
            ),
            step(
                Act::Detach,
                Why::Adopted,
                "scale set acme/adopted (GitHub id 2)"
            ),
            step(
                Act::Detach,
                Why::Adopted,
                "scale set acme/known (GitHub id 3)"
            ),
            step(Act::Delete, Why::OurSession, "session s-2 (scale set 2)"),
            step(Act::Delete, Why::RecordOfGone, "record acme/made"),
            step(Act::Delete, Why::RecordOfGone, "record acme/adopted"),
            step(Act::Delete, Why::RecordOfGone, "record acme/known"),
        ]
    );
    w.include_adopted = true;
    let sets: Vec<(Act, Why)> = w
        .plan()
        .items
        .iter()
        .filter(|i| matches!(i.subject, Subject::ScaleSet { .. }))
        .map(|i| (i.act, i.why))
        .collect();
    assert_eq!(
        sets,
        vec![
            (Act::Delete, Why::Created),
            (Act::Delete, Why::AdoptedIncluded),
            (Act::Delete, Why::AdoptedIncluded),
        ]
    );
}

#[test]
fn an_adopted_set_with_our_label_is_ours_by_the_label() {
    // After a database loss our own sets are adopted by their owner label: still ours.
    let mut w = World::new();
    w.github = vec![set("acme", 1, "web", &[&label_of(OURS)])];
    w.stored = vec![record("acme", "web", Some(1), Some(Provenance::Adopted))];
    for include in [false, true] {
        w.include_adopted = include;
        let plan = w.plan();
        assert_eq!(
            (plan.items[0].act, plan.items[0].why),
            (Act::Delete, Why::OwnerLabel)
        );
    }
}

#[test]
fn a_kept_set_keeps_its_record_and_session_and_a_never_ensured_record_goes() {
    let mut w = World::new();
    w.github = vec![set("acme", 1, "web", &[&label_of(OURS)])];
    w.runners = vec![runner(1, 11, "web-busy", true)];
    w.stored = vec![
        created("acme", "web", 1),
        record("acme", "never", None, None),
    ];
    w.stored[0].record.session_id = Some("s-1".to_owned());
    w.stored[1].record.session_id = Some("s-x".to_owned());
    assert_eq!(
        steps(&w.plan()),
        vec![
            step(
                Act::Skip,
                Why::StillBusy,
                "runner web-busy (id 11, scale set 1)"
            ),
            step(
                Act::Skip,
                Why::HasBusyRunners,
                "scale set acme/web (GitHub id 1)"
            ),
            step(Act::Skip, Why::RecordKept, "record acme/web"),
            step(Act::Delete, Why::RecordOfGone, "record acme/never"),
        ]
    );
}

#[test]
fn a_set_github_no_longer_lists_loses_its_instances_session_and_record() {
    let mut w = World::new();
    w.stored = vec![created("acme", "web", 7)];
    w.stored[0].record.session_id = Some("s-7".to_owned());
    w.instances = vec![instance(OURS, 7, "web-a")];
    assert_eq!(
        steps(&w.plan()),
        vec![
            step(
                Act::Delete,
                Why::PoolKey,
                &format!("instance web-a (provider fake, pool {OURS}_7)")
            ),
            step(Act::Delete, Why::OurSession, "session s-7 (scale set 7)"),
            step(Act::Delete, Why::RecordOfGone, "record acme/web"),
        ]
    );
}

#[test]
fn scopes_narrow_to_one_entity_or_one_scale_set() {
    let label = label_of(OURS);
    let mut w = World::new();
    w.github = vec![
        set("acme", 1, "web", &[&label]),
        set("acme", 2, "db", &[&label]),
        set("acme/app", 3, "web", &[&label]),
    ];
    w.runners = vec![runner(1, 11, "web-a", false), runner(2, 21, "db-a", false)];
    w.instances = vec![
        instance(OURS, 1, "web-a"),
        instance(OURS, 2, "db-a"),
        instance(OURS, 9, "orphan"),
    ];
    w.stored = vec![created("acme", "gone", 8), created("acme/app", "gone", 5)];
    w.instances.push(instance(OURS, 8, "gone-a"));
    // Of a set GitHub no longer lists, stored under the other entity.
    w.instances.push(instance(OURS, 5, "app-gone-a"));
    let subjects = |w: &World| -> BTreeSet<String> {
        w.plan()
            .items
            .iter()
            .filter(|i| i.act == Act::Delete)
            .map(|i| i.subject.to_string())
            .collect()
    };
    let everything = subjects(&w);
    assert_eq!(everything.len(), 12, "{everything:#?}");
    assert!(everything.contains(&format!("instance orphan (provider fake, pool {OURS}_9)")));

    w.scope = Scope::Entity("acme".to_owned());
    let entity = subjects(&w);
    assert!(entity.contains("scale set acme/web (GitHub id 1)"));
    assert!(entity.contains("scale set acme/db (GitHub id 2)"));
    assert!(entity.contains("record acme/gone"));
    assert!(entity.contains(&format!("instance gone-a (provider fake, pool {OURS}_8)")));
    assert!(!entity.contains("scale set acme/app/web (GitHub id 3)"));
    assert!(!entity.contains("record acme/app/gone"));
    assert!(!entity.iter().any(|s| s.contains("app-gone-a")));
    assert!(
        !entity.iter().any(|s| s.contains("orphan")),
        "an instance whose set is unknown is only the whole controller's"
    );
    assert_eq!(entity.len(), 8, "{entity:#?}");

    w.scope = Scope::ScaleSet {
        entity: "acme".to_owned(),
        name: "web".to_owned(),
    };
    assert_eq!(
        subjects(&w),
        BTreeSet::from([
            "runner web-a (id 11, scale set 1)".to_owned(),
            format!("instance web-a (provider fake, pool {OURS}_1)"),
            "scale set acme/web (GitHub id 1)".to_owned(),
        ])
    );
    w.scope = Scope::ScaleSet {
        entity: "acme/app".to_owned(),
        name: "web".to_owned(),
    };
    assert_eq!(
        subjects(&w),
        BTreeSet::from(["scale set acme/app/web (GitHub id 3)".to_owned()])
    );
}

#[test]
fn a_pool_key_is_ours_only_with_our_controller_id_and_a_number() {
    assert_eq!(our_pool(&format!("{OURS}_42"), ours()), Some(42));
    assert_eq!(our_pool(&format!("{THEIRS}_42"), ours()), None);
    assert_eq!(our_pool(&format!("{OURS}42"), ours()), None);
    assert_eq!(our_pool(&format!("{OURS}_x"), ours()), None);
    assert_eq!(our_pool("nonsense_42", ours()), None);
    let mut w = World::new();
    w.instances = vec![FoundInstance {
        provider: "fake".to_owned(),
        pool_key: format!("{OURS}_x"),
        name: "odd".to_owned(),
    }];
    assert_eq!(w.plan().items[0].act, Act::Skip);
}

#[test]
fn the_digest_is_stable_and_follows_every_part_of_the_plan() {
    let base = shared_group();
    let digest = base.plan().digest;
    assert_eq!(base.plan().digest, digest);
    assert!(PlanDigest::parse(digest.as_str()).is_some());

    let mut other_act = shared_group();
    other_act.runners[0].busy = true;
    let mut other_subject = shared_group();
    other_subject.instances[1].name = "web-other".to_owned();
    let mut other_provider = shared_group();
    other_provider.instances[1].provider = "lxd".to_owned();
    let mut other_runner_id = shared_group();
    other_runner_id.runners[0].id = 12;
    let mut other_runner_name = shared_group();
    other_runner_name.runners[0].name = "web-b".to_owned();
    let mut other_entity = shared_group();
    other_entity.github[0].entity = "acme/x".to_owned();
    let mut other_name = shared_group();
    other_name.github[0].name = "web2".to_owned();
    let mut other_why = shared_group();
    other_why.stored = vec![created("acme", "web", 1)];
    other_why.github[0].labels.clear();
    let mut with_session = shared_group();
    with_session.stored = vec![created("acme", "web", 1)];
    with_session.stored[0].record.session_id = Some("s".to_owned());
    let mut other_session = with_session.clone_world();
    other_session.stored[0].record.session_id = Some("t".to_owned());
    let mut other_record = shared_group();
    other_record.stored = vec![record("acme", "never", None, None)];
    let mut other_record_entity = shared_group();
    other_record_entity.stored = vec![record("acme/y", "never", None, None)];
    let mut other_pool = shared_group();
    other_pool.instances[2].pool_key = format!("{THEIRS}_3");
    let mut fewer = shared_group();
    fewer.instances.pop();
    let mut other_set_id = shared_group();
    other_set_id.github[2].github_id = 4;

    let digests: Vec<PlanDigest> = [
        &other_act,
        &other_subject,
        &other_provider,
        &other_runner_id,
        &other_runner_name,
        &other_entity,
        &other_name,
        &other_why,
        &with_session,
        &other_session,
        &other_record,
        &other_record_entity,
        &other_pool,
        &fewer,
        &other_set_id,
    ]
    .iter()
    .map(|w| w.plan().digest)
    .chain([digest.clone()])
    .collect();
    let distinct: BTreeSet<&str> = digests.iter().map(PlanDigest::as_str).collect();
    assert_eq!(
        distinct.len(),
        digests.len(),
        "every change is a new digest"
    );

    // Another controller's plan of the same world is another plan.
    let label = label_of(OURS);
    let theirs = plan(&DecommissionInput {
        controller: Uuid::parse_str(THEIRS).unwrap(),
        owner_label: &label,
        github: &base.github,
        runners: &base.runners,
        instances: &[],
        stored: &base.stored,
        scope: &base.scope,
        include_adopted: false,
        force_busy: false,
        waited_out: true,
    });
    let mine = {
        let mut w = shared_group();
        w.instances.clear();
        w.plan()
    };
    assert_eq!(steps(&theirs), steps(&mine));
    assert_ne!(theirs.digest, mine.digest);
}

impl World {
    fn clone_world(&self) -> Self {
        Self {
            github: self.github.clone(),
            runners: self.runners.clone(),
            instances: self.instances.clone(),
            stored: self.stored.clone(),
            scope: self.scope.clone(),
            include_adopted: self.include_adopted,
            force_busy: self.force_busy,
            waited_out: self.waited_out,
        }
    }
}

#[test]
fn every_code_and_word_is_its_own() {
    let whys = [
        Why::OwnerLabel,
        Why::Created,
        Why::AdoptedIncluded,
        Why::Adopted,
        Why::ForeignOwner,
        Why::NotProvablyOurs,
        Why::OnOurSet,
        Why::OurInstance,
        Why::NotOurRunner,
        Why::PoolKey,
        Why::Busy,
        Why::StillBusy,
        Why::ForcedBusy,
        Why::HasBusyRunners,
        Why::ForeignPoolKey,
        Why::OurSession,
        Why::RecordOfGone,
        Why::RecordKept,
    ];
    let codes: BTreeSet<&str> = whys.iter().map(|w| w.code()).collect();
    let words: BTreeSet<String> = whys.iter().map(ToString::to_string).collect();
    assert_eq!(codes.len(), whys.len());
    assert_eq!(words.len(), whys.len());
    assert!(codes.iter().all(|c| !c.is_empty() && !c.contains("xyzzy")));
    let acts = [Act::Delete, Act::Detach, Act::Wait, Act::Kill, Act::Skip];
    let names: BTreeSet<&str> = acts.iter().map(|a| a.as_str()).collect();
    assert_eq!(names.len(), acts.len());
    let writing: Vec<bool> = acts.iter().map(|a| a.writes()).collect();
    assert_eq!(writing, vec![true, true, false, true, false]);
    let item = Item {
        subject: Subject::Record {
            entity: "acme".to_owned(),
            name: "web".to_owned(),
        },
        act: Act::Delete,
        why: Why::RecordOfGone,
    };
    assert_eq!(
        item.to_string(),
        "delete record acme/web: its scale set is deleted or detached"
    );
}

#[test]
fn scope_covers_exactly_its_sets() {
    assert!(Scope::Controller.covers("a", "b"));
    let entity = Scope::Entity("a".to_owned());
    assert!(entity.covers("a", "b"));
    assert!(!entity.covers("c", "b"));
    let one = Scope::ScaleSet {
        entity: "a".to_owned(),
        name: "b".to_owned(),
    };
    assert!(one.covers("a", "b"));
    assert!(!one.covers("a", "c"));
    assert!(!one.covers("c", "b"));
}
