use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn names(workers: &[&str]) -> Vec<String> {
    workers.iter().map(|w| (*w).to_owned()).collect()
}

fn plan_for(
    worker: &str,
    live: &[&str],
    scale_sets: &[u32],
    held: &[(u32, &str)],
) -> LeasePlan<u32> {
    let live = names(live);
    let held: Vec<(u32, String)> = held.iter().map(|(k, h)| (*k, (*h).to_owned())).collect();
    plan_leases(&LeaseInput {
        worker,
        live_workers: &live,
        draining: &[],
        scale_sets,
        held: &held,
    })
}

fn plan_draining(
    worker: &str,
    live: &[&str],
    draining: &[&str],
    scale_sets: &[u32],
    held: &[(u32, &str)],
) -> LeasePlan<u32> {
    let live = names(live);
    let draining = names(draining);
    let held: Vec<(u32, String)> = held.iter().map(|(k, h)| (*k, (*h).to_owned())).collect();
    plan_leases(&LeaseInput {
        worker,
        live_workers: &live,
        draining: &draining,
        scale_sets,
        held: &held,
    })
}

#[test]
fn a_draining_worker_releases_every_lease_and_takes_none() {
    let plan = plan_draining(
        "a",
        &["a", "b"],
        &["a"],
        &[1, 2, 3, 4],
        &[(2, "a"), (1, "a"), (1, "a"), (3, "b"), (9, "a")],
    );
    assert_eq!(plan.share, 0);
    assert!(plan.serve.is_empty(), "free set 4 is not taken");
    assert_eq!(
        plan.release,
        [1, 2],
        "its own, once each, of the served sets only"
    );
    // Alone and draining: it still serves nothing (the operator asked for it).
    let alone = plan_draining("a", &["a"], &["a"], &[1], &[(1, "a")]);
    assert!(alone.serve.is_empty());
    assert_eq!(alone.release, [1]);
}

#[test]
fn the_others_share_without_the_draining_worker() {
    let sets = [1, 2, 3, 4];
    // Counted, b's share would be 2; without the draining a it is all four.
    let plan = plan_draining("b", &["a", "b"], &["a"], &sets, &[]);
    assert_eq!(plan.share, 4);
    assert_eq!(plan.serve, [1, 2, 3, 4]);
    // A lease the draining worker still holds is not taken before it lets go.
    let plan = plan_draining("b", &["a", "b"], &["a"], &sets, &[(1, "a")]);
    assert_eq!(plan.serve, [2, 3, 4]);
    // Another worker's drain changes nothing for a third one's place among the others.
    let plan = plan_draining("c", &["a", "b", "c"], &["a"], &sets, &[]);
    assert_eq!(plan.share, 2);
    assert_eq!(plan.serve, [3, 4]);
}

#[test]
fn a_lone_worker_serves_every_free_scale_set() {
    let plan = plan_for("a", &["a"], &[3, 1, 2], &[]);
    assert_eq!(plan.share, 3);
    assert_eq!(plan.serve, [1, 2, 3]);
    assert!(plan.release.is_empty());
    // It counts itself even before its own heartbeat is listed.
    assert_eq!(plan_for("a", &[], &[1, 2], &[]).serve, [1, 2]);
}

#[test]
fn the_share_is_rounded_up() {
    assert_eq!(plan_for("a", &["a", "b"], &[1, 2, 3, 4, 5], &[]).share, 3);
    assert_eq!(
        plan_for("a", &["a", "b", "c"], &[1, 2, 3, 4, 5, 6], &[]).share,
        2
    );
    assert_eq!(plan_for("a", &["a", "b"], &[], &[]).share, 0);
    // Duplicate names and ids count once.
    let plan = plan_for("a", &["a", "b", "b"], &[1, 1, 2, 3, 4], &[]);
    assert_eq!(plan.share, 2);
    assert_eq!(plan.serve, [1, 2]);
}

#[test]
fn workers_starting_together_reach_for_different_scale_sets() {
    let sets = [1, 2, 3, 4, 5, 6];
    assert_eq!(plan_for("a", &["a", "b"], &sets, &[]).serve, [1, 2, 3]);
    assert_eq!(plan_for("b", &["a", "b"], &sets, &[]).serve, [4, 5, 6]);
    assert_eq!(plan_for("c", &["a", "b", "c"], &sets, &[]).serve, [5, 6]);
    // The walk wraps around past the last id.
    let held = [(5, "x"), (6, "x")];
    assert_eq!(plan_for("b", &["a", "b"], &sets, &held).serve, [4, 1, 2]);
}

