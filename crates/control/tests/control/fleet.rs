//! Fleet plan/apply through the store and the simulator: a plan writes nothing, an unchanged
//! plan applies as a no-op, a plan made stale by a concurrent change is refused, and the
//! create / adopt / refuse preview matches what GitHub holds.

use scaleset_adopt::{Desired, Input, Policy, RunnerGroupId};
use scaleset_control::adoption::{NoHooks, run_once};
use scaleset_control::{ClientFactory as _, ErrorClass, StoreClientFactory};
use scaleset_fleet::{
    Action, Applied, DeclaredScaleSet, Fleet, FleetPlan, GitHubLookup, PlanDigest, Reason,
    apply_declared, apply_fleet, plan_fleet,
};
use scaleset_store::{EntityKind, NewCredentials, ScaleSet, ScaleSetStore, Store};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use scaleset_store::test_util::simulator_credentials;

use crate::helpers::{Harness, TestDb, backend_tests, sim_config};

backend_tests!(
    plan_writes_nothing,
    an_unchanged_plan_applies_as_a_noop,
    a_plan_made_stale_by_a_concurrent_change_is_refused,
    the_workers_own_writes_between_plan_and_write_do_not_make_an_apply_stale,
    plan_previews_create_adopt_and_refuse_from_github,
    the_worker_apply_stores_declared_scale_sets_once,
    a_drain_survives_the_next_start_up_apply_of_the_fleet,
    workers_applying_the_declared_fleet_together_all_succeed,
    an_imported_garm_set_is_planned_and_stored_as_adopted_by_its_note,
);

/// Plans `fleet` against the harness's store and `lookup`.
async fn plan_of(h: &Harness, lookup: &GitHubLookup, fleet: &Fleet, prune: bool) -> FleetPlan {
    plan_fleet(h.store.as_ref(), lookup, &h.identity, fleet, &[], prune)
        .await
        .expect("plan")
}

/// Applies `fleet` (no pruning) if its plan still has `digest`.
async fn apply_with(
    h: &Harness,
    lookup: &GitHubLookup,
    fleet: &Fleet,
    digest: &PlanDigest,
) -> Result<Applied, scaleset_fleet::Error> {
    apply_fleet(
        h.store.as_ref(),
        lookup,
        &h.identity,
        fleet,
        &[],
        false,
        digest,
    )
    .await
}

/// The harness's credentials, entity and scale set as a fleet declares them.
fn declared_fleet(h: &Harness) -> Fleet {
    let base = format!("http://{}", h.github.addr);
    Fleet {
        credentials: vec![simulator_credentials(&base)],
        scale_sets: vec![declared(h, "linux")],
    }
}

fn declared(h: &Harness, name: &str) -> DeclaredScaleSet {
    let mut spec = h.scale_set.spec.clone();
    spec.change(|r| r.name = Some(name.into())).unwrap();
    DeclaredScaleSet {
        credentials: "sim".into(),
        entity: EntityKind::Organization {
            name: "acme".into(),
        },
        spec,
        takeover: None,
    }
}

/// Everything a plan could write, to compare before and after.
async fn snapshot(store: &dyn Store) -> (Vec<ScaleSet>, usize, usize, usize) {
    let sets = store.list_scale_sets(None).await.expect("scale sets");
    let mut events = 0;
    for set in &sets {
        events += store.list_events(set.id, 1000).await.expect("events").len();
    }
    let credentials = store.list_credentials().await.expect("credentials").len();
    let entities = store.list_entities().await.expect("entities").len();
    (sets, events, credentials, entities)
}

async fn plan_writes_nothing(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut fleet = declared_fleet(&h);
    fleet.scale_sets[0]
        .spec
        .change(|r| r.max_runners = Some(i64::from(3)))
        .unwrap();
    fleet.scale_sets.push(declared(&h, "web"));
    fleet.credentials.push(NewCredentials {
        name: "second".into(),
        ..fleet.credentials[0].clone()
    });
    let before = snapshot(h.store.as_ref()).await;
    let plan = plan_of(&h, &GitHubLookup::new(), &fleet, true).await;
    assert_eq!(plan.scale_sets[0].action, Action::Update);
    assert_eq!(plan.scale_sets[1].action, Action::Create);
    assert_eq!(plan.scale_sets[1].reason, Reason::NotOnGitHub);
    assert!(!plan.is_noop());
    assert_eq!(snapshot(h.store.as_ref()).await, before, "a plan wrote");
    assert!(
        h.sim().state().scale_sets.is_empty(),
        "a plan wrote on GitHub"
    );
}

