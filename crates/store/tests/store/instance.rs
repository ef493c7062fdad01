//! Instances: round trip, unique names and the status transition table.

use scaleset_store::{
    Error, InstanceAdvance, InstanceStatus, InstanceStore as _, LeaseStore as _, NewInstance,
    Timestamp,
};

use crate::helpers::{TestDb, lease, store_tests};

store_tests!(
    instance_round_trip,
    duplicate_instance_name_is_a_conflict,
    transition_table_is_enforced,
    advancing_moves_and_records_ids_in_one_commit,
    a_batch_of_intents_lands_together_or_not_at_all,
    a_batch_of_moves_lands_together_or_not_at_all,
    instances_are_counted_by_status_across_scale_sets,
    the_pool_keys_rows_name_are_listed_once_each,
    a_removal_request_is_recorded_once_without_a_lease
);

/// `advance_instance` is the scaler's one commit for "GitHub id + creating" and "provider id +
/// running": both land, a refused move lands neither, a lost lease neither.
async fn advancing_moves_and_records_ids_in_one_commit(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "adv").await;
    let held = lease(&store, scale_set.id, "w").await;
    store.create_instance(&held, new("adv-1")).await.unwrap();

    let creating = store
        .advance_instance(&held, "adv-1", InstanceStatus::Creating, None, Some(41))
        .await
        .unwrap();
    assert_eq!(store.get_instance("adv-1").await.unwrap(), creating);
    assert_eq!(
        (
            creating.status,
            creating.github_runner_id,
            creating.provider_id.as_deref()
        ),
        (InstanceStatus::Creating, Some(41), None)
    );
    let running = store
        .advance_instance(
            &held,
            "adv-1",
            InstanceStatus::Running,
            Some("prov-9"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            running.status,
            running.github_runner_id,
            running.provider_id.as_deref()
        ),
        (InstanceStatus::Running, Some(41), Some("prov-9"))
    );

    // A move the table refuses records no id either.
    let refused = store
        .advance_instance(
            &held,
            "adv-1",
            InstanceStatus::Pending,
            Some("other"),
            Some(5),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, Error::InvalidTransition { .. }),
        "{refused:?}"
    );
    assert_eq!(store.get_instance("adv-1").await.unwrap(), running);

    // A taken-over lease writes nothing.
    store.release_lease(&held).await.unwrap();
    let _other = lease(&store, scale_set.id, "someone-else").await;
    assert!(
        store
            .advance_instance(&held, "adv-1", InstanceStatus::Busy, Some("late"), None)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert_eq!(store.get_instance("adv-1").await.unwrap(), running);
}

/// `create_instances` is the scaler's one commit for a message's N intents: all land, in the
/// order given; a duplicate among them, or a lost lease, lands none.
async fn a_batch_of_intents_lands_together_or_not_at_all(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "batch").await;
    let held = lease(&store, scale_set.id, "w").await;
    let created = store
        .create_instances(&held, vec![new("b-2"), new("b-1"), new("b-3")])
        .await
        .unwrap();
    let names: Vec<&str> = created.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["b-2", "b-1", "b-3"], "in the order given");
    assert_eq!(store.list_instances(scale_set.id).await.unwrap().len(), 3);
    for instance in &created {
        assert_eq!(&store.get_instance(&instance.name).await.unwrap(), instance);
        assert_eq!(instance.status, InstanceStatus::Pending);
    }
    assert!(
        store
            .create_instances(&held, Vec::new())
            .await
            .unwrap()
            .is_empty()
    );

    // One name already taken: none of the batch is recorded.
    let refused = store
        .create_instances(&held, vec![new("b-4"), new("b-1"), new("b-5")])
        .await
        .unwrap_err();
    assert!(refused.is_conflict(), "{refused:?}");
    assert!(store.get_instance("b-4").await.unwrap_err().is_not_found());
    assert!(store.get_instance("b-5").await.unwrap_err().is_not_found());

    // A taken-over lease records nothing.
    store.release_lease(&held).await.unwrap();
    let _other = lease(&store, scale_set.id, "someone-else").await;
    assert!(
        store
            .create_instances(&held, vec![new("b-6")])
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(store.get_instance("b-6").await.unwrap_err().is_not_found());
    assert_eq!(store.list_instances(scale_set.id).await.unwrap().len(), 3);
}

fn advance(
    name: &str,
    to: InstanceStatus,
    provider: Option<&str>,
    runner: Option<i64>,
) -> InstanceAdvance {
    InstanceAdvance {
        name: name.to_owned(),
        to,
        provider_id: provider.map(str::to_owned),
        github_runner_id: runner,
    }
}

