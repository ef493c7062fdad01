//! The harness: a fresh database per test and backend (a temp SQLite file, or a PostgreSQL
//! database created through `SCALESET_TEST_DATABASE_URL`, as the store and control suites do),
//! a simulator on a loopback port, and the API served on `127.0.0.1:0` over real HTTP.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use prometheus_client::registry::Registry;
use scaleset_api::AppState;
use scaleset_control::{
    ControllerIdentity, EnsureOnce, EnsureResult, Metrics, Settings, StoreClientFactory,
};
use scaleset_fleet::{DecommissionSource, Fleet};
use scaleset_github::ExposeSecret as _;
use scaleset_github::RetryPolicy;
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::{
    ApiTokenStore as _, CredentialStore as _, DieselStore, EncryptionKey, EntityStore as _,
    EventStore as _, InstanceStore as _, Keyring, ScaleSetStore as _, Store, StoreOptions,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub(crate) use scaleset_store::test_util::{Backend, TestDb};

/// Declares `mod <test> { sqlite(), postgres() }` for each named `async fn <test>(Backend)` (the
/// tests make their own databases: a wipe needs a second one).
macro_rules! backend_tests {
    ($($name:ident),+ $(,)?) => {
        scaleset_store::backend_tests!(run = scaleset_store::test_util::run_on_backend; $($name),+);
    };
}
pub(crate) use backend_tests;

/// A simulator serving on `127.0.0.1:0`.
pub(crate) struct RunningSim {
    pub(crate) sim: Simulator,
    pub(crate) addr: SocketAddr,
    stop: CancellationToken,
}

impl RunningSim {
    pub(crate) async fn start() -> Arc<Self> {
        let sim = Simulator::new(SimConfig::default()).expect("simulator config");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = CancellationToken::new();
        tokio::spawn({
            let (sim, stop) = (sim.clone(), stop.clone());
            async move { sim.serve(listener, stop.cancelled_owned()).await }
        });
        Arc::new(Self { sim, addr, stop })
    }

    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The controller id every test runs as (a wiped database is re-bound to it).
pub(crate) const CONTROLLER: Uuid = Uuid::from_u128(0x3f2a9c1e_77b0_4d4e_9a55_0123456789ab);

/// An answer: status, the `x-request-id` header and the body as JSON (`Null` if not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) request_id: Option<String>,
    pub(crate) www_authenticate: Option<String>,
    pub(crate) json: Value,
    pub(crate) text: String,
}

impl Answer {
    /// Asserts the error shape and code; returns the message.
    #[track_caller]
    pub(crate) fn error(&self, status: u16, code: &str) -> &str {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(self.json["code"], code, "{self:?}");
        let id = self.json["request_id"].as_str().expect("request_id");
        assert_eq!(
            Some(id),
            self.request_id.as_deref(),
            "body and header ids differ"
        );
        assert_eq!(self.json.as_object().map(|o| o.len()), Some(3), "{self:?}");
        self.json["message"].as_str().expect("message")
    }
}

/// The API served over a store.
pub(crate) struct App {
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) store: Arc<DieselStore>,
    http: Client<HttpConnector, Full<Bytes>>,
    stop: CancellationToken,
    _db: TestDb,
}

/// Short client retries so that failing paths do not wait.
pub(crate) fn fast_clients(store: Arc<dyn Store>) -> StoreClientFactory {
    StoreClientFactory::new(store).with_config(|config| {
        config
            .with_retry(RetryPolicy::new(
                2,
                Duration::from_millis(2),
                Duration::from_millis(10),
            ))
            .with_session_retry(RetryPolicy::new(
                2,
                Duration::from_millis(2),
                Duration::from_millis(10),
            ))
    })
}

pub(crate) fn settings() -> Settings {
    let mut settings = Settings {
        worker: "api-test".to_owned(),
        ..Settings::default()
    };
    settings.adoption_retry.base_delay = Duration::from_millis(2);
    settings.adoption_retry.max_delay = Duration::from_millis(10);
    settings
}

