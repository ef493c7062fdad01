use std::collections::BTreeSet;

use super::{ExportInput, Exports, plan_exports};

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn held(leases: &[(u32, &str)]) -> Vec<(u32, String)> {
    leases
        .iter()
        .map(|(id, w)| (*id, (*w).to_owned()))
        .collect()
}

/// What `worker` exports among workers a, b and c over sets 1..=6, with leases as given.
fn exports(
    worker: &str,
    draining: &[&str],
    leases: &[(u32, &str)],
    serving: &[u32],
) -> Exports<u32> {
    let live = names(&["worker-b", "worker-a", "worker-c"]);
    let draining = names(draining);
    let held = held(leases);
    let serving: BTreeSet<u32> = serving.iter().copied().collect();
    plan_exports(&ExportInput {
        worker,
        live_workers: &live,
        draining: &draining,
        scale_sets: &[1, 2, 3, 4, 5, 6],
        held: &held,
        serving: &serving,
    })
}

const LEASES: [(u32, &str); 5] = [
    (1, "worker-a"),
    (2, "worker-a"),
    (3, "worker-b"),
    (4, "worker-b"),
    (5, "worker-c"),
];

#[test]
fn each_set_is_exported_by_exactly_one_worker_and_the_fleet_by_the_first() {
    let a = exports("worker-a", &[], &LEASES, &[1, 2]);
    let b = exports("worker-b", &[], &LEASES, &[3, 4]);
    let c = exports("worker-c", &[], &LEASES, &[5]);
    assert!(
        a.fleet && !b.fleet && !c.fleet,
        "worker-a, first by name, leads"
    );
    // Set 6 is held by nobody (disabled and empty): the leader exports it.
    assert_eq!(a.sets, BTreeSet::from([1, 2, 6]));
    assert_eq!(b.sets, BTreeSet::from([3, 4]));
    assert_eq!(c.sets, BTreeSet::from([5]));
}

#[test]
fn a_draining_leader_hands_the_fleet_series_to_the_next_worker() {
    let a = exports("worker-a", &["worker-a"], &LEASES, &[]);
    let b = exports("worker-b", &["worker-a"], &LEASES, &[3, 4]);
    assert!(!a.fleet && b.fleet);
    assert_eq!(
        a.sets,
        BTreeSet::from([1, 2]),
        "a exports what it still holds"
    );
    assert_eq!(b.sets, BTreeSet::from([3, 4, 6]));
}

#[test]
fn when_the_leader_is_gone_from_the_registry_the_next_one_leads() {
    // worker-a was killed and its heartbeat expired: its leases expired too.
    let live = names(&["worker-b", "worker-c"]);
    let held = held(&LEASES[2..]);
    let b = plan_exports(&ExportInput {
        worker: "worker-b",
        live_workers: &live,
        draining: &[],
        scale_sets: &[1, 2, 3, 4, 5, 6],
        held: &held,
        serving: &BTreeSet::from([3, 4]),
    });
    assert!(b.fleet);
    assert_eq!(b.sets, BTreeSet::from([1, 2, 3, 4, 6]));
}

#[test]
fn a_set_about_to_be_served_is_exported_before_its_lease_is_taken() {
    let c = exports("worker-c", &[], &LEASES, &[5, 6]);
    assert!(!c.fleet);
    assert_eq!(c.sets, BTreeSet::from([5, 6]));
}

#[test]
fn a_lone_worker_not_yet_in_the_registry_leads() {
    let alone = plan_exports(&ExportInput {
        worker: "worker-z",
        live_workers: &[],
        draining: &[],
        scale_sets: &[1, 2],
        held: &[],
        serving: &BTreeSet::new(),
    });
    assert_eq!(
        alone,
        Exports {
            fleet: true,
            sets: BTreeSet::from([1, 2])
        }
    );
}

#[test]
fn a_lease_held_elsewhere_is_not_exported_even_while_a_task_here_stops() {
    let a = exports("worker-a", &[], &LEASES, &[1, 2, 3]);
    assert!(!a.sets.contains(&3), "set 3 is worker-b's");
}
