//! Test helpers: a simulator on 127.0.0.1:0 per test, real `scaleset-github` clients pointed at
//! it with millisecond retry delays, and a raw HTTP helper for checking exact wire details.

use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, GithubScaleSetId, Message, MessageId,
    NewRunnerScaleSet, RetryPolicy, RunnerGroupId, RunnerScaleSet, Session, Timeouts,
};
use scaleset_sim::{JobSpec, RunningSim, SimConfig};
use tokio::task::JoinSet;

/// The PAT of the default seed.
pub(crate) const PAT: &str = "ghp_simulator";

/// A test configuration: the default seed with a short long-poll hold.
pub(crate) fn config() -> SimConfig {
    SimConfig {
        long_poll_hold: Duration::from_millis(100),
        tick_interval: Duration::from_millis(20),
        ..SimConfig::default()
    }
}

/// A simulator serving on a loopback port for the duration of a test: the library's
/// [`RunningSim`] (its fields and `url` through `Deref`) with this suite's client helpers.
pub(crate) struct TestSim(RunningSim);

impl std::ops::Deref for TestSim {
    type Target = RunningSim;
    fn deref(&self) -> &RunningSim {
        &self.0
    }
}

impl TestSim {
    /// Starts a simulator with `config`.
    pub(crate) async fn start(config: SimConfig) -> Result<Self> {
        Ok(Self(RunningSim::start(config).await?))
    }

    /// Starts a simulator with [`config`].
    pub(crate) async fn default() -> Result<Self> {
        Self::start(config()).await
    }

    /// A client for `scope` (e.g. `acme`) with the default PAT and fast retries.
    pub(crate) fn client(&self, scope: &str) -> Result<Client> {
        self.client_with(scope, Credentials::pat(PAT), fast_retry())
    }

    /// A client with explicit credentials and retry policy.
    pub(crate) fn client_with(
        &self,
        scope: &str,
        credentials: Credentials,
        retry: RetryPolicy,
    ) -> Result<Client> {
        let url = ConfigUrl::parse(&self.url(&format!("/{scope}")))?;
        let config = ClientConfig::new(url, credentials)
            .with_retry(retry)
            .with_timeouts(Timeouts::new(
                Duration::from_secs(20),
                Duration::from_secs(60),
            ));
        Ok(Client::new(config)?)
    }

    /// Stops the server and waits for it to return.
    pub(crate) async fn stop(self) -> Result<()> {
        Ok(self.0.stop().await?)
    }
}

/// Five attempts with millisecond waits (and `Retry-After` capped to milliseconds).
pub(crate) fn fast_retry() -> RetryPolicy {
    RetryPolicy::new(5, Duration::from_millis(1), Duration::from_millis(5))
        .with_max_retry_after(Duration::from_millis(5))
}

/// Creates a scale set in the default group.
pub(crate) async fn create_set(client: &Client, name: &str) -> Result<RunnerScaleSet> {
    Ok(client
        .create_scale_set(&NewRunnerScaleSet::new(name, RunnerGroupId(1)))
        .await?)
}

/// Creates scale set `name` in the default group, which GitHub must refuse; returns the
/// client's error.
pub(crate) async fn create_refused(client: &Client, name: &str) -> Result<scaleset_github::Error> {
    match create_set(client, name).await {
        Ok(set) => anyhow::bail!("expected the create of {name} to be refused, got {set:?}"),
        Err(err) => Ok(err.downcast::<scaleset_github::Error>()?),
    }
}

/// Creates a scale set and opens its session.
pub(crate) async fn set_with_session(
    client: &Client,
    name: &str,
) -> Result<(RunnerScaleSet, Session)> {
    let set = create_set(client, name).await?;
    let session = client.create_session(set.id, "test-owner").await?;
    Ok((set, session))
}

/// A simulator started with `config` and a client for `acme`.
pub(crate) async fn with_client(config: SimConfig) -> Result<(TestSim, Client)> {
    let sim = TestSim::start(config).await?;
    let client = sim.client("acme")?;
    Ok((sim, client))
}

