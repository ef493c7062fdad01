//! Unit tests of the machine, one or more per rule, each written as the scenario it names:
//! `ensure()` builds the input, each `.lookup(..)`, `.read(..)`, `.create(..)` … step is the
//! command the machine must issue next with GitHub's answer, and `.outcome()` runs it,
//! asserting the exact commands and their count.

use std::time::Duration;

use super::*;
use crate::fact::FactKind;
use crate::identity::{ControllerId, Identity};
use crate::input::Desired;
use crate::retry::RetryBounds;
use crate::scale_set::RunnerGroupId;

const CONTROLLER: &str = "0123abcd-4567-89ef-0123-456789abcdef";
const OUR_LABEL: &str = "scaleset-owner-0123abcd456789ef0123456789abcdef";
/// A controller made in the same millisecond (UUIDv7): the same first 12 hex digits.
const FOREIGN_LABEL: &str = "scaleset-owner-0123abcd456789ef0123456789abcde0";
const RIVAL: &str = "arc-listener-1";

fn identity() -> Identity {
    Identity::new(ControllerId::parse(CONTROLLER).expect("a uuid"))
}

// Scale sets as GitHub shows them.

/// Exactly as desired, in group 1, with our owner label: a full record.
fn ours(id: i64) -> ScaleSet {
    bare(id).with(&[OUR_LABEL])
}

/// Exactly as desired, in group 1, without any owner label.
fn bare(id: i64) -> ScaleSet {
    ScaleSet {
        id: GithubScaleSetId(id),
        name: "ci".into(),
        runner_group_id: Some(RunnerGroupId(1)),
        labels: vec!["ci".into(), "linux".into(), "x64".into()],
        disable_update: true,
    }
}

/// Exactly as desired, carrying another controller's owner label.
fn theirs(id: i64) -> ScaleSet {
    bare(id).with(&[FOREIGN_LABEL])
}

trait Shape: Sized {
    fn set(self) -> ScaleSet;
    fn with(self, labels: &[&str]) -> ScaleSet {
        let mut set = self.set();
        set.labels
            .extend(labels.iter().map(|label| (*label).to_owned()));
        set
    }
    fn labelled(self, labels: &[&str]) -> ScaleSet {
        let mut set = self.set();
        set.labels = labels.iter().map(|label| (*label).to_owned()).collect();
        set
    }
    /// A list item as the official fixtures show it: no group, no labels.
    fn thin(self) -> ScaleSet {
        self.no_group().labelled(&[])
    }
    fn no_group(self) -> ScaleSet {
        let mut set = self.set();
        set.runner_group_id = None;
        set
    }
    fn in_group(self, group: u64) -> ScaleSet {
        let mut set = self.set();
        set.runner_group_id = Some(RunnerGroupId(group));
        set
    }
    fn named(self, name: &str) -> ScaleSet {
        let mut set = self.set();
        set.name = name.into();
        set
    }
    fn updates(self, disable_update: bool) -> ScaleSet {
        let mut set = self.set();
        set.disable_update = disable_update;
        set
    }
}

impl Shape for ScaleSet {
    fn set(self) -> ScaleSet {
        self
    }
}

// Facts.

fn transient() -> Fact {
    Fact::Transient {
        message: "503 after 5 attempts".into(),
    }
}

fn bad_request(exception: &str, message: &str) -> Fact {
    Fact::BadRequest {
        exception: exception.into(),
        message: message.into(),
    }
}

fn opened(session: &str) -> Fact {
    Fact::Opened(SessionId(session.into()))
}

fn conflict(owner: Option<&str>) -> Fact {
    Fact::Conflict {
        owner: owner.map(str::to_owned),
    }
}

/// One ensure run: its input and the exchange the machine must have with GitHub.
struct Scenario {
    input: Input,
    script: Vec<(Command, Fact)>,
}

/// An ensure of scale set `ci` (labels `linux`, `X64`, `disableUpdate`) in group 1 under
/// policy `owned`, first of three attempts, no stored id.
fn ensure() -> Scenario {
    Scenario {
        input: Input {
            desired: Desired {
                name: "ci".into(),
                runner_group_id: RunnerGroupId(1),
                labels: vec!["linux".into(), "X64".into()],
                disable_update: true,
            },
            known_id: None,
            policy: Policy::Owned,
            repair: false,
            probe: false,
            identity: identity(),
            retry: RetryBounds {
                attempt: 0,
                max_attempts: 3,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(100),
            },
            takeover: None,
            await_session: false,
        },
        script: Vec::new(),
    }
}

impl Scenario {
    fn policy(mut self, policy: Policy) -> Self {
        self.input.policy = policy;
        self
    }
    fn known(mut self, id: i64) -> Self {
        self.input.known_id = Some(GithubScaleSetId(id));
        self
    }
    fn repair(mut self) -> Self {
        self.input.repair = true;
        self
    }
    fn probing(mut self) -> Self {
        self.input.probe = true;
        self
    }
    fn owner_labels_off(mut self) -> Self {
        self.input.identity = identity().without_owner_label();
        self
    }
    fn last_attempt(mut self) -> Self {
        self.input.retry.attempt = 2;
        self
    }
    fn desired(mut self, change: impl FnOnce(&mut Desired)) -> Self {
        change(&mut self.input.desired);
        self
    }

    /// The machine must issue `command`; GitHub answers `fact`.
    fn then(mut self, command: Command, fact: Fact) -> Self {
        self.script.push((command, fact));
        self
    }
    fn read(self, id: i64, fact: Fact) -> Self {
        self.then(
            Command::GetById {
                id: GithubScaleSetId(id),
            },
            fact,
        )
    }
    fn read_set(self, set: ScaleSet) -> Self {
        let id = set.id.0;
        self.read(id, Fact::ScaleSet(set))
    }
    fn lookup(self, items: Vec<ScaleSet>) -> Self {
        self.lookup_answers(Fact::ScaleSets(items))
    }
    fn lookup_answers(self, fact: Fact) -> Self {
        let command = Command::ListByName {
            group: RunnerGroupId(1),
            name: "ci".into(),
        };
        self.then(command, fact)
    }
    fn group_list(self, items: Vec<ScaleSet>) -> Self {
        let command = Command::ListGroup {
            group: RunnerGroupId(1),
        };
        self.then(command, Fact::ScaleSets(items))
    }
    fn create(self, fact: Fact) -> Self {
        let spec = Machine::new(self.input.clone()).create_spec();
        self.then(Command::Create(spec), fact)
    }
    fn probe(self, id: i64, fact: Fact) -> Self {
        let command = Command::OpenSession {
            id: GithubScaleSetId(id),
            owner: identity().probe_owner(),
        };
        self.then(command, fact)
    }
    fn patch(self, id: i64, fact: Fact) -> Self {
        let machine = Machine::new(self.input.clone());
        let patch = Patch {
            labels: machine.wanted_labels(),
            disable_update: self.input.desired.disable_update,
            runner_group_id: RunnerGroupId(1),
        };
        let command = Command::Update {
            id: GithubScaleSetId(id),
            patch,
        };
        self.then(command, fact)
    }
    fn close(self, id: i64, session: &str, fact: Fact) -> Self {
        let command = Command::CloseSession {
            id: GithubScaleSetId(id),
            session: SessionId(session.into()),
        };
        self.then(command, fact)
    }

