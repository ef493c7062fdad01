//! The job a busy instance runs, for the status page: recorded per instance, read per scale
//! set, replaced by a later start, gone with the instance, ignored for an instance that is not
//! the lease's set's.

use scaleset_store::{InstanceStore as _, JobShown, NewInstance};

use crate::helpers::{TestDb, lease, store_tests};

store_tests!(
    a_recorded_job_reads_back_with_its_scale_set_and_a_later_start_replaces_it,
    a_recorded_job_goes_with_its_instance,
    a_job_for_an_instance_that_is_gone_or_another_sets_is_ignored
);

fn ci(repository: &str) -> JobShown {
    JobShown::new(
        "octo",
        repository,
        &format!("octo/{repository}/.github/workflows/ci.yml@refs/heads/main"),
    )
}

async fn a_recorded_job_reads_back_with_its_scale_set_and_a_later_start_replaces_it(db: TestDb) {
    let store = db.open().await;
    let a = crate::helpers::scale_set(&store, "ja").await;
    let b = crate::helpers::scale_set(&store, "jb").await;
    let (held_a, held_b) = (
        lease(&store, a.id, "w").await,
        lease(&store, b.id, "w").await,
    );
    for (held, name) in [
        (&held_a, "runner-a"),
        (&held_a, "runner-idle"),
        (&held_b, "runner-b"),
    ] {
        store
            .create_instance(held, NewInstance::pending(name, "pool", None))
            .await
            .unwrap();
    }
    assert!(
        store
            .record_job(&held_a, "runner-a", ci("first"))
            .await
            .unwrap()
    );
    assert!(
        store
            .record_job(&held_b, "runner-b", ci("other"))
            .await
            .unwrap()
    );
    // A start GitHub sent without names is kept as "no names", not refused.
    assert!(
        store
            .record_job(&held_a, "runner-idle", JobShown::new("", "", ""))
            .await
            .unwrap()
    );
    assert!(
        store
            .record_job(&held_a, "runner-a", ci("second"))
            .await
            .unwrap()
    );

    let mut jobs = store.list_instance_jobs(a.id).await.unwrap();
    jobs.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        jobs,
        vec![
            (
                "runner-a".to_owned(),
                JobShown {
                    repository: Some("octo/second".to_owned()),
                    workflow: Some(
                        "octo/second/.github/workflows/ci.yml@refs/heads/main".to_owned()
                    ),
                }
            ),
            ("runner-idle".to_owned(), JobShown::default()),
        ]
    );
    assert_eq!(
        store.list_instance_jobs(b.id).await.unwrap(),
        vec![("runner-b".to_owned(), ci("other"))]
    );
}

async fn a_recorded_job_goes_with_its_instance(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "jc").await;
    let held = lease(&store, set.id, "w").await;
    store
        .create_instance(&held, NewInstance::pending("runner-a", "pool", None))
        .await
        .unwrap();
    assert!(
        store
            .record_job(&held, "runner-a", ci("repo"))
            .await
            .unwrap()
    );
    store.delete_instance(&held, "runner-a").await.unwrap();
    assert_eq!(store.list_instance_jobs(set.id).await.unwrap(), vec![]);

    // An instance of the same name made later starts without the old job.
    store
        .create_instance(&held, NewInstance::pending("runner-a", "pool", None))
        .await
        .unwrap();
    assert_eq!(store.list_instance_jobs(set.id).await.unwrap(), vec![]);
}

async fn a_job_for_an_instance_that_is_gone_or_another_sets_is_ignored(db: TestDb) {
    let store = db.open().await;
    let a = crate::helpers::scale_set(&store, "jd").await;
    let b = crate::helpers::scale_set(&store, "je").await;
    let (held_a, held_b) = (
        lease(&store, a.id, "w").await,
        lease(&store, b.id, "w").await,
    );
    store
        .create_instance(&held_b, NewInstance::pending("runner-b", "pool", None))
        .await
        .unwrap();
    assert!(
        !store
            .record_job(&held_a, "never-made", ci("repo"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_job(&held_a, "runner-b", ci("repo"))
            .await
            .unwrap()
    );
    assert_eq!(store.list_instance_jobs(a.id).await.unwrap(), vec![]);
    assert_eq!(store.list_instance_jobs(b.id).await.unwrap(), vec![]);
}
