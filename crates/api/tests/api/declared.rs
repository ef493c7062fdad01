//! One source of truth for the fleet: a scale set the server's configuration file declares is
//! read-only through the API for its spec (409 `declared`, naming the file and the key to
//! edit), while drain and enable go through; the list, the status page and the metrics count
//! the scale sets that are declared nowhere (lost on a database loss).

use scaleset_fleet::{ConfiguredFleet, DeclaredScaleSet, Fleet};
use scaleset_store::{EntityKind, RawScaleSetSpec, ScaleSetSpec};
use serde_json::{Value, json};

use crate::helpers::{App, Backend, backend_tests};

const FILE: &str = "/etc/scaleset/server.toml";

fn declared(name: &str, enabled: bool) -> DeclaredScaleSet {
    DeclaredScaleSet {
        credentials: "gh".to_owned(),
        entity: EntityKind::Organization {
            name: "acme".to_owned(),
        },
        spec: ScaleSetSpec::parse(RawScaleSetSpec {
            name: Some(name.to_owned()),
            provider: Some("fake".to_owned()),
            enabled: Some(enabled),
            ..RawScaleSetSpec::default()
        })
        .expect("a valid spec"),
        takeover: None,
    }
}

/// Credentials (never called: nothing here reaches GitHub) and organization `acme`.
async fn entity(app: &App) -> String {
    let credentials = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(json!({"name": "gh", "auth": {"kind": "pat", "token": "ghp_unused"},
                        "endpoint": {"base_url": "http://127.0.0.1:9", "api_base_url": "http://127.0.0.1:9/api/v3"}})),
        )
        .await;
    assert_eq!(credentials.status, 201, "{credentials:?}");
    let entity = app
        .call(
            "POST",
            "/api/v1/entities",
            Some(json!({"kind": "organization", "name": "acme", "credentials": "gh"})),
        )
        .await;
    assert_eq!(entity.status, 201, "{entity:?}");
    entity.json["id"].as_str().expect("entity id").to_owned()
}

async fn create(app: &App, entity: &str, name: &str, enabled: bool) -> Value {
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(json!({"entity_id": entity, "name": name, "provider": "fake", "max_runners": 10, "enabled": enabled})),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    created.json
}

async fn patch(app: &App, set: &Value, change: Value) -> crate::helpers::Answer {
    let id = set["id"].as_str().expect("id");
    let current = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    let mut body = change;
    body["generation"] = current.json["generation"].clone();
    app.call("PATCH", &format!("/api/v1/scale-sets/{id}"), Some(body))
        .await
}

/// Raising a declared set's `max_runners` through the API was stored, and the next start's
/// apply of the file reverted it without a word. Now it is refused, naming the file and the
/// key; draining (and enabling again, where the file does not disable the set) goes through.
async fn a_declared_scale_set_refuses_spec_updates_naming_the_file_and_key_but_drains(
    backend: Backend,
) {
    let app = App::start_with(
        backend,
        "a_declared_scale_set_refuses_spec_updates_naming_the_file_and_key_but_drains",
        ConfiguredFleet {
            file: FILE.to_owned(),
            fleet: Fleet {
                credentials: Vec::new(),
                scale_sets: vec![declared("linux", true), declared("off", false)],
            },
        },
    )
    .await;
    let entity = entity(&app).await;
    let linux = create(&app, &entity, "linux", true).await;
    let off = create(&app, &entity, "off", false).await;
    let adhoc = create(&app, &entity, "adhoc", true).await;
    assert_eq!(linux["declared"], true, "{linux}");
    assert_eq!(adhoc["declared"], false, "{adhoc}");

    let before = app.written().await;
    let refused = patch(&app, &linux, json!({"max_runners": 20, "labels": ["gpu"]})).await;
    let message = refused.error(409, "declared");
    assert!(
        message.contains(FILE)
            && message.contains("scale_set[0].max_runners")
            && message.contains("scale_set[0].labels"),
        "{message}"
    );
    assert_eq!(
        app.written().await,
        before,
        "a refused update writes nothing"
    );

    // Drain: allowed, and shown disabled.
    let id = linux["id"].as_str().expect("id");
    let drained = app
        .call("POST", &format!("/api/v1/scale-sets/{id}/drain"), None)
        .await;
    assert_eq!(drained.status, 200, "{drained:?}");
    let shown = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(shown.json["spec"]["enabled"], false, "{shown:?}");
    // Enabled again: the file does not disable it.
    let enabled = patch(&app, &linux, json!({"enabled": true})).await;
    assert_eq!(enabled.status, 200, "{enabled:?}");
    assert_eq!(enabled.json["spec"]["enabled"], true, "{enabled:?}");
    // The file disables `off`: enabling it through the API would be reverted.
    let refused = patch(&app, &off, json!({"enabled": true})).await;
    let message = refused.error(409, "declared");
    assert!(message.contains("scale_set[1].enabled"), "{message}");

    // A set made through the API is the API's to change.
    let changed = patch(&app, &adhoc, json!({"max_runners": 20})).await;
    assert_eq!(changed.status, 200, "{changed:?}");
    assert_eq!(changed.json["spec"]["max_runners"], 20, "{changed:?}");
}

