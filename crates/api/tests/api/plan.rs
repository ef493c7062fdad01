//! `POST /api/v1/plan` and `/apply` over real HTTP on `127.0.0.1:0`, over a fresh store of
//! each backend with the simulator in-process: plan writes nothing, apply of the reviewed
//! digest applies once and is then a no-op, a stale digest is `409 stale_plan` with nothing
//! written, and bad input is a 4xx with nothing written.

use std::sync::Arc;

use scaleset_store::test_util::simulator_credentials;
use scaleset_store::{CredentialStore as _, ScaleSetStore as _};
use serde_json::json;

use crate::helpers::{Answer, App, Backend, RunningSim, backend_tests};

backend_tests!(
    plan_then_apply_then_noop,
    a_scale_set_applied_from_a_fleet_can_be_updated,
    a_stale_digest_is_refused_with_nothing_written,
    bad_input_and_no_token_are_refused_with_nothing_written,
);

/// The API over a fresh database of `backend` with credentials `sim` for the simulator (no
/// entity: the fleet's apply creates organization `acme`). The simulator lives as long as the
/// returned handle.
async fn start(backend: Backend, test: &str) -> (Arc<RunningSim>, App) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, test).await;
    app.store
        .create_credentials(simulator_credentials(&sim.base()))
        .await
        .expect("credentials");
    (sim, app)
}

/// `POST /api/v1/plan` of `fleet`.
async fn plan(app: &App, fleet: &str) -> Answer {
    app.call("POST", "/api/v1/plan", Some(json!({"fleet": fleet})))
        .await
}

/// `POST /api/v1/apply` of `fleet` at the reviewed `digest`.
async fn apply(app: &App, fleet: &str, digest: &str) -> Answer {
    app.call(
        "POST",
        "/api/v1/apply",
        Some(json!({"fleet": fleet, "digest": digest})),
    )
    .await
}

/// A plan's digest, which every plan answer carries.
fn digest(plan: &Answer) -> &str {
    plan.json["digest"].as_str().expect("digest")
}

/// The stored scale sets' `max_runners`.
async fn max_runners(app: &App) -> Vec<u32> {
    let sets = app.store.list_scale_sets(None).await.expect("sets");
    sets.iter().map(|s| s.spec.max_runners()).collect()
}

const FLEET: &str = r#"
[[scale_set]]
name = "linux"
credentials = "sim"
organization = "acme"
provider = "fake"
max_runners = 4
"#;

/// A fleet declaring `[[credentials]]` (here read from a file), which the API refuses: the
/// server reads no secret from its files or environment for a caller, so credentials are
/// created through `POST /api/v1/credentials` instead.
const TOKEN_FILE_FLEET: &str = "[[credentials]]\nname = \"c\"\ntoken_file = \"/etc/passwd\"\n";

async fn plan_then_apply_then_noop(backend: Backend) {
    let (_sim, app) = start(backend, "plan_then_apply_then_noop").await;
    let before = app.written().await;
    let planned = plan(&app, FLEET).await;
    let json = &planned.json;
    assert_eq!(planned.status, 200, "{planned:?}");
    assert_eq!(json["scale_sets"][0]["action"], "create", "{json}");
    assert_eq!(
        json["scale_sets"][0]["reason_code"], "not_on_github",
        "{json}"
    );
    assert_eq!(json["has_changes"], true);
    assert_eq!(app.written().await, before, "plan wrote");

    let applied = apply(&app, FLEET, digest(&planned)).await;
    assert_eq!(applied.status, 200, "{applied:?}");
    let json = &applied.json;
    assert_eq!(json["writes"], 2, "entity and scale set: {json}");
    assert_eq!(json["created"].as_array().map(Vec::len), Some(1));
    assert_eq!(max_runners(&app).await, [4]);
    let after = app.written().await;

    // The same fleet again: unchanged, and its apply is a no-op.
    let again = plan(&app, FLEET).await;
    assert_eq!(again.json["has_changes"], false, "{again:?}");
    assert_eq!(again.json["scale_sets"][0]["action"], "unchanged");
    let noop = apply(&app, FLEET, digest(&again)).await;
    assert_eq!(noop.status, 200, "{noop:?}");
    assert_eq!(noop.json["writes"], 0);
    assert_eq!(app.written().await, after, "a no-op apply wrote");
}

