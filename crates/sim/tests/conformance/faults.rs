//! Every fault, switched on at run time, and what the real client observes.

use std::time::Duration;

use anyhow::Result;
use scaleset_github::{Credentials, ErrorBody, MessageId, RetryPolicy, RunnerGroupId, Timeouts};
use scaleset_sim::{Burst, NestedStyle, RaceCreate, RateLimit, RestRateLimit, RestRateLimitAnswer};

use crate::helpers::{
    PAT, TestSim, admin_token, config, create_refused, create_set, get, get_as, post_as,
    post_registration_token, raw, registration_token, with_client, with_session, with_set,
};

#[tokio::test]
async fn omitted_runner_group_id_in_group_scoped_lists() -> Result<()> {
    let (sim, client, set) = with_set(config(), "omit").await?;
    sim.sim.update_faults(|f| f.omit_runner_group_id = true);
    // On the wire the field is gone from group-filtered list items…
    let (token, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    let listed = get_as(
        &format!(
            "{base}_apis/runtime/runnerscalesets?runnerGroupId=1&name=omit&api-version=6.0-preview"
        ),
        &token,
    )
    .await?
    .json()?;
    assert_eq!(listed["count"], 1);
    assert!(listed["value"][0].get("runnerGroupId").is_none());
    assert!(listed["value"][0].get("runnerGroupName").is_none());
    // …and the client still finds the set, reporting the group as omitted (not as a group id
    // that does not exist), so the caller can take the group from its query.
    let found = client
        .get_scale_set_by_name(RunnerGroupId(1), "omit")
        .await?
        .expect("found");
    assert_eq!(found.id, set.id);
    assert_eq!(found.runner_group_id, None);
    // Unfiltered lists and GET by id keep the field.
    assert_eq!(
        client.list_scale_sets(None).await?[0].runner_group_id,
        Some(RunnerGroupId(1))
    );
    assert_eq!(
        client.get_scale_set(set.id).await?.runner_group_id,
        Some(RunnerGroupId(1))
    );
    sim.stop().await
}

#[tokio::test]
async fn ignored_name_filter_returns_the_whole_group() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    create_set(&client, "a").await?;
    create_set(&client, "b").await?;
    sim.sim.update_faults(|f| f.ignore_name_filter = true);
    let (_, list) = client
        .query_scale_sets_by_name(RunnerGroupId(1), "a")
        .await?;
    assert_eq!(list.count, 2);
    // The client keeps only the exact name, so the ignored filter does not mislead it.
    let found = client.get_scale_set_by_name(RunnerGroupId(1), "a").await?;
    assert_eq!(found.map(|s| s.name), Some("a".to_owned()));
    sim.stop().await
}

#[tokio::test]
async fn nested_exceptions_are_still_recognised() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    create_set(&client, "n").await?;
    for style in [NestedStyle::InnerException, NestedStyle::Message] {
        sim.sim.update_faults(|f| f.nested_exceptions = Some(style));
        let err = create_refused(&client, "n").await?;
        assert!(err.is_scale_set_exists(), "{style:?}: {err:#}");
        assert_ne!(
            err.exception_name(),
            Some("RunnerScaleSetExistsException"),
            "{style:?}: the outer exception is the wrapper"
        );
    }
    sim.stop().await
}

#[tokio::test]
async fn bom_prefixed_bodies_decode() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    sim.sim.update_faults(|f| f.bom = true);
    let set = create_set(&client, "bom").await?;
    assert_eq!(client.get_scale_set(set.id).await?.name, "bom");
    let err = create_refused(&client, "bom").await?;
    assert!(err.is_scale_set_exists(), "{err:#}");
    let (token, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    let answer = get_as(
        &format!(
            "{base}_apis/runtime/runnerscalesets/{}?api-version=6.0-preview",
            set.id
        ),
        &token,
    )
    .await?;
    assert!(answer.body.starts_with(&[0xEF, 0xBB, 0xBF]));
    sim.stop().await
}