async fn an_unchanged_plan_applies_as_a_noop(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let fleet = declared_fleet(&h);
    let lookup = GitHubLookup::new();
    let plan = plan_of(&h, &lookup, &fleet, false).await;
    assert!(plan.is_noop(), "{plan:#?}");
    let before = snapshot(h.store.as_ref()).await;
    let applied = apply_with(&h, &lookup, &fleet, &plan.digest)
        .await
        .expect("apply");
    assert_eq!(applied.writes, 0);
    assert_eq!(applied.plan.digest, plan.digest);
    assert_eq!(snapshot(h.store.as_ref()).await, before, "a no-op wrote");

    // A real change applies once, and then it is unchanged again.
    let mut changed = fleet.clone();
    changed.scale_sets[0]
        .spec
        .change(|r| r.max_runners = Some(i64::from(2)))
        .unwrap();
    let plan = plan_of(&h, &lookup, &changed, false).await;
    let applied = apply_with(&h, &lookup, &changed, &plan.digest)
        .await
        .expect("apply");
    assert_eq!(applied.writes, 1);
    assert_eq!(h.stored().await.spec.max_runners(), 2);
    assert!(h.events().await.contains(&"spec_updated".to_owned()));
    let again = plan_of(&h, &lookup, &changed, false).await;
    assert!(again.is_noop());
}

async fn a_plan_made_stale_by_a_concurrent_change_is_refused(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut fleet = declared_fleet(&h);
    fleet.scale_sets[0]
        .spec
        .change(|r| r.max_runners = Some(i64::from(3)))
        .unwrap();
    let lookup = GitHubLookup::new();
    let plan = plan_of(&h, &lookup, &fleet, false).await;
    // Someone changes the scale set through the API meanwhile.
    let mut row = h.stored().await;
    row.spec
        .change(|r| r.min_idle = Some(i64::from(1)))
        .unwrap();
    h.store
        .update_scale_set(&row)
        .await
        .expect("concurrent update");
    let before = snapshot(h.store.as_ref()).await;
    let error = apply_with(&h, &lookup, &fleet, &plan.digest)
        .await
        .expect_err("a stale plan is refused");
    assert!(error.is_stale_plan(), "{error}");
    assert_eq!(
        error.class(),
        ErrorClass::Conflict(scaleset_control::Conflict::StalePlan),
        "{error}"
    );
    assert_eq!(
        snapshot(h.store.as_ref()).await,
        before,
        "a refused apply wrote"
    );
    assert_eq!(h.stored().await.spec.max_runners(), 10);
}

