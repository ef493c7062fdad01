//! Unit tests of the machine, one or more per rule, named after the cases of issue #4.

use std::time::Duration;

use super::*;
use crate::input::{Desired, Identity};
use crate::retry::RetryBounds;
use crate::scale_set::RunnerGroupId;

const CONTROLLER: &str = "0123abcd-4567-89ef-0123-456789abcdef";
const OUR_LABEL: &str = "scaleset-owner-0123abcd4567";
const FOREIGN_LABEL: &str = "scaleset-owner-ffffeeeedddd";

fn identity() -> Identity {
    Identity::from_controller_id(CONTROLLER)
}

fn input(policy: Policy) -> Input {
    Input {
        desired: Desired {
            name: "ci".into(),
            runner_group_id: RunnerGroupId(1),
            labels: vec!["linux".into(), "X64".into()],
            disable_update: true,
        },
        known_id: None,
        policy,
        repair: false,
        identity: identity(),
        retry: RetryBounds {
            attempt: 0,
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        },
    }
}

fn known(id: u64) -> Input {
    Input {
        known_id: Some(ScaleSetId(id)),
        ..input(Policy::Owned)
    }
}

/// A scale set exactly as desired, in group 1, with the given extra labels.
fn set(id: u64, extra: &[&str]) -> ScaleSet {
    let mut labels = vec!["ci".to_owned(), "linux".to_owned(), "x64".to_owned()];
    labels.extend(extra.iter().map(|label| (*label).to_owned()));
    ScaleSet {
        id: ScaleSetId(id),
        name: "ci".into(),
        runner_group_id: Some(RunnerGroupId(1)),
        labels,
        disable_update: true,
    }
}

fn list_by_name() -> Command {
    Command::ListByName {
        group: RunnerGroupId(1),
        name: "ci".into(),
    }
}

fn get(id: u64) -> Command {
    Command::GetById { id: ScaleSetId(id) }
}

fn session(id: &str) -> SessionId {
    SessionId(id.into())
}

fn transient() -> Fact {
    Fact::Transient {
        message: "503 after 5 attempts".into(),
    }
}

/// Drives a machine: `script` pairs each expected command with the fact to answer it.
/// Returns the outcome, asserting the machine issued exactly the expected commands.
fn drive(input: Input, script: Vec<(Command, Fact)>) -> Outcome {
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    for (n, (expected, fact)) in script.into_iter().enumerate() {
        match step {
            Step::Do(command) => assert_eq!(command, expected, "command #{n}"),
            Step::Done(outcome) => panic!("done before command #{n} {expected:?}: {outcome:?}"),
        }
        step = machine.next(fact).expect("scripted facts fit");
    }
    match step {
        Step::Done(outcome) => {
            assert!(machine.commands_issued() <= MAX_COMMANDS);
            outcome
        }
        Step::Do(command) => panic!("script ended but the machine asks for {command:?}"),
    }
}

fn create() -> Command {
    Command::Create(Machine::new(input(Policy::Owned)).create_spec())
}

fn ready(outcome: &Outcome) -> (ScaleSetId, Provenance, &[Evidence], &Rollback) {
    match outcome {
        Outcome::Ready {
            id,
            provenance,
            evidence,
            rollback,
            ..
        } => (*id, *provenance, evidence, rollback),
        other => panic!("expected ready, got {other:?}"),
    }
}

fn refusal(outcome: Outcome) -> Refusal {
    match outcome {
        Outcome::Refused { reason } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// Rule 4.

#[test]
fn missing_scale_set_is_created() {
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::ScaleSet(set(5, &[OUR_LABEL]))),
        ],
    );
    let (id, provenance, evidence, rollback) = ready(&outcome);
    assert_eq!((id, provenance), (ScaleSetId(5), Provenance::Created));
    assert_eq!(evidence, [Evidence::CreatedThisRun]);
    assert_eq!(rollback.permit().map(DeletePermit::id), Some(ScaleSetId(5)));
}

#[test]
fn create_spec_carries_name_labels_and_owner_label() {
    let mut input = input(Policy::Owned);
    input.desired.labels = vec![
        "linux".into(),
        "LINUX".into(),
        "ci".into(),
        FOREIGN_LABEL.into(),
    ];
    let spec = Machine::new(input).create_spec();
    assert_eq!(spec.labels, ["ci", "linux", OUR_LABEL]);
    assert_eq!(
        (spec.name.as_str(), spec.runner_group_id),
        ("ci", RunnerGroupId(1))
    );
    assert!(spec.disable_update);
}

#[test]
fn create_without_owner_label_when_turned_off() {
    let mut input = input(Policy::Owned);
    input.identity.owner_label = None;
    assert_eq!(
        Machine::new(input).create_spec().labels,
        ["ci", "linux", "X64"]
    );
}

// The original request's cases.

