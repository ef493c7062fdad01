//! The call observer: every call, the token chain's included, is reported exactly once, under
//! the client's own endpoint name, however many attempts it took.

use std::sync::{Arc, Mutex};

use mockito::Matcher;
use scaleset_github::{
    CallObserver, CallReport, Endpoint, GithubScaleSetId, JitConfigRequest, MessageId,
    NewRunnerScaleSet, RunnerGroupId, RunnerId, RunnerRequestId, RunnerScaleSetPatch,
};

use crate::helpers::{API, harness, pat_client_with, session_json};

/// What one report said: the endpoint, and the accepted status or the error's status.
type Seen = (Endpoint, Result<u16, Option<u16>>, u32);

/// Keeps every report.
#[derive(Default)]
struct Recorder(Mutex<Vec<Seen>>);

impl Recorder {
    /// The reports so far, forgetting them.
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl CallObserver for Recorder {
    fn finished(&self, report: &CallReport<'_>) {
        self.0.lock().unwrap().push((
            report.endpoint,
            report.outcome.map_err(scaleset_github::Error::status),
            report.attempts,
        ));
    }
}

#[tokio::test]
async fn every_endpoint_call_is_reported_once_under_its_own_name() {
    let mut h = harness().await;
    let recorder = Arc::new(Recorder::default());
    let observer = recorder.clone();
    let (client, _) = pat_client_with(&h.server, move |config| config.with_observer(observer));

    // The first call runs the token chain: its two calls are reported too, before the call.
    let get = h
        .service_answer(
            "GET",
            "_apis/runtime/runnerscalesets/1",
            API,
            r#"{"id":1,"name":"set"}"#,
        )
        .await;
    client.get_scale_set(GithubScaleSetId(1)).await.unwrap();
    get.assert_async().await;
    assert_eq!(
        recorder.take(),
        [
            (Endpoint::RegistrationToken, Ok(201), 1),
            (Endpoint::RunnerRegistration, Ok(201), 1),
            (Endpoint::GetScaleSet, Ok(200), 1),
        ]
    );

    let queue = format!("{}/queue", h.server.url());
    let create = h
        .service_answer(
            "POST",
            "_apis/runtime/runnerscalesets/5/sessions",
            API,
            session_json(&queue, "queue-token"),
        )
        .await;
    let mut session = client
        .create_session(GithubScaleSetId(5), "o")
        .await
        .unwrap();
    create.assert_async().await;
    assert_eq!(recorder.take(), [(Endpoint::CreateSession, Ok(200), 1)]);

    // From here on everything answers 404 (not retried, no session refresh): each method
    // makes exactly one call.
    let mut refusals = Vec::new();
    for method in ["GET", "POST", "PATCH", "DELETE"] {
        refusals.push(
            h.server
                .mock(method, Matcher::Regex("^/(tenant|queue)".to_owned()))
                .with_status(404)
                .create_async()
                .await,
        );
    }
    let set = NewRunnerScaleSet::new("set", RunnerGroupId(1));
    let patch = RunnerScaleSetPatch::default();
    let jit = JitConfigRequest::new("r");
    macro_rules! reports {
        ($endpoint:expr, $call:expr) => {{
            let _ = $call.await;
            assert_eq!(
                recorder.take(),
                [($endpoint, Err(Some(404)), 1)],
                "{}",
                stringify!($call)
            );
        }};
    }
    reports!(
        Endpoint::GetRunnerGroupByName,
        client.get_runner_group_by_name("group")
    );
    reports!(
        Endpoint::GetScaleSetByName,
        client.get_scale_set_by_name(RunnerGroupId(1), "set")
    );
    reports!(
        Endpoint::GetScaleSetByName,
        client.query_scale_sets_by_name(RunnerGroupId(1), "set")
    );
    reports!(Endpoint::ListScaleSets, client.list_scale_sets(None));
    reports!(
        Endpoint::GetScaleSet,
        client.get_scale_set(GithubScaleSetId(2))
    );
    reports!(Endpoint::CreateScaleSet, client.create_scale_set(&set));
    reports!(
        Endpoint::UpdateScaleSet,
        client.update_scale_set(GithubScaleSetId(2), &patch)
    );
    reports!(
        Endpoint::DeleteScaleSet,
        client.delete_scale_set(GithubScaleSetId(2))
    );
    reports!(
        Endpoint::CreateSession,
        client.create_session(GithubScaleSetId(5), "o")
    );
    reports!(Endpoint::RefreshSession, client.refresh_session(&session));
    reports!(
        Endpoint::DeleteSession,
        client.delete_session(GithubScaleSetId(5), "s")
    );
    reports!(
        Endpoint::GetMessage,
        client.get_message(&mut session, MessageId(0), 1)
    );
    reports!(
        Endpoint::DeleteMessage,
        client.delete_message(&mut session, MessageId(1))
    );
    reports!(
        Endpoint::GetAcquirableJobs,
        client.get_acquirable_jobs(GithubScaleSetId(5))
    );
    reports!(
        Endpoint::AcquireJobs,
        client.acquire_jobs(&mut session, &[RunnerRequestId(1)])
    );
    reports!(
        Endpoint::GenerateJitConfig,
        client.generate_jit_config(GithubScaleSetId(5), &jit)
    );
    reports!(Endpoint::GetRunner, client.get_runner(RunnerId(1)));
    reports!(Endpoint::GetRunnerByName, client.get_runner_by_name("r"));
    reports!(Endpoint::ListRunners, client.list_runners());
    reports!(Endpoint::RemoveRunner, client.remove_runner(RunnerId(1)));
}

/// A retried call is one call: one report, after the last attempt, with the attempts counted.
/// Calls through the unobserved handle are not reported; the observed handle shares its
/// connections and admin token.
#[tokio::test]
async fn a_retried_call_is_reported_once_after_its_last_attempt() {
    let mut h = harness().await;
    let recorder = Arc::new(Recorder::default());
    let observed = h.client.with_observer(recorder.clone());
    let runners = h
        .service_answer(
            "GET",
            "_apis/distributedtask/pools/0/agents",
            API,
            r#"{"count":0,"value":[]}"#,
        )
        .await;
    h.client.list_runners().await.unwrap();
    runners.assert_async().await;
    assert_eq!(recorder.take(), [], "the plain handle reports nothing");

    let failing = h
        .service_failing("GET", "_apis/distributedtask/pools/0/agents/7", 503, "", 5)
        .await;
    let error = observed.get_runner(RunnerId(7)).await.unwrap_err();
    failing.assert_async().await;
    assert!(
        matches!(
            error,
            scaleset_github::Error::RetriesExhausted { attempts: 5, .. }
        ),
        "{error:?}"
    );
    let seen = recorder.take();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, Endpoint::GetRunner);
    assert_eq!(seen[0].2, 5, "every attempt counted in the one report");
}

