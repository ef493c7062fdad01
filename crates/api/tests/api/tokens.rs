//! `/api/v1/tokens`: tokens are listed without their text and stop working when revoked (by
//! name or id); none can be created over the API.

use scaleset_store::ApiTokenStore as _;
use scaleset_store::ExposeSecret as _;
use serde_json::json;

use crate::helpers::{App, Backend, backend_tests};

backend_tests!(tokens_are_listed_and_revoked_but_not_minted);

async fn tokens_are_listed_and_revoked_but_not_minted(backend: Backend) {
    let app = App::start(backend, "tokens_are_listed_and_revoked").await;
    let (ci, secret) = app.store.create_api_token("ci").await.unwrap();
    let secret = secret.expose_secret().to_owned();
    assert_eq!(with(&app, &secret).await.status, 200);

    let listed = app.call("GET", "/api/v1/tokens", None).await;
    assert_eq!(listed.status, 200);
    let names: Vec<&str> = listed.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ci", "test"]);
    assert!(
        !listed.text.contains(&secret[4..]),
        "a listed token shows no text"
    );

    // A stolen token cannot mint others to outlive its revocation.
    app.call("POST", "/api/v1/tokens", Some(json!({"name": "mine"})))
        .await
        .error(405, "method_not_allowed");

    let revoked = app.call("DELETE", "/api/v1/tokens/ci", None).await;
    assert_eq!(revoked.status, 200, "{revoked:?}");
    assert_eq!(revoked.json["id"], ci.id.to_string());
    with(&app, &secret).await.error(401, "invalid_token");
    app.call("DELETE", &format!("/api/v1/tokens/{}", ci.id), None)
        .await
        .error(404, "not_found");
    // By id too.
    let (other, _) = app.store.create_api_token("other").await.unwrap();
    let by_id = app
        .call("DELETE", &format!("/api/v1/tokens/{}", other.id), None)
        .await;
    assert_eq!(
        (by_id.status, by_id.json["name"].as_str()),
        (200, Some("other"))
    );
}

async fn with(app: &App, token: &str) -> crate::helpers::Answer {
    app.raw(
        "GET",
        "/api/v1/controller",
        Some(&format!("Bearer {token}")),
        None,
        "application/json",
    )
    .await
}