/// `advance_instances` is the scaler's one commit for a message's N runners' GitHub ids with
/// `creating`, then their provider ids with `running`: all land; a refused move, an unknown
/// name, another scale set's instance or a lost lease lands none.
async fn a_batch_of_moves_lands_together_or_not_at_all(db: TestDb) {
    use InstanceStatus::{Creating, Running};
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "moves").await;
    let other_set = crate::helpers::scale_set(&store, "moves-other").await;
    let held = lease(&store, scale_set.id, "w").await;
    let other = lease(&store, other_set.id, "w").await;
    store
        .create_instances(&held, vec![new("m-1"), new("m-2")])
        .await
        .unwrap();
    store.create_instance(&other, new("o-1")).await.unwrap();

    let creating = store
        .advance_instances(
            &held,
            vec![
                advance("m-1", Creating, None, Some(11)),
                advance("m-2", Creating, None, Some(12)),
            ],
        )
        .await
        .unwrap();
    for (instance, runner) in creating.iter().zip([11, 12]) {
        assert_eq!(&store.get_instance(&instance.name).await.unwrap(), instance);
        assert_eq!(
            (instance.status, instance.github_runner_id),
            (Creating, Some(runner))
        );
    }

    // One refused move (creating cannot go back to pending): neither moves.
    let refused = store
        .advance_instances(
            &held,
            vec![
                advance("m-1", Running, Some("p-1"), None),
                advance("m-2", InstanceStatus::Pending, None, None),
            ],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, Error::InvalidTransition { .. }),
        "{refused:?}"
    );
    // An unknown name, or another scale set's instance: neither moves.
    for stranger in ["m-9", "o-1"] {
        let refused = store
            .advance_instances(
                &held,
                vec![
                    advance("m-1", Running, Some("p-1"), None),
                    advance(stranger, Running, Some("p-x"), None),
                ],
            )
            .await
            .unwrap_err();
        assert!(refused.is_not_found(), "{stranger}: {refused:?}");
    }
    assert_eq!(store.get_instance("m-1").await.unwrap(), creating[0]);
    assert_eq!(
        store.get_instance("o-1").await.unwrap().status,
        InstanceStatus::Pending
    );

    let running = store
        .advance_instances(
            &held,
            vec![
                advance("m-2", Running, Some("p-2"), None),
                advance("m-1", Running, Some("p-1"), None),
            ],
        )
        .await
        .unwrap();
    let seen: Vec<(&str, InstanceStatus, Option<&str>, Option<i64>)> = running
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.status,
                i.provider_id.as_deref(),
                i.github_runner_id,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("m-2", Running, Some("p-2"), Some(12)),
            ("m-1", Running, Some("p-1"), Some(11))
        ]
    );

    // A taken-over lease moves nothing.
    store.release_lease(&held).await.unwrap();
    let _taken = lease(&store, scale_set.id, "someone-else").await;
    assert!(
        store
            .advance_instances(
                &held,
                vec![advance("m-1", InstanceStatus::Busy, None, None)]
            )
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert_eq!(store.get_instance("m-1").await.unwrap().status, Running);
}

fn new(name: &str) -> NewInstance {
    NewInstance::pending(
        name,
        "controller:7",
        Some(Timestamp::from_unix_millis(1_800_000_600_000)),
    )
}

