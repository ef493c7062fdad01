//! Credentials: round trip, sealed secrets, wrong keys, rotation.

use scaleset_store::{
    AppIdentity, Auth, ClientId, CredentialStore as _, DieselStore, Endpoint, EntityKind,
    EntityStore as _, Error, Keyring, NewCredentials, NewEntity, SecretString,
};

use crate::helpers::{
    Backend, HeldTransaction, TestDb, lock_waiter_seen, pat, raw_sql, store_tests, test_key,
};

store_tests!(
    credentials_round_trip,
    duplicate_credentials_name_is_a_conflict,
    credentials_in_use_cannot_be_deleted,
    wrong_key_is_a_crypto_error,
    rotated_keys_read_old_rows_and_reseal,
    concurrent_reseals_reseal_every_row_once,
    reseal_keeps_a_concurrent_update,
    secrets_are_redacted_in_debug,
    system_trust_is_stored_and_updated,
    an_app_named_by_client_id_is_stored_and_a_row_of_the_app_id_shape_still_loads,
);

fn app(name: &str) -> NewCredentials {
    NewCredentials {
        name: name.to_owned(),
        endpoint: Endpoint {
            base_url: "https://ghes.example".to_owned(),
            api_base_url: "https://ghes.example/api/v3".to_owned(),
            ca_bundle: Some(
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_owned(),
            ),
            system_trust: false,
        },
        auth: Auth::App {
            app: AppIdentity::Id(12345),
            installation_id: 67890,
            private_key: SecretString::from(
                "-----BEGIN PRIVATE KEY-----\nsecret-app-key\n-----END PRIVATE KEY-----\n",
            ),
        },
    }
}

