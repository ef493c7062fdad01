//! The idle planner's rules, one comparison or condition at a time: each test changes one fact
//! from a case that stands (or lists) and expects the answer to flip.

use std::time::Duration;

use scaleset_store::{Instance, InstanceStatus, ScaleSetId, Timestamp};

use super::*;

const T0: i64 = 1_800_000_000_000;

fn at(offset_secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(T0 + offset_secs * 1000)
}

fn idle_row() -> Instance {
    Instance {
        name: "linux-aaaaaaaa".to_owned(),
        scale_set_id: ScaleSetId::generate(),
        provider_id: Some("i-1".to_owned()),
        github_runner_id: Some(7),
        pool_key: "c_5".to_owned(),
        status: InstanceStatus::Running,
        bootstrap_deadline: None,
        created_at: at(-100),
        updated_at: at(-50),
        removal_requested_at: None,
    }
}

fn rules() -> Rules {
    Rules {
        listed_at: at(0),
        scale_down_delay: Duration::ZERO,
        limits: Limits::default(),
        reports: false,
    }
}

fn due(instance: &Instance, seen_online: bool, rules: &Rules) -> Due {
    row_due(
        &Row {
            instance,
            seen_online,
        },
        rules,
    )
}

#[test]
fn an_idle_row_with_no_time_rule_is_never_due_and_a_busy_one_never_is() {
    assert_eq!(due(&idle_row(), false, &rules()), Due::Never);
    let busy = Instance {
        status: InstanceStatus::Busy,
        // A busy row's deadline and lifetimes are not rules of the empty poll.
        bootstrap_deadline: Some(at(10)),
        ..idle_row()
    };
    let lifetimes = Rules {
        limits: Limits {
            max_idle_lifetime: Duration::from_secs(60),
            max_lifetime: Duration::from_secs(60),
        },
        ..rules()
    };
    assert_eq!(due(&busy, false, &lifetimes), Due::Never);
}

#[test]
fn a_row_in_any_other_status_is_due_at_once() {
    for status in InstanceStatus::ALL
        .iter()
        .copied()
        .filter(|s| !matches!(s, InstanceStatus::Running | InstanceStatus::Busy))
    {
        let row = Instance {
            status,
            ..idle_row()
        };
        assert_eq!(due(&row, false, &rules()), Due::Now, "{status:?}");
    }
}

#[test]
fn a_removal_request_makes_a_row_due_at_once() {
    let row = Instance {
        removal_requested_at: Some(at(-1)),
        ..idle_row()
    };
    assert_eq!(due(&row, true, &rules()), Due::Now);
}

#[test]
fn a_booting_row_is_due_at_once_only_when_instances_report() {
    let reports = Rules {
        reports: true,
        ..rules()
    };
    assert_eq!(due(&idle_row(), false, &reports), Due::Now, "booting");
    assert_eq!(due(&idle_row(), true, &reports), Due::Never, "seen online");
    assert_eq!(due(&idle_row(), false, &rules()), Due::Never, "no reports");
}

#[test]
fn a_bootstrap_deadline_ahead_is_due_at_it_and_one_reached_unseen_at_once() {
    let row = |deadline| Instance {
        bootstrap_deadline: Some(deadline),
        ..idle_row()
    };
    assert_eq!(due(&row(at(30)), false, &rules()), Due::At(at(30)));
    assert_eq!(
        due(&row(at(0)), false, &rules()),
        Due::Now,
        "reached at the list"
    );
    assert_eq!(due(&row(at(-1)), false, &rules()), Due::Now);
    assert_eq!(due(&row(at(-1)), true, &rules()), Due::Never, "seen online");
    assert_eq!(due(&row(at(30)), true, &rules()), Due::Never, "seen online");
}

#[test]
fn the_scale_down_delay_is_due_at_its_end_when_ahead() {
    let delay = |secs| Rules {
        scale_down_delay: Duration::from_secs(secs),
        ..rules()
    };
    // updated 50 s before the list.
    assert_eq!(due(&idle_row(), false, &delay(60)), Due::At(at(10)));
    assert_eq!(
        due(&idle_row(), false, &delay(50)),
        Due::Never,
        "reached at the list"
    );
    assert_eq!(due(&idle_row(), false, &delay(51)), Due::At(at(1)));
    assert_eq!(due(&idle_row(), false, &delay(0)), Due::Never, "off");
}

#[test]
fn the_idle_lifetime_counts_from_the_last_write_and_the_lifetime_from_the_record() {
    let limits = |idle, life| Rules {
        limits: Limits {
            max_idle_lifetime: Duration::from_secs(idle),
            max_lifetime: Duration::from_secs(life),
        },
        ..rules()
    };
    // created 100 s and updated 50 s before the list.
    assert_eq!(due(&idle_row(), false, &limits(80, 0)), Due::At(at(30)));
    assert_eq!(due(&idle_row(), false, &limits(0, 130)), Due::At(at(30)));
    assert_eq!(
        due(&idle_row(), false, &limits(50, 0)),
        Due::Never,
        "reached"
    );
    assert_eq!(
        due(&idle_row(), false, &limits(0, 100)),
        Due::Never,
        "reached"
    );
}