async fn instance_round_trip(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "inst").await;
    let held = lease(&store, scale_set.id, "w").await;
    let created = store.create_instance(&held, new("inst-abc")).await.unwrap();
    assert_eq!(created.status, InstanceStatus::Pending);
    assert_eq!(created.scale_set_id, scale_set.id);
    assert_eq!(created.bootstrap_deadline, new("x").bootstrap_deadline);
    assert_eq!(store.get_instance("inst-abc").await.unwrap(), created);

    let with_ids = store
        .set_instance_ids(&held, "inst-abc", Some("prov-1"), None)
        .await
        .unwrap();
    assert_eq!(
        (with_ids.provider_id.as_deref(), with_ids.github_runner_id),
        (Some("prov-1"), None)
    );
    let with_ids = store
        .set_instance_ids(&held, "inst-abc", None, Some(77))
        .await
        .unwrap();
    assert_eq!(
        (with_ids.provider_id.as_deref(), with_ids.github_runner_id),
        (Some("prov-1"), Some(77))
    );
    for to in [
        InstanceStatus::Creating,
        InstanceStatus::Running,
        InstanceStatus::Busy,
    ] {
        assert_eq!(
            store
                .transition_instance(&held, "inst-abc", to)
                .await
                .unwrap()
                .status,
            to
        );
    }
    let stored = store.get_instance("inst-abc").await.unwrap();
    assert_eq!(
        (stored.status, stored.github_runner_id),
        (InstanceStatus::Busy, Some(77))
    );
    assert_eq!(
        store.list_instances(scale_set.id).await.unwrap(),
        vec![stored]
    );
    store.delete_instance(&held, "inst-abc").await.unwrap();
    assert!(
        store
            .get_instance("inst-abc")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        store
            .delete_instance(&held, "inst-abc")
            .await
            .unwrap_err()
            .is_not_found()
    );

    // Re-recording an instance found at the provider keeps its status and ids.
    let found = NewInstance {
        name: "inst-found".to_owned(),
        pool_key: "controller:7".to_owned(),
        status: InstanceStatus::Running,
        provider_id: Some("prov-9".to_owned()),
        github_runner_id: Some(9),
        bootstrap_deadline: None,
    };
    let recorded = store.create_instance(&held, found).await.unwrap();
    assert_eq!(
        (
            recorded.status,
            recorded.provider_id.as_deref(),
            recorded.github_runner_id,
            recorded.bootstrap_deadline,
            recorded.pool_key.as_str()
        ),
        (
            InstanceStatus::Running,
            Some("prov-9"),
            Some(9),
            None,
            "controller:7"
        )
    );
    assert_eq!(store.get_instance("inst-found").await.unwrap(), recorded);
}

async fn duplicate_instance_name_is_a_conflict(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "dupinst").await;
    let held = lease(&store, scale_set.id, "w").await;
    store.create_instance(&held, new("same")).await.unwrap();
    assert!(
        store
            .create_instance(&held, new("same"))
            .await
            .unwrap_err()
            .is_conflict()
    );
}

/// A path from pending to each status.
fn path_to(status: InstanceStatus) -> Vec<InstanceStatus> {
    use InstanceStatus::*;
    match status {
        Pending => vec![],
        Creating => vec![Creating],
        Running => vec![Creating, Running],
        Busy => vec![Creating, Running, Busy],
        Deleting => vec![Deleting],
        Deleted => vec![Deleting, Deleted],
        Failed => vec![Failed],
    }
}

async fn transition_table_is_enforced(db: TestDb) {
    use InstanceStatus::*;
    let allowed = [
        (Pending, Creating),
        (Pending, Deleting),
        (Pending, Failed),
        (Creating, Running),
        (Creating, Busy),
        (Creating, Deleting),
        (Creating, Failed),
        (Running, Busy),
        (Running, Deleting),
        (Running, Failed),
        (Busy, Deleting),
        (Busy, Failed),
        (Failed, Deleting),
        (Deleting, Deleted),
        (Deleting, Failed),
    ];
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "table").await;
    let held = lease(&store, scale_set.id, "w").await;
    let mut n = 0;
    for &from in InstanceStatus::ALL {
        for &to in InstanceStatus::ALL {
            n += 1;
            let name = format!("t-{n}");
            store.create_instance(&held, new(&name)).await.unwrap();
            for step in path_to(from) {
                store.transition_instance(&held, &name, step).await.unwrap();
            }
            let expected = from == to || allowed.contains(&(from, to));
            assert_eq!(from.can_move_to(to), expected, "{from} -> {to}");
            match store.transition_instance(&held, &name, to).await {
                Ok(instance) => {
                    assert!(expected, "{from} -> {to} was allowed");
                    assert_eq!(instance.status, to);
                }
                Err(Error::InvalidTransition {
                    instance,
                    from: f,
                    to: t,
                }) => {
                    assert!(!expected, "{from} -> {to} was refused");
                    assert_eq!((instance.as_str(), f, t), (name.as_str(), from, to));
                    assert_eq!(
                        store.get_instance(&name).await.unwrap().status,
                        from,
                        "unchanged"
                    );
                }
                Err(other) => panic!("{from} -> {to}: {other:?}"),
            }
        }
    }
}

