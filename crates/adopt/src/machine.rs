//! The adoption machine: states named after what they wait for, transitions implementing
//! rules 1-8 of DESIGN §4, and the `Step` protocol between the machine and its driver.

use std::mem;

use crate::Error;
use crate::command::{Command, CommandKind, CreateSpec, Patch};
use crate::fact::Fact;
use crate::input::{Input, Policy};
use crate::outcome::{DeletePermit, Evidence, Failure, Outcome, Provenance, RetryReason, Rollback};
use crate::refusal::Refusal;
use crate::scale_set::{ScaleSet, ScaleSetId, ScaleSetRef, SessionId};
use crate::settings::Settings;

#[cfg(test)]
mod tests;

/// Upper bound on the commands one run issues before it is `Done` (rule 8).
///
/// The longest path: read the stored id (gone), look up by name, create, look up again after
/// `Exists`, list the group, read the match, probe with a session, patch, read back, and close
/// the session with up to three tries.
pub const MAX_COMMANDS: usize = 12;

/// GitHub's exception for a duplicate create (rule 5).
const EXISTS_EXCEPTION: &str = "RunnerScaleSetExistsException";

/// How often a `CloseSession` is tried before the run reports the session as left open.
const CLOSE_TRIES: u8 = 3;

/// What the driver does next.
///
/// Deliberately exhaustive: a run either asks for one more command or ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Step {
    /// Execute this command and feed its fact to [`Machine::next`].
    Do(Command),
    /// The run is over.
    Done(Outcome),
}

/// The pure adoption state machine for one desired scale set and one attempt.
///
/// Contract for the driver: call [`start`](Self::start) once, execute each
/// [`Step::Do`] command against GitHub, translate the answer to a [`Fact`] and feed it to
/// [`next`](Self::next), until [`Step::Done`]. The driver makes no decisions and keeps the
/// full session object when it executes `OpenSession` (the outcome may hand it over). After
/// [`Outcome::Retry`], wait `after` and run a *new* machine with `attempt + 1`: every attempt
/// starts again at rule 1, because a create that timed out may have succeeded. The machine
/// reads no clock, does no I/O and issues at most [`MAX_COMMANDS`] commands.
#[derive(Debug, Clone)]
pub struct Machine {
    input: Input,
    /// The stored id while it is still believed; cleared when GitHub says it is gone.
    known_id: Option<ScaleSetId>,
    /// GitHub's by-id answer for the stored id, when it omitted the group (rule 1, unconfirmed).
    known_read: Option<ScaleSetRef>,
    reset_cursor: bool,
    /// A session the probe opened: handed over on `Ready` (policy `any`), closed otherwise.
    held_session: Option<(ScaleSetId, SessionId)>,
    pending: Option<Command>,
    issued: usize,
    phase: Phase,
}

/// Where the run is.
#[derive(Debug, Clone)]
enum Phase {
    Unstarted,
    Waiting(State),
    Finished(Outcome),
}

/// Each state is named after the answer it waits for.
#[derive(Debug, Clone)]
enum State {
    /// Rule 1: `GetById` of the stored id.
    KnownRead,
    /// Rule 2 (and rule 5 when `race`): `ListByName`.
    NameList { race: bool },
    /// Rule 5: `ListGroup` after the name filter found nothing.
    GroupList,
    /// The full record of the single match `id`, before judging it.
    MatchRead { id: ScaleSetId },
    /// Rule 4: the answer to `Create`.
    CreateAnswer,
    /// Rule 3: the answer to the ownership probe.
    ProbeAnswer { set: ScaleSet },
    /// Rule 7: the answer to the repair `Update`.
    UpdateAnswer { adoption: Adoption },
    /// Rule 7: the read-back after the repair.
    RepairRead { adoption: Adoption },
    /// Closing a session this run opened and will not hand over, then ending with `then`.
    CloseAnswer { then: Outcome, tries: u8 },
}

/// A scale set about to become ready, pending the settings check.
#[derive(Debug, Clone)]
struct Adoption {
    set: ScaleSet,
    provenance: Provenance,
    evidence: Vec<Evidence>,
}

/// Result of matching a list response against the desired name.
enum Matched {
    One(ScaleSetId),
    Nothing,
    Refuse(Refusal),
}