/// The worker writes a scale set's row all the time (state, session, cursor), and each write
/// bumps its generation. An apply whose spec change or detach lands between the worker's writes
/// must still succeed: only a change of what the plan compared (the spec, the set's presence)
/// makes it stale. Found by CI: `scalesetctl apply` exited 2 ("stale_plan") while the
/// server's worker recorded the set it had just created `ready`.
async fn the_workers_own_writes_between_plan_and_write_do_not_make_an_apply_stale(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let lookup = GitHubLookup::new();
    let mut fleet = declared_fleet(&h);
    fleet.scale_sets.push(declared(&h, "undeclared-later"));
    let plan = plan_of(&h, &lookup, &fleet, false).await;
    apply_with(&h, &lookup, &fleet, &plan.digest)
        .await
        .expect("store the second set");
    let ids: Vec<_> = h
        .store
        .list_scale_sets(None)
        .await
        .expect("sets")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids.len(), 2);

    // A stand-in for the worker: status writes to both rows, back to back, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (store, stop, ids) = (h.store.clone(), stop.clone(), ids.clone());
        tokio::spawn(async move {
            let mut writes = 0u32;
            while !stop.load(Ordering::Relaxed) {
                for id in &ids {
                    // The detached row is gone; the writer goes on with the other one.
                    let _ = store
                        .modify_scale_set(*id, &mut |row| {
                            row.state_reason = format!("worker write {writes}");
                        })
                        .await;
                    writes += 1;
                }
                tokio::task::yield_now().await;
            }
            writes
        })
    };

    for max_runners in 1..=20 {
        fleet.scale_sets[0]
            .spec
            .change(|r| r.max_runners = Some(i64::from(max_runners)))
            .unwrap();
        let plan = plan_of(&h, &lookup, &fleet, false).await;
        assert_eq!(plan.scale_sets[0].action, Action::Update);
        if let Err(e) = apply_with(&h, &lookup, &fleet, &plan.digest).await {
            panic!("apply {max_runners} refused though only the worker wrote meanwhile: {e}");
        }
        assert_eq!(h.stored().await.spec.max_runners(), max_runners);
    }
    // Pruning the set the fleet no longer declares, while the worker writes to it.
    fleet.scale_sets.pop();
    let plan = plan_of(&h, &lookup, &fleet, true).await;
    assert_eq!(plan.count(Action::Detach), 1, "{plan:#?}");
    let pruned = apply_fleet(
        h.store.as_ref(),
        &lookup,
        &h.identity,
        &fleet,
        &[],
        true,
        &plan.digest,
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let writes = worker.await.expect("the writer");
    if let Err(e) = pruned {
        panic!("the prune was refused though only the worker wrote meanwhile: {e}");
    }
    assert_eq!(
        h.store.list_scale_sets(None).await.expect("sets").len(),
        1,
        "the undeclared set is detached"
    );
    assert!(writes > 20, "the worker wrote throughout ({writes} writes)");
}

async fn plan_previews_create_adopt_and_refuse_from_github(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // "theirs": another autoscaler's scale set (no owner label of ours, a live session).
    h.sim()
        .create_foreign_scale_set("acme", 1, "theirs", "another-autoscaler")
        .expect("foreign scale set");
    // "mine": created on GitHub by this controller (our owner label), its row since lost.
    let client = StoreClientFactory::new(h.store.clone())
        .client(&h.scale_set)
        .await
        .expect("client");
    let input = Input {
        desired: Desired {
            name: "mine".into(),
            runner_group_id: RunnerGroupId(1),
            labels: vec![],
            disable_update: true,
        },
        known_id: None,
        policy: Policy::Owned,
        repair: false,
        probe: false,
        identity: h.identity.adoption(),
        retry: scaleset_adopt::RetryBounds::default(),
        takeover: None,
        await_session: false,
    };
    let run = run_once(&client, input, &NoHooks)
        .await
        .expect("create mine");
    let mine = run.outcome.ready_id().expect("created").0;

    let mut fleet = declared_fleet(&h);
    for name in ["fresh", "mine", "theirs"] {
        fleet.scale_sets.push(declared(&h, name));
    }
    let plan = plan_of(&h, &GitHubLookup::new(), &fleet, false).await;
    let by_name = |name: &str| {
        plan.scale_sets
            .iter()
            .find(|s| s.key.name == name)
            .expect("a step")
            .clone()
    };
    assert_eq!(by_name("linux").action, Action::Unchanged);
    assert_eq!(by_name("fresh").action, Action::Create);
    let adopt = by_name("mine");
    assert_eq!(adopt.action, Action::Adopt, "{}", adopt.reason);
    assert!(
        matches!(adopt.reason, Reason::Adoptable { github_id, .. } if github_id.0 == mine),
        "{}",
        adopt.reason
    );
    let refuse = by_name("theirs");
    assert_eq!(refuse.action, Action::Refuse);
    assert!(
        refuse.reason.to_string().contains("what to do"),
        "{}",
        refuse.reason
    );

    // Applying stores fresh and mine (ensure creates and adopts them) but not the refusal.
    let applied = apply_with(&h, &GitHubLookup::new(), &fleet, &plan.digest)
        .await
        .expect("apply");
    assert_eq!(applied.created.len(), 2);
    let names: Vec<String> = h
        .store
        .list_scale_sets(None)
        .await
        .expect("scale sets")
        .into_iter()
        .map(|s| s.spec.name().to_string())
        .collect();
    assert!(names.contains(&"fresh".to_owned()) && names.contains(&"mine".to_owned()));
    assert!(!names.contains(&"theirs".to_owned()), "{names:?}");
    let github_names: Vec<String> = h
        .sim()
        .state()
        .scale_sets
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert!(
        !github_names.contains(&"fresh".to_owned()),
        "apply wrote on GitHub"
    );
}

