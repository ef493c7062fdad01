//! The reconcile planner's rules, one test each, and its invariants over arbitrary worlds.

use std::time::Duration;

use proptest::prelude::*;
use scaleset_provider::InstanceStatus as ProviderStatus;
use scaleset_store::ScaleSetId;

use super::*;

const OURS: GithubScaleSetId = GithubScaleSetId(5);
const PREFIX: &str = "ci-";

fn runner(
    id: i64,
    name: &str,
    scale_set: i64,
    busy: Option<bool>,
    status: &str,
) -> RunnerReference {
    let mut runner = RunnerReference::default();
    runner.id = RunnerId::from(id);
    runner.name = name.to_owned();
    runner.runner_scale_set_id = GithubScaleSetId(scale_set);
    runner.busy = busy;
    runner.status = status.to_owned();
    runner
}

fn idle(id: i64, name: &str) -> RunnerReference {
    runner(id, name, 5, Some(false), "online")
}

fn instance(name: &str) -> ProviderInstance {
    ProviderInstance {
        provider_id: format!("p-{name}"),
        name: name.to_owned(),
        os_type: None,
        os_name: None,
        os_version: None,
        os_arch: None,
        addresses: vec![],
        status: ProviderStatus::Running,
        provider_fault: None,
        pool_id: None,
    }
}

fn recorded(names: &[&str]) -> HashSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn world<'a>(
    recorded: &'a HashSet<String>,
    at_provider: &'a [ProviderInstance],
    runners: &'a [RunnerReference],
) -> World<'a> {
    World {
        scale_set: OURS,
        prefix: PREFIX,
        recorded,
        at_provider,
        runners,
        inherited: None,
    }
}

#[test]
fn an_unrecorded_instance_with_a_live_runner_is_recorded_again() {
    let known = recorded(&[]);
    let at = [instance("ci-a")];
    let runners = [idle(7, "ci-a")];
    assert_eq!(
        reconcile(&world(&known, &at, &runners)),
        [Action::Record {
            instance: &at[0],
            runner: &runners[0]
        }]
    );
}

#[test]
fn an_unrecorded_instance_without_a_runner_of_ours_is_deleted() {
    let known = recorded(&[]);
    let at = [instance("ci-a")];
    // A runner of that name in another scale set is not its runner.
    let runners = [runner(7, "ci-a", 6, Some(false), "online")];
    assert_eq!(
        reconcile(&world(&known, &at, &runners)),
        [Action::DeleteInstance(&at[0])]
    );
}

#[test]
fn a_recorded_instance_is_left_to_the_row() {
    let known = recorded(&["ci-a", "ci-b"]);
    let at = [instance("ci-a"), instance("ci-b")];
    let runners = [idle(7, "ci-a")];
    assert!(reconcile(&world(&known, &at, &runners)).is_empty());
}

#[test]
fn a_stray_idle_runner_is_removed_and_a_busy_one_awaited() {
    let known = recorded(&[]);
    let runners = [
        idle(7, "ci-a"),
        runner(8, "ci-b", 5, Some(true), "online"),
        runner(9, "ci-c", 5, None, "offline"),
    ];
    assert_eq!(
        reconcile(&world(&known, &[], &runners)),
        [
            Action::RemoveRunner(&runners[0]),
            Action::AwaitJob(&runners[1]),
            Action::RemoveRunner(&runners[2])
        ]
    );
}

#[test]
fn runners_not_ours_are_never_touched() {
    let known = recorded(&["ci-known"]);
    let at = [instance("ci-booting")];
    let runners = [
        // Another controller's name, another scale set, a recorded one, one with a machine.
        idle(1, "other-a"),
        runner(2, "ci-b", 6, Some(false), "online"),
        runner(3, "ci-c", 0, Some(false), "online"),
        idle(4, "ci-known"),
        // The prefix with its dash: "ci" alone or "cix-" is another prefix.
        idle(5, "cix-d"),
        idle(6, "ci"),
    ];
    let actions = reconcile(&world(&known, &at, &runners));
    assert_eq!(actions, [Action::DeleteInstance(&at[0])]);
}

#[test]
fn a_runner_whose_machine_is_listed_is_left_to_the_instance_rule() {
    let known = recorded(&[]);
    let at = [instance("ci-a")];
    let runners = [idle(7, "ci-a")];
    let actions = reconcile(&world(&known, &at, &runners));
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::RemoveRunner(_) | Action::AwaitJob(_))),
        "{actions:?}"
    );
}

