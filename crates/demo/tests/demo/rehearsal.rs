//! The two walks of `docs/quickstart.md`, as tests.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result};
use scaleset_demo::{Demo, FLEET, ORGANIZATION};
use scaleset_store::{NewScaleSet, Provenance, ScaleSetState};

use crate::helpers::{options, scale_sets};
use scaleset_eventually::try_eventually;

/// Completed jobs on the simulated GitHub.
fn completed(demo: &Demo) -> usize {
    demo.simulator()
        .state()
        .jobs
        .iter()
        .filter(|j| j.state == "completed")
        .count()
}

/// Waits until the three scale sets are ready; returns their provenance (as text) by name.
async fn all_ready(demo: &Demo) -> Result<Vec<(String, Option<&'static str>)>> {
    let store = demo.store();
    try_eventually("the fleet is ready", || {
        let store = store.clone();
        async move {
            let sets = scale_sets(store.as_ref()).await?;
            let ready =
                sets.len() == FLEET.len() && sets.iter().all(|s| s.state == ScaleSetState::Ready);
            Ok(ready.then(|| {
                sets.iter()
                    .map(|s| {
                        (
                            s.spec.name().to_string(),
                            s.provenance.as_ref().map(Provenance::as_str),
                        )
                    })
                    .collect()
            }))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disaster_rehearsal_a_deleted_database_is_rebuilt_by_adoption() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let first = Demo::start(options(dir.path())).await?;
    assert!(first.first_run());
    let provenance = all_ready(&first).await?;
    assert_eq!(
        provenance,
        vec![
            ("linux-arm64".to_owned(), Some("created")),
            ("linux-x64".to_owned(), Some("created")),
            ("release".to_owned(), Some("adopted")),
        ],
        "the first run creates two and adopts the pre-existing one on its owner label"
    );
    try_eventually("jobs flow", || async {
        anyhow::Ok((completed(&first) >= 3).then_some(()))
    })
    .await?;
    // linux-x64 keeps one idle runner: a machine that must survive the database.
    let store = first.store();
    let machines: BTreeSet<String> = try_eventually("an idle runner is up", || {
        let store = store.clone();
        async move {
            let sets = scale_sets(store.as_ref()).await?;
            let mut names = BTreeSet::new();
            for set in &sets {
                for instance in store.list_instances(set.id).await? {
                    if instance.github_runner_id.is_some() {
                        names.insert(instance.name);
                    }
                }
            }
            anyhow::Ok((!names.is_empty()).then_some(names))
        }
    })
    .await?;
    let github_ids: BTreeSet<i64> = scale_sets(store.as_ref())
        .await?
        .iter()
        .filter_map(|s| s.github_id)
        .collect();
    first.stop().await?;

    // The disaster: the database is gone; GitHub and the machines are not.
    for file in scaleset_demo::DataDir::create(dir.path())?.database_files() {
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).context("deleting the database"),
        }
    }

    let second = Demo::start(options(dir.path())).await?;
    assert!(!second.first_run(), "the simulated GitHub is the same one");
    assert_eq!(
        second.declared(),
        FLEET.len(),
        "the fleet is declared again"
    );
    let done_before = completed(&second);
    let provenance = all_ready(&second).await?;
    assert!(
        provenance.iter().all(|(_, p)| *p == Some("adopted")),
        "every scale set comes back adopted: {provenance:?}"
    );
    let store = second.store();
    let sets = scale_sets(store.as_ref()).await?;
    let again: BTreeSet<i64> = sets.iter().filter_map(|s| s.github_id).collect();
    assert_eq!(again, github_ids, "the same GitHub scale sets");
    assert_eq!(
        second.simulator().request_count("create_scale_set"),
        0,
        "none created"
    );
    let on_github = second.simulator().state();
    assert_eq!(
        on_github
            .scale_sets
            .iter()
            .filter(|s| FLEET.iter().any(|d| d.name == s.name))
            .count(),
        FLEET.len(),
        "no duplicate on GitHub"
    );
    assert_eq!(
        on_github.scale_sets.len(),
        FLEET.len() + 1,
        "beside them, only the other controller's scale set the demo seeds"
    );
    for set in &sets {
        assert!(
            !set.evidence.is_empty(),
            "{} shows its evidence",
            set.spec.name()
        );
    }
    // The running machines are recorded again, under the same names.
    try_eventually("the machines are re-recorded", || {
        let (store, sets, machines) = (store.clone(), sets.clone(), machines.clone());
        async move {
            let mut known = BTreeSet::new();
            let mut rerecorded = false;
            for set in &sets {
                for instance in store.list_instances(set.id).await? {
                    known.insert(instance.name);
                }
                rerecorded |= store
                    .list_events(set.id, 100)
                    .await?
                    .iter()
                    .any(|e| e.kind == scaleset_store::EventKind::InstanceRerecorded);
            }
            anyhow::Ok((rerecorded && known.intersection(&machines).next().is_some()).then_some(()))
        }
    })
    .await?;
    try_eventually("jobs keep flowing", || async {
        anyhow::Ok((completed(&second) >= done_before + 3).then_some(()))
    })
    .await?;
    second.stop().await?;

    // A plain restart resumes: nothing is declared again.
    let third = Demo::start(options(dir.path())).await?;
    assert_eq!(third.declared(), 0);
    all_ready(&third).await?;
    third.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_controllers_scale_set_is_refused_with_its_reason() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut opts = options(dir.path());
    opts.jobs = None;
    let demo = Demo::start(opts).await?;
    all_ready(&demo).await?;
    let other = uuid::Uuid::new_v4();
    let label = format!("scaleset-owner-{}", other.simple());
    let foreign = demo.simulator().create_foreign_scale_set_with_labels(
        ORGANIZATION,
        0,
        "gpu",
        &format!("scaleset-{other}"),
        std::slice::from_ref(&label),
    )?;
    // Our operator asks for a scale set of the same name.
    let store = demo.store();
    let entity = store.list_entities().await?.remove(0);
    store
        .create_scale_set(NewScaleSet {
            entity_id: entity.id,
            spec: scaleset_demo::spec("gpu", &["linux", "gpu"], 0, 2)?,
        })
        .await?;
    let refused = try_eventually("gpu is refused", || {
        let store = store.clone();
        async move {
            let sets = scale_sets(store.as_ref()).await?;
            anyhow::Ok(
                sets.into_iter()
                    .find(|s| s.spec.name() == "gpu" && s.state == ScaleSetState::Refused),
            )
        }
    })
    .await?;
    assert!(
        refused.state_reason.contains(&label),
        "the reason names the other owner's label: {}",
        refused.state_reason
    );
    assert_eq!(refused.github_id, None, "not taken");
    let state = demo.simulator().state();
    let theirs = state
        .scale_set(foreign.scale_set_id)
        .context("the foreign scale set is left in place")?;
    assert_eq!(
        theirs.session.as_ref().map(|s| s.session_id.as_str()),
        Some(foreign.session_id.as_str()),
        "and so is its session"
    );
    assert_eq!(
        state.scale_sets_named("gpu").count(),
        1,
        "no second gpu was created"
    );
    demo.stop().await?;
    Ok(())
}