#[test]
fn a_worker_over_its_share_releases_the_ones_furthest_from_its_start() {
    let all: Vec<(u32, &str)> = (1..=6).map(|k| (k, "a")).collect();
    let plan = plan_for("a", &["a", "b"], &[1, 2, 3, 4, 5, 6], &all);
    assert_eq!(plan.serve, [1, 2, 3]);
    assert_eq!(plan.release, [4, 5, 6]);
    // ... which are exactly the ones the newcomer reaches for once they are free.
    let kept: Vec<(u32, &str)> = (1..=3).map(|k| (k, "a")).collect();
    let newcomer = plan_for("b", &["a", "b"], &[1, 2, 3, 4, 5, 6], &kept);
    assert_eq!(newcomer.serve, [4, 5, 6]);
    assert!(newcomer.release.is_empty());
}

#[test]
fn held_leases_are_kept_before_free_ones_are_taken_and_others_are_left() {
    let held = [(2, "a"), (3, "b"), (4, "b")];
    let plan = plan_for("a", &["a", "b"], &[1, 2, 3, 4], &held);
    assert_eq!(plan.share, 2);
    assert_eq!(plan.serve, [2, 1]);
    assert!(plan.release.is_empty());
    // At its share it takes nothing more, even with free scale sets left.
    let plan = plan_for(
        "a",
        &["a", "b"],
        &[1, 2, 3, 4, 5],
        &[(4, "a"), (5, "a"), (3, "a")],
    );
    assert_eq!(plan.serve, [3, 4, 5]);
    assert!(plan.release.is_empty());
    // A dead worker's unexpired lease is still left alone.
    assert_eq!(plan_for("a", &["a"], &[1, 2], &[(1, "dead")]).serve, [2]);
}

#[test]
fn a_held_scale_set_that_is_no_longer_enabled_is_not_planned() {
    let plan = plan_for("a", &["a"], &[1], &[(1, "a"), (9, "a")]);
    assert_eq!(plan.serve, [1]);
    assert!(plan.release.is_empty());
}

/// One plan-and-apply turn of `worker` on `leases`: surplus released, free planned ones taken
/// (the store decides races: a set taken meanwhile stays with its holder).
fn turn(worker: &str, live: &[String], sets: &[u32], leases: &mut BTreeMap<u32, String>) {
    let held: Vec<(u32, String)> = leases.iter().map(|(k, h)| (*k, h.clone())).collect();
    let plan = plan_leases(&LeaseInput {
        worker,
        live_workers: live,
        draining: &[],
        scale_sets: sets,
        held: &held,
    });
    for id in &plan.release {
        leases.remove(id);
    }
    for id in plan.serve {
        leases.entry(id).or_insert_with(|| worker.to_owned());
    }
}

fn world() -> impl Strategy<Value = (usize, Vec<u32>, BTreeMap<u32, usize>)> {
    (1usize..5, proptest::collection::btree_set(0u32..40, 0..12)).prop_flat_map(|(n, sets)| {
        let sets: Vec<u32> = sets.into_iter().collect();
        // Initial leases: any subset of the sets, each held by a live worker (0..n).
        let initial = proptest::collection::btree_map(
            proptest::sample::select(sets.clone().into_iter().chain([99]).collect::<Vec<_>>()),
            0..n,
            0..=sets.len(),
        );
        (Just(n), Just(sets), initial)
    })
}