async fn the_worker_apply_stores_declared_scale_sets_once(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut fleet = declared_fleet(&h);
    fleet.scale_sets.push(declared(&h, "web"));
    let first = apply_declared(h.store.as_ref(), &h.identity, &fleet)
        .await
        .expect("apply");
    assert_eq!(first.writes, 1);
    assert_eq!(first.plan.count(Action::Create), 1);
    let second = apply_declared(h.store.as_ref(), &h.identity, &fleet)
        .await
        .expect("apply again");
    assert_eq!(second.writes, 0);
    assert_eq!(h.store.list_scale_sets(None).await.expect("sets").len(), 2);
}

/// Regression: a declared set drained through the API (stored disabled) was enabled again by
/// the next start's apply of the file, with no message. The drain is operational state: every
/// later apply keeps it, and says so; a spec change in the file still goes through.
async fn a_drain_survives_the_next_start_up_apply_of_the_fleet(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let fleet = declared_fleet(&h);
    apply_declared(h.store.as_ref(), &h.identity, &fleet)
        .await
        .expect("apply");
    let linux = |sets: Vec<ScaleSet>| {
        sets.into_iter()
            .find(|s| s.spec.name() == "linux")
            .expect("linux stored")
    };
    let stored = linux(h.store.list_scale_sets(None).await.expect("sets"));
    h.store
        .modify_scale_set(stored.id, &mut |row| row.spec.set_enabled(false))
        .await
        .expect("drain");
    let again = apply_declared(h.store.as_ref(), &h.identity, &fleet)
        .await
        .expect("apply again");
    assert_eq!(again.writes, 0, "{:#?}", again.plan);
    let step = again
        .plan
        .scale_sets
        .iter()
        .find(|s| s.key.name == "linux")
        .expect("a step");
    assert_eq!(step.reason, Reason::KeptDisabled);
    let mut changed = fleet.clone();
    let more = i64::from(changed.scale_sets[0].spec.max_runners()) + 1;
    changed.scale_sets[0]
        .spec
        .change(|r| r.max_runners = Some(more))
        .unwrap();
    let updated = apply_declared(h.store.as_ref(), &h.identity, &changed)
        .await
        .expect("apply a change");
    assert_eq!(updated.plan.count(Action::Update), 1);
    let row = linux(h.store.list_scale_sets(None).await.expect("sets"));
    assert!(!row.spec.enabled(), "still drained");
    assert_eq!(
        row.spec.max_runners(),
        changed.scale_sets[0].spec.max_runners()
    );
}

/// Several workers started together on one empty database apply the same declared fleet at
/// once: every one succeeds (none exits with a stale plan) and each scale set is stored once.
/// Found by the chaos soak (issue 36, seed 14: two of three PostgreSQL workers exited 1).
async fn workers_applying_the_declared_fleet_together_all_succeed(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut fleet = declared_fleet(&h);
    for name in ["web", "api", "batch", "docs"] {
        fleet.scale_sets.push(declared(&h, name));
    }
    let apply = || apply_declared(h.store.as_ref(), &h.identity, &fleet);
    let (a, b, c) = tokio::join!(apply(), apply(), apply());
    for (worker, result) in [("a", a), ("b", b), ("c", c)] {
        if let Err(e) = result {
            panic!("worker {worker}'s start-up apply failed: {e}");
        }
    }
    let names: Vec<_> = h
        .store
        .list_scale_sets(None)
        .await
        .expect("sets")
        .into_iter()
        .map(|s| s.spec.name().to_string())
        .collect();
    assert_eq!(
        names.len(),
        5,
        "each declared scale set stored once: {names:?}"
    );
}