#[test]
fn instances_are_planned_before_runners() {
    let known = recorded(&[]);
    let at = [instance("ci-a")];
    let runners = [idle(7, "ci-b")];
    assert_eq!(
        reconcile(&world(&known, &at, &runners)),
        [
            Action::DeleteInstance(&at[0]),
            Action::RemoveRunner(&runners[0])
        ]
    );
}

fn row(status: InstanceStatus, deadline: Option<i64>) -> Instance {
    Instance {
        name: "ci-a".to_owned(),
        scale_set_id: ScaleSetId::generate(),
        provider_id: None,
        github_runner_id: Some(7),
        pool_key: "c_5".to_owned(),
        status,
        bootstrap_deadline: deadline.map(Timestamp::from_unix_millis),
        created_at: Timestamp::EPOCH,
        updated_at: Timestamp::EPOCH,
        removal_requested_at: None,
    }
}

#[test]
fn recovery_of_each_status() {
    for &status in InstanceStatus::ALL {
        let expected = match status {
            InstanceStatus::Creating => Recovery::AskProvider,
            InstanceStatus::Running | InstanceStatus::Busy => Recovery::AskGitHub(RunnerId(7)),
            _ => Recovery::Remove,
        };
        assert_eq!(recovery(status, Some(7)), expected, "{status:?}");
        let without_id = match status {
            InstanceStatus::Creating => Recovery::AskProvider,
            // Nothing to ask GitHub: a row without a runner id that got this far is kept.
            InstanceStatus::Running | InstanceStatus::Busy => Recovery::Keep,
            _ => Recovery::Remove,
        };
        assert_eq!(recovery(status, None), without_id, "{status:?}");
    }
}

#[test]
fn recovery_after_looking() {
    assert_eq!(recovered_creating(true), Recovery::RecordProviderId);
    assert_eq!(recovered_creating(false), Recovery::Remove);
    let offline = runner(7, "ci-a", 5, Some(false), "offline");
    assert_eq!(recovered_registered(Some(&offline)), Recovery::Keep);
    assert_eq!(recovered_registered(None), Recovery::Remove);
}

#[test]
fn the_deadline_is_checked_when_it_has_come() {
    let now = Timestamp::from_unix_millis(1_000);
    let running = |deadline| row(InstanceStatus::Running, deadline);
    assert!(deadline_due(&running(Some(1_000)), true, now, false));
    assert!(deadline_due(&running(Some(999)), true, now, false));
    assert!(!deadline_due(&running(Some(1_001)), true, now, false));
    assert!(!deadline_due(&running(None), true, now, false));
    // Not of the served scale set, or seen online already in this pass.
    assert!(!deadline_due(&running(Some(0)), false, now, false));
    assert!(!deadline_due(&running(Some(0)), true, now, true));
    for &status in InstanceStatus::ALL {
        let due = deadline_due(&row(status, Some(0)), true, now, false);
        assert_eq!(due, status == InstanceStatus::Running, "{status:?}");
    }
}

#[test]
fn a_runner_came_up_when_online_or_busy() {
    let online = runner(7, "ci-a", 5, Some(false), "Online");
    let busy = runner(7, "ci-a", 5, Some(true), "offline");
    let offline = runner(7, "ci-a", 5, Some(false), "offline");
    let unknown = runner(7, "ci-a", 5, None, "offline");
    assert_eq!(bootstrap(Some(&online)), Bootstrap::Online);
    assert_eq!(bootstrap(Some(&busy)), Bootstrap::Online);
    assert_eq!(bootstrap(Some(&offline)), Bootstrap::Late);
    assert_eq!(bootstrap(Some(&unknown)), Bootstrap::Late);
    assert_eq!(bootstrap(None), Bootstrap::Late);
}

#[test]
fn a_runner_found_by_name_is_ours_for_that_name_in_our_scale_set_or_none() {
    assert!(owns_found_runner("ci-a", "ci-a", OURS, OURS));
    assert!(owns_found_runner("ci-a", "ci-a", GithubScaleSetId(0), OURS));
    assert!(!owns_found_runner(
        "ci-a",
        "ci-a",
        GithubScaleSetId(6),
        OURS
    ));
    assert!(!owns_found_runner("ci-a", "ci-b", OURS, OURS));
}

#[test]
fn a_runner_still_running_keeps_its_machine() {
    for &status in InstanceStatus::ALL {
        assert_eq!(
            after_removal(Removal::Removed, status),
            AfterRemoval::Proceed
        );
        assert_eq!(after_removal(Removal::Gone, status), AfterRemoval::Proceed);
        let busy = if status == InstanceStatus::Running {
            AfterRemoval::MarkBusy
        } else {
            AfterRemoval::Keep
        };
        assert_eq!(
            after_removal(Removal::StillRunning, status),
            busy,
            "{status:?}"
        );
    }
}

