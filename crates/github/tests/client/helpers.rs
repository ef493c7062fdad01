//! Shared test setup: a mockito server with the REST token chain, a client pointed at it, and
//! a sleeper that records retry waits instead of sleeping.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mockito::{Matcher, Mock, ServerGuard};
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, RandomSource, Sleeper};

pub(crate) const PAT: &str = "ghp_test_pat_secret";
pub(crate) const REGISTRATION_TOKEN: &str = "reg-token-secret";
pub(crate) const ORG: &str = "my-org";
pub(crate) const SERVICE_PATH: &str = "/tenant/123";
/// The default `User-Agent` every request carries.
pub(crate) const USER_AGENT: &str = concat!("scaleset-github/", env!("CARGO_PKG_VERSION"));

/// Records every requested wait and returns immediately.
#[derive(Default)]
pub(crate) struct RecordingSleeper {
    waits: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    pub(crate) fn waits(&self) -> Vec<Duration> {
        self.waits.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.waits.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

/// An unsigned JWT whose `exp` is `now + exp_in` seconds (may be negative).
pub(crate) fn admin_jwt(tag: &str, exp_in: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let claims =
        serde_json::json!({"exp": now + exp_in, "iat": now - 600, "iss": "123", "tag": tag});
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.sig")
}

pub(crate) struct Harness {
    pub(crate) server: ServerGuard,
    pub(crate) client: Client,
    pub(crate) sleeper: Arc<RecordingSleeper>,
    pub(crate) admin_token: String,
    /// The registration-token and runner-registration mocks (kept alive).
    pub(crate) chain: Vec<Mock>,
}

/// The `api-version` query of the Actions-service calls.
pub(crate) const API: &str = "api-version=6.0-preview";

/// The throwaway GitHub App key (`data/test-app-key.pem`).
pub(crate) const APP_KEY: &str = include_str!("data/test-app-key.pem");

/// Awaits `call` (the request `mock` stands for), then asserts that `mock` was hit as it
/// expects; returns what the call returned.
pub(crate) async fn exchange<T>(mock: &Mock, call: impl Future<Output = T>) -> T {
    let answer = call.await;
    mock.assert_async().await;
    answer
}

/// Asserts that each mock was hit as it expects.
pub(crate) async fn assert_hit<'a>(mocks: impl IntoIterator<Item = &'a Mock>) {
    for mock in mocks {
        mock.assert_async().await;
    }
}

impl Harness {
    /// Opens a session of scale set 5 whose queue is at `queue` (a full URL) with the queue
    /// token `token`, asserting the create call was made.
    pub(crate) async fn open_session(
        &mut self,
        queue: &str,
        token: &str,
    ) -> scaleset_github::Session {
        let create = self
            .service_mock("POST", "_apis/runtime/runnerscalesets/5/sessions", API)
            .with_body(session_json(queue, token))
            .create_async()
            .await;
        let session = self
            .client
            .create_session(scaleset_github::GithubScaleSetId(5), "o")
            .await
            .unwrap();
        create.assert_async().await;
        session
    }

    /// [`Self::open_session`] on the queue at `queue_path` on this server.
    pub(crate) async fn open_session_on(
        &mut self,
        queue_path: &str,
        token: &str,
    ) -> scaleset_github::Session {
        let queue = format!("{}{queue_path}", self.server.url());
        self.open_session(&queue, token).await
    }

    /// [`Self::service_mock`] answering 200 with `body`.
    pub(crate) async fn service_answer(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        body: impl AsRef<[u8]>,
    ) -> Mock {
        self.service_mock(method, path, query)
            .with_body(body)
            .create_async()
            .await
    }

    /// The service base URL the runner-registration mock hands out.
    pub(crate) fn service_url(&self) -> String {
        format!("{}{SERVICE_PATH}/", self.server.url())
    }

