//! Instance access: tokens scoped to one instance that expire, sealed JIT configs, the
//! bootstrap report table, fencing of the grant, and removal with the instance.

use std::time::Duration;

use scaleset_store::{
    BootstrapReport, BootstrapStatus, Error, ExposeSecret as _, InstanceAccessStore as _,
    InstanceStore as _, NewInstance, SecretString, SystemInfo,
};

use crate::helpers::{TestDb, lease, raw_sql, store_tests};

store_tests!(
    a_granted_token_opens_its_instance_and_its_jit_config,
    a_token_stops_working_when_it_expires,
    a_new_grant_replaces_the_old_token,
    the_grant_is_fenced_by_the_lease_of_the_instances_scale_set,
    reports_follow_the_bootstrap_table_and_stop_when_it_is_over,
    access_goes_with_its_instance,
    a_sealed_jit_config_copied_to_another_instance_does_not_open
);

const TTL: Duration = Duration::from_secs(600);

fn report(status: BootstrapStatus, message: &str) -> BootstrapReport {
    BootstrapReport {
        status,
        message: message.to_owned(),
        agent_id: None,
    }
}

/// A scale set with instance `name` recorded and its lease held by `w`.
async fn with_instance(
    store: &scaleset_store::DieselStore,
    scale_set: &str,
    name: &str,
) -> scaleset_store::Lease {
    let scale_set = crate::helpers::scale_set(store, scale_set).await;
    let held = lease(store, scale_set.id, "w").await;
    store
        .create_instance(&held, NewInstance::pending(name, "pool", None))
        .await
        .unwrap();
    held
}

/// Grants `name` access with the JIT config `jit` for [`TTL`]; the token.
async fn grant(
    store: &scaleset_store::DieselStore,
    held: &scaleset_store::Lease,
    name: &str,
    jit: &str,
) -> SecretString {
    try_grant(store, held, name, jit).await.unwrap()
}

async fn try_grant(
    store: &scaleset_store::DieselStore,
    held: &scaleset_store::Lease,
    name: &str,
    jit: &str,
) -> scaleset_store::Result<SecretString> {
    store
        .grant_instance_access(held, name, &SecretString::from(jit), TTL)
        .await
}

/// The JIT config of instance `name`, which must open.
async fn jit_config(store: &scaleset_store::DieselStore, name: &str) -> String {
    let sealed = store.open_instance_jit_config(name).await.unwrap();
    sealed.expose_secret().to_owned()
}

async fn a_granted_token_opens_its_instance_and_its_jit_config(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "ia", "runner-a").await;
    let token = grant(&store, &held, "runner-a", "jit-a").await;
    assert!(token.expose_secret().starts_with("ssi_"));

    let access = store.authenticate_instance(&token).await.unwrap().unwrap();
    assert_eq!(access.instance_name, "runner-a");
    assert_eq!(access.scale_set_id, held.scale_set_id());
    assert_eq!(access.bootstrap_status, BootstrapStatus::Pending);
    assert_eq!(
        access.expires_at,
        scaleset_store::Clock::now(&db.clock).saturating_add(TTL)
    );
    assert_eq!(
        store.get_instance_access("runner-a").await.unwrap(),
        Some(access)
    );
    assert_eq!(jit_config(&store, "runner-a").await, "jit-a");
    // Neither an unknown token nor an API-style token of the same length opens anything.
    let unknown = SecretString::from(format!(
        "{}x",
        &token.expose_secret()[..token.expose_secret().len() - 1]
    ));
    assert_eq!(store.authenticate_instance(&unknown).await.unwrap(), None);
    assert_eq!(store.get_instance_access("runner-b").await.unwrap(), None);
}

async fn a_token_stops_working_when_it_expires(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "ib", "runner-a").await;
    let token = grant(&store, &held, "runner-a", "jit").await;
    db.clock.advance(TTL - Duration::from_millis(1));
    assert!(store.authenticate_instance(&token).await.unwrap().is_some());
    db.clock.advance(Duration::from_millis(1));
    assert_eq!(store.authenticate_instance(&token).await.unwrap(), None);
}

async fn a_new_grant_replaces_the_old_token(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "ic", "runner-a").await;
    let old = grant(&store, &held, "runner-a", "jit-1").await;
    let new = grant(&store, &held, "runner-a", "jit-2").await;
    assert_eq!(store.authenticate_instance(&old).await.unwrap(), None);
    assert!(store.authenticate_instance(&new).await.unwrap().is_some());
    assert_eq!(jit_config(&store, "runner-a").await, "jit-2");
}