impl App {
    /// Serves the API over a fresh database of `backend`, with a token.
    pub(crate) async fn start(backend: Backend, test: &str) -> Self {
        Self::start_with(backend, test, scaleset_fleet::ConfiguredFleet::default()).await
    }

    /// [`App::start`] for a server whose configuration file declares `configured`.
    pub(crate) async fn start_with(
        backend: Backend,
        test: &str,
        configured: scaleset_fleet::ConfiguredFleet,
    ) -> Self {
        let db = TestDb::create(backend, test)
            .await
            .expect("backend checked by run");
        let key = EncryptionKey::from_bytes("k1", &[7; 32]).expect("key");
        let options = StoreOptions::new(db.url.clone(), Keyring::new(key))
            .pool_size(4)
            .busy_timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(20))
            .controller_id(Some(CONTROLLER));
        let store = Arc::new(DieselStore::open(options).await.expect("open the store"));
        let (_, secret) = store.create_api_token("test").await.expect("token");
        let dyn_store: Arc<dyn Store> = store.clone();
        // As in a process whose worker leads (`--with-worker`, alone): it exports the
        // fleet-wide series, which an API-only process leaves to the leading worker.
        let mut registry = Registry::default();
        let metrics = Arc::new(scaleset_control::Metrics::new(&mut registry));
        metrics.set_fleet_exporter(true);
        let state = AppState::new(
            dyn_store.clone(),
            Arc::new(fast_clients(dyn_store.clone())),
            ControllerIdentity::new(CONTROLLER),
            settings(),
            Some(metrics),
            registry,
        );
        // As in a server with its worker, but with no providers: a decommission finds the
        // scale sets on GitHub and no instances.
        let decommission = DecommissionSource::new(
            ControllerIdentity::new(CONTROLLER),
            Fleet::default(),
            std::collections::BTreeMap::new(),
            dyn_store.clone(),
            Arc::new(|config: scaleset_github::ClientConfig| {
                config.with_retry(RetryPolicy::new(
                    2,
                    Duration::from_millis(2),
                    Duration::from_millis(10),
                ))
            }),
        );
        let limits = scaleset_api::Limits {
            max_body_bytes: 64 * 1024,
            ..scaleset_api::Limits::default()
        };
        let app = scaleset_api::router(Arc::new(
            state
                .with_limits(limits)
                .with_providers(["fake".to_owned()])
                .with_configured(configured)
                .with_decommission(decommission),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = CancellationToken::new();
        tokio::spawn(scaleset_api::serve(
            listener,
            app,
            None,
            stop.clone().cancelled_owned(),
        ));
        Self {
            base: format!("http://{addr}"),
            token: secret.expose_secret().to_owned(),
            store,
            http: Client::builder(TokioExecutor::new()).build_http(),
            stop,
            _db: db,
        }
    }

    /// Sends a request with the test's token.
    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let bytes = body.map(|b| b.to_string().into_bytes());
        self.raw(
            method,
            path,
            Some(&format!("Bearer {}", self.token)),
            bytes,
            "application/json",
        )
        .await
    }

