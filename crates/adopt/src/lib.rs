//! `scaleset-adopt`: the pure adoption state machine of scaleset.
//!
//! Given a desired runner scale set and what GitHub says, the [`Machine`] decides whether the
//! scale set is ready, must be created, may be adopted, or must be refused, following rules
//! 1-8 of `docs/adoption.md`. It is the part other autoscalers can embed.
//!
//! **What it deliberately does not do:** no I/O, no async, no HTTP, no database, no clock
//! reads, no randomness, no logging. Like `quinn-proto`, it only turns facts into commands: a
//! driver executes each [`Command`] against GitHub, translates the answer into a [`Fact`] and
//! feeds it back. Time enters only as the retry bounds in the [`Input`]; the machine answers
//! with a backoff *hint* ([`Outcome::Retry`]) and never waits itself.
//!
//! **Main types:** [`Input`] (desired [`Desired`] spec, stored id, [`Policy`], repair and
//! probe flags, [`Identity`] built from a parsed [`ControllerId`], [`RetryBounds`]), [`Machine`], [`Step`], [`Command`], [`Fact`] and
//! [`Outcome`] (a ready one carries [`Notice`]s for the event log), whose [`Refusal`]s carry
//! every detail and a
//! [`remediation`](Refusal::remediation). Only a scale set created by this very run comes with
//! a [`DeletePermit`] ([`Rollback::MayDelete`]); everything else may only be detached.
//!
//! With the `serde` feature, the public data types implement `Serialize` and `Deserialize`.
//!
//! # Example: a toy executor
//!
//! ```
//! use scaleset_adopt::{
//!     Command, ControllerId, Desired, Fact, Identity, Input, Machine, Outcome, Policy,
//!     Provenance, RetryBounds, RunnerGroupId, ScaleSet, GithubScaleSetId, Step,
//! };
//!
//! /// A GitHub that holds scale sets in memory.
//! struct ToyGitHub {
//!     sets: Vec<ScaleSet>,
//! }
//!
//! impl ToyGitHub {
//!     fn execute(&mut self, command: Command) -> Fact {
//!         match command {
//!             Command::GetById { id } => match self.sets.iter().find(|s| s.id == id) {
//!                 Some(set) => Fact::ScaleSet(set.clone()),
//!                 None => Fact::NotFound,
//!             },
//!             Command::ListByName { group, name } => Fact::ScaleSets(
//!                 self.sets
//!                     .iter()
//!                     .filter(|s| s.name == name && s.runner_group_id == Some(group))
//!                     .cloned()
//!                     .collect(),
//!             ),
//!             Command::ListGroup { group } => Fact::ScaleSets(
//!                 self.sets.iter().filter(|s| s.runner_group_id == Some(group)).cloned().collect(),
//!             ),
//!             Command::Create(spec) => {
//!                 let set = ScaleSet {
//!                     id: GithubScaleSetId(self.sets.len() as i64 + 1),
//!                     name: spec.name,
//!                     runner_group_id: Some(spec.runner_group_id),
//!                     labels: spec.labels,
//!                     disable_update: spec.disable_update,
//!                 };
//!                 self.sets.push(set.clone());
//!                 Fact::ScaleSet(set)
//!             }
//!             other => Fact::BadRequest {
//!                 exception: "ToyException".into(),
//!                 message: format!("the toy does not do {:?}", other.kind()),
//!             },
//!         }
//!     }
//! }
//!
//! fn ensure(github: &mut ToyGitHub, input: Input) -> Outcome {
//!     let mut machine = Machine::new(input);
//!     let mut step = machine.start();
//!     loop {
//!         match step {
//!             Step::Do(command) => {
//!                 let fact = github.execute(command);
//!                 step = machine.next(fact).expect("the toy answers every command in kind");
//!             }
//!             Step::Done(outcome) => return outcome,
//!         }
//!     }
//! }
//!
//! let mut github = ToyGitHub { sets: Vec::new() };
//! let input = Input {
//!     desired: Desired {
//!         name: "linux-x64".into(),
//!         runner_group_id: RunnerGroupId(1),
//!         labels: vec!["linux".into()],
//!         disable_update: true,
//!     },
//!     known_id: None,
//!     policy: Policy::Owned,
//!     repair: false,
//!     probe: false,
//!     identity: Identity::new(ControllerId::parse("3f2a9c1e-77b0-4d4e-9a55-0123456789ab")?),
//!     retry: RetryBounds::default(),
//!     takeover: None,
//!     await_session: false,
//! };
//!
//! // First run: nothing on GitHub, so the machine creates it; rollback may delete it.
//! let Outcome::Ready { id, provenance, rollback, .. } = ensure(&mut github, input.clone()) else {
//!     panic!("expected ready");
//! };
//! assert_eq!(provenance, Provenance::Created);
//! assert!(rollback.permit().is_some());
//!
//! // The database is lost: the next run finds the set by name and our owner label, and
//! // adopts it without creating a duplicate. It may not be deleted by a rollback.
//! let Outcome::Ready { id: again, provenance, rollback, .. } = ensure(&mut github, input) else {
//!     panic!("expected ready");
//! };
//! assert_eq!((again, provenance), (id, Provenance::Adopted));
//! assert!(rollback.permit().is_none());
//! assert_eq!(github.sets.len(), 1);
//! # Ok::<(), scaleset_adopt::ControllerIdError>(())
//! ```

mod command;
mod command_kind;
mod error;
mod fact;
mod identity;
mod input;
mod machine;
mod outcome;
mod refusal;
mod retry;
mod scale_set;
mod settings;
mod takeover;

pub use command::{Command, CreateSpec, Patch};
pub use command_kind::CommandKind;
pub use error::Error;
pub use fact::{Fact, FactKind};
pub use identity::{ControllerId, ControllerIdError, Identity, OWNER_LABEL_PREFIX};
pub use input::{Desired, Input, Policy};
pub use machine::{MAX_COMMANDS, Machine, Step};
pub use outcome::{
    DeletePermit, Evidence, Failure, Notice, Outcome, Provenance, RetryReason, Rollback,
    evidence_sentence,
};
pub use refusal::Refusal;
pub use retry::RetryBounds;
pub use scale_set::{GithubScaleSetId, RunnerGroupId, ScaleSet, ScaleSetRef, SessionId};
pub use settings::Settings;
pub use takeover::Takeover;
