//! The admin-token cache: refresh from the unverified `exp` with a margin, a service URL that
//! changes on refresh, single-flight refresh under concurrency, invalidation on 401.

use std::sync::Arc;
use std::time::Duration;

use mockito::{Matcher, Mock, ServerGuard};
use scaleset_github::{Client, ClientConfig, GithubScaleSetId, MessageId, Session};

use crate::helpers::{
    API, HoldingServer, admin_jwt, assert_hit, issued_admin_token, issued_registration_token,
    pat_client, pat_client_with, refused_registration_token, registration_token, session_json,
};

/// Chain mocks handing out `admin_token` and `service_path`, each expected `hits` times.
async fn chain(
    server: &mut ServerGuard,
    admin_token: &str,
    service_path: &str,
    hits: usize,
) -> Vec<Mock> {
    let reg = issued_registration_token(server, hits).await;
    let service = format!("{}{service_path}", server.url());
    let rr = issued_admin_token(server, &service, admin_token, hits).await;
    vec![reg, rr]
}

fn client(server: &ServerGuard) -> Client {
    pat_client(server).0
}

async fn scale_set_mock(server: &mut ServerGuard, path: &str, token: &str, hits: usize) -> Mock {
    server
        .mock("GET", path)
        .match_query(Matcher::Exact(API.into()))
        .match_header("authorization", format!("Bearer {token}").as_str())
        .with_body(r#"{"id":1}"#)
        .expect(hits)
        .create_async()
        .await
}

/// A client (configured by `adjust`) reads scale set 1 `calls` times while the chain hands
/// out an admin token that expires in `exp_in` seconds; the chain must run `refreshes` times.
async fn reads_with_a_token_expiring_in(
    exp_in: i64,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
    calls: usize,
    refreshes: usize,
) {
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("tag", exp_in);
    let chain = chain(&mut server, &token, "/t/", refreshes).await;
    let path = "/t/_apis/runtime/runnerscalesets/1";
    let get = scale_set_mock(&mut server, path, &token, calls).await;
    let (client, _) = pat_client_with(&server, adjust);
    for _ in 0..calls {
        client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    }
    assert_hit(chain.iter().chain([&get])).await;
}

#[tokio::test]
async fn a_token_within_the_margin_of_exp_is_refreshed_before_each_call() {
    reads_with_a_token_expiring_in(30, |config| config, 2, 2).await;
}

#[tokio::test]
async fn a_token_with_a_distant_exp_is_reused() {
    reads_with_a_token_expiring_in(3600, |config| config, 3, 1).await;
}

#[tokio::test]
async fn the_margin_is_configurable() {
    let margin = |config: ClientConfig| config.with_admin_token_margin(Duration::from_secs(120));
    reads_with_a_token_expiring_in(90, margin, 2, 2).await;
}

#[tokio::test]
async fn the_service_url_may_change_on_refresh() {
    let mut server = mockito::Server::new_async().await;
    let first = admin_jwt("first", 10);
    let second = admin_jwt("second", 3600);
    let chain_a = chain(&mut server, &first, "/a/", 1).await;
    let chain_b = chain(&mut server, &second, "/b/", 1).await;
    let on_a = scale_set_mock(&mut server, "/a/_apis/runtime/runnerscalesets/1", &first, 1).await;
    let on_b = scale_set_mock(
        &mut server,
        "/b/_apis/runtime/runnerscalesets/1",
        &second,
        1,
    )
    .await;
    let client = client(&server);
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    assert_hit(chain_a.iter().chain(&chain_b).chain([&on_a, &on_b])).await;
    assert!(
        client
            .service_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("/b/")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_callers_cause_exactly_one_refresh() {
    const CALLERS: usize = 24;
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("shared", 3600);
    let chain = chain(&mut server, &token, "/t/", 1).await;
    let get = scale_set_mock(
        &mut server,
        "/t/_apis/runtime/runnerscalesets/1",
        &token,
        CALLERS,
    )
    .await;
    let client = client(&server);
    let barrier = Arc::new(tokio::sync::Barrier::new(CALLERS));
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let client = client.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                client.get_scale_set(GithubScaleSetId(1)).await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().id, GithubScaleSetId(1));
    }
    assert_hit(chain.iter().chain([&get])).await;
}

#[tokio::test]
async fn a_rejected_admin_token_is_fetched_again_on_the_next_call() {
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("rejected", 3600);
    let chain = chain(&mut server, &token, "/t/", 2).await;
    let rejected = server
        .mock("GET", "/t/_apis/runtime/runnerscalesets/1")
        .match_query(Matcher::Exact(API.into()))
        .with_status(401)
        .with_body(r#"{"typeName":"X.InvalidTokenException, X","message":"expired"}"#)
        .expect(1)
        .create_async()
        .await;
    let ok = scale_set_mock(&mut server, "/t/_apis/runtime/runnerscalesets/1", &token, 1).await;
    let client = client(&server);
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    assert!(err.is_admin_token_rejected());
    assert_eq!(err.class(), scaleset_github::ErrorClass::Retryable);
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    assert_hit(chain.iter().chain([&rejected, &ok])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_calls_are_not_serialized_behind_one_in_flight() {
    // The Actions service and the queue live on a server that holds a long-poll and one admin
    // call until released; a third, independent call must complete while both are in flight.
    let mut held =
        HoldingServer::start(&["/scalesets/message", "/t/_apis/runtime/runnerscalesets/1?"]).await;
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("parallel", 3600);
    let reg = issued_registration_token(&mut server, 1).await;
    let rr = issued_admin_token(&mut server, &format!("{}/t/", held.base), &token, 1).await;
    let client = client(&server);
    let mut session: Session = serde_json::from_str(&session_json(
        &format!("{}/scalesets/message", held.base),
        "q",
    ))
    .unwrap();

    let poll = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .get_message(&mut session, MessageId(0), 1)
                .await
                .map(|m| m.is_some())
        })
    };
    let admin = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .get_scale_set(GithubScaleSetId(1))
                .await
                .map(|s| s.id)
        })
    };
    // Bounded waits (generous for a loaded machine): a client that serialized its calls would
    // never let the second held call reach the server.
    let mut arrived = Vec::new();
    for _ in 0..2 {
        let path = tokio::time::timeout(Duration::from_secs(60), held.arrived.recv())
            .await
            .expect("a call waited behind another in-flight call")
            .unwrap();
        arrived.push(path);
    }
    arrived.sort();
    assert!(arrived[0].starts_with("/scalesets/message"), "{arrived:?}");
    assert!(
        arrived[1].starts_with("/t/_apis/runtime/runnerscalesets/1?"),
        "{arrived:?}"
    );

    // Both calls are in flight; this one must not wait for either (bounded, not timed).
    let independent = tokio::time::timeout(
        Duration::from_secs(60),
        client.get_scale_set(GithubScaleSetId(2)),
    )
    .await
    .expect("an independent call waited behind an in-flight call")
    .unwrap();
    assert_eq!(independent.id, GithubScaleSetId(2));

    held.release();
    assert!(poll.await.unwrap().unwrap());
    assert_eq!(admin.await.unwrap().unwrap(), GithubScaleSetId(1));
    assert_hit([&reg, &rr]).await;
}