    /// Sends a request with exactly these parts.
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        authorization: Option<&str>,
        body: Option<Vec<u8>>,
        content_type: &str,
    ) -> Answer {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        if body.is_some() {
            request = request.header("content-type", content_type);
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .expect("request");
        let response = self.http.request(request).await.expect("the API answers");
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let request_id = header("x-request-id");
        let www_authenticate = header("www-authenticate");
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            request_id,
            www_authenticate,
            json,
            text,
        }
    }

    /// Sends a request with these headers (and no others but Host), for the status page:
    /// status, headers, body text.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> (u16, http::HeaderMap, String) {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .expect("request");
        let response = self
            .http
            .request(request)
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (
            status,
            headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    /// A second store over this test's database whose clock is `clock` (a worker whose writes
    /// are dated when the test says).
    pub(crate) async fn store_at(&self, clock: scaleset_store::ManualClock) -> DieselStore {
        let key = EncryptionKey::from_bytes("k1", &[7; 32]).expect("key");
        let options = StoreOptions::new(self._db.url.clone(), Keyring::new(key))
            .pool_size(2)
            .busy_timeout(Duration::from_secs(20))
            .controller_id(Some(CONTROLLER))
            .clock(Arc::new(clock));
        DieselStore::open(options)
            .await
            .expect("open a second store")
    }

    /// Sends only a request's head over a new connection, announcing `length` body bytes
    /// that are never sent, and returns what the server answers (head and body).
    pub(crate) async fn head_only(&self, method: &str, path: &str, length: usize) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let addr = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {length}\r\nconnection: close\r\n\r\n"
        );
        stream
            .write_all(head.as_bytes())
            .await
            .expect("write the head");
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        // The answer comes although the body never does; bounded, in case it does not.
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        answer.extend_from_slice(&buf[..n]);
                        if String::from_utf8_lossy(&answer).contains("\"request_id\"") {
                            break;
                        }
                    }
                }
            }
        })
        .await;
        assert!(
            read.is_ok(),
            "no answer without the body: {}",
            String::from_utf8_lossy(&answer)
        );
        String::from_utf8_lossy(&answer).into_owned()
    }

    /// Everything the store holds that a request could have written, for "nothing written".
    pub(crate) async fn written(&self) -> String {
        let mut out = String::new();
        let credentials = self.store.list_credentials().await.expect("credentials");
        out.push_str(&format!("{credentials:?}\n"));
        out.push_str(&format!(
            "{:?}\n",
            self.store.list_entities().await.expect("entities")
        ));
        let scale_sets = self.store.list_scale_sets(None).await.expect("scale sets");
        out.push_str(&format!("{scale_sets:?}\n"));
        for s in &scale_sets {
            out.push_str(&format!(
                "{:?}\n",
                self.store.list_events(s.id, 1000).await.expect("events")
            ));
            out.push_str(&format!(
                "{:?}\n",
                self.store.list_instances(s.id).await.expect("instances")
            ));
        }
        out.push_str(&format!(
            "{:?}\n",
            self.store.list_api_tokens().await.expect("tokens")
        ));
        out
    }

    /// Runs the worker's ensure step once on scale set `id` (what the worker's task does with a
    /// record the API stored: the API itself never calls GitHub on a create), then answers
    /// with the scale set as shown, and the refusal's code when adoption refused it.
    pub(crate) async fn converge(&self, id: &str) -> (Answer, Option<String>) {
        let store: Arc<dyn Store> = self.store.clone();
        let ensure = EnsureOnce::new(
            store.clone(),
            Arc::new(fast_clients(store)),
            ControllerIdentity::new(CONTROLLER),
            settings(),
            Arc::new(Metrics::new(&mut Registry::default())),
        );
        let scale_set = scaleset_store::ScaleSetId(id.parse().expect("a scale set id"));
        let refusal = match ensure.run(scale_set, "test-worker").await {
            Ok(EnsureResult::NotReady { refusal }) => refusal.map(|r| r.code().to_owned()),
            Ok(_) => None,
            Err(e) => panic!("the ensure step failed: {e}"),
        };
        let shown = self
            .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
            .await;
        (shown, refusal)
    }

    /// Stores simulator credentials and organization `acme`; returns the entity's id.
    pub(crate) async fn seed(&self, sim: &RunningSim) -> String {
        let created = self
            .call(
                "POST",
                "/api/v1/credentials",
                Some(serde_json::json!({
                    "name": "sim",
                    "auth": {"kind": "pat", "token": "ghp_simulator"},
                    "endpoint": {"base_url": sim.base(), "api_base_url": format!("{}/api/v3", sim.base())},
                })),
            )
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let entity = self
            .call(
                "POST",
                "/api/v1/entities",
                Some(serde_json::json!({"kind": "organization", "name": "acme", "credentials": "sim"})),
            )
            .await;
        assert_eq!(entity.status, 201, "{entity:?}");
        entity.json["id"].as_str().expect("entity id").to_owned()
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