#[test]
fn teardown_skips_what_is_done() {
    for &status in InstanceStatus::ALL {
        let expected = match status {
            InstanceStatus::Deleted => Teardown {
                mark_deleting: false,
                delete_instance: false,
            },
            InstanceStatus::Deleting => Teardown {
                mark_deleting: false,
                delete_instance: true,
            },
            _ => Teardown {
                mark_deleting: true,
                delete_instance: true,
            },
        };
        assert_eq!(teardown(status), expected, "{status:?}");
    }
}

fn name() -> impl Strategy<Value = String> {
    // Few names, so rows, instances and runners collide; some without our prefix.
    (prop_oneof![Just("ci-"), Just("ci"), Just("other-")], 0u8..5)
        .prop_map(|(prefix, n)| format!("{prefix}{n}"))
}

fn any_runner() -> impl Strategy<Value = RunnerReference> {
    (
        1i64..1_000,
        name(),
        prop_oneof![Just(5i64), Just(6), Just(0)],
        prop_oneof![Just(None), Just(Some(false)), Just(Some(true))],
        prop_oneof![Just("online"), Just("offline")],
    )
        .prop_map(|(id, name, set, busy, status)| runner(id, &name, set, busy, status))
}

fn stray(world: &World<'_>, on_provider: &HashSet<&str>, r: &RunnerReference) -> bool {
    r.runner_scale_set_id == OURS
        && r.name.starts_with(PREFIX)
        && !world.recorded.contains(&r.name)
        && !on_provider.contains(r.name.as_str())
}

proptest! {
    #[test]
    fn reconcile_acts_only_on_what_is_ours_and_never_on_a_busy_runner(
        rows in proptest::collection::hash_set(name(), 0..6),
        listed in proptest::collection::vec(name(), 0..6),
        runners in proptest::collection::vec(any_runner(), 0..8),
    ) {
        let at: Vec<ProviderInstance> = listed.iter().map(|n| instance(n)).collect();
        let world = world(&rows, &at, &runners);
        let actions = reconcile(&world);
        let listed_here = |i: &ProviderInstance| at.iter().any(|a| std::ptr::eq(a, i));
        let runner_here = |r: &RunnerReference| runners.iter().any(|a| std::ptr::eq(a, r));
        let on_provider: HashSet<&str> = at.iter().map(|i| i.name.as_str()).collect();
        for action in &actions {
            match *action {
                Action::Record { instance, runner } => {
                    prop_assert!(listed_here(instance) && !rows.contains(&instance.name));
                    prop_assert!(runner_here(runner));
                    prop_assert_eq!(runner.runner_scale_set_id, OURS);
                    prop_assert_eq!(&runner.name, &instance.name);
                }
                Action::DeleteInstance(instance) => {
                    // Only what the provider listed under our pool key, unrecorded, with no
                    // runner of this scale set by its name.
                    prop_assert!(listed_here(instance) && !rows.contains(&instance.name));
                    prop_assert!(!runners
                        .iter()
                        .any(|r| r.runner_scale_set_id == OURS && r.name == instance.name));
                }
                Action::RemoveRunner(runner) => {
                    prop_assert!(runner_here(runner) && stray(&world, &on_provider, runner));
                    prop_assert_ne!(runner.busy, Some(true));
                }
                Action::AwaitJob(runner) => {
                    prop_assert!(runner_here(runner) && stray(&world, &on_provider, runner));
                    prop_assert_eq!(runner.busy, Some(true));
                }
                Action::Inherit { .. } | Action::DeleteInherited(_) => {
                    prop_assert!(false, "nothing was taken over: {action:?}");
                }
            }
        }
        // And nothing is forgotten: one step per unrecorded instance, one per stray runner.
        let instance_steps = actions
            .iter()
            .filter(|a| matches!(a, Action::Record { .. } | Action::DeleteInstance(_)))
            .count();
        prop_assert_eq!(instance_steps, at.iter().filter(|i| !rows.contains(&i.name)).count());
        let runner_steps = actions.len() - instance_steps;
        prop_assert_eq!(
            runner_steps,
            runners.iter().filter(|r| stray(&world, &on_provider, r)).count()
        );
    }

    #[test]
    fn a_busy_runner_is_never_removed_nor_its_machine_deleted(
        runner in any_runner(),
        status in proptest::sample::select(InstanceStatus::ALL),
    ) {
        if runner.busy == Some(true) {
            // Looked at, it is kept; removed without a look, GitHub refuses and the machine
            // stays.
            prop_assert_eq!(recovered_registered(Some(&runner)), Recovery::Keep);
            prop_assert_eq!(bootstrap(Some(&runner)), Bootstrap::Online);
        }
        prop_assert_ne!(after_removal(Removal::StillRunning, status), AfterRemoval::Proceed);
    }
}

