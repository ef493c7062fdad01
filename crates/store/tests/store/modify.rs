//! `modify_scale_set`, the one read-modify-write of a scale set: it retries a write another
//! writer beat (reading again and calling the change again), gives up after
//! `MODIFY_ATTEMPTS` with `Stale`, and writes nothing when the change changes nothing.

use std::sync::Mutex;

use async_trait::async_trait;
use scaleset_store::{
    EntityId, Error, Event, EventStore as _, MODIFY_ATTEMPTS, NewScaleSet, Progress, ReasonCode,
    Result, Revision, ScaleSet, ScaleSetChanges, ScaleSetId, ScaleSetState, ScaleSetStore,
};

use crate::helpers::{TestDb, store_tests};

store_tests!(
    a_concurrent_write_is_read_again_and_the_change_applied_on_top,
    every_attempt_beaten_is_stale_after_the_last,
    a_change_that_changes_nothing_writes_nothing,
    an_unknown_scale_set_is_not_found,
    a_change_and_its_event_are_one_write,
    an_event_is_appended_even_when_the_change_changes_nothing,
    a_change_with_an_event_of_an_unknown_scale_set_writes_nothing,
    a_leased_change_of_a_taken_over_lease_writes_nothing,
);

/// The database's store with another writer in front of it: before each of the first
/// `interferences` writes of the scale set, the other writer bumps its `max_runners` (as a
/// worker recording its state between the API's read and write would).
struct Contended<S> {
    inner: S,
    interferences: Mutex<u32>,
}

#[async_trait]
impl<S: ScaleSetStore> ScaleSetStore for Contended<S> {
    async fn create_scale_set(&self, new: NewScaleSet) -> Result<ScaleSet> {
        self.inner.create_scale_set(new).await
    }
    async fn get_scale_set(&self, id: ScaleSetId) -> Result<ScaleSet> {
        self.inner.get_scale_set(id).await
    }
    async fn find_scale_set(
        &self,
        entity_id: EntityId,
        runner_group: &str,
        name: &str,
    ) -> Result<Option<ScaleSet>> {
        self.inner
            .find_scale_set(entity_id, runner_group, name)
            .await
    }
    async fn list_scale_sets(&self, entity_id: Option<EntityId>) -> Result<Vec<ScaleSet>> {
        self.inner.list_scale_sets(entity_id).await
    }
    async fn scale_sets_changed_since(&self, since: Option<Revision>) -> Result<ScaleSetChanges> {
        self.inner.scale_sets_changed_since(since).await
    }
    async fn list_scale_set_ids(&self) -> Result<Vec<ScaleSetId>> {
        self.inner.list_scale_set_ids().await
    }
    async fn update_scale_set(&self, scale_set: &ScaleSet) -> Result<ScaleSet> {
        let interfere = {
            let mut left = self.interferences.lock().unwrap();
            let interfere = *left > 0;
            *left = left.saturating_sub(1);
            interfere
        };
        if interfere {
            let mut other = self.inner.get_scale_set(scale_set.id).await?;
            let more = i64::from(other.spec.max_runners()) + 1;
            other.spec.change(|r| r.max_runners = Some(more)).unwrap();
            self.inner.update_scale_set(&other).await?;
        }
        self.inner.update_scale_set(scale_set).await
    }
    async fn record_progress(
        &self,
        lease: &scaleset_store::Lease,
        progress: Progress,
    ) -> Result<()> {
        self.inner.record_progress(lease, progress).await
    }
    async fn set_message_session(
        &self,
        lease: &scaleset_store::Lease,
        session_id: Option<&str>,
    ) -> Result<()> {
        self.inner.set_message_session(lease, session_id).await
    }
    async fn set_provider_error(
        &self,
        lease: &scaleset_store::Lease,
        message: Option<&str>,
    ) -> Result<()> {
        self.inner.set_provider_error(lease, message).await
    }
    async fn record_sample(
        &self,
        lease: &scaleset_store::Lease,
        sample: &scaleset_store::Sample,
    ) -> Result<()> {
        self.inner.record_sample(lease, sample).await
    }
    async fn record_samples(
        &self,
        samples: &[(scaleset_store::Lease, scaleset_store::Sample)],
    ) -> Result<Vec<Result<()>>> {
        self.inner.record_samples(samples).await
    }
    async fn list_samples(
        &self,
        ids: &[ScaleSetId],
        since: scaleset_store::Timestamp,
    ) -> Result<Vec<(ScaleSetId, scaleset_store::Sample)>> {
        self.inner.list_samples(ids, since).await
    }
    async fn request_retry(&self, id: ScaleSetId) -> Result<scaleset_store::Timestamp> {
        self.inner.request_retry(id).await
    }
    async fn delete_scale_set(&self, id: ScaleSetId, generation: i64) -> Result<()> {
        self.inner.delete_scale_set(id, generation).await
    }
    async fn modify_scale_set_with_event(
        &self,
        id: ScaleSetId,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, Event)> {
        self.inner
            .modify_scale_set_with_event(id, change, code, detail)
            .await
    }
    async fn modify_leased_scale_set_with_event(
        &self,
        lease: &scaleset_store::Lease,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, Event)> {
        self.inner
            .modify_leased_scale_set_with_event(lease, change, code, detail)
            .await
    }
}

