//! `POST /api/v1/plan` and `/apply` over real HTTP on `127.0.0.1:0`, with a SQLite store and
//! the simulator in-process: plan writes nothing, apply of the reviewed digest applies once
//! and is then a no-op, a stale digest is `409 stale_plan` with nothing written, and bad input
//! is a 4xx with nothing written.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prometheus_client::registry::Registry;
use scaleset_api::AppState;
use scaleset_control::{ControllerIdentity, Settings, StoreClientFactory};
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::ExposeSecret as _;
use scaleset_store::test_util::simulator_credentials;
use scaleset_store::{
    ApiTokenStore, CredentialStore, DatabaseUrl, DieselStore, EncryptionKey, EventStore, Keyring,
    ScaleSetStore, Store, StoreOptions,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct App {
    addr: std::net::SocketAddr,
    token: String,
    store: Arc<DieselStore>,
    _dir: tempfile::TempDir,
    stop: CancellationToken,
}

impl Drop for App {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn spawn_app() -> App {
    let stop = CancellationToken::new();
    let sim = Simulator::new(SimConfig::default()).expect("simulator");
    let sim_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let sim_addr = sim_listener.local_addr().expect("addr");
    tokio::spawn({
        let stop = stop.clone();
        async move { sim.serve(sim_listener, stop.cancelled_owned()).await }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let url = DatabaseUrl::parse(&format!("sqlite://{}", dir.path().join("s.db").display()))
        .expect("url");
    let key = EncryptionKey::from_bytes("k1", &[3; 32]).expect("key");
    let store = Arc::new(
        DieselStore::open(
            StoreOptions::new(url, Keyring::new(key)).busy_timeout(Duration::from_secs(20)),
        )
        .await
        .expect("store"),
    );
    let base = format!("http://{sim_addr}");
    store
        .create_credentials(simulator_credentials(&base))
        .await
        .expect("credentials");
    let (_, token) = store.create_api_token("test").await.expect("token");
    let dyn_store: Arc<dyn Store> = store.clone();
    let state = AppState::new(
        dyn_store.clone(),
        Arc::new(StoreClientFactory::new(dyn_store)),
        ControllerIdentity::new(uuid::Uuid::from_u128(0x5ca1_e5e7)),
        Settings::default(),
        None,
        Registry::default(),
    );
    let app = scaleset_api::router(Arc::new(state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn({
        let stop = stop.clone();
        async move { scaleset_api::serve(listener, app, None, stop.cancelled_owned()).await }
    });
    App {
        addr,
        token: token.expose_secret().to_owned(),
        store,
        _dir: dir,
        stop,
    }
}

impl App {
    async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
        self.send(http::Method::POST, path, token, body).await
    }

    async fn send(
        &self,
        method: http::Method,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<bytes::Bytes>>();
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr))
            .header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(bytes::Bytes::from(body.to_string())))
            .expect("request");
        let response = client.request(request).await.expect("response");
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Scale sets (name, max_runners, generation) and the number of events.
    async fn written(&self) -> (Vec<(String, u32, i64)>, usize) {
        let sets = self.store.list_scale_sets(None).await.expect("sets");
        let mut events = 0;
        for set in &sets {
            events += self
                .store
                .list_events(set.id, 1000)
                .await
                .expect("events")
                .len();
        }
        (
            sets.into_iter()
                .map(|s| (s.spec.name, s.spec.max_runners, s.generation))
                .collect(),
            events,
        )
    }
}

const FLEET: &str = r#"
[[scale_set]]
name = "linux"
credentials = "sim"
organization = "acme"
provider = "fake"
max_runners = 4
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_then_apply_then_noop() {
    let app = spawn_app().await;
    let before = app.written().await;
    let (status, plan) = app
        .post("/api/v1/plan", Some(&app.token), &json!({"fleet": FLEET}))
        .await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["scale_sets"][0]["action"], "create", "{plan}");
    assert_eq!(
        plan["scale_sets"][0]["reason_code"], "not_on_github",
        "{plan}"
    );
    assert_eq!(plan["has_changes"], true);
    assert_eq!(app.written().await, before, "plan wrote");

    let digest = plan["digest"].as_str().expect("digest").to_owned();
    let (status, applied) = app
        .post(
            "/api/v1/apply",
            Some(&app.token),
            &json!({"fleet": FLEET, "digest": digest}),
        )
        .await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(applied["writes"], 2, "entity and scale set: {applied}");
    assert_eq!(applied["created"].as_array().map(Vec::len), Some(1));
    let after = app.written().await;
    assert_eq!(after.0.len(), 1);
    assert_eq!(after.0[0].1, 4);

    // The same fleet again: unchanged, and its apply is a no-op.
    let (_, again) = app
        .post("/api/v1/plan", Some(&app.token), &json!({"fleet": FLEET}))
        .await;
    assert_eq!(again["has_changes"], false, "{again}");
    assert_eq!(again["scale_sets"][0]["action"], "unchanged");
    let (status, noop) = app
        .post(
            "/api/v1/apply",
            Some(&app.token),
            &json!({"fleet": FLEET, "digest": again["digest"]}),
        )
        .await;
    assert_eq!(status, 200, "{noop}");
    assert_eq!(noop["writes"], 0);
    assert_eq!(app.written().await, after, "a no-op apply wrote");
}

/// A fleet that declares no extra specs stores them as null; such a scale set must stay
/// updatable through the API (its update once failed with 400 "invalid extra_specs").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_set_applied_from_a_fleet_can_be_updated() {
    let app = spawn_app().await;
    let (_, plan) = app
        .post("/api/v1/plan", Some(&app.token), &json!({"fleet": FLEET}))
        .await;
    let (status, applied) = app
        .post(
            "/api/v1/apply",
            Some(&app.token),
            &json!({"fleet": FLEET, "digest": plan["digest"]}),
        )
        .await;
    assert_eq!(status, 200, "{applied}");
    let stored = app.store.list_scale_sets(None).await.expect("sets");
    assert_eq!(stored.len(), 1);
    assert!(
        stored[0].spec.extra_specs.is_null(),
        "the fleet path stores null"
    );
    let (status, body) = app
        .send(
            http::Method::PATCH,
            &format!("/api/v1/scale-sets/{}", stored[0].id),
            Some(&app.token),
            &json!({"generation": stored[0].generation, "max_runners": 5}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (sets, _) = app.written().await;
    assert_eq!(sets[0].1, 5, "the update was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_digest_is_refused_with_nothing_written() {
    let app = spawn_app().await;
    let (_, plan) = app
        .post("/api/v1/plan", Some(&app.token), &json!({"fleet": FLEET}))
        .await;
    // The world changes: the same scale set is stored meanwhile with other settings.
    let changed = FLEET.replace("max_runners = 4", "max_runners = 6");
    let (_, other) = app
        .post("/api/v1/plan", Some(&app.token), &json!({"fleet": changed}))
        .await;
    let (status, _) = app
        .post(
            "/api/v1/apply",
            Some(&app.token),
            &json!({"fleet": changed, "digest": other["digest"]}),
        )
        .await;
    assert_eq!(status, 200);
    let before = app.written().await;
    let (status, body) = app
        .post(
            "/api/v1/apply",
            Some(&app.token),
            &json!({"fleet": FLEET, "digest": plan["digest"]}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "stale_plan", "{body}");
    assert!(body["request_id"].is_string());
    assert_eq!(app.written().await, before, "a stale apply wrote");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_no_token_are_refused_with_nothing_written() {
    let app = spawn_app().await;
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
            json!({"fleet": "[[credentials]]\nname = \"c\"\ntoken_file = \"/etc/passwd\"\n"}),
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
        let (got, answer) = app.post(path, token, &body).await;
        assert_eq!(got, status, "{path} {body}: {answer}");
        assert_eq!(answer["code"], code, "{path} {body}: {answer}");
    }
    let (got, answer) = app
        .post(
            "/api/v1/plan",
            Some(&app.token),
            &json!({"fleet": "[[credentials]]\nname = \"c\"\ntoken_file = \"/etc/passwd\"\n"}),
        )
        .await;
    assert_eq!(got, 400);
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or_default()
            .contains("POST /api/v1/credentials"),
        "{answer}"
    );
    assert_eq!(app.written().await, before, "a refused request wrote");
}
