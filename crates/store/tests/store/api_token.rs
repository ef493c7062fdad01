//! API tokens: stored hashed, looked up by hash.

use scaleset_store::ExposeSecret as _;
use scaleset_store::{API_TOKEN_PREFIX, ApiScope, ApiTokenStore as _, SecretString};

use crate::helpers::{TestDb, store_tests};

store_tests!(
    api_token_round_trip,
    api_tokens_are_stored_hashed,
    a_token_keeps_the_scope_it_was_made_with,
    a_token_stored_without_a_scope_is_admin
);

async fn a_token_keeps_the_scope_it_was_made_with(db: TestDb) {
    let store = db.open().await;
    for scope in ApiScope::ALL {
        let (record, secret) = store
            .create_scoped_api_token(scope.as_str(), scope)
            .await
            .unwrap();
        assert_eq!(record.scope, scope);
        let found = store.authenticate_api_token(&secret).await.unwrap();
        assert_eq!(found.map(|t| t.scope), Some(scope));
    }
    let listed: Vec<_> = store
        .list_api_tokens()
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.name, t.scope))
        .collect();
    assert_eq!(
        listed,
        [
            ("admin".to_owned(), ApiScope::Admin),
            ("operate".to_owned(), ApiScope::Operate),
            ("read".to_owned(), ApiScope::Read),
        ]
    );
    let (plain, _) = store.create_api_token("unscoped").await.unwrap();
    assert_eq!(plain.scope, ApiScope::Admin, "today's rights by default");
}

/// A row written before the scope column existed (as the migration finds it) is `admin`:
/// upgrading takes no right away from a token in use.
async fn a_token_stored_without_a_scope_is_admin(db: TestDb) {
    let store = db.open().await;
    let text = "sst_written-before-scopes";
    let hash = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let bytes = match db.backend {
        crate::helpers::Backend::Sqlite => format!("X'{hex}'"),
        crate::helpers::Backend::Postgres => format!("decode('{hex}', 'hex')"),
    };
    crate::helpers::raw_sql(
        &db,
        &format!(
            "INSERT INTO api_tokens (id, name, token_hash, created_at) VALUES \
             ('6f7d4a0e-8a55-4c1b-9d7e-0a1b2c3d4e5f', 'old', {bytes}, 0)"
        ),
    )
    .await;
    let found = store
        .authenticate_api_token(&SecretString::from(text))
        .await
        .unwrap()
        .expect("the old token still signs in");
    assert_eq!(found.scope, ApiScope::Admin);
}

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
