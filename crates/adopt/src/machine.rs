//! The adoption machine: states named after what they wait for, each holding the data it
//! needs, transitions implementing rules 1-8 of DESIGN §4, and the `Step` protocol between the
//! machine and its driver.

use std::mem;

use crate::Error;
use crate::command::{Command, CreateSpec, Patch};
use crate::command_kind::CommandKind;
use crate::fact::Fact;
use crate::input::{Input, Policy};
use crate::outcome::{
    DeletePermit, Evidence, Failure, Notice, Outcome, Provenance, RetryReason, Rollback,
};
use crate::refusal::Refusal;
use crate::scale_set::{GithubScaleSetId, ScaleSet, ScaleSetRef, SessionId};
use crate::settings::Settings;

#[cfg(test)]
mod tests;

/// Upper bound on the commands one run issues before it is `Done` (rule 8).
///
/// The longest path: read the stored id (gone), look up by name, create, look up again after
/// `Exists`, list the group, read the match, probe with a session, patch, read back, and close
/// the session with up to three tries.
pub const MAX_COMMANDS: usize = 12;

/// How often a `CloseSession` is tried before the run reports the session as left open.
const CLOSE_TRIES: u8 = 3;

/// What the driver does next.
///
/// Deliberately exhaustive: a run either asks for one more command or ends. Serialises but
/// never deserialises: its outcome may carry a [`crate::DeletePermit`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
    issued: usize,
    phase: Phase,
}

/// Where the run is.
#[derive(Debug, Clone)]
enum Phase {
    Unstarted,
    /// `command` was issued; `state` says what its answer means.
    Waiting {
        command: Command,
        state: State,
    },
    Finished(Outcome),
}

/// Each state is named after the answer it waits for, and holds what the run learned so far.
#[derive(Debug, Clone)]
enum State {
    /// Rule 1: `GetById` of the stored id.
    KnownRead { id: GithubScaleSetId },
    /// Rule 2 (and rule 5 when `race`): `ListByName`.
    NameList { stored: Stored, race: bool },
    /// Rule 5: `ListGroup` after the name filter found nothing.
    GroupList { stored: Stored },
    /// The full record of the single match, when the list item was thin.
    MatchRead { id: GithubScaleSetId, basis: Basis },
    /// Rule 4: the answer to `Create`.
    CreateAnswer { stored: Stored },
    /// Rule 3: the answer to the ownership probe.
    ProbeAnswer { set: ScaleSet, basis: Basis },
    /// Rule 7: the answer to the `Update`.
    UpdateAnswer { adoption: Adoption },
    /// Rule 7: the read-back after the `Update`.
    PatchRead { adoption: Adoption },
    /// Closing a session this run opened and will not hand over, then ending with `then`.
    CloseAnswer {
        then: Outcome,
        held: Held,
        tries: u8,
    },
}

/// What the run knows about the stored id while it looks up by name.
#[derive(Debug, Clone)]
enum Stored {
    /// No id stored (or we are past it).
    Nothing,
    /// The by-id read omitted the group: the group-scoped lookup must list this id.
    Unconfirmed(ScaleSet),
    /// The by-id read answered not found: gone, unless the lookup still lists the id.
    Missing(GithubScaleSetId),
}

impl Stored {
    /// A stored id that GitHub no longer has means the message cursor is stale.
    fn reset_cursor(&self) -> bool {
        matches!(self, Self::Missing(_))
    }
}

/// What a found scale set is judged on besides its record.
#[derive(Debug, Clone, Copy)]
struct Basis {
    /// It is the stored id.
    stored: bool,
    /// The stored id vanished on the way here: discard the message cursor.
    reset_cursor: bool,
}

/// A session a probe opened: handed over on `Ready`, closed otherwise.
#[derive(Debug, Clone)]
struct Held {
    id: GithubScaleSetId,
    session: SessionId,
}

/// A scale set about to become ready, pending the settings check.
#[derive(Debug, Clone)]
struct Adoption {
    set: ScaleSet,
    provenance: Provenance,
    evidence: Vec<Evidence>,
    reset_cursor: bool,
    held: Option<Held>,
}

/// Result of matching a list response against the desired name.
enum Matched {
    One(ScaleSet),
    Nothing,
    Refuse(Refusal),
}

impl Machine {
    /// A machine for one attempt at ensuring `input.desired`.
    pub fn new(input: Input) -> Self {
        Self {
            input,
            issued: 0,
            phase: Phase::Unstarted,
        }
    }

