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

/// Every operation of the document, as `(method, path, operation)`.
fn operations(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            found.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    found
}

/// Code generators name a function after each operation id: a repeated one is refused by
/// openapi-spec-validator and makes generated clients clash.
#[test]
fn every_operation_id_is_present_and_unique() {
    let doc = document();
    let mut seen = std::collections::BTreeMap::new();
    for (method, path, operation) in operations(&doc) {
        let id = operation["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"))
            .to_owned();
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && !id.is_empty(),
            "{method} {path}: operationId {id:?} is not snake_case"
        );
        if let Some(other) = seen.insert(id.clone(), format!("{method} {path}")) {
            panic!("operationId {id:?} is used by both {other} and {method} {path}");
        }
    }
    // Resource-qualified: the two drains and the two plans are told apart by their ids.
    assert_eq!(
        doc["paths"]["/api/v1/workers/{name}/drain"]["post"]["operationId"],
        "drain_worker"
    );
    assert_eq!(
        doc["paths"]["/api/v1/scale-sets/{id}/drain"]["post"]["operationId"],
        "drain_scale_set"
    );
    assert_eq!(
        doc["paths"]["/api/v1/scale-sets"]["get"]["operationId"],
        "list_scale_sets"
    );
}

/// OpenAPI requires a description on every response; generators use it for docstrings.
#[test]
fn every_response_has_a_description() {
    let doc = document();
    let mut empty = Vec::new();
    for (method, path, operation) in operations(&doc) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            if response["description"]
                .as_str()
                .is_none_or(|d| d.trim().is_empty())
            {
                empty.push(format!("{method} {path} {status}"));
            }
        }
    }
    assert!(
        empty.is_empty(),
        "responses without a description: {empty:?}"
    );
}

/// A relative server: clients resolve it against the URL they read the document from.
#[test]
fn the_document_names_its_server_relative_to_where_it_is_served() {
    let doc = document();
    assert_eq!(doc["servers"][0]["url"], "/");
}

/// A parameter said to be in the path is a `{name}` of that path, and each `{name}` has one
/// (openapi-spec-validator refuses the document otherwise; the unit file's query parameter was
/// once documented as a path parameter).
#[test]
fn path_parameters_are_exactly_the_paths_placeholders() {
    let doc = document();
    for (method, path, operation) in operations(&doc) {
        let placeholders: std::collections::BTreeSet<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let in_path: std::collections::BTreeSet<&str> = operation["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(in_path, placeholders, "{method} {path}: path parameters");
    }
}

/// Every list that can grow is paged: `limit` (1 to 1000) and `cursor` in the query,
/// `next_cursor` in the answer.
#[test]
fn the_lists_take_a_limit_and_a_cursor_and_answer_the_next_cursor() {
    let doc = document();
    for (path, list) in [
        ("/api/v1/scale-sets", "ScaleSetList"),
        ("/api/v1/scale-sets/{id}/instances", "InstanceList"),
        ("/api/v1/instances", "InstanceList"),
        ("/api/v1/entities", "EntityList"),
        ("/api/v1/credentials", "CredentialsList"),
        ("/api/v1/tokens", "TokenList"),
    ] {
        let parameters = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("GET {path} has no parameters"))
            .clone();
        let named = |name: &str| {
            parameters
                .iter()
                .find(|p| p["name"] == name && p["in"] == "query")
                .unwrap_or_else(|| panic!("GET {path} has no query parameter {name}"))
                .clone()
        };
        assert!(
            doc["paths"][path]["get"]["responses"]["400"].is_object(),
            "GET {path} refuses a bad limit or cursor with 400, undocumented"
        );
        let limit = named("limit");
        assert_eq!(limit["schema"]["minimum"], 1, "{path}");
        assert_eq!(limit["schema"]["maximum"], 1000, "{path}");
        assert_eq!(named("cursor")["schema"]["type"], "string", "{path}");
        assert_eq!(
            property(&doc, list, "next_cursor")["type"],
            serde_json::json!(["string", "null"]),
            "{list}"
        );
    }
}