#[test]
fn a_row_is_due_at_its_first_moment_and_a_list_at_its_first_row() {
    let row = Instance {
        bootstrap_deadline: Some(at(40)),
        ..idle_row()
    };
    let all = Rules {
        scale_down_delay: Duration::from_secs(80), // at(30)
        limits: Limits {
            max_idle_lifetime: Duration::from_secs(90), // at(40)
            max_lifetime: Duration::from_secs(120),     // at(20)
        },
        ..rules()
    };
    assert_eq!(due(&row, false, &all), Due::At(at(20)));
    let later = Instance {
        created_at: at(0),
        ..row.clone()
    };
    assert_eq!(due(&later, false, &all), Due::At(at(30)));

    let moved = Instance {
        name: "linux-bbbbbbbb".to_owned(),
        bootstrap_deadline: Some(at(5)),
        ..idle_row()
    };
    let rows = [&later, &moved, &idle_row()];
    let listed = |seen: bool| {
        next_due(
            rows.iter().map(|&instance| Row {
                instance,
                seen_online: seen,
            }),
            &all,
        )
    };
    assert_eq!(listed(false), Due::At(at(5)));
    // Seen online, the deadline no longer counts: the first row's max_lifetime is first.
    assert_eq!(listed(true), Due::At(at(20)));
    assert_eq!(next_due([], &all), Due::Never, "no rows");
    let pending = Instance {
        status: InstanceStatus::Pending,
        ..idle_row()
    };
    let with_pending = [&later, &pending];
    assert_eq!(
        next_due(
            with_pending.iter().map(|&instance| Row {
                instance,
                seen_online: false,
            }),
            &all,
        ),
        Due::Now
    );
}

#[test]
fn the_earlier_of_two_dues() {
    let (a, b) = (Due::At(at(1)), Due::At(at(2)));
    assert_eq!(a.min(b), a);
    assert_eq!(b.min(a), a);
    assert_eq!(a.min(Due::Never), a);
    assert_eq!(Due::Never.min(b), b);
    assert_eq!(Due::Never.min(Due::Never), Due::Never);
    assert_eq!(Due::Now.min(a), Due::Now);
    assert_eq!(a.min(Due::Now), Due::Now);
    assert_eq!(Due::Never.min(Due::Now), Due::Now);
}

fn listed() -> Listed {
    Listed {
        at: at(0),
        due: Due::At(at(100)),
        assigned: 2,
        writes: 5,
    }
}

fn poll() -> Poll {
    Poll {
        now: at(50),
        assigned: 2,
        writes: 5,
        beside: false,
        reconcile_due: false,
        removal_requested: false,
        max_age: Duration::from_secs(300),
    }
}

#[test]
fn an_empty_poll_stands_on_a_list_nothing_changed_or_came_due_since() {
    assert!(reuse(Some(&listed()), &poll()));
    assert!(!reuse(None, &poll()), "no list");
}

#[test]
fn any_change_since_the_list_means_listing_again() {
    let changed = [
        Poll {
            writes: 6,
            ..poll()
        },
        Poll {
            assigned: 3,
            ..poll()
        },
        Poll {
            beside: true,
            ..poll()
        },
        Poll {
            removal_requested: true,
            ..poll()
        },
        Poll {
            reconcile_due: true,
            ..poll()
        },
    ];
    for poll in changed {
        assert!(!reuse(Some(&listed()), &poll), "{poll:?}");
    }
}

#[test]
fn a_list_stands_until_its_due_moment_is_reached() {
    let due = |due| Listed { due, ..listed() };
    let now = |secs| Poll {
        now: at(secs),
        ..poll()
    };
    assert!(reuse(Some(&due(Due::At(at(100)))), &now(99)));
    assert!(!reuse(Some(&due(Due::At(at(100)))), &now(100)), "reached");
    assert!(!reuse(Some(&due(Due::Now)), &now(1)));
    assert!(reuse(Some(&due(Due::Never)), &now(299)));
}

#[test]
fn a_list_stands_at_most_max_age_and_not_across_a_clock_going_back() {
    let listed = Listed {
        due: Due::Never,
        ..listed()
    };
    let now = |millis: i64| Poll {
        now: Timestamp::from_unix_millis(T0 + millis),
        ..poll()
    };
    assert!(reuse(Some(&listed), &now(0)), "at the list");
    assert!(reuse(Some(&listed), &now(299_999)));
    assert!(!reuse(Some(&listed), &now(300_000)), "max age reached");
    assert!(!reuse(Some(&listed), &now(-1)), "the clock went back");
}