/// Issue 37 item 2: a scale set GARM made (no owner label of ours, GARM's live session), declared
/// with the takeover note `scalesetctl import garm` writes, is an adopt naming GARM in the plan;
/// apply records the GitHub id the note vouched for; a foreign set of the same name in the
/// group with another id is not adopted on the note, and nothing is written on GitHub.
async fn an_imported_garm_set_is_planned_and_stored_as_adopted_by_its_note(db: TestDb) {
    const GARM: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let garm_owner = format!("garm-{GARM}");
    let garm_set = h
        .sim()
        .create_foreign_scale_set("acme", 1, "linux-small", &garm_owner)
        .expect("GARM's scale set");
    // Another controller's set: its name is declared too, with a note for another id.
    let other = h
        .sim()
        .create_foreign_scale_set("acme", 1, "other-ctl", "other-controller")
        .expect("a foreign scale set");
    let note = |github_id: i64| {
        Some(scaleset_adopt::Takeover {
            controller_id: GARM.into(),
            github_id: scaleset_adopt::GithubScaleSetId(github_id),
            pool_id: None,
            runner_prefix: None,
        })
    };
    let mut fleet = declared_fleet(&h);
    fleet.scale_sets.push(DeclaredScaleSet {
        takeover: note(garm_set.scale_set_id),
        ..declared(&h, "linux-small")
    });
    fleet.scale_sets.push(DeclaredScaleSet {
        takeover: note(garm_set.scale_set_id),
        ..declared(&h, "other-ctl")
    });
    let github_before = h.sim().state().scale_sets;

    let plan = plan_of(&h, &GitHubLookup::new(), &fleet, false).await;
    let step = |name: &str| {
        plan.scale_sets
            .iter()
            .find(|s| s.key.name == name)
            .expect("a step")
            .clone()
    };
    let imported = step("linux-small");
    assert_eq!(imported.action, Action::Adopt, "{}", imported.reason);
    assert!(
        imported.reason.to_string().starts_with(&format!(
            "imported from GARM {GARM}: GitHub's scale set {}",
            garm_set.scale_set_id
        )),
        "{}",
        imported.reason
    );
    let foreign = step("other-ctl");
    assert_eq!(foreign.action, Action::Refuse, "{}", foreign.reason);
    assert!(
        !foreign.reason.to_string().contains("imported from GARM"),
        "{}",
        foreign.reason
    );

    apply_with(&h, &GitHubLookup::new(), &fleet, &plan.digest)
        .await
        .expect("apply");
    let rows = h.store.list_scale_sets(None).await.expect("scale sets");
    let row = rows
        .iter()
        .find(|s| s.spec.name() == "linux-small")
        .expect("stored");
    assert_eq!(row.github_id, Some(garm_set.scale_set_id));
    assert_eq!(row.provenance, Some(scaleset_store::Provenance::Adopted));
    assert_eq!(row.evidence, vec![scaleset_adopt::Evidence::ImportedFrom]);
    // The note is kept with the row: every ensure by the worker sees the same evidence.
    assert_eq!(row.takeover, note(garm_set.scale_set_id));
    assert!(rows.iter().all(|s| s.spec.name() != "other-ctl"));
    // Nothing was created, deleted or relabelled on GitHub by plan or apply; GARM's and the
    // other controller's sessions are untouched.
    let github_after = h.sim().state().scale_sets;
    assert_eq!(github_after.len(), github_before.len());
    for (before, after) in github_before.iter().zip(&github_after) {
        let owner = |s: &scaleset_sim::ScaleSetInfo| {
            s.session.as_ref().map(|session| session.owner_name.clone())
        };
        assert_eq!(
            (before.id, &before.name, &before.labels, owner(before)),
            (after.id, &after.name, &after.labels, owner(after))
        );
    }
    let session_of = |id: i64| {
        h.sim()
            .state()
            .scale_set(id)
            .and_then(|s| s.session.as_ref().map(|session| session.owner_name.clone()))
    };
    assert_eq!(session_of(garm_set.scale_set_id), Some(garm_owner));
    assert_eq!(
        session_of(other.scale_set_id),
        Some("other-controller".to_owned())
    );
}
