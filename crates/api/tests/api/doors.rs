//! The API's doors for a scale-set spec and an endpoint, fed the workspace's shared bad specs
//! (`scaleset_store::test_util::bad_specs`): create, update, plan and apply must each answer
//! `400 invalid_input` naming exactly the problems the one spec parser reports (issue 29 item
//! 9), refuse a provider the server does not have (item 11), keep a credential's endpoint when
//! a replacement gives none (item 10), and derive a GHE.com API URL as the client does (item 12).

use scaleset_store::test_util::{BadSpec, bad_specs};
use scaleset_store::{CredentialStore as _, ScaleSetStore as _};
use serde_json::{Value, json};

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(
    create_refuses_every_bad_spec_as_the_parser_does,
    update_refuses_every_bad_spec_as_the_parser_does,
    plan_and_apply_refuse_every_bad_spec_as_the_parser_does,
    an_unknown_provider_is_refused_on_create_and_update,
    replacing_credentials_without_an_endpoint_keeps_the_stored_one,
    a_ghe_com_endpoint_gets_the_api_host,
);

/// Asserts a 400 whose message names each problem as `field: message`, and nothing else.
#[track_caller]
fn assert_problems(answer: &crate::helpers::Answer, case: &BadSpec, prefix: &str) {
    let message = answer.error(400, "invalid_input");
    for problem in &case.problems {
        let line = format!("{prefix}{}: {}", problem.field, problem.message);
        assert!(
            message.contains(&line),
            "{}: {line:?} missing from {message:?}",
            case.what
        );
    }
    // Nothing beyond the parser's problems: one `; `-separated entry per problem.
    let named = [
        "name",
        "runner_group",
        "labels",
        "provider",
        "max_runners",
        "min_idle",
        "runner_prefix",
    ]
    .iter()
    .filter(|f| {
        message.contains(&format!("{prefix}{f}: ")) || message.contains(&format!("{prefix}{f}["))
    })
    .count();
    let expected: std::collections::BTreeSet<&str> = case
        .problems
        .iter()
        .map(|p| p.field.split('[').next().unwrap_or_default())
        .collect();
    assert_eq!(named, expected.len(), "{}: {message:?}", case.what);
}

async fn create_refuses_every_bad_spec_as_the_parser_does(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "create_refuses_every_bad_spec").await;
    let entity = app.seed(&sim).await;
    for case in bad_specs() {
        let mut body = case.fields();
        body.insert("entity_id".into(), json!(entity));
        let answer = app
            .call("POST", "/api/v1/scale-sets", Some(Value::Object(body)))
            .await;
        assert_problems(&answer, &case, "");
    }
    assert!(app.store.list_scale_sets(None).await.unwrap().is_empty());
    assert!(sim.sim.state().scale_sets_named("linux").next().is_none());
}

async fn update_refuses_every_bad_spec_as_the_parser_does(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "update_refuses_every_bad_spec").await;
    let entity = app.seed(&sim).await;
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 4}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.json["id"].as_str().unwrap().to_owned();
    let mut tried = 0;
    // The name cannot change through an update; every other bad field is sent.
    for case in bad_specs()
        .into_iter()
        .filter(|c| !c.overrides.contains_key("name"))
    {
        let generation = app.store.list_scale_sets(None).await.unwrap()[0].generation;
        let mut body = case.overrides.clone();
        body.insert("generation".into(), json!(generation));
        let answer = app
            .call(
                "PATCH",
                &format!("/api/v1/scale-sets/{id}"),
                Some(Value::Object(body)),
            )
            .await;
        assert_problems(&answer, &case, "");
        tried += 1;
    }
    assert_eq!(tried, 7);
    let stored = &app.store.list_scale_sets(None).await.unwrap()[0];
    assert_eq!(stored.spec.max_runners(), 4);
    assert!(stored.spec.labels().is_empty());
}

/// A `[[scale_set]]` table with the case's fields, naming the stored credentials `sim`.
fn fleet(case: &BadSpec) -> String {
    let mut text = String::from("[[scale_set]]\ncredentials = \"sim\"\norganization = \"acme\"\n");
    for (key, value) in case.fields() {
        text.push_str(&format!("{key} = {value}\n"));
    }
    text
}