    /// [`Self::service_mock`] (with the [`API`] query) answering `status` with no body.
    pub(crate) async fn service_status(&mut self, method: &str, path: &str, status: usize) -> Mock {
        self.service_mock(method, path, API)
            .with_status(status)
            .create_async()
            .await
    }

    /// [`Self::service_mock`] (with the [`API`] query) answering `status` with `body`, expected
    /// once.
    pub(crate) async fn service_error(
        &mut self,
        method: &str,
        path: &str,
        status: usize,
        body: &str,
    ) -> Mock {
        self.service_failing(method, path, status, body, 1).await
    }

    /// [`Self::service_error`] expected `hits` times (a retried failure).
    pub(crate) async fn service_failing(
        &mut self,
        method: &str,
        path: &str,
        status: usize,
        body: &str,
        hits: usize,
    ) -> Mock {
        self.service_mock(method, path, API)
            .with_status(status)
            .with_body(body)
            .expect(hits)
            .create_async()
            .await
    }

    /// Creates a session of scale set `id` for the owner `me`, which must fail.
    pub(crate) async fn failed_create_session(&self, id: i64) -> scaleset_github::Error {
        self.client
            .create_session(scaleset_github::GithubScaleSetId(id), "me")
            .await
            .unwrap_err()
    }

    /// Creates the scale set `set` in runner group 1, which must fail.
    pub(crate) async fn failed_create_scale_set(&self) -> scaleset_github::Error {
        let set = scaleset_github::NewRunnerScaleSet::new("set", scaleset_github::RunnerGroupId(1));
        self.client.create_scale_set(&set).await.unwrap_err()
    }

    /// Generates a JIT config for the runner `r` of scale set 5, which must fail.
    pub(crate) async fn failed_jit_config(&self) -> scaleset_github::Error {
        let request = scaleset_github::JitConfigRequest::new("r");
        self.client
            .generate_jit_config(scaleset_github::GithubScaleSetId(5), &request)
            .await
            .unwrap_err()
    }

    /// Polls `session`'s queue from message 0 with capacity 1, which must fail.
    pub(crate) async fn failed_poll(
        &self,
        session: &mut scaleset_github::Session,
    ) -> scaleset_github::Error {
        self.client
            .get_message(session, scaleset_github::MessageId(0), 1)
            .await
            .unwrap_err()
    }

    /// A mock of an Actions-service call: path under the service base, exact query, admin bearer,
    /// JSON content type and user agent asserted; GET and DELETE must carry no body (calls with
    /// a body assert it with `match_body`).
    pub(crate) fn service_mock(&mut self, method: &str, path: &str, query: &str) -> Mock {
        let token = self.admin_token.clone();
        self.service_mock_as(method, path, query, &token)
    }

