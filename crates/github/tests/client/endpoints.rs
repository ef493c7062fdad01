//! Every endpoint of protocol §5 (1-17, 2b, 16b) and the REST token chain: method, path,
//! query, headers and body asserted; typed responses decoded.

use std::sync::Arc;

use mockito::{Matcher, Mock, ServerGuard};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Client, Credentials, GithubScaleSetId, JitConfigRequest, Label, MessageId, NewRunnerScaleSet,
    Removal, RunnerGroup, RunnerGroupId, RunnerId, RunnerRequestId, RunnerScaleSet,
    RunnerScaleSetPatch, RunnerSetting,
};

use crate::helpers::{
    API, APP_KEY, Harness, Issuing as _, RecordingSleeper, USER_AGENT, admin_jwt, assert_hit,
    client_at, config_for, exchange, harness, installation_token, registration_answer,
    session_json,
};

#[tokio::test]
async fn pat_chain_then_get_scale_set_by_id() {
    let mut h = harness().await;
    let mock = h.service_answer("GET", "_apis/runtime/runnerscalesets/5", API, r#"{"id":5,"name":"set","runnerGroupId":1,"runnerSetting":{"disableUpdate":true},"createdOn":"2024-05-06T07:08:09.1234567Z"}"#).await;
    let set = h.client.get_scale_set(GithubScaleSetId(5)).await.unwrap();
    assert_eq!(set.id, GithubScaleSetId(5));
    assert_eq!(set.name, "set");
    assert!(set.runner_setting.disable_update);
    assert_eq!(set.created_on.unwrap().subsec_nanos(), 123_456_700);
    mock.assert_async().await;
    for m in &h.chain {
        m.assert_async().await;
    }
    assert_eq!(
        h.client.service_url().await.unwrap().as_str(),
        h.service_url()
    );
}

/// The runner-registration call under `api` (the REST base's path) whose body must name
/// `config_url`, answered `status` with the service at `service` and a fresh admin token.
fn registering(
    server: &mut ServerGuard,
    api: &str,
    config_url: &str,
    status: usize,
    service: &str,
) -> Mock {
    server
        .mock(
            "POST",
            format!("{api}/actions/runner-registration").as_str(),
        )
        .match_body(Matcher::Json(
            serde_json::json!({"url": config_url, "runner_event": "register"}),
        ))
        .with_status(status)
        .with_body(registration_answer(service, &admin_jwt("x", 3600)))
}

#[tokio::test]
async fn registration_token_paths_for_repository_and_enterprise() {
    for (path, rest) in [
        (
            "owner/repo",
            "/api/v3/repos/owner/repo/actions/runners/registration-token",
        ),
        (
            "enterprises/big-ent",
            "/api/v3/enterprises/big-ent/actions/runners/registration-token",
        ),
    ] {
        let mut server = mockito::Server::new_async().await;
        let reg = server
            .mock("POST", rest)
            .match_header("authorization", "Bearer pat")
            .match_header("content-type", "application/vnd.github.v3+json")
            .match_header("user-agent", USER_AGENT)
            .match_body(Matcher::Missing)
            .issuing("r")
            .create_async()
            .await;
        let config_url = format!("{}/{path}", server.url());
        let service = format!("{}/rest", server.url());
        let rr = registering(&mut server, "/api/v3", &config_url, 200, &service)
            .match_header("authorization", "RemoteAuth r")
            .match_header("content-type", "application/json")
            .match_header("user-agent", USER_AGENT)
            .create_async()
            .await;
        let (client, _) = client_at(&server.url(), path, Credentials::pat("pat"), |c| c);
        let url = client.service_url().await.unwrap();
        assert_eq!(url.as_str(), service);
        reg.assert_async().await;
        rr.assert_async().await;
    }
}

#[tokio::test]
async fn github_app_chain_signs_a_valid_rs256_jwt() {
    let mut server = mockito::Server::new_async().await;
    let public_key = include_bytes!("data/test-app-key.pub.der").to_vec();
    let install = installation_token(&mut server, 4242)
        .match_header("content-type", "application/vnd.github+json")
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Missing)
        .match_request(move |request| {
            let Some(auth) = request
                .header("authorization")
                .first()
                .and_then(|v| v.to_str().ok())
            else {
                return false;
            };
            let Some(jwt) = auth.strip_prefix("Bearer ") else {
                return false;
            };
            let parts: Vec<&str> = jwt.split('.').collect();
            if parts.len() != 3 {
                return false;
            }
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let (Ok(claims), Ok(signature)) = (b64.decode(parts[1]), b64.decode(parts[2])) else {
                return false;
            };
            let signed = format!("{}.{}", parts[0], parts[1]);
            let key = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &public_key);
            if key.verify(signed.as_bytes(), &signature).is_err() {
                return false;
            }
            let claims: serde_json::Value = serde_json::from_slice(&claims).unwrap_or_default();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            let iat = claims["iat"].as_i64().unwrap_or_default();
            let exp = claims["exp"].as_i64().unwrap_or_default();
            claims["iss"] == "Iv1.client"
                && (now - 70..=now - 50).contains(&iat)
                && exp - iat == 540
        })
        .with_status(201)
        .with_body(
            r#"{"token":"ghs_installation","expires_at":"2030-01-01T00:00:00Z","permissions":{}}"#,
        )
        .create_async()
        .await;
    let reg = server
        .mock(
            "POST",
            "/api/v3/repos/o/r/actions/runners/registration-token",
        )
        .match_header("authorization", "Bearer ghs_installation")
        .match_header("content-type", "application/vnd.github.v3+json")
        .match_body(Matcher::Missing)
        .issuing("reg")
        .create_async()
        .await;
    let service = format!("{}/tenant/1/", server.url());
    let config_url = format!("{}/o/r", server.url());
    let rr = registering(&mut server, "/api/v3", &config_url, 201, &service)
        .match_header("authorization", "RemoteAuth reg")
        .create_async()
        .await;
    let credentials = Credentials::app("Iv1.client", 4242, APP_KEY);
    let (client, _) = client_at(&server.url(), "o/r", credentials, |c| c);
    client.service_url().await.unwrap();
    assert_hit([&install, &reg, &rr]).await;
}

