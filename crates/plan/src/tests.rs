use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn runners(phases: &[(&str, RunnerPhase)]) -> Vec<RunnerView> {
    phases
        .iter()
        .map(|(name, phase)| RunnerView {
            name: (*name).to_owned(),
            phase: *phase,
            idle_for: Duration::ZERO,
        })
        .collect()
}

fn input(min_idle: u32, max: u32, assigned: i64, runners: &[RunnerView]) -> PlanInput<'_> {
    PlanInput {
        min_idle,
        max_runners: max,
        assigned_jobs: assigned,
        scale_down_delay: Duration::ZERO,
        runners,
    }
}

#[test]
fn creates_one_runner_per_assigned_job_plus_min_idle() {
    let plan = plan(&input(1, 10, 5, &[]));
    assert_eq!(plan.desired, 6);
    assert_eq!(plan.create, 6);
    assert!(plan.retire.is_empty());
}

#[test]
fn never_above_max_runners() {
    assert_eq!(plan(&input(2, 4, 100, &[])).create, 4);
    let known = runners(&[("a", RunnerPhase::Busy), ("b", RunnerPhase::Pending)]);
    assert_eq!(plan(&input(0, 3, 100, &known)).create, 1);
}

#[test]
fn pending_idle_and_busy_runners_count() {
    let known = runners(&[
        ("a", RunnerPhase::Pending),
        ("b", RunnerPhase::Idle),
        ("c", RunnerPhase::Busy),
        ("d", RunnerPhase::Leaving),
    ]);
    let plan = plan(&input(0, 10, 5, &known));
    assert_eq!(plan.create, 2);
}

#[test]
fn retires_idle_surplus_never_busy_or_pending() {
    let known = runners(&[
        ("a", RunnerPhase::Idle),
        ("b", RunnerPhase::Busy),
        ("c", RunnerPhase::Idle),
        ("d", RunnerPhase::Pending),
    ]);
    let plan = plan(&input(0, 10, 0, &known));
    assert_eq!(plan.create, 0);
    assert_eq!(plan.retire, vec!["c".to_owned(), "a".to_owned()]);
}

#[test]
fn keeps_min_idle() {
    let known = runners(&[("a", RunnerPhase::Idle), ("b", RunnerPhase::Idle)]);
    assert_eq!(plan(&input(1, 10, 0, &known)).retire, vec!["b".to_owned()]);
}

#[test]
fn exactly_at_desired_nothing_is_created_or_retired() {
    let known = runners(&[
        ("a", RunnerPhase::Idle),
        ("b", RunnerPhase::Busy),
        ("c", RunnerPhase::Pending),
    ]);
    let plan = plan(&input(1, 10, 2, &known));
    assert_eq!(plan.desired, 3);
    assert_eq!(plan.create, 0);
    assert!(plan.retire.is_empty());
}

#[test]
fn one_short_creates_exactly_one() {
    let known = runners(&[("a", RunnerPhase::Busy), ("b", RunnerPhase::Idle)]);
    let plan = plan(&input(1, 10, 2, &known));
    assert_eq!(plan.create, 1);
    assert!(plan.retire.is_empty());
}

#[test]
fn unwanted_runners_are_retired_first_and_replaced() {
    let known = runners(&[
        ("a", RunnerPhase::Idle),
        ("b", RunnerPhase::Unwanted),
        ("c", RunnerPhase::Idle),
        ("d", RunnerPhase::Unwanted),
    ]);
    // Desired 3 with two live: the unwanted two go and one replacement is made.
    let step = plan(&input(3, 10, 0, &known));
    assert_eq!(step.retire, ["b", "d"]);
    assert_eq!(step.create, 1);
    // Desired 1 with two live idle: the unwanted go first, then the idle surplus.
    let step = plan(&input(1, 10, 0, &known));
    assert_eq!(step.retire, ["b", "d", "c"]);
    assert_eq!(step.create, 0);
}

#[test]
fn negative_statistics_count_as_zero() {
    assert_eq!(plan(&input(1, 10, -5, &[])).create, 1);
}

fn phase() -> impl Strategy<Value = RunnerPhase> {
    prop_oneof![
        Just(RunnerPhase::Pending),
        Just(RunnerPhase::Idle),
        Just(RunnerPhase::Busy),
        Just(RunnerPhase::Leaving),
        Just(RunnerPhase::Unwanted),
    ]
}

/// Applies a plan as the scaler would: new runners start pending, retired ones leave.
fn apply(known: &mut Vec<RunnerView>, plan: &Plan, next: &mut u32) {
    for view in known.iter_mut() {
        if plan.retire.contains(&view.name) {
            view.phase = RunnerPhase::Leaving;
        }
    }
    for _ in 0..plan.create {
        *next += 1;
        known.push(RunnerView {
            name: format!("new-{next:04}"),
            phase: RunnerPhase::Pending,
            idle_for: Duration::ZERO,
        });
    }
}

fn live(known: &[RunnerView]) -> usize {
    known
        .iter()
        .filter(|r| !matches!(r.phase, RunnerPhase::Leaving | RunnerPhase::Unwanted))
        .count()
}