#[tokio::test]
async fn text_plain_errors_lose_the_exception_type() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    create_set(&client, "t").await?;
    sim.sim.update_faults(|f| f.text_plain_errors = true);
    let err = create_refused(&client, "t").await?;
    let service = err.service_error().expect("a service error");
    assert_eq!((service.status, service.body), (400, ErrorBody::Text));
    assert!(service.message.contains("already exists"), "{err:#}");
    assert!(!err.is_scale_set_exists(), "no typeName to match on");
    sim.stop().await
}

/// Reads `set` by id through the fault: the client's retries reach the answer, GitHub having
/// seen `requests` reads of scale sets by id in all.
async fn read_through(
    sim: &TestSim,
    client: &scaleset_github::Client,
    set: &scaleset_github::RunnerScaleSet,
    requests: u64,
) -> Result<()> {
    assert_eq!(client.get_scale_set(set.id).await?.id, set.id);
    assert_eq!(sim.sim.request_count("get_scale_set"), requests);
    Ok(())
}

#[tokio::test]
async fn server_error_bursts_are_retried_then_exhausted() -> Result<()> {
    let (sim, client, set) = with_set(config(), "burst").await?;
    sim.sim
        .update_faults(|f| f.server_errors = Some(Burst::new(2, 503).on("get_scale_set")));
    read_through(&sim, &client, &set, 3).await?;
    sim.sim
        .update_faults(|f| f.server_errors = Some(Burst::new(10, 500).on("get_scale_set")));
    let err = client.get_scale_set(set.id).await.expect_err("exhausted");
    assert!(
        matches!(
            err,
            scaleset_github::Error::RetriesExhausted { attempts: 5, .. }
        ),
        "{err:#}"
    );
    assert_eq!(sim.sim.request_count("get_scale_set"), 8);
    assert!(sim.sim.faults().server_errors.is_some(), "5 of 10 left");
    sim.stop().await
}

#[tokio::test]
async fn rate_limits_carry_retry_after() -> Result<()> {
    let (sim, client, set) = with_set(config(), "rl").await?;
    sim.sim
        .update_faults(|f| f.rate_limit = Some(RateLimit::new(1, 7).on("get_scale_set")));
    read_through(&sim, &client, &set, 2).await?;
    sim.sim
        .update_faults(|f| f.rate_limit = Some(RateLimit::new(1, 7)));
    let answer = get(&sim.url("/tenant/1/_apis/runtime/runnerscalesets")).await?;
    assert_eq!(answer.status, 429);
    assert_eq!(
        answer
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("7")
    );
    sim.stop().await
}

#[tokio::test]
async fn a_committed_create_answered_5xx_meets_exists_on_retry() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    sim.sim
        .update_faults(|f| f.commit_then_fail = Some(Burst::new(1, 500).on("create_scale_set")));
    let err = create_refused(&client, "committed").await?;
    assert!(err.is_scale_set_exists(), "{err:#}");
    assert_eq!(sim.sim.request_count("create_scale_set"), 2);
    let found = client
        .get_scale_set_by_name(RunnerGroupId(1), "committed")
        .await?;
    assert!(found.is_some(), "exactly one was created");
    // The same happens to generatejitconfig: the retry meets AgentExists.
    let set = found.expect("found");
    sim.sim.update_faults(|f| {
        f.commit_then_fail = Some(Burst::new(1, 502).on("generate_jit_config"));
    });
    let err = client
        .generate_jit_config(set.id, &scaleset_github::JitConfigRequest::new("r"))
        .await
        .expect_err("retried into agent exists");
    assert!(err.is_agent_exists(), "{err:#}");
    sim.stop().await
}

#[tokio::test]
async fn a_competitor_creates_the_same_name_between_lookup_and_create() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    sim.sim.update_faults(|f| {
        f.race_create = Some(RaceCreate::with_owner("rival-controller"));
        f.conflict_names_owner = true;
    });
    assert!(
        client
            .get_scale_set_by_name(RunnerGroupId(1), "raced")
            .await?
            .is_none()
    );
    let err = create_refused(&client, "raced").await?;
    assert!(err.is_scale_set_exists(), "{err:#}");
    let theirs = client
        .get_scale_set_by_name(RunnerGroupId(1), "raced")
        .await?
        .expect("theirs");
    let err = client
        .create_session(theirs.id, "me")
        .await
        .expect_err("held");
    assert_eq!(
        err.session_conflict_owner().as_deref(),
        Some("rival-controller")
    );
    assert!(sim.sim.faults().race_create.is_none(), "one shot");
    sim.stop().await
}

