//! Faults and bad input: injected 5xx/429 bursts, undecodable messages, a provider that fails
//! to create, runners that never come online, and misconfiguration. The loop converges or
//! shows a clear state; nothing panics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scaleset_sim::{Burst, JobSpec, RateLimit};
use scaleset_store::{EventStore as _, ScaleSetState};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    converges_under_injected_server_errors_and_rate_limits,
    undecodable_messages_are_skipped_without_losing_jobs,
    a_message_that_never_decodes_is_acknowledged_after_three_tries_and_the_next_job_is_served,
    a_message_github_delivers_again_after_it_was_handled_is_acknowledged_not_handled_twice,
    failed_instance_create_removes_the_runner_from_github,
    a_failing_provider_needs_attention_until_a_create_works,
    runner_never_online_is_removed_at_its_bootstrap_deadline,
);

async fn converges_under_injected_server_errors_and_rate_limits(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let stop = Arc::new(AtomicBool::new(false));
    // Re-arms a fault whenever the last one was consumed: a steady share of failing calls,
    // for the first FAULTS faults. Bounded because a task restarts from its ensure step after
    // any failure: under a sustained one-in-three failure rate the whole chain (ensure, stale
    // session, session, recovery, JIT, create) seldom succeeds end to end, and the test then
    // timed out on some runs (see the closing note of session 4).
    const FAULTS: u32 = 300;
    let injector = tokio::spawn({
        let (sim, stop) = (h.sim().clone(), stop.clone());
        async move {
            let mut turn = 0u32;
            // A pace, not a wait for anything: the faults re-arm every few milliseconds.
            let mut pace = tokio::time::interval(Duration::from_millis(5));
            while !stop.load(Ordering::SeqCst) && turn < FAULTS {
                pace.tick().await;
                sim.update_faults(|f| {
                    if f.server_errors.is_none() && f.rate_limit.is_none() {
                        turn += 1;
                        match turn % 3 {
                            0 => f.rate_limit = Some(RateLimit::new(1, 0)),
                            1 => f.server_errors = Some(Burst::new(1, 503)),
                            _ => f.server_errors = Some(Burst::new(2, 500)),
                        }
                    }
                });
            }
        }
    });
    let (controller, github_id) = h.start_ready().await;
    h.serve_jobs(github_id, 5).await;
    stop.store(true, Ordering::SeqCst);
    injector.await.expect("injector");
    let log = h.sim().request_log();
    let failed = log
        .iter()
        .filter(|r| r.status == 429 || r.status >= 500)
        .count();
    assert!(
        failed * 10 >= log.len(),
        "at least a tenth of the calls failed: {failed} of {}",
        log.len()
    );
    assert!(
        controller.metrics.github_call_count("get_message", "ok") > 0,
        "polls succeeded between the faults"
    );
    let named = h.sim().state().scale_sets_named("linux").count();
    assert_eq!(named, 1, "no duplicate scale set under faults");
    assert_eq!(
        h.created.lock().unwrap().len(),
        5,
        "no duplicate runner under faults"
    );
    controller.stop().await;
}

async fn undecodable_messages_are_skipped_without_losing_jobs(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.sim().update_faults(|f| f.empty_message_body = 2);
    h.serve_jobs(github_id, 5).await;
    assert!(
        controller.metrics.undecodable_messages.get() >= 1,
        "the bad messages were counted"
    );
    controller.stop().await;
}