    /// [`Self::service_mock`] carrying the bearer `token` instead of the admin token (the queue
    /// token of `acquirejobs`).
    pub(crate) fn service_mock_as(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        token: &str,
    ) -> Mock {
        let mock = self
            .server
            .mock(method, format!("{SERVICE_PATH}/{path}").as_str())
            .match_query(Matcher::Exact(query.to_owned()))
            .match_header("authorization", format!("Bearer {token}").as_str())
            .match_header("content-type", "application/json")
            .match_header("user-agent", USER_AGENT);
        if matches!(method, "GET" | "DELETE") {
            mock.match_body(Matcher::Missing)
        } else {
            mock
        }
    }
}

pub(crate) fn config_for(
    server: &ServerGuard,
    path: &str,
    credentials: Credentials,
    sleeper: Arc<RecordingSleeper>,
) -> ClientConfig {
    let url = ConfigUrl::parse(&format!("{}/{path}", server.url())).unwrap();
    ClientConfig::new(url, credentials)
        .with_sleeper(sleeper)
        .with_random_source(full_backoff())
}

/// A jitter draw of 1: every backoff waits its full length, so tests read the policy's
/// schedule exactly (`retries.rs` checks the jitter with other draws).
pub(crate) fn full_backoff() -> RandomSource {
    Arc::new(|| 1.0)
}

/// A client for `{base}/{path}` with `credentials` and a recording sleeper (returned with it),
/// its configuration passed through `adjust` first.
pub(crate) fn client_at(
    base: &str,
    path: &str,
    credentials: Credentials,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
) -> (Client, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let url = ConfigUrl::parse(&format!("{base}/{path}")).unwrap();
    let config = ClientConfig::new(url, credentials)
        .with_sleeper(sleeper.clone())
        .with_random_source(full_backoff());
    (Client::new(adjust(config)).unwrap(), sleeper)
}

/// A PAT client for the organization on `server`, with its recording sleeper.
pub(crate) fn pat_client(server: &ServerGuard) -> (Client, Arc<RecordingSleeper>) {
    pat_client_with(server, |config| config)
}

/// [`pat_client`] with its configuration passed through `adjust` first.
pub(crate) fn pat_client_with(
    server: &ServerGuard,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
) -> (Client, Arc<RecordingSleeper>) {
    client_at(&server.url(), ORG, Credentials::pat(PAT), adjust)
}

/// The runner-registration call (the chain's second step), for the caller to answer.
pub(crate) fn runner_registration(server: &mut ServerGuard) -> Mock {
    server.mock("POST", "/api/v3/actions/runner-registration")
}

/// [`runner_registration`] answered `status` (with no body), expected `hits` times.
pub(crate) async fn refused_runner_registration(
    server: &mut ServerGuard,
    status: usize,
    hits: usize,
) -> Mock {
    runner_registration(server)
        .with_status(status)
        .expect(hits)
        .create_async()
        .await
}

/// The runner-registration answer handing out the service URL `service` and `admin_token`.
pub(crate) fn registration_answer(service: &str, admin_token: &str) -> String {
    serde_json::json!({"url": service, "token": admin_token}).to_string()
}

/// [`runner_registration`] answered 201 with [`registration_answer`], expected `hits` times.
pub(crate) async fn issued_admin_token(
    server: &mut ServerGuard,
    service: &str,
    admin_token: &str,
    hits: usize,
) -> Mock {
    runner_registration(server)
        .with_status(201)
        .with_body(registration_answer(service, admin_token))
        .expect(hits)
        .create_async()
        .await
}

/// A token call answered 201 with a token (the GitHub REST steps of the chain).
pub(crate) trait Issuing {
    /// Answers 201 with `{"token": token}`.
    fn issuing(self, token: &str) -> Self;
}

impl Issuing for Mock {
    fn issuing(self, token: &str) -> Self {
        self.with_status(201)
            .with_body(serde_json::json!({ "token": token }).to_string())
    }
}

/// The App installation-token call of installation `id` (the App chain's first step), for the
/// caller to answer.
pub(crate) fn installation_token(server: &mut ServerGuard, id: u64) -> Mock {
    server.mock(
        "POST",
        format!("/api/v3/app/installations/{id}/access_tokens").as_str(),
    )
}

/// The organization's registration-token call (the PAT chain's first step), for the caller to
/// answer.
pub(crate) fn registration_token(server: &mut ServerGuard) -> Mock {
    server.mock(
        "POST",
        format!("/api/v3/orgs/{ORG}/actions/runners/registration-token").as_str(),
    )
}

/// [`registration_token`] answered 401 "Bad credentials" (not retried), expected once.
pub(crate) async fn refused_registration_token(server: &mut ServerGuard) -> Mock {
    registration_token(server)
        .with_status(401)
        .with_body(r#"{"message":"Bad credentials"}"#)
        .expect(1)
        .create_async()
        .await
}

/// [`registration_token`] answered 201 with the token `reg`, expected `hits` times.
pub(crate) async fn issued_registration_token(server: &mut ServerGuard, hits: usize) -> Mock {
    registration_token(server)
        .issuing("reg")
        .expect(hits)
        .create_async()
        .await
}

/// Mocks for the PAT chain of an organization: registration token (201) then
/// runner-registration (201) returning `admin_token` and the service URL.
pub(crate) async fn pat_chain(server: &mut ServerGuard, admin_token: &str) -> Vec<Mock> {
    let registration = registration_token(server)
        .match_header("authorization", format!("Bearer {PAT}").as_str())
        .match_header("content-type", "application/vnd.github.v3+json")
        .match_header("accept", Matcher::Missing)
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Missing)
        .with_status(201)
        .with_body(format!(
            r#"{{"token":"{REGISTRATION_TOKEN}","expires_at":"2030-01-01T00:00:00Z"}}"#
        ))
        .create_async()
        .await;
    let service_url = format!("{}{SERVICE_PATH}/", server.url());
    let config_url = format!("{}/{ORG}", server.url());
    let runner_registration = runner_registration(server)
        .match_header(
            "authorization",
            format!("RemoteAuth {REGISTRATION_TOKEN}").as_str(),
        )
        .match_header("content-type", "application/json")
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Json(
            serde_json::json!({"url": config_url, "runner_event": "register"}),
        ))
        .with_status(201)
        .with_body(registration_answer(&service_url, admin_token))
        .create_async()
        .await;
    vec![registration, runner_registration]
}