#[test]
fn api_and_worker_adoption() {
    // The API creates the scale set (no stored id yet).
    let created = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::ScaleSet(set(9, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&created).1, Provenance::Created);
    // The worker starts from the stored id: confirmed by id, no lookup, no create.
    let worker = drive(
        known(9),
        vec![(get(9), Fact::ScaleSet(set(9, &[OUR_LABEL])))],
    );
    let (id, provenance, evidence, rollback) = ready(&worker);
    assert_eq!((id, provenance), (ScaleSetId(9), Provenance::Known));
    assert_eq!(evidence, [Evidence::StoredId, Evidence::OwnerLabel]);
    assert_eq!(rollback, &Rollback::DetachOnly);
    // After a database loss, the API finds it by name and adopts it on our owner label.
    let adopted = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(9, &[OUR_LABEL])])),
            (get(9), Fact::ScaleSet(set(9, &[OUR_LABEL]))),
        ],
    );
    let (id, provenance, evidence, rollback) = ready(&adopted);
    assert_eq!((id, provenance), (ScaleSetId(9), Provenance::Adopted));
    assert_eq!(evidence, [Evidence::OwnerLabel]);
    assert_eq!(rollback, &Rollback::DetachOnly);
}

#[test]
fn duplicate_create_recovery() {
    // Create conflicts; the name filter lags, the group listing shows our own set (a create
    // of ours that timed out but succeeded): adopted, not created, so not deletable.
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::Exists),
            (list_by_name(), Fact::ScaleSets(vec![])),
            (
                Command::ListGroup {
                    group: RunnerGroupId(1),
                },
                Fact::ScaleSets(vec![set(3, &[OUR_LABEL])]),
            ),
            (get(3), Fact::ScaleSet(set(3, &[OUR_LABEL]))),
        ],
    );
    let (id, provenance, _, rollback) = ready(&outcome);
    assert_eq!((id, provenance), (ScaleSetId(3), Provenance::Adopted));
    assert_eq!(rollback, &Rollback::DetachOnly);
}

#[test]
fn duplicate_create_race_winner_without_evidence_is_probed() {
    // Rule 5 judges the winner by rule 3: a concurrent creator's set is not ours.
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::Exists),
            (list_by_name(), Fact::ScaleSets(vec![set(4, &[])])),
            (get(4), Fact::ScaleSet(set(4, &[]))),
            (
                Command::OpenSession {
                    id: ScaleSetId(4),
                    owner: identity().probe_owner,
                },
                Fact::Conflict {
                    owner: Some("arc-listener-1".into()),
                },
            ),
        ],
    );
    assert_eq!(refusal(outcome).code(), "ForeignSession");
}

#[test]
fn duplicate_create_unresolved_retries_without_a_second_create() {
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::Exists),
            (list_by_name(), Fact::ScaleSets(vec![])),
            (
                Command::ListGroup {
                    group: RunnerGroupId(1),
                },
                Fact::ScaleSets(vec![]),
            ),
        ],
    );
    assert!(matches!(
        outcome,
        Outcome::Retry { after, reason: RetryReason::CreateRaceUnresolved { .. } }
            if after == Duration::from_millis(10)
    ));
}

#[test]
fn nested_duplicate_error_as_exists_fact() {
    // The client reports a nested RunnerScaleSetExistsException as `Exists`; either way
    // the machine looks again instead of failing.
    let nested = Fact::BadRequest {
        exception: "VssServiceException".into(),
        message: "wrapped: GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException".into(),
    };
    for fact in [Fact::Exists, nested] {
        let outcome = drive(
            input(Policy::Owned),
            vec![
                (list_by_name(), Fact::ScaleSets(vec![])),
                (create(), fact),
                (
                    list_by_name(),
                    Fact::ScaleSets(vec![set(8, &[FOREIGN_LABEL])]),
                ),
                (get(8), Fact::ScaleSet(set(8, &[FOREIGN_LABEL]))),
            ],
        );
        assert_eq!(refusal(outcome).code(), "ForeignOwner");
    }
}

#[test]
fn cleanup_ownership() {
    // Only a set created by this run carries a delete permit.
    let created = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::ScaleSet(set(1, &[OUR_LABEL]))),
        ],
    );
    assert!(ready(&created).3.permit().is_some());
    let known = drive(
        known(1),
        vec![(get(1), Fact::ScaleSet(set(1, &[OUR_LABEL])))],
    );
    assert!(ready(&known).3.permit().is_none());
    let adopted = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(1, &[OUR_LABEL])])),
            (get(1), Fact::ScaleSet(set(1, &[OUR_LABEL]))),
        ],
    );
    assert!(ready(&adopted).3.permit().is_none());
    let any = drive(
        input(Policy::Any),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(1, &[])])),
            (get(1), Fact::ScaleSet(set(1, &[]))),
            (
                Command::OpenSession {
                    id: ScaleSetId(1),
                    owner: identity().session_owner,
                },
                Fact::Opened(session("s-1")),
            ),
        ],
    );
    assert!(ready(&any).3.permit().is_none());
}