/// A message whose body never decodes (the simulator garbles every delivery of it) blocked the
/// scale set for ever: never acknowledged, polled again and again. It is acknowledged after
/// three deliveries with an event quoting its type and the decode error, and the set goes on
/// serving.
async fn a_message_that_never_decodes_is_acknowledged_after_three_tries_and_the_next_job_is_served(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.sim().update_faults(|f| f.undecodable_messages = 1);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    let reason = eventually(
        "the undecodable message is acknowledged with an event",
        || async {
            h.store
                .list_events(h.scale_set.id, 200)
                .await
                .expect("events")
                .into_iter()
                .find(|e| e.code == scaleset_store::ReasonCode::MessageUndecodable)
                .map(|e| e.reason)
        },
    )
    .await;
    assert!(
        reason.contains("\"RunnerScaleSetJobMessages\""),
        "the event names the message type: {reason}"
    );
    assert!(
        reason.contains("cannot decode") && reason.contains("EOF"),
        "the event quotes the decode error: {reason}"
    );
    assert!(
        reason.contains("in 3 deliveries"),
        "after a bounded number of tries: {reason}"
    );
    // The event is written before the skipped message is handled (and counted): wait for
    // the count rather than read it at once (under load it lagged the event: 0, then 1).
    eventually("the message was counted", || async {
        (controller.metrics.undecodable_messages.get() >= 1).then_some(())
    })
    .await;
    // The next message decodes: both jobs (the one the skipped message carried, counted by
    // the next statistics, and the new one) are served.
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    h.finish_jobs(github_id, 2).await;
    controller.stop().await;
}

/// GitHub delivering a message again after it was handled (a lost acknowledgement): it is
/// acknowledged again and not handled a second time (no job message is counted twice), and the
/// set goes on serving.
async fn a_message_github_delivers_again_after_it_was_handled_is_acknowledged_not_handled_twice(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.serve_jobs(github_id, 1).await;
    let seen = |m: &scaleset_control::Metrics| -> u64 {
        ["available", "assigned", "started", "completed"]
            .iter()
            .map(|kind| {
                m.jobs_seen
                    .get_or_create(&scaleset_control::KindLabel {
                        kind: (*kind).to_owned(),
                    })
                    .get()
            })
            .sum()
    };
    // The job's last message (its completion) handled: no message of the first job can still
    // be on its way and be counted below (under load it was, and took the place of a
    // re-delivery in a count of acknowledgements).
    eventually("the served job's completion is handled", || async {
        let completed = controller
            .metrics
            .jobs_seen
            .get_or_create(&scaleset_control::KindLabel {
                kind: "completed".to_owned(),
            })
            .get();
        (completed >= 1).then_some(())
    })
    .await;
    let before = seen(&controller.metrics);
    let acks = h.sim().request_count("delete_message");
    h.sim().update_faults(|f| f.redeliver_messages = 3);
    eventually("the three re-deliveries are taken as such", || async {
        (controller.metrics.redelivered_messages.get() >= 3).then_some(())
    })
    .await;
    eventually("each re-delivery is acknowledged again", || async {
        (h.sim().request_count("delete_message") >= acks + 3).then_some(())
    })
    .await;
    assert_eq!(
        seen(&controller.metrics),
        before,
        "no job message of the re-delivered message was handled twice"
    );
    assert_eq!(controller.metrics.redelivered_messages.get(), 3);
    h.serve_jobs(github_id, 1).await;
    controller.stop().await;
}

async fn failed_instance_create_removes_the_runner_from_github(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.cloud.fail_creates(1);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the job runs on a second runner", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    let state = h.sim().state();
    assert_eq!(
        state.agents.len(),
        1,
        "the runner without an instance was removed: {:?}",
        state.agents
    );
    assert!(h.sim().request_count("delete_agent") >= 1);
    let labels = controller
        .metrics
        .set_labels(h.stored().await.id)
        .expect("the scale set's series are exported");
    assert_eq!(
        controller
            .metrics
            .bootstrap_failures
            .get_or_create(&labels)
            .get(),
        1,
        "the failed create is a bootstrap failure of its scale set"
    );
    h.sim().advance(Duration::from_secs(60));
    eventually("done and clean", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        (done && h.sim().state().agents.is_empty() && h.instances().await.is_empty()).then_some(())
    })
    .await;
    controller.stop().await;
}

