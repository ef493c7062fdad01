//! Waiting outside the steps (issue 29 item 8, issue 30 item 2): a stop during an ensure's retry
//! wait returns at once; one scale set waiting on a retry never holds the start permit another
//! needs; and a message session held by a listener GitHub does not name, after a crash and a
//! lost database (issue 29 item 5), says what is known, counts as needing attention and is
//! rechecked on the short schedule, not the slow one.

use std::time::{Duration, Instant};

use scaleset_sim::Burst;
use scaleset_store::{EventStore as _, NewScaleSet, ScaleSetState, ScaleSetStore as _, test_util};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_stop_during_an_ensure_retry_wait_returns_promptly,
    a_set_waiting_on_a_retry_does_not_block_another_sets_start,
    an_unnamed_holder_after_a_lost_database_is_told_and_needs_attention,
    our_own_named_session_after_a_lost_database_needs_attention,
);

/// A retry hint far longer than any bound of these tests: a step that sleeps on it is seen.
const LONG: Duration = Duration::from_secs(600);

/// Waits until the scale set recorded a `retry` event (its ensure asked to be retried).
async fn retrying(h: &Harness, scale_set: scaleset_store::ScaleSetId) {
    eventually("the ensure asks to be retried", || async {
        let events = h.store.list_events(scale_set, 50).await.expect("events");
        events
            .iter()
            .any(|e| e.kind == scaleset_store::EventKind::Retry)
            .then_some(())
    })
    .await;
}

async fn a_stop_during_an_ensure_retry_wait_returns_promptly(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // Every lookup of the scale set fails: the machine's answer is a retry after LONG.
    h.sim().update_faults(|f| {
        f.server_errors = Some(Burst::new(1_000_000, 503).on("list_scale_sets"));
    });
    let mut settings = settings();
    settings.adoption_retry.base_delay = LONG;
    settings.adoption_retry.max_delay = LONG;
    let controller = h.start_with(settings, None);
    retrying(&h, h.scale_set.id).await;
    let started = Instant::now();
    controller.stop_within(Duration::from_secs(10)).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped in {:?}",
        started.elapsed()
    );
}

async fn a_set_waiting_on_a_retry_does_not_block_another_sets_start(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // `linux` is known by a stored id, so its ensure reads it by id, and every read by id
    // fails; a new scale set is looked up by name and created, which works.
    let mut stored = h.stored().await;
    stored.github_id = Some(4242);
    h.store
        .update_scale_set(&stored)
        .await
        .expect("store an id");
    h.sim().update_faults(|f| {
        f.server_errors = Some(Burst::new(1_000_000, 503).on("get_scale_set"));
    });
    let mut settings = settings();
    settings.max_concurrent_starts = 1;
    settings.adoption_retry.base_delay = LONG;
    settings.adoption_retry.max_delay = LONG;
    let controller = h.start_with(settings, None);
    retrying(&h, h.scale_set.id).await;

    // Added while `linux` waits on its retry: one start permit, and `linux` must not hold it.
    let gpu = h
        .store
        .create_scale_set(NewScaleSet {
            entity_id: h.scale_set.entity_id,
            spec: test_util::spec("gpu"),
        })
        .await
        .expect("a second scale set");
    eventually("gpu starts and listens", || async {
        let stored = h.store.get_scale_set(gpu.id).await.ok()?;
        let id = stored.github_id?;
        let live = h.sim().state().scale_set(id)?.session.is_some();
        (live && stored.state == ScaleSetState::Ready).then_some(())
    })
    .await;
    controller.stop().await;
}

/// Serves `linux`, crashes the controller (its session stays held on GitHub), loses the
/// database, and starts again on an empty one: the held session blocks the scale set.
/// Returns the harness, the new controller and the stored reason once the state shows it.
async fn crash_and_lose_the_database(
    db: TestDb,
    names_owner: bool,
    test: &str,
) -> (Harness, crate::helpers::RunningController, String, i64) {
    let mut config = sim_config();
    config.conflict_names_owner = names_owner;
    let mut h = Harness::new(db, config, |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    controller.crash().await;
    let fresh = h.another_db(test).await;
    h.wipe_store(fresh, |_| {}).await;
    let mut settings = settings();
    // The slow recheck is far away: only the short schedule can bring it back in time.
    settings.foreign_session_recheck = LONG;
    settings.held_session_recheck = Duration::from_millis(200);
    let controller = h.start_with(settings, None);
    let reason = eventually("the held session is shown", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::ForeignSession).then_some(stored.state_reason)
    })
    .await;
    (h, controller, reason, github_id)
}

/// The attention gauge, read from the registry's text.
fn attention(controller: &crate::helpers::RunningController) -> Option<String> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &controller.registry).expect("encode");
    text.lines()
        .find(|l| l.starts_with("scaleset_scale_sets_needing_attention "))
        .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
}

/// After the session is gone on GitHub (it expired), the short recheck serves the scale set
/// again, long before the slow recheck.
async fn served_again(h: &Harness, github_id: i64) {
    h.sim()
        .evict_session(github_id)
        .expect("GitHub drops the session");
    let started = Instant::now();
    h.ready().await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "served again on the short schedule: {:?}",
        started.elapsed()
    );
}

async fn an_unnamed_holder_after_a_lost_database_is_told_and_needs_attention(db: TestDb) {
    let (h, controller, reason, github_id) =
        crash_and_lose_the_database(db, false, "unnamed holder").await;
    assert!(
        reason.contains("GitHub does not name"),
        "says the holder is unnamed: {reason}"
    );
    assert!(
        reason.contains("lost its database") && reason.contains("minutes"),
        "says what a lost database means and when the session goes: {reason}"
    );
    assert!(
        !reason.contains("not ours"),
        "never claims it is not ours: {reason}"
    );
    assert!(reason.contains("Nothing was deleted"), "{reason}");
    eventually("the metrics count it as needing attention", || async {
        (attention(&controller).as_deref() == Some("1")).then_some(())
    })
    .await;
    served_again(&h, github_id).await;
    eventually("and no longer count it", || async {
        (attention(&controller).as_deref() == Some("0")).then_some(())
    })
    .await;
    controller.stop().await;
}

async fn our_own_named_session_after_a_lost_database_needs_attention(db: TestDb) {
    let (h, controller, reason, github_id) =
        crash_and_lose_the_database(db, true, "own named holder").await;
    assert!(
        reason.contains(&h.identity.session_owner()) && reason.contains("our own"),
        "names our own earlier session: {reason}"
    );
    assert!(reason.contains("minutes"), "says when it goes: {reason}");
    served_again(&h, github_id).await;
    controller.stop().await;
}