async fn the_grant_is_fenced_by_the_lease_of_the_instances_scale_set(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "id", "runner-a").await;
    // Another scale set's lease covers none of this set's instances.
    let other_set = crate::helpers::scale_set(&store, "id-other").await;
    let other = lease(&store, other_set.id, "w").await;
    let err = try_grant(&store, &other, "runner-a", "jit")
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");

    // A lease taken over by another worker writes nothing.
    db.clock.advance(Duration::from_secs(31));
    let _taken = lease(&store, held.scale_set_id(), "v").await;
    let err = try_grant(&store, &held, "runner-a", "jit")
        .await
        .unwrap_err();
    assert!(err.is_lease_lost(), "{err}");
    assert_eq!(store.get_instance_access("runner-a").await.unwrap(), None);
}

async fn reports_follow_the_bootstrap_table_and_stop_when_it_is_over(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "ie", "runner-a").await;
    let not_granted = store
        .report_instance_status("runner-a", report(BootstrapStatus::Installing, "early"))
        .await
        .unwrap_err();
    assert!(not_granted.is_not_found(), "{not_granted}");
    grant(&store, &held, "runner-a", "jit").await;

    let installing = store
        .report_instance_status(
            "runner-a",
            report(BootstrapStatus::Installing, "downloading"),
        )
        .await
        .unwrap();
    assert_eq!(installing.bootstrap_status, BootstrapStatus::Installing);
    let back = store
        .report_instance_status("runner-a", report(BootstrapStatus::Pending, "again"))
        .await
        .unwrap_err();
    assert!(matches!(back, Error::Invalid { .. }), "{back}");

    let info = store
        .report_instance_system_info(
            "runner-a",
            SystemInfo {
                os_name: "Ubuntu".to_owned(),
                os_version: "24.04".to_owned(),
                agent_id: Some(41),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            info.os_name.as_deref(),
            info.os_version.as_deref(),
            info.agent_id
        ),
        (Some("Ubuntu"), Some("24.04"), Some(41))
    );

    let idle = store
        .report_instance_status(
            "runner-a",
            BootstrapReport {
                status: BootstrapStatus::Idle,
                message: "runner started".to_owned(),
                agent_id: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(idle.bootstrap_status, BootstrapStatus::Idle);
    assert_eq!(idle.status_message.as_deref(), Some("runner started"));
    assert_eq!(
        idle.agent_id,
        Some(41),
        "an absent agent id keeps the known one"
    );

    for late in [
        store
            .report_instance_status("runner-a", report(BootstrapStatus::Failed, "late"))
            .await
            .unwrap_err(),
        store
            .report_instance_system_info(
                "runner-a",
                SystemInfo {
                    os_name: "x".to_owned(),
                    os_version: "y".to_owned(),
                    agent_id: None,
                },
            )
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(late, Error::Invalid { .. }), "{late}");
    }
    assert_eq!(
        store.get_instance_access("runner-a").await.unwrap(),
        Some(idle)
    );
}

async fn access_goes_with_its_instance(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "if", "runner-a").await;
    let token = grant(&store, &held, "runner-a", "jit").await;
    store.delete_instance(&held, "runner-a").await.unwrap();
    assert_eq!(store.authenticate_instance(&token).await.unwrap(), None);
    assert_eq!(store.get_instance_access("runner-a").await.unwrap(), None);
    assert!(
        store
            .open_instance_jit_config("runner-a")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn a_sealed_jit_config_copied_to_another_instance_does_not_open(db: TestDb) {
    let store = db.open().await;
    let held = with_instance(&store, "ig", "runner-a").await;
    store
        .create_instance(&held, NewInstance::pending("runner-b", "pool", None))
        .await
        .unwrap();
    for (name, jit) in [("runner-a", "jit-a"), ("runner-b", "jit-b")] {
        grant(&store, &held, name, jit).await;
    }
    raw_sql(
        &db,
        "UPDATE instance_access SET jit_ciphertext = (SELECT jit_ciphertext FROM instance_access \
         WHERE instance_name = 'runner-a') WHERE instance_name = 'runner-b'",
    )
    .await;
    let err = store
        .open_instance_jit_config("runner-b")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Crypto { .. }), "{err}");
    assert!(!err.to_string().contains("jit-a"), "{err}");
}
