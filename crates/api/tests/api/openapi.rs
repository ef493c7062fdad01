//! The committed `docs/openapi.json` is the document the server serves.

use std::path::PathBuf;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn the_committed_openapi_document_is_current() {
    let current = scaleset_api::openapi::json();
    let path = committed();
    if std::env::var_os("SCALESET_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &current).expect("writing docs/openapi.json");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == current,
        "docs/openapi.json is not the document the server serves; regenerate it with \
         `SCALESET_UPDATE_OPENAPI=1 cargo test -p scaleset-api --test api openapi` and commit it"
    );
}

#[test]
fn the_document_is_openapi_3_1_with_bearer_auth_on_the_api() {
    let doc: serde_json::Value = serde_json::from_str(&scaleset_api::openapi::json()).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
    // The probes are public: their operations override the document's security with none.
    assert_eq!(
        doc["paths"]["/healthz"]["get"]["security"],
        serde_json::json!([{}])
    );
    for path in [
        "/api/v1/controller",
        "/api/v1/credentials",
        "/api/v1/credentials/{id}",
        "/api/v1/entities",
        "/api/v1/entities/{id}",
        "/api/v1/scale-sets",
        "/api/v1/scale-sets/{id}",
        "/api/v1/scale-sets/{id}/instances",
        "/api/v1/instances",
        "/api/v1/instances/{name}",
    ] {
        let item = &doc["paths"][path];
        assert!(item.is_object(), "{path} is missing from the document");
        for (method, operation) in item.as_object().unwrap() {
            assert!(
                operation.get("security").is_none(),
                "{method} {path} must inherit the bearer requirement"
            );
            assert!(
                operation["responses"]["401"].is_object(),
                "{method} {path} does not document its 401"
            );
        }
    }
}