#[test]
fn unrelated_bad_request_fails() {
    let outcome = drive(
        input(Policy::Any),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![])),
            (
                create(),
                Fact::BadRequest {
                    exception: "InvalidRunnerScaleSetException".into(),
                    message: "labels invalid".into(),
                },
            ),
        ],
    );
    match outcome {
        Outcome::Failed {
            reason: Failure::BadRequest {
                command, exception, ..
            },
        } => {
            assert_eq!(command, CommandKind::Create);
            assert_eq!(exception, "InvalidRunnerScaleSetException");
        }
        other => panic!("expected failure, got {other:?}"),
    }
}

// Rule 1.

#[test]
fn known_id_conflict() {
    // Rule 1: the stored id now names another scale set.
    let mut renamed = set(7, &[OUR_LABEL]);
    renamed.name = "other".into();
    let reason = refusal(drive(known(7), vec![(get(7), Fact::ScaleSet(renamed))]));
    assert!(matches!(
        &reason,
        Refusal::KnownIdConflict { stored: ScaleSetId(7), github, .. } if github.name == "other"
    ));
    // Rule 1: same name, another group.
    let mut moved = set(7, &[]);
    moved.runner_group_id = Some(RunnerGroupId(2));
    assert_eq!(
        refusal(drive(known(7), vec![(get(7), Fact::ScaleSet(moved))])).code(),
        "KnownIdConflict"
    );
    // Rule 3: local 7, GitHub 42 (the group was unconfirmed by the id read, the lookup
    // finds another id).
    let mut unconfirmed = set(7, &[]);
    unconfirmed.runner_group_id = None;
    let reason = refusal(drive(
        known(7),
        vec![
            (get(7), Fact::ScaleSet(unconfirmed)),
            (list_by_name(), Fact::ScaleSets(vec![set(42, &[OUR_LABEL])])),
            (get(42), Fact::ScaleSet(set(42, &[OUR_LABEL]))),
        ],
    ));
    assert!(matches!(
        reason,
        Refusal::KnownIdConflict {
            stored: ScaleSetId(7),
            github: ScaleSetRef {
                id: ScaleSetId(42),
                ..
            },
            ..
        }
    ));
    assert!(reason.remediation().contains("42"));
}

#[test]
fn known_id_with_omitted_group_is_confirmed_by_lookup() {
    let mut unconfirmed = set(7, &[]);
    unconfirmed.runner_group_id = None;
    let outcome = drive(
        known(7),
        vec![
            (get(7), Fact::ScaleSet(unconfirmed.clone())),
            (list_by_name(), Fact::ScaleSets(vec![unconfirmed.clone()])),
            (get(7), Fact::ScaleSet(unconfirmed.clone())),
        ],
    );
    assert_eq!(ready(&outcome).1, Provenance::Known);
    // Not in the group's lookup: refused, not created.
    let reason = refusal(drive(
        known(7),
        vec![
            (get(7), Fact::ScaleSet(unconfirmed)),
            (list_by_name(), Fact::ScaleSets(vec![])),
        ],
    ));
    assert_eq!(reason.code(), "KnownIdConflict");
}

#[test]
fn dormancy_404_by_id() {
    let outcome = drive(
        known(7),
        vec![
            (get(7), Fact::NotFound),
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), Fact::ScaleSet(set(8, &[OUR_LABEL]))),
        ],
    );
    let Outcome::Ready {
        id,
        provenance,
        reset_cursor,
        ..
    } = outcome
    else {
        panic!("expected ready, got {outcome:?}");
    };
    assert_eq!(
        (id, provenance, reset_cursor),
        (ScaleSetId(8), Provenance::Created, true)
    );
}

#[test]
fn dormancy_forgets_the_id_before_judging_a_same_name_set() {
    // After the 404 the stored id is no evidence and no conflict.
    let outcome = drive(
        known(7),
        vec![
            (get(7), Fact::NotFound),
            (list_by_name(), Fact::ScaleSets(vec![set(8, &[OUR_LABEL])])),
            (get(8), Fact::ScaleSet(set(8, &[OUR_LABEL]))),
        ],
    );
    let Outcome::Ready {
        provenance,
        evidence,
        reset_cursor,
        ..
    } = outcome
    else {
        panic!("expected ready, got {outcome:?}");
    };
    assert_eq!(
        (provenance, evidence, reset_cursor),
        (Provenance::Adopted, vec![Evidence::OwnerLabel], true)
    );
}

// Rule 2.

#[test]
fn omitted_runner_group_id() {
    let mut thin = set(6, &[]);
    thin.runner_group_id = None;
    thin.labels.clear();
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![thin])),
            (get(6), Fact::ScaleSet(set(6, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&outcome).0, ScaleSetId(6));
}

#[test]
fn list_ignoring_the_name_filter_is_matched_exactly() {
    let mut other = set(2, &[]);
    other.name = "ci-large".into();
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![other])),
            (create(), Fact::ScaleSet(set(3, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&outcome).1, Provenance::Created);
}