async fn credentials_round_trip(db: TestDb) {
    let store = db.open().await;
    let token = store
        .create_credentials(pat("pat", "ghp_round_trip"))
        .await
        .unwrap();
    let app_creds = store.create_credentials(app("app")).await.unwrap();
    assert_eq!(token.auth, pat("pat", "ghp_round_trip").auth);
    assert_eq!(token.key_id, "k1");
    assert_eq!(store.get_credentials(token.id).await.unwrap(), token);
    assert_eq!(
        store.get_credentials_by_name("app").await.unwrap(),
        app_creds
    );
    assert_eq!(app_creds.endpoint, app("app").endpoint);
    assert_eq!(app_creds.auth, app("app").auth);
    assert_eq!(
        store.list_credentials().await.unwrap(),
        vec![app_creds.clone(), token.clone()]
    );

    db.clock.advance(std::time::Duration::from_secs(5));
    let replaced = store
        .update_credentials(token.id, pat("pat-renamed", "ghp_rotated"))
        .await
        .unwrap();
    assert_eq!(replaced.name, "pat-renamed");
    assert_eq!(replaced.created_at, token.created_at);
    assert!(replaced.updated_at > token.updated_at);
    assert_eq!(store.get_credentials(token.id).await.unwrap(), replaced);

    store.delete_credentials(token.id).await.unwrap();
    assert!(
        store
            .get_credentials(token.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        store
            .delete_credentials(token.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        store
            .get_credentials_by_name("nope")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn duplicate_credentials_name_is_a_conflict(db: TestDb) {
    let store = db.open().await;
    store.create_credentials(pat("same", "a")).await.unwrap();
    let err = store
        .create_credentials(pat("same", "b"))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
}

async fn credentials_in_use_cannot_be_deleted(db: TestDb) {
    let store = db.open().await;
    let creds = store.create_credentials(pat("used", "a")).await.unwrap();
    store
        .create_entity(NewEntity {
            kind: EntityKind::Organization {
                name: "acme".into(),
            },
            credentials_id: creds.id,
        })
        .await
        .unwrap();
    let err = store.delete_credentials(creds.id).await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    assert_eq!(store.get_credentials(creds.id).await.unwrap(), creds);
}

async fn wrong_key_is_a_crypto_error(db: TestDb) {
    let store = db.open().await;
    let creds = store
        .create_credentials(pat("main", "ghp_secret"))
        .await
        .unwrap();
    drop(store);

    // Same key id, different key material.
    let wrong = DieselStore::open(db.options_with(Keyring::new(test_key("k1", 2))))
        .await
        .unwrap();
    let err = wrong.get_credentials(creds.id).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Crypto {
                operation: "decrypt",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("authentication failed with key id \"k1\""),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("configure the original key under id \"k1\", or replace these credentials"),
        "says what to do: {err}"
    );
    assert!(
        err.to_string().contains("\"main\""),
        "names the credentials: {err}"
    );

    // A keyring without the key id at all.
    let missing = DieselStore::open(db.options_with(Keyring::new(test_key("k9", 1))))
        .await
        .unwrap();
    let err = missing.list_credentials().await.unwrap_err();
    assert!(matches!(err, Error::Crypto { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("key id \"k1\", which is not in the keyring"),
        "{err}"
    );
    assert!(
        err.to_string().contains("add that key as an older key"),
        "says what to do: {err}"
    );
    assert_eq!(err.class(), scaleset_store::ErrorClass::Fatal);
}

async fn rotated_keys_read_old_rows_and_reseal(db: TestDb) {
    let store = db.open().await;
    let old = store
        .create_credentials(pat("old", "ghp_old"))
        .await
        .unwrap();
    assert_eq!(old.key_id, "k1");
    drop(store);

    let rotated_ring = || {
        Keyring::new(test_key("k2", 2))
            .with_older_key(test_key("k1", 1))
            .unwrap()
    };
    let rotated = DieselStore::open(db.options_with(rotated_ring()))
        .await
        .unwrap();
    // Old rows still read, new rows use the new primary key.
    assert_eq!(
        rotated.get_credentials(old.id).await.unwrap().auth,
        old.auth
    );
    let new = rotated
        .create_credentials(pat("new", "ghp_new"))
        .await
        .unwrap();
    assert_eq!(new.key_id, "k2");
    // Reseal moves the old row to k2; a second run has nothing left to do.
    assert_eq!(rotated.reseal_credentials().await.unwrap(), 1);
    assert_eq!(rotated.reseal_credentials().await.unwrap(), 0);
    drop(rotated);

    // The old key can now be removed.
    let only_new = DieselStore::open(db.options_with(Keyring::new(test_key("k2", 2))))
        .await
        .unwrap();
    let resealed = only_new.get_credentials(old.id).await.unwrap();
    assert_eq!(resealed.key_id, "k2");
    assert_eq!(resealed.auth, old.auth);
}

/// Credentials sealed under the old key before the concurrent reseals.
const RESEAL_ROWS: usize = 24;
/// Reseals per store; two stores (pools) stand for two processes.
const RESEALS_PER_STORE: usize = 2;

/// Reseals running at once all succeed, together re-seal every row exactly once, and leave
/// every secret readable with the new key alone.
///
/// The old code wrote rows in no fixed order, which on PostgreSQL could deadlock two reseals
/// (each holding a row the other wants next); rows are now written in `id` order. Whether a
/// run provokes the unordered interleaving depends on scan order and scheduling, so this test
/// cannot deterministically show the old deadlock; it proves the concurrent path correct: no
/// error (a deadlock would surface as a backend error), no row counted twice or skipped.
async fn concurrent_reseals_reseal_every_row_once(db: TestDb) {
    let store = db.open().await;
    let mut originals = Vec::new();
    for i in 0..RESEAL_ROWS {
        originals.push(
            store
                .create_credentials(pat(&format!("creds-{i:02}"), &format!("ghp_secret_{i}")))
                .await
                .unwrap(),
        );
    }
    drop(store);

    let rotated_ring = || {
        Keyring::new(test_key("k2", 2))
            .with_older_key(test_key("k1", 1))
            .unwrap()
    };
    let stores = [
        DieselStore::open(db.options_with(rotated_ring()))
            .await
            .unwrap(),
        DieselStore::open(db.options_with(rotated_ring()))
            .await
            .unwrap(),
    ];
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2 * RESEALS_PER_STORE));
    let mut tasks = Vec::new();
    for store in &stores {
        for _ in 0..RESEALS_PER_STORE {
            let (store, barrier) = (store.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store.reseal_credentials().await
            }));
        }
    }
    let mut counts = Vec::new();
    for task in tasks {
        counts.push(
            task.await
                .unwrap()
                .expect("every concurrent reseal succeeds"),
        );
    }
    assert_eq!(
        counts.iter().sum::<usize>(),
        RESEAL_ROWS,
        "every row resealed exactly once across the concurrent runs: {counts:?}"
    );
    assert_eq!(stores[0].reseal_credentials().await.unwrap(), 0);
    drop(stores);

    // The old key is no longer needed for any row.
    let only_new = DieselStore::open(db.options_with(Keyring::new(test_key("k2", 2))))
        .await
        .unwrap();
    let resealed = only_new.list_credentials().await.unwrap();
    assert_eq!(resealed.len(), RESEAL_ROWS);
    for (after, before) in resealed.iter().zip(&originals) {
        assert_eq!((after.id, &after.name), (before.id, &before.name));
        assert_eq!(after.key_id, "k2");
        assert_eq!(
            after.auth, before.auth,
            "{} decrypts to its secret",
            after.name
        );
    }
}

/// A reseal writes only the secret, compared against what it read: an update that lands
/// between its read and its write is kept. A raw transaction renames the row and holds its
/// lock; on PostgreSQL the reseal reads the committed row, waits on that lock, and must then
/// leave the new name in place (the old reseal rewrote every column from its stale read and
/// lost the rename). On SQLite the reseal waits for the write lock before reading.
async fn reseal_keeps_a_concurrent_update(db: TestDb) {
    let store = db.open().await;
    let creds = store
        .create_credentials(pat("before", "ghp_before"))
        .await
        .unwrap();
    drop(store);
    let rotated = DieselStore::open(
        db.options_with(
            Keyring::new(test_key("k2", 2))
                .with_older_key(test_key("k1", 1))
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    let rename = HeldTransaction::begin(
        &db,
        &format!(
            "UPDATE credentials SET name = 'after' WHERE id = '{}'",
            creds.id
        ),
    )
    .await;
    let reseal = tokio::spawn({
        let rotated = rotated.clone();
        async move { rotated.reseal_credentials().await }
    });
    if db.backend == Backend::Postgres {
        assert!(
            lock_waiter_seen(&db, || reseal.is_finished()).await,
            "the reseal never waited for the rename's row lock"
        );
    }
    rename.commit().await;
    assert_eq!(reseal.await.unwrap().unwrap(), 1);
    let now = rotated.get_credentials(creds.id).await.unwrap();
    assert_eq!(now.name, "after", "the concurrent rename is kept");
    assert_eq!(now.auth, creds.auth);
    assert_eq!(now.key_id, "k2");
}

async fn secrets_are_redacted_in_debug(db: TestDb) {
    let store = db.open().await;
    let token = store
        .create_credentials(pat("pat", "ghp_debug_visible"))
        .await
        .unwrap();
    let app_creds = store.create_credentials(app("app")).await.unwrap();
    let text = format!(
        "{token:?} {app_creds:?} {:?}",
        store.list_credentials().await.unwrap()
    );
    assert!(!text.contains("ghp_debug_visible"), "{text}");
    assert!(!text.contains("secret-app-key"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
}

/// Issue 31 item 4: `trust_roots = "system"` is kept with the endpoint (a migration adds the
/// column, false for rows from before it) and follows an update.
async fn system_trust_is_stored_and_updated(db: TestDb) {
    let store = db.open().await;
    let mut system = pat("ghes", "ghp_x");
    system.endpoint.system_trust = true;
    let stored = store.create_credentials(system.clone()).await.unwrap();
    assert!(stored.endpoint.system_trust);
    assert_eq!(
        store.get_credentials(stored.id).await.unwrap().endpoint,
        system.endpoint
    );
    let built_in = store
        .create_credentials(pat("dotcom", "ghp_y"))
        .await
        .unwrap();
    assert!(
        !store
            .get_credentials(built_in.id)
            .await
            .unwrap()
            .endpoint
            .system_trust
    );
    system.endpoint.system_trust = false;
    store.update_credentials(stored.id, system).await.unwrap();
    assert!(
        !store
            .get_credentials(stored.id)
            .await
            .unwrap()
            .endpoint
            .system_trust
    );
}

/// An App may be named by its client id (`Iv23li…`) instead of its App ID: the store keeps
/// which one was given, a replacement switches cleanly between the two, and a row written
/// before the `client_id` column existed (an `app_id`, `client_id` NULL) loads as it did. A
/// row naming the App both ways is corrupt, not silently read one way.
async fn an_app_named_by_client_id_is_stored_and_a_row_of_the_app_id_shape_still_loads(db: TestDb) {
    let store = db.open().await;
    let by_client_id = || {
        let mut new = app("by-client-id");
        new.auth = Auth::App {
            app: AppIdentity::ClientId(ClientId::parse("Iv23liABCDEF12345678").unwrap()),
            installation_id: 67890,
            private_key: SecretString::from(
                "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n",
            ),
        };
        new
    };
    let stored = store.create_credentials(by_client_id()).await.unwrap();
    assert_eq!(stored.auth, by_client_id().auth);
    assert_eq!(store.get_credentials(stored.id).await.unwrap(), stored);

    // Replaced by an App ID, and back: the other column is cleared each time.
    let mut by_app_id = by_client_id();
    by_app_id.auth = app("x").auth;
    store
        .update_credentials(stored.id, by_app_id.clone())
        .await
        .unwrap();
    assert_eq!(
        store.get_credentials(stored.id).await.unwrap().auth,
        by_app_id.auth
    );
    store
        .update_credentials(stored.id, by_client_id())
        .await
        .unwrap();
    assert_eq!(
        store.get_credentials(stored.id).await.unwrap().auth,
        by_client_id().auth
    );

    // The shape every App row had before the migration: app_id set, client_id NULL.
    raw_sql(
        &db,
        &format!(
            "UPDATE credentials SET app_id = 4242, client_id = NULL WHERE id = '{}'",
            stored.id
        ),
    )
    .await;
    let Auth::App { app, .. } = store.get_credentials(stored.id).await.unwrap().auth else {
        panic!("an App row loads as an App");
    };
    assert_eq!(app, AppIdentity::Id(4242));

    raw_sql(
        &db,
        &format!(
            "UPDATE credentials SET client_id = 'Iv23liABCDEF' WHERE id = '{}'",
            stored.id
        ),
    )
    .await;
    let both = store.get_credentials(stored.id).await.unwrap_err();
    assert!(
        matches!(
            both,
            Error::Corrupt {
                column: "client_id",
                ..
            }
        ),
        "{both:?}"
    );
}
