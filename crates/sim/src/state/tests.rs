//! Unit tests of the state model: each pins one rule of the protocol reference.

use std::time::Duration;

use super::*;
use crate::config::AssignmentMode;
use crate::snapshot::JobSpec;

fn org() -> Scope {
    Scope::Organization("acme".to_owned())
}

fn t(secs: u64) -> SimTime {
    SimTime::from_millis(1_800_000_000_000 + secs * 1000)
}

fn world() -> (State, SimConfig) {
    let config = SimConfig::default();
    (State::new(&config), config)
}

fn named(name: &str) -> ScaleSetInput {
    ScaleSetInput {
        name: name.to_owned(),
        ..ScaleSetInput::default()
    }
}

/// Creates scale set `name` in the default group of `acme` at 0 s; returns its id.
fn scale_set(s: &mut State, name: &str) -> i64 {
    s.create_scale_set(&org(), named(name), t(0))
        .unwrap_or_default()
}

/// Enqueues `count` jobs on scale set `id` at `at`, which must be accepted.
fn enqueue(s: &mut State, c: &SimConfig, id: i64, count: u32, at: SimTime) {
    assert!(
        s.enqueue(id, &JobSpec::count(count), c.assignment, at)
            .is_ok()
    );
}

fn kinds(delivery: &Delivery) -> Vec<String> {
    delivery
        .events
        .iter()
        .map(|e| {
            match e {
                JobEvent::Available(_) => "Available",
                JobEvent::Assigned(_) => "Assigned",
                JobEvent::Started { .. } => "Started",
                JobEvent::Completed { .. } => "Completed",
            }
            .to_owned()
        })
        .collect()
}

#[test]
fn scale_set_names_are_unique_per_group_case_insensitively() {
    let (mut s, _) = world();
    let gpu = s.create_group(&org(), "gpu").unwrap_or_default();
    assert!(s.create_scale_set(&org(), named("Linux"), t(0)).is_ok());
    assert_eq!(
        s.create_scale_set(&org(), named("linux"), t(0)),
        Err(StateError::ScaleSetExists {
            name: "linux".into()
        })
    );
    let other_group = ScaleSetInput {
        group_id: gpu,
        ..named("linux")
    };
    assert!(s.create_scale_set(&org(), other_group, t(0)).is_ok());
    assert_eq!(s.find_scale_sets(&org(), None, Some("LINUX")).len(), 2);
    assert_eq!(s.find_scale_sets(&org(), Some(1), Some("LINUX")).len(), 1);
}

#[test]
fn default_group_is_id_one_in_every_scope() {
    let (s, _) = world();
    let groups = s.groups(&org(), Some("default"));
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].id, 1);
    assert!(groups[0].is_default);
}

#[test]
fn one_session_per_scale_set_and_owner_named_when_configured() {
    let (mut s, _) = world();
    let id = scale_set(&mut s, "a");
    assert!(s.create_session(&org(), id, "first", t(0), false).is_ok());
    assert_eq!(
        s.create_session(&org(), id, "second", t(0), true).err(),
        Some(StateError::SessionConflict {
            scale_set: "a".into(),
            owner: Some("first".into()),
        })
    );
    assert_eq!(
        s.create_session(&org(), id, "x", t(0), false).err(),
        Some(StateError::SessionConflict {
            scale_set: "a".into(),
            owner: None,
        })
    );
}

#[test]
fn unacknowledged_messages_are_redelivered_and_acknowledged_ones_never() {
    let (mut s, c) = world();
    let id = scale_set(&mut s, "a");
    enqueue(&mut s, &c, id, 1, t(0));
    let first = s.poll(id, 0, Some(10), c.assignment, t(1));
    let first = first.expect("a message");
    assert_eq!(kinds(&first), vec!["Assigned"]);
    // A new session polling from 0 gets the same message again.
    let again = s
        .poll(id, 0, Some(10), c.assignment, t(2))
        .expect("redelivered");
    assert_eq!(again.id, first.id);
    // Past the cursor nothing is delivered.
    assert!(s.poll(id, first.id, Some(10), c.assignment, t(2)).is_none());
    s.ack(id, first.id);
    assert!(s.poll(id, 0, Some(10), c.assignment, t(3)).is_none());
}