#[test]
fn a_completed_job_retires_only_a_row_of_the_served_scale_set() {
    let row = row(InstanceStatus::Busy, None);
    assert!(retires_completed(&row, row.scale_set_id));
    assert!(
        !retires_completed(&row, ScaleSetId::generate()),
        "a row of another scale set of ours with the runner's name is not this one's to retire"
    );
}

// ----- issue 33 item 1: runners retired for their life so far ---------------------------------

const MIN: i64 = 60_000;

fn served(now_min: i64, limits: Limits, job_waits: bool) -> Served<'static> {
    Served {
        pool_key: "c_5",
        prefix: PREFIX,
        now: Timestamp::from_unix_millis(now_min * MIN),
        limits,
        job_waits,
        inherited: None,
    }
}

fn limits(idle_min: u64, life_min: u64) -> Limits {
    Limits {
        max_idle_lifetime: Duration::from_secs(idle_min * 60),
        max_lifetime: Duration::from_secs(life_min * 60),
    }
}

/// A `running` row recorded at minute `created`, running since minute `updated`, with its
/// bootstrap deadline at minute 10.
fn aged(created: i64, updated: i64) -> Instance {
    Instance {
        created_at: Timestamp::from_unix_millis(created * MIN),
        updated_at: Timestamp::from_unix_millis(updated * MIN),
        ..row(InstanceStatus::Running, Some(10 * MIN))
    }
}

fn life(instance: &Instance) -> Life<'_> {
    Life {
        instance,
        runner: None,
        at_provider: None,
        bootstrap_failed: false,
    }
}

#[test]
fn a_failed_bootstrap_is_retired_and_replaced() {
    let row = aged(0, 0);
    let failed = Life {
        bootstrap_failed: true,
        ..life(&row)
    };
    // Minute 1: long before the bootstrap deadline.
    assert_eq!(
        lifecycle(&failed, &served(1, Limits::default(), true)),
        Some(Retire::BootstrapFailed)
    );
    assert_eq!(
        lifecycle(&life(&row), &served(1, Limits::default(), true)),
        None
    );
}

#[test]
fn an_instance_the_provider_reports_stopped_or_errored_is_retired() {
    let row = aged(0, 0);
    for status in [ProviderStatus::Stopped, ProviderStatus::Error] {
        let stopped = Life {
            at_provider: Some(status),
            ..life(&row)
        };
        assert_eq!(
            lifecycle(&stopped, &served(1, Limits::default(), true)),
            Some(Retire::InstanceStopped),
            "{status:?}"
        );
    }
    for status in [
        ProviderStatus::Running,
        ProviderStatus::Creating,
        ProviderStatus::Unknown,
    ] {
        let fine = Life {
            at_provider: Some(status),
            ..life(&row)
        };
        assert_eq!(lifecycle(&fine, &served(1, Limits::default(), true)), None);
    }
}

#[test]
fn a_runner_left_offline_past_its_deadline_is_retired() {
    let row = aged(0, 0);
    let offline = runner(7, "ci-a", 5, Some(false), "Offline");
    let online = idle(7, "ci-a");
    let seen = |r| Life {
        runner: Some(r),
        ..life(&row)
    };
    // Booting (before the deadline), offline is expected.
    assert_eq!(
        lifecycle(&seen(&offline), &served(9, Limits::default(), true)),
        None
    );
    // At and after it, offline means it is gone.
    for now in [10, 11] {
        assert_eq!(
            lifecycle(&seen(&offline), &served(now, Limits::default(), true)),
            Some(Retire::Offline)
        );
    }
    assert_eq!(
        lifecycle(&seen(&online), &served(11, Limits::default(), true)),
        None
    );
    // No deadline recorded: never offline-retired.
    let undated = Instance {
        bootstrap_deadline: None,
        ..aged(0, 0)
    };
    let undated_life = Life {
        runner: Some(&offline),
        ..life(&undated)
    };
    assert_eq!(
        lifecycle(&undated_life, &served(11, Limits::default(), true)),
        None
    );
}