#[test]
fn populated_group_mismatch() {
    let mut elsewhere = set(6, &[]);
    elsewhere.runner_group_id = Some(RunnerGroupId(3));
    let reason = refusal(drive(
        input(Policy::Any),
        vec![(list_by_name(), Fact::ScaleSets(vec![elsewhere]))],
    ));
    let Refusal::GroupMismatch {
        found,
        desired_group,
        ..
    } = &reason
    else {
        panic!("expected a group mismatch, got {reason:?}");
    };
    assert_eq!(
        (found[0].runner_group_id, *desired_group),
        (Some(RunnerGroupId(3)), RunnerGroupId(1))
    );
    assert!(reason.remediation().contains("runner group 1"));
    // Names are unique per group: a lookup that also shows the name in another group ignored
    // its filter and is not trusted, even beside an in-group match.
    let mut elsewhere = set(6, &[]);
    elsewhere.runner_group_id = Some(RunnerGroupId(3));
    let reason = refusal(drive(
        input(Policy::Owned),
        vec![(
            list_by_name(),
            Fact::ScaleSets(vec![set(2, &[OUR_LABEL]), elsewhere]),
        )],
    ));
    assert!(
        matches!(&reason, Refusal::GroupMismatch { found, .. } if found.len() == 1 && found[0].id == ScaleSetId(6)),
        "{reason:?}"
    );
}

#[test]
fn ambiguous_matches() {
    let reason = refusal(drive(
        input(Policy::Any),
        vec![(
            list_by_name(),
            Fact::ScaleSets(vec![set(1, &[OUR_LABEL]), set(2, &[])]),
        )],
    ));
    let Refusal::Ambiguous { matches, .. } = &reason else {
        panic!("expected ambiguous, got {reason:?}");
    };
    assert_eq!(
        matches.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ScaleSetId(1), ScaleSetId(2)]
    );
}

#[test]
fn name_case_collision() {
    let mut upper = set(2, &[]);
    upper.name = "CI".into();
    let reason = refusal(drive(
        input(Policy::Any),
        vec![(list_by_name(), Fact::ScaleSets(vec![upper.clone()]))],
    ));
    assert_eq!(reason.code(), "NameCaseCollision");
    // A case-only match in another (populated) group does not collide.
    let mut upper_elsewhere = upper.clone();
    upper_elsewhere.runner_group_id = Some(RunnerGroupId(2));
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![upper_elsewhere])),
            (create(), Fact::ScaleSet(set(4, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&outcome).1, Provenance::Created);
    // An exact match wins over a case-only one.
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (
                list_by_name(),
                Fact::ScaleSets(vec![upper, set(3, &[OUR_LABEL])]),
            ),
            (get(3), Fact::ScaleSet(set(3, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&outcome).0, ScaleSetId(3));
}

// Rule 3.

#[test]
fn foreign_owner_label() {
    for policy in [Policy::Never, Policy::Owned, Policy::Any] {
        let mut with_both = set(5, &[FOREIGN_LABEL]);
        with_both.labels.push(OUR_LABEL.into());
        let reason = refusal(drive(
            input(policy),
            vec![
                (list_by_name(), Fact::ScaleSets(vec![with_both.clone()])),
                (get(5), Fact::ScaleSet(with_both)),
            ],
        ));
        assert_eq!(
            reason,
            Refusal::ForeignOwner {
                scale_set: set(5, &[]).to_ref(),
                labels: vec![FOREIGN_LABEL.into()]
            }
        );
    }
    // Also on the stored id.
    let reason = refusal(drive(
        known(5),
        vec![(get(5), Fact::ScaleSet(set(5, &[FOREIGN_LABEL])))],
    ));
    assert_eq!(reason.code(), "ForeignOwner");
}

/// The owner name the ownership probe sends under `policy`.
fn probe_owner(policy: Policy) -> String {
    match policy {
        Policy::Any => identity().session_owner,
        _ => identity().probe_owner,
    }
}

#[test]
fn own_stale_session() {
    for policy in [Policy::Owned, Policy::Any] {
        let outcome = drive(
            input(policy),
            vec![
                (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
                (get(5), Fact::ScaleSet(set(5, &[]))),
                (
                    Command::OpenSession {
                        id: ScaleSetId(5),
                        owner: probe_owner(policy),
                    },
                    Fact::Conflict {
                        owner: Some(identity().session_owner),
                    },
                ),
            ],
        );
        let (id, provenance, evidence, rollback) = ready(&outcome);
        assert_eq!((id, provenance), (ScaleSetId(5), Provenance::Adopted));
        assert_eq!(evidence, [Evidence::OwnSession], "{policy:?}");
        assert_eq!(rollback, &Rollback::DetachOnly);
        // Nothing was opened, so nothing is handed over.
        assert!(matches!(outcome, Outcome::Ready { session: None, .. }));
    }
}

#[test]
fn foreign_session() {
    for policy in [Policy::Owned, Policy::Any] {
        let owner = probe_owner(policy);
        let reason = refusal(drive(
            input(policy),
            vec![
                (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
                (get(5), Fact::ScaleSet(set(5, &[]))),
                (
                    Command::OpenSession {
                        id: ScaleSetId(5),
                        owner,
                    },
                    Fact::Conflict {
                        owner: Some("runner-host-1".into()),
                    },
                ),
            ],
        ));
        assert_eq!(
            reason,
            Refusal::ForeignSession {
                scale_set: set(5, &[]).to_ref(),
                owner: "runner-host-1".into()
            }
        );
    }
}

#[test]
fn unnamed_session_holder() {
    for policy in [Policy::Owned, Policy::Any] {
        let outcome = drive(
            input(policy),
            vec![
                (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
                (get(5), Fact::ScaleSet(set(5, &[]))),
                (
                    Command::OpenSession {
                        id: ScaleSetId(5),
                        owner: probe_owner(policy),
                    },
                    Fact::Conflict { owner: None },
                ),
            ],
        );
        assert!(
            matches!(
                outcome,
                Outcome::Retry {
                    reason: RetryReason::SessionHeld { owner: None, .. },
                    ..
                }
            ),
            "{policy:?}: {outcome:?}"
        );
    }
}

#[test]
fn leaked_probe_session_is_not_evidence() {
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
            (get(5), Fact::ScaleSet(set(5, &[]))),
            (
                Command::OpenSession {
                    id: ScaleSetId(5),
                    owner: identity().probe_owner,
                },
                Fact::Conflict {
                    owner: Some(identity().probe_owner),
                },
            ),
        ],
    );
    assert!(matches!(
        outcome,
        Outcome::Retry {
            reason: RetryReason::SessionHeld { owner: Some(_), .. },
            ..
        }
    ));
}

#[test]
fn owned_probe_that_opens_is_closed_and_unproven() {
    let probe = Command::OpenSession {
        id: ScaleSetId(5),
        owner: identity().probe_owner,
    };
    let close = Command::CloseSession {
        id: ScaleSetId(5),
        session: session("p-1"),
    };
    let reason = refusal(drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
            (get(5), Fact::ScaleSet(set(5, &[]))),
            (probe, Fact::Opened(session("p-1"))),
            (close, Fact::Closed),
        ],
    ));
    assert_eq!(
        reason,
        Refusal::OwnershipUnproven {
            scale_set: set(5, &[]).to_ref()
        }
    );
}