fn contended<S>(inner: S, interferences: u32) -> Contended<S> {
    Contended {
        inner,
        interferences: Mutex::new(interferences),
    }
}

async fn a_concurrent_write_is_read_again_and_the_change_applied_on_top(db: TestDb) {
    let store = db.open().await;
    let before = crate::helpers::scale_set(&store, "beaten").await;
    let store = contended(store, 2);
    let mut calls = 0;
    let written = store
        .modify_scale_set(before.id, &mut |s| {
            calls += 1;
            s.state = ScaleSetState::Error;
            s.state_reason = "failing".to_owned();
        })
        .await
        .expect("the third attempt is not beaten");
    assert_eq!(calls, 3, "the change runs once per attempt");
    // Both of the other writer's changes are kept, and ours is on top of them.
    assert_eq!(written.spec.max_runners(), before.spec.max_runners() + 2);
    assert_eq!(
        (written.state, written.state_reason.as_str()),
        (ScaleSetState::Error, "failing")
    );
    assert_eq!(written.generation, before.generation + 3);
    assert_eq!(store.get_scale_set(before.id).await.unwrap(), written);
}

async fn every_attempt_beaten_is_stale_after_the_last(db: TestDb) {
    let store = db.open().await;
    let before = crate::helpers::scale_set(&store, "always-beaten").await;
    let store = contended(store, u32::MAX);
    let mut calls = 0;
    let err = store
        .modify_scale_set(before.id, &mut |s| {
            calls += 1;
            s.spec.set_enabled(!s.spec.enabled());
        })
        .await
        .expect_err("every attempt is beaten");
    assert!(matches!(err, Error::Stale { .. }), "{err:?}");
    assert_eq!(calls, MODIFY_ATTEMPTS);
    let after = store.get_scale_set(before.id).await.unwrap();
    assert_eq!(
        after.spec.enabled(),
        before.spec.enabled(),
        "ours never landed"
    );
}

async fn a_change_that_changes_nothing_writes_nothing(db: TestDb) {
    let store = db.open().await;
    let before = crate::helpers::scale_set(&store, "unchanged").await;
    // An interference would show as a bumped generation, were anything written.
    let store = contended(store, 1);
    let enabled = before.spec.enabled();
    let read = store
        .modify_scale_set(before.id, &mut |s| s.spec.set_enabled(enabled))
        .await
        .unwrap();
    assert_eq!(read, before);
    assert_eq!(store.get_scale_set(before.id).await.unwrap(), before);
}

