//! The reconcile planner's rules, one test each, and its invariants over arbitrary worlds.

use proptest::prelude::*;
use scaleset_provider::InstanceStatus as ProviderStatus;
use scaleset_store::ScaleSetId;

use super::*;

const OURS: GitHubScaleSetId = GitHubScaleSetId(5);
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
    runner.runner_scale_set_id = GitHubScaleSetId(scale_set);
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
fn a_runner_found_by_name_is_ours_in_our_scale_set_or_none() {
    assert!(owns_found_runner(&idle(7, "ci-a"), OURS));
    assert!(owns_found_runner(
        &runner(7, "ci-a", 0, None, "offline"),
        OURS
    ));
    assert!(!owns_found_runner(
        &runner(7, "ci-a", 6, None, "offline"),
        OURS
    ));
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