#[test]
fn never_policy_refuses_an_unrecorded_scale_set() {
    let reason = refusal(drive(
        input(Policy::Never),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[OUR_LABEL])])),
            (get(5), Fact::ScaleSet(set(5, &[OUR_LABEL]))),
        ],
    ));
    assert_eq!(
        reason,
        Refusal::ScaleSetExists {
            scale_set: set(5, &[]).to_ref()
        }
    );
    assert!(reason.remediation().contains("scale set 5"));
    // With the stored id it is Known.
    let never_known = Input {
        policy: Policy::Never,
        ..known(5)
    };
    assert_eq!(
        ready(&drive(
            never_known,
            vec![(get(5), Fact::ScaleSet(set(5, &[])))]
        ))
        .1,
        Provenance::Known
    );
}

#[test]
fn any_policy_hands_over_the_probe_session() {
    let outcome = drive(
        input(Policy::Any),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
            (get(5), Fact::ScaleSet(set(5, &[]))),
            (
                Command::OpenSession {
                    id: ScaleSetId(5),
                    owner: identity().session_owner,
                },
                Fact::Opened(session("s-9")),
            ),
        ],
    );
    let Outcome::Ready {
        provenance,
        evidence,
        session: handed,
        ..
    } = outcome
    else {
        panic!("expected ready, got {outcome:?}");
    };
    assert_eq!(
        (provenance, evidence, handed),
        (Provenance::Adopted, vec![], Some(session("s-9")))
    );
}

#[test]
fn any_policy_skips_the_probe_with_evidence() {
    let outcome = drive(
        input(Policy::Any),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[OUR_LABEL])])),
            (get(5), Fact::ScaleSet(set(5, &[OUR_LABEL]))),
        ],
    );
    assert!(matches!(outcome, Outcome::Ready { session: None, .. }));
}

// Rule 6.

#[test]
fn transient_retries_and_the_next_attempt_starts_at_rule_1() {
    let outcome = drive(
        known(7),
        vec![
            (get(7), Fact::NotFound),
            (list_by_name(), Fact::ScaleSets(vec![])),
            (create(), transient()),
        ],
    );
    let Outcome::Retry { after, reason } = outcome else {
        panic!("expected retry, got {outcome:?}");
    };
    assert_eq!(after, Duration::from_millis(10));
    assert!(matches!(
        reason,
        RetryReason::Transient {
            command: CommandKind::Create,
            ..
        }
    ));
    // The next attempt (the store still holds its id) looks before it writes.
    let mut next = known(7);
    next.retry.attempt = 1;
    assert_eq!(Machine::new(next.clone()).start(), Step::Do(get(7)));
    next.known_id = None;
    assert_eq!(Machine::new(next).start(), Step::Do(list_by_name()));
}

