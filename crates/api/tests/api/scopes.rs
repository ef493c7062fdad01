//! Scoped API tokens: every route of the API, read from the OpenAPI document (and every
//! `.route(…)` of the route modules must be in that document, so a new route cannot be left
//! out), is called with a `read`, an `operate` and an `admin` token; a scope narrower than the
//! route needs is answered 403 `insufficient_scope` naming both scopes, before anything is
//! written, and any other is let through to the handler.

use scaleset_store::{ApiScope, ApiTokenStore as _, ExposeSecret as _};
use serde_json::Value;

use crate::helpers::{App, Backend, backend_tests};

backend_tests!(every_route_answers_each_scope_as_the_scope_table_says);

/// The scope each route needs, written here independently of the server's table: reading is
/// `read`; the operator's actions on a scale set that exists (and removing an instance) are
/// `operate`; everything else is `admin`.
fn expected(method: &str, path: &str) -> ApiScope {
    if method == "get" {
        return ApiScope::Read;
    }
    match (method, path) {
        ("patch" | "delete", "/api/v1/scale-sets/{id}")
        | ("post", "/api/v1/scale-sets/{id}/drain" | "/api/v1/scale-sets/{id}/retry")
        | ("delete", "/api/v1/instances/{name}") => ApiScope::Operate,
        _ => ApiScope::Admin,
    }
}

/// `path` with each `{placeholder}` replaced by a value that names nothing stored.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
        out.push_str(match &rest[open..close] {
            "{id}" => "6f7d4a0e-8a55-4c1b-9d7e-0a1b2c3d4e5f",
            _ => "nobody",
        });
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

/// The API-token operations of the document: `(method, path, operation)`.
fn api_operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            // An operation with its own `security` takes no API token (the document, the
            // instance-facing routes); the probes are outside /api/v1.
            if path.starts_with("/api/v1/") && operation.get("security").is_none() {
                found.push((method.clone(), path.clone(), operation.clone()));
            }
        }
    }
    found
}

#[test]
fn every_route_of_the_route_modules_is_in_the_document() {
    let doc: Value = serde_json::from_str(&scaleset_api::openapi::json()).expect("the document");
    let documented: Vec<&String> = doc["paths"].as_object().expect("paths").keys().collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/routes");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("src/routes") {
        let path = entry.expect("an entry").path();
        let source = std::fs::read_to_string(&path).expect("a route module");
        // `.route("/scale-sets/{id}", …)` or `.route(\n "/…"`.
        for piece in source.split(".route(").skip(1) {
            let Some(pattern) = piece.trim_start().strip_prefix('"') else {
                continue;
            };
            let pattern = &pattern[..pattern.find('"').expect("a closing quote")];
            // The instance-facing routes take trailing-slash twins; the document names one.
            let pattern = pattern.trim_end_matches('/');
            // The probes are served at the root; every other module under /api/v1.
            let full = if path.ends_with("health.rs") {
                pattern.to_owned()
            } else {
                format!("/api/v1{pattern}")
            };
            assert!(
                documented.iter().any(|d| **d == full),
                "{} routes {full}, which the OpenAPI document does not describe: document it \
                 (utoipa::path) so the scope walk covers it",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(seen > 20, "only {seen} routes found: the scan is broken");
}

async fn every_route_answers_each_scope_as_the_scope_table_says(backend: Backend) {
    let app = App::start(
        backend,
        "every_route_answers_each_scope_as_the_scope_table_says",
    )
    .await;
    let mut tokens = Vec::new();
    for scope in [ApiScope::Read, ApiScope::Operate] {
        let (_, secret) = app
            .store
            .create_scoped_api_token(scope.as_str(), scope)
            .await
            .expect("a scoped token");
        tokens.push((scope, secret.expose_secret().to_owned()));
    }
    tokens.push((ApiScope::Admin, app.token.clone()));
    let listed = app.call("GET", "/api/v1/tokens", None).await;
    let scopes: Vec<(&str, &str)> = listed.json["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(
        scopes,
        [("operate", "operate"), ("read", "read"), ("test", "admin")],
        "the token list shows each token's scope"
    );

    let doc: Value = serde_json::from_str(&scaleset_api::openapi::json()).expect("the document");
    let operations = api_operations(&doc);
    assert!(operations.len() > 25, "{} operations", operations.len());
    let before = app.written().await;
    let mut walked = 0;
    for (method, path, operation) in &operations {
        let needed = expected(method, path);
        assert_eq!(
            operation["x-scaleset-scope"].as_str(),
            Some(needed.as_str()),
            "{method} {path}: the document names the scope it needs"
        );
        if needed > ApiScope::Read {
            assert_eq!(
                operation["responses"]["403"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path}: the document has the 403"
            );
        }
        let url = concrete(path);
        let body = (method != "get").then(|| b"{}".to_vec());
        for (scope, token) in &tokens {
            let answer = app
                .raw(
                    &method.to_uppercase(),
                    &url,
                    Some(&format!("Bearer {token}")),
                    body.clone(),
                    "application/json",
                )
                .await;
            if *scope < needed {
                let message = answer.error(403, "insufficient_scope");
                assert!(
                    message.contains(&format!("has scope `{scope}`"))
                        && message.contains(&format!("needs `{needed}`")),
                    "{method} {path} with {scope}: {message}"
                );
            } else {
                assert_ne!(
                    answer.status, 403,
                    "{method} {path} with {scope} (needs {needed}): {answer:?}"
                );
            }
            walked += 1;
        }
    }
    assert_eq!(walked, operations.len() * 3);
    // The refused calls wrote nothing; the let-through ones named nothing stored, so neither
    // did they (their 404s and 400s).
    assert_eq!(app.written().await, before);
}