#[test]
fn capacity_gates_releases_one_job_per_unit() {
    let (mut s, c) = world();
    let id = scale_set(&mut s, "a");
    enqueue(&mut s, &c, id, 3, t(0));
    assert!(s.poll(id, 0, Some(0), c.assignment, t(1)).is_none());
    assert_eq!(s.statistics(id).total_assigned_jobs, 0);
    let one = s.poll(id, 0, Some(1), c.assignment, t(1)).expect("one job");
    assert_eq!(kinds(&one), vec!["Assigned"]);
    s.ack(id, one.id);
    assert!(s.poll(id, one.id, Some(1), c.assignment, t(1)).is_none());
    let two = s
        .poll(id, one.id, Some(3), c.assignment, t(1))
        .expect("the rest");
    assert_eq!(kinds(&two).len(), 2);
    assert_eq!(s.statistics(id).total_assigned_jobs, 3);
}

#[test]
fn acquire_mode_offers_then_assigns_acquired_jobs() {
    let (mut s, _) = world();
    let mode = AssignmentMode::AvailableThenAcquire;
    let id = scale_set(&mut s, "a");
    let ids = s
        .enqueue(id, &JobSpec::count(2), mode, t(0))
        .unwrap_or_default();
    let offer = s.poll(id, 0, None, mode, t(1)).expect("offer");
    assert_eq!(kinds(&offer), vec!["Available", "Available"]);
    assert_eq!(s.statistics(id).total_available_jobs, 2);
    assert_eq!(s.acquire(id, &[ids[0], 999]), vec![ids[0]]);
    assert_eq!(s.statistics(id).total_acquired_jobs, 1);
    let assigned = s.poll(id, offer.id, None, mode, t(2)).expect("assigned");
    assert_eq!(kinds(&assigned), vec!["Assigned"]);
    let stats = s.statistics(id);
    assert_eq!(
        (stats.total_available_jobs, stats.total_assigned_jobs),
        (1, 1)
    );
}

#[test]
fn unattended_assignments_are_cancelled_and_requeued() {
    let (mut s, mut c) = world();
    c.reassign_after = Some(Duration::from_secs(60));
    c.max_reassignments = 1;
    let id = scale_set(&mut s, "a");
    enqueue(&mut s, &c, id, 1, t(0));
    let m1 = s.poll(id, 0, None, c.assignment, t(0)).expect("assigned");
    s.process(&c, t(61));
    let m2 = s
        .poll(id, m1.id, Some(0), c.assignment, t(61))
        .expect("cancel");
    assert_eq!(kinds(&m2), vec!["Completed"]);
    assert!(m2.events.iter().any(
        |e| matches!(e, JobEvent::Completed { result, runner: None, .. } if result == "canceled")
    ));
    let m3 = s
        .poll(id, m2.id, None, c.assignment, t(62))
        .expect("reassigned");
    assert_eq!(kinds(&m3), vec!["Assigned"]);
    s.process(&c, t(200));
    let m4 = s
        .poll(id, m3.id, None, c.assignment, t(200))
        .expect("final cancel");
    assert_eq!(kinds(&m4), vec!["Completed"]);
    assert!(s.poll(id, m4.id, None, c.assignment, t(300)).is_none());
}

#[test]
fn dormant_scale_sets_are_deleted_but_not_while_a_session_is_open() {
    let (mut s, mut c) = world();
    c.dormancy = Some(Duration::from_secs(100));
    let a = scale_set(&mut s, "a");
    let b = scale_set(&mut s, "b");
    assert!(s.create_session(&org(), b, "me", t(0), false).is_ok());
    assert!(s.process(&c, t(99)).is_empty());
    assert_eq!(s.process(&c, t(100)), vec![a]);
    assert!(s.scale_sets.contains_key(&b));
}

#[test]
fn a_scale_set_deleted_keeping_its_runners_leaves_them_to_end_their_jobs() {
    let (mut s, mut c) = world();
    c.runner_job_duration = Duration::from_secs(10);
    let id = scale_set(&mut s, "a");
    let busy = s.register_agent(&org(), id, "r1", t(0)).expect("agent");
    let idle = s.register_agent(&org(), id, "r2", t(0)).expect("agent");
    enqueue(&mut s, &c, id, 1, t(0));
    assert!(s.poll(id, 0, None, c.assignment, t(0)).is_some());
    assert!(s.start_runner(busy.id).is_ok());
    s.process(&c, t(1));
    assert!(s.delete_scale_set_keeping_runners(id).is_some());
    assert!(!s.scale_sets.contains_key(&id));
    assert_eq!(s.agents.len(), 2, "both runners stay registered");
    assert_eq!(
        s.remove_agent(&org(), busy.id),
        Err(StateError::JobStillRunning(busy.id))
    );
    // The busy one ends its job at its time (started at 1 s, 10 s of work) and deregisters;
    // the idle one never gets a job and stays until it is removed.
    s.process(&c, t(10));
    assert_eq!(s.agents.len(), 2);
    s.process(&c, t(11));
    assert_eq!(s.agents.keys().copied().collect::<Vec<_>>(), vec![idle.id]);
    assert!(s.remove_agent(&org(), idle.id).is_ok());
    assert!(s.delete_scale_set_keeping_runners(id).is_none(), "gone");
}