#[test]
fn attempts_exhausted_fail() {
    let mut last = input(Policy::Owned);
    last.retry.attempt = 2;
    let outcome = drive(last, vec![(list_by_name(), transient())]);
    assert!(matches!(
        outcome,
        Outcome::Failed {
            reason: Failure::AttemptsExhausted {
                attempts: 3,
                last: RetryReason::Transient { .. }
            }
        }
    ));
}

#[test]
fn backoff_hint_doubles_and_caps() {
    let mut bounds = input(Policy::Owned).retry;
    let hints: Vec<_> = (0..6)
        .map(|attempt| {
            bounds.attempt = attempt;
            bounds.backoff()
        })
        .collect();
    assert_eq!(hints, [10, 20, 40, 80, 100, 100].map(Duration::from_millis));
    bounds.attempt = u32::MAX;
    assert_eq!(bounds.backoff(), Duration::from_millis(100));
}

// Rule 7.

#[test]
fn labels_compare_ignoring_order_case_duplicates_and_owner_labels() {
    let mut theirs = set(5, &[]);
    theirs.labels = vec![
        "X64".into(),
        "linux".into(),
        "LINUX".into(),
        "CI".into(),
        OUR_LABEL.into(),
    ];
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![theirs.clone()])),
            (get(5), Fact::ScaleSet(theirs)),
        ],
    );
    assert_eq!(ready(&outcome).1, Provenance::Adopted);
}

#[test]
fn drift_refused() {
    let mut theirs = set(5, &[OUR_LABEL]);
    theirs.labels.retain(|label| label != "x64");
    theirs.labels.push("gpu".into());
    theirs.disable_update = false;
    let reason = refusal(drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![theirs.clone()])),
            (get(5), Fact::ScaleSet(theirs)),
        ],
    ));
    let Refusal::Drifted { ours, theirs, .. } = &reason else {
        panic!("expected drift, got {reason:?}");
    };
    assert_eq!(ours.labels, ["ci", "linux", "x64"]);
    assert_eq!(theirs.labels, ["ci", "gpu", "linux"]);
    assert_eq!((ours.disable_update, theirs.disable_update), (true, false));
    assert_eq!(ours.labels_missing_from(theirs), ["x64"]);
    assert!(reason.remediation().contains("repair = true"));
}

#[test]
fn missing_name_label_is_drift() {
    let mut theirs = set(5, &[OUR_LABEL]);
    theirs.labels.retain(|label| label != "ci");
    let reason = refusal(drive(known(5), vec![(get(5), Fact::ScaleSet(theirs))]));
    assert_eq!(reason.code(), "Drifted");
}

#[test]
fn drift_refused_under_any_closes_the_probe_session() {
    let mut theirs = set(5, &[]);
    theirs.disable_update = false;
    let reason = refusal(drive(
        input(Policy::Any),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![theirs.clone()])),
            (get(5), Fact::ScaleSet(theirs)),
            (
                Command::OpenSession {
                    id: ScaleSetId(5),
                    owner: identity().session_owner,
                },
                Fact::Opened(session("s-2")),
            ),
            (
                Command::CloseSession {
                    id: ScaleSetId(5),
                    session: session("s-2"),
                },
                Fact::Closed,
            ),
        ],
    ));
    assert_eq!(reason.code(), "Drifted");
}

fn repair_input() -> Input {
    Input {
        repair: true,
        ..known(5)
    }
}

fn patch() -> Patch {
    Patch {
        labels: vec!["ci".into(), "linux".into(), "X64".into(), OUR_LABEL.into()],
        disable_update: true,
    }
}

#[test]
fn repair_verified() {
    let mut drifted = set(5, &[OUR_LABEL]);
    drifted.disable_update = false;
    let outcome = drive(
        repair_input(),
        vec![
            (get(5), Fact::ScaleSet(drifted)),
            (
                Command::Update {
                    id: ScaleSetId(5),
                    patch: patch(),
                },
                Fact::Updated,
            ),
            (get(5), Fact::ScaleSet(set(5, &[OUR_LABEL]))),
        ],
    );
    assert_eq!(ready(&outcome).1, Provenance::Known);
}

