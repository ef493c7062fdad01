//! Records an interrupted create left behind. Before issue 29 item 7, the API's create stored
//! a scale set *disabled* (so that no worker raced it), ensured it on GitHub inside the
//! request, and only then enabled it; a request that never finished (a GitHub that accepts and
//! never answers, a client that gave up, a server stopped) left the record `pending`, disabled
//! and without a reason for ever, and neither a restart nor an enable brought it back. The
//! create now stores what was asked and the worker ensures it; this module finds the records
//! an older server left that way and enables them, with an event, so the worker ensures them
//! like any other.
//!
//! The decision is pure ([`left_by_an_interrupted_create`]); the supervisor reads the events
//! and writes the change.

use std::time::Duration;

use scaleset_store::{EventKind, ReasonCode, ScaleSet, ScaleSetState, Timestamp};

use crate::error::{Error, store};
use crate::shared::Shared;

/// Event kinds that show a record's disabled state was somebody's choice: the current API's
/// create (`created`), a fleet apply (`declared`, `spec_updated`), an update (`updated`) or a
/// drain (`drain`). A record carrying any of them is left as it is.
const CHOSEN: [EventKind; 5] = [
    EventKind::Created,
    EventKind::Declared,
    EventKind::SpecUpdated,
    EventKind::Updated,
    EventKind::Drain,
];

/// Whether `scale_set`, with the event kinds `events`, is what an older server's create
/// stored before it ensured: pending, disabled, never on GitHub, no event that shows a choice,
/// and older than `settle` (a current create writes its event right after the row; `settle`
/// leaves it the time to).
pub(crate) fn left_by_an_interrupted_create(
    scale_set: &ScaleSet,
    events: &[EventKind],
    now: Timestamp,
    settle: Duration,
) -> bool {
    candidate(scale_set)
        && scale_set.created_at.saturating_add(settle) < now
        && !events.iter().any(|kind| CHOSEN.contains(kind))
}

/// Whether `scale_set` may be one: the checks that need no event read.
fn candidate(scale_set: &ScaleSet) -> bool {
    scale_set.state == ScaleSetState::Pending
        && !scale_set.spec.enabled()
        && scale_set.github_id.is_none()
        && scale_set.provenance.is_none()
}

/// Enables every record an interrupted create left (see the module doc), with a `resumed`
/// event. A concurrent write (another worker, an operator) wins: the record is looked at again
/// at the next watch.
pub(crate) async fn resume(shared: &Shared, scale_sets: &[&ScaleSet]) -> Result<(), Error> {
    for scale_set in scale_sets.iter().filter(|s| candidate(s)) {
        let events = shared
            .store
            .list_events(scale_set.id, 100)
            .await
            .map_err(store("reading the events of a pending scale set"))?;
        let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
        if !left_by_an_interrupted_create(
            scale_set,
            &kinds,
            shared.clock.now(),
            shared.settings.lease_ttl,
        ) {
            continue;
        }
        let mut resumed = (*scale_set).clone();
        resumed.spec.set_enabled(true);
        resumed.state_reason =
            "a create an older server did not finish left it disabled; enabled so that the \
             worker ensures it"
                .to_owned();
        match shared.store.update_scale_set(&resumed).await {
            Ok(_) => {}
            Err(e) if e.is_stale() || e.is_not_found() => continue,
            Err(e) => return Err(store("enabling a scale set an interrupted create left")(e)),
        }
        let name = scale_set.spec.name().as_str();
        let reason = format!(
            "left pending and disabled by a create an older server never finished (interrupted \
             before it was ensured): enabled, so the worker ensures it now; \
             `scalesetctl scale-set drain {name}` disables it again"
        );
        tracing::info!(scale_set = %scale_set.id, %name, "resuming a scale set an interrupted create left");
        shared
            .store
            .append_event(scale_set.id, ReasonCode::Resumed, &reason)
            .await
            .map_err(store("appending an event"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left(mutate: impl FnOnce(&mut ScaleSet)) -> ScaleSet {
        let mut spec = scaleset_store::test_util::spec("hang3");
        spec.set_enabled(false);
        let at = Timestamp::from_unix_millis(1_000_000);
        let mut scale_set = ScaleSet {
            id: scaleset_store::ScaleSetId(uuid::Uuid::from_u128(1)),
            entity_id: scaleset_store::EntityId(uuid::Uuid::from_u128(2)),
            spec,
            github_id: None,
            provenance: None,
            evidence: Vec::new(),
            refusal: None,
            takeover: None,
            state: ScaleSetState::Pending,
            state_reason: String::new(),
            last_message_id: 0,
            session_id: None,
            desired_runners: 0,
            generation: 1,
            created_at: at,
            updated_at: at,
            last_message_at: None,
            jobs_waiting: 0,
            jobs_waiting_since: None,
            provider_error: None,
            retry_requested_at: None,
        };
        mutate(&mut scale_set);
        scale_set
    }

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000 + 121_000);
    const SETTLE: Duration = Duration::from_secs(120);

    #[test]
    fn an_old_pending_disabled_record_without_a_choice_is_an_interrupted_create() {
        assert!(left_by_an_interrupted_create(
            &left(|_| {}),
            &[],
            NOW,
            SETTLE
        ));
        // Events of the ensure itself show no choice.
        assert!(left_by_an_interrupted_create(
            &left(|_| {}),
            &[EventKind::Other],
            NOW,
            SETTLE
        ));
    }

    #[test]
    fn anything_that_shows_a_choice_or_progress_is_left_alone() {
        for kind in CHOSEN {
            assert!(
                !left_by_an_interrupted_create(&left(|_| {}), &[kind], NOW, SETTLE),
                "{kind}"
            );
        }
        type Change = fn(&mut ScaleSet);
        let cases: [(&str, Change); 4] = [
            ("enabled", |s| s.spec.set_enabled(true)),
            ("not pending", |s| s.state = ScaleSetState::Error),
            ("on GitHub", |s| s.github_id = Some(7)),
            ("with provenance", |s| {
                s.provenance = Some(scaleset_store::Provenance::Adopted);
            }),
        ];
        for (what, mutate) in cases {
            assert!(
                !left_by_an_interrupted_create(&left(mutate), &[], NOW, SETTLE),
                "{what}"
            );
        }
    }

    #[test]
    fn a_record_younger_than_the_settle_time_is_left_to_its_create() {
        let just = Timestamp::from_unix_millis(1_000_000 + 120_000);
        assert!(!left_by_an_interrupted_create(
            &left(|_| {}),
            &[],
            just,
            SETTLE
        ));
        let after = Timestamp::from_unix_millis(1_000_000 + 120_001);
        assert!(left_by_an_interrupted_create(
            &left(|_| {}),
            &[],
            after,
            SETTLE
        ));
    }
}