#[test]
fn a_scale_set_deleted_without_keeping_takes_its_runners_along() {
    let (mut s, _) = world();
    let id = scale_set(&mut s, "a");
    let other = scale_set(&mut s, "b");
    assert!(s.register_agent(&org(), id, "r1", t(0)).is_ok());
    let kept = s.register_agent(&org(), other, "r2", t(0)).expect("agent");
    assert!(s.delete_scale_set(id).is_some());
    assert_eq!(s.agents.keys().copied().collect::<Vec<_>>(), vec![kept.id]);
}

#[test]
fn a_simulated_runner_takes_one_job_reports_it_and_deregisters() {
    let (mut s, mut c) = world();
    c.runner_job_duration = Duration::from_secs(10);
    let id = scale_set(&mut s, "a");
    let agent = s.register_agent(&org(), id, "r1", t(0)).expect("agent");
    enqueue(&mut s, &c, id, 2, t(0));
    let m1 = s.poll(id, 0, None, c.assignment, t(0)).expect("assigned");
    assert!(s.start_runner(agent.id).is_ok());
    s.process(&c, t(1));
    let stats = s.statistics(id);
    assert_eq!((stats.total_running_jobs, stats.total_busy_runners), (1, 1));
    assert_eq!(
        s.remove_agent(&org(), agent.id),
        Err(StateError::JobStillRunning(agent.id))
    );
    // It runs for the configured time (started at 1 s, 10 s of work): still busy at 10 s.
    s.process(&c, t(10));
    let stats = s.statistics(id);
    assert_eq!((stats.total_running_jobs, stats.total_busy_runners), (1, 1));
    s.process(&c, t(11));
    let m2 = s
        .poll(id, m1.id, None, c.assignment, t(11))
        .expect("started+completed");
    assert_eq!(kinds(&m2), vec!["Started", "Completed"]);
    assert!(m2.events.iter().all(|e| matches!(
        e,
        JobEvent::Started { runner: (_, name), .. }
            | JobEvent::Completed { runner: Some((_, name)), .. } if name == "r1"
    )));
    assert!(s.agents.is_empty(), "the runner deregistered");
    // The second job waits: a runner takes only one.
    s.process(&c, t(12));
    let stats = s.statistics(id);
    assert_eq!(
        (stats.total_assigned_jobs, stats.total_running_jobs),
        (1, 0)
    );
}

/// A scale set with one assigned (and acknowledged) job that runner `r1` has just taken at 1 s.
fn started_job(s: &mut State, c: &SimConfig, name: &str) -> (i64, i64) {
    let id = scale_set(s, name);
    let agent = s
        .register_agent(&org(), id, &format!("{name}-r1"), t(0))
        .expect("agent");
    enqueue(s, c, id, 1, t(0));
    let assigned = s.poll(id, 0, None, c.assignment, t(0)).expect("assigned");
    s.ack(id, assigned.id);
    assert!(s.start_runner(agent.id).is_ok());
    s.process(c, t(1));
    (id, assigned.id)
}

#[test]
fn job_started_goes_out_with_the_next_batch_or_once_its_delay_has_passed() {
    let (mut s, mut c) = world();
    assert_eq!(c.job_started_delay, Duration::from_secs(50), "github.com");
    c.runner_job_duration = Duration::from_secs(3600);
    // On its own: not before the delay, then alone.
    let (alone, cursor) = started_job(&mut s, &c, "alone");
    assert!(s.poll(alone, cursor, None, c.assignment, t(2)).is_none());
    assert!(s.poll(alone, cursor, None, c.assignment, t(50)).is_none());
    let started = s
        .poll(alone, cursor, None, c.assignment, t(51))
        .expect("due");
    assert_eq!(kinds(&started), vec!["Started"]);
    // With the next batch: another job event makes a message, and it rides along, first.
    let (batched, cursor) = started_job(&mut s, &c, "batched");
    enqueue(&mut s, &c, batched, 1, t(2));
    let both = s
        .poll(batched, cursor, None, c.assignment, t(2))
        .expect("a batch");
    assert_eq!(kinds(&both), vec!["Started", "Assigned"]);
    // Immediate mode: out with the very next poll.
    c.job_started_delay = Duration::ZERO;
    let (fast, cursor) = started_job(&mut s, &c, "fast");
    let started = s
        .poll(fast, cursor, None, c.assignment, t(1))
        .expect("immediate");
    assert_eq!(kinds(&started), vec!["Started"]);
}