#[tokio::test]
async fn session_eviction_gives_404_on_refresh() -> Result<()> {
    let (sim, client, set, mut session) = with_session(config(), "evict").await?;
    sim.sim.evict_session(set.id.0)?;
    let err = client.refresh_session(&session).await.expect_err("evicted");
    assert_eq!(err.status(), Some(404), "{err:#}");
    assert!(err.is_session_expired_or_unknown(), "{err:#}");
    assert_eq!(err.exception_name(), Some("RunnerAdminException"));
    assert!(
        err.service_error()
            .is_some_and(|s| s.message.contains("session ID that doesn't exist")),
        "{err:#}"
    );
    // The queue token died with the session: 401, one refresh, which 404s.
    let before = sim.sim.request_count("refresh_session");
    let err = client
        .get_message(&mut session, MessageId(0), 1)
        .await
        .expect_err("evicted");
    assert_eq!(
        sim.sim.request_count("refresh_session"),
        before + 1,
        "{err:#}"
    );
    // A new session can be created.
    client.create_session(set.id, "again").await?;
    sim.stop().await
}

#[tokio::test]
async fn empty_message_queue_url_is_an_error() -> Result<()> {
    let (sim, client, set) = with_set(config(), "nourl").await?;
    sim.sim.update_faults(|f| f.empty_message_queue_url = true);
    let err = client
        .create_session(set.id, "me")
        .await
        .expect_err("empty url");
    assert!(
        matches!(err, scaleset_github::Error::UnexpectedResponse { .. }),
        "{err:#}"
    );
    sim.stop().await
}

#[tokio::test]
async fn empty_200_on_message_get_is_an_error_once() -> Result<()> {
    let (sim, client, _, mut session) = with_session(config(), "empty").await?;
    sim.sim.update_faults(|f| f.empty_message_body = 1);
    let err = client
        .get_message(&mut session, MessageId(0), 1)
        .await
        .expect_err("empty 200");
    assert!(
        matches!(
            err,
            scaleset_github::Error::UnexpectedResponse { status: 200, .. }
        ),
        "{err:#}"
    );
    assert_eq!(sim.sim.request_count("get_message"), 1, "not retried");
    assert!(
        client
            .get_message(&mut session, MessageId(0), 1)
            .await?
            .is_none()
    );
    sim.stop().await
}

#[tokio::test]
async fn runner_registration_401s_are_retried() -> Result<()> {
    let sim = TestSim::default().await?;
    sim.sim
        .update_faults(|f| f.runner_registration_unauthorized = 2);
    let client = sim.client("acme")?;
    client.service_url().await?;
    assert_eq!(sim.sim.request_count("runner_registration"), 3);
    sim.sim
        .update_faults(|f| f.runner_registration_unauthorized = 9);
    let never = sim.client_with("acme", Credentials::pat(PAT), RetryPolicy::never())?;
    let err = never.service_url().await.expect_err("401");
    assert_eq!(err.status(), Some(401), "{err:#}");
    sim.stop().await
}

#[tokio::test]
async fn added_latency_delays_answers() -> Result<()> {
    let (sim, client, set) = with_set(config(), "slow").await?;
    sim.sim.update_faults(|f| f.latency_ms = 300);
    // A client whose timeout is below the latency times out…
    let url = scaleset_github::ConfigUrl::parse(&sim.url("/acme"))?;
    let impatient = scaleset_github::Client::new(
        scaleset_github::ClientConfig::new(url, Credentials::pat(PAT))
            .with_retry(RetryPolicy::never())
            .with_timeouts(Timeouts::new(
                Duration::from_millis(50),
                Duration::from_secs(5),
            )),
    )?;
    let err = impatient.get_scale_set(set.id).await.expect_err("timeout");
    let chain = format!("{:#}", anyhow::Error::from(err));
    assert!(chain.contains("no response within"), "{chain}");
    // …a patient one gets the answer.
    assert_eq!(client.get_scale_set(set.id).await?.id, set.id);
    sim.stop().await
}