/// Single-threaded on purpose: every spawned caller runs (and queues on the refresh) before the
/// runtime next polls for I/O, so all of them wait for the one refresh that is in flight.
/// A caller that starts after a refresh failed tries again (checked at the end).
#[tokio::test]
async fn concurrent_callers_share_one_failed_refresh() {
    const CALLERS: usize = 16;
    let mut server = mockito::Server::new_async().await;
    // Not retried (a plain 401 from the REST API): one refresh is exactly one request.
    let reg = refused_registration_token(&mut server).await;
    let client = client(&server);
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.get_scale_set(GithubScaleSetId(1)).await })
        })
        .collect();
    let mut first: Option<std::sync::Arc<scaleset_github::Error>> = None;
    for task in tasks {
        let err = task.await.unwrap().unwrap_err();
        // One failure, shared: every caller holds the same error.
        let scaleset_github::Error::SharedRefresh(shared) = &err else {
            panic!("{err:?}")
        };
        let first = first.get_or_insert_with(|| shared.clone());
        assert!(std::sync::Arc::ptr_eq(first, shared));
        assert_eq!(err.status(), Some(401), "{err}");
        assert_eq!(
            err.endpoint(),
            Some(scaleset_github::Endpoint::RegistrationToken)
        );
        assert!(err.to_string().contains("Bad credentials"), "{err}");
    }
    reg.assert_async().await;

    // A later call (not one that waited) tries again.
    let again = registration_token(&mut server)
        .with_status(401)
        .expect(1)
        .create_async()
        .await;
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    again.assert_async().await;
}

#[test]
fn a_pat_that_cannot_be_a_header_is_refused_at_build_time() {
    for pat in ["ghp_abc\n", "ghp_a\rb", "ghp_\u{7f}"] {
        let url = scaleset_github::ConfigUrl::parse("https://github.com/org").unwrap();
        let err = Client::new(scaleset_github::ClientConfig::new(
            url,
            scaleset_github::Credentials::pat(pat),
        ))
        .unwrap_err();
        assert!(
            matches!(&err, scaleset_github::Error::InvalidConfig { reason } if reason.contains("header")),
            "{pat:?}: {err}"
        );
        assert_eq!(err.class(), scaleset_github::ErrorClass::Fatal);
        assert!(
            !err.to_string().contains("ghp_"),
            "the token stays secret: {err}"
        );
    }
}

#[test]
fn app_key_fingerprint_is_the_one_github_shows() {
    // `openssl rsa -in data/test-app-key.pem -pubout -outform DER | openssl sha256 -binary |
    // openssl base64`: the fingerprint GitHub lists beside the key on the App's page.
    assert_eq!(
        scaleset_github::app_key_fingerprint(&scaleset_github::SecretString::from(
            crate::helpers::APP_KEY
        ))
        .ok()
        .as_deref(),
        Some("SHA256:d4kpash3BGWCAk7zXJIcGLg0QDg9Q6tGGTkrCHMgQ3A=")
    );
    let err = scaleset_github::app_key_fingerprint(&scaleset_github::SecretString::from(
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ))
    .expect_err("not a private key");
    assert!(
        err.to_string().contains("invalid github app private key"),
        "{err}"
    );
}