#[test]
fn agent_names_are_unique_per_scope() {
    let (mut s, _) = world();
    let id = scale_set(&mut s, "a");
    assert!(s.register_agent(&org(), id, "r1", t(0)).is_ok());
    assert_eq!(
        s.register_agent(&org(), id, "R1", t(0)).err(),
        Some(StateError::AgentExists { name: "R1".into() })
    );
}

#[test]
fn a_leaked_session_blocks_until_it_expires_when_expiry_is_configured() {
    let (mut s, mut c) = world();
    c.session_expiry = Some(Duration::from_secs(300));
    let id = scale_set(&mut s, "a");
    assert!(s.create_session(&org(), id, "crashed", t(0), false).is_ok());
    s.touch_session(id, t(200));
    s.process(&c, t(499));
    assert!(
        s.create_session(&org(), id, "next", t(499), false).is_err(),
        "still held"
    );
    s.process(&c, t(500));
    assert!(
        s.create_session(&org(), id, "next", t(500), false).is_ok(),
        "expired"
    );
    c.session_expiry = None;
    s.process(&c, t(10_000));
    assert!(
        s.scale_sets.get(&id).is_some_and(|x| x.session.is_some()),
        "no expiry by default"
    );
}

#[test]
fn a_huge_enqueue_is_refused_instead_of_exhausting_memory() {
    let (mut s, c) = world();
    let id = scale_set(&mut s, "a");
    let too_many = JobSpec::count(super::MAX_JOBS_PER_ENQUEUE + 1);
    assert_eq!(
        s.enqueue(id, &too_many, c.assignment, t(0)),
        Err(StateError::TooManyJobs {
            count: super::MAX_JOBS_PER_ENQUEUE + 1
        })
    );
    assert!(s.scale_sets.get(&id).is_some_and(|x| x.jobs.is_empty()));
    let most = JobSpec::count(super::MAX_JOBS_PER_ENQUEUE);
    assert_eq!(
        s.enqueue(id, &most, c.assignment, t(0))
            .map(|ids| ids.len()),
        Ok(10_000)
    );
}

/// The ids of the sets `find_scale_sets` finds by `name` in any group.
fn found(s: &State, name: &str) -> Vec<i64> {
    s.find_scale_sets(&org(), None, Some(name))
        .iter()
        .map(|x| x.id)
        .collect()
}

#[test]
fn lookups_by_name_follow_renames_deletions_and_a_restore() {
    let (mut s, _) = world();
    let gpu = s.create_group(&org(), "gpu").unwrap_or_default();
    let linux = scale_set(&mut s, "Linux");
    let other = s
        .create_scale_set(
            &org(),
            ScaleSetInput {
                group_id: gpu,
                ..named("linux")
            },
            t(0),
        )
        .unwrap_or_default();
    let mac = scale_set(&mut s, "mac");
    assert_eq!(found(&s, "LINUX"), vec![linux, other], "in id order");
    assert!(found(&s, "linu").is_empty(), "whole names only");
    let elsewhere = Scope::Organization("other".to_owned());
    assert!(
        s.find_scale_sets(&elsewhere, None, Some("linux"))
            .is_empty()
    );

    // A rename moves the set: found by its new name only, and its old name is free again.
    assert!(s.update_scale_set(&org(), linux, named("Windows")).is_ok());
    assert_eq!(found(&s, "windows"), vec![linux]);
    assert_eq!(found(&s, "linux"), vec![other]);
    assert!(s.create_scale_set(&org(), named("LINUX"), t(1)).is_ok());
    assert_eq!(
        s.update_scale_set(&org(), mac, named("windows")),
        Err(StateError::ScaleSetExists {
            name: "windows".into()
        })
    );
    // An update that keeps the name keeps the set findable.
    assert!(
        s.update_scale_set(&org(), mac, ScaleSetInput::default())
            .is_ok()
    );
    assert_eq!(found(&s, "MAC"), vec![mac]);

    assert!(s.delete_scale_set(other).is_some());
    assert_eq!(found(&s, "linux").len(), 1, "the deleted one is gone");
    assert!(s.delete_scale_set(mac).is_some());
    assert!(found(&s, "mac").is_empty());

    // A restored world finds what the saved one did.
    let json = serde_json::to_string(&s.to_saved(0)).unwrap_or_default();
    let saved: Saved = serde_json::from_str(&json).expect("the saved world reads back");
    let restored = State::from_saved(saved);
    assert_eq!(found(&restored, "windows"), vec![linux]);
    assert_eq!(found(&restored, "linux"), found(&s, "linux"));
    assert!(found(&restored, "mac").is_empty());
}