/// Keeps the advertised waits of every report.
#[derive(Default)]
struct Waits(Mutex<Vec<(u32, std::time::Duration)>>);

impl CallObserver for Waits {
    fn finished(&self, report: &CallReport<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((report.advertised_waits, report.advertised_wait));
    }
}

/// Only the waits the server asked for (`Retry-After` on a 429 or 503) are reported as
/// advertised; the client's own backoff (a 503 without the header) is not.
#[tokio::test]
async fn the_waits_a_server_asked_for_are_reported_with_the_call() {
    let mut h = harness().await;
    let waits = Arc::new(Waits::default());
    let observed = h.client.with_observer(waits.clone());
    let limited = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/5", API)
        .with_status(429)
        .with_header("Retry-After", "7")
        .expect(1)
        .create_async()
        .await;
    let unavailable = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/5", API)
        .with_status(503)
        .expect(1)
        .create_async()
        .await;
    let ok = h
        .service_answer("GET", "_apis/runtime/runnerscalesets/5", API, r#"{"id":5}"#)
        .await;
    observed.get_scale_set(GithubScaleSetId(5)).await.unwrap();
    limited.assert_async().await;
    unavailable.assert_async().await;
    ok.assert_async().await;
    assert_eq!(h.sleeper.waits().len(), 2, "two retries waited");
    assert_eq!(
        waits.0.lock().unwrap().last().copied(),
        Some((1, std::time::Duration::from_secs(7))),
        "one advertised wait of 7 s"
    );
}
