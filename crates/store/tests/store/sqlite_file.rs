//! Checks on the SQLite database file itself: secrets never reach its bytes; WAL and
//! foreign keys are on.

use diesel::{Connection as _, RunQueryDsl as _};
use scaleset_store::{Auth, CredentialStore as _, Endpoint, NewCredentials, SecretString};

use crate::helpers::{Backend, TestDb, pat};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_database_file() {
    let db = TestDb::create(Backend::Sqlite, "secrets_never_reach_the_database_file")
        .await
        .unwrap();
    let store = db.open().await;
    store
        .create_credentials(pat("findable-credentials-name", "ghp_PLAINTEXT_PAT_4242"))
        .await
        .unwrap();
    let creds = store
        .create_credentials(NewCredentials {
            name: "app".into(),
            endpoint: Endpoint::github_com(),
            auth: Auth::App {
                app: scaleset_store::AppIdentity::Id(1),
                installation_id: 2,
                private_key: SecretString::from("PLAINTEXT-PRIVATE-KEY-BODY"),
            },
        })
        .await
        .unwrap();
    store
        .update_credentials(creds.id, pat("app", "ghp_PLAINTEXT_REPLACED"))
        .await
        .unwrap();

    let path = db.sqlite_path.clone().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let wal = path.with_extension("db-wal");
    assert!(
        wal.exists(),
        "WAL mode keeps a -wal file while the store is open"
    );
    bytes.extend(std::fs::read(&wal).unwrap());
    let contains = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    // The search works: a non-secret value written the same way is found.
    assert!(contains("findable-credentials-name"));
    for secret in [
        "ghp_PLAINTEXT_PAT_4242",
        "PLAINTEXT-PRIVATE-KEY-BODY",
        "ghp_PLAINTEXT_REPLACED",
    ] {
        assert!(!contains(secret), "{secret} found in the database file");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_use_wal_and_enforce_foreign_keys() {
    let db = TestDb::create(
        Backend::Sqlite,
        "connections_use_wal_and_enforce_foreign_keys",
    )
    .await
    .unwrap();
    let _store = db.open().await;
    let path = db.sqlite_path.clone().unwrap();
    let mode = tokio::task::spawn_blocking(move || {
        #[derive(diesel::QueryableByName)]
        struct Mode {
            #[diesel(sql_type = diesel::sql_types::Text)]
            journal_mode: String,
        }
        let mut conn = diesel::SqliteConnection::establish(path.to_str().unwrap()).unwrap();
        let rows: Vec<Mode> = diesel::sql_query("PRAGMA journal_mode")
            .load(&mut conn)
            .unwrap();
        rows.into_iter().next().unwrap().journal_mode
    })
    .await
    .unwrap();
    assert_eq!(mode, "wal");
    // Foreign keys: an entity naming unknown credentials is refused (this would succeed
    // with SQLite's default of foreign_keys = OFF).
    let err = scaleset_store::EntityStore::create_entity(
        &_store,
        scaleset_store::NewEntity {
            kind: scaleset_store::EntityKind::Organization { name: "x".into() },
            credentials_id: scaleset_store::CredentialsId::generate(),
        },
    )
    .await
    .unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
}

/// While a write waits for another writer's lock, the runtime keeps running other tasks: the
/// diesel call runs on a blocking thread. Were it run on the (single) runtime thread, the
/// write would be polled first, block that thread until the busy timeout, and fail with
/// "database is locked" before the lock is ever released.
#[tokio::test(flavor = "current_thread")]
async fn waiting_writes_do_not_block_the_runtime() {
    use scaleset_store::EventStore as _;
    let db = TestDb::create(Backend::Sqlite, "waiting_writes_do_not_block_the_runtime")
        .await
        .unwrap();
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "lock").await;

    let path = db.sqlite_path.clone().unwrap();
    let (locked_tx, locked_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        use diesel::connection::SimpleConnection as _;
        let mut conn = diesel::SqliteConnection::establish(path.to_str().unwrap()).unwrap();
        conn.batch_execute("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        conn.batch_execute("COMMIT").unwrap();
    });
    locked_rx.await.unwrap();

    let write = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .append_event(
                    scale_set.id,
                    scaleset_store::ReasonCode::Declared,
                    "for the lock",
                )
                .await
        }
    });
    // This task runs only if the runtime thread is free while the write waits.
    let other = tokio::spawn(async { "ran" });
    assert_eq!(other.await.unwrap(), "ran");
    assert!(
        !write.is_finished(),
        "the write cannot finish while the lock is held"
    );
    release_tx.send(()).unwrap();
    let event = write
        .await
        .unwrap()
        .expect("the write succeeds once the lock is released");
    assert_eq!(event.code, scaleset_store::ReasonCode::Declared);
    holder.join().unwrap();
}