impl Machine {
    /// A machine for one attempt at ensuring `input.desired`.
    pub fn new(input: Input) -> Self {
        Self {
            known_id: input.known_id,
            input,
            known_read: None,
            reset_cursor: false,
            held_session: None,
            pending: None,
            issued: 0,
            phase: Phase::Unstarted,
        }
    }

    /// The first step: `GetById` when an id is stored (rule 1), otherwise `ListByName`
    /// (rule 2). Calling it again returns the current step unchanged.
    pub fn start(&mut self) -> Step {
        if let Phase::Finished(outcome) = &self.phase {
            return Step::Done(outcome.clone());
        }
        if let Some(command) = &self.pending {
            return Step::Do(command.clone());
        }
        match self.known_id {
            Some(id) => self.issue(State::KnownRead, Command::GetById { id }),
            None => self.list_by_name(false),
        }
    }

    /// Feeds GitHub's answer to the pending command and returns the next step.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] before [`start`](Self::start), [`Error::Finished`] after the
    /// outcome, [`Error::UnexpectedFact`] when the fact does not answer the pending command and
    /// [`Error::WrongScaleSet`] when a read by id returns another id. The machine is unchanged
    /// by an error.
    pub fn next(&mut self, fact: Fact) -> Result<Step, Error> {
        let Some(pending) = &self.pending else {
            return Err(match self.phase {
                Phase::Finished(_) => Error::Finished,
                Phase::Unstarted | Phase::Waiting(_) => Error::NotStarted,
            });
        };
        check_fits(pending, &fact)?;
        match mem::replace(&mut self.phase, Phase::Unstarted) {
            Phase::Waiting(state) => Ok(self.transition(state, fact)),
            other => {
                self.phase = other;
                Err(Error::NotStarted)
            }
        }
    }

    /// The command waiting for its fact, if any.
    pub fn pending(&self) -> Option<&Command> {
        self.pending.as_ref()
    }

