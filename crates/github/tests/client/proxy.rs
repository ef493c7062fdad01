//! Proxies: requests tunnelled with `CONNECT` through a proxy written here (on loopback), the
//! `NO_PROXY` bypass, proxy credentials, and the environment read from a map.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, Error, GithubScaleSetId, ProxyConfig, RetryPolicy,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::helpers::{RecordingSleeper, admin_jwt};
use crate::https::tls_server;

/// A host name that resolves nowhere: only the proxy (which maps it to loopback) can reach it,
/// so a request that arrives proves it went through the proxy.
const UNRESOLVABLE: &str = "github.scaleset.invalid";

/// One `CONNECT` the proxy served.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tunnelled {
    target: String,
    authorization: Option<String>,
}

/// A minimal HTTP proxy that only speaks `CONNECT`: it records each tunnel, connects to the
/// target (with [`UNRESOLVABLE`] mapped to 127.0.0.1) and copies bytes both ways.
struct ConnectProxy {
    url: String,
    seen: Arc<Mutex<Vec<Tunnelled>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ConnectProxy {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(tunnel(client, record.clone()));
            }
        });
        Self { url, seen, task }
    }

    fn seen(&self) -> Vec<Tunnelled> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tunnel(mut client: TcpStream, seen: Arc<Mutex<Vec<Tunnelled>>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_owned();
    let mut parts = request_line.split(' ');
    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
        let _ = client
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let authorization = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, value)| value.trim().to_owned());
    seen.lock().unwrap().push(Tunnelled {
        target: target.to_owned(),
        authorization,
    });
    let address = target.replace(UNRESOLVABLE, "127.0.0.1");
    let Ok(mut upstream) = TcpStream::connect(address).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_ok()
    {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

/// A mockito server with the PAT chain and one scale set, reachable as `host`.
async fn github_as(host: &str) -> (mockito::ServerGuard, String, Vec<mockito::Mock>) {
    let mut server = mockito::Server::new_async().await;
    let port = server.socket_address().port();
    let base = format!("http://{host}:{port}");
    let mut mocks = vec![
        server
            .mock("POST", "/api/v3/orgs/my-org/actions/runners/registration-token")
            .with_status(201)
            .with_body(r#"{"token":"reg"}"#)
            .expect_at_least(1)
            .create_async()
            .await,
        server
            .mock("POST", "/api/v3/actions/runner-registration")
            .with_status(201)
            .with_body(
                serde_json::json!({"url": format!("{base}/tenant/"), "token": admin_jwt("p", 3600)})
                    .to_string(),
            )
            .expect_at_least(1)
            .create_async()
            .await,
    ];
    mocks.push(
        server
            .mock("GET", "/tenant/_apis/runtime/runnerscalesets/5")
            .match_query(mockito::Matcher::Any)
            .with_body(r#"{"id":5,"name":"proxied"}"#)
            .expect_at_least(1)
            .create_async()
            .await,
    );
    (server, base, mocks)
}

fn client_for(base: &str, proxy: ProxyConfig) -> Client {
    let url = ConfigUrl::parse(&format!("{base}/my-org")).unwrap();
    Client::new(
        ClientConfig::new(url, Credentials::pat("ghp_pat"))
            .with_proxy(proxy)
            .with_retry(RetryPolicy::never())
            .with_sleeper(Arc::new(RecordingSleeper::default())),
    )
    .unwrap()
}

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn http_requests_go_through_http_proxy_from_the_environment() {
    let proxy = ConnectProxy::start().await;
    let (_server, base, mocks) = github_as(UNRESOLVABLE).await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let vars = env(&[("HTTP_PROXY", &proxy.url)]);
    let client = client_for(&base, ProxyConfig::from_env(&vars));
    let set = client.get_scale_set(GithubScaleSetId(5)).await.unwrap();
    assert_eq!(set.name, "proxied");
    for mock in &mocks {
        mock.assert_async().await;
    }
    let seen = proxy.seen();
    assert!(!seen.is_empty());
    for tunnel in seen {
        assert_eq!(tunnel.target, format!("{UNRESOLVABLE}:{port}"));
        assert_eq!(tunnel.authorization, None);
    }
}

#[tokio::test]
async fn https_requests_are_tunnelled_and_tls_stays_end_to_end() {
    let proxy = ConnectProxy::start().await;
    let server = tls_server().await;
    let url = ConfigUrl::parse(&format!("https://127.0.0.1:{}/tls-org", server.port)).unwrap();
    let vars = env(&[("https_proxy", &proxy.url)]);
    let client = Client::new(
        ClientConfig::new(url, Credentials::pat("pat"))
            .with_ca_bundle_pem(server.ca_pem.clone())
            .with_proxy_from_env(&vars)
            .with_sleeper(Arc::new(RecordingSleeper::default())),
    )
    .unwrap();
    assert_eq!(
        client
            .get_scale_set(GithubScaleSetId(5))
            .await
            .unwrap()
            .name,
        "over-tls"
    );
    let targets: Vec<String> = proxy.seen().into_iter().map(|t| t.target).collect();
    assert!(!targets.is_empty());
    assert!(
        targets
            .iter()
            .all(|t| *t == format!("127.0.0.1:{}", server.port)),
        "{targets:?}"
    );
    server.task.abort();
}

#[tokio::test]
async fn no_proxy_hosts_go_direct() {
    let proxy = ConnectProxy::start().await;
    let (_server, base, mocks) = github_as("127.0.0.1").await;
    for no_proxy in ["127.0.0.1", "127.0.0.0/8", "*", "example.com, 127.0.0.1"] {
        let vars = env(&[("HTTP_PROXY", &proxy.url), ("NO_PROXY", no_proxy)]);
        let client = client_for(&base, ProxyConfig::from_env(&vars));
        assert_eq!(
            client
                .get_scale_set(GithubScaleSetId(5))
                .await
                .unwrap()
                .name,
            "proxied"
        );
        assert!(proxy.seen().is_empty(), "NO_PROXY={no_proxy}");
    }
    for mock in &mocks {
        mock.assert_async().await;
    }
    // A list that does not name the host leaves it proxied.
    let vars = env(&[("HTTP_PROXY", &proxy.url), ("NO_PROXY", "example.com")]);
    client_for(&base, ProxyConfig::from_env(&vars))
        .get_scale_set(GithubScaleSetId(5))
        .await
        .unwrap();
    assert!(!proxy.seen().is_empty());
}

#[tokio::test]
async fn proxy_credentials_are_sent_as_basic_auth_and_never_shown() {
    let proxy = ConnectProxy::start().await;
    let (_server, base, _mocks) = github_as(UNRESOLVABLE).await;
    let with_user = proxy.url.replace("http://", "http://alice:s3cret@");
    let config = ProxyConfig::none().with_http(with_user);
    let shown = format!("{config:?}");
    assert!(
        !shown.contains("s3cret") && !shown.contains("alice"),
        "{shown}"
    );
    client_for(&base, config)
        .get_scale_set(GithubScaleSetId(5))
        .await
        .unwrap();
    let seen = proxy.seen();
    assert!(!seen.is_empty());
    // base64("alice:s3cret")
    for tunnel in seen {
        assert_eq!(
            tunnel.authorization.as_deref(),
            Some("Basic YWxpY2U6czNjcmV0")
        );
    }
}

#[test]
fn the_environment_is_read_upper_case_first_and_http_proxy_is_ignored_under_cgi() {
    let vars = env(&[
        ("HTTPS_PROXY", "http://upper:1"),
        ("https_proxy", "http://lower:1"),
        ("http_proxy", "http://lower:2"),
        ("no_proxy", "internal"),
    ]);
    let read = ProxyConfig::from_env(&vars);
    assert_eq!(read.https.as_deref(), Some("http://upper:1"));
    assert_eq!(read.http.as_deref(), Some("http://lower:2"));
    assert_eq!(read.no_proxy, "internal");
    let cgi = env(&[("HTTP_PROXY", "http://evil:1"), ("REQUEST_METHOD", "GET")]);
    assert!(ProxyConfig::from_env(&cgi).is_none());
    let empty = env(&[("HTTPS_PROXY", " "), ("https_proxy", "http://lower:1")]);
    assert_eq!(
        ProxyConfig::from_env(&empty).https.as_deref(),
        Some("http://lower:1")
    );
    assert!(ProxyConfig::from_env(&env(&[])).is_none());
}

#[test]
fn an_unusable_proxy_is_refused_when_the_client_is_built() {
    for (proxy, why) in [
        ("https://proxy.example:3128", "only http://"),
        ("socks5://proxy.example:1080", "only http://"),
        ("http://", "invalid proxy"),
    ] {
        let url = ConfigUrl::parse("https://github.com/org").unwrap();
        let err = Client::new(
            ClientConfig::new(url, Credentials::pat("p"))
                .with_proxy(ProxyConfig::none().with_https(proxy)),
        )
        .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidConfig { reason } if reason.contains(why)),
            "{proxy}: {err}"
        );
    }
    // Without a scheme, http:// is assumed.
    let url = ConfigUrl::parse("https://github.com/org").unwrap();
    Client::new(
        ClientConfig::new(url, Credentials::pat("p"))
            .with_proxy(ProxyConfig::none().with_https("proxy.example:3128")),
    )
    .unwrap();
}
