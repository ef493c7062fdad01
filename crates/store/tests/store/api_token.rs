//! API tokens: stored hashed, looked up by hash.

use scaleset_store::ExposeSecret as _;
use scaleset_store::{API_TOKEN_PREFIX, ApiTokenStore as _, SecretString};

use crate::helpers::{TestDb, store_tests};

store_tests!(api_token_round_trip, api_tokens_are_stored_hashed);

async fn api_token_round_trip(db: TestDb) {
    let store = db.open().await;
    let (record, secret) = store.create_api_token("ci").await.unwrap();
    assert!(secret.expose_secret().starts_with(API_TOKEN_PREFIX));
    assert!(secret.expose_secret().len() > 40);
    assert!(!format!("{secret:?} {record:?}").contains(secret.expose_secret()));
    assert_eq!(
        store.authenticate_api_token(&secret).await.unwrap(),
        Some(record.clone())
    );
    let wrong = SecretString::from(format!("{}x", secret.expose_secret()));
    assert_eq!(store.authenticate_api_token(&wrong).await.unwrap(), None);
    assert!(
        store
            .create_api_token("ci")
            .await
            .unwrap_err()
            .is_conflict()
    );
    let (other, _) = store.create_api_token("admin").await.unwrap();
    assert_eq!(
        store.list_api_tokens().await.unwrap(),
        vec![other, record.clone()]
    );
    store.revoke_api_token(record.id).await.unwrap();
    assert_eq!(store.authenticate_api_token(&secret).await.unwrap(), None);
    assert!(
        store
            .revoke_api_token(record.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn api_tokens_are_stored_hashed(db: TestDb) {
    let store = db.open().await;
    let (_, secret) = store.create_api_token("hashed").await.unwrap();
    let hash = ring::digest::digest(&ring::digest::SHA256, secret.expose_secret().as_bytes());
    let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    // The column holds exactly the SHA-256 of the token, and the token appears nowhere.
    let matches = crate::helpers::count_rows(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM api_tokens WHERE {}",
            hex_match(&db, &hex)
        ),
    )
    .await;
    assert_eq!(matches, 1);
    let plaintext = crate::helpers::count_rows(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM api_tokens WHERE {} LIKE '%{}%'",
            text_of(&db),
            secret.expose_secret()
        ),
    )
    .await;
    assert_eq!(plaintext, 0);
}

fn hex_match(db: &TestDb, hex: &str) -> String {
    match db.backend {
        crate::helpers::Backend::Sqlite => format!("lower(hex(token_hash)) = '{hex}'"),
        crate::helpers::Backend::Postgres => format!("encode(token_hash, 'hex') = '{hex}'"),
    }
}

fn text_of(db: &TestDb) -> &'static str {
    match db.backend {
        crate::helpers::Backend::Sqlite => "(id || name || CAST(token_hash AS TEXT))",
        crate::helpers::Backend::Postgres => "(id || name || encode(token_hash, 'escape'))",
    }
}