#[tokio::test]
async fn expired_admin_token_gets_invalid_token_exception() -> Result<()> {
    let (sim, client, set) = with_set(config(), "exp").await?;
    // The client checks `exp` against its own clock; the simulator's clock moves on.
    sim.sim.advance(Duration::from_secs(2 * 3600));
    let err = client.get_scale_set(set.id).await.expect_err("expired");
    assert!(err.is_admin_token_rejected(), "{err:#}");
    assert_eq!(err.exception_name(), Some("InvalidTokenException"));
    sim.stop().await
}

fn header<'a>(answer: &'a crate::helpers::Raw, name: &str) -> Option<&'a str> {
    answer.headers.get(name).and_then(|v| v.to_str().ok())
}

/// `resources.core` of `GET /api/v3/rate_limit`.
async fn core_quota(sim: &TestSim) -> Result<serde_json::Value> {
    let answer = get(&sim.url("/api/v3/rate_limit")).await?;
    anyhow::ensure!(answer.status == 200, "rate_limit: {}", answer.status);
    Ok(answer.json()?["resources"]["core"].clone())
}

#[tokio::test]
async fn rest_rate_limits_refuse_the_token_chain_in_githubs_three_ways() -> Result<()> {
    let sim = TestSim::default().await?;
    // The client's wait-and-retry on these answers is the client's own change; here the
    // answers themselves are checked on the wire.
    for (answer, status) in [
        (RestRateLimitAnswer::RetryAfter403, 403),
        (RestRateLimitAnswer::RetryAfter429, 429),
    ] {
        sim.sim
            .update_faults(|f| f.rest_rate_limit = Some(RestRateLimit::new(1, answer, 7)));
        assert_eq!(core_quota(&sim).await?["remaining"], 0, "{answer:?} armed");
        let refused = post_registration_token(&sim, "orgs/acme").await?;
        assert_eq!(refused.status, status, "{answer:?}");
        assert_eq!(header(&refused, "retry-after"), Some("7"), "{answer:?}");
        assert_eq!(
            header(&refused, "x-ratelimit-remaining"),
            None,
            "{answer:?}"
        );
        let body = refused.json()?;
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("secondary rate limit")),
            "{body}"
        );
        assert!(body["documentation_url"].is_string());
        // One shot: disarmed, the quota is back and the next call goes through.
        assert_eq!(sim.sim.faults().rest_rate_limit, None);
        assert_eq!(
            core_quota(&sim).await?["remaining"].as_u64().map(|r| r > 0),
            Some(true)
        );
        assert_eq!(
            post_registration_token(&sim, "orgs/acme").await?.status,
            201
        );
    }

    sim.sim.update_faults(|f| {
        f.rest_rate_limit = Some(RestRateLimit::new(
            2,
            RestRateLimitAnswer::RemainingZero403,
            120,
        ));
    });
    let before = sim.sim.now().as_secs();
    let refused = post_registration_token(&sim, "orgs/acme").await?;
    let after = sim.sim.now().as_secs();
    assert_eq!(refused.status, 403);
    assert_eq!(header(&refused, "retry-after"), None);
    assert_eq!(header(&refused, "x-ratelimit-remaining"), Some("0"));
    assert_eq!(header(&refused, "x-ratelimit-limit"), Some("5000"));
    assert_eq!(header(&refused, "x-ratelimit-used"), Some("5000"));
    assert_eq!(header(&refused, "x-ratelimit-resource"), Some("core"));
    let reset: u64 = header(&refused, "x-ratelimit-reset")
        .unwrap_or_default()
        .parse()?;
    assert!(
        (before + 120..=after + 120).contains(&reset),
        "epoch seconds of the simulated clock: {reset}"
    );
    assert!(
        refused.json()?["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("API rate limit exceeded")),
    );
    let quota = core_quota(&sim).await?;
    assert_eq!(
        (quota["remaining"].as_u64(), quota["limit"].as_u64()),
        (Some(0), Some(5000))
    );
    // Simulated time moves the advertised reset along with it.
    sim.sim.advance(Duration::from_secs(3600));
    let reset_later = core_quota(&sim).await?["reset"]
        .as_u64()
        .unwrap_or_default();
    assert!(reset_later >= before + 3600 + 120, "{reset_later}");
    sim.stop().await
}