    /// The outcome, once the run is done.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.phase {
            Phase::Finished(outcome) => Some(outcome),
            Phase::Unstarted | Phase::Waiting(_) => None,
        }
    }

    /// Commands issued so far (never more than [`MAX_COMMANDS`]).
    pub fn commands_issued(&self) -> usize {
        self.issued
    }

    /// The create body for the desired scale set: name, configured labels, owner label.
    pub fn create_spec(&self) -> CreateSpec {
        let desired = &self.input.desired;
        CreateSpec {
            name: desired.name.clone(),
            runner_group_id: desired.runner_group_id,
            labels: self.wanted_labels(),
            disable_update: desired.disable_update,
        }
    }

    fn transition(&mut self, state: State, fact: Fact) -> Step {
        match state {
            State::KnownRead => self.on_known_read(fact),
            State::NameList { race } => self.on_name_list(race, fact),
            State::GroupList => self.on_group_list(fact),
            State::MatchRead { id } => self.on_match_read(id, fact),
            State::CreateAnswer => self.on_create(fact),
            State::ProbeAnswer { set } => self.on_probe(set, fact),
            State::UpdateAnswer { adoption } => self.on_update(adoption, fact),
            State::RepairRead { adoption } => self.on_repair_read(adoption, fact),
            State::CloseAnswer { then, tries } => self.on_close(then, tries, fact),
        }
    }

    /// Rule 1.
    fn on_known_read(&mut self, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) => {
                let desired = &self.input.desired;
                let stored = set.id;
                let group_differs = set
                    .runner_group_id
                    .is_some_and(|group| group != desired.runner_group_id);
                if set.name != desired.name || group_differs {
                    let reason = self.known_id_conflict(stored, set.to_ref());
                    return self.finish(Outcome::Refused { reason });
                }
                if set.runner_group_id.is_none() {
                    // The group cannot be confirmed from this read: let the group-scoped
                    // name lookup confirm it (it still judges the match against the stored id).
                    self.known_read = Some(set.to_ref());
                    return self.list_by_name(false);
                }
                self.judge(set)
            }
            Fact::NotFound => {
                // Dormancy: GitHub deleted it. Forget the id and the message cursor.
                self.known_id = None;
                self.reset_cursor = true;
                self.list_by_name(false)
            }
            other => self.fail_or_retry(CommandKind::GetById, other),
        }
    }

    /// Rule 2, and rule 5's second lookup when `race`.
    fn on_name_list(&mut self, race: bool, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSets(items) => match self.match_items(&items) {
                Matched::One(id) => self.issue(State::MatchRead { id }, Command::GetById { id }),
                Matched::Refuse(reason) => self.finish(Outcome::Refused { reason }),
                Matched::Nothing => {
                    if let (Some(stored), Some(github)) = (self.known_id, self.known_read.clone()) {
                        let reason = self.known_id_conflict(stored, github);
                        self.finish(Outcome::Refused { reason })
                    } else if race {
                        let group = self.input.desired.runner_group_id;
                        self.issue(State::GroupList, Command::ListGroup { group })
                    } else {
                        let spec = self.create_spec();
                        self.issue(State::CreateAnswer, Command::Create(spec))
                    }
                }
            },
            other => self.fail_or_retry(CommandKind::ListByName, other),
        }
    }

    /// Rule 5: the group listing after the name filter found nothing.
    fn on_group_list(&mut self, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSets(items) => match self.match_items(&items) {
                Matched::One(id) => self.issue(State::MatchRead { id }, Command::GetById { id }),
                Matched::Refuse(reason) => self.finish(Outcome::Refused { reason }),
                Matched::Nothing => {
                    let desired = &self.input.desired;
                    let reason = RetryReason::CreateRaceUnresolved {
                        desired_name: desired.name.clone(),
                        desired_group: desired.runner_group_id,
                    };
                    self.retry(reason)
                }
            },
            other => self.fail_or_retry(CommandKind::ListGroup, other),
        }
    }

    /// The full record of the single list match.
    fn on_match_read(&mut self, id: ScaleSetId, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) => {
                let desired = &self.input.desired;
                if set.name != desired.name {
                    return self.retry(RetryReason::ChangedWhileReading { id: set.id });
                }
                if set
                    .runner_group_id
                    .is_some_and(|group| group != desired.runner_group_id)
                {
                    let reason = Refusal::GroupMismatch {
                        desired_name: desired.name.clone(),
                        desired_group: desired.runner_group_id,
                        found: vec![set.to_ref()],
                    };
                    return self.finish(Outcome::Refused { reason });
                }
                self.judge(set)
            }
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id }),
            other => self.fail_or_retry(CommandKind::GetById, other),
        }
    }

    /// Rule 4.
    fn on_create(&mut self, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) => {
                let desired = &self.input.desired;
                let group_differs = set
                    .runner_group_id
                    .is_some_and(|group| group != desired.runner_group_id);
                if set.name != desired.name || group_differs {
                    let reason = Failure::UnexpectedCreateResponse {
                        created: set.to_ref(),
                    };
                    return self.finish(Outcome::Failed { reason });
                }
                self.finish(Outcome::Ready {
                    id: set.id,
                    provenance: Provenance::Created,
                    evidence: vec![Evidence::CreatedThisRun],
                    session: None,
                    reset_cursor: self.reset_cursor,
                    rollback: Rollback::MayDelete(DeletePermit::new(set.id)),
                })
            }
            // Rule 5: somebody (perhaps our own timed-out create) won the race. The client
            // should report a nested `RunnerScaleSetExistsException` as `Exists`; one that
            // slipped through as a plain bad request is recognised here as well.
            Fact::Exists => self.list_by_name(true),
            Fact::BadRequest { exception, message }
                if exception.contains(EXISTS_EXCEPTION) || message.contains(EXISTS_EXCEPTION) =>
            {
                self.list_by_name(true)
            }
            other => self.fail_or_retry(CommandKind::Create, other),
        }
    }

    /// Rule 3: the decision on one confirmed match.
    fn judge(&mut self, set: ScaleSet) -> Step {
        if let Some(stored) = self.known_id.filter(|stored| *stored != set.id) {
            let reason = self.known_id_conflict(stored, set.to_ref());
            return self.finish(Outcome::Refused { reason });
        }
        let identity = &self.input.identity;
        let foreign: Vec<String> = set
            .labels
            .iter()
            .filter(|label| identity.is_foreign_owner_label(label))
            .cloned()
            .collect();
        if !foreign.is_empty() {
            let reason = Refusal::ForeignOwner {
                scale_set: set.to_ref(),
                labels: foreign,
            };
            return self.finish(Outcome::Refused { reason });
        }
        let mut evidence = Vec::new();
        if self.known_id == Some(set.id) {
            evidence.push(Evidence::StoredId);
        }
        if set
            .labels
            .iter()
            .any(|label| identity.is_our_owner_label(label))
        {
            evidence.push(Evidence::OwnerLabel);
        }
        let provenance = if evidence.contains(&Evidence::StoredId) {
            Provenance::Known
        } else {
            Provenance::Adopted
        };
        let policy = self.input.policy;
        if policy == Policy::Never && provenance != Provenance::Known {
            let reason = Refusal::ScaleSetExists {
                scale_set: set.to_ref(),
            };
            return self.finish(Outcome::Refused { reason });
        }
        if !evidence.is_empty() {
            return self.settle(Adoption {
                set,
                provenance,
                evidence,
            });
        }
        // Owned or Any without evidence: probe with a session.
        let owner = match policy {
            Policy::Any => identity.session_owner.clone(),
            Policy::Owned | Policy::Never => identity.probe_owner.clone(),
        };
        let id = set.id;
        self.issue(
            State::ProbeAnswer { set },
            Command::OpenSession { id, owner },
        )
    }

    /// Rule 3: the probe's answer.
    fn on_probe(&mut self, set: ScaleSet, fact: Fact) -> Step {
        let identity = &self.input.identity;
        match fact {
            Fact::Opened(session) => match self.input.policy {
                Policy::Any => {
                    self.held_session = Some((set.id, session));
                    let adoption = Adoption {
                        set,
                        provenance: Provenance::Adopted,
                        evidence: vec![],
                    };
                    self.settle(adoption)
                }
                Policy::Owned | Policy::Never => {
                    self.held_session = Some((set.id, session));
                    let reason = Refusal::OwnershipUnproven {
                        scale_set: set.to_ref(),
                    };
                    self.finish(Outcome::Refused { reason })
                }
            },
            Fact::Conflict { owner: Some(owner) } if owner == identity.session_owner => {
                let adoption = Adoption {
                    set,
                    provenance: Provenance::Adopted,
                    evidence: vec![Evidence::OwnSession],
                };
                self.settle(adoption)
            }
            Fact::Conflict { owner: Some(owner) } if owner == identity.probe_owner => {
                let reason = RetryReason::SessionHeld {
                    scale_set: set.to_ref(),
                    owner: Some(owner),
                };
                self.retry(reason)
            }
            Fact::Conflict { owner: Some(owner) } => {
                let reason = Refusal::ForeignSession {
                    scale_set: set.to_ref(),
                    owner,
                };
                self.finish(Outcome::Refused { reason })
            }
            Fact::Conflict { owner: None } => {
                let reason = RetryReason::SessionHeld {
                    scale_set: set.to_ref(),
                    owner: None,
                };
                self.retry(reason)
            }
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id: set.id }),
            other => self.fail_or_retry(CommandKind::OpenSession, other),
        }
    }

    /// Rule 7: compare settings, then refuse, repair or finish.
    fn settle(&mut self, adoption: Adoption) -> Step {
        let identity = &self.input.identity;
        let ours = Settings::desired(&self.input.desired, identity);
        let theirs = Settings::observed(&adoption.set, identity);
        if ours == theirs {
            return self.ready(adoption);
        }
        if self.input.repair {
            let id = adoption.set.id;
            let patch = Patch {
                labels: self.wanted_labels(),
                disable_update: self.input.desired.disable_update,
            };
            return self.issue(
                State::UpdateAnswer { adoption },
                Command::Update { id, patch },
            );
        }
        let reason = Refusal::Drifted {
            scale_set: adoption.set.to_ref(),
            ours,
            theirs,
        };
        self.finish(Outcome::Refused { reason })
    }

    /// Rule 7: the repair's answer.
    fn on_update(&mut self, adoption: Adoption, fact: Fact) -> Step {
        let id = adoption.set.id;
        match fact {
            Fact::Updated => self.issue(State::RepairRead { adoption }, Command::GetById { id }),
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id }),
            other => self.fail_or_retry(CommandKind::Update, other),
        }
    }

    /// Rule 7: verify the repair by reading the scale set back.
    fn on_repair_read(&mut self, adoption: Adoption, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) => {
                let desired = &self.input.desired;
                let group_differs = set
                    .runner_group_id
                    .is_some_and(|group| group != desired.runner_group_id);
                if set.name != desired.name || group_differs {
                    return self.retry(RetryReason::ChangedWhileReading { id: set.id });
                }
                let identity = &self.input.identity;
                let ours = Settings::desired(desired, identity);
                let theirs = Settings::observed(&set, identity);
                if ours != theirs {
                    let reason = Refusal::RepairDidNotTake {
                        scale_set: set.to_ref(),
                        ours,
                        theirs,
                    };
                    return self.finish(Outcome::Refused { reason });
                }
                self.ready(Adoption { set, ..adoption })
            }
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading {
                id: adoption.set.id,
            }),
            other => self.fail_or_retry(CommandKind::GetById, other),
        }
    }

    /// The answer to closing a session we will not hand over.
    fn on_close(&mut self, then: Outcome, tries: u8, fact: Fact) -> Step {
        let closed = match &fact {
            Fact::Closed | Fact::NotFound => true,
            Fact::BadRequest { exception, message } => {
                // An expired session cannot be used by anyone any more.
                exception.contains("SessionExpired") || message.contains("is not valid")
            }
            _ => false,
        };
        if closed {
            self.held_session = None;
            return self.done(then);
        }
        let Some((id, session)) = self.held_session.clone() else {
            return self.done(then);
        };
        if tries < CLOSE_TRIES {
            let command = Command::CloseSession { id, session };
            return self.issue(
                State::CloseAnswer {
                    then,
                    tries: tries + 1,
                },
                command,
            );
        }
        self.held_session = None;
        let outcome = self.retry_outcome(RetryReason::SessionNotClosed { id, session });
        self.done(outcome)
    }

    fn ready(&mut self, adoption: Adoption) -> Step {
        let session = self.held_session.take().map(|(_, session)| session);
        let mut evidence = adoption.evidence;
        evidence.sort();
        evidence.dedup();
        self.finish(Outcome::Ready {
            id: adoption.set.id,
            provenance: adoption.provenance,
            evidence,
            session,
            reset_cursor: self.reset_cursor,
            rollback: Rollback::DetachOnly,
        })
    }

    /// Rule 6 for every command: other 4xx fail, transient failures retry.
    fn fail_or_retry(&mut self, command: CommandKind, fact: Fact) -> Step {
        match fact {
            Fact::BadRequest { exception, message } => {
                let reason = Failure::BadRequest {
                    command,
                    exception,
                    message,
                };
                self.finish(Outcome::Failed { reason })
            }
            Fact::Transient { message } => self.retry(RetryReason::Transient { command, message }),
            // `check_fits` admits only the facts each state handles.
            other => {
                let reason = Failure::BadRequest {
                    command,
                    exception: String::new(),
                    message: format!("unhandled answer {}", other.kind()),
                };
                self.finish(Outcome::Failed { reason })
            }
        }
    }

    fn retry(&mut self, reason: RetryReason) -> Step {
        let outcome = self.retry_outcome(reason);
        self.finish(outcome)
    }

    fn retry_outcome(&self, reason: RetryReason) -> Outcome {
        let bounds = &self.input.retry;
        if bounds.is_last() {
            let reason = Failure::AttemptsExhausted {
                attempts: bounds.attempt.saturating_add(1),
                last: reason,
            };
            Outcome::Failed { reason }
        } else {
            Outcome::Retry {
                after: bounds.backoff(),
                reason,
            }
        }
    }

    /// Ends the run, first closing a session this run opened (it is handed over only by
    /// `ready`, which takes it out).
    fn finish(&mut self, outcome: Outcome) -> Step {
        match self.held_session.clone() {
            Some((id, session)) => {
                let command = Command::CloseSession { id, session };
                self.issue(
                    State::CloseAnswer {
                        then: outcome,
                        tries: 1,
                    },
                    command,
                )
            }
            None => self.done(outcome),
        }
    }

    fn done(&mut self, outcome: Outcome) -> Step {
        self.pending = None;
        self.phase = Phase::Finished(outcome.clone());
        Step::Done(outcome)
    }

    fn issue(&mut self, state: State, command: Command) -> Step {
        self.phase = Phase::Waiting(state);
        self.pending = Some(command.clone());
        self.issued += 1;
        Step::Do(command)
    }

    fn list_by_name(&mut self, race: bool) -> Step {
        let desired = &self.input.desired;
        let command = Command::ListByName {
            group: desired.runner_group_id,
            name: desired.name.clone(),
        };
        self.issue(State::NameList { race }, command)
    }

    fn known_id_conflict(&self, stored: ScaleSetId, github: ScaleSetRef) -> Refusal {
        Refusal::KnownIdConflict {
            stored,
            github,
            desired_name: self.input.desired.name.clone(),
            desired_group: self.input.desired.runner_group_id,
        }
    }

    /// Rule 2: exact-name matches in the queried group.
    fn match_items(&self, items: &[ScaleSet]) -> Matched {
        let desired = &self.input.desired;
        let group = desired.runner_group_id;
        let in_group = |set: &&ScaleSet| set.runner_group_id.is_none_or(|g| g == group);
        let exact: Vec<&ScaleSet> = items
            .iter()
            .filter(|set| set.name == desired.name)
            .collect();
        let elsewhere: Vec<ScaleSetRef> = exact
            .iter()
            .filter(|set| !in_group(set))
            .map(|set| set.to_ref())
            .collect();
        if !elsewhere.is_empty() {
            return Matched::Refuse(Refusal::GroupMismatch {
                desired_name: desired.name.clone(),
                desired_group: group,
                found: elsewhere,
            });
        }
        match exact.as_slice() {
            [one] => return Matched::One(one.id),
            [] => {}
            many => {
                return Matched::Refuse(Refusal::Ambiguous {
                    desired_name: desired.name.clone(),
                    desired_group: group,
                    matches: many.iter().map(|set| set.to_ref()).collect(),
                });
            }
        }
        let case_only: Vec<ScaleSetRef> = items
            .iter()
            .filter(|set| {
                set.name != desired.name && set.name.to_lowercase() == desired.name.to_lowercase()
            })
            .filter(in_group)
            .map(ScaleSet::to_ref)
            .collect();
        if case_only.is_empty() {
            Matched::Nothing
        } else {
            Matched::Refuse(Refusal::NameCaseCollision {
                desired_name: desired.name.clone(),
                desired_group: group,
                existing: case_only,
            })
        }
    }

    /// The labels we send: the name, the configured labels (minus any owner labels),
    /// de-duplicated case-insensitively, then our owner label.
    fn wanted_labels(&self) -> Vec<String> {
        let desired = &self.input.desired;
        let identity = &self.input.identity;
        let mut labels: Vec<String> = Vec::new();
        for label in std::iter::once(&desired.name).chain(&desired.labels) {
            let duplicate = labels
                .iter()
                .any(|seen| seen.to_lowercase() == label.to_lowercase());
            if !duplicate && !identity.is_owner_label(label) {
                labels.push(label.clone());
            }
        }
        labels.extend(identity.owner_label.clone());
        labels
    }
}

/// Whether `fact` can answer `command` (and names the right scale set).
fn check_fits(command: &Command, fact: &Fact) -> Result<(), Error> {
    let fits = match (command, fact) {
        (_, Fact::BadRequest { .. } | Fact::Transient { .. }) => true,
        (Command::GetById { id }, Fact::ScaleSet(set)) => {
            if set.id != *id {
                return Err(Error::WrongScaleSet {
                    expected: *id,
                    got: set.id,
                });
            }
            true
        }
        (Command::GetById { .. }, Fact::NotFound) => true,
        (Command::ListByName { .. } | Command::ListGroup { .. }, Fact::ScaleSets(_)) => true,
        (Command::Create(_), Fact::ScaleSet(_) | Fact::Exists) => true,
        (Command::OpenSession { .. }, Fact::Opened(_) | Fact::Conflict { .. } | Fact::NotFound) => {
            true
        }
        (Command::CloseSession { .. }, Fact::Closed | Fact::NotFound) => true,
        (Command::Update { .. }, Fact::Updated | Fact::NotFound) => true,
        _ => false,
    };
    if fits {
        Ok(())
    } else {
        Err(Error::UnexpectedFact {
            command: command.kind(),
            fact: fact.kind(),
        })
    }
}