proptest! {
    #[test]
    fn a_plan_is_within_the_share_and_never_touches_another_holder(
        (n, sets, initial) in world(),
        me in 0usize..5,
    ) {
        let live: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        let worker = format!("w{}", me % n);
        let held: Vec<(u32, String)> = initial
            .iter()
            .filter(|(k, _)| sets.contains(k))
            .map(|(k, w)| (*k, format!("w{w}")))
            .collect();
        let plan = plan_leases(&LeaseInput {
            worker: &worker,
            live_workers: &live,
            draining: &[],
            scale_sets: &sets,
            held: &held,
        });
        prop_assert_eq!(plan.share, sets.len().div_ceil(n));
        prop_assert!(plan.serve.len() <= plan.share);
        let mine: Vec<u32> = held.iter().filter(|(_, h)| *h == worker).map(|(k, _)| *k).collect();
        for id in &plan.serve {
            prop_assert!(sets.contains(id));
            let holder = held.iter().find(|(k, _)| k == id).map(|(_, h)| h);
            prop_assert!(holder.is_none_or(|h| *h == worker), "{} is another's", id);
        }
        for id in &plan.release {
            prop_assert!(mine.contains(id) && !plan.serve.contains(id));
        }
        // Every held lease is kept or released; surplus only above the share.
        prop_assert_eq!(plan.serve.iter().filter(|id| mine.contains(id)).count() + plan.release.len(), mine.len());
        prop_assert_eq!(plan.release.len(), mine.len().saturating_sub(plan.share));
        // Under its share it takes every free set it has room for.
        let free = sets.iter().filter(|k| !held.iter().any(|(h, _)| h == *k)).count();
        let kept = mine.len().min(plan.share);
        prop_assert_eq!(plan.serve.len(), kept + free.min(plan.share - kept));
    }

    #[test]
    fn workers_taking_turns_converge_in_two_rounds_to_every_set_served_within_the_share(
        (n, sets, initial) in world(),
    ) {
        let live: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        let mut leases: BTreeMap<u32, String> = initial
            .into_iter()
            .filter(|(k, _)| sets.contains(k))
            .map(|(k, w)| (k, format!("w{w}")))
            .collect();
        for _ in 0..2 {
            for worker in &live {
                turn(worker, &live, &sets, &mut leases);
            }
        }
        let share = sets.len().div_ceil(n);
        for id in &sets {
            prop_assert!(leases.contains_key(id), "{} unserved: {:?}", id, leases);
        }
        for worker in &live {
            prop_assert!(leases.values().filter(|h| *h == worker).count() <= share);
        }
        // Converged: another round changes nothing.
        let settled = leases.clone();
        for worker in &live {
            turn(worker, &live, &sets, &mut leases);
        }
        prop_assert_eq!(settled, leases);
    }

    #[test]
    fn workers_starting_together_cover_every_set_and_divide_evenly_when_they_can(
        n in 1usize..6,
        m in 0u32..30,
    ) {
        let live: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        let sets: Vec<u32> = (0..m).collect();
        let plans: Vec<Vec<u32>> = live
            .iter()
            .map(|worker| {
                plan_leases(&LeaseInput { worker, live_workers: &live, draining: &[], scale_sets: &sets, held: &[] }).serve
            })
            .collect();
        let mut union: Vec<u32> = plans.iter().flatten().copied().collect();
        let total = union.len();
        union.sort_unstable();
        union.dedup();
        prop_assert_eq!(&union, &sets);
        if (m as usize).is_multiple_of(n) {
            prop_assert_eq!(total, m as usize, "disjoint: {:?}", plans);
        }
    }

    /// Issue 33 item 4: whatever the leases, once one of several workers is drained, it
    /// releases everything at its next turn, and two rounds of the others' turns leave every
    /// scale set served by the others within their share.
    #[test]
    fn a_drained_workers_sets_are_taken_by_the_others(
        (n, sets, initial) in world(),
        drained in 0usize..5,
    ) {
        prop_assume!(n >= 2);
        let live: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        let gone = format!("w{}", drained % n);
        let draining = vec![gone.clone()];
        let mut leases: BTreeMap<u32, String> = initial
            .into_iter()
            .filter(|(k, _)| sets.contains(k))
            .map(|(k, w)| (k, format!("w{w}")))
            .collect();
        let drain_turn = |worker: &str, leases: &mut BTreeMap<u32, String>| {
            let held: Vec<(u32, String)> = leases.iter().map(|(k, h)| (*k, h.clone())).collect();
            let plan = plan_leases(&LeaseInput {
                worker,
                live_workers: &live,
                draining: &draining,
                scale_sets: &sets,
                held: &held,
            });
            for id in &plan.release {
                leases.remove(id);
            }
            for id in plan.serve {
                leases.entry(id).or_insert_with(|| worker.to_owned());
            }
        };
        for _ in 0..2 {
            for worker in &live {
                drain_turn(worker, &mut leases);
            }
        }
        let share = sets.len().div_ceil(n - 1);
        for id in &sets {
            prop_assert!(leases.contains_key(id), "{} unserved: {:?}", id, leases);
        }
        prop_assert!(leases.values().all(|h| *h != gone), "{:?}", leases);
        for worker in &live {
            prop_assert!(leases.values().filter(|h| *h == worker).count() <= share);
        }
    }
}
