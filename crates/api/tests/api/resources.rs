//! The resources with a valid token: controller info, credentials (secrets write-only, sealed
//! at rest), entities, and the instance routes on an empty store.

use scaleset_store::CredentialStore as _;
use scaleset_store::ExposeSecret as _;
use serde_json::json;

use crate::helpers::{App, Backend, CONTROLLER, backend_tests};

/// A real RSA key (the client tests' App key): the API parses App keys as the client does.
const PEM_KEY: &str = include_str!("../../../github/tests/client/data/test-app-key.pem");
/// A run of the key's body, which no answer may contain.
fn key_body() -> &'static str {
    PEM_KEY.lines().nth(1).expect("a PEM body line")
}

async fn controller_info_names_the_identity(backend: Backend) {
    let app = App::start(backend, "controller_info_names_the_identity").await;
    let answer = app.call("GET", "/api/v1/controller", None).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json["id"], CONTROLLER.to_string());
    assert_eq!(answer.json["version"], env!("CARGO_PKG_VERSION"));
    // DESIGN §3: all 32 hex digits of the id.
    assert_eq!(
        answer.json["owner_label"],
        format!("scaleset-owner-{}", CONTROLLER.simple())
    );
    assert_eq!(answer.json["owner_label_enabled"], true);
    assert_eq!(
        answer.json["session_owner"],
        format!("scaleset-{CONTROLLER}")
    );
}

async fn credentials_secrets_are_write_only(backend: Backend) {
    let app = App::start(backend, "credentials_secrets_are_write_only").await;
    let pat = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(json!({"name": "main", "auth": {"kind": "pat", "token": "ghp_TOPSECRET"}})),
        )
        .await;
    assert_eq!(pat.status, 201, "{pat:?}");
    assert_eq!(pat.json["kind"], "pat");
    assert_eq!(pat.json["endpoint"]["base_url"], "https://github.com");
    assert_eq!(
        pat.json["endpoint"]["api_base_url"],
        "https://api.github.com"
    );
    let app_creds = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(json!({
                "name": "ghes-app",
                "auth": {"kind": "app", "app_id": 12, "installation_id": 34, "private_key": PEM_KEY},
                "endpoint": {"base_url": "https://ghes.example.com/"},
            })),
        )
        .await;
    assert_eq!(app_creds.status, 201, "{app_creds:?}");
    assert_eq!(app_creds.json["kind"], "app");
    assert_eq!(app_creds.json["app_id"], 12);
    assert_eq!(app_creds.json["installation_id"], 34);
    assert_eq!(
        app_creds.json["endpoint"]["api_base_url"],
        "https://ghes.example.com/api/v3"
    );
    let id = pat.json["id"].as_str().unwrap().to_owned();

    let listed = app.call("GET", "/api/v1/credentials", None).await;
    let shown = app
        .call("GET", &format!("/api/v1/credentials/{id}"), None)
        .await;
    for answer in [&pat, &app_creds, &listed, &shown] {
        assert!(
            !answer.text.contains("TOPSECRET"),
            "a secret was returned: {}",
            answer.text
        );
        assert!(
            !answer.text.contains(key_body()),
            "a key was returned: {}",
            answer.text
        );
    }
    let names: Vec<&str> = listed.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["ghes-app", "main"]);
    // The store keeps the secret (sealed; decrypted on read).
    let stored = app.store.get_credentials_by_name("main").await.unwrap();
    assert!(
        matches!(&stored.auth, scaleset_store::Auth::Pat { token } if token.expose_secret() == "ghp_TOPSECRET")
    );

    // Replace (the secret given again), then delete.
    let replaced = app
        .call(
            "PUT",
            &format!("/api/v1/credentials/{id}"),
            Some(json!({"name": "main2", "auth": {"kind": "pat", "token": "ghp_NEW"}})),
        )
        .await;
    assert_eq!(replaced.status, 200, "{replaced:?}");
    assert_eq!(replaced.json["name"], "main2");
    assert!(!replaced.text.contains("ghp_NEW"));
    let deleted = app
        .call("DELETE", &format!("/api/v1/credentials/{id}"), None)
        .await;
    assert_eq!(deleted.status, 204);
    app.call("GET", &format!("/api/v1/credentials/{id}"), None)
        .await
        .error(404, "not_found");
    app.call("DELETE", &format!("/api/v1/credentials/{id}"), None)
        .await
        .error(404, "not_found");
}

