//! Shared test setup: a mockito server with the REST token chain, a client pointed at it, and
//! a sleeper that records retry waits instead of sleeping.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mockito::{Matcher, Mock, ServerGuard};
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, Sleeper};

pub(crate) const PAT: &str = "ghp_test_pat_secret";
pub(crate) const REGISTRATION_TOKEN: &str = "reg-token-secret";
pub(crate) const ORG: &str = "my-org";
pub(crate) const SERVICE_PATH: &str = "/tenant/123";

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

impl Harness {
    /// The service base URL the runner-registration mock hands out.
    pub(crate) fn service_url(&self) -> String {
        format!("{}{SERVICE_PATH}/", self.server.url())
    }

    /// A mock of an Actions-service call: path under the service base, exact query, admin bearer
    /// and JSON content type asserted.
    pub(crate) fn service_mock(&mut self, method: &str, path: &str, query: &str) -> Mock {
        let token = self.admin_token.clone();
        self.server
            .mock(method, format!("{SERVICE_PATH}/{path}").as_str())
            .match_query(Matcher::Exact(query.to_owned()))
            .match_header("authorization", format!("Bearer {token}").as_str())
            .match_header("content-type", "application/json")
            .match_header("user-agent", Matcher::Regex("scaleset-github/".to_owned()))
    }
}

pub(crate) fn config_for(
    server: &ServerGuard,
    path: &str,
    credentials: Credentials,
    sleeper: Arc<RecordingSleeper>,
) -> ClientConfig {
    let url = ConfigUrl::parse(&format!("{}/{path}", server.url())).unwrap();
    ClientConfig::new(url, credentials).with_sleeper(sleeper)
}

/// Mocks for the PAT chain of an organization: registration token (201) then
/// runner-registration (201) returning `admin_token` and the service URL.
pub(crate) async fn pat_chain(server: &mut ServerGuard, admin_token: &str) -> Vec<Mock> {
    let registration = server
        .mock(
            "POST",
            format!("/api/v3/orgs/{ORG}/actions/runners/registration-token").as_str(),
        )
        .match_header("authorization", format!("Bearer {PAT}").as_str())
        .match_header("content-type", "application/vnd.github.v3+json")
        .match_header("accept", Matcher::Missing)
        .with_status(201)
        .with_body(format!(
            r#"{{"token":"{REGISTRATION_TOKEN}","expires_at":"2030-01-01T00:00:00Z"}}"#
        ))
        .create_async()
        .await;
    let service_url = format!("{}{SERVICE_PATH}/", server.url());
    let config_url = format!("{}/{ORG}", server.url());
    let runner_registration = server
        .mock("POST", "/api/v3/actions/runner-registration")
        .match_header(
            "authorization",
            format!("RemoteAuth {REGISTRATION_TOKEN}").as_str(),
        )
        .match_header("content-type", "application/json")
        .match_body(Matcher::Json(
            serde_json::json!({"url": config_url, "runner_event": "register"}),
        ))
        .with_status(201)
        .with_body(serde_json::json!({"url": service_url, "token": admin_token}).to_string())
        .create_async()
        .await;
    vec![registration, runner_registration]
}

/// A PAT client for `http://127.0.0.1:PORT/my-org` with its chain mocked.
pub(crate) async fn harness() -> Harness {
    let mut server = mockito::Server::new_async().await;
    let admin_token = admin_jwt("a", 3600);
    let chain = pat_chain(&mut server, &admin_token).await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let client = Client::new(config_for(
        &server,
        ORG,
        Credentials::pat(PAT),
        sleeper.clone(),
    ))
    .unwrap();
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