#[test]
fn repair_did_not_take() {
    // GHES without custom labels drops the extra labels again.
    let mut dropped = set(5, &[]);
    dropped.labels = vec!["ci".into()];
    let reason = refusal(drive(
        repair_input(),
        vec![
            (get(5), Fact::ScaleSet(dropped.clone())),
            (
                Command::Update {
                    id: ScaleSetId(5),
                    patch: patch(),
                },
                Fact::Updated,
            ),
            (get(5), Fact::ScaleSet(dropped)),
        ],
    ));
    let Refusal::RepairDidNotTake { ours, theirs, .. } = &reason else {
        panic!("expected repair failure, got {reason:?}");
    };
    assert_eq!(ours.labels_missing_from(theirs), ["linux", "x64"]);
    let remediation = reason.remediation();
    assert!(
        remediation.contains("GitHub lacks [linux, x64]"),
        "{remediation}"
    );
    assert!(
        remediation.contains("AllowRunnerScaleSetCustomLabels"),
        "{remediation}"
    );
    assert!(!remediation.contains("disable_update"), "{remediation}");
    assert!(
        !remediation.contains("disableUpdate is still"),
        "{remediation}"
    );
    assert!(reason.to_string().contains("(labels differ)"), "{reason}");
}

#[test]
fn a_repair_that_cannot_turn_disable_update_off_names_it_in_the_remediation() {
    // The client omits `disableUpdate: false` and GitHub ignores zero values in a PATCH, so
    // the read-back still shows `true`.
    let mut input = repair_input();
    input.desired.disable_update = false;
    let unchanged = set(5, &[OUR_LABEL]);
    let reason = refusal(drive(
        input,
        vec![
            (get(5), Fact::ScaleSet(unchanged.clone())),
            (
                Command::Update {
                    id: ScaleSetId(5),
                    patch: Patch {
                        disable_update: false,
                        ..patch()
                    },
                },
                Fact::Updated,
            ),
            (get(5), Fact::ScaleSet(unchanged)),
        ],
    ));
    assert_eq!(reason.code(), "RepairDidNotTake");
    let remediation = reason.remediation();
    assert!(
        remediation.contains("disableUpdate is still true"),
        "{remediation}"
    );
    assert!(
        remediation.contains("set `disable_update = true` in the configuration"),
        "{remediation}"
    );
    assert!(remediation.contains("recreated"), "{remediation}");
    assert!(
        !remediation.contains("labels still differ"),
        "{remediation}"
    );
    assert!(!remediation.contains("GHES"), "{remediation}");
    assert!(
        reason.to_string().contains("(disableUpdate differs)"),
        "{reason}"
    );
}

#[test]
fn a_repair_leaving_labels_and_disable_update_names_both() {
    let scale_set = set(5, &[]).to_ref();
    let reason = Refusal::RepairDidNotTake {
        scale_set,
        ours: Settings {
            labels: vec!["ci".into(), "gpu".into()],
            disable_update: false,
        },
        theirs: Settings {
            labels: vec!["ci".into(), "old".into()],
            disable_update: true,
        },
    };
    let remediation = reason.remediation();
    assert!(remediation.contains("GitHub lacks [gpu]"), "{remediation}");
    assert!(
        remediation.contains("GitHub has extra [old]"),
        "{remediation}"
    );
    assert!(
        remediation.contains("set `disable_update = true`"),
        "{remediation}"
    );
    assert!(
        reason
            .to_string()
            .contains("(labels and disableUpdate differ)"),
        "{reason}"
    );
}

// Sessions are closed even when closing is hard.

#[test]
fn session_close_failure_is_retried_then_reported() {
    let probe = Command::OpenSession {
        id: ScaleSetId(5),
        owner: identity().probe_owner,
    };
    let close = Command::CloseSession {
        id: ScaleSetId(5),
        session: session("p-1"),
    };
    let outcome = drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
            (get(5), Fact::ScaleSet(set(5, &[]))),
            (probe, Fact::Opened(session("p-1"))),
            (close.clone(), transient()),
            (
                close.clone(),
                Fact::BadRequest {
                    exception: "Other".into(),
                    message: "no".into(),
                },
            ),
            (close, transient()),
        ],
    );
    assert!(matches!(
        outcome,
        Outcome::Retry { reason: RetryReason::SessionNotClosed { session: s, .. }, .. } if s == session("p-1")
    ));
}

#[test]
fn expired_session_counts_as_closed() {
    let probe = Command::OpenSession {
        id: ScaleSetId(5),
        owner: identity().probe_owner,
    };
    let close = Command::CloseSession {
        id: ScaleSetId(5),
        session: session("p-1"),
    };
    let expired = Fact::BadRequest {
        exception: "RunnerScaleSetSessionExpiredException".into(),
        message: "The session identifier p-1 is not valid.".into(),
    };
    let reason = refusal(drive(
        input(Policy::Owned),
        vec![
            (list_by_name(), Fact::ScaleSets(vec![set(5, &[])])),
            (get(5), Fact::ScaleSet(set(5, &[]))),
            (probe, Fact::Opened(session("p-1"))),
            (close, expired),
        ],
    ));
    assert_eq!(reason.code(), "OwnershipUnproven");
}

// Rule 8 and the driver contract.