/// A GitHub App may be named by its client id (`Iv23li…`) instead of its App ID: created,
/// shown, listed and replaced with the client id as given (and no `app_id`), the key never
/// answered; both names or neither is a 400 naming the field.
async fn an_app_named_by_its_client_id_round_trips_without_its_key(backend: Backend) {
    let app = App::start(
        backend,
        "an_app_named_by_its_client_id_round_trips_without_its_key",
    )
    .await;
    let body = |auth: serde_json::Value| json!({"name": "by-client-id", "auth": auth});
    let created = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(body(json!({
                "kind": "app", "client_id": "Iv23liABCDEF12345678", "installation_id": 34,
                "private_key": PEM_KEY,
            }))),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.json["kind"], "app");
    assert_eq!(created.json["client_id"], "Iv23liABCDEF12345678");
    assert!(created.json.get("app_id").is_none(), "{created:?}");
    assert_eq!(created.json["installation_id"], 34);
    let id = created.json["id"].as_str().unwrap().to_owned();
    let shown = app
        .call("GET", &format!("/api/v1/credentials/{id}"), None)
        .await;
    assert_eq!(shown.json, created.json);
    let listed = app.call("GET", "/api/v1/credentials", None).await;
    assert_eq!(listed.json["items"][0], created.json);
    let stored = app
        .store
        .get_credentials_by_name("by-client-id")
        .await
        .unwrap();
    assert!(matches!(
        &stored.auth,
        scaleset_store::Auth::App { app: scaleset_store::AppIdentity::ClientId(c), .. }
            if c.as_str() == "Iv23liABCDEF12345678"
    ));

    // Replaced by the App ID: the client id is gone from the answer.
    let by_id = app
        .call(
            "PUT",
            &format!("/api/v1/credentials/{id}"),
            Some(body(json!({
                "kind": "app", "app_id": 12, "installation_id": 34, "private_key": PEM_KEY,
            }))),
        )
        .await;
    assert_eq!(by_id.status, 200, "{by_id:?}");
    assert_eq!(by_id.json["app_id"], 12);
    assert!(by_id.json.get("client_id").is_none(), "{by_id:?}");
    for answer in [&created, &shown, &listed, &by_id] {
        assert!(
            !answer.text.contains(key_body()),
            "a key was returned: {}",
            answer.text
        );
        assert!(!answer.text.contains("PRIVATE KEY"), "{}", answer.text);
    }

    // Both names, neither, or a client id that cannot be one.
    let refused = |auth: serde_json::Value| {
        let app = &app;
        async move {
            app.call("POST", "/api/v1/credentials", Some(body(auth)))
                .await
        }
    };
    let both = refused(json!({
        "kind": "app", "app_id": 12, "client_id": "Iv23liABCDEF", "installation_id": 34,
        "private_key": PEM_KEY,
    }))
    .await;
    assert!(
        both.error(400, "invalid_input").contains("auth.client_id"),
        "{both:?}"
    );
    let neither =
        refused(json!({"kind": "app", "installation_id": 34, "private_key": PEM_KEY})).await;
    assert!(
        neither.error(400, "invalid_input").contains("auth.app_id"),
        "{neither:?}"
    );
    let spaced = refused(json!({
        "kind": "app", "client_id": "Iv23li ABC", "installation_id": 34, "private_key": PEM_KEY,
    }))
    .await;
    assert!(
        spaced
            .error(400, "invalid_input")
            .contains("auth.client_id"),
        "{spaced:?}"
    );
    for answer in [&both, &neither, &spaced] {
        assert!(!answer.text.contains(key_body()), "{}", answer.text);
    }
}

async fn entities_of_every_kind(backend: Backend) {
    let app = App::start(backend, "entities_of_every_kind").await;
    app.call(
        "POST",
        "/api/v1/credentials",
        Some(json!({"name": "main", "auth": {"kind": "pat", "token": "ghp_x"}})),
    )
    .await;
    let mut ids = Vec::new();
    for (kind, name) in [
        ("organization", "acme"),
        ("repository", "acme/widgets"),
        ("enterprise", "acme-corp"),
    ] {
        let answer = app
            .call(
                "POST",
                "/api/v1/entities",
                Some(json!({"kind": kind, "name": name, "credentials": "main"})),
            )
            .await;
        assert_eq!(answer.status, 201, "{answer:?}");
        assert_eq!(answer.json["kind"], kind);
        assert_eq!(answer.json["name"], name);
        assert_eq!(answer.json["credentials"], "main");
        ids.push(answer.json["id"].as_str().unwrap().to_owned());
    }
    let listed = app.call("GET", "/api/v1/entities", None).await;
    let kinds: Vec<&str> = listed.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["enterprise", "organization", "repository"]);
    let shown = app
        .call("GET", &format!("/api/v1/entities/{}", ids[1]), None)
        .await;
    assert_eq!(shown.json["name"], "acme/widgets");
    for id in &ids {
        assert_eq!(
            app.call("DELETE", &format!("/api/v1/entities/{id}"), None)
                .await
                .status,
            204
        );
    }
    assert_eq!(
        app.call("GET", "/api/v1/entities", None).await.json["items"],
        json!([])
    );
    app.call("GET", &format!("/api/v1/entities/{}", ids[0]), None)
        .await
        .error(404, "not_found");
}

async fn instances_on_an_empty_store(backend: Backend) {
    let app = App::start(backend, "instances_on_an_empty_store").await;
    let all = app.call("GET", "/api/v1/instances", None).await;
    assert_eq!(
        (all.status, &all.json),
        (200, &json!({"items": [], "next_cursor": null}))
    );
    app.call("GET", "/api/v1/instances/linux-abcdefgh", None)
        .await
        .error(404, "not_found");
    app.call(
        "GET",
        &format!("/api/v1/scale-sets/{}/instances", uuid::Uuid::new_v4()),
        None,
    )
    .await
    .error(404, "not_found");
}

backend_tests!(
    controller_info_names_the_identity,
    credentials_secrets_are_write_only,
    an_app_named_by_its_client_id_round_trips_without_its_key,
    entities_of_every_kind,
    instances_on_an_empty_store
);
