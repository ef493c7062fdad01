//! The admin-token cache: refresh from the unverified `exp` with a margin, a service URL that
//! changes on refresh, single-flight refresh under concurrency, invalidation on 401.

use std::sync::Arc;
use std::time::Duration;

use mockito::{Matcher, Mock, ServerGuard};
use scaleset_github::{Client, Credentials};

use crate::helpers::{ORG, PAT, RecordingSleeper, admin_jwt, config_for};

const API: &str = "api-version=6.0-preview";

/// Chain mocks handing out `admin_token` and `service_path`, each expected `hits` times.
async fn chain(
    server: &mut ServerGuard,
    admin_token: &str,
    service_path: &str,
    hits: usize,
) -> Vec<Mock> {
    let reg = server
        .mock(
            "POST",
            format!("/api/v3/orgs/{ORG}/actions/runners/registration-token").as_str(),
        )
        .with_status(201)
        .with_body(r#"{"token":"reg"}"#)
        .expect(hits)
        .create_async()
        .await;
    let service = format!("{}{service_path}", server.url());
    let rr = server
        .mock("POST", "/api/v3/actions/runner-registration")
        .with_status(201)
        .with_body(serde_json::json!({"url": service, "token": admin_token}).to_string())
        .expect(hits)
        .create_async()
        .await;
    vec![reg, rr]
}

fn client(server: &ServerGuard) -> Client {
    Client::new(config_for(
        server,
        ORG,
        Credentials::pat(PAT),
        Arc::new(RecordingSleeper::default()),
    ))
    .unwrap()
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

#[tokio::test]
async fn a_token_within_the_margin_of_exp_is_refreshed_before_each_call() {
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("short", 30);
    let chain = chain(&mut server, &token, "/t/", 2).await;
    let get = scale_set_mock(&mut server, "/t/_apis/runtime/runnerscalesets/1", &token, 2).await;
    let client = client(&server);
    client.get_scale_set(1).await.unwrap();
    client.get_scale_set(1).await.unwrap();
    for m in &chain {
        m.assert_async().await;
    }
    get.assert_async().await;
}

#[tokio::test]
async fn a_token_with_a_distant_exp_is_reused() {
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("long", 3600);
    let chain = chain(&mut server, &token, "/t/", 1).await;
    let get = scale_set_mock(&mut server, "/t/_apis/runtime/runnerscalesets/1", &token, 3).await;
    let client = client(&server);
    for _ in 0..3 {
        client.get_scale_set(1).await.unwrap();
    }
    for m in &chain {
        m.assert_async().await;
    }
    get.assert_async().await;
}

#[tokio::test]
async fn the_margin_is_configurable() {
    let mut server = mockito::Server::new_async().await;
    let token = admin_jwt("mid", 90);
    let chain = chain(&mut server, &token, "/t/", 2).await;
    let get = scale_set_mock(&mut server, "/t/_apis/runtime/runnerscalesets/1", &token, 2).await;
    let config = config_for(
        &server,
        ORG,
        Credentials::pat(PAT),
        Arc::new(RecordingSleeper::default()),
    )
    .with_admin_token_margin(Duration::from_secs(120));
    let client = Client::new(config).unwrap();
    client.get_scale_set(1).await.unwrap();
    client.get_scale_set(1).await.unwrap();
    for m in &chain {
        m.assert_async().await;
    }
    get.assert_async().await;
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
    client.get_scale_set(1).await.unwrap();
    client.get_scale_set(1).await.unwrap();
    for m in chain_a.iter().chain(&chain_b) {
        m.assert_async().await;
    }
    on_a.assert_async().await;
    on_b.assert_async().await;
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
                client.get_scale_set(1).await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().id, 1);
    }
    for m in &chain {
        m.assert_async().await;
    }
    get.assert_async().await;
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
    let err = client.get_scale_set(1).await.unwrap_err();
    assert!(err.is_admin_token_rejected());
    assert_eq!(err.class(), scaleset_github::ErrorClass::Retryable);
    client.get_scale_set(1).await.unwrap();
    for m in &chain {
        m.assert_async().await;
    }
    rejected.assert_async().await;
    ok.assert_async().await;
}