/// A set created through the API appeared nowhere as at risk: a database loss took it with
/// no sign. The list marks each set and counts those declared nowhere, and so do the metrics
/// and the status page.
async fn scale_sets_declared_nowhere_are_counted_in_the_list_the_metrics_and_the_page(
    backend: Backend,
) {
    let app = App::start_with(
        backend,
        "scale_sets_declared_nowhere_are_counted_in_the_list_the_metrics_and_the_page",
        ConfiguredFleet {
            file: FILE.to_owned(),
            fleet: Fleet {
                credentials: Vec::new(),
                scale_sets: vec![declared("linux", true)],
            },
        },
    )
    .await;
    let entity = entity(&app).await;
    create(&app, &entity, "linux", true).await;
    create(&app, &entity, "adhoc", true).await;
    create(&app, &entity, "other", true).await;

    let list = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(list.status, 200, "{list:?}");
    assert_eq!(list.json["not_declared"], 2, "{list:?}");
    let declared: Vec<(&str, bool)> = list.json["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|s| {
            (
                s["spec"]["name"].as_str().expect("name"),
                s["declared"].as_bool().expect("declared"),
            )
        })
        .collect();
    assert_eq!(
        declared,
        [("adhoc", false), ("linux", true), ("other", false)]
    );

    let metrics = app.call("GET", "/metrics", None).await;
    assert!(
        metrics
            .text
            .lines()
            .any(|l| l == "scaleset_scale_sets_not_declared 2"),
        "{}",
        metrics.text
    );

    let (status, _, page) = app
        .send(
            "GET",
            "/",
            &[("authorization", &format!("Bearer {}", app.token))],
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"<b id="not-declared">2</b>"#),
        "the page counts them: {page}"
    );
}

