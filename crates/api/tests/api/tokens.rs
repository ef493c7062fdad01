//! `/api/v1/tokens`: a token created over the API works at once, is listed without its text,
//! and stops working when revoked (by name or id).

use serde_json::json;

use crate::helpers::{App, Backend, backend_tests};

backend_tests!(tokens_are_created_shown_once_and_revoked);

async fn tokens_are_created_shown_once_and_revoked(backend: Backend) {
    let app = App::start(backend, "tokens_are_created_shown_once").await;
    let created = app
        .call("POST", "/api/v1/tokens", Some(json!({"name": "ci"})))
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let secret = created.json["secret"].as_str().expect("secret").to_owned();
    assert!(secret.starts_with("sst_"), "{created:?}");
    let id = created.json["id"].as_str().expect("id").to_owned();

    let with_new = app
        .raw(
            "GET",
            "/api/v1/controller",
            Some(&format!("Bearer {secret}")),
            None,
            "application/json",
        )
        .await;
    assert_eq!(with_new.status, 200, "{with_new:?}");

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

    app.call("POST", "/api/v1/tokens", Some(json!({"name": "ci"})))
        .await
        .error(409, "already_exists");
    app.call("POST", "/api/v1/tokens", Some(json!({"name": "bad name"})))
        .await
        .error(400, "invalid_input");
    app.call(
        "POST",
        "/api/v1/tokens",
        Some(json!({"name": "x", "role": "admin"})),
    )
    .await
    .error(400, "invalid_body");

    let revoked = app.call("DELETE", "/api/v1/tokens/ci", None).await;
    assert_eq!(revoked.status, 200, "{revoked:?}");
    assert_eq!(revoked.json["id"], id);
    let refused = app
        .raw(
            "GET",
            "/api/v1/controller",
            Some(&format!("Bearer {secret}")),
            None,
            "application/json",
        )
        .await;
    refused.error(401, "invalid_token");
    app.call("DELETE", &format!("/api/v1/tokens/{id}"), None)
        .await
        .error(404, "not_found");
}