/// A PAT client for `http://127.0.0.1:PORT/my-org` with its chain mocked.
pub(crate) async fn harness() -> Harness {
    let mut server = mockito::Server::new_async().await;
    let admin_token = admin_jwt("a", 3600);
    let chain = pat_chain(&mut server, &admin_token).await;
    let (client, sleeper) = pat_client(&server);
    Harness {
        server,
        client,
        sleeper,
        admin_token,
        chain,
    }
}

/// A session JSON document.
pub(crate) fn session_json(queue_url: &str, queue_token: &str) -> String {
    serde_json::json!({
        "sessionId": "8e1f2b4c-0000-4000-8000-000000000001",
        "ownerName": "scaleset-owner",
        "runnerScaleSet": {"id": 5, "name": "set"},
        "messageQueueUrl": queue_url,
        "messageQueueAccessToken": queue_token,
        "statistics": {"totalAvailableJobs": 0, "totalAcquiredJobs": 0, "totalAssignedJobs": 2,
            "totalRunningJobs": 1, "totalRegisteredRunners": 0, "totalBusyRunners": 0, "totalIdleRunners": 0}
    })
    .to_string()
}

/// A server that accepts connections and reads each request but never answers. Returns its
/// base URL (`http://127.0.0.1:PORT`) and its task (abort it when done).
pub(crate) async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::AsyncReadExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf).await;
            held.push(stream);
        }
    });
    (format!("http://127.0.0.1:{port}"), task)
}

/// A tiny HTTP/1.1 server whose answers to requests whose path starts with `held_prefix` wait
/// until [`HoldingServer::release`]; every other request gets `200 {"id":2}` at once. Each
/// held request is announced on `arrived` when it reaches the server.
pub(crate) struct HoldingServer {
    pub(crate) base: String,
    pub(crate) arrived: tokio::sync::mpsc::UnboundedReceiver<String>,
    release: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl HoldingServer {
    pub(crate) async fn start(held_prefixes: &'static [&'static str]) -> Self {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (arrived_tx, arrived) = tokio::sync::mpsc::unbounded_channel();
        let (release, released) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let arrived_tx = arrived_tx.clone();
                let mut released = released.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                    let body = if held_prefixes.iter().any(|p| path.starts_with(p)) {
                        let _ = arrived_tx.send(path);
                        let _ = released.wait_for(|r| *r).await;
                        r#"{"id":1}"#
                    } else {
                        r#"{"id":2}"#
                    };
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        Self {
            base,
            arrived,
            release,
            task,
        }
    }

    pub(crate) fn release(&self) {
        let _ = self.release.send(true);
    }
}

impl Drop for HoldingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