/// A simulator started with `config`, a client for `acme`, and scale set `name` created in the
/// default group.
pub(crate) async fn with_set(
    config: SimConfig,
    name: &str,
) -> Result<(TestSim, Client, RunnerScaleSet)> {
    let (sim, client) = with_client(config).await?;
    let set = create_set(&client, name).await?;
    Ok((sim, client, set))
}

/// [`with_set`] with the scale set's session open.
pub(crate) async fn with_session(
    config: SimConfig,
    name: &str,
) -> Result<(TestSim, Client, RunnerScaleSet, Session)> {
    let (sim, client) = with_client(config).await?;
    let (set, session) = set_with_session(&client, name).await?;
    Ok((sim, client, set, session))
}

/// Polls `session` past `after` at `capacity`; a 202 (no message) fails with `what` was expected.
pub(crate) async fn next_message(
    client: &Client,
    session: &mut Session,
    after: MessageId,
    capacity: u32,
    what: &str,
) -> Result<Message> {
    client
        .get_message(session, after, capacity)
        .await?
        .with_context(|| format!("expected a message ({what}), got a 202"))
}

/// Polls `session` past `after` at `capacity`: whether the answer was a 202 (no message).
pub(crate) async fn no_message(
    client: &Client,
    session: &mut Session,
    after: MessageId,
    capacity: u32,
) -> Result<bool> {
    Ok(client
        .get_message(session, after, capacity)
        .await?
        .is_none())
}

/// Enqueues one job on `set`, polls its assignment from the start at `capacity` and
/// acknowledges it; returns the acknowledged message.
pub(crate) async fn assign_one(
    sim: &TestSim,
    client: &Client,
    set: &RunnerScaleSet,
    session: &mut Session,
    capacity: u32,
) -> Result<Message> {
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let assigned = next_message(client, session, MessageId(0), capacity, "assigned").await?;
    client.delete_message(session, assigned.message_id).await?;
    Ok(assigned)
}

/// `count` long-polls from the start, spread over ten scale sets of their own (each with a
/// session), all held by the simulator.
pub(crate) struct HeldPolls {
    sets: Vec<(RunnerScaleSet, Session)>,
    polls: JoinSet<(GithubScaleSetId, scaleset_github::Result<Option<Message>>)>,
    count: usize,
}

impl HeldPolls {
    /// Creates the scale sets `{prefix}-0` … `{prefix}-9`, starts the polls and waits until the
    /// simulator holds every one.
    pub(crate) async fn start(
        sim: &TestSim,
        client: &Client,
        prefix: &str,
        count: usize,
    ) -> Result<Self> {
        let mut sets = Vec::new();
        for i in 0..10 {
            sets.push(set_with_session(client, &format!("{prefix}-{i}")).await?);
        }
        let mut polls = JoinSet::new();
        for n in 0..count {
            let (set, session) = &sets[n % sets.len()];
            let (client, mut session, id) = (client.clone(), session.clone(), set.id);
            polls.spawn(
                async move { (id, client.get_message(&mut session, MessageId(0), 10).await) },
            );
        }
        let handle = sim.sim.clone();
        eventually(&format!("{count} held polls"), || {
            handle.waiting_polls() == count
        })
        .await;
        Ok(Self { sets, polls, count })
    }

    /// Enqueues one job per scale set and checks that every poll is answered with its own
    /// scale set's job.
    pub(crate) async fn each_answered_with_its_job(mut self, sim: &TestSim) -> Result<()> {
        for (set, _) in &self.sets {
            sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
        }
        let mut answered = 0;
        while let Some(joined) = self.polls.join_next().await {
            let (id, result) = joined?;
            let message = result?.context("a message, not a 202")?;
            assert_eq!(message.jobs.len(), 1);
            let expected = sim
                .sim
                .state()
                .jobs_of(id.0)
                .next()
                .map(|j| j.job_id.clone());
            assert_eq!(Some(message.jobs[0].job().job_id.clone()), expected);
            answered += 1;
        }
        assert_eq!(answered, self.count);
        Ok(())
    }
}

