//! Sessions: a foreign session is shown as `foreign_session` and never deleted; our own
//! session that is still active is waited for, not deleted; a scale set GitHub deleted is
//! ensured again with the cursor reset.

use std::time::Duration;

use scaleset_sim::JobSpec;
use scaleset_store::{EventKind, EventStore as _, ReasonCode, ScaleSetState, ScaleSetStore as _};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    foreign_session_is_visible_and_untouched,
    foreign_named_session_is_visible_and_untouched,
    our_session_alone_is_not_evidence_without_the_probe,
    dormancy_recreates_with_cursor_reset,
    an_unchanged_refusal_is_one_event_with_a_count,
);

async fn foreign_session(db: TestDb, names_owner: bool) {
    let mut config = sim_config();
    config.conflict_names_owner = names_owner;
    let h = Harness::new(db, config, |spec| spec.set_disable_update(false)).await;
    let foreign = h
        .sim()
        .create_foreign_scale_set("acme", 1, "linux", "another-autoscaler")
        .expect("foreign scale set");
    // The store knows the id (e.g. the other listener is a rogue copy): ensure accepts it,
    // and the listener meets the foreign session.
    let mut stored = h.stored().await;
    stored.github_id = Some(foreign.scale_set_id);
    h.store
        .update_scale_set(&stored)
        .await
        .expect("store the id");
    let controller = h.start(None);
    let reason = eventually("the scale set shows foreign_session", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::ForeignSession).then_some(stored.state_reason)
    })
    .await;
    assert!(reason.contains("Nothing was deleted"), "{reason}");
    if names_owner {
        assert!(reason.contains("another-autoscaler"), "{reason}");
    }
    let creates = h.sim().request_count("create_session");
    controller.stop().await;
    assert_eq!(h.sim().request_count("delete_session"), 0, "zero deletes");
    let session = h
        .sim()
        .state()
        .scale_set(foreign.scale_set_id)
        .unwrap()
        .session
        .clone();
    assert_eq!(
        session.map(|s| (s.session_id, s.owner_name)),
        Some((foreign.session_id, "another-autoscaler".to_owned())),
        "the foreign session is untouched"
    );
    assert!(creates <= 3, "no retry storm: {creates} session creates");
}

async fn foreign_session_is_visible_and_untouched(db: TestDb) {
    foreign_session(db, false).await;
}

async fn foreign_named_session_is_visible_and_untouched(db: TestDb) {
    foreign_session(db, true).await;
}

/// A same-name scale set without our owner label, holding a session in our owner's name (a
/// create whose answer was lost, in an older version): under `owned` the ownership probe is off
/// by default (docs/adoption.md), so nothing is opened on a set not proven ours. It is refused
/// as unproven, visibly, and its session is never touched.
async fn our_session_alone_is_not_evidence_without_the_probe(db: TestDb) {
    let mut config = sim_config();
    config.conflict_names_owner = true;
    let h = Harness::new(db, config, |spec| spec.set_disable_update(false)).await;
    h.sim()
        .create_foreign_scale_set("acme", 1, "linux", &h.identity.session_owner())
        .expect("scale set");
    let controller = h.start(None);
    let refused = eventually("the scale set is refused", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::Refused).then_some(stored)
    })
    .await;
    assert_eq!(
        refused.refusal.as_ref().map(ReasonCode::of_refusal),
        Some(ReasonCode::OwnershipUnproven),
        "{refused:?}"
    );
    assert_eq!(h.sim().request_count("create_session"), 0, "no probe");
    assert_eq!(h.sim().request_count("delete_session"), 0, "never deleted");
    assert_eq!(h.sim().request_count("create_scale_set"), 0, "no duplicate");
    controller.stop().await;
}