    /// The first step: `GetById` when an id is stored (rule 1), otherwise `ListByName`
    /// (rule 2). Calling it again returns the current step unchanged.
    pub fn start(&mut self) -> Step {
        match &self.phase {
            Phase::Finished(outcome) => Step::Done(outcome.clone()),
            Phase::Waiting { command, .. } => Step::Do(command.clone()),
            Phase::Unstarted => match self.input.known_id {
                Some(id) => self.issue(State::KnownRead { id }, Command::GetById { id }),
                None => self.list_by_name(Stored::Nothing, false),
            },
        }
    }

    /// Feeds GitHub's answer to the pending command and returns the next step.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] before [`start`](Self::start), [`Error::Finished`] after the
    /// outcome, and the errors of [`Command::fits`] when the fact does not answer the pending
    /// command. The machine is unchanged by an error.
    pub fn next(&mut self, fact: Fact) -> Result<Step, Error> {
        let (command, state) = match mem::replace(&mut self.phase, Phase::Unstarted) {
            Phase::Waiting { command, state } => (command, state),
            other => {
                let error = match other {
                    Phase::Finished(_) => Error::Finished,
                    Phase::Unstarted | Phase::Waiting { .. } => Error::NotStarted,
                };
                self.phase = other;
                return Err(error);
            }
        };
        if let Err(error) = command.fits(&fact) {
            self.phase = Phase::Waiting { command, state };
            return Err(error);
        }
        Ok(self.transition(state, fact))
    }

    /// The command waiting for its fact, if any.
    pub fn pending(&self) -> Option<&Command> {
        match &self.phase {
            Phase::Waiting { command, .. } => Some(command),
            Phase::Unstarted | Phase::Finished(_) => None,
        }
    }