/// A fleet that declares no extra specs stores `{}`, as the API does (one parser, one
/// default), and the row stays updatable through the API (an update once failed with 400
/// "invalid extra_specs" on a null; the store now reads a null an older version wrote as `{}`).
async fn a_scale_set_applied_from_a_fleet_can_be_updated(backend: Backend) {
    let (_sim, app) = start(backend, "a_scale_set_applied_from_a_fleet_can_be_updated").await;
    let planned = plan(&app, FLEET).await;
    let applied = apply(&app, FLEET, digest(&planned)).await;
    assert_eq!(applied.status, 200, "{applied:?}");
    let stored = app.store.list_scale_sets(None).await.expect("sets");
    assert_eq!(stored.len(), 1);
    assert_eq!(
        *stored[0].spec.extra_specs(),
        json!({}),
        "the fleet path stores what the API stores"
    );
    let old = &stored[0];
    let updated = app
        .call(
            "PATCH",
            &format!("/api/v1/scale-sets/{}", old.id),
            Some(json!({"generation": old.generation, "max_runners": 5})),
        )
        .await;
    assert_eq!(updated.status, 200, "{updated:?}");
    assert_eq!(max_runners(&app).await, [5], "the update was written");
}

async fn a_stale_digest_is_refused_with_nothing_written(backend: Backend) {
    let (_sim, app) = start(backend, "a_stale_digest_is_refused_with_nothing_written").await;
    let planned = plan(&app, FLEET).await;
    // The world changes: the same scale set is stored meanwhile with other settings.
    let changed = FLEET.replace("max_runners = 4", "max_runners = 6");
    let other = plan(&app, &changed).await;
    assert_eq!(apply(&app, &changed, digest(&other)).await.status, 200);
    let before = app.written().await;
    let stale = apply(&app, FLEET, digest(&planned)).await;
    // The error body: status, code, and the request id of the header.
    stale.error(409, "stale_plan");
    assert_eq!(app.written().await, before, "a stale apply wrote");
}

async fn bad_input_and_no_token_are_refused_with_nothing_written(backend: Backend) {
    let (_sim, app) = start(
        backend,
        "bad_input_and_no_token_are_refused_with_nothing_written",
    )
    .await;
    let before = app.written().await;
    let digest = "0".repeat(64);
    let cases = [
        (
            "/api/v1/plan",
            None,
            json!({"fleet": FLEET}),
            401,
            "missing_token",
        ),
        (
            "/api/v1/apply",
            Some("sst_wrong"),
            json!({"fleet": FLEET, "digest": digest}),
            401,
            "invalid_token",
        ),
        (
            "/api/v1/plan",
            Some(app.token.as_str()),
            json!({"fleet": FLEET, "extra": 1}),
            400,
            "invalid_body",
        ),
        (
            "/api/v1/plan",
            Some(app.token.as_str()),
            json!({"fleet": 7}),
            400,
            "invalid_body",
        ),
        (
            "/api/v1/plan",
            Some(app.token.as_str()),
            json!({"fleet": "[[scale_set]]\nname = \"x\"\nbogus = 1\n"}),
            400,
            "invalid_input",
        ),
        (
            "/api/v1/plan",
            Some(app.token.as_str()),
            json!({"fleet": TOKEN_FILE_FLEET}),
            400,
            "invalid_input",
        ),
        (
            "/api/v1/apply",
            Some(app.token.as_str()),
            json!({"fleet": FLEET, "digest": "abc"}),
            400,
            "invalid_input",
        ),
        (
            "/api/v1/apply",
            Some(app.token.as_str()),
            json!({"fleet": FLEET, "digest": digest}),
            409,
            "stale_plan",
        ),
    ];
    for (path, token, body, status, code) in cases {
        let authorization = token.map(|token| format!("Bearer {token}"));
        let answer = app
            .raw(
                "POST",
                path,
                authorization.as_deref(),
                Some(body.to_string().into_bytes()),
                "application/json",
            )
            .await;
        assert_eq!(answer.status, status, "{path} {body}: {answer:?}");
        assert_eq!(answer.json["code"], code, "{path} {body}: {answer:?}");
    }
    let refused = plan(&app, TOKEN_FILE_FLEET).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.json["message"]
            .as_str()
            .unwrap_or_default()
            .contains("scalesetctl credential create NAME"),
        "the remedy is a command to run (issue 29 item 17e): {refused:?}"
    );
    assert_eq!(app.written().await, before, "a refused request wrote");
}