#[test]
fn max_lifetime_retires_an_idle_runner_and_is_off_at_zero() {
    let row = aged(0, 50);
    let set = |now| served(now, limits(0, 60), true);
    assert_eq!(lifecycle(&life(&row), &set(59)), None);
    assert_eq!(lifecycle(&life(&row), &set(60)), Some(Retire::MaxLifetime));
    // Off by default.
    assert_eq!(
        lifecycle(&life(&row), &served(10_000, Limits::default(), false)),
        None
    );
    // Busy on GitHub or in the store: kept (retired once idle).
    let busy = runner(7, "ci-a", 5, Some(true), "online");
    let busy_life = Life {
        runner: Some(&busy),
        ..life(&row)
    };
    assert_eq!(lifecycle(&busy_life, &set(61)), None);
    let busy_row = Instance {
        status: InstanceStatus::Busy,
        ..aged(0, 50)
    };
    assert_eq!(lifecycle(&life(&busy_row), &set(61)), None);
}

#[test]
fn max_idle_lifetime_retires_only_while_no_job_waits() {
    // Recorded at 0, running (idle) since 20: idleness counts from 20.
    let row = aged(0, 20);
    let set = |now, waits| served(now, limits(30, 0), waits);
    assert_eq!(lifecycle(&life(&row), &set(49, false)), None);
    assert_eq!(
        lifecycle(&life(&row), &set(50, false)),
        Some(Retire::MaxIdleLifetime)
    );
    assert_eq!(lifecycle(&life(&row), &set(50, true)), None);
    assert_eq!(
        lifecycle(&life(&row), &served(10_000, Limits::default(), false)),
        None
    );
}

#[test]
fn the_reasons_come_in_order_and_name_their_events() {
    let row = aged(0, 0);
    let offline = runner(7, "ci-a", 5, Some(false), "offline");
    let everything = Life {
        runner: Some(&offline),
        at_provider: Some(ProviderStatus::Stopped),
        bootstrap_failed: true,
        ..life(&row)
    };
    let set = served(1_000, limits(1, 1), false);
    assert_eq!(lifecycle(&everything, &set), Some(Retire::BootstrapFailed));
    let no_report = Life {
        bootstrap_failed: false,
        ..everything
    };
    assert_eq!(lifecycle(&no_report, &set), Some(Retire::InstanceStopped));
    let listed_running = Life {
        at_provider: Some(ProviderStatus::Running),
        ..no_report
    };
    assert_eq!(lifecycle(&listed_running, &set), Some(Retire::Offline));
    let online = idle(7, "ci-a");
    let up = Life {
        runner: Some(&online),
        ..listed_running
    };
    assert_eq!(lifecycle(&up, &set), Some(Retire::MaxLifetime));
    let only_idle = served(1_000, limits(1, 0), false);
    assert_eq!(lifecycle(&up, &only_idle), Some(Retire::MaxIdleLifetime));
    let events = [
        Retire::BootstrapFailed,
        Retire::InstanceStopped,
        Retire::Offline,
        Retire::MaxLifetime,
        Retire::MaxIdleLifetime,
    ]
    .map(|r| (r.code().as_str(), r.reason()));
    assert_eq!(
        events.map(|(e, _)| e),
        [
            "bootstrap_failed",
            "instance_stopped",
            "runner_offline",
            "max_lifetime",
            "max_idle_lifetime"
        ]
    );
    let mut reasons: Vec<&str> = events.iter().map(|(_, r)| *r).collect();
    reasons.sort_unstable();
    reasons.dedup();
    assert_eq!(reasons.len(), 5, "each reason reads differently");
    assert!(reasons.iter().all(|r| !r.is_empty()));
}

#[test]
fn a_job_waits_while_more_are_assigned_than_runners_run() {
    assert!(
        job_waits(None, 0),
        "unknown before the first plan: nothing idle goes"
    );
    assert!(job_waits(Some(3), 2));
    assert!(!job_waits(Some(2), 2));
    assert!(!job_waits(Some(0), 0));
    assert!(!job_waits(Some(-1), 0));
}

#[test]
fn elapsed_is_zero_when_the_clock_went_back() {
    let at = |ms| Timestamp::from_unix_millis(ms);
    assert_eq!(elapsed(at(1_000), at(3_500)), Duration::from_millis(2_500));
    assert_eq!(elapsed(at(3_500), at(1_000)), Duration::ZERO);
}

fn any_status() -> impl Strategy<Value = InstanceStatus> {
    proptest::sample::select(InstanceStatus::ALL.to_vec())
}