    /// The outcome, once the run is done.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.phase {
            Phase::Finished(outcome) => Some(outcome),
            Phase::Unstarted | Phase::Waiting { .. } => None,
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
            State::KnownRead { id } => self.on_known_read(id, fact),
            State::NameList { stored, race } => self.on_name_list(stored, race, fact),
            State::GroupList { stored } => self.on_group_list(stored, fact),
            State::MatchRead { id, basis } => self.on_match_read(id, basis, fact),
            State::CreateAnswer { stored } => self.on_create(stored, fact),
            State::ProbeAnswer { set, basis } => self.on_probe(set, basis, fact),
            State::UpdateAnswer { adoption } => self.on_update(adoption, fact),
            State::PatchRead { adoption } => self.on_patch_read(adoption, fact),
            State::CloseAnswer { then, held, tries } => self.on_close(then, held, tries, fact),
        }
    }

    /// Rule 1.
    fn on_known_read(&mut self, id: GithubScaleSetId, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) if set.name != self.input.desired.name => {
                let reason = self.known_id_conflict(id, set.to_ref());
                self.refuse(reason)
            }
            Fact::ScaleSet(set) => {
                if let Some(refusal) = self.foreign_owner(&set) {
                    return self.refuse(refusal);
                }
                // The group cannot be confirmed from this read: the group-scoped name lookup
                // confirms it by listing the stored id.
                if set.runner_group_id.is_none() {
                    return self.list_by_name(Stored::Unconfirmed(set), false);
                }
                let basis = Basis {
                    stored: true,
                    reset_cursor: false,
                };
                self.judge(set, basis)
            }
            // Gone, unless the lookup still lists it (a 404 alone is no proof).
            Fact::NotFound => self.list_by_name(Stored::Missing(id), false),
            other => self.fail_or_retry(CommandKind::GetById, other, None),
        }
    }

    /// Rule 2, and rule 5's second lookup when `race`.
    fn on_name_list(&mut self, stored: Stored, race: bool, fact: Fact) -> Step {
        let Fact::ScaleSets(items) = fact else {
            return self.fail_or_retry(CommandKind::ListByName, fact, None);
        };
        match self.match_items(&items) {
            Matched::One(item) => self.on_match(stored, item),
            Matched::Refuse(reason) => self.refuse(reason),
            Matched::Nothing => match stored {
                Stored::Unconfirmed(read) => {
                    self.retry(RetryReason::KnownIdUnconfirmed { id: read.id }, None)
                }
                stored if race => {
                    let group = self.input.desired.runner_group_id;
                    self.issue(State::GroupList { stored }, Command::ListGroup { group })
                }
                stored => {
                    let spec = self.create_spec();
                    self.issue(State::CreateAnswer { stored }, Command::Create(spec))
                }
            },
        }
    }

    /// Rule 5: the group listing after the name filter found nothing.
    fn on_group_list(&mut self, stored: Stored, fact: Fact) -> Step {
        let Fact::ScaleSets(items) = fact else {
            return self.fail_or_retry(CommandKind::ListGroup, fact, None);
        };
        match self.match_items(&items) {
            Matched::One(item) => self.on_match(stored, item),
            Matched::Refuse(reason) => self.refuse(reason),
            Matched::Nothing => {
                let desired = &self.input.desired;
                let reason = RetryReason::CreateRaceUnresolved {
                    desired_name: desired.name.clone(),
                    desired_group: desired.runner_group_id,
                };
                self.retry(reason, None)
            }
        }
    }

    /// Rule 3: the single match of a lookup, against what the stored id showed.
    fn on_match(&mut self, stored: Stored, item: ScaleSet) -> Step {
        if let Stored::Unconfirmed(read) = &stored
            && read.id != item.id
        {
            let reason = self.known_id_conflict(read.id, item.to_ref());
            return self.refuse(reason);
        }
        // Evidence against on this read refuses, whatever the other reads of the run showed:
        // the item may carry an owner label that the read by id did not, or that a re-read
        // would no longer show.
        if let Some(refusal) = self.foreign_owner(&item) {
            return self.refuse(refusal);
        }
        let basis = match stored {
            // The lookup lists the stored id: the by-id read is the full record, confirmed
            // in the group; it is not read again.
            Stored::Unconfirmed(read) => {
                return self.judge(
                    read,
                    Basis {
                        stored: true,
                        reset_cursor: false,
                    },
                );
            }
            // The by-id 404 is contradicted by the lookup: still ours by the stored id.
            Stored::Missing(id) if id == item.id => Basis {
                stored: true,
                reset_cursor: false,
            },
            other => Basis {
                stored: false,
                reset_cursor: other.reset_cursor(),
            },
        };
        if item.is_complete() {
            self.judge(item, basis)
        } else {
            let id = item.id;
            self.issue(State::MatchRead { id, basis }, Command::GetById { id })
        }
    }

    /// The full record of a thin list match.
    fn on_match_read(&mut self, id: GithubScaleSetId, basis: Basis, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) if set.name != self.input.desired.name => {
                self.retry(RetryReason::ChangedWhileReading { id }, None)
            }
            Fact::ScaleSet(set) if !self.input.desired.admits(&set) => {
                let desired = &self.input.desired;
                let reason = Refusal::GroupMismatch {
                    desired_name: desired.name.clone(),
                    desired_group: desired.runner_group_id,
                    found: vec![set.to_ref()],
                };
                self.refuse(reason)
            }
            Fact::ScaleSet(set) => match self.foreign_owner(&set) {
                Some(refusal) => self.refuse(refusal),
                None => self.judge(set, basis),
            },
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id }, None),
            other => self.fail_or_retry(CommandKind::GetById, other, None),
        }
    }

    /// Rule 4.
    fn on_create(&mut self, stored: Stored, fact: Fact) -> Step {
        match fact {
            Fact::ScaleSet(set) if !self.input.desired.admits(&set) => {
                let reason = Failure::UnexpectedCreateResponse {
                    created: set.to_ref(),
                };
                self.finish(Outcome::Failed { reason })
            }
            Fact::ScaleSet(set) => {
                if let Some(refusal) = self.foreign_owner(&set) {
                    return self.refuse(refusal);
                }
                let notices = self.missing_owner_label(&set).into_iter().collect();
                self.finish(Outcome::Ready {
                    id: set.id,
                    provenance: Provenance::Created,
                    evidence: vec![Evidence::CreatedThisRun],
                    session: None,
                    reset_cursor: stored.reset_cursor(),
                    rollback: Rollback::MayDelete(DeletePermit::new(set.id)),
                    notices,
                })
            }
            // Rule 5: somebody (perhaps our own timed-out create) won the race.
            Fact::Exists => self.list_by_name(stored, true),
            other => self.fail_or_retry(CommandKind::Create, other, None),
        }
    }

    /// Rule 3: the decision on one confirmed match. Every read that led here was checked for
    /// evidence against (another controller's owner label) as it arrived.
    fn judge(&mut self, set: ScaleSet, basis: Basis) -> Step {
        let identity = &self.input.identity;
        let mut evidence = Vec::new();
        if basis.stored {
            evidence.push(Evidence::StoredId);
        }
        if identity.labelled_ours(&set) {
            evidence.push(Evidence::OwnerLabel);
        }
        if self.imported(&set) {
            evidence.push(Evidence::ImportedFrom);
        }
        let provenance = if basis.stored {
            Provenance::Known
        } else {
            Provenance::Adopted
        };
        let policy = self.input.policy;
        if !basis.stored && policy == Policy::Never {
            return self.refuse(Refusal::ScaleSetExists {
                scale_set: set.to_ref(),
            });
        }
        if !evidence.is_empty() {
            return self.settle(Adoption {
                set,
                provenance,
                evidence,
                reset_cursor: basis.reset_cursor,
                held: None,
            });
        }
        // Every probe runs under the probe owner, never our session owner: the set is not
        // proven ours, so a probe session that leaks (its close fails) must never answer a
        // later probe as our own stale session.
        match policy {
            Policy::Any => {}
            Policy::Owned if self.input.probe => {}
            Policy::Owned | Policy::Never => {
                return self.refuse(Refusal::OwnershipUnproven {
                    scale_set: set.to_ref(),
                });
            }
        }
        let owner = identity.probe_owner();
        // Drift is decided before probing: a refusal needs no session.
        if let Some(reason) = self.drift_refusal(&set) {
            return self.refuse(reason);
        }
        let id = set.id;
        self.issue(
            State::ProbeAnswer { set, basis },
            Command::OpenSession { id, owner },
        )
    }

    /// Rule 3: the probe's answer.
    fn on_probe(&mut self, set: ScaleSet, basis: Basis, fact: Fact) -> Step {
        let identity = &self.input.identity;
        let adoption = |evidence, held| Adoption {
            set: set.clone(),
            provenance: Provenance::Adopted,
            evidence,
            reset_cursor: basis.reset_cursor,
            held,
        };
        match fact {
            Fact::Opened(session) => {
                let held = Held {
                    id: set.id,
                    session,
                };
                if self.input.policy == Policy::Any {
                    self.settle(adoption(vec![], Some(held)))
                } else {
                    let reason = Refusal::OwnershipUnproven {
                        scale_set: set.to_ref(),
                    };
                    self.end(Outcome::Refused { reason }, Some(held))
                }
            }
            Fact::Conflict { owner: Some(owner) } if owner == identity.session_owner() => {
                self.settle(adoption(vec![Evidence::OwnSession], None))
            }
            Fact::Conflict { owner: Some(owner) } if owner == identity.probe_owner() => {
                let reason = RetryReason::SessionHeld {
                    scale_set: set.to_ref(),
                    owner: Some(owner),
                };
                self.retry(reason, None)
            }
            Fact::Conflict { owner: Some(owner) } => self.refuse(Refusal::ForeignSession {
                scale_set: set.to_ref(),
                owner,
            }),
            Fact::Conflict { owner: None } => {
                let reason = RetryReason::SessionHeld {
                    scale_set: set.to_ref(),
                    owner: None,
                };
                self.retry(reason, None)
            }
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id: set.id }, None),
            other => self.fail_or_retry(CommandKind::OpenSession, other, None),
        }
    }

    /// Rule 7: compare settings, then finish, patch or refuse. A known scale set (ours by its
    /// stored id) is patched to the configuration; a found one only with `repair`.
    fn settle(&mut self, adoption: Adoption) -> Step {
        let desired = &self.input.desired;
        let moved = adoption
            .set
            .runner_group_id
            .is_some_and(|group| group != desired.runner_group_id);
        let drift = self.drift(&adoption.set);
        // An imported set gets our owner label before anything else is done with it.
        let imported = adoption.evidence.contains(&Evidence::ImportedFrom);
        let unlabelled = imported && self.missing_owner_label(&adoption.set).is_some();
        if !moved && drift.is_none() && !unlabelled {
            return self.ready(adoption, Vec::new());
        }
        // Nothing is written to an imported set until its session is ours: the old manager
        // may still run it.
        if imported && self.input.await_session {
            let notice = Notice::WritesAwaitSession {
                scale_set: adoption.set.to_ref(),
                label: self
                    .input
                    .identity
                    .owner_label()
                    .filter(|_| !self.input.identity.labelled_ours(&adoption.set)),
                settings: drift,
            };
            return self.ready(adoption, vec![notice]);
        }
        if adoption.provenance == Provenance::Known || self.input.repair || imported {
            let id = adoption.set.id;
            let patch = Patch {
                labels: self.wanted_labels(),
                disable_update: desired.disable_update,
                runner_group_id: desired.runner_group_id,
            };
            return self.issue(
                State::UpdateAnswer { adoption },
                Command::Update { id, patch },
            );
        }
        // Only a drift gets here: a found set in another group was refused as GroupMismatch.
        match drift {
            Some((ours, theirs)) => {
                let reason = Refusal::Drifted {
                    scale_set: adoption.set.to_ref(),
                    ours,
                    theirs,
                };
                self.end(Outcome::Refused { reason }, adoption.held)
            }
            None => self.ready(adoption, Vec::new()),
        }
    }

    /// Rule 7: the patch's answer.
    fn on_update(&mut self, adoption: Adoption, fact: Fact) -> Step {
        let id = adoption.set.id;
        match fact {
            Fact::Updated => self.issue(State::PatchRead { adoption }, Command::GetById { id }),
            Fact::NotFound => self.retry(RetryReason::ChangedWhileReading { id }, adoption.held),
            other => self.fail_or_retry(CommandKind::Update, other, adoption.held),
        }
    }

    /// Rule 7: verify the patch by reading the scale set back, with the same evidence checks
    /// as every read before `Ready`.
    fn on_patch_read(&mut self, adoption: Adoption, fact: Fact) -> Step {
        let id = adoption.set.id;
        let set = match fact {
            Fact::ScaleSet(set) => set,
            Fact::NotFound => {
                return self.retry(RetryReason::ChangedWhileReading { id }, adoption.held);
            }
            other => return self.fail_or_retry(CommandKind::GetById, other, adoption.held),
        };
        if !self.input.desired.admits(&set) {
            return self.retry(RetryReason::ChangedWhileReading { id }, adoption.held);
        }
        if let Some(refusal) = self.foreign_owner(&set) {
            return self.end(Outcome::Refused { reason: refusal }, adoption.held);
        }
        let identity = &self.input.identity;
        let ours = Settings::desired(&self.input.desired, identity);
        let before = Settings::observed(&adoption.set, identity);
        let after = Settings::observed(&set, identity);
        let mut notices = Vec::new();
        if ours == after {
            let moved_from = adoption
                .set
                .runner_group_id
                .filter(|group| *group != self.input.desired.runner_group_id);
            let label_added = identity
                .owner_label()
                .filter(|_| !identity.labelled_ours(&adoption.set) && identity.labelled_ours(&set));
            notices.push(Notice::SpecApplied {
                scale_set: set.to_ref(),
                before,
                after,
                moved_from,
                label_added,
            });
        } else if adoption.provenance == Provenance::Known {
            notices.push(Notice::SpecNotApplied {
                scale_set: set.to_ref(),
                ours,
                theirs: after,
            });
        } else {
            let reason = Refusal::RepairDidNotTake {
                scale_set: set.to_ref(),
                ours,
                theirs: after,
            };
            return self.end(Outcome::Refused { reason }, adoption.held);
        }
        notices.extend(self.missing_owner_label(&set));
        self.ready(adoption, notices)
    }

    /// The answer to closing a session we will not hand over.
    fn on_close(&mut self, then: Outcome, held: Held, tries: u8, fact: Fact) -> Step {
        match fact {
            // Closed, expired, or its scale set is gone: nobody can use it any more.
            Fact::Closed | Fact::SessionGone | Fact::NotFound => self.finish(then),
            _ if tries < CLOSE_TRIES => self.close(then, held, tries + 1),
            _ => {
                let Held { id, session } = held;
                let outcome = self.retry_outcome(RetryReason::SessionNotClosed { id, session });
                self.finish(outcome)
            }
        }
    }

    fn ready(&mut self, adoption: Adoption, notices: Vec<Notice>) -> Step {
        self.finish(Outcome::Ready {
            id: adoption.set.id,
            provenance: adoption.provenance,
            evidence: adoption.evidence,
            session: adoption.held.map(|held| held.session),
            reset_cursor: adoption.reset_cursor,
            rollback: Rollback::DetachOnly,
            notices,
        })
    }

    /// Rule 6 for every command: other 4xx fail, transient failures retry.
    fn fail_or_retry(&mut self, command: CommandKind, fact: Fact, held: Option<Held>) -> Step {
        match fact {
            Fact::Transient { message } => {
                self.retry(RetryReason::Transient { command, message }, held)
            }
            Fact::BadRequest { exception, message } => {
                let reason = Failure::BadRequest {
                    command,
                    exception,
                    message,
                };
                self.end(Outcome::Failed { reason }, held)
            }
            // `Command::fits` admits only the facts each state handles; should one slip
            // through, the run fails naming it rather than guessing.
            other => {
                let reason = Failure::BadRequest {
                    command,
                    exception: String::new(),
                    message: format!("unhandled answer {}", other.kind()),
                };
                self.end(Outcome::Failed { reason }, held)
            }
        }
    }

    fn refuse(&mut self, reason: Refusal) -> Step {
        self.finish(Outcome::Refused { reason })
    }

    fn retry(&mut self, reason: RetryReason, held: Option<Held>) -> Step {
        let outcome = self.retry_outcome(reason);
        self.end(outcome, held)
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

    /// Ends the run with `outcome`, first closing a session this run opened and does not hand
    /// over.
    fn end(&mut self, outcome: Outcome, held: Option<Held>) -> Step {
        match held {
            Some(held) => self.close(outcome, held, 1),
            None => self.finish(outcome),
        }
    }

    fn close(&mut self, then: Outcome, held: Held, tries: u8) -> Step {
        let command = Command::CloseSession {
            id: held.id,
            session: held.session.clone(),
        };
        self.issue(State::CloseAnswer { then, held, tries }, command)
    }

    fn finish(&mut self, outcome: Outcome) -> Step {
        self.phase = Phase::Finished(outcome.clone());
        Step::Done(outcome)
    }

    fn issue(&mut self, state: State, command: Command) -> Step {
        self.phase = Phase::Waiting {
            command: command.clone(),
            state,
        };
        self.issued += 1;
        Step::Do(command)
    }

    fn list_by_name(&mut self, stored: Stored, race: bool) -> Step {
        let desired = &self.input.desired;
        let command = Command::ListByName {
            group: desired.runner_group_id,
            name: desired.name.clone(),
        };
        self.issue(State::NameList { stored, race }, command)
    }

    fn known_id_conflict(&self, stored: GithubScaleSetId, github: ScaleSetRef) -> Refusal {
        Refusal::KnownIdConflict {
            stored,
            github,
            desired_name: self.input.desired.name.clone(),
            desired_group: self.input.desired.runner_group_id,
        }
    }

    /// Evidence against, on any read before `Ready`: another controller's owner label.
    fn foreign_owner(&self, set: &ScaleSet) -> Option<Refusal> {
        let labels = self.input.identity.foreign_labels(set);
        (!labels.is_empty()).then(|| Refusal::ForeignOwner {
            scale_set: set.to_ref(),
            labels,
        })
    }

    /// Our owner label, when we add one and GitHub does not show it.
    fn missing_owner_label(&self, set: &ScaleSet) -> Option<Notice> {
        let identity = &self.input.identity;
        let label = identity.owner_label()?;
        (!identity.labelled_ours(set)).then(|| Notice::OwnerLabelMissing {
            scale_set: set.to_ref(),
            label,
        })
    }

    /// Whether the takeover note vouches for `set` (its id and the desired name).
    fn imported(&self, set: &ScaleSet) -> bool {
        self.input
            .takeover
            .as_ref()
            .is_some_and(|note| note.vouches_for(set, &self.input.desired.name))
    }

    /// Our settings and GitHub's, when they differ.
    fn drift(&self, set: &ScaleSet) -> Option<(Settings, Settings)> {
        let identity = &self.input.identity;
        let ours = Settings::desired(&self.input.desired, identity);
        let theirs = Settings::observed(set, identity);
        (ours != theirs).then_some((ours, theirs))
    }

    /// `Drifted`, when the settings differ and `repair` is off.
    fn drift_refusal(&self, set: &ScaleSet) -> Option<Refusal> {
        if self.input.repair {
            return None;
        }
        self.drift(set).map(|(ours, theirs)| Refusal::Drifted {
            scale_set: set.to_ref(),
            ours,
            theirs,
        })
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
            [one] => return Matched::One((*one).clone()),
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
        labels.extend(identity.owner_label());
        labels
    }
}