#[tokio::test]
async fn installation_token_must_be_201() {
    let mut server = mockito::Server::new_async().await;
    let install = installation_token(&mut server, 1)
        .with_status(200)
        .with_body(r#"{"token":"t"}"#)
        .expect(1)
        .create_async()
        .await;
    let (client, _) = client_at(
        &server.url(),
        "org",
        Credentials::app("1", 1, APP_KEY),
        |c| c,
    );
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    assert_eq!(err.status(), Some(200));
    install.assert_async().await;
}

#[tokio::test]
async fn app_credentials_are_refused_for_enterprise_scope() {
    let server = mockito::Server::new_async().await;
    let err = Client::new(config_for(
        &server,
        "enterprises/e",
        Credentials::app("1", 1, APP_KEY),
        Arc::new(RecordingSleeper::default()),
    ))
    .unwrap_err();
    assert!(err.to_string().contains("enterprise"), "{err}");
}

/// Looks up the runner group `name` (`encoded` in the query) while the service answers `body`,
/// asserting the query was made.
async fn runner_group_by_name(
    h: &mut Harness,
    name: &str,
    encoded: &str,
    body: &str,
) -> Option<RunnerGroup> {
    let query = format!("api-version=6.0-preview&groupName={encoded}");
    let mock = h
        .service_answer("GET", "_apis/runtime/runnergroups/", &query, body)
        .await;
    let group = h.client.get_runner_group_by_name(name).await.unwrap();
    mock.assert_async().await;
    group
}

/// Looks up the scale set `name` in the runner group `group` while the service answers `body`,
/// asserting the query was made.
async fn scale_set_by_name(
    h: &mut Harness,
    group: i64,
    name: &str,
    body: &str,
) -> Option<RunnerScaleSet> {
    let query = format!("api-version=6.0-preview&name={name}&runnerGroupId={group}");
    let mock = h
        .service_answer("GET", "_apis/runtime/runnerscalesets", &query, body)
        .await;
    let found = h
        .client
        .get_scale_set_by_name(RunnerGroupId(group), name)
        .await
        .unwrap();
    mock.assert_async().await;
    found
}

#[tokio::test]
async fn get_runner_group_by_name() {
    let mut h = harness().await;
    let group = runner_group_by_name(
        &mut h,
        "my group",
        "my+group",
        r#"{"count":1,"value":[{"id":3,"name":"my group","size":2,"isDefaultGroup":false}]}"#,
    )
    .await
    .unwrap();
    assert_eq!(
        (group.id, group.name.as_str(), group.size),
        (RunnerGroupId(3), "my group", 2)
    );
    let none = runner_group_by_name(&mut h, "nope", "nope", r#"{"count":0,"value":[]}"#).await;
    assert!(none.is_none());
}

#[tokio::test]
async fn get_scale_set_by_name_decides_on_count() {
    let mut h = harness().await;
    let one = r#"{"count":1,"value":[{"id":5,"name":"set"}]}"#;
    let found = scale_set_by_name(&mut h, 1, "set", one).await.unwrap();
    assert_eq!(found.id, GithubScaleSetId(5));
    // The item omitted `runnerGroupId`: that must read as "omitted", never as a group id, so
    // the adoption rules can count it as in the queried group.
    assert_eq!(found.runner_group_id, None);

    let zero = r#"{"count":0,"value":[{"id":5,"name":"set"}]}"#;
    assert!(scale_set_by_name(&mut h, 1, "gone", zero).await.is_none());

    let many = h
        .service_mock(
            "GET",
            "_apis/runtime/runnerscalesets",
            "api-version=6.0-preview&name=dup&runnerGroupId=2",
        )
        .with_body(r#"{"count":2,"value":[{"id":5,"name":"dup"},{"id":6,"name":"dup"}]}"#)
        .expect(2)
        .create_async()
        .await;
    let err = h
        .client
        .get_scale_set_by_name(RunnerGroupId(2), "dup")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, scaleset_github::Error::Ambiguous { name, count: 2, .. } if name == "dup"),
        "{err}"
    );
    assert_eq!(err.class(), scaleset_github::ErrorClass::Fatal);
    let (_, raw) = h
        .client
        .query_scale_sets_by_name(RunnerGroupId(2), "dup")
        .await
        .unwrap();
    assert_eq!(raw.value.len(), 2);
    many.assert_async().await;
}

/// The service's name filter may be looser than ours (case, prefixes, a filter it ignores):
/// only an item named exactly as asked is the scale set.
#[tokio::test]
async fn get_scale_set_by_name_keeps_only_the_exact_name() {
    let mut h = harness().await;
    let loose = r#"{"count":3,"value":[{"id":5,"name":"Set"},{"id":6,"name":"set-2"},{"id":7,"name":"set"}]}"#;
    let found = scale_set_by_name(&mut h, 1, "set", loose).await;
    assert_eq!(found.map(|s| s.id), Some(GithubScaleSetId(7)));

    let other_case = r#"{"count":1,"value":[{"id":5,"name":"Linux"}]}"#;
    assert!(
        scale_set_by_name(&mut h, 1, "linux", other_case)
            .await
            .is_none()
    );
}

#[tokio::test]
async fn escaped_names_survive_every_query() {
    let mut h = harness().await;
    for (name, encoded) in [
        ("example+garm&123", "example%2Bgarm%26123"),
        ("a b", "a+b"),
        ("x#y", "x%23y"),
        ("50%", "50%25"),
        ("a;b", "a%3Bb"),
        ("grüße", "gr%C3%BC%C3%9Fe"),
    ] {
        let queries = [
            (
                "_apis/runtime/runnerscalesets",
                format!("api-version=6.0-preview&name={encoded}&runnerGroupId=1"),
            ),
            (
                "_apis/runtime/runnergroups/",
                format!("api-version=6.0-preview&groupName={encoded}"),
            ),
            (
                "_apis/distributedtask/pools/0/agents",
                format!("agentName={encoded}&api-version=6.0-preview"),
            ),
        ];
        let mut mocks = Vec::new();
        for (path, query) in &queries {
            let none = r#"{"count":0,"value":[]}"#;
            mocks.push(h.service_answer("GET", path, query, none).await);
        }
        let set = h.client.get_scale_set_by_name(RunnerGroupId(1), name).await;
        assert!(set.unwrap().is_none(), "{name}");
        let group = h.client.get_runner_group_by_name(name).await;
        assert!(group.unwrap().is_none(), "{name}");
        let runner = h.client.get_runner_by_name(name).await;
        assert!(runner.unwrap().is_none(), "{name}");
        assert_hit(&mocks).await;
    }
}

#[tokio::test]
async fn list_scale_sets_with_and_without_group() {
    let mut h = harness().await;
    let all = h.service_answer("GET", "_apis/runtime/runnerscalesets", API, r#"{"count":2,"value":[{"id":1,"name":"a"},{"id":2,"name":"b","RunnerSetting":{"disableUpdate":true}}]}"#).await;
    let sets = h.client.list_scale_sets(None).await.unwrap();
    assert_eq!(sets.len(), 2);
    assert!(sets[1].runner_setting.disable_update);
    all.assert_async().await;
    let grouped = h
        .service_answer(
            "GET",
            "_apis/runtime/runnerscalesets",
            "api-version=6.0-preview&runnerGroupId=7",
            r#"{"count":0,"value":null}"#,
        )
        .await;
    assert!(
        h.client
            .list_scale_sets(Some(RunnerGroupId(7)))
            .await
            .unwrap()
            .is_empty()
    );
    grouped.assert_async().await;
}

#[tokio::test]
async fn create_scale_set_sends_runner_setting_and_default_label() {
    let mut h = harness().await;
    let mock = h
        .service_mock("POST", "_apis/runtime/runnerscalesets", API)
        .match_body(Matcher::Json(serde_json::json!({
            "name": "set",
            "runnerGroupId": 1,
            "labels": [{"type": "System", "name": "set"}],
            "RunnerSetting": {"disableUpdate": true}
        })))
        .with_status(200)
        .with_body(r#"{"id":11,"name":"set","runnerGroupId":1,"labels":[{"id":1,"type":"System","name":"set"}],"runnerSetting":{"disableUpdate":true,"ephemeral":true,"status":0}}"#)
        .create_async()
        .await;
    let created = h
        .client
        .create_scale_set(&NewRunnerScaleSet::new("set", RunnerGroupId(1)))
        .await
        .unwrap();
    assert_eq!(created.id, GithubScaleSetId(11));
    assert_eq!(created.labels[0].id, Some(1));
    assert_eq!(created.runner_setting.ephemeral, Some(true));
    mock.assert_async().await;

    let labelled = h
        .service_mock("POST", "_apis/runtime/runnerscalesets", API)
        .match_body(Matcher::Json(serde_json::json!({
            "name": "l",
            "runnerGroupId": 2,
            "labels": [{"type": "System", "name": "gpu"}, {"type": "User", "name": "x"}],
            "RunnerSetting": {}
        })))
        .with_body(r#"{"id":12}"#)
        .create_async()
        .await;
    let request = NewRunnerScaleSet::new("l", RunnerGroupId(2))
        .with_labels(vec![
            Label {
                kind: String::new(),
                name: "gpu".into(),
                id: None,
            },
            Label {
                kind: "User".into(),
                name: "x".into(),
                id: None,
            },
        ])
        .with_runner_setting(RunnerSetting::default());
    assert_eq!(
        h.client.create_scale_set(&request).await.unwrap().id,
        GithubScaleSetId(12)
    );
    labelled.assert_async().await;
}

#[tokio::test]
async fn create_scale_set_expects_exactly_200() {
    let mut h = harness().await;
    let mock = h
        .service_mock("POST", "_apis/runtime/runnerscalesets", API)
        .with_status(201)
        .with_body(r#"{"id":11}"#)
        .expect(1)
        .create_async()
        .await;
    let err = h.failed_create_scale_set().await;
    assert_eq!(err.status(), Some(201));
    mock.assert_async().await;
}

#[tokio::test]
async fn update_scale_set_sends_only_set_fields() {
    let mut h = harness().await;
    let mock = h
        .service_mock("PATCH", "_apis/runtime/runnerscalesets/5", API)
        .match_body(Matcher::Json(serde_json::json!({"runnerGroupId": 3})))
        .with_body(r#"{"id":5,"runnerGroupId":3}"#)
        .create_async()
        .await;
    let patch = RunnerScaleSetPatch {
        runner_group_id: Some(RunnerGroupId(3)),
        ..RunnerScaleSetPatch::default()
    };
    assert_eq!(
        h.client
            .update_scale_set(GithubScaleSetId(5), &patch)
            .await
            .unwrap()
            .runner_group_id,
        Some(RunnerGroupId(3))
    );
    mock.assert_async().await;

    let settings = h
        .service_mock("PATCH", "_apis/runtime/runnerscalesets/5", API)
        .match_body(Matcher::Json(serde_json::json!({
            "labels": [{"type": "System", "name": "n"}],
            "RunnerSetting": {"disableUpdate": true}
        })))
        .with_body(r#"{"id":5}"#)
        .create_async()
        .await;
    let patch = RunnerScaleSetPatch {
        labels: Some(vec![Label {
            kind: String::new(),
            name: "n".into(),
            id: None,
        }]),
        runner_setting: Some(RunnerSetting {
            disable_update: true,
            ..RunnerSetting::default()
        }),
        ..RunnerScaleSetPatch::default()
    };
    h.client
        .update_scale_set(GithubScaleSetId(5), &patch)
        .await
        .unwrap();
    settings.assert_async().await;
}

#[tokio::test]
async fn delete_scale_set_expects_204() {
    let mut h = harness().await;
    let mock = h
        .service_status("DELETE", "_apis/runtime/runnerscalesets/5", 204)
        .await;
    let deleted = exchange(&mock, h.client.delete_scale_set(GithubScaleSetId(5))).await;
    deleted.unwrap();
    let wrong = h
        .service_status("DELETE", "_apis/runtime/runnerscalesets/6", 200)
        .await;
    let answer = exchange(&wrong, h.client.delete_scale_set(GithubScaleSetId(6))).await;
    assert_eq!(answer.unwrap_err().status(), Some(200));
}

#[tokio::test]
async fn session_create_refresh_delete() {
    let mut h = harness().await;
    let queue = format!("{}/scalesets/message", h.server.url());
    let create = h
        .service_mock("POST", "_apis/runtime/runnerscalesets/5/sessions", API)
        .match_body(Matcher::Json(
            serde_json::json!({"ownerName": "scaleset-owner"}),
        ))
        .with_body(session_json(&queue, "queue-1"))
        .create_async()
        .await;
    let session = h
        .client
        .create_session(GithubScaleSetId(5), "scaleset-owner")
        .await
        .unwrap();
    assert_eq!(session.session_id, "8e1f2b4c-0000-4000-8000-000000000001");
    assert_eq!(
        session.message_queue_access_token.expose_secret(),
        "queue-1"
    );
    assert_eq!(session.statistics.unwrap().total_assigned_jobs, 2);
    assert_eq!(session.scale_set_id(), GithubScaleSetId(5));
    create.assert_async().await;

    let refresh = h
        .service_mock(
            "PATCH",
            "_apis/runtime/runnerscalesets/5/sessions/8e1f2b4c-0000-4000-8000-000000000001",
            API,
        )
        .match_body(Matcher::Missing)
        .with_body(session_json(&queue, "queue-2"))
        .create_async()
        .await;
    let refreshed = h.client.refresh_session(&session).await.unwrap();
    assert_eq!(
        refreshed.message_queue_access_token.expose_secret(),
        "queue-2"
    );
    refresh.assert_async().await;

    let delete = h
        .service_status(
            "DELETE",
            "_apis/runtime/runnerscalesets/5/sessions/8e1f2b4c-0000-4000-8000-000000000001",
            204,
        )
        .await;
    h.client
        .delete_session(GithubScaleSetId(5), &refreshed.session_id)
        .await
        .unwrap();
    delete.assert_async().await;
}

#[tokio::test]
async fn session_ids_are_escaped_as_one_path_segment() {
    let mut h = harness().await;
    let delete = h
        .service_status(
            "DELETE",
            "_apis/runtime/runnerscalesets/5/sessions/a%2Fb%3Fc%23d",
            204,
        )
        .await;
    h.client
        .delete_session(GithubScaleSetId(5), "a/b?c#d")
        .await
        .unwrap();
    delete.assert_async().await;
}

/// The long poll of the queue `/scalesets/message` with the queue token `queue-1` and the
/// capacity header `capacity`: accept, user agent, no content type and no body asserted.
fn long_poll(h: &mut Harness, capacity: &str) -> Mock {
    h.server
        .mock("GET", "/scalesets/message")
        .match_header("authorization", "Bearer queue-1")
        .match_header("accept", "application/json; api-version=6.0-preview")
        .match_header("x-scalesetmaxcapacity", capacity)
        .match_header("content-type", Matcher::Missing)
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Missing)
}

#[tokio::test]
async fn get_message_long_poll_and_delete_message() {
    let mut h = harness().await;
    let mut session = h.open_session_on("/scalesets/message", "queue-1").await;

    let empty = long_poll(&mut h, "10")
        .with_status(202)
        .create_async()
        .await;
    let poll = h.client.get_message(&mut session, MessageId(0), 10);
    assert!(exchange(&empty, poll).await.unwrap().is_none());

    let body = r#"[{"messageType":"JobAssigned","jobId":"j"}]"#;
    let message = long_poll(&mut h, "3")
        .match_query(Matcher::Exact("lastMessageId=100006141".into()))
        .with_body(
            serde_json::json!({"messageId": 100006142i64, "messageType": "RunnerScaleSetJobMessages", "body": body})
                .to_string(),
        )
        .create_async()
        .await;
    let poll = h
        .client
        .get_message(&mut session, MessageId(100_006_141), 3);
    let msg = exchange(&message, poll).await.unwrap().unwrap();
    assert_eq!(msg.message_id, MessageId(100_006_142));
    assert_eq!(msg.jobs.len(), 1);

    let ack = h
        .server
        .mock("DELETE", "/scalesets/message/100006142")
        .match_header("authorization", "Bearer queue-1")
        .match_header("content-type", "application/json")
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Missing)
        .with_status(204)
        .create_async()
        .await;
    let acked = h.client.delete_message(&mut session, msg.message_id);
    exchange(&ack, acked).await.unwrap();
}

#[tokio::test]
async fn queue_url_query_is_kept() {
    let mut h = harness().await;
    let mut session = h
        .open_session_on("/scalesets/message?tenant=a+b", "q")
        .await;
    let poll = h
        .server
        .mock("GET", "/scalesets/message")
        .match_query(Matcher::Exact("tenant=a+b&lastMessageId=4".into()))
        .with_status(202)
        .create_async()
        .await;
    let polled = h.client.get_message(&mut session, MessageId(4), 1);
    exchange(&poll, polled).await.unwrap();
    let ack = h
        .server
        .mock("DELETE", "/scalesets/message/4")
        .match_query(Matcher::Exact("tenant=a+b".into()))
        .with_status(204)
        .create_async()
        .await;
    let acked = h.client.delete_message(&mut session, MessageId(4));
    exchange(&ack, acked).await.unwrap();
}

#[tokio::test]
async fn acquirable_jobs_and_acquire_jobs() {
    let mut h = harness().await;
    let none = h
        .service_status("GET", "_apis/runtime/runnerscalesets/5/acquirablejobs", 204)
        .await;
    let jobs = exchange(&none, h.client.get_acquirable_jobs(GithubScaleSetId(5))).await;
    assert!(jobs.unwrap().is_empty());
    let some = h.service_answer("GET", "_apis/runtime/runnerscalesets/6/acquirablejobs", API, r#"{"count":1,"value":[{"runnerRequestId":7848922,"messageType":"JobAvailable","requestLabels":["x"]}]}"#).await;
    let jobs = exchange(&some, h.client.get_acquirable_jobs(GithubScaleSetId(6))).await;
    assert_eq!(
        jobs.unwrap()[0].runner_request_id,
        RunnerRequestId(7_848_922)
    );

    let mut session = h.open_session_on("/scalesets/message", "queue-1").await;
    let acquire = h
        .service_mock_as(
            "POST",
            "_apis/runtime/runnerscalesets/5/acquirejobs",
            API,
            "queue-1",
        )
        .match_body(Matcher::Exact("[1,2]".into()))
        .with_body(r#"{"count":1,"value":[2]}"#)
        .create_async()
        .await;
    assert_eq!(
        h.client
            .acquire_jobs(&mut session, &[RunnerRequestId(1), RunnerRequestId(2)])
            .await
            .unwrap(),
        vec![RunnerRequestId(2)]
    );
    acquire.assert_async().await;
}

#[tokio::test]
async fn runners_jit_get_list_remove() {
    let mut h = harness().await;
    let jit = h
        .service_mock("POST", "_apis/runtime/runnerscalesets/5/generatejitconfig", API)
        .match_body(Matcher::Json(serde_json::json!({"name": "runner-1", "workFolder": ""})))
        .with_body(r#"{"runner":{"id":9,"name":"runner-1","runnerScaleSetId":5},"encodedJITConfig":"eyJqaXQiOiJibG9iIn0="}"#)
        .create_async()
        .await;
    let config = h
        .client
        .generate_jit_config(GithubScaleSetId(5), &JitConfigRequest::new("runner-1"))
        .await
        .unwrap();
    assert_eq!(config.runner.id, RunnerId(9));
    assert_eq!(
        config.encoded_jit_config.expose_secret(),
        "eyJqaXQiOiJibG9iIn0="
    );
    jit.assert_async().await;

    let work = h
        .service_mock(
            "POST",
            "_apis/runtime/runnerscalesets/5/generatejitconfig",
            API,
        )
        .match_body(Matcher::Json(
            serde_json::json!({"name": "runner-2", "workFolder": "_work"}),
        ))
        .with_body(r#"{"runner":{"id":10},"encodedJITConfig":"x"}"#)
        .create_async()
        .await;
    h.client
        .generate_jit_config(
            GithubScaleSetId(5),
            &JitConfigRequest::new("runner-2").with_work_folder("_work"),
        )
        .await
        .unwrap();
    work.assert_async().await;

    let by_id = h.service_answer("GET", "_apis/distributedtask/pools/0/agents/9", API, r#"{"id":9,"name":"runner-1","runnerScaleSetId":5,"status":"online","busy":true,"labels":[{"name":"x","type":"System"}]}"#).await;
    let runner = h.client.get_runner(RunnerId(9)).await.unwrap().unwrap();
    assert_eq!(
        (runner.id, runner.runner_scale_set_id, runner.busy),
        (RunnerId(9), GithubScaleSetId(5), Some(true))
    );
    by_id.assert_async().await;

    let by_name = h
        .service_answer(
            "GET",
            "_apis/distributedtask/pools/0/agents",
            "agentName=runner-1&api-version=6.0-preview",
            r#"{"count":1,"value":[{"id":9,"name":"runner-1"}]}"#,
        )
        .await;
    assert_eq!(
        h.client
            .get_runner_by_name("runner-1")
            .await
            .unwrap()
            .unwrap()
            .id,
        RunnerId(9)
    );
    by_name.assert_async().await;

    let list = h
        .service_answer(
            "GET",
            "_apis/distributedtask/pools/0/agents",
            API,
            r#"{"count":2,"value":[{"id":9},{"id":10}]}"#,
        )
        .await;
    assert_eq!(h.client.list_runners().await.unwrap().len(), 2);
    list.assert_async().await;

    let remove = h
        .service_status("DELETE", "_apis/distributedtask/pools/0/agents/9", 204)
        .await;
    assert_eq!(
        h.client.remove_runner(RunnerId(9)).await.unwrap(),
        Removal::Removed
    );
    remove.assert_async().await;
}

#[tokio::test]
async fn an_explicit_api_base_overrides_the_derived_one() {
    let mut server = mockito::Server::new_async().await;
    let reg = server
        .mock(
            "POST",
            "/orgs/hosted-org/actions/runners/registration-token",
        )
        .issuing("r")
        .create_async()
        .await;
    let service = format!("{}/rest", server.url());
    let rr = registering(
        &mut server,
        "",
        "https://github.com/hosted-org",
        201,
        &service,
    )
    .create_async()
    .await;
    let get = server
        .mock("GET", "/rest/_apis/runtime/runnerscalesets/1")
        .match_query(Matcher::Exact(API.into()))
        .match_header("content-type", "application/json")
        .match_header("user-agent", USER_AGENT)
        .match_body(Matcher::Missing)
        .with_body(r#"{"id":1}"#)
        .create_async()
        .await;
    let url = scaleset_github::ConfigUrl::parse("https://github.com/hosted-org/").unwrap();
    assert_eq!(url.api_base(false).as_str(), "https://api.github.com/");
    let config = scaleset_github::ClientConfig::new(url, Credentials::pat("pat"))
        .with_api_base(url::Url::parse(&server.url()).unwrap())
        .with_sleeper(Arc::new(RecordingSleeper::default()));
    let client = Client::new(config).unwrap();
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    assert_hit([&reg, &rr, &get]).await;
}

/// GitHub's downloads answer, trimmed to two entries (one with a download token, one with an
/// entry GitHub would never send: no URL).
const DOWNLOADS: &str = r#"[
  {"os":"linux","architecture":"x64","download_url":"https://example.test/actions-runner-linux-x64-2.330.0.tar.gz","filename":"actions-runner-linux-x64-2.330.0.tar.gz","sha256_checksum":"13a6"},
  {"os":"win","architecture":"arm64","download_url":"https://example.test/actions-runner-win-arm64-2.330.0.zip","filename":"actions-runner-win-arm64-2.330.0.zip","temp_download_token":"tdt","sha256_checksum":null},
  {"os":"osx","architecture":"x64","download_url":null,"filename":"x"}
]"#;

#[tokio::test]
async fn runner_downloads_are_read_at_the_entitys_rest_path_with_the_pat() {
    for (path, rest) in [
        (
            "owner/repo",
            "/api/v3/repos/owner/repo/actions/runners/downloads",
        ),
        ("acme", "/api/v3/orgs/acme/actions/runners/downloads"),
        (
            "enterprises/big-ent",
            "/api/v3/enterprises/big-ent/actions/runners/downloads",
        ),
    ] {
        let mut server = mockito::Server::new_async().await;
        let downloads = server
            .mock("GET", rest)
            .match_header("authorization", "Bearer pat")
            .match_header("accept", "application/vnd.github+json")
            .match_header("user-agent", USER_AGENT)
            .with_status(200)
            .with_body(DOWNLOADS)
            .expect(1)
            .create_async()
            .await;
        let (client, _) = client_at(&server.url(), path, Credentials::pat("pat"), |c| c);
        let listed = client.runner_downloads().await.unwrap();
        downloads.assert_async().await;
        assert_eq!(listed.len(), 2, "the entry without a URL is dropped");
        assert_eq!(
            (listed[0].os.as_str(), listed[0].architecture.as_str()),
            ("linux", "x64")
        );
        assert_eq!(listed[0].sha256_checksum.as_deref(), Some("13a6"));
        assert_eq!(
            listed[1]
                .temp_download_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            Some("tdt".to_owned())
        );
        assert_eq!(listed[1].sha256_checksum, None);
    }
}