async fn runner_never_online_is_removed_at_its_bootstrap_deadline(db: TestDb) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.bootstrap_timeout = Some(Duration::from_secs(300)))
            .unwrap();
    })
    .await;
    h.boot.store(false, Ordering::SeqCst);
    let (controller, _) = h.start_ready().await;
    let first = eventually("one idle runner is created", || async {
        let instances = h.instances().await;
        (instances.len() == 1 && instances[0].status == scaleset_store::InstanceStatus::Running)
            .then(|| instances[0].name.clone())
    })
    .await;
    // Not yet due: it stays.
    h.clock.advance(Duration::from_secs(200));
    let polls = h.sim().request_count("get_message");
    eventually("a few more polls ran", || async {
        (h.sim().request_count("get_message") >= polls + 3).then_some(())
    })
    .await;
    assert!(h.sim().state().agents.iter().any(|a| a.name == first));
    assert!(h.instances().await.iter().any(|i| i.name == first));
    h.clock.advance(Duration::from_secs(200));
    eventually(
        "the runner is removed from GitHub and the provider",
        || async {
            let state = h.sim().state();
            let gone_github = state.agents.iter().all(|a| a.name != first);
            let gone_cloud = h.cloud.instances().iter().all(|i| i.instance.name != first);
            let gone_store = h.instances().await.iter().all(|i| i.name != first);
            (gone_github && gone_cloud && gone_store).then_some(())
        },
    )
    .await;
    assert!(h.events().await.iter().any(|k| k == "bootstrap_timeout"));
    let labels = controller
        .metrics
        .set_labels(h.stored().await.id)
        .expect("the scale set's series are exported");
    assert_eq!(
        controller
            .metrics
            .bootstrap_deadline_expiries
            .get_or_create(&labels)
            .get(),
        1,
        "the removal is a deadline expiry of its scale set"
    );
    controller.stop().await;
}

backend_tests!(text_plain_errors_never_lead_to_adoption);

async fn text_plain_errors_never_lead_to_adoption(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // A rival creates the name between our lookup and our create, and every error loses its
    // exception type: our create's failure cannot be read as "exists".
    h.sim().update_faults(|f| {
        f.text_plain_errors = true;
        f.race_create = Some(scaleset_sim::RaceCreate::with_owner("rival"));
    });
    let controller = h.start(None);
    let stored = eventually("the ensure ends without adopting", || async {
        let stored = h.stored().await;
        matches!(stored.state, ScaleSetState::Error | ScaleSetState::Refused).then_some(stored)
    })
    .await;
    assert!(
        stored.state_reason.contains("adoption failed"),
        "{}",
        stored.state_reason
    );
    assert_eq!(
        stored.github_id, None,
        "never adopted: {}",
        stored.state_reason
    );
    let named = h.sim().state().scale_sets_named("linux").count();
    assert_eq!(named, 1, "only the rival's scale set exists");
    controller.stop().await;
}

/// Issue 32 item 2: a provider whose creates fail is recorded on the scale set in its own
/// words, so the one attention rule (status page, API, CLI, gauge) flags it; the first create
/// that works clears it.
async fn a_failing_provider_needs_attention_until_a_create_works(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.cloud.fail_creates(usize::MAX);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    let failing = eventually("the provider's failure is recorded", || async {
        let stored = h.stored().await;
        stored.provider_error.is_some().then_some(stored)
    })
    .await;
    let now = scaleset_store::Timestamp::from_unix_millis(i64::MAX / 2);
    let attention = failing
        .attention(now)
        .expect("a failing provider needs attention");
    // The task's own error state may say it first (the state comes first in the rule); in
    // both the provider's words are there.
    assert!(
        attention.reason.contains("injected create failure"),
        "{}",
        attention.reason
    );
    let recorded = failing.provider_error.expect("recorded");
    assert!(
        recorded.message.contains("injected create failure"),
        "{recorded:?}"
    );
    h.cloud.fail_creates(0);
    eventually("the job runs and the failure is cleared", || async {
        let running = h.job_states(github_id).iter().all(|s| s == "running");
        (running && h.stored().await.provider_error.is_none()).then_some(())
    })
    .await;
    controller.stop().await;
}
