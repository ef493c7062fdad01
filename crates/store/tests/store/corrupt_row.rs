//! Rows this version cannot read (edited by hand, or written by a newer version) give
//! `Error::Corrupt` naming the table, row and column, never a panic.

use scaleset_store::{
    ControllerStore as _, CredentialStore as _, DieselStore, EntityKind, EntityStore as _, Error,
    InstanceStore as _, NewEntity, NewInstance, ScaleSetStore as _,
};

use crate::helpers::{TestDb, lease, pat, raw_sql, store_tests};

store_tests!(corrupt_rows_are_errors_naming_the_column);

/// Asserts `result` is `Corrupt` in `table`, column `column`, with `needle` in the message.
fn assert_corrupt<T: std::fmt::Debug>(
    result: Result<T, Error>,
    table: &str,
    column: &str,
    needle: &str,
) {
    let err = match result {
        Err(err) => err,
        Ok(value) => panic!("expected Corrupt in {table}.{column}, got {value:?}"),
    };
    let Error::Corrupt {
        table: t,
        column: c,
        ..
    } = &err
    else {
        panic!("expected Corrupt in {table}.{column}, got {err:?}");
    };
    assert_eq!((*t, *c), (table, column), "{err}");
    assert!(err.to_string().contains(needle), "{err}");
    assert_eq!(err.class(), scaleset_store::ErrorClass::Fatal);
}

async fn corrupt_rows_are_errors_naming_the_column(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "rows").await;
    let held = lease(&store, scale_set.id, "w").await;

    store
        .create_instance(&held, NewInstance::pending("rows-1", "c:1", None))
        .await
        .unwrap();
    raw_sql(
        &db,
        "UPDATE instances SET status = 'zombie' WHERE name = 'rows-1'",
    )
    .await;
    assert_corrupt(
        store.get_instance("rows-1").await,
        "instances",
        "status",
        "zombie",
    );
    assert_corrupt(
        store.list_instances(scale_set.id).await,
        "instances",
        "status",
        "zombie",
    );

    let creds = store.create_credentials(pat("rows", "t")).await.unwrap();
    let entity = store
        .create_entity(NewEntity {
            kind: EntityKind::Repository {
                owner: "acme".into(),
                name: "widgets".into(),
            },
            credentials_id: creds.id,
        })
        .await
        .unwrap();
    raw_sql(
        &db,
        &format!(
            "UPDATE entities SET path = 'no-slash' WHERE id = '{}'",
            entity.id
        ),
    )
    .await;
    assert_corrupt(
        store.get_entity(entity.id).await,
        "entities",
        "path",
        "no-slash",
    );
    raw_sql(
        &db,
        &format!(
            "UPDATE entities SET kind = 'galaxy' WHERE id = '{}'",
            entity.id
        ),
    )
    .await;
    assert_corrupt(
        store.get_entity(entity.id).await,
        "entities",
        "kind",
        "galaxy",
    );

    raw_sql(
        &db,
        &format!(
            "UPDATE credentials SET kind = 'oauth' WHERE id = '{}'",
            creds.id
        ),
    )
    .await;
    assert_corrupt(
        store.get_credentials(creds.id).await,
        "credentials",
        "kind",
        "oauth",
    );
    raw_sql(
        &db,
        &format!(
            "UPDATE credentials SET kind = 'app', app_id = NULL WHERE id = '{}'",
            creds.id
        ),
    )
    .await;
    assert_corrupt(
        store.get_credentials(creds.id).await,
        "credentials",
        "app_id",
        "NULL",
    );

    // A generation at the end of its range is refused, not overflowed.
    raw_sql(
        &db,
        &format!(
            "UPDATE scale_sets SET generation = 9223372036854775807 WHERE id = '{}'",
            scale_set.id
        ),
    )
    .await;
    let at_end = store.get_scale_set(scale_set.id).await.unwrap();
    assert_corrupt(
        store.update_scale_set(&at_end).await,
        "scale_sets",
        "generation",
        "9223372036854775807",
    );

    raw_sql(&db, "UPDATE controller SET controller_id = 'not-a-uuid'").await;
    assert_corrupt(
        store.controller_id().await,
        "controller",
        "controller_id",
        "not-a-uuid",
    );
    // Opening refuses too, rather than binding a new id over it.
    assert_corrupt(
        DieselStore::open(db.options()).await,
        "controller",
        "controller_id",
        "not-a-uuid",
    );
}
