//! Queue semantics through the real client: at-least-once scale-set-scoped delivery, capacity
//! gating, queue-token expiry, reassignment, dormancy, and 1,000 concurrent long-polls.

use std::time::Duration;

use anyhow::{Context, Result};
use scaleset_github::ExposeSecret as _;
use scaleset_github::{JobMessage, MessageId};
use scaleset_sim::JobSpec;

use crate::helpers::{
    HeldPolls, TestSim, assign_one, config, eventually, get_as, next_message, no_message,
    set_with_session, with_client, with_session, with_set,
};

#[tokio::test]
async fn unacknowledged_messages_reach_a_new_session_and_acknowledged_ones_never() -> Result<()> {
    let (sim, client, set, mut first) = with_session(config(), "alo").await?;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let unacked = next_message(&client, &mut first, MessageId(0), 5, "message").await?;
    client.delete_session(set.id, &first.session_id).await?;

    let mut second = client.create_session(set.id, "second").await?;
    let again = next_message(&client, &mut second, MessageId(0), 5, "redelivered").await?;
    assert_eq!(again.message_id, unacked.message_id);
    assert_eq!(again.jobs, unacked.jobs);
    client.delete_message(&mut second, again.message_id).await?;
    client.delete_session(set.id, &second.session_id).await?;

    let mut third = client.create_session(set.id, "third").await?;
    assert!(
        no_message(&client, &mut third, MessageId(0), 5).await?,
        "acked: never again"
    );
    sim.stop().await
}

#[tokio::test]
async fn message_ids_increase_and_the_cursor_skips_seen_ones() -> Result<()> {
    let (sim, client, set, mut session) = with_session(config(), "ids").await?;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let m1 = next_message(&client, &mut session, MessageId(0), 5, "m1").await?;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let m2 = next_message(&client, &mut session, m1.message_id, 5, "m2").await?;
    assert!(m2.message_id > m1.message_id);
    // Not acknowledged: polling from 0 starts over at m1.
    let from_zero = next_message(&client, &mut session, MessageId(0), 5, "m1 again").await?;
    assert_eq!(from_zero.message_id, m1.message_id);
    sim.stop().await
}

#[tokio::test]
async fn capacity_zero_holds_jobs_and_each_unit_releases_one() -> Result<()> {
    let (sim, client, set, mut session) = with_session(config(), "cap").await?;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(3))?;
    assert!(
        no_message(&client, &mut session, MessageId(0), 0).await?,
        "202 at capacity 0"
    );
    let one = next_message(&client, &mut session, MessageId(0), 1, "one").await?;
    assert_eq!(one.jobs.len(), 1);
    client.delete_message(&mut session, one.message_id).await?;
    let two = next_message(&client, &mut session, one.message_id, 2, "one more").await?;
    assert_eq!(two.jobs.len(), 1);
    assert_eq!(two.statistics.map(|s| s.total_assigned_jobs), Some(2));
    sim.stop().await
}

#[tokio::test]
async fn expired_queue_token_gets_a_bodyless_401_and_the_client_refreshes_once() -> Result<()> {
    let mut cfg = config();
    cfg.queue_token_ttl = Duration::from_secs(600);
    cfg.admin_token_ttl = Duration::from_secs(24 * 3600);
    let (sim, client, _, mut session) = with_session(cfg, "qexp").await?;
    let old_token = session
        .message_queue_access_token
        .expose_secret()
        .to_owned();
    sim.sim.advance(Duration::from_secs(601));

    let answer = get_as(&session.message_queue_url, &old_token).await?;
    assert_eq!(answer.status, 401);
    assert!(answer.body.is_empty(), "body-less 401");

    assert!(no_message(&client, &mut session, MessageId(0), 1).await?);
    assert_eq!(sim.sim.request_count("refresh_session"), 1);
    assert_ne!(
        session.message_queue_access_token.expose_secret(),
        old_token
    );
    let statuses: Vec<u16> = sim
        .sim
        .request_log()
        .iter()
        .filter(|r| r.endpoint == "get_message")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401, 401, 202]);
    sim.stop().await
}