#[test]
fn wrong_fact_is_a_typed_error_and_changes_nothing() {
    let mut machine = Machine::new(input(Policy::Owned));
    assert_eq!(machine.next(Fact::NotFound), Err(Error::NotStarted));
    assert_eq!(machine.start(), Step::Do(list_by_name()));
    assert_eq!(machine.start(), Step::Do(list_by_name()));
    assert_eq!(
        machine.next(Fact::Exists),
        Err(Error::UnexpectedFact {
            command: CommandKind::ListByName,
            fact: crate::FactKind::Exists
        })
    );
    assert_eq!(machine.pending(), Some(&list_by_name()));
    assert_eq!(
        machine.next(Fact::ScaleSets(vec![])),
        Ok(Step::Do(create()))
    );
    let created = Fact::ScaleSet(set(1, &[]));
    assert!(matches!(
        machine.next(created.clone()),
        Ok(Step::Done(Outcome::Ready { .. }))
    ));
    assert_eq!(machine.next(created), Err(Error::Finished));
    assert!(machine.outcome().is_some());
    assert!(matches!(machine.start(), Step::Done(Outcome::Ready { .. })));
}

#[test]
fn read_of_another_id_is_a_typed_error() {
    let mut machine = Machine::new(known(7));
    machine.start();
    assert_eq!(
        machine.next(Fact::ScaleSet(set(8, &[]))),
        Err(Error::WrongScaleSet {
            expected: ScaleSetId(7),
            got: ScaleSetId(8)
        })
    );
}

#[test]
fn every_refusal_has_a_remediation_naming_the_scale_set() {
    let scale_set = set(77, &[]).to_ref();
    let settings = Settings {
        labels: vec!["ci".into()],
        disable_update: false,
    };
    let reasons = [
        Refusal::KnownIdConflict {
            stored: ScaleSetId(7),
            github: scale_set.clone(),
            desired_name: "ci".into(),
            desired_group: RunnerGroupId(1),
        },
        Refusal::NameCaseCollision {
            desired_name: "ci".into(),
            desired_group: RunnerGroupId(1),
            existing: vec![scale_set.clone()],
        },
        Refusal::GroupMismatch {
            desired_name: "ci".into(),
            desired_group: RunnerGroupId(1),
            found: vec![scale_set.clone()],
        },
        Refusal::Ambiguous {
            desired_name: "ci".into(),
            desired_group: RunnerGroupId(1),
            matches: vec![scale_set.clone()],
        },
        Refusal::ForeignOwner {
            scale_set: scale_set.clone(),
            labels: vec![FOREIGN_LABEL.into()],
        },
        Refusal::ScaleSetExists {
            scale_set: scale_set.clone(),
        },
        Refusal::ForeignSession {
            scale_set: scale_set.clone(),
            owner: "x".into(),
        },
        Refusal::OwnershipUnproven {
            scale_set: scale_set.clone(),
        },
        Refusal::Drifted {
            scale_set: scale_set.clone(),
            ours: settings.clone(),
            theirs: settings.clone(),
        },
        Refusal::RepairDidNotTake {
            scale_set,
            ours: settings.clone(),
            theirs: settings,
        },
    ];
    for reason in reasons {
        assert!(
            reason.remediation().contains("77"),
            "{}: {}",
            reason.code(),
            reason.remediation()
        );
        assert!(reason.to_string().contains("77"), "{reason}");
    }
}

#[test]
fn longest_path_stays_within_the_bound() {
    let mut input = Input {
        policy: Policy::Any,
        repair: true,
        ..known(7)
    };
    input.desired.labels = vec!["linux".into(), "x64".into()];
    let mut theirs = set(4, &[]);
    theirs.disable_update = false;
    let update = Command::Update {
        id: ScaleSetId(4),
        patch: Patch {
            labels: vec!["ci".into(), "linux".into(), "x64".into(), OUR_LABEL.into()],
            disable_update: true,
        },
    };
    let close = Command::CloseSession {
        id: ScaleSetId(4),
        session: session("s-4"),
    };
    let mut spec = Machine::new(input.clone()).create_spec();
    spec.labels = vec!["ci".into(), "linux".into(), "x64".into(), OUR_LABEL.into()];
    let script = vec![
        (get(7), Fact::NotFound),
        (list_by_name(), Fact::ScaleSets(vec![])),
        (Command::Create(spec), Fact::Exists),
        (list_by_name(), Fact::ScaleSets(vec![])),
        (
            Command::ListGroup {
                group: RunnerGroupId(1),
            },
            Fact::ScaleSets(vec![theirs.clone()]),
        ),
        (get(4), Fact::ScaleSet(theirs.clone())),
        (
            Command::OpenSession {
                id: ScaleSetId(4),
                owner: identity().session_owner,
            },
            Fact::Opened(session("s-4")),
        ),
        (update, Fact::Updated),
        (get(4), Fact::ScaleSet(theirs)),
        (close.clone(), transient()),
        (close.clone(), transient()),
        (close, Fact::Closed),
    ];
    assert_eq!(script.len(), MAX_COMMANDS);
    let outcome = drive(input, script);
    assert_eq!(
        outcome.refusal().map(Refusal::code),
        Some("RepairDidNotTake")
    );
    assert_eq!(outcome.ready_id(), None);
}