/// The fleet-wide count the metrics read: every scale set's instances, by status.
async fn instances_are_counted_by_status_across_scale_sets(db: TestDb) {
    let store = db.open().await;
    assert_eq!(store.count_instances_by_status().await.unwrap(), vec![]);
    assert_eq!(store.scale_sets_with_instances().await.unwrap(), vec![]);
    let first = crate::helpers::scale_set(&store, "count-a").await;
    let second = crate::helpers::scale_set(&store, "count-b").await;
    let (a, b) = (
        lease(&store, first.id, "w").await,
        lease(&store, second.id, "w").await,
    );
    for name in ["a-1", "a-2", "a-3"] {
        store.create_instance(&a, new(name)).await.unwrap();
    }
    store.create_instance(&b, new("b-1")).await.unwrap();
    store
        .transition_instance(&a, "a-1", InstanceStatus::Creating)
        .await
        .unwrap();
    store
        .transition_instance(&b, "b-1", InstanceStatus::Creating)
        .await
        .unwrap();
    let mut with = store.scale_sets_with_instances().await.unwrap();
    with.sort();
    let mut expected = vec![first.id, second.id];
    expected.sort();
    assert_eq!(with, expected, "each scale set with an instance, once");
    let mut counts = store.count_instances_by_status().await.unwrap();
    counts.sort_by_key(|(status, _)| status.as_str());
    assert_eq!(
        counts,
        vec![(InstanceStatus::Creating, 2), (InstanceStatus::Pending, 2)]
    );
    let mut per_set = store.count_instances_by_scale_set().await.unwrap();
    per_set.sort_by_key(|(id, status, _)| (*id == second.id, status.as_str()));
    assert_eq!(
        per_set,
        vec![
            (first.id, InstanceStatus::Creating, 1),
            (first.id, InstanceStatus::Pending, 2),
            (second.id, InstanceStatus::Creating, 1),
        ],
        "each scale set's own counts, by status"
    );
}

async fn a_removal_request_is_recorded_once_without_a_lease(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "rm").await;
    let held = lease(&store, scale_set.id, "w").await;
    store.create_instance(&held, new("rm-a")).await.unwrap();
    assert_eq!(
        store
            .get_instance("rm-a")
            .await
            .unwrap()
            .removal_requested_at,
        None
    );
    store.create_instance(&held, new("rm-b")).await.unwrap();
    let other = crate::helpers::scale_set(&store, "rm-other").await;
    let other_lease = lease(&store, other.id, "w").await;
    store
        .create_instance(&other_lease, new("rm-c"))
        .await
        .unwrap();
    assert_eq!(
        store.scale_sets_with_removal_requests().await.unwrap(),
        vec![],
        "none asked for"
    );
    let first = store.request_instance_removal("rm-a").await.unwrap();
    let at = first.removal_requested_at.expect("recorded");
    store.request_instance_removal("rm-b").await.unwrap();
    assert_eq!(
        store.scale_sets_with_removal_requests().await.unwrap(),
        vec![scale_set.id],
        "the scale set once, however many of its rows were asked for; not the other"
    );
    db.clock.advance(std::time::Duration::from_secs(5));
    let again = store.request_instance_removal("rm-a").await.unwrap();
    assert_eq!(
        again.removal_requested_at,
        Some(at),
        "asking again keeps the first time"
    );
    // The worker's own writes keep the request.
    let moved = store
        .transition_instance(&held, "rm-a", InstanceStatus::Creating)
        .await
        .unwrap();
    assert_eq!(moved.removal_requested_at, Some(at));
    assert_eq!(store.get_instance("rm-a").await.unwrap(), moved);
    assert!(
        store
            .request_instance_removal("nobody")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

/// The orphan sweep's question (issue 36): which pool keys any row names, across scale sets.
async fn the_pool_keys_rows_name_are_listed_once_each(db: TestDb) {
    let store = db.open().await;
    assert!(store.instance_pool_keys().await.unwrap().is_empty());
    let first = crate::helpers::scale_set(&store, "keys-a").await;
    let second = crate::helpers::scale_set(&store, "keys-b").await;
    let (a, b) = (
        lease(&store, first.id, "w").await,
        lease(&store, second.id, "w").await,
    );
    store.create_instance(&a, new("a-1")).await.unwrap();
    store.create_instance(&a, new("a-2")).await.unwrap();
    let other = NewInstance::pending("b-1", "controller:8", None);
    store.create_instance(&b, other).await.unwrap();
    let mut keys = store.instance_pool_keys().await.unwrap();
    keys.sort();
    assert_eq!(
        keys,
        vec!["controller:7".to_owned(), "controller:8".to_owned()]
    );
    store.delete_instance(&b, "b-1").await.unwrap();
    assert_eq!(
        store.instance_pool_keys().await.unwrap(),
        vec!["controller:7".to_owned()],
        "a key no row names any more is not listed"
    );
}