fn any_provider_status() -> impl Strategy<Value = Option<ProviderStatus>> {
    prop_oneof![
        Just(None),
        Just(Some(ProviderStatus::Running)),
        Just(Some(ProviderStatus::Stopped)),
        Just(Some(ProviderStatus::Error)),
        Just(Some(ProviderStatus::Unknown)),
    ]
}

proptest! {
    /// Issue 33 item 1: whatever the facts, the lifecycle rules retire only an idle runner of
    /// ours: a `running` row not asked for by an operator, under the served pool key, named
    /// with our prefix, that GitHub does not list busy; and with every fact absent and both
    /// lifetimes off, nothing.
    #[test]
    fn lifecycle_never_retires_a_busy_runner_or_anything_not_ours(
        name in name(),
        status in any_status(),
        pool in prop_oneof![Just("c_5"), Just("c_6"), Just("d_5")],
        requested in any::<bool>(),
        listed in proptest::option::of(any_runner()),
        at_provider in any_provider_status(),
        bootstrap_failed in any::<bool>(),
        created in 0i64..100,
        idle_since in 0i64..100,
        deadline in proptest::option::of(0i64..100),
        now in 0i64..200,
        idle_limit in 0u64..100,
        life_limit in 0u64..100,
        waits in any::<bool>(),
        taken_over in any::<bool>(),
    ) {
        let pool = if taken_over && name.len() % 2 == 0 { "g_pool" } else { pool };
        let row = Instance {
            name: name.clone(),
            pool_key: pool.to_owned(),
            status,
            removal_requested_at: requested.then_some(Timestamp::EPOCH),
            bootstrap_deadline: deadline.map(|d| Timestamp::from_unix_millis(d * MIN)),
            created_at: Timestamp::from_unix_millis(created * MIN),
            updated_at: Timestamp::from_unix_millis(idle_since * MIN),
            ..row(InstanceStatus::Running, None)
        };
        let facts = Life {
            instance: &row,
            runner: listed.as_ref(),
            at_provider,
            bootstrap_failed,
        };
        let set = Served {
            inherited: taken_over.then_some("g_pool"),
            ..served(now, limits(idle_limit, life_limit), waits)
        };
        if let Some(why) = lifecycle(&facts, &set) {
            prop_assert_eq!(row.status, InstanceStatus::Running);
            prop_assert!(row.removal_requested_at.is_none());
            prop_assert!(listed.as_ref().is_none_or(|r| r.busy != Some(true)));
            if matches!(why, Retire::Inherited | Retire::InheritedOffline) {
                // Issue 37: only a row under GARM's pool key of a taken-over set.
                prop_assert!(taken_over);
                prop_assert_eq!(row.pool_key.as_str(), "g_pool");
            } else {
                prop_assert_eq!(row.pool_key.as_str(), "c_5");
                prop_assert!(row.name.starts_with(PREFIX));
            }
            match why {
                Retire::Inherited => {
                    prop_assert!(listed.as_ref().is_none_or(|r| r.status != "offline"));
                }
                Retire::InheritedOffline => {
                    prop_assert!(listed.as_ref().is_some_and(|r| r.status == "offline"));
                }
                Retire::BootstrapFailed => prop_assert!(bootstrap_failed),
                Retire::InstanceStopped => prop_assert!(matches!(
                    at_provider,
                    Some(ProviderStatus::Stopped | ProviderStatus::Error)
                )),
                Retire::Offline => {
                    prop_assert!(listed.as_ref().is_some_and(|r| r.status == "offline"));
                    prop_assert!(deadline.is_some_and(|d| d <= now));
                }
                Retire::MaxLifetime => {
                    prop_assert!(life_limit > 0 && now - created >= i64::try_from(life_limit).unwrap());
                }
                Retire::MaxIdleLifetime => {
                    prop_assert!(!waits);
                    prop_assert!(idle_limit > 0 && now - idle_since >= i64::try_from(idle_limit).unwrap());
                }
            }
        }
        let quiet = Life { runner: None, at_provider: None, bootstrap_failed: false, ..facts };
        prop_assert_eq!(lifecycle(&quiet, &served(now, Limits::default(), waits)), None);
        if row.pool_key == "g_pool" && taken_over {
            // An idle runner GARM left goes whatever else is known; a busy one never.
            let busy = Instance { status: InstanceStatus::Busy, ..row.clone() };
            prop_assert_eq!(lifecycle(&Life { instance: &busy, ..quiet }, &set), None);
        }
    }
}