    /// Runs the machine through the script: it must issue exactly the scripted commands, no
    /// more, and count each.
    fn outcome(self) -> Outcome {
        let expected = self.script.len();
        let mut machine = Machine::new(self.input);
        let mut step = machine.start();
        for (n, (command, fact)) in self.script.into_iter().enumerate() {
            match step {
                Step::Do(asked) => assert_eq!(asked, command, "command #{n}"),
                Step::Done(outcome) => panic!("done before command #{n} {command:?}: {outcome:?}"),
            }
            assert_eq!(machine.pending(), Some(&command));
            step = machine.next(fact).expect("scripted facts fit");
        }
        match step {
            Step::Done(outcome) => {
                assert_eq!(machine.commands_issued(), expected);
                assert!(expected <= MAX_COMMANDS);
                assert_eq!(machine.outcome(), Some(&outcome));
                assert_eq!(machine.pending(), None);
                outcome
            }
            Step::Do(command) => panic!("script ended but the machine asks for {command:?}"),
        }
    }
}

// What an outcome says.

#[derive(Debug, PartialEq)]
struct Ready {
    id: i64,
    provenance: Provenance,
    evidence: Vec<Evidence>,
    session: Option<SessionId>,
    reset_cursor: bool,
    permit: Option<GithubScaleSetId>,
    notices: Vec<Notice>,
}

fn ready(outcome: &Outcome) -> Ready {
    let Outcome::Ready {
        id,
        provenance,
        evidence,
        session,
        reset_cursor,
        rollback,
        notices,
    } = outcome
    else {
        panic!("expected ready, got {outcome:?}");
    };
    assert_eq!(outcome.ready_id(), Some(*id));
    assert_eq!(outcome.delete_permit(), rollback.permit());
    assert_eq!(outcome.refusal(), None);
    Ready {
        id: id.0,
        provenance: *provenance,
        evidence: evidence.clone(),
        session: session.clone(),
        reset_cursor: *reset_cursor,
        permit: rollback.permit().map(DeletePermit::id),
        notices: notices.clone(),
    }
}

/// A ready scale set with the given provenance and evidence, and nothing else to say.
fn plain(id: i64, provenance: Provenance, evidence: &[Evidence]) -> Ready {
    Ready {
        id,
        provenance,
        evidence: evidence.to_vec(),
        session: None,
        reset_cursor: false,
        permit: None,
        notices: Vec::new(),
    }
}

/// Ready from the stored id, which carries our owner label.
fn known_ours(id: i64) -> Ready {
    plain(
        id,
        Provenance::Known,
        &[Evidence::StoredId, Evidence::OwnerLabel],
    )
}

