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

fn document() -> serde_json::Value {
    serde_json::from_str(&scaleset_api::openapi::json()).unwrap()
}

fn property<'a>(doc: &'a serde_json::Value, schema: &str, field: &str) -> &'a serde_json::Value {
    let found = &doc["components"]["schemas"][schema]["properties"][field];
    assert!(
        found.is_object(),
        "{schema}.{field} is missing from the document"
    );
    found
}

#[test]
fn evidence_is_an_array_of_the_machines_evidence_names() {
    // The server answers an array (empty before the first ensure) of the adoption machine's
    // evidence names; the document once said `object`.
    let doc = document();
    let evidence = property(&doc, "ScaleSet", "evidence");
    assert_eq!(evidence["type"], "array");
    assert_eq!(evidence["items"]["$ref"], "#/components/schemas/Evidence");
    let names = &doc["components"]["schemas"]["Evidence"];
    assert_eq!(names["type"], "string");
    assert_eq!(
        names["enum"],
        serde_json::json!([
            "CreatedThisRun",
            "StoredId",
            "OwnerLabel",
            "OwnSession",
            "ImportedFrom"
        ])
    );
}

#[test]
fn the_scale_set_list_takes_entity_id_as_an_optional_query_parameter() {
    let doc = document();
    let parameters = &doc["paths"]["/api/v1/scale-sets"]["get"]["parameters"];
    assert_eq!(parameters[0]["name"], "entity_id");
    assert_eq!(parameters[0]["in"], "query");
    assert_eq!(parameters[0]["required"], false);
}

#[test]
fn every_operation_with_a_body_documents_413_and_415() {
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation.get("requestBody").is_none() {
                continue;
            }
            for status in ["400", "413", "415"] {
                assert!(
                    operation["responses"][status].is_object(),
                    "{method} {path} takes a JSON body but does not document its {status}"
                );
            }
        }
    }
}

#[test]
fn the_instance_delete_is_documented_as_asynchronous() {
    let doc = document();
    let responses = &doc["paths"]["/api/v1/instances/{name}"]["delete"]["responses"];
    assert!(responses["202"].is_object());
    assert!(
        responses["200"].is_null(),
        "the delete answers 202, never 200"
    );
}

/// The limits the server enforces (crates/api/src/validate.rs and the routes) are in the
/// schema itself, not only in the descriptions.
#[test]
fn the_input_rules_are_schema_constraints() {
    let doc = document();
    let name = property(&doc, "CreateScaleSet", "name");
    assert_eq!(name["minLength"], 1);
    assert_eq!(name["maxLength"], 100);
    assert!(
        name["pattern"]
            .as_str()
            .is_some_and(|p| p.contains("[A-Za-z0-9._-]"))
    );
    let max_runners = property(&doc, "CreateScaleSet", "max_runners");
    assert_eq!(max_runners["minimum"], 1);
    assert_eq!(max_runners["maximum"], 10_000);
    let timeout = property(&doc, "CreateScaleSet", "bootstrap_timeout_secs");
    assert_eq!(timeout["minimum"], 1);
    assert_eq!(timeout["maximum"], 86_400);
    let labels = property(&doc, "CreateScaleSet", "labels");
    assert_eq!(labels["maxItems"], 50);
    assert_eq!(labels["items"]["maxLength"], 100);
    assert!(labels["items"]["pattern"].is_string());
    let prefix = property(&doc, "CreateScaleSet", "runner_prefix");
    assert_eq!(prefix["maxLength"], 40);
    assert_eq!(
        property(&doc, "UpdateScaleSet", "max_runners")["maximum"],
        10_000
    );
    let credentials = property(&doc, "CreateCredentials", "name");
    assert_eq!(credentials["maxLength"], 64);
    assert!(credentials["pattern"].is_string());
    assert!(property(&doc, "EndpointInput", "base_url")["pattern"].is_string());
    assert_eq!(property(&doc, "CreateEntity", "name")["maxLength"], 201);
}

#[test]
fn every_input_refuses_unknown_fields_in_the_document_too() {
    // The inputs refuse unknown fields (400); the document says so, tagged variants included.
    let doc = document();
    for name in [
        "CreateCredentials",
        "EndpointInput",
        "CreateScaleSet",
        "UpdateScaleSet",
    ] {
        assert_eq!(
            doc["components"]["schemas"][name]["additionalProperties"], false,
            "{name}"
        );
    }
    let variants = doc["components"]["schemas"]["AuthInput"]["oneOf"]
        .as_array()
        .expect("AuthInput is a oneOf");
    assert_eq!(variants.len(), 2);
    for variant in variants {
        assert_eq!(variant["additionalProperties"], false, "{variant}");
    }
}
