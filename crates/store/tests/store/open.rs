//! Opening a store: URL forms, and loud failures when the database cannot be reached.

use scaleset_store::{DatabaseUrl, DieselStore, Error, Keyring, StoreOptions};

use crate::helpers::test_key;

#[test]
fn database_urls_parse_and_redact() {
    use scaleset_store::DatabaseUrl;
    assert_eq!(
        DatabaseUrl::parse("sqlite:///var/lib/scaleset/db.sqlite").unwrap(),
        DatabaseUrl::Sqlite {
            path: "/var/lib/scaleset/db.sqlite".into()
        }
    );
    assert_eq!(
        DatabaseUrl::parse("sqlite:rel.db").unwrap(),
        DatabaseUrl::Sqlite {
            path: "rel.db".into()
        }
    );
    assert!(DatabaseUrl::parse("sqlite::memory:").is_err());
    assert!(DatabaseUrl::parse("mysql://x").is_err());
    let pg = DatabaseUrl::parse("postgresql://user:hunter2@db:5432/scaleset").unwrap();
    assert_eq!(pg.backend(), "postgres");
    assert_eq!(pg.to_string(), "postgresql://user:***@db:5432/scaleset");
    assert!(!format!("{pg:?}").contains("hunter2"));
    // libpq also takes the password as a query parameter.
    let query = DatabaseUrl::parse(
        "postgres://user@db/scaleset?sslmode=require&password=hunter2&connect_timeout=5",
    )
    .unwrap();
    assert_eq!(
        query.to_string(),
        "postgres://user@db/scaleset?sslmode=require&password=***&connect_timeout=5"
    );
    assert!(!format!("{query:?}").contains("hunter2"));
    assert_eq!(
        DatabaseUrl::parse("postgres://u:hunter2@db?password=hunter2")
            .unwrap()
            .to_string(),
        "postgres://u:***@db?password=***"
    );
    let err = DatabaseUrl::parse("mysql://user:hunter2@db/x")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("hunter2"), "{err}");
}

/// Opens a store at `url`, which must fail with [`Error::Connect`] naming `backend`; the error.
async fn connect_error(url: DatabaseUrl, backend: &str) -> Error {
    let err = DieselStore::open(StoreOptions::new(url, Keyring::new(test_key("k1", 1))))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Connect { backend: b, .. } if *b == backend),
        "not a {backend} connect error: {err:?}"
    );
    err
}

#[tokio::test]
async fn unreachable_postgres_is_a_connect_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = DatabaseUrl::parse(&format!("postgres://postgres:pw@127.0.0.1:{port}/none")).unwrap();
    let err = connect_error(url, "postgres").await;
    let message = err.to_string();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(
        !message.contains("pw"),
        "the password is redacted: {message}"
    );
}

#[tokio::test]
async fn sqlite_in_a_missing_directory_is_a_connect_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("scaleset.db");
    let url = DatabaseUrl::parse(&format!("sqlite://{}", path.display())).unwrap();
    let err = connect_error(url, "sqlite").await;
    assert!(err.to_string().contains("missing"), "{err}");
}