/// `Bearer {token}`.
pub(crate) fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `GET url` without credentials.
pub(crate) async fn get(url: &str) -> Result<Raw> {
    raw("GET", url, &[], None).await
}

/// `GET url` with `Authorization: Bearer {token}`.
pub(crate) async fn get_as(url: &str, token: &str) -> Result<Raw> {
    raw("GET", url, &[("authorization", &bearer(token))], None).await
}

/// `POST url` with `Authorization: Bearer {token}` and no body.
pub(crate) async fn post_as(url: &str, token: &str) -> Result<Raw> {
    raw("POST", url, &[("authorization", &bearer(token))], None).await
}

/// `POST /api/v3/{rest_path}/actions/runners/registration-token` with the PAT.
pub(crate) async fn post_registration_token(sim: &TestSim, rest_path: &str) -> Result<Raw> {
    post_as(
        &sim.url(&format!(
            "/api/v3/{rest_path}/actions/runners/registration-token"
        )),
        PAT,
    )
    .await
}

/// A registration token for `rest_path` from the PAT (which must be granted).
pub(crate) async fn registration_token(sim: &TestSim, rest_path: &str) -> Result<String> {
    let answer = post_registration_token(sim, rest_path).await?;
    anyhow::ensure!(
        answer.status == 201,
        "registration token: {}",
        answer.status
    );
    Ok(answer.json()?["token"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// A raw HTTP answer.
pub(crate) struct Raw {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Bytes,
}

impl Raw {
    /// The body as JSON (after an optional BOM).
    pub(crate) fn json(&self) -> Result<serde_json::Value> {
        let body = self
            .body
            .strip_prefix(&[0xEF, 0xBB, 0xBF][..])
            .unwrap_or(&self.body);
        serde_json::from_slice(body).context("response body is not JSON")
    }
}

/// Sends one raw request.
pub(crate) async fn raw(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Raw> {
    let client: HyperClient<_, Full<Bytes>> =
        HyperClient::builder(TokioExecutor::new()).build_http();
    let mut request = http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(Full::new(Bytes::from(body.unwrap_or_default().to_owned())))?;
    let response = client.request(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok(Raw {
        status,
        headers,
        body,
    })
}

/// The one bounded poll of the workspace's tests.
pub(crate) use scaleset_eventually::eventually_holds as eventually;

/// `POST {path}` (a runner-registration path) with registration token `token`, registering for
/// the config URL of `scope_path`.
pub(crate) async fn post_runner_registration(
    sim: &TestSim,
    path: &str,
    token: &str,
    scope_path: &str,
) -> Result<Raw> {
    let body = serde_json::json!({ "url": sim.url(&format!("/{scope_path}")), "runner_event": "register" });
    raw(
        "POST",
        &sim.url(path),
        &[
            ("authorization", &format!("RemoteAuth {token}")),
            ("content-type", "application/json"),
        ],
        Some(&body.to_string()),
    )
    .await
}

/// Runs the token chain with a raw client and returns (admin token, actions base URL).
pub(crate) async fn admin_token(
    sim: &TestSim,
    scope_path: &str,
    rest_path: &str,
) -> Result<(String, String)> {
    let token = registration_token(sim, rest_path).await?;
    let admin = post_runner_registration(
        sim,
        "/api/v3/actions/runner-registration",
        &token,
        scope_path,
    )
    .await?;
    anyhow::ensure!(admin.status == 200, "runner-registration: {}", admin.status);
    let json = admin.json()?;
    Ok((
        json["token"].as_str().unwrap_or_default().to_owned(),
        json["url"].as_str().unwrap_or_default().to_owned(),
    ))
}