proptest! {
    #[test]
    fn invariants_hold(
        min_idle in 0u32..20,
        max in 0u32..30,
        assigned in -5i64..60,
        phases in proptest::collection::vec(phase(), 0..40),
    ) {
        let mut known: Vec<RunnerView> = phases
            .iter()
            .enumerate()
            .map(|(i, phase)| RunnerView {
                name: format!("r-{i:04}"),
                phase: *phase,
                idle_for: Duration::ZERO,
            })
            .collect();
        let before_live = live(&known);
        let step = plan(&input(min_idle, max, assigned, &known));
        // Never plans above max_runners.
        prop_assert!(step.create == 0 || before_live + step.create as usize <= max as usize);
        prop_assert!(step.desired <= max);
        // Never both creates and retires, but for replacing unwanted runners.
        let unwanted: Vec<&String> = known
            .iter()
            .filter(|r| r.phase == RunnerPhase::Unwanted)
            .map(|r| &r.name)
            .collect();
        prop_assert!(step.create == 0 || step.retire.iter().all(|n| unwanted.contains(&n)));
        // Every unwanted runner is retired; otherwise only idle ones, each once.
        for name in &unwanted {
            prop_assert!(step.retire.contains(name));
        }
        for name in &step.retire {
            let view = known.iter().find(|r| &r.name == name);
            prop_assert!(matches!(
                view.map(|r| r.phase),
                Some(RunnerPhase::Idle | RunnerPhase::Unwanted)
            ));
        }
        let mut unique = step.retire.clone();
        unique.dedup();
        prop_assert_eq!(unique.len(), step.retire.len());
        // Converges: applying the plan leaves nothing more to do.
        let mut next = 0;
        apply(&mut known, &step, &mut next);
        let again = plan(&input(min_idle, max, assigned, &known));
        prop_assert_eq!(again.create, 0);
        prop_assert!(again.retire.is_empty());
        // And it reaches desired unless busy or pending runners alone exceed it.
        let stuck = known
            .iter()
            .filter(|r| matches!(r.phase, RunnerPhase::Busy | RunnerPhase::Pending))
            .count();
        prop_assert_eq!(live(&known), (step.desired as usize).max(stuck));
    }
}

/// Issue 33 item 2: surplus idle runners younger (in idleness) than `scale_down_delay` stay;
/// at exactly the delay they go.
#[test]
fn surplus_idle_runners_stay_for_the_scale_down_delay() {
    let delay = Duration::from_secs(300);
    let view = |name: &str, secs: u64| RunnerView {
        name: name.to_owned(),
        phase: RunnerPhase::Idle,
        idle_for: Duration::from_secs(secs),
    };
    let known = vec![view("a", 0), view("b", 299), view("c", 300), view("d", 301)];
    let step = plan(&PlanInput {
        scale_down_delay: delay,
        ..input(0, 10, 0, &known)
    });
    assert_eq!(step.retire, ["d", "c"]);
    // Still the surplus bound: one over desired retires one, the oldest-named eligible.
    let step = plan(&PlanInput {
        scale_down_delay: delay,
        ..input(3, 10, 0, &known)
    });
    assert_eq!(step.retire, ["d"]);
    // Unwanted runners go whatever the delay.
    let unwanted = vec![RunnerView {
        phase: RunnerPhase::Unwanted,
        ..view("u", 0)
    }];
    let step = plan(&PlanInput {
        scale_down_delay: delay,
        ..input(0, 10, 0, &unwanted)
    });
    assert_eq!(step.retire, ["u"]);
    // Zero delay: every idle surplus runner is eligible.
    assert_eq!(plan(&input(0, 10, 0, &known)).retire.len(), 4);
}

proptest! {
    /// Issue 33 item 2: with a scale-down delay, a retired runner is unwanted or idle for at
    /// least the delay; as many surplus runners are retired as are eligible, up to the
    /// surplus; creates are unaffected by the delay.
    #[test]
    fn scale_down_delay_keeps_a_warm_pool(
        min_idle in 0u32..10,
        max in 1u32..20,
        assigned in 0i64..20,
        delay in 0u64..100,
        runners in proptest::collection::vec((phase(), 0u64..200), 0..30),
    ) {
        let delay = Duration::from_secs(delay);
        let known: Vec<RunnerView> = runners
            .iter()
            .enumerate()
            .map(|(i, (phase, idle))| RunnerView {
                name: format!("r-{i:04}"),
                phase: *phase,
                idle_for: if *phase == RunnerPhase::Idle {
                    Duration::from_secs(*idle)
                } else {
                    Duration::ZERO
                },
            })
            .collect();
        let with_delay = plan(&PlanInput {
            scale_down_delay: delay,
            ..input(min_idle, max, assigned, &known)
        });
        let without = plan(&input(min_idle, max, assigned, &known));
        prop_assert_eq!(with_delay.create, without.create);
        prop_assert_eq!(with_delay.desired, without.desired);
        for name in &with_delay.retire {
            let view = known.iter().find(|r| &r.name == name).expect("a known runner");
            prop_assert!(
                view.phase == RunnerPhase::Unwanted
                    || (view.phase == RunnerPhase::Idle && view.idle_for >= delay)
            );
        }
        let eligible = known
            .iter()
            .filter(|r| r.phase == RunnerPhase::Idle && r.idle_for >= delay)
            .count();
        let unwanted = known.iter().filter(|r| r.phase == RunnerPhase::Unwanted).count();
        let surplus = live(&known).saturating_sub(without.desired as usize);
        prop_assert_eq!(with_delay.retire.len(), unwanted + eligible.min(surplus));
    }
}