async fn an_unknown_scale_set_is_not_found(db: TestDb) {
    let store = db.open().await;
    let known = crate::helpers::scale_set(&store, "known").await;
    store
        .delete_scale_set(known.id, known.generation)
        .await
        .unwrap();
    let err = store
        .modify_scale_set(known.id, &mut |s| s.spec.set_enabled(false))
        .await
        .expect_err("deleted");
    assert!(err.is_not_found(), "{err:?}");
}

async fn a_change_and_its_event_are_one_write(db: TestDb) {
    let store = db.open().await;
    let before = crate::helpers::scale_set(&store, "recorded").await;
    let (written, event) = store
        .modify_scale_set_with_event(
            before.id,
            &mut |s| s.state = ScaleSetState::Ready,
            ReasonCode::ScaleSetCreated,
            "ready: listening",
        )
        .await
        .unwrap();
    assert_eq!(written.state, ScaleSetState::Ready);
    assert_eq!(written.generation, before.generation + 1);
    assert_eq!(store.get_scale_set(before.id).await.unwrap(), written);
    assert_eq!(
        (event.code, event.reason.as_str()),
        (ReasonCode::ScaleSetCreated, "ready: listening")
    );
    assert!(event.is_first());
    let events = store.list_events(before.id, 10).await.unwrap();
    assert_eq!(
        events.first(),
        Some(&event),
        "the event is the newest of the trail"
    );
}

async fn an_event_is_appended_even_when_the_change_changes_nothing(db: TestDb) {
    let store = db.open().await;
    let before = crate::helpers::scale_set(&store, "rechecked").await;
    let state = before.state;
    for round in 1..=2u64 {
        let (read, event) = store
            .modify_scale_set_with_event(
                before.id,
                &mut |s| s.state = state,
                ReasonCode::ForeignOwner,
                "same",
            )
            .await
            .unwrap();
        assert_eq!(read, before, "nothing written, generation kept");
        assert_eq!(event.count, round, "a repeat is counted on the first entry");
    }
}

async fn a_change_with_an_event_of_an_unknown_scale_set_writes_nothing(db: TestDb) {
    let store = db.open().await;
    let known = crate::helpers::scale_set(&store, "gone").await;
    store
        .delete_scale_set(known.id, known.generation)
        .await
        .unwrap();
    let err = store
        .modify_scale_set_with_event(
            known.id,
            &mut |s| s.spec.set_enabled(false),
            ReasonCode::Drained,
            "y",
        )
        .await
        .expect_err("deleted");
    assert!(err.is_not_found(), "{err:?}");
    assert!(store.list_events(known.id, 10).await.unwrap().is_empty());
}

/// A worker cut off from the database while another took its scale set over records, after
/// the heal, a state with its old lease: nothing of it lands (neither the state nor the
/// event), and the holder's lease writes as before.
async fn a_leased_change_of_a_taken_over_lease_writes_nothing(db: TestDb) {
    const TTL: std::time::Duration = std::time::Duration::from_secs(30);
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "fenced").await;
    let old = crate::helpers::lease(&store, set.id, "worker-a").await;
    db.clock.advance(TTL + std::time::Duration::from_millis(1));
    let new = crate::helpers::lease(&store, set.id, "worker-b").await;
    let (served, _) = store
        .modify_leased_scale_set_with_event(
            &new,
            &mut |s| s.state = ScaleSetState::Ready,
            ReasonCode::SessionOpened,
            "ready: listening for jobs",
        )
        .await
        .unwrap();
    let err = store
        .modify_leased_scale_set_with_event(
            &old,
            &mut |s| s.state = ScaleSetState::Error,
            ReasonCode::TaskFailed,
            "late",
        )
        .await
        .expect_err("the lease was taken over");
    assert!(err.is_lease_lost(), "{err:?}");
    assert_eq!(store.get_scale_set(set.id).await.unwrap(), served);
    let events = store.list_events(set.id, 10).await.unwrap();
    assert!(events.iter().all(|e| e.reason != "late"), "{events:?}");
}