async fn dormancy_recreates_with_cursor_reset(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, first) = h.start_ready().await;
    h.sim()
        .enqueue_jobs(first, &JobSpec::count(1))
        .expect("enqueue");
    eventually("a message was handled", || async {
        (h.stored().await.last_message_id > 0).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("the job completed", || async {
        h.job_states(first)
            .iter()
            .all(|s| s == "completed")
            .then_some(())
    })
    .await;

    h.sim().delete_scale_set(first).expect("GitHub deletes it");
    let second = eventually("a new scale set is ensured", || async {
        let stored = h.stored().await;
        let id = stored.github_id.filter(|id| *id != first)?;
        (stored.state == ScaleSetState::Ready).then_some(id)
    })
    .await;
    let events = eventually(
        "the re-ensure is recorded with the cursor reset",
        || async {
            let events = h
                .store
                .list_events(h.scale_set.id, 100)
                .await
                .expect("events");
            // Newest first: ready again after GitHub's deletion was seen.
            let ready = events.iter().position(|e| e.kind == EventKind::Ready);
            let dormant = events.iter().position(|e| e.code == ReasonCode::Dormant);
            matches!((ready, dormant), (Some(r), Some(d)) if r < d).then_some(events)
        },
    )
    .await;
    assert!(events.iter().any(|e| e.kind == EventKind::Dormant));
    h.ready().await;
    h.sim()
        .enqueue_jobs(second, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the new scale set's job runs", || async {
        h.job_states(second)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("it completes and its runner is retired", || async {
        let done = h.job_states(second).iter().all(|s| s == "completed");
        (done && h.instances().await.is_empty()).then_some(())
    })
    .await;
    controller.stop().await;
}

backend_tests!(
    queue_token_is_refreshed_before_expiry,
    expired_tokens_are_refreshed_on_401,
    evicted_session_is_recreated_keeping_the_cursor,
);

async fn queue_token_is_refreshed_before_expiry(db: TestDb) {
    let mut config = sim_config();
    // Shorter than the job below runs, so a listener that did not refresh would poll with an
    // expired token before the job completes.
    config.queue_token_ttl = Duration::from_secs(5);
    let h = Harness::new(db, config, |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    // The job runs in real time rather than being finished by advancing the simulated clock: a
    // jump past the token's lifetime expires a token the listener has just received (or a poll
    // already on the wire), which no refresh beforehand can prevent.
    let mut job = JobSpec::count(1);
    job.run_seconds = Some(6.0);
    h.sim().enqueue_jobs(github_id, &job).expect("enqueue");
    eventually("the job completed and its runner is retired", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        (done && h.instances().await.is_empty()).then_some(())
    })
    .await;
    assert!(h.sim().request_count("refresh_session") >= 1);
    let rejected = h
        .sim()
        .request_log()
        .iter()
        .filter(|r| r.endpoint == "get_message" && r.status == 401)
        .count();
    assert_eq!(rejected, 0, "no poll ran into an expired queue token");
    controller.stop().await;
}

async fn expired_tokens_are_refreshed_on_401(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    let session = h.stored().await.session_id;
    // Past the queue and admin token lifetimes (1 h) in simulated time.
    h.sim().advance(Duration::from_secs(2 * 3600));
    h.serve_jobs(github_id, 2).await;
    let log = h.sim().request_log();
    assert!(
        log.iter().any(
            |r| matches!(r.endpoint.as_str(), "get_message" | "delete_message") && r.status == 401
        ),
        "a queue call met the expired queue token: {:?}",
        log.iter()
            .map(|r| format!("{} {} {}", r.seq, r.endpoint, r.status))
            .collect::<Vec<_>>()
    );
    assert!(h.sim().request_count("refresh_session") >= 1);
    assert_eq!(
        h.stored().await.session_id,
        session,
        "the same session was kept"
    );
    controller.stop().await;
}

async fn evicted_session_is_recreated_keeping_the_cursor(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.serve_jobs(github_id, 1).await;
    let before = h.stored().await;
    assert!(before.last_message_id > 0);
    h.sim().evict_session(github_id).expect("evict");
    let new_session = eventually("a new session is created", || async {
        let stored = h.stored().await;
        let sid = stored
            .session_id
            .filter(|s| Some(s) != before.session_id.as_ref())?;
        let live = h.sim().state().scale_set(github_id)?.session.clone()?;
        (live.session_id == sid).then_some(sid)
    })
    .await;
    assert!(!new_session.is_empty());
    assert!(
        h.stored().await.last_message_id >= before.last_message_id,
        "the cursor was kept"
    );
    assert_eq!(h.stored().await.github_id, Some(github_id), "no re-ensure");
    h.serve_jobs(github_id, 1).await;
    controller.stop().await;
}

backend_tests!(leaked_own_session_after_an_unusable_create_is_recovered);

async fn leaked_own_session_after_an_unusable_create_is_recovered(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // Session creates succeed on GitHub but answer without a queue URL. The client deletes
    // such a session by its id before reporting the error (issue 9 item 7), so nothing leaks
    // and the retry never meets a 409 on our own session.
    h.sim().update_faults(|f| f.empty_message_queue_url = true);
    let controller = h.start(None);
    eventually("the listener retried an unusable session", || async {
        (h.sim().request_count("create_session") >= 2).then_some(())
    })
    .await;
    let github_id = h.stored().await.github_id.expect("ensured");
    assert!(
        h.sim().request_count("delete_session") >= 1,
        "the client deleted the unusable session it had just created"
    );
    assert!(
        h.sim()
            .state()
            .scale_set(github_id)
            .and_then(|s| s.session.clone())
            .is_none()
            || h.sim().request_count("create_session") > h.sim().request_count("delete_session"),
        "no unusable session is left behind"
    );
    h.sim().update_faults(|f| f.empty_message_queue_url = false);
    h.ready().await;
    eventually("a usable session is open", || async {
        let stored = h.stored().await;
        let live = h.sim().state().scale_set(github_id)?.session.clone()?;
        (stored.session_id.as_deref() == Some(live.session_id.as_str())).then_some(())
    })
    .await;
    assert!(
        !h.events().await.iter().any(|k| k == "foreign_session"),
        "our own session was never shown as foreign"
    );
    controller.stop().await;
}

/// An unchanged refusal rechecked again and again is one event whose count and last-seen time
/// grow, and the scale set's generation does not climb with each recheck (issue 29 item 14:
/// 29 identical rows in 13 minutes, generation 4 → 31).
async fn an_unchanged_refusal_is_one_event_with_a_count(db: TestDb) {
    let mut config = sim_config();
    config.conflict_names_owner = true;
    let h = Harness::new(db, config, |spec| spec.set_disable_update(false)).await;
    h.sim()
        .create_foreign_scale_set("acme", 1, "linux", &h.identity.session_owner())
        .expect("scale set");
    let controller = h.start(None);
    let first = eventually("the scale set is refused", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::Refused).then_some(stored)
    })
    .await;
    let refused = eventually("the refusal was rechecked four times", || async {
        let events = h
            .store
            .list_events(h.scale_set.id, 100)
            .await
            .expect("events");
        let refused: Vec<_> = events
            .into_iter()
            .filter(|e| e.kind == EventKind::Refused)
            .collect();
        (refused.iter().map(|e| e.count).sum::<u64>() >= 4).then_some(refused)
    })
    .await;
    controller.stop().await;
    assert_eq!(refused.len(), 1, "one event per change: {refused:?}");
    assert!(refused[0].count >= 4, "{refused:?}");
    assert!(refused[0].last_at > refused[0].at, "{refused:?}");
    let last = h.stored().await;
    assert_eq!(
        (last.generation, last.state_reason),
        (first.generation, first.state_reason),
        "an unchanged state is not written again"
    );
}