#[tokio::test]
async fn unattended_assignment_is_cancelled_then_reassigned() -> Result<()> {
    let mut cfg = config();
    cfg.reassign_after = Some(Duration::from_secs(120));
    let (sim, client, set, mut session) = with_session(cfg, "reassign").await?;
    let assigned = assign_one(&sim, &client, &set, &mut session, 1).await?;
    sim.sim.advance(Duration::from_secs(121));
    let next = next_message(
        &client,
        &mut session,
        assigned.message_id,
        1,
        "cancel + reassign",
    )
    .await?;
    let kinds: Vec<&str> = next
        .jobs
        .iter()
        .map(|j| match j {
            JobMessage::Completed { result, .. } if result == "canceled" => "canceled",
            JobMessage::Assigned { .. } => "assigned",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["canceled", "assigned"]);
    assert_eq!(sim.sim.state().jobs[0].reassignments, 1);
    sim.stop().await
}

#[tokio::test]
async fn a_leaked_session_conflicts_until_it_expires() -> Result<()> {
    let mut cfg = config();
    cfg.session_expiry = Some(Duration::from_secs(600));
    let (sim, client, set, _leaked) = with_session(cfg, "leak").await?;
    let err = client
        .create_session(set.id, "restarted")
        .await
        .expect_err("held");
    assert!(err.is_session_conflict(), "{err:#}");
    sim.sim.advance(Duration::from_secs(600));
    client.create_session(set.id, "restarted").await?;
    sim.stop().await
}

#[tokio::test]
async fn dormant_scale_sets_are_deleted_after_the_configured_time() -> Result<()> {
    let mut cfg = config();
    cfg.dormancy = Some(Duration::from_secs(3600));
    cfg.admin_token_ttl = Duration::from_secs(30 * 24 * 3600);
    let (sim, client, idle) = with_set(cfg, "idle").await?;
    let (busy, _session) = set_with_session(&client, "busy").await?;
    sim.sim.advance(Duration::from_secs(3600));
    let err = client.get_scale_set(idle.id).await.expect_err("dormant");
    assert!(err.is_scale_set_not_found(), "{err:#}");
    assert_eq!(client.get_scale_set(busy.id).await?.id, busy.id);
    sim.stop().await
}

#[tokio::test]
async fn a_thousand_concurrent_long_polls_are_all_answered() -> Result<()> {
    let mut cfg = config();
    cfg.long_poll_hold = Duration::from_secs(60);
    let (sim, client) = with_client(cfg).await?;
    HeldPolls::start(&sim, &client, "load", 1000)
        .await?
        .each_answered_with_its_job(&sim)
        .await?;
    sim.stop().await
}

#[tokio::test]
async fn a_poll_whose_client_hung_up_is_released() -> Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let mut cfg = config();
    cfg.long_poll_hold = Duration::from_secs(3600);
    let (sim, _client, _, session) = with_session(cfg, "hangup").await?;
    let url = url::Url::parse(&session.message_queue_url)?;
    let mut stream = tokio::net::TcpStream::connect(sim.addr).await?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        url.path(),
        sim.addr,
        session.message_queue_access_token.expose_secret()
    );
    stream.write_all(request.as_bytes()).await?;
    let handle = sim.sim.clone();
    eventually("the poll is held", || handle.waiting_polls() == 1).await;
    drop(stream);
    eventually("the poll is released", || handle.waiting_polls() == 0).await;
    sim.stop().await
}

/// A scale set with a session whose one job is assigned (and acknowledged) and taken by a
/// runner that has just started, and a long-poll from the acknowledged message held in the
/// background.
struct HeldPoll {
    set_id: i64,
    poll: tokio::task::JoinHandle<Result<Option<scaleset_github::Message>>>,
}

impl HeldPoll {
    /// The kinds of the jobs in the message the held poll is answered with (not a 202).
    async fn answer(self, what: &str) -> Result<Vec<&'static str>> {
        let message = self.poll.await??.context(what.to_owned())?;
        Ok(kinds(&message))
    }
}

async fn held_poll_after_a_runner_started(sim: &TestSim) -> Result<HeldPoll> {
    let client = sim.client("acme")?;
    let (set, mut session) = set_with_session(&client, "timing").await?;
    let assigned = assign_one(sim, &client, &set, &mut session, 10).await?;
    let jit = client
        .generate_jit_config(set.id, &scaleset_github::JitConfigRequest::new("timed"))
        .await?;
    let poll = tokio::spawn(async move {
        Ok(client
            .get_message(&mut session, assigned.message_id, 10)
            .await?)
    });
    let handle = sim.sim.clone();
    eventually("the poll is held", || handle.waiting_polls() == 1).await;
    sim.sim
        .start_runner(jit.encoded_jit_config.expose_secret())?;
    Ok(HeldPoll {
        set_id: set.id.0,
        poll,
    })
}

fn kinds(message: &scaleset_github::Message) -> Vec<&'static str> {
    message
        .jobs
        .iter()
        .map(|j| match j {
            JobMessage::Started { .. } => "started",
            JobMessage::Assigned { .. } => "assigned",
            JobMessage::Completed { .. } => "completed",
            _ => "other",
        })
        .collect()
}

/// Long holds, so that a poll woken too early or too late shows up as a wrong message (or a 202
/// after the hold), never as a timing assertion; shorter than the client's 60 s poll timeout,
/// whose retry would otherwise hide a poll that was never woken.
fn timing_config() -> scaleset_sim::SimConfig {
    let mut cfg = config();
    cfg.long_poll_hold = Duration::from_secs(30);
    cfg.runner_job_duration = Duration::from_secs(3600);
    cfg
}

#[tokio::test]
async fn job_started_does_not_wake_a_held_poll_and_rides_with_the_next_batch() -> Result<()> {
    let sim = TestSim::start(timing_config()).await?;
    assert_eq!(sim.sim.config().job_started_delay, Duration::from_secs(50));
    let held = held_poll_after_a_runner_started(&sim).await?;
    // Had `JobStarted` woken the poll, it would have gone out alone before this job arrives.
    sim.sim.enqueue_jobs(held.set_id, &JobSpec::count(1))?;
    assert_eq!(held.answer("a batch").await?, ["started", "assigned"]);
    sim.stop().await
}

#[tokio::test]
async fn job_started_goes_out_alone_once_its_delay_has_passed() -> Result<()> {
    let sim = TestSim::start(timing_config()).await?;
    let held = held_poll_after_a_runner_started(&sim).await?;
    sim.sim.advance(sim.sim.config().job_started_delay);
    assert_eq!(
        held.answer("started, not a 202 after the hold").await?,
        ["started"]
    );
    sim.stop().await
}

#[tokio::test]
async fn immediate_job_started_wakes_a_held_poll_at_once() -> Result<()> {
    let mut cfg = timing_config();
    cfg.job_started_delay = Duration::ZERO;
    let sim = TestSim::start(cfg).await?;
    let held = held_poll_after_a_runner_started(&sim).await?;
    assert_eq!(
        held.answer("started, not a 202 after the hold").await?,
        ["started"]
    );
    sim.stop().await
}