/// Regression: after a database loss, a scale set made through the API stayed on GitHub with
/// our owner label (and a live session) and appeared nowhere. It is listed as ours and
/// undeclared, with the two remedies; a set declared in the file or held by the store, and
/// another controller's, are not.
async fn our_scale_sets_on_github_declared_nowhere_are_listed_with_the_remedies(backend: Backend) {
    let sim = crate::helpers::RunningSim::start().await;
    let app = App::start_with(
        backend,
        "our_scale_sets_on_github_declared_nowhere_are_listed_with_the_remedies",
        ConfiguredFleet {
            file: FILE.to_owned(),
            fleet: Fleet {
                credentials: Vec::new(),
                scale_sets: vec![DeclaredScaleSet {
                    credentials: "sim".to_owned(),
                    ..declared("in-file", true)
                }],
            },
        },
    )
    .await;
    let entity = app.seed(&sim).await;
    let ours = scaleset_control::ControllerIdentity::new(crate::helpers::CONTROLLER).owner_label();
    let theirs = "scaleset-owner-9b1d2c3e00004000800000000000beef".to_owned();
    for (name, label) in [
        ("made-by-api", &ours),
        ("in-file", &ours),
        ("in-store", &ours),
        ("their-linux", &theirs),
    ] {
        sim.sim
            .seed_scale_set("acme", 0, name, &["linux".to_owned(), label.clone()])
            .expect("seed");
    }
    create(&app, &entity, "in-store", true).await;

    let answer = app
        .call("GET", "/api/v1/github/ours-undeclared", None)
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let items = answer.json["items"].as_array().expect("items");
    let names: Vec<&str> = items
        .iter()
        .map(|i| i["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["made-by-api"], "{answer:?}");
    let remedy = items[0]["remedy"].as_str().expect("remedy");
    assert!(
        remedy.contains("declare it") && remedy.contains("decommission"),
        "{remedy}"
    );
    assert_eq!(items[0]["entity"], "organization acme");
    assert_eq!(answer.json["unlisted"], json!([]), "{answer:?}");

    // Never only on demand: a scrape starts the background listing, and the gauge and the
    // status page's card then count the one set (not the held, declared or foreign ones).
    scaleset_eventually::eventually(
        "the gauge counts the set that is ours and undeclared",
        || async {
            let metrics = app.call("GET", "/metrics", None).await;
            let listed = metrics
                .text
                .lines()
                .any(|l| l == "scaleset_scale_sets_ours_undeclared 1")
                && metrics
                    .text
                    .lines()
                    .any(|l| l == "scaleset_ours_undeclared_unlisted_entities 0");
            listed.then_some(())
        },
    )
    .await;
    let (status, _, page) = app
        .send(
            "GET",
            "/",
            &[("authorization", &format!("Bearer {}", app.token))],
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"<b id="ours-undeclared">1</b>"#)
            && page.contains("made-by-api (organization acme)"),
        "the page counts and names it: {page}"
    );
}

backend_tests!(
    a_declared_scale_set_refuses_spec_updates_naming_the_file_and_key_but_drains,
    scale_sets_declared_nowhere_are_counted_in_the_list_the_metrics_and_the_page,
    our_scale_sets_on_github_declared_nowhere_are_listed_with_the_remedies,
    a_declared_scale_set_cannot_be_deleted_through_the_api,
    a_declared_sets_missing_runner_download_is_changed_in_the_file,
);

/// A declared set whose platform has no runner download is warned about like any other, but
/// the change it names is the configuration file's (an update through the API is refused),
/// while a set made through the API is told the scalesetctl command.
async fn a_declared_sets_missing_runner_download_is_changed_in_the_file(backend: Backend) {
    use scaleset_store::RunnerDownloadStore as _;
    let mut arm = declared("arm", true);
    arm.spec.set_os_arch(scaleset_store::OsArch::Arm);
    let app = App::start_with(
        backend,
        "a_declared_sets_missing_runner_download",
        ConfiguredFleet {
            file: FILE.to_owned(),
            fleet: Fleet {
                credentials: Vec::new(),
                scale_sets: vec![arm],
            },
        },
    )
    .await;
    let entity = entity(&app).await;
    let linux_x64 = scaleset_store::ToolDownload {
        os: "linux".to_owned(),
        architecture: "x64".to_owned(),
        filename: "actions-runner-linux-x64-2.330.0.tar.gz".to_owned(),
        download_url: "https://example.test/actions-runner-linux-x64-2.330.0.tar.gz".to_owned(),
        sha256_checksum: None,
    };
    app.store
        .record_runner_downloads(
            scaleset_store::EntityId(entity.parse().expect("a uuid")),
            &[linux_x64],
        )
        .await
        .expect("record");
    let mut body = json!({"entity_id": entity, "name": "arm", "provider": "fake", "max_runners": 10, "os_arch": "arm"});
    let declared_set = app
        .call("POST", "/api/v1/scale-sets", Some(body.clone()))
        .await;
    assert_eq!(declared_set.status, 201, "{declared_set:?}");
    assert_eq!(declared_set.json["declared"], true);
    let warning = declared_set.json["warnings"][0]
        .as_str()
        .expect("a warning");
    assert!(warning.contains("have none for linux/arm"), "{warning}");
    assert!(
        warning.contains("linux/amd64 (in the configuration file that declares it)"),
        "{warning}"
    );
    body["name"] = json!("adhoc");
    let adhoc = app.call("POST", "/api/v1/scale-sets", Some(body)).await;
    assert_eq!(adhoc.status, 201, "{adhoc:?}");
    let warning = adhoc.json["warnings"][0].as_str().expect("a warning");
    assert!(
        warning.contains("(scalesetctl scale-set update adhoc --os-type OS --os-arch ARCH"),
        "{warning}"
    );
}

/// Regression: a declared scale set could be deleted through the API, and the next start
/// stored it again. The delete is refused, 409 `declared`, naming the file and the entry to
/// remove, and writes nothing; a set made through the API is still the API's to delete.
async fn a_declared_scale_set_cannot_be_deleted_through_the_api(backend: Backend) {
    let app = App::start_with(
        backend,
        "a_declared_scale_set_cannot_be_deleted_through_the_api",
        ConfiguredFleet {
            file: FILE.to_owned(),
            fleet: Fleet {
                credentials: Vec::new(),
                scale_sets: vec![declared("other", true), declared("linux", false)],
            },
        },
    )
    .await;
    let entity = entity(&app).await;
    let linux = create(&app, &entity, "linux", false).await;
    let adhoc = create(&app, &entity, "adhoc", false).await;
    let before = app.written().await;
    let id = linux["id"].as_str().expect("id");
    let refused = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    let message = refused.error(409, "declared");
    assert!(
        message.contains(FILE) && message.contains("Remove scale_set[1]"),
        "{message}"
    );
    assert_eq!(
        app.written().await,
        before,
        "a refused delete writes nothing"
    );
    let id = adhoc["id"].as_str().expect("id");
    let deleted = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
}