#[tokio::test]
async fn rest_rate_limits_touch_only_the_token_chain_calls_they_name() -> Result<()> {
    let sim = TestSim::default().await?;
    let (admin, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    sim.sim.update_faults(|f| {
        f.rest_rate_limit = Some(
            RestRateLimit::new(1, RestRateLimitAnswer::RetryAfter429, 3).on("runner_registration"),
        );
    });
    // The Actions service and other REST calls are never refused by it.
    let listed = get_as(
        &format!("{base}_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        &admin,
    )
    .await?;
    assert_eq!(listed.status, 200);
    let downloads = get_as(&sim.url("/api/v3/orgs/acme/actions/runners/downloads"), PAT).await?;
    assert_eq!(downloads.status, 200);
    // Another token-chain call than the one named goes through (granted: 201).
    let token = registration_token(&sim, "orgs/acme").await?;
    let body = serde_json::json!({ "url": sim.url("/acme"), "runner_event": "register" });
    for path in [
        "/api/v3/actions/runner-registration",
        "/actions/runner-registration",
    ] {
        let answer = raw(
            "POST",
            &sim.url(path),
            &[("authorization", &format!("RemoteAuth {token}"))],
            Some(&body.to_string()),
        )
        .await?;
        // The first is refused (the one shot), the second, at the root path, goes through.
        let expected = if path.starts_with("/api") { 429 } else { 200 };
        assert_eq!(answer.status, expected, "{path}");
    }
    // The installation-token call is on the chain too, and the fault is set over HTTP as well.
    let put = raw(
        "PUT",
        &sim.url("/_sim/faults"),
        &[],
        Some(r#"{"restRateLimit": {"remaining": 1, "answer": "retryAfter403", "waitSecs": 9, "endpoint": "installation_token"}}"#),
    )
    .await?;
    assert_eq!(put.status, 200, "{:?}", put.json()?);
    assert_eq!(
        put.json()?["restRateLimit"],
        serde_json::json!({"remaining": 1, "answer": "retryAfter403", "waitSecs": 9, "endpoint": "installation_token"})
    );
    let minted = post_as(
        &sim.url("/api/v3/app/installations/1/access_tokens"),
        "not.a.jwt",
    )
    .await?;
    assert_eq!(minted.status, 403, "refused before the JWT is even read");
    assert_eq!(header(&minted, "retry-after"), Some("9"));
    sim.stop().await
}

/// `emptyRunnerDownloads`: GitHub lists no runner downloads for the entity (the bootstrap's
/// `tools` becomes `[]`, which garm-provider-common refuses); switched off, the list is back.
#[tokio::test]
async fn empty_runner_downloads_answers_an_empty_list_until_switched_off() -> Result<()> {
    let sim = TestSim::default().await?;
    let list = || async {
        let answer = raw(
            "GET",
            &sim.url("/api/v3/orgs/acme/actions/runners/downloads"),
            &[("authorization", &format!("Bearer {PAT}"))],
            None,
        )
        .await?;
        assert_eq!(answer.status, 200);
        anyhow::Ok(answer.json()?.as_array().map_or(0, Vec::len))
    };
    sim.sim.update_faults(|f| f.empty_runner_downloads = true);
    assert_eq!(list().await?, 0);
    sim.sim.update_faults(|f| f.empty_runner_downloads = false);
    assert_eq!(list().await?, 7);
    Ok(())
}