#[test]
fn a_re_recorded_runner_is_busy_when_github_lists_it_busy() {
    assert_eq!(
        rerecorded_status(&runner(7, "ci-a", 5, Some(true), "online")),
        InstanceStatus::Busy
    );
    for busy in [None, Some(false)] {
        assert_eq!(
            rerecorded_status(&runner(7, "ci-a", 5, busy, "online")),
            InstanceStatus::Running
        );
    }
}

// ----- issue 37: a scale set taken over from GARM ---------------------------------------------

const GARM_PREFIX: &str = "gpu-";

fn taken_over<'a>(
    recorded: &'a HashSet<String>,
    at_provider: &'a [ProviderInstance],
    garms: &'a [ProviderInstance],
    runners: &'a [RunnerReference],
) -> World<'a> {
    World {
        inherited: Some(Inherited {
            prefix: GARM_PREFIX,
            at_provider: garms,
        }),
        ..world(recorded, at_provider, runners)
    }
}

#[test]
fn garms_instance_with_a_live_runner_is_inherited_and_one_without_is_deleted() {
    let known = recorded(&[]);
    let garms = [instance("gpu-g4wrcxxlxiik"), instance("gpu-tqirkoibjg3m")];
    let runners = [runner(5, "gpu-g4wrcxxlxiik", 5, Some(true), "online")];
    assert_eq!(
        reconcile(&taken_over(&known, &[], &garms, &runners)),
        [
            Action::Inherit {
                instance: &garms[0],
                runner: &runners[0]
            },
            Action::DeleteInherited(&garms[1]),
        ]
    );
    // Recorded already (a pass before): nothing.
    let known = recorded(&["gpu-g4wrcxxlxiik", "gpu-tqirkoibjg3m"]);
    assert!(reconcile(&taken_over(&known, &[], &garms, &runners)).is_empty());
}

#[test]
fn under_garms_pool_id_only_what_carries_garms_prefix_is_touched() {
    // `orphan-1` (planted in the capture, not made by GARM) and an instance named with our
    // prefix but listed under GARM's pool id are left alone, runner or not.
    let known = recorded(&[]);
    let garms = [instance("orphan-1"), instance("ci-x")];
    let runners = [idle(9, "orphan-1")];
    assert!(reconcile(&taken_over(&known, &[], &garms, &runners)).is_empty());
}

#[test]
fn garms_runners_without_an_instance_are_strays_never_removed_while_busy() {
    let known = recorded(&[]);
    let runners = [
        runner(5, "gpu-busy", 5, Some(true), "online"),
        runner(6, "gpu-idle", 5, Some(false), "offline"),
        // Another scale set's runner with GARM's prefix, and a foreign runner here.
        runner(7, "gpu-other", 6, Some(false), "online"),
        runner(8, "other-runner-1", 5, Some(false), "online"),
    ];
    assert_eq!(
        reconcile(&taken_over(&known, &[], &[], &runners)),
        [
            Action::AwaitJob(&runners[0]),
            Action::RemoveRunner(&runners[1])
        ]
    );
    // A runner with an instance under GARM's pool id is the instance's (inherited), not a
    // stray.
    let garms = [instance("gpu-idle")];
    assert_eq!(
        reconcile(&taken_over(&known, &[], &garms, &runners[1..2])),
        [Action::Inherit {
            instance: &garms[0],
            runner: &runners[1]
        }]
    );
    // Without the takeover, GARM's prefix is nobody's: nothing.
    assert!(reconcile(&world(&known, &[], &runners)).is_empty());
}

#[test]
fn an_idle_runner_garm_left_is_retired_a_busy_one_finishes_its_job() {
    let set = Served {
        inherited: Some("g_pool"),
        ..served(1, Limits::default(), true)
    };
    let idle_row = Instance {
        name: "gpu-a".into(),
        pool_key: "g_pool".into(),
        ..row(InstanceStatus::Running, None)
    };
    assert_eq!(lifecycle(&life(&idle_row), &set), Some(Retire::Inherited));
    let busy_row = Instance {
        status: InstanceStatus::Busy,
        ..idle_row.clone()
    };
    assert_eq!(lifecycle(&life(&busy_row), &set), None);
    let listed_busy = runner(5, "gpu-a", 5, Some(true), "online");
    let seen_busy = Life {
        runner: Some(&listed_busy),
        ..life(&idle_row)
    };
    assert_eq!(lifecycle(&seen_busy, &set), None);
    // Not a taken-over set: a row of another pool key is nobody's here.
    assert_eq!(
        lifecycle(&life(&idle_row), &served(1, Limits::default(), true)),
        None
    );
    assert_eq!(
        Retire::Inherited.code().as_str(),
        "inherited_runner_retired"
    );
    assert!(Retire::Inherited.reason().contains("GARM"));
}