async fn plan_and_apply_refuse_every_bad_spec_as_the_parser_does(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "plan_and_apply_refuse_every_bad_spec").await;
    app.seed(&sim).await;
    let before = app.written().await;
    for case in bad_specs() {
        let text = fleet(&case);
        let planned = app
            .call("POST", "/api/v1/plan", Some(json!({"fleet": text})))
            .await;
        assert_problems(&planned, &case, "scale_set[0].");
        let applied = app
            .call(
                "POST",
                "/api/v1/apply",
                Some(json!({"fleet": text, "digest": "0".repeat(64)})),
            )
            .await;
        assert_problems(&applied, &case, "scale_set[0].");
    }
    assert_eq!(app.written().await, before, "nothing written");
}

async fn an_unknown_provider_is_refused_on_create_and_update(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "an_unknown_provider_is_refused").await;
    let entity = app.seed(&sim).await;
    let answer = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "lxdd", "max_runners": 2}),
            ),
        )
        .await;
    let message = answer.error(400, "invalid_input");
    assert!(
        message.contains("provider: no provider is named \"lxdd\" (configured: fake)"),
        "{message}"
    );
    assert!(app.store.list_scale_sets(None).await.unwrap().is_empty());
    assert!(
        sim.sim.state().scale_sets_named("linux").next().is_none(),
        "nothing was created on GitHub"
    );
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 2}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.json["id"].as_str().unwrap();
    let generation = app.store.list_scale_sets(None).await.unwrap()[0].generation;
    let answer = app
        .call(
            "PATCH",
            &format!("/api/v1/scale-sets/{id}"),
            Some(json!({"generation": generation, "provider": "lxdd"})),
        )
        .await;
    let message = answer.error(400, "invalid_input");
    assert!(
        message.contains("no provider is named \"lxdd\""),
        "{message}"
    );
    assert_eq!(
        app.store.list_scale_sets(None).await.unwrap()[0]
            .spec
            .provider(),
        "fake"
    );
}

async fn replacing_credentials_without_an_endpoint_keeps_the_stored_one(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "replacing_credentials_keeps_the_endpoint").await;
    let entity = app.seed(&sim).await;
    let stored = app.store.get_credentials_by_name("sim").await.unwrap();
    let replaced = app
        .call(
            "PUT",
            &format!("/api/v1/credentials/{}", stored.id),
            Some(json!({"name": "sim", "auth": {"kind": "pat", "token": "ghp_simulator"}})),
        )
        .await;
    assert_eq!(replaced.status, 200, "{replaced:?}");
    assert_eq!(
        replaced.json["endpoint"]["base_url"],
        sim.base(),
        "{replaced:?}"
    );
    let after = app.store.get_credentials_by_name("sim").await.unwrap();
    assert_eq!(after.endpoint, stored.endpoint);
    // The replaced token reaches the loopback simulator the operator named, not github.com.
    let calls_before = sim.sim.request_log().len();
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 2}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    // The create answers at once; the worker's ensure is what calls GitHub with the token.
    let (shown, refusal) = app
        .converge(created.json["id"].as_str().expect("an id"))
        .await;
    assert_eq!(refusal, None, "{shown:?}");
    assert_eq!(shown.json["state"], "ready", "{shown:?}");
    assert!(sim.sim.request_log().len() > calls_before);
    // A replacement that names an endpoint moves it.
    let moved = app
        .call(
            "PUT",
            &format!("/api/v1/credentials/{}", stored.id),
            Some(
                json!({"name": "sim", "auth": {"kind": "pat", "token": "ghp_simulator"},
                "endpoint": {"base_url": "https://ghes.example.com"}}),
            ),
        )
        .await;
    assert_eq!(moved.status, 200, "{moved:?}");
    assert_eq!(
        moved.json["endpoint"]["api_base_url"],
        "https://ghes.example.com/api/v3"
    );
}

async fn a_ghe_com_endpoint_gets_the_api_host(backend: Backend) {
    let app = App::start(backend, "a_ghe_com_endpoint_gets_the_api_host").await;
    let created = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(
                json!({"name": "tenant", "auth": {"kind": "pat", "token": "ghp_x"},
                "endpoint": {"base_url": "https://acme.ghe.com/"}}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.json["endpoint"]["base_url"], "https://acme.ghe.com");
    assert_eq!(
        created.json["endpoint"]["api_base_url"],
        "https://api.acme.ghe.com"
    );
}
