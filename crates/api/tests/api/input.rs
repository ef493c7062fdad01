//! Invalid input on every route that takes some — wrong types, missing and unknown fields,
//! bodies over the limit, non-JSON bodies, bad names, bad ids — gets the documented 4xx with
//! the error body, and writes nothing.

use serde_json::{Value, json};

use crate::helpers::{App, Backend, RunningSim, backend_tests};

/// A valid scale-set create body for `entity`, changed by `edit`.
fn scale_set(entity: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut body =
        json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 2});
    edit(&mut body);
    body
}

async fn bad_bodies_are_refused_and_nothing_is_written(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "bad_bodies_are_refused_and_nothing_is_written").await;
    let entity = app.seed(&sim).await;
    let stored = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(scale_set(&entity, |_| {})),
        )
        .await;
    assert_eq!(stored.status, 201, "{stored:?}");
    let id = stored.json["id"].as_str().unwrap().to_owned();
    let credentials_id = app.call("GET", "/api/v1/credentials", None).await.json["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = app.written().await;

    let pat = |name: &str| json!({"name": name, "auth": {"kind": "pat", "token": "ghp_x"}});
    let cases: Vec<(&str, String, Value, u16, &str)> = vec![
        // credentials
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": 5, "auth": {"kind": "pat", "token": "x"}}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"auth": {"kind": "pat", "token": "x"}}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "pat", "token": "x"}, "extra": 1}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "pat", "token": "x", "app_id": 1}}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "password", "token": "x"}}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            pat("has space"),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            pat("-dash"),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            pat(&"a".repeat(65)),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            pat("sim"),
            409,
            "already_exists",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "pat", "token": " "}}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "app", "app_id": 1, "installation_id": 2, "private_key": "not pem"}}),
            400,
            "invalid_input",
        ),
        // PEM-shaped but not a key: the file's door refuses it (the client's parser), so the
        // API's does too.
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "app", "app_id": 1, "installation_id": 2, "private_key": "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWFwcC1rZXk=\n-----END PRIVATE KEY-----\n"}}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "pat", "token": "x"}, "endpoint": {"base_url": "ftp://x"}}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            json!({"name": "a", "auth": {"kind": "pat", "token": "x"}, "endpoint": {"base_url": "https://ghes.example", "ca_bundle": "junk"}}),
            400,
            "invalid_input",
        ),
        (
            "PUT",
            format!("/api/v1/credentials/{credentials_id}"),
            pat("bad name"),
            400,
            "invalid_input",
        ),
        (
            "PUT",
            format!("/api/v1/credentials/{credentials_id}"),
            json!({"name": "sim"}),
            400,
            "invalid_body",
        ),
        (
            "PUT",
            "/api/v1/credentials/not-a-uuid".into(),
            pat("a"),
            400,
            "invalid_parameter",
        ),
        // entities
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "galaxy", "name": "x", "credentials": "sim"}),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "organization", "name": "a b", "credentials": "sim"}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "repository", "name": "noslash", "credentials": "sim"}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "repository", "name": "a/b/c", "credentials": "sim"}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "organization", "name": "x", "credentials": "nope"}),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "organization", "name": "acme", "credentials": "sim"}),
            409,
            "already_exists",
        ),
        (
            "POST",
            "/api/v1/entities".into(),
            json!({"kind": "organization", "name": "x", "credentials": "sim", "id": 1}),
            400,
            "invalid_body",
        ),
        // scale sets
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["max_runners"] = json!("two")),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["max_runners"] = json!(-1)),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["colour"] = json!("red")),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["entity_id"] = json!("nope")),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["name"] = json!("has space")),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["name"] = json!("scaleset-owner-0123")),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["name"] = json!("")),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["labels"] = json!(["a,b"])),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["labels"] = json!(["scaleset-owner-ffff"])),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["max_runners"] = json!(0)),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["min_idle"] = json!(3)),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["extra_specs"] = json!([1])),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["runner_group"] = json!("bad\ngroup")),
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |b| b["adoption_policy"] = json!("sometimes")),
            400,
            "invalid_body",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&uuid::Uuid::new_v4().to_string(), |_| {}),
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            scale_set(&entity, |_| {}),
            409,
            "already_exists",
        ),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{id}"),
            json!({"max_runners": 3}),
            400,
            "invalid_body",
        ),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{id}"),
            json!({"generation": 1, "name": "other"}),
            400,
            "invalid_body",
        ),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{id}"),
            json!({"generation": 1, "max_runners": "3"}),
            400,
            "invalid_body",
        ),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{id}"),
            json!({"generation": 999, "max_runners": 3}),
            409,
            "stale_generation",
        ),
        (
            "PATCH",
            "/api/v1/scale-sets/xyz".into(),
            json!({"generation": 1}),
            400,
            "invalid_parameter",
        ),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{}", uuid::Uuid::new_v4()),
            json!({"generation": 1}),
            404,
            "not_found",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let answer = app.call(method, &path, Some(body.clone())).await;
        answer.error(status, code);
        assert_eq!(
            app.written().await,
            before,
            "{method} {path} {body} wrote something"
        );
    }

    // A valid generation with an invalid value is still refused.
    let generation = stored.json["generation"].as_i64().unwrap();
    let answer = app
        .call(
            "PATCH",
            &format!("/api/v1/scale-sets/{id}"),
            Some(json!({"generation": generation, "min_idle": 5})),
        )
        .await;
    answer.error(400, "invalid_input");

    // Bodies that are not JSON, not declared JSON, or too big.
    let bearer = format!("Bearer {}", app.token);
    for (path, method) in [
        ("/api/v1/credentials", "POST"),
        ("/api/v1/entities", "POST"),
        ("/api/v1/scale-sets", "POST"),
    ] {
        let answer = app
            .raw(
                method,
                path,
                Some(&bearer),
                Some(b"{not json".to_vec()),
                "application/json",
            )
            .await;
        answer.error(400, "invalid_body");
        let answer = app
            .raw(
                method,
                path,
                Some(&bearer),
                Some(b"name=x".to_vec()),
                "text/plain",
            )
            .await;
        answer.error(415, "unsupported_media_type");
        let answer = app.raw(method, path, Some(&bearer), None, "").await;
        answer.error(415, "unsupported_media_type");
        let mut huge = br#"{"name": ""#.to_vec();
        huge.extend(std::iter::repeat_n(b'a', 70 * 1024));
        huge.extend(br#""}"#);
        let answer = app
            .raw(method, path, Some(&bearer), Some(huge), "application/json")
            .await;
        let message = answer.error(413, "payload_too_large");
        assert!(message.contains("65536"), "{message}");
    }
    // Bad ids and parameters on the routes without bodies.
    for (method, path, status, code) in [
        (
            "GET",
            "/api/v1/credentials/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            "/api/v1/credentials/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/entities/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            "/api/v1/entities/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/scale-sets/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            "/api/v1/scale-sets/42".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/scale-sets/42/instances".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/scale-sets?entity_id=nope".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/scale-sets?colour=red".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            format!("/api/v1/scale-sets/{id}?force=maybe"),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            format!("/api/v1/scale-sets/{id}?generation=999"),
            409,
            "stale_generation",
        ),
        (
            "GET",
            "/api/v1/instances/bad%20name".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "GET",
            "/api/v1/instances/nobody-here".to_owned(),
            404,
            "not_found",
        ),
        (
            "DELETE",
            "/api/v1/instances/bad%20name".to_owned(),
            400,
            "invalid_parameter",
        ),
        (
            "DELETE",
            "/api/v1/instances/nobody-here".to_owned(),
            404,
            "not_found",
        ),
        (
            "DELETE",
            format!("/api/v1/credentials/{credentials_id}"),
            409,
            "in_use",
        ),
        (
            "DELETE",
            format!("/api/v1/entities/{entity}"),
            409,
            "in_use",
        ),
        (
            "GET",
            format!("/api/v1/scale-sets/{}", uuid::Uuid::new_v4()),
            404,
            "not_found",
        ),
        ("GET", "/api/v1/nothing-here".to_owned(), 404, "not_found"),
        (
            "PUT",
            "/api/v1/controller".to_owned(),
            405,
            "method_not_allowed",
        ),
    ] {
        let answer = app.call(method, &path, None).await;
        answer.error(status, code);
        assert_eq!(
            app.written().await,
            before,
            "{method} {path} wrote something"
        );
    }
}

backend_tests!(bad_bodies_are_refused_and_nothing_is_written);
