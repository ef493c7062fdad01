//! The `/_sim/` control API over raw HTTP, and wire details the client does not expose
//! (casing, query decoding, zero session ids, api-version, router 404s).

use anyhow::Result;
use scaleset_github::{GithubScaleSetId, MessageId, Removal};
use serde_json::{Value, json};

use crate::helpers::{TestSim, admin_token, config, create_set, raw, with_client};

async fn control(
    sim: &TestSim,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, Value)> {
    let body = body.map(|b| b.to_string());
    let answer = raw(
        method,
        &sim.url(&format!("/_sim/{path}")),
        &[("content-type", "application/json")],
        body.as_deref(),
    )
    .await?;
    let json = if answer.body.is_empty() {
        Value::Null
    } else {
        answer.json()?
    };
    Ok((answer.status, json))
}

#[tokio::test]
async fn control_api_drives_every_operation() -> Result<()> {
    let (sim, client) = with_client(config()).await?;

    let (status, group) = control(
        &sim,
        "POST",
        "runner-groups",
        Some(json!({"scope": "acme", "name": "gpu"})),
    )
    .await?;
    assert_eq!((status, group["id"].as_i64()), (200, Some(2)));
    // An unseeded scope is not created behind the operator's back.
    let (status, _) = control(
        &sim,
        "POST",
        "runner-groups",
        Some(json!({"scope": "not-seeded", "name": "gpu"})),
    )
    .await?;
    assert_eq!(status, 404);
    assert!(
        !sim.sim
            .state()
            .runner_groups
            .iter()
            .any(|g| g.scope == "not-seeded")
    );

    let (status, foreign) = control(
        &sim,
        "POST",
        "foreign",
        Some(json!({"scope": "acme", "name": "theirs", "ownerName": "other-host", "runnerGroupId": 2})),
    )
    .await?;
    assert_eq!(status, 200);
    let foreign_id = foreign["scaleSetId"].as_i64().unwrap_or_default();
    let err = client
        .create_session(GithubScaleSetId(foreign_id), "me")
        .await
        .expect_err("held");
    assert!(err.is_session_conflict(), "{err:#}");

    let (status, jobs) = control(
        &sim,
        "POST",
        "jobs",
        Some(json!({"scaleSetId": foreign_id, "count": 2, "result": "failed"})),
    )
    .await?;
    assert_eq!(status, 200);
    assert_eq!(jobs["runnerRequestIds"].as_array().map(Vec::len), Some(2));

    let (status, state) = control(&sim, "GET", "state", None).await?;
    assert_eq!(status, 200);
    assert_eq!(state["scaleSets"][0]["session"]["ownerName"], "other-host");
    assert_eq!(state["jobs"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        state["runnerGroups"]
            .as_array()
            .map(Vec::len)
            .map(|n| n >= 2),
        Some(true)
    );

    let (status, faults) = control(
        &sim,
        "PUT",
        "faults",
        Some(json!({"bom": true, "serverErrors": {"remaining": 1, "status": 502}})),
    )
    .await?;
    assert_eq!((status, faults["bom"].as_bool()), (200, Some(true)));
    assert!(sim.sim.faults().bom);
    let (status, _) = control(&sim, "PUT", "faults", Some(json!({"noSuchFault": true}))).await?;
    assert_eq!(status, 400);
    let (_, faults) = control(&sim, "GET", "faults", None).await?;
    assert_eq!(faults["serverErrors"]["status"], 502);
    control(&sim, "PUT", "faults", Some(json!({}))).await?;

    let (status, time) =
        control(&sim, "POST", "time/advance", Some(json!({"seconds": 90}))).await?;
    assert_eq!((status, time["offsetSeconds"].as_f64()), (200, Some(90.0)));

    // Evicted once; then there is no session left to evict.
    for expected in [204, 404] {
        let (status, _) = control(
            &sim,
            "POST",
            &format!("scalesets/{foreign_id}/evict-session"),
            None,
        )
        .await?;
        assert_eq!(status, expected);
    }
    let (status, _) = control(&sim, "DELETE", &format!("scalesets/{foreign_id}"), None).await?;
    assert_eq!(status, 204);
    assert!(sim.sim.state().scale_set(foreign_id).is_none());

    let (status, err) =
        control(&sim, "POST", "runners", Some(json!({"jitConfig": "bogus"}))).await?;
    assert_eq!(status, 400, "{err}");

    let (status, requests) = control(&sim, "GET", "requests", None).await?;
    assert_eq!(status, 200);
    assert!(requests["counts"]["create_session"].as_u64() >= Some(1));
    assert!(requests["log"].as_array().is_some_and(|l| !l.is_empty()));
    let (status, _) = control(&sim, "DELETE", "requests", None).await?;
    assert_eq!(status, 204);
    assert!(!sim.sim.request_counts().contains_key("create_session"));
    let (status, polls) = control(&sim, "GET", "polls", None).await?;
    assert_eq!((status, polls["waiting"].as_u64()), (200, Some(0)));
    let (status, _) = control(&sim, "GET", "nope", None).await?;
    assert_eq!(status, 404);
    sim.stop().await
}

#[tokio::test]
async fn input_keys_are_case_insensitive_and_zero_session_ids_ignored() -> Result<()> {
    let sim = TestSim::default().await?;
    let (token, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    let auth = format!("Bearer {token}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    let created = raw(
        "POST",
        &format!("{base}_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        &headers,
        Some(r#"{"NAME":"cased","RunnerGroupId":1,"RunnerSetting":{"disableUpdate":true},"createdOn":"0001-01-01T00:00:00Z"}"#),
    )
    .await?;
    assert_eq!(created.status, 200, "create answers 200, not 201");
    let body = created.json()?;
    assert_eq!(body["name"], "cased");
    assert_eq!(
        body["runnerSetting"]["disableUpdate"], true,
        "camelCase out"
    );
    assert!(body.get("RunnerSetting").is_none());
    let id = body["id"].as_i64().unwrap_or_default();

    let session = raw(
        "POST",
        &format!("{base}_apis/runtime/runnerscalesets/{id}/sessions?api-version=6.0-preview"),
        &headers,
        Some(r#"{"sessionId":"00000000-0000-0000-0000-000000000000","ownerName":"me"}"#),
    )
    .await?;
    assert_eq!(session.status, 200);
    assert_ne!(
        session.json()?["sessionId"],
        "00000000-0000-0000-0000-000000000000"
    );

    // PATCH ignores zero values: an empty name and group 0 change nothing.
    let patched = raw(
        "PATCH",
        &format!("{base}_apis/runtime/runnerscalesets/{id}?api-version=6.0-preview"),
        &headers,
        Some(r#"{"name":"","runnerGroupId":0,"labels":[],"RunnerSetting":{},"createdOn":"0001-01-01T00:00:00Z"}"#),
    )
    .await?;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()?["name"], "cased");

    // Query values are form-decoded: `+` is a space.
    sim.sim.create_runner_group("acme", "my group")?;
    let groups = raw(
        "GET",
        &format!("{base}_apis/runtime/runnergroups/?groupName=my+group&api-version=6.0-preview"),
        &headers,
        None,
    )
    .await?;
    assert_eq!(groups.json()?["count"], 1);

    // Without api-version the service refuses.
    let unversioned = raw(
        "GET",
        &format!("{base}_apis/runtime/runnerscalesets"),
        &headers,
        None,
    )
    .await?;
    assert_eq!(unversioned.status, 400);
    // Unknown routes are router-level text/plain 404s.
    let unknown = raw("GET", &sim.url("/nowhere"), &[], None).await?;
    assert_eq!(unknown.status, 404);
    assert_eq!(&unknown.body[..], b"404 page not found\n");
    // A missing admin token is 401 InvalidTokenException.
    let anonymous = raw(
        "GET",
        &format!("{base}_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        &[],
        None,
    )
    .await?;
    assert_eq!(anonymous.status, 401);
    assert!(
        anonymous.json()?["typeName"]
            .as_str()
            .is_some_and(|t| t.contains("InvalidTokenException"))
    );
    assert!(anonymous.headers.contains_key("activityid"));
    sim.stop().await
}

#[tokio::test]
async fn shutdown_answers_held_polls_and_returns() -> Result<()> {
    let mut cfg = crate::helpers::config();
    cfg.long_poll_hold = std::time::Duration::from_secs(3600);
    let (sim, client) = with_client(cfg).await?;
    let (_, mut session) = crate::helpers::set_with_session(&client, "shutdown").await?;
    let poll = tokio::spawn(async move { client.get_message(&mut session, MessageId(0), 1).await });
    let handle = sim.sim.clone();
    crate::helpers::eventually("a held poll", || handle.waiting_polls() == 1).await;
    sim.stop().await?;
    assert!(poll.await??.is_none(), "the held poll got its 202");
    Ok(())
}

#[tokio::test]
async fn created_scale_set_is_visible_in_state() -> Result<()> {
    let sim = TestSim::default().await?;
    let client = sim.client("acme/widgets")?;
    let set = create_set(&client, "repo-set").await?;
    let state = sim.sim.state();
    let info = state.scale_set(set.id.0).expect("in state");
    assert_eq!(
        (info.scope.as_str(), info.name.as_str()),
        ("acme/widgets", "repo-set")
    );
    sim.stop().await
}

/// `DELETE /_sim/scalesets/{id}?keepRunners=true` deletes the set and leaves its runners
/// registered under the deleted set's id; without it (or `false`) they go with the set.
#[tokio::test]
async fn an_out_of_band_delete_may_keep_the_runners() -> Result<()> {
    use scaleset_github::JitConfigRequest;
    let (sim, client) = with_client(config()).await?;
    let kept = create_set(&client, "kept").await?;
    let dropped = create_set(&client, "dropped").await?;
    for (set, name) in [(&kept, "kept-1"), (&dropped, "dropped-1")] {
        client
            .generate_jit_config(set.id, &JitConfigRequest::new(name))
            .await?;
    }
    let (status, err) = control(
        &sim,
        "DELETE",
        &format!("scalesets/{}?keepRunners=yes", kept.id.0),
        None,
    )
    .await?;
    assert_eq!(status, 400, "{err}");
    assert!(
        sim.sim.state().scale_set(kept.id.0).is_some(),
        "not deleted"
    );

    let (status, _) = control(
        &sim,
        "DELETE",
        &format!("scalesets/{}?keepRunners=true", kept.id.0),
        None,
    )
    .await?;
    assert_eq!(status, 204);
    assert!(sim.sim.state().scale_set(kept.id.0).is_none());
    let runner = client
        .get_runner_by_name("kept-1")
        .await?
        .expect("the runner stays registered");
    assert_eq!(runner.runner_scale_set_id, kept.id);
    assert_eq!(
        client.get_runner(runner.id).await?.map(|r| r.id),
        Some(runner.id)
    );
    assert_eq!(client.remove_runner(runner.id).await?, Removal::Removed);
    assert!(client.get_runner_by_name("kept-1").await?.is_none());

    let (status, _) = control(
        &sim,
        "DELETE",
        &format!("scalesets/{}?keepRunners=false", dropped.id.0),
        None,
    )
    .await?;
    assert_eq!(status, 204);
    assert!(
        client.get_runner_by_name("dropped-1").await?.is_none(),
        "the runner went with its set"
    );
    sim.stop().await
}

/// Issue 31 item 3: `/_sim/pats` adds and revokes PATs and shows how often each was sent.
#[tokio::test]
async fn control_api_adds_revokes_and_counts_pats() -> Result<()> {
    let sim = TestSim::start(config()).await?;
    let (status, _) = control(&sim, "POST", "pats", Some(json!({"token": "ghp_next"}))).await?;
    assert_eq!(status, 204);
    let (status, _) = control(&sim, "POST", "pats", Some(json!({"token": ""}))).await?;
    assert_eq!(status, 400);
    let (status, _) = control(
        &sim,
        "POST",
        "pats/revoke",
        Some(json!({"token": "ghp_simulator"})),
    )
    .await?;
    assert_eq!(status, 204);
    let (status, _) = control(
        &sim,
        "POST",
        "pats/revoke",
        Some(json!({"token": "ghp_nope"})),
    )
    .await?;
    assert_eq!(status, 404);
    let refused = raw(
        "GET",
        &sim.url("/api/v3/rate_limit"),
        &[("authorization", "Bearer ghp_simulator")],
        None,
    )
    .await?;
    assert_eq!(refused.status, 401, "a revoked PAT is refused");
    let (status, pats) = control(&sim, "GET", "pats", None).await?;
    assert_eq!(status, 200);
    assert_eq!(
        pats,
        json!([
            {"token": "ghp_simulator", "uses": 1, "revoked": true},
            {"token": "ghp_next", "uses": 0, "revoked": false},
        ])
    );
    sim.stop().await
}

/// Sends one bodyless GET of `path` to the simulator from the loopback address `from`, and
/// reads the answer to its end.
async fn get_from(sim: &TestSim, from: std::net::Ipv4Addr, path: &str) -> Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((from, 0).into())?;
    let mut stream = socket.connect(sim.addr).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(())
}

/// The request log says which client sent each request (its address) and when, in real time,
/// it was answered: the chaos soak tells its workers apart this way (each connects through its
/// own proxy from its own loopback address).
#[tokio::test]
async fn the_request_log_names_each_clients_address_and_when_it_was_answered() -> Result<()> {
    let before = std::time::Instant::now();
    let sim = TestSim::default().await?;
    get_from(&sim, std::net::Ipv4Addr::new(127, 0, 0, 21), "/_sim/state").await?;
    get_from(&sim, std::net::Ipv4Addr::new(127, 0, 0, 22), "/_sim/state").await?;
    let log = sim.sim.request_log();
    let peers: Vec<_> = log
        .iter()
        .map(|r| r.peer.clone().unwrap_or_default())
        .collect();
    assert_eq!(peers.len(), 2, "{log:?}");
    assert!(peers[0].starts_with("127.0.0.21:"), "{peers:?}");
    assert!(peers[1].starts_with("127.0.0.22:"), "{peers:?}");
    let elapsed = u64::try_from(before.elapsed().as_millis())?;
    assert!(
        log[0].at_ms <= log[1].at_ms && log[1].at_ms <= elapsed,
        "in order, within the {elapsed} ms since the simulator started: {log:?}"
    );
    sim.stop().await
}

/// `listening(scope)` (and `GET /_sim/listening?scope=`) counts only that scope's scale sets:
/// those with a session, the message GETs held on them, and those with both; a poll let go is
/// no longer counted.
#[tokio::test]
async fn listening_counts_the_scopes_sessions_and_held_polls_only() -> Result<()> {
    let mut cfg = config();
    cfg.long_poll_hold = std::time::Duration::from_secs(3600);
    cfg.organizations.push("other".to_owned());
    let (sim, client) = with_client(cfg).await?;
    let (_, mut polled) = crate::helpers::set_with_session(&client, "polled").await?;
    crate::helpers::set_with_session(&client, "session-only").await?;
    create_set(&client, "no-session").await?;
    let other = sim.client("other")?;
    let (_, mut elsewhere) = crate::helpers::set_with_session(&other, "elsewhere").await?;
    let poll = tokio::spawn({
        let client = client.clone();
        async move { client.get_message(&mut polled, MessageId(0), 1).await }
    });
    let other_poll =
        tokio::spawn(async move { other.get_message(&mut elsewhere, MessageId(0), 1).await });
    let handle = sim.sim.clone();
    crate::helpers::eventually("two held polls", || handle.waiting_polls() == 2).await;

    assert_eq!(
        sim.sim.listening("acme")?,
        scaleset_sim::Listening {
            scale_sets: 3,
            sessions: 2,
            polls: 1,
            listening: 1,
        }
    );
    let (status, body) = control(&sim, "GET", "listening?scope=other", None).await?;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"scaleSets": 1, "sessions": 1, "polls": 1, "listening": 1})
    );
    let (status, _) = control(&sim, "GET", "listening?scope=nobody", None).await?;
    assert_eq!(status, 404, "an unseeded scope");
    let (status, _) = control(&sim, "GET", "listening", None).await?;
    assert_eq!(status, 400, "no scope");

    poll.abort();
    let _ = poll.await;
    crate::helpers::eventually("the aborted poll let go", || handle.waiting_polls() == 1).await;
    let acme = sim.sim.listening("acme")?;
    assert_eq!((acme.sessions, acme.polls, acme.listening), (2, 0, 0));
    assert_eq!(sim.sim.listening("other")?.listening, 1);
    other_poll.abort();
    sim.stop().await
}