fn refusal(outcome: Outcome) -> Refusal {
    assert_eq!(outcome.ready_id(), None);
    assert_eq!(outcome.delete_permit(), None);
    let reason = outcome.refusal().cloned();
    match outcome {
        Outcome::Refused { reason: refused } => {
            assert_eq!(reason.as_ref(), Some(&refused));
            refused
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn code(outcome: Outcome) -> &'static str {
    refusal(outcome).code()
}

fn retry_reason(outcome: Outcome) -> RetryReason {
    assert_eq!(outcome.refusal(), None);
    match outcome {
        Outcome::Retry { after, reason } => {
            assert_eq!(after, Duration::from_millis(10), "first attempt's backoff");
            reason
        }
        other => panic!("expected a retry, got {other:?}"),
    }
}

fn failure(outcome: Outcome) -> Failure {
    assert_eq!((outcome.ready_id(), outcome.refusal()), (None, None));
    match outcome {
        Outcome::Failed { reason } => reason,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The scenario retries for `reason`, and on the last attempt gives up naming it.
fn retries_then_gives_up(scenario: impl Fn() -> Scenario, reason: RetryReason) {
    assert_eq!(retry_reason(scenario().outcome()), reason);
    let exhausted = failure(scenario().last_attempt().outcome());
    assert_eq!(
        exhausted,
        Failure::AttemptsExhausted {
            attempts: 3,
            last: reason
        }
    );
}

fn changed(id: i64) -> RetryReason {
    RetryReason::ChangedWhileReading {
        id: GithubScaleSetId(id),
    }
}

// Scenario starts shared by several tests.

/// Nothing found, so the machine creates; GitHub answers the create with `answer`.
fn created(answer: Fact) -> Outcome {
    ensure().lookup(vec![]).create(answer).outcome()
}

/// Nothing found, and the create meets `Exists` (rule 5).
fn race() -> Scenario {
    ensure().lookup(vec![]).create(Fact::Exists)
}

/// Stored id 7, whose read omits the runner group.
fn unconfirmed() -> Scenario {
    ensure().known(7).read_set(ours(7).no_group())
}

/// Stored id 7, which GitHub answers as not found.
fn gone(scenario: Scenario) -> Scenario {
    scenario.known(7).read(7, Fact::NotFound)
}

/// The lookup lists scale set `id` of ours as a thin item.
fn thin_match(id: i64) -> Scenario {
    ensure().lookup(vec![ours(id).thin()])
}

/// Policy `owned` with the opt-in probe on a set without evidence; the probe meets `fact`.
fn owned_probe(fact: Fact) -> Scenario {
    ensure().probing().lookup(vec![bare(3)]).probe(3, fact)
}

/// Policy `any` with repair on a drifted set without evidence; the probe opens `s-5`.
fn any_repairing() -> Scenario {
    ensure()
        .policy(Policy::Any)
        .repair()
        .lookup(vec![bare(5).updates(false)])
        .probe(5, opened("s-5"))
}

/// Repair on: `found` is found by name and patched.
fn repairing(found: ScaleSet) -> Scenario {
    ensure()
        .repair()
        .lookup(vec![found])
        .patch(5, Fact::Updated)
}

/// Stored id 9 reads as `before` and is patched to the configuration.
fn known_patched(before: ScaleSet) -> Scenario {
    ensure().known(9).read_set(before).patch(9, Fact::Updated)
}

// Rule 4.

#[test]
fn missing_scale_set_is_created_with_a_delete_permit() {
    let outcome = created(Fact::ScaleSet(ours(5)));
    assert_eq!(
        ready(&outcome),
        Ready {
            permit: Some(GithubScaleSetId(5)),
            ..plain(5, Provenance::Created, &[Evidence::CreatedThisRun])
        }
    );
}

#[test]
fn create_spec_carries_name_labels_and_all_32_hex_of_the_owner_label() {
    let spec = Machine::new(
        ensure()
            .desired(|d| {
                d.labels = vec![
                    "linux".into(),
                    "LINUX".into(),
                    "ci".into(),
                    FOREIGN_LABEL.into(),
                ]
            })
            .input,
    )
    .create_spec();
    assert_eq!(spec.labels, ["ci", "linux", OUR_LABEL]);
    assert_eq!(
        (
            spec.name.as_str(),
            spec.runner_group_id,
            spec.disable_update
        ),
        ("ci", RunnerGroupId(1), true)
    );
}

#[test]
fn create_without_owner_label_when_turned_off() {
    let spec = Machine::new(ensure().owner_labels_off().input).create_spec();
    assert_eq!(spec.labels, ["ci", "linux", "X64"]);
}

#[test]
fn a_created_set_without_our_owner_label_is_reported() {
    // Some GHES versions drop custom labels: the create answer lacks ours.
    let outcome = created(Fact::ScaleSet(bare(5)));
    let notices = ready(&outcome).notices;
    assert!(matches!(
        notices.as_slice(),
        [notice @ Notice::OwnerLabelMissing { label, .. }] if label == OUR_LABEL && notice.is_warning()
    ));
    // With owner labels off nothing is missing.
    let off = ensure()
        .owner_labels_off()
        .lookup(vec![])
        .create(Fact::ScaleSet(bare(5)))
        .outcome();
    assert_eq!(ready(&off).notices, []);
}

#[test]
fn a_create_answer_with_another_name_or_group_fails_without_a_permit() {
    for answer in [ours(5).named("other"), ours(5).in_group(2)] {
        let outcome = created(Fact::ScaleSet(answer.clone()));
        assert_eq!(
            failure(outcome),
            Failure::UnexpectedCreateResponse {
                created: answer.to_ref()
            }
        );
    }
    // An answer that omits the group is the desired set.
    let omitted = created(Fact::ScaleSet(ours(5).no_group()));
    assert_eq!(ready(&omitted).provenance, Provenance::Created);
}

#[test]
fn a_create_answer_with_a_foreign_owner_label_is_refused() {
    let outcome = created(Fact::ScaleSet(theirs(5)));
    assert_eq!(code(outcome), "ForeignOwner");
}

// Rule 5.

#[test]
fn a_create_race_won_by_our_timed_out_create_is_adopted_not_deletable() {
    // The name filter lags; the group listing shows our own set (full record: no re-read).
    let outcome = race().lookup(vec![]).group_list(vec![ours(3)]).outcome();
    assert_eq!(
        ready(&outcome),
        plain(3, Provenance::Adopted, &[Evidence::OwnerLabel])
    );
}

#[test]
fn a_create_race_winner_without_evidence_is_not_ours() {
    let outcome = race().lookup(vec![bare(4)]).outcome();
    assert_eq!(code(outcome), "OwnershipUnproven");
    let foreign = race().lookup(vec![theirs(8)]).outcome();
    assert_eq!(code(foreign), "ForeignOwner");
}

#[test]
fn an_unresolved_create_race_retries_without_a_second_create() {
    let outcome = race().lookup(vec![]).group_list(vec![]).outcome();
    assert!(matches!(
        retry_reason(outcome),
        RetryReason::CreateRaceUnresolved {
            desired_group: RunnerGroupId(1),
            ..
        }
    ));
}

#[test]
fn the_machine_does_not_read_exception_names_in_a_bad_request() {
    // Typed facts only: the driver maps a nested exists exception to `Exists`.
    let text = "wrapped: GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException";
    let outcome = created(bad_request("RunnerScaleSetExistsException", text));
    assert!(matches!(
        failure(outcome),
        Failure::BadRequest {
            command: CommandKind::Create,
            ..
        }
    ));
}

// Rule 6.

#[test]
fn another_bad_request_fails_naming_the_command_and_exception() {
    let outcome = created(bad_request(
        "InvalidRunnerScaleSetException",
        "labels invalid",
    ));
    assert_eq!(
        failure(outcome),
        Failure::BadRequest {
            command: CommandKind::Create,
            exception: "InvalidRunnerScaleSetException".into(),
            message: "labels invalid".into(),
        }
    );
}

#[test]
fn a_transient_failure_retries_and_the_last_attempt_gives_up() {
    let reason = RetryReason::Transient {
        command: CommandKind::ListByName,
        message: "503 after 5 attempts".into(),
    };
    retries_then_gives_up(|| ensure().lookup_answers(transient()), reason);
}

#[test]
fn the_backoff_hint_doubles_and_caps() {
    let mut input = ensure().input;
    let hints: Vec<Duration> = (0..5)
        .map(|attempt| {
            input.retry.attempt = attempt;
            input.retry.max_attempts = 10;
            input.retry.backoff()
        })
        .collect();
    let ms = Duration::from_millis;
    assert_eq!(hints, [ms(10), ms(20), ms(40), ms(80), ms(100)]);
}

// Rule 1.

#[test]
fn a_known_set_is_ready_after_one_read() {
    let outcome = ensure().known(9).read_set(ours(9)).outcome();
    assert_eq!(ready(&outcome), known_ours(9));
}

#[test]
fn a_stored_id_naming_another_set_is_a_known_id_conflict() {
    let reason = refusal(ensure().known(7).read_set(ours(7).named("other")).outcome());
    assert!(matches!(
        &reason,
        Refusal::KnownIdConflict { stored: GithubScaleSetId(7), github, .. } if github.name == "other"
    ));
}

#[test]
fn a_known_set_with_a_foreign_owner_label_is_refused() {
    for policy in [Policy::Never, Policy::Owned, Policy::Any] {
        let outcome = ensure()
            .policy(policy)
            .known(7)
            .read_set(theirs(7))
            .outcome();
        assert_eq!(code(outcome), "ForeignOwner");
    }
}

#[test]
fn a_known_set_read_without_its_group_is_confirmed_by_the_lookup_without_a_second_read() {
    let outcome = unconfirmed().lookup(vec![ours(7).thin()]).outcome();
    assert_eq!(ready(&outcome), known_ours(7));
}

/// Issue 29 item 1: the read by stored id omits the group and shows no owner label; the
/// group-scoped lookup that confirms it shows another controller's owner label. Evidence
/// against on any read of the run refuses under every policy, and no PATCH is sent (it would
/// replace GitHub's labels and wipe the other controller's claim).
#[test]
fn evidence_against_on_the_confirming_lookup_refuses_without_a_patch() {
    for policy in [Policy::Never, Policy::Owned, Policy::Any] {
        for disable_update in [true, false] {
            let read = bare(5)
                .labelled(&["ci", "linux"])
                .no_group()
                .updates(disable_update);
            let listed = bare(5).labelled(&["ci", "linux", FOREIGN_LABEL]);
            let outcome = ensure()
                .policy(policy)
                .desired(|d| d.labels = vec!["linux".into()])
                .known(5)
                .read_set(read)
                .lookup(vec![listed.clone()])
                .outcome();
            assert_eq!(
                refusal(outcome),
                Refusal::ForeignOwner {
                    scale_set: listed.to_ref(),
                    labels: vec![FOREIGN_LABEL.into()]
                },
                "{policy:?}, disableUpdate {disable_update}"
            );
        }
    }
}

/// A read by stored id that omits the group but shows a foreign owner label is refused at
/// once: no lookup is needed to refuse.
#[test]
fn a_known_set_read_without_its_group_with_a_foreign_owner_label_is_refused_at_once() {
    let read = theirs(7).no_group();
    let outcome = ensure().known(7).read_set(read.clone()).outcome();
    assert_eq!(
        refusal(outcome),
        Refusal::ForeignOwner {
            scale_set: read.to_ref(),
            labels: vec![FOREIGN_LABEL.into()]
        }
    );
}

/// A list item without its group shows a foreign owner label: refused on that read, before
/// the re-read by id (which might no longer show it).
#[test]
fn evidence_against_on_an_incomplete_list_item_refuses_without_the_re_read() {
    for policy in [Policy::Never, Policy::Owned, Policy::Any] {
        let listed = theirs(4).no_group();
        let outcome = ensure()
            .policy(policy)
            .lookup(vec![listed.clone()])
            .outcome();
        assert_eq!(
            refusal(outcome),
            Refusal::ForeignOwner {
                scale_set: listed.to_ref(),
                labels: vec![FOREIGN_LABEL.into()]
            },
            "{policy:?}"
        );
    }
}

#[test]
fn a_known_set_whose_lookup_shows_another_id_is_a_conflict() {
    let reason = refusal(unconfirmed().lookup(vec![ours(42)]).outcome());
    assert!(matches!(
        &reason,
        Refusal::KnownIdConflict {
            stored: GithubScaleSetId(7),
            github: ScaleSetRef {
                id: GithubScaleSetId(42),
                ..
            },
            ..
        }
    ));
    assert!(reason.remediation().contains("42"));
}

#[test]
fn a_known_set_missing_from_a_lagging_lookup_is_a_bounded_retry() {
    let scenario = || unconfirmed().lookup(vec![]);
    let reason = RetryReason::KnownIdUnconfirmed {
        id: GithubScaleSetId(7),
    };
    retries_then_gives_up(scenario, reason);
}

#[test]
fn a_known_set_gone_on_github_is_created_again_with_a_cursor_reset() {
    let outcome = gone(ensure())
        .lookup(vec![])
        .create(Fact::ScaleSet(ours(8)))
        .outcome();
    assert_eq!(
        ready(&outcome),
        Ready {
            reset_cursor: true,
            permit: Some(GithubScaleSetId(8)),
            ..plain(8, Provenance::Created, &[Evidence::CreatedThisRun])
        }
    );
}

#[test]
fn a_404_by_stored_id_contradicted_by_the_lookup_is_still_known() {
    let listed = gone(ensure()).lookup(vec![ours(7)]).outcome();
    let known = plain(
        7,
        Provenance::Known,
        &[Evidence::StoredId, Evidence::OwnerLabel],
    );
    assert_eq!(ready(&listed), known);
    // Even without an owner label, and under `never`.
    let never = gone(ensure().policy(Policy::Never))
        .lookup(vec![bare(7).thin()])
        .read_set(bare(7))
        .outcome();
    assert_eq!(
        ready(&never),
        plain(7, Provenance::Known, &[Evidence::StoredId])
    );
}

#[test]
fn a_404_by_stored_id_then_another_set_of_ours_adopts_it_with_a_cursor_reset() {
    let outcome = gone(ensure()).lookup(vec![ours(8)]).outcome();
    assert_eq!(
        ready(&outcome),
        Ready {
            reset_cursor: true,
            ..plain(8, Provenance::Adopted, &[Evidence::OwnerLabel])
        }
    );
}

// Rule 2.

#[test]
fn a_complete_list_match_is_judged_without_a_read() {
    let outcome = ensure().lookup(vec![ours(9)]).outcome();
    assert_eq!(
        ready(&outcome),
        plain(9, Provenance::Adopted, &[Evidence::OwnerLabel])
    );
}

#[test]
fn a_thin_list_match_is_read_by_id_first() {
    for thin in [ours(6).thin(), ours(6).no_group(), ours(6).labelled(&[])] {
        let outcome = ensure().lookup(vec![thin]).read_set(ours(6)).outcome();
        assert_eq!(
            ready(&outcome),
            plain(6, Provenance::Adopted, &[Evidence::OwnerLabel])
        );
    }
}

#[test]
fn a_thin_match_that_changes_or_vanishes_while_read_retries() {
    let renamed = thin_match(6).read_set(ours(6).named("other")).outcome();
    assert_eq!(retry_reason(renamed), changed(6));
    let gone = thin_match(6).read(6, Fact::NotFound).outcome();
    assert_eq!(retry_reason(gone), changed(6));
}

#[test]
fn a_list_ignoring_the_name_filter_is_matched_exactly() {
    let outcome = ensure()
        .lookup(vec![ours(1).named("ci-2"), ours(2), ours(3).named("c")])
        .outcome();
    assert_eq!(ready(&outcome).id, 2);
}

#[test]
fn a_same_name_set_in_another_group_is_a_group_mismatch() {
    let listed = refusal(
        ensure()
            .lookup(vec![ours(3), ours(4).in_group(2)])
            .outcome(),
    );
    assert!(matches!(
        &listed,
        Refusal::GroupMismatch { found, .. } if found == &[ours(4).in_group(2).to_ref()]
    ));
    let read = thin_match(4).read_set(ours(4).in_group(2)).outcome();
    assert_eq!(code(read), "GroupMismatch");
}

#[test]
fn two_matches_are_ambiguous() {
    let reason = refusal(ensure().lookup(vec![ours(3), bare(4).no_group()]).outcome());
    assert!(matches!(&reason, Refusal::Ambiguous { matches, .. } if matches.len() == 2));
}

#[test]
fn a_name_differing_only_in_case_is_a_collision_not_a_create() {
    let reason = refusal(
        ensure()
            .lookup(vec![ours(3).named("CI"), ours(4).named("Ci").in_group(2)])
            .outcome(),
    );
    assert!(matches!(
        &reason,
        Refusal::NameCaseCollision { existing, .. } if existing == &[ours(3).named("CI").to_ref()]
    ));
    // Only in another group, or another name altogether: no collision, so it is created.
    let elsewhere = ensure()
        .lookup(vec![ours(4).named("Ci").in_group(2), ours(6).named("ci-2")])
        .create(Fact::ScaleSet(ours(5)))
        .outcome();
    assert_eq!(ready(&elsewhere).provenance, Provenance::Created);
}

// Rule 3.

#[test]
fn a_foreign_owner_label_is_refused_under_every_policy() {
    for policy in [Policy::Never, Policy::Owned, Policy::Any] {
        let reason = refusal(ensure().policy(policy).lookup(vec![theirs(8)]).outcome());
        assert_eq!(
            reason,
            Refusal::ForeignOwner {
                scale_set: theirs(8).to_ref(),
                labels: vec![FOREIGN_LABEL.into()],
            }
        );
    }
}

#[test]
fn policy_never_refuses_an_unrecorded_set_even_with_our_label() {
    let outcome = ensure()
        .policy(Policy::Never)
        .lookup(vec![ours(3)])
        .outcome();
    assert_eq!(code(outcome), "ScaleSetExists");
}

#[test]
fn policy_owned_without_evidence_refuses_without_opening_a_session() {
    let outcome = ensure().lookup(vec![bare(3)]).outcome();
    assert_eq!(
        refusal(outcome),
        Refusal::OwnershipUnproven {
            scale_set: bare(3).to_ref()
        }
    );
}

#[test]
fn with_owner_labels_off_our_earlier_label_is_still_ours() {
    let known = ensure()
        .owner_labels_off()
        .known(9)
        .read_set(ours(9))
        .outcome();
    assert_eq!(ready(&known), known_ours(9));
    let found = ensure().owner_labels_off().lookup(vec![ours(9)]).outcome();
    assert_eq!(ready(&found).evidence, [Evidence::OwnerLabel]);
}

#[test]
fn an_opt_in_probe_conflict_naming_our_session_owner_is_evidence() {
    let own = identity().session_owner();
    let outcome = owned_probe(conflict(Some(&own))).outcome();
    assert_eq!(
        ready(&outcome),
        plain(3, Provenance::Adopted, &[Evidence::OwnSession])
    );
}

#[test]
fn an_opt_in_probe_that_opens_proves_nothing_and_is_closed() {
    let outcome = owned_probe(opened("s-1"))
        .close(3, "s-1", Fact::Closed)
        .outcome();
    assert_eq!(code(outcome), "OwnershipUnproven");
}

#[test]
fn a_probe_conflict_of_another_owner_is_a_foreign_session() {
    for policy in [Policy::Owned, Policy::Any] {
        let outcome = ensure()
            .policy(policy)
            .probing()
            .lookup(vec![bare(4)])
            .probe(4, conflict(Some(RIVAL)))
            .outcome();
        assert_eq!(
            refusal(outcome),
            Refusal::ForeignSession {
                scale_set: bare(4).to_ref(),
                owner: RIVAL.into()
            }
        );
    }
}

#[test]
fn an_unnamed_holder_or_our_leaked_probe_is_waited_for_never_evidence() {
    for holder in [None, Some(identity().probe_owner())] {
        let outcome = ensure()
            .probing()
            .lookup(vec![bare(4)])
            .probe(4, conflict(holder.as_deref()))
            .outcome();
        assert_eq!(
            retry_reason(outcome),
            RetryReason::SessionHeld {
                scale_set: bare(4).to_ref(),
                owner: holder
            }
        );
    }
}

/// Drives a fresh machine for `input`, answering each command with `answer`, and returns
/// the commands it issued and its outcome.
fn drive(input: Input, mut answer: impl FnMut(&Command) -> Fact) -> (Vec<Command>, Outcome) {
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    let mut commands = Vec::new();
    loop {
        match step {
            Step::Do(command) => {
                let fact = answer(&command);
                commands.push(command);
                step = machine.next(fact).expect("answers fit");
            }
            Step::Done(outcome) => return (commands, outcome),
        }
    }
}

/// Issue 29 item 2. Run 1 (`any`, repair on): the probe opens a session on a set not proven
/// ours, the PATCH fails and so does every close, so the session leaks. Run 2 (`owned`,
/// repair, probe on): the probe's conflict names run 1's leaked session's owner. A session
/// opened on a set not yet proven ours carries the probe owner, which is never evidence.
#[test]
fn a_probe_session_leaked_under_any_never_reads_later_as_our_own() {
    let found = bare(6).labelled(&["ci", "gpu"]);
    let mut probe_owner = None;
    let (commands, outcome) =
        drive(
            ensure().policy(Policy::Any).repair().input,
            |command| match command {
                Command::ListByName { .. } => Fact::ScaleSets(vec![found.clone()]),
                Command::OpenSession { owner, .. } => {
                    probe_owner = Some(owner.clone());
                    opened("s-6")
                }
                _ => transient(),
            },
        );
    let kinds: Vec<CommandKind> = commands.iter().map(Command::kind).collect();
    assert_eq!(
        kinds,
        [
            CommandKind::ListByName,
            CommandKind::OpenSession,
            CommandKind::Update,
            CommandKind::CloseSession,
            CommandKind::CloseSession,
            CommandKind::CloseSession
        ]
    );
    assert_eq!(
        retry_reason(outcome),
        RetryReason::SessionNotClosed {
            id: GithubScaleSetId(6),
            session: SessionId("s-6".into())
        }
    );
    let leaked = probe_owner.expect("run 1 probed");

    let outcome = ensure()
        .repair()
        .probing()
        .lookup(vec![found.clone()])
        .probe(6, conflict(Some(&leaked)))
        .outcome();
    assert_eq!(
        retry_reason(outcome),
        RetryReason::SessionHeld {
            scale_set: found.to_ref(),
            owner: Some(leaked.clone())
        }
    );
    assert_eq!(leaked, identity().probe_owner());
    assert_ne!(leaked, identity().session_owner());
}

#[test]
fn a_probe_on_a_vanished_set_retries() {
    let outcome = ensure()
        .policy(Policy::Any)
        .lookup(vec![bare(4)])
        .probe(4, Fact::NotFound)
        .outcome();
    assert_eq!(retry_reason(outcome), changed(4));
}

#[test]
fn policy_any_hands_over_the_probe_session() {
    let outcome = ensure()
        .policy(Policy::Any)
        .lookup(vec![bare(1)])
        .probe(1, opened("s-1"))
        .outcome();
    assert_eq!(
        ready(&outcome),
        Ready {
            session: Some(SessionId("s-1".into())),
            ..plain(1, Provenance::Adopted, &[])
        }
    );
}

#[test]
fn policy_any_skips_the_probe_with_evidence() {
    let outcome = ensure().policy(Policy::Any).lookup(vec![ours(1)]).outcome();
    assert_eq!(ready(&outcome).evidence, [Evidence::OwnerLabel]);
}

#[test]
fn policy_any_decides_drift_before_probing() {
    let outcome = ensure()
        .policy(Policy::Any)
        .lookup(vec![bare(1).updates(false)])
        .outcome();
    assert_eq!(code(outcome), "Drifted");
}

// Rule 7.

#[test]
fn labels_compare_ignoring_order_case_duplicates_and_owner_labels() {
    let shuffled = ours(2).labelled(&["X64", FOREIGN_LABEL, "ci", "LINUX", "linux", OUR_LABEL]);
    let identity = identity();
    let desired = ensure().input.desired;
    assert_eq!(
        Settings::observed(&shuffled, &identity),
        Settings::desired(&desired, &identity)
    );
}

#[test]
fn drift_of_a_found_set_is_refused_without_repair() {
    for drifted in [
        ours(2).updates(false),
        ours(2).labelled(&["linux", "x64", OUR_LABEL]),
    ] {
        let reason = refusal(ensure().lookup(vec![drifted.clone()]).outcome());
        assert!(matches!(reason, Refusal::Drifted { .. }), "{drifted:?}");
    }
}

#[test]
fn a_repair_patches_reads_back_and_reports_what_it_applied() {
    let before = bare(5).updates(false);
    let outcome = ensure()
        .policy(Policy::Any)
        .repair()
        .lookup(vec![before.clone()])
        .probe(5, opened("s-5"))
        .patch(5, Fact::Updated)
        .read_set(ours(5))
        .outcome();
    let identity = identity();
    assert_eq!(
        ready(&outcome),
        Ready {
            session: Some(SessionId("s-5".into())),
            notices: vec![Notice::SpecApplied {
                scale_set: ours(5).to_ref(),
                before: Settings::observed(&before, &identity),
                after: Settings::observed(&ours(5), &identity),
                moved_from: None,
                label_added: Some(OUR_LABEL.into()),
            }],
            ..plain(5, Provenance::Adopted, &[])
        }
    );
}

#[test]
fn a_repair_read_back_with_a_foreign_owner_label_is_refused_and_the_session_closed() {
    let outcome = any_repairing()
        .patch(5, Fact::Updated)
        .read_set(theirs(5))
        .close(5, "s-5", Fact::Closed)
        .outcome();
    assert_eq!(code(outcome), "ForeignOwner");
}

#[test]
fn a_repair_read_back_without_our_owner_label_is_reported() {
    let outcome = repairing(ours(5).updates(false))
        .read_set(bare(5))
        .outcome();
    let notices = ready(&outcome).notices;
    assert!(matches!(
        notices.as_slice(),
        [Notice::SpecApplied { .. }, Notice::OwnerLabelMissing { .. }]
    ));
}

#[test]
fn a_repair_read_back_with_another_name_or_group_retries() {
    for answer in [ours(5).named("other"), ours(5).in_group(2)] {
        let outcome = repairing(ours(5).updates(false)).read_set(answer).outcome();
        assert_eq!(retry_reason(outcome), changed(5));
    }
}

#[test]
fn a_repair_whose_set_vanishes_retries_and_closes_the_session() {
    let patch_gone = any_repairing()
        .patch(5, Fact::NotFound)
        .close(5, "s-5", Fact::Closed)
        .outcome();
    assert_eq!(retry_reason(patch_gone), changed(5));
    let read_gone = repairing(ours(5).updates(false))
        .read(5, Fact::NotFound)
        .outcome();
    assert_eq!(retry_reason(read_gone), changed(5));
}

#[test]
fn a_rejected_repair_fails_and_closes_the_session() {
    let outcome = any_repairing()
        .patch(5, bad_request("InvalidRunnerScaleSetException", "no"))
        .close(5, "s-5", Fact::Closed)
        .outcome();
    assert!(matches!(
        failure(outcome),
        Failure::BadRequest {
            command: CommandKind::Update,
            ..
        }
    ));
}

#[test]
fn a_repair_that_did_not_take_is_refused_naming_what_differs() {
    // GHES without custom labels drops the extra labels again.
    let dropped = ours(5).labelled(&["ci", OUR_LABEL]);
    let reason = refusal(repairing(dropped.clone()).read_set(dropped).outcome());
    assert_eq!(reason.code(), "RepairDidNotTake");
    assert!(reason.to_string().contains("labels differ"), "{reason}");
    let remediation = reason.remediation();
    assert!(remediation.contains("the labels still differ (GitHub lacks [linux, x64]);"));
    assert!(!remediation.contains("GitHub has extra"), "{remediation}");
}

#[test]
fn a_repair_that_cannot_turn_disable_update_off_names_it() {
    let stuck = ours(5);
    let reason = refusal(
        ensure()
            .repair()
            .desired(|d| d.disable_update = false)
            .lookup(vec![stuck.clone()])
            .patch(5, Fact::Updated)
            .read_set(stuck)
            .outcome(),
    );
    assert!(
        reason.to_string().contains("disableUpdate differs"),
        "{reason}"
    );
    assert!(reason.remediation().contains("cannot turn it off"));
}

#[test]
fn a_known_set_whose_configuration_changed_is_patched_without_repair() {
    let before = ours(9).updates(false).in_group(2);
    let outcome = known_patched(before.clone()).read_set(ours(9)).outcome();
    let identity = identity();
    assert_eq!(
        ready(&outcome).notices,
        [Notice::SpecApplied {
            scale_set: ours(9).to_ref(),
            before: Settings::observed(&before, &identity),
            after: Settings::observed(&ours(9), &identity),
            moved_from: Some(RunnerGroupId(2)),
            label_added: None,
        }]
    );
}

#[test]
fn a_known_set_moved_to_another_group_is_moved_back() {
    let outcome = known_patched(ours(9).in_group(2))
        .read_set(ours(9))
        .outcome();
    assert!(matches!(
        ready(&outcome).notices.as_slice(),
        [Notice::SpecApplied { moved_from: Some(RunnerGroupId(2)), before, after, .. }] if before == after
    ));
}

#[test]
fn a_known_set_whose_patch_did_not_take_stays_served_with_a_warning() {
    let dropped = ours(9).labelled(&["ci", OUR_LABEL]);
    let outcome = known_patched(dropped.clone()).read_set(dropped).outcome();
    let notices = ready(&outcome).notices;
    assert!(matches!(
        notices.as_slice(),
        [notice @ Notice::SpecNotApplied { .. }] if notice.is_warning()
    ));
}

// Sessions are closed even when closing is hard.

#[test]
fn a_session_that_cannot_be_closed_is_tried_three_times_then_reported() {
    let scenario = || {
        owned_probe(opened("s-1"))
            .close(3, "s-1", transient())
            .close(3, "s-1", bad_request("", "session s-1 is not valid"))
            .close(3, "s-1", transient())
    };
    let reason = RetryReason::SessionNotClosed {
        id: GithubScaleSetId(3),
        session: SessionId("s-1".into()),
    };
    retries_then_gives_up(scenario, reason);
}

#[test]
fn a_gone_session_or_scale_set_counts_as_closed() {
    for answer in [Fact::Closed, Fact::SessionGone, Fact::NotFound] {
        let outcome = owned_probe(opened("s-1")).close(3, "s-1", answer).outcome();
        assert_eq!(code(outcome), "OwnershipUnproven");
    }
}

// Rule 8 and the driver contract.

#[test]
fn a_fact_that_does_not_answer_the_command_is_a_typed_error_and_changes_nothing() {
    let mut machine = Machine::new(ensure().known(7).input);
    assert_eq!(machine.next(Fact::Updated), Err(Error::NotStarted));
    let first = machine.start();
    assert_eq!(machine.start(), first);
    for (fact, kind) in [
        (Fact::Updated, FactKind::Updated),
        (Fact::SessionGone, FactKind::SessionGone),
        (Fact::Exists, FactKind::Exists),
    ] {
        assert_eq!(
            machine.next(fact),
            Err(Error::UnexpectedFact {
                command: CommandKind::GetById,
                fact: kind
            })
        );
    }
    assert_eq!(
        machine.next(Fact::ScaleSet(ours(8))),
        Err(Error::WrongScaleSet {
            expected: GithubScaleSetId(7),
            got: GithubScaleSetId(8)
        })
    );
    assert_eq!(machine.commands_issued(), 1);
    let done = machine.next(Fact::ScaleSet(ours(7))).expect("fits");
    assert!(matches!(&done, Step::Done(Outcome::Ready { .. })));
    assert_eq!(machine.start(), done);
    assert_eq!(machine.next(Fact::Updated), Err(Error::Finished));
}

#[test]
fn each_command_admits_exactly_its_documented_facts() {
    let set = Fact::ScaleSet(ours(1));
    let list = Fact::ScaleSets(vec![]);
    let session = opened("s");
    let all = [
        set.clone(),
        list.clone(),
        Fact::NotFound,
        Fact::Exists,
        Fact::SessionGone,
        session.clone(),
        conflict(None),
        Fact::Updated,
        Fact::Closed,
    ];
    let id = GithubScaleSetId(1);
    let patch = Patch {
        labels: vec![],
        disable_update: false,
        runner_group_id: RunnerGroupId(1),
    };
    let table: [(Command, Vec<Fact>); 7] = [
        (Command::GetById { id }, vec![set.clone(), Fact::NotFound]),
        (
            Command::ListByName {
                group: RunnerGroupId(1),
                name: "ci".into(),
            },
            vec![list.clone()],
        ),
        (
            Command::ListGroup {
                group: RunnerGroupId(1),
            },
            vec![list],
        ),
        (Command::Create(ensure_spec()), vec![set, Fact::Exists]),
        (
            Command::OpenSession {
                id,
                owner: "o".into(),
            },
            vec![session, conflict(None), Fact::NotFound],
        ),
        (
            Command::CloseSession {
                id,
                session: SessionId("s".into()),
            },
            vec![Fact::Closed, Fact::SessionGone, Fact::NotFound],
        ),
        (
            Command::Update { id, patch },
            vec![Fact::Updated, Fact::NotFound],
        ),
    ];
    for (command, admitted) in table {
        for fact in &all {
            assert_eq!(
                command.fits(fact).is_ok(),
                admitted.contains(fact),
                "{command:?} {fact:?}"
            );
        }
        assert_eq!(command.fits(&transient()), Ok(()));
        assert_eq!(command.fits(&bad_request("", "")), Ok(()));
    }
}

fn ensure_spec() -> CreateSpec {
    Machine::new(ensure().input).create_spec()
}

#[test]
fn every_refusal_has_a_remediation_naming_the_scale_set() {
    let scale_set = bare(77).to_ref();
    let settings = Settings::desired(&ensure().input.desired, &identity());
    let (name, group) = (String::from("ci"), RunnerGroupId(1));
    let reasons = [
        Refusal::KnownIdConflict {
            stored: GithubScaleSetId(7),
            github: scale_set.clone(),
            desired_name: name.clone(),
            desired_group: group,
        },
        Refusal::NameCaseCollision {
            desired_name: name.clone(),
            desired_group: group,
            existing: vec![scale_set.clone()],
        },
        Refusal::GroupMismatch {
            desired_name: name.clone(),
            desired_group: group,
            found: vec![scale_set.clone()],
        },
        Refusal::Ambiguous {
            desired_name: name,
            desired_group: group,
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
        let (remediation, text) = (reason.remediation(), reason.to_string());
        assert!(
            remediation.contains("77"),
            "{}: {remediation}",
            reason.code()
        );
        assert!(text.contains("77"), "{text}");
    }
}

#[test]
fn the_longest_path_issues_exactly_max_commands() {
    let drifted = bare(4).updates(false);
    let outcome = ensure()
        .policy(Policy::Any)
        .repair()
        .known(7)
        .read(7, Fact::NotFound)
        .lookup(vec![])
        .create(Fact::Exists)
        .lookup(vec![])
        .group_list(vec![drifted.clone().thin()])
        .read_set(drifted.clone())
        .probe(4, opened("s-4"))
        .patch(4, Fact::Updated)
        .read_set(drifted)
        .close(4, "s-4", transient())
        .close(4, "s-4", transient())
        .close(4, "s-4", Fact::Closed);
    assert_eq!(outcome.script.len(), MAX_COMMANDS);
    assert_eq!(code(outcome.outcome()), "RepairDidNotTake");
}

// Takeover: a scale set imported from GARM (issue 37).

const GARM: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";

impl Scenario {
    /// The set was imported from GARM under GitHub id `id`.
    fn imported(mut self, id: i64) -> Self {
        self.input.takeover = Some(crate::Takeover {
            controller_id: GARM.into(),
            github_id: GithubScaleSetId(id),
            pool_id: None,
            runner_prefix: None,
        });
        self
    }
}

#[test]
fn an_imported_set_with_its_id_and_name_is_adopted_and_gets_our_owner_label() {
    // GARM's set carries no owner label of ours: the note is the evidence, and the label is
    // added (the patch) before the set is ready.
    let outcome = ensure()
        .imported(5)
        .lookup(vec![bare(5)])
        .patch(5, Fact::Updated)
        .read_set(ours(5))
        .outcome();
    let ready = ready(&outcome);
    assert_eq!(
        (ready.id, ready.provenance, ready.evidence, ready.permit),
        (5, Provenance::Adopted, vec![Evidence::ImportedFrom], None)
    );
    // The patch is recorded, naming what changed: the label (the settings were as configured).
    let [notice @ Notice::SpecApplied { label_added, .. }] = ready.notices.as_slice() else {
        panic!("{:?}", ready.notices);
    };
    assert_eq!(label_added.as_deref(), Some(OUR_LABEL));
    assert_eq!(
        notice.to_string(),
        format!(
            "added our owner label {OUR_LABEL} to {} (its settings were already as configured: \
             {})",
            ours(5).to_ref(),
            Settings::observed(&bare(5), &identity())
        )
    );
    assert!(!notice.is_warning());
}

impl Scenario {
    /// The imported set's message session is not ours yet.
    fn awaiting_session(mut self) -> Self {
        self.input.await_session = true;
        self
    }
}

#[test]
fn nothing_is_written_to_an_imported_set_until_its_session_is_ours() {
    // Neither the owner label nor a drift is written while GARM may still run the set.
    for (found, label, drift) in [
        (bare(5), Some(OUR_LABEL), false),
        (bare(5).updates(false), Some(OUR_LABEL), true),
        (ours(5).updates(false), None, true),
    ] {
        let outcome = ensure()
            .imported(5)
            .awaiting_session()
            .lookup(vec![found.clone()])
            .outcome();
        let ready = ready(&outcome);
        assert_eq!(ready.id, 5);
        assert!(ready.evidence.contains(&Evidence::ImportedFrom));
        let identity = identity();
        let settings = drift.then(|| {
            (
                Settings::desired(&ensure().input.desired, &identity),
                Settings::observed(&found, &identity),
            )
        });
        let [notice] = ready.notices.as_slice() else {
            panic!("{:?}", ready.notices);
        };
        assert_eq!(
            notice,
            &Notice::WritesAwaitSession {
                scale_set: found.to_ref(),
                label: label.map(str::to_owned),
                settings: settings.clone(),
            }
        );
        assert!(!notice.is_warning());
        let text = notice.to_string();
        assert!(text.contains("not ours yet: nothing is written"), "{text}");
        assert_eq!(text.contains(OUR_LABEL), label.is_some(), "{text}");
        if let Some((ours, theirs)) = settings {
            assert!(
                text.contains(&format!("patched from {theirs} to {ours}")),
                "{text}"
            );
        }
    }
    // Labelled and as configured: nothing waits, nothing is said.
    let outcome = ensure()
        .imported(5)
        .awaiting_session()
        .lookup(vec![ours(5)])
        .outcome();
    assert!(ready(&outcome).notices.is_empty());
    // A set not imported is patched as before, awaiting or not.
    let outcome = ensure()
        .known(9)
        .awaiting_session()
        .read_set(ours(9).updates(false))
        .patch(9, Fact::Updated)
        .read_set(ours(9))
        .outcome();
    assert!(matches!(
        ready(&outcome).notices.as_slice(),
        [Notice::SpecApplied {
            label_added: None,
            ..
        }]
    ));
}

#[test]
fn a_patch_names_the_owner_label_it_added_beside_the_settings() {
    let notice = Notice::SpecApplied {
        scale_set: bare(5).to_ref(),
        before: Settings::observed(&bare(5).updates(false), &identity()),
        after: Settings::observed(&bare(5), &identity()),
        moved_from: Some(RunnerGroupId(2)),
        label_added: Some(OUR_LABEL.into()),
    };
    let text = notice.to_string();
    assert!(text.starts_with("patched scale set 5"), "{text}");
    assert!(
        text.ends_with(&format!(
            ", moved from runner group 2, added our owner label {OUR_LABEL}"
        )),
        "{text}"
    );
    let moved_only = Notice::SpecApplied {
        scale_set: bare(5).to_ref(),
        before: Settings::observed(&bare(5), &identity()),
        after: Settings::observed(&bare(5), &identity()),
        moved_from: Some(RunnerGroupId(2)),
        label_added: Some(OUR_LABEL.into()),
    };
    assert!(
        moved_only.to_string().starts_with("patched"),
        "{moved_only}"
    );
    assert!(!notice.is_warning());
    let waits = Notice::WritesAwaitSession {
        scale_set: bare(5).to_ref(),
        label: None,
        settings: None,
    };
    assert!(
        waits
            .to_string()
            .ends_with("then it is patched to the configuration"),
        "{waits}"
    );
    let both = Notice::WritesAwaitSession {
        scale_set: bare(5).to_ref(),
        label: Some(OUR_LABEL.into()),
        settings: Some((
            Settings::observed(&bare(5), &identity()),
            Settings::observed(&bare(5).updates(false), &identity()),
        )),
    };
    assert!(
        both.to_string().contains(&format!(
            "then our owner label {OUR_LABEL} is added and it is patched from"
        )),
        "{both}"
    );
}

#[test]
fn an_imported_set_already_labelled_ours_needs_no_patch() {
    let outcome = ensure().imported(5).lookup(vec![ours(5)]).outcome();
    assert_eq!(
        ready(&outcome),
        plain(
            5,
            Provenance::Adopted,
            &[Evidence::OwnerLabel, Evidence::ImportedFrom]
        )
    );
}

#[test]
fn an_imported_set_with_owner_labels_off_is_adopted_without_a_patch() {
    let outcome = ensure()
        .owner_labels_off()
        .imported(5)
        .lookup(vec![bare(5)])
        .outcome();
    assert_eq!(
        ready(&outcome),
        plain(5, Provenance::Adopted, &[Evidence::ImportedFrom])
    );
}

#[test]
fn an_imported_set_that_drifted_is_patched_to_the_configuration() {
    // The operator imported it and reviewed the plan: the file's settings win, as for a set
    // known by its stored id.
    let outcome = ensure()
        .imported(5)
        .lookup(vec![bare(5).updates(false)])
        .patch(5, Fact::Updated)
        .read_set(ours(5))
        .outcome();
    assert_eq!(ready(&outcome).evidence, vec![Evidence::ImportedFrom]);
}

#[test]
fn a_takeover_note_for_another_id_is_no_evidence() {
    // Same name, another GitHub id (GARM's set was deleted and someone made a new one).
    let outcome = ensure().imported(6).lookup(vec![bare(5)]).outcome();
    assert_eq!(code(outcome), "OwnershipUnproven");
}

#[test]
fn a_takeover_note_does_not_beat_another_controllers_label_or_policy_never() {
    let foreign = ensure().imported(5).lookup(vec![theirs(5)]).outcome();
    assert_eq!(code(foreign), "ForeignOwner");
    let never = ensure()
        .policy(Policy::Never)
        .imported(5)
        .lookup(vec![bare(5)])
        .outcome();
    assert_eq!(code(never), "ScaleSetExists");
}

#[test]
fn the_note_vouches_only_for_its_id_and_name() {
    let note = crate::Takeover {
        controller_id: GARM.into(),
        github_id: GithubScaleSetId(5),
        pool_id: None,
        runner_prefix: None,
    };
    assert!(note.vouches_for(&bare(5), "ci"));
    assert!(!note.vouches_for(&bare(6), "ci"));
    assert!(!note.vouches_for(&bare(5).named("cd"), "ci"));
    assert!(!note.vouches_for(&bare(5), "cd"));
    assert_eq!(note.session_owner(), format!("garm-{GARM}"));
}

#[test]
fn a_session_held_by_garm_is_refused_with_stop_it_first_and_others_are_not_its_business() {
    let note = crate::Takeover {
        controller_id: GARM.into(),
        github_id: GithubScaleSetId(5),
        pool_id: None,
        runner_prefix: None,
    };
    let refusal = note
        .conflict(&bare(5), &format!("garm-{GARM}"))
        .expect("GARM's own session");
    assert_eq!(refusal.code(), "ImportedStillRunning");
    assert!(
        refusal
            .remediation()
            .starts_with("GARM still runs: stop it first"),
        "{}",
        refusal.remediation()
    );
    assert!(refusal.remediation().contains("nothing was deleted"));
    assert!(refusal.to_string().contains(&format!("garm-{GARM}")));
    assert!(refusal.to_string().contains("ci"));
    assert_eq!(note.conflict(&bare(5), RIVAL), None);
    assert_eq!(note.conflict(&bare(5), "garm-another-controller"), None);
}
