use std::collections::BTreeSet;
use std::time::Duration;

use scaleset_adopt::{ControllerId, Identity};
use uuid::Uuid;

use super::*;
use crate::pool_keys::pool_key;
use crate::superseded::{Retirement, retirement};

fn ours() -> Uuid {
    Uuid::from_u128(0x0c0f_fee0_0000_4000_8000_0000_0000_0001)
}

fn identity() -> Identity {
    Identity::new(ControllerId::from_bytes(ours().into_bytes()))
}

fn key(id: i64) -> String {
    pool_key(ours(), id).as_str().to_owned()
}

#[test]
fn only_our_pools_that_nothing_stored_names_are_candidates() {
    let foreign = pool_key(Uuid::from_u128(9), 4).as_str().to_owned();
    let listed = vec![
        key(7),
        key(3),
        foreign,
        "gpu-big-x".to_owned(),
        key(5),
        key(6),
        key(3),
    ];
    let stored: BTreeSet<i64> = [5].into();
    let rows: BTreeSet<String> = [key(6)].into();
    assert_eq!(
        candidates(ours(), &listed, &stored, &rows),
        vec![(key(3), 3), (key(7), 7)],
        "once each, in order; not another controller's, not GARM's, not a stored set's, \
         not one a row names"
    );
    assert!(candidates(ours(), &[], &stored, &rows).is_empty());
}

#[test]
fn no_entity_to_ask_proves_nothing() {
    assert_eq!(proof(&identity(), &[]), Proof::Unproven(Unproven::NoEntity));
}

#[test]
fn gone_means_not_found_on_every_entity() {
    assert_eq!(proof(&identity(), &[Answer::NotFound]), Proof::Gone);
    assert_eq!(
        proof(&identity(), &[Answer::NotFound, Answer::NotFound]),
        Proof::Gone
    );
}

#[test]
fn another_controllers_scale_set_with_the_id_is_not_ours() {
    let theirs = Identity::new(ControllerId::from_bytes(Uuid::from_u128(9).into_bytes()));
    let label = theirs.controller_id().owner_label();
    let found = Answer::Found(vec!["linux".to_owned(), label.to_uppercase()]);
    assert_eq!(
        proof(&identity(), std::slice::from_ref(&found)),
        Proof::Gone
    );
    assert_eq!(proof(&identity(), &[Answer::NotFound, found]), Proof::Gone);
}

#[test]
fn a_scale_set_with_the_id_on_any_entity_keeps_the_pool() {
    let unlabelled = Answer::Found(vec!["linux".to_owned()]);
    let ours_labelled = Answer::Found(vec![identity().controller_id().owner_label()]);
    for found in [unlabelled, ours_labelled, Answer::Found(Vec::new())] {
        assert_eq!(
            proof(&identity(), &[Answer::NotFound, found.clone()]),
            Proof::Unproven(Unproven::Exists),
            "{found:?}"
        );
        assert_eq!(
            proof(&identity(), &[found.clone(), Answer::NotFound]),
            Proof::Unproven(Unproven::Exists),
            "{found:?}"
        );
        // A found set is the stronger reason, wherever the failure is.
        assert_eq!(
            proof(&identity(), &[Answer::Failed, found]),
            Proof::Unproven(Unproven::Exists)
        );
    }
}

#[test]
fn an_entity_that_could_not_be_asked_proves_nothing() {
    assert_eq!(
        proof(&identity(), &[Answer::Failed]),
        Proof::Unproven(Unproven::LookupFailed)
    );
    assert_eq!(
        proof(&identity(), &[Answer::NotFound, Answer::Failed]),
        Proof::Unproven(Unproven::LookupFailed)
    );
    assert_eq!(
        proof(&identity(), &[Answer::Failed, Answer::NotFound]),
        Proof::Unproven(Unproven::LookupFailed)
    );
}

fn runner(entity: usize, id: i64, name: &str, busy: bool) -> Registered {
    Registered {
        entity,
        id,
        name: name.to_owned(),
        busy,
    }
}

#[test]
fn a_runner_busy_on_any_entity_keeps_its_machine() {
    let runners = [
        runner(0, 1, "web-aaaa", false),
        runner(1, 2, "web-aaaa", true),
        runner(0, 3, "web-bbbb", false),
    ];
    let (state, remove) = old_runner("web-aaaa", &runners);
    assert_eq!((state, remove), (OldRunner::Busy, Vec::new()));
    assert_eq!(retirement(state), Retirement::AwaitJob);
}

#[test]
fn idle_registrations_are_removed_first_on_each_entity() {
    let runners = [
        runner(0, 1, "web-aaaa", false),
        runner(1, 2, "web-aaaa", false),
        runner(0, 3, "web-bbbb", true),
    ];
    let (state, remove) = old_runner("web-aaaa", &runners);
    assert_eq!((state, remove), (OldRunner::Idle, vec![(0, 1), (1, 2)]));
    assert_eq!(retirement(state), Retirement::RemoveRunner);
}

#[test]
fn an_unregistered_runner_frees_its_machine() {
    let runners = [runner(0, 3, "web-bbbb", true)];
    let (state, remove) = old_runner("web-aaaa", &runners);
    assert_eq!((state, remove), (OldRunner::Gone, Vec::new()));
    assert_eq!(retirement(state), Retirement::DeleteInstance);
    assert_eq!(old_runner("web-aaaa", &[]).0, OldRunner::Gone);
}

const INTERVAL: Duration = Duration::from_secs(300);

fn clock(since_start: u64, since_last: Option<u64>) -> SweepClock {
    SweepClock {
        since_start: Duration::from_secs(since_start),
        since_last: since_last.map(Duration::from_secs),
        interval: INTERVAL,
    }
}

#[test]
fn the_first_sweep_waits_for_the_ensures_or_one_interval() {
    assert!(
        sweep_due(clock(0, None), false, false, false),
        "ensured: at once"
    );
    assert!(!sweep_due(clock(0, None), true, false, false));
    assert!(!sweep_due(clock(299, None), true, false, false));
    assert!(sweep_due(clock(300, None), true, false, false));
}

#[test]
fn later_sweeps_come_every_reconcile_interval() {
    assert!(!sweep_due(clock(1000, Some(0)), false, false, false));
    assert!(!sweep_due(clock(1000, Some(299)), false, false, false));
    assert!(sweep_due(clock(1000, Some(300)), false, false, false));
    assert!(sweep_due(clock(1000, Some(300)), true, false, false));
}

#[test]
fn no_sweep_beside_a_running_one_or_a_decommission() {
    for since_last in [None, Some(1000)] {
        assert!(!sweep_due(clock(1000, since_last), false, true, false));
        assert!(!sweep_due(clock(1000, since_last), false, false, true));
    }
}