#[test]
fn a_runner_garm_registered_that_never_came_online_is_retired_for_what_it_is() {
    let set = Served {
        inherited: Some("g_pool"),
        ..served(1, Limits::default(), true)
    };
    let row = Instance {
        name: "gpu-tqirkoibjg3m".into(),
        pool_key: "g_pool".into(),
        ..row(InstanceStatus::Running, None)
    };
    let never_booted = runner(6, "gpu-tqirkoibjg3m", 5, Some(false), "offline");
    let seen = Life {
        runner: Some(&never_booted),
        ..life(&row)
    };
    assert_eq!(lifecycle(&seen, &set), Some(Retire::InheritedOffline));
    // Online and idle: the idle one GARM left.
    let online = runner(6, "gpu-tqirkoibjg3m", 5, Some(false), "Online");
    let seen_online = Life {
        runner: Some(&online),
        ..life(&row)
    };
    assert_eq!(lifecycle(&seen_online, &set), Some(Retire::Inherited));
    // Of ours, an offline runner waits for its bootstrap deadline as before.
    let ours = Instance {
        name: format!("{PREFIX}a"),
        pool_key: "c_5".into(),
        ..row.clone()
    };
    assert_eq!(
        lifecycle(
            &Life {
                instance: &ours,
                ..seen
            },
            &set
        ),
        None
    );
    assert_eq!(
        Retire::InheritedOffline.code().as_str(),
        "inherited_runner_offline"
    );
    let reason = Retire::InheritedOffline.reason();
    assert!(reason.contains("GARM registered"), "{reason}");
    assert!(reason.contains("offline (never booted"), "{reason}");
    assert!(!reason.contains("idle"), "{reason}");
}

proptest! {
    /// Issue 37: with a takeover, GARM's instances are acted on only when listed under GARM's
    /// pool id and named with GARM's prefix, recorded only with a runner of this scale set by
    /// their name, deleted only without one; no busy runner is ever removed.
    #[test]
    fn a_takeover_acts_only_on_what_garm_made(
        rows in proptest::collection::hash_set(name(), 0..4),
        listed in proptest::collection::vec(name(), 0..4),
        garm_listed in proptest::collection::vec(
            prop_oneof![name().prop_map(|n| format!("gpu-{n}")), name()], 0..5),
        runners in proptest::collection::vec(
            (any_runner(), any::<bool>()).prop_map(|(mut r, garm)| {
                if garm { r.name = format!("gpu-{}", r.name); }
                r
            }), 0..8),
    ) {
        let at: Vec<ProviderInstance> = listed.iter().map(|n| instance(n)).collect();
        let garms: Vec<ProviderInstance> = garm_listed.iter().map(|n| instance(n)).collect();
        let world = taken_over(&rows, &at, &garms, &runners);
        let garm_here = |i: &ProviderInstance| garms.iter().any(|a| std::ptr::eq(a, i));
        for action in reconcile(&world) {
            match action {
                Action::Inherit { instance, runner } => {
                    prop_assert!(garm_here(instance));
                    prop_assert!(instance.name.starts_with(GARM_PREFIX));
                    prop_assert!(!rows.contains(&instance.name));
                    prop_assert_eq!(runner.runner_scale_set_id, OURS);
                    prop_assert_eq!(&runner.name, &instance.name);
                }
                Action::DeleteInherited(instance) => {
                    prop_assert!(garm_here(instance));
                    prop_assert!(instance.name.starts_with(GARM_PREFIX));
                    prop_assert!(!rows.contains(&instance.name));
                    prop_assert!(!runners
                        .iter()
                        .any(|r| r.runner_scale_set_id == OURS && r.name == instance.name));
                }
                Action::Record { instance, .. } | Action::DeleteInstance(instance) => {
                    prop_assert!(!garm_here(instance));
                }
                Action::RemoveRunner(runner) => {
                    prop_assert_ne!(runner.busy, Some(true));
                    prop_assert_eq!(runner.runner_scale_set_id, OURS);
                    prop_assert!(runner.name.starts_with(PREFIX) || runner.name.starts_with(GARM_PREFIX));
                    prop_assert!(!garms.iter().chain(&at).any(|i| i.name == runner.name));
                }
                Action::AwaitJob(runner) => prop_assert_eq!(runner.busy, Some(true)),
            }
        }
    }
}