#[test]
fn dormancy_counts_from_the_last_session_and_deletes_in_id_order() {
    let (mut s, mut c) = world();
    c.dormancy = Some(Duration::from_secs(100));
    let first = scale_set(&mut s, "first");
    let second = scale_set(&mut s, "second");
    let evicted = scale_set(&mut s, "evicted");
    // `first` is idle since 20 s (its session closed), `second` since 0 s, `evicted` since 50 s:
    // the longest idle is not the lowest id.
    let session = s
        .create_session(&org(), first, "me", t(0), false)
        .expect("session");
    assert!(s.delete_session(&org(), first, &session.id, t(20)).is_ok());
    assert!(s.create_session(&org(), evicted, "me", t(0), false).is_ok());
    assert!(s.evict_session(evicted, t(50)));
    assert!(s.process(&c, t(99)).is_empty());
    assert_eq!(s.process(&c, t(100)), vec![second]);
    assert!(s.process(&c, t(119)).is_empty());
    assert_eq!(s.process(&c, t(120)), vec![first]);
    assert!(s.process(&c, t(149)).is_empty());
    assert_eq!(s.process(&c, t(150)), vec![evicted]);
}

#[test]
fn dormant_sets_found_together_are_deleted_in_id_order() {
    let (mut s, mut c) = world();
    c.dormancy = Some(Duration::from_secs(100));
    let a = scale_set(&mut s, "a");
    let b = scale_set(&mut s, "b");
    // `a` is idle since 20 s, `b` since 0 s: both are dormant at 200 s.
    let session = s
        .create_session(&org(), a, "me", t(0), false)
        .expect("session");
    assert!(s.delete_session(&org(), a, &session.id, t(20)).is_ok());
    assert_eq!(s.process(&c, t(200)), vec![a, b]);
    assert!(s.scale_sets.is_empty());
}

#[test]
fn a_tick_visits_only_the_sets_a_timer_may_act_on() {
    let (mut s, mut c) = world();
    c.job_started_delay = Duration::from_secs(5);
    let quiet = scale_set(&mut s, "quiet");
    let busy = scale_set(&mut s, "busy");
    for id in [quiet, busy] {
        assert!(s.create_session(&org(), id, "me", t(0), false).is_ok());
    }
    assert!(s.timers.with_jobs.is_empty(), "listening, no jobs");
    assert!(s.timers.idle.is_empty(), "every set has its session");
    enqueue(&mut s, &c, busy, 1, t(0));
    assert!(
        s.timers.with_jobs.is_empty(),
        "queued: no timer until released"
    );
    let assigned = s.poll(busy, 0, None, c.assignment, t(0)).expect("assigned");
    assert_eq!(
        s.timers.with_jobs.iter().copied().collect::<Vec<_>>(),
        vec![busy],
        "an assigned job may be reassigned"
    );
    // A runner takes it: its `JobStarted` waits 5 s, so the set stays watched until that event
    // has gone out, then nothing is left to time.
    let agent = s.register_agent(&org(), busy, "r1", t(0)).expect("agent");
    assert!(s.start_runner(agent.id).is_ok());
    s.process(&c, t(1));
    assert!(s.timers.with_jobs.contains(&busy), "a delayed event waits");
    assert!(
        s.poll(busy, assigned.id, None, c.assignment, t(1))
            .is_none()
    );
    s.process(&c, t(6));
    let started = s
        .poll(busy, assigned.id, None, c.assignment, t(6))
        .expect("started");
    assert_eq!(kinds(&started), vec!["Started"]);
    assert!(s.timers.with_jobs.is_empty(), "running: nothing to time");
    assert!(!s.timers.with_jobs.contains(&quiet));
}
