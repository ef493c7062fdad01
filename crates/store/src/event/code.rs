//! What an event is ([`EventKind`]: what happened) and why ([`ReasonCode`]), as typed values
//! stored by their stable snake_case names. "Is this the same event again" compares these,
//! never the detail text, which carries changing counters ("failed 4 time(s)", "next try in
//! 21s"). Each code has a one-line sentence for operators ([`ReasonCode::summary`]); the
//! page, the CLI and the logs render prose from it at the edge.
//!
//! A name read back from the database that this build does not know (a row written by a newer
//! version, or by one older than the codes) is not an error: it reads as
//! [`EventKind::Other`] or [`ReasonCode::Unspecified`].

use std::fmt;

/// Declares [`EventKind`] with its stored names.
macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// What happened to a scale set, stored by [`EventKind::as_str`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[$doc])* $variant,)*
            /// A name this build does not know (read back from the database).
            Other,
        }

        impl EventKind {
            /// Every kind but [`EventKind::Other`].
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The stable stored (and API) name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Other => "other",
                }
            }

            /// The kind a stored name names; [`EventKind::Other`] for a name this build does
            /// not know.
            pub fn from_stored(name: &str) -> Self {
                match name {
                    $($name => Self::$variant,)*
                    _ => Self::Other,
                }
            }
        }
    };
}

kinds! {
    /// Created through the API.
    Created = "created",
    /// Its spec changed through the API.
    Updated = "updated",
    /// An operator asked to drain it.
    Drain = "drain",
    /// An operator asked to retry now.
    RetryRequested = "retry_requested",
    /// Stored by a fleet apply.
    Declared = "declared",
    /// Imported from GARM.
    Imported = "imported",
    /// Its spec changed by a fleet apply.
    SpecUpdated = "spec_updated",
    /// Enabled again after an interrupted create.
    Resumed = "resumed",
    /// The ensure step is about to create it on GitHub.
    CreateIntent = "create_intent",
    /// Ensured: ready to serve.
    Ready = "ready",
    /// A note from the ensure step.
    Notice = "notice",
    /// A warning from the ensure step.
    Warning = "warning",
    /// The adoption machine refused it.
    Refused = "refused",
    /// The ensure step failed (GitHub refused it).
    Failed = "failed",
    /// The ensure step retries (GitHub unreachable or failing).
    Retry = "retry",
    /// Its configuration cannot be ensured.
    ConfigError = "config_error",
    /// Its message session is open: listening for jobs.
    SessionOpened = "session_opened",
    /// Its task failed; it backs off and tries again.
    Error = "error",
    /// Another owner holds its message session.
    ForeignSession = "foreign_session",
    /// Our own stale message session was deleted.
    StaleSessionDeleted = "stale_session_deleted",
    /// GitHub deleted it (dormancy or out of band).
    Dormant = "dormant",
    /// A message could not be decoded and was skipped.
    MessageUndecodable = "message_undecodable",
    /// The provider fails.
    ProviderFailing = "provider_failing",
    /// The provider works again.
    ProviderRecovered = "provider_recovered",
    /// A provider's answer was not provably ours.
    ProviderAnswerRefused = "provider_answer_refused",
    /// Runners fail to come online; creates back off.
    BootstrapBackoff = "bootstrap_backoff",
    /// Runners come online again.
    BootstrapRecovered = "bootstrap_recovered",
    /// A runner was not online by its bootstrap deadline.
    BootstrapTimeout = "bootstrap_timeout",
    /// A runner was retired: its instance reported a failed bootstrap.
    BootstrapFailed = "bootstrap_failed",
    /// An instance reported a failed bootstrap to the API.
    InstanceBootstrapFailed = "instance_bootstrap_failed",
    /// A runner was retired: the provider reports its instance stopped.
    InstanceStopped = "instance_stopped",
    /// A runner was retired: GitHub lists it offline.
    RunnerOffline = "runner_offline",
    /// A runner was retired: older than `max_lifetime`.
    MaxLifetime = "max_lifetime",
    /// A runner was retired: idle longer than `max_idle_lifetime`.
    MaxIdleLifetime = "max_idle_lifetime",
    /// A runner GARM left was retired.
    InheritedRunnerRetired = "inherited_runner_retired",
    /// A runner GARM left, offline, was retired.
    InheritedRunnerOffline = "inherited_runner_offline",
    /// Recovering the instances after a start failed.
    RecoveryFailed = "recovery_failed",
    /// Recovering the instances worked again.
    RecoveryRecovered = "recovery_recovered",
    /// Reconcile recorded an instance again.
    InstanceRerecorded = "instance_rerecorded",
    /// Reconcile deleted an instance with no runner and no record.
    OrphanInstanceDeleted = "orphan_instance_deleted",
    /// Reconcile removed a runner with no instance and no record.
    StrayRunnerRemoved = "stray_runner_removed",
    /// An instance GARM left was taken over.
    InstanceInherited = "instance_inherited",
    /// An instance GARM left with no runner was deleted.
    InheritedInstanceDeleted = "inherited_instance_deleted",
    /// Draining: instances left.
    Draining = "draining",
    /// Drained: no instance left.
    Drained = "drained",
    /// An instance of a GitHub scale set that no longer exists.
    SupersededInstance = "superseded_instance",
    /// An instance of a GitHub scale set that no longer exists was deleted.
    SupersededInstanceDeleted = "superseded_instance_deleted",
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares [`ReasonCode`] with its stored names, kinds and sentences.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $kind:ident, $summary:literal;)*) => {
        /// Why an event happened (and why a scale set is in its state), stored by
        /// [`ReasonCode::as_str`]. Each code belongs to one [`EventKind`]
        /// ([`ReasonCode::kind`]) and has a one-line sentence ([`ReasonCode::summary`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ReasonCode {
            $($(#[$doc])* $variant,)*
            /// No code was recorded (an entry written before codes were kept) or the stored
            /// name is one this build does not know.
            Unspecified,
        }

        impl ReasonCode {
            /// Every code but [`ReasonCode::Unspecified`].
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The stable stored (and API) name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Unspecified => "unspecified",
                }
            }

            /// The code a stored name names; [`ReasonCode::Unspecified`] for a name this
            /// build does not know.
            pub fn from_stored(name: &str) -> Self {
                match name {
                    $($name => Self::$variant,)*
                    _ => Self::Unspecified,
                }
            }

            /// What happened when an event has this reason.
            pub fn kind(self) -> EventKind {
                match self {
                    $(Self::$variant => EventKind::$kind,)*
                    Self::Unspecified => EventKind::Other,
                }
            }

            /// One line for operators: the short reason the status page shows in a table.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Self::$variant => $summary,)*
                    Self::Unspecified => "see the detail",
                }
            }
        }
    };
}

codes! {
    /// Created through the API.
    CreatedByOperator = "created_by_operator", Created, "created through the API; the worker ensures it on GitHub";
    /// Its spec changed through the API.
    UpdatedByOperator = "updated_by_operator", Updated, "its spec was changed through the API";
    /// An operator asked to drain it.
    DrainRequested = "drain_requested", Drain, "an operator asked to drain it";
    /// An operator asked to retry now.
    RetryRequested = "retry_requested", RetryRequested, "an operator asked to retry now";
    /// Stored by a fleet apply.
    Declared = "declared", Declared, "stored by a fleet apply; the worker creates or adopts it on GitHub";
    /// Imported from GARM on its takeover note.
    Imported = "imported", Imported, "imported from GARM on its takeover note";
    /// Its spec changed by a fleet apply.
    SpecUpdated = "spec_updated", SpecUpdated, "its spec was changed by a fleet apply";
    /// Enabled again after an interrupted create.
    Resumed = "resumed", Resumed, "enabled again after a create an older server did not finish";
    /// About to create it on GitHub.
    CreateIntent = "create_intent", CreateIntent, "creating it on GitHub";
    /// Created on GitHub by this controller.
    ScaleSetCreated = "scale_set_created", Ready, "ready: created on GitHub by this controller";
    /// Adopted on ownership evidence or policy.
    ScaleSetAdopted = "scale_set_adopted", Ready, "ready: adopted";
    /// The stored GitHub id was confirmed.
    ScaleSetConfirmed = "scale_set_confirmed", Ready, "ready: the scale set we knew is still there";
    /// The ensure step changed GitHub's settings to the configuration.
    SpecApplied = "spec_applied", Notice, "its settings on GitHub were changed to the configuration";
    /// An imported scale set waits for its message session before anything is written.
    WritesAwaitSession = "writes_await_session", Notice, "imported: changes wait until GARM lets go of its message session";
    /// GitHub kept other settings than the configuration asks for.
    SpecNotApplied = "spec_not_applied", Warning, "GitHub kept other settings than the configuration asks for";
    /// GitHub does not show our owner label.
    OwnerLabelMissing = "owner_label_missing", Warning, "GitHub does not show our owner label; after a database loss it cannot be proven ours by it";
    /// The stored GitHub id names another scale set.
    KnownIdConflict = "known_id_conflict", Refused, "refused: the GitHub id we stored now names another scale set";
    /// A scale set whose name differs only in case exists.
    NameCaseCollision = "name_case_collision", Refused, "refused: a scale set whose name differs only in case exists";
    /// The same-name scale set is in another runner group.
    GroupMismatch = "group_mismatch", Refused, "refused: the same-name scale set is in another runner group";
    /// More than one scale set has the name.
    Ambiguous = "ambiguous", Refused, "refused: more than one scale set on GitHub has this name";
    /// Another controller's owner label is on it.
    ForeignOwner = "foreign_owner", Refused, "refused: another controller owns it";
    /// A same-name scale set exists and the policy adopts none.
    ScaleSetExists = "scale_set_exists", Refused, "refused: a same-name scale set exists and the policy is never";
    /// Another owner holds its message session (seen by the adoption machine).
    SessionRefused = "session_refused", Refused, "refused: another owner holds its message session";
    /// GARM still runs it.
    ImportedStillRunning = "imported_still_running", Refused, "refused: GARM still serves it";
    /// A same-name scale set exists without evidence it is ours.
    OwnershipUnproven = "ownership_unproven", Refused, "refused: a same-name scale set exists and nothing proves it ours";
    /// Its settings on GitHub differ from the configuration.
    Drifted = "drifted", Refused, "its settings on GitHub differ from the configuration (repair is off)";
    /// A repair did not change GitHub's settings.
    RepairDidNotTake = "repair_did_not_take", Refused, "a repair did not change its settings on GitHub";
    /// GitHub refused the scale set.
    AdoptionFailed = "adoption_failed", Failed, "GitHub refused the scale set";
    /// GitHub is unreachable or failing; the ensure step retries.
    EnsureRetrying = "ensure_retrying", Retry, "GitHub is unreachable or failing; retrying";
    /// Its name is not a valid scale-set name.
    InvalidName = "invalid_name", ConfigError, "its name is not a valid scale-set name";
    /// Its runner group does not exist on GitHub.
    UnknownRunnerGroup = "unknown_runner_group", ConfigError, "its runner group does not exist on GitHub";
    /// Its provider is not configured.
    UnknownProvider = "unknown_provider", ConfigError, "its provider is not configured on this worker";
    /// Its message session is open.
    SessionOpened = "session_opened", SessionOpened, "ready: listening for jobs";
    /// Its task failed; it backs off and tries again.
    TaskFailed = "task_failed", Error, "serving it failed; retrying with back-off";
    /// Another owner holds its message session.
    SessionHeld = "session_held", ForeignSession, "another owner holds its message session";
    /// Our own stale message session was deleted.
    StaleSessionDeleted = "stale_session_deleted", StaleSessionDeleted, "our stale message session was deleted";
    /// GitHub deleted it; it is ensured again.
    Dormant = "dormant", Dormant, "GitHub deleted it (dormant or out of band); ensuring it again";
    /// A message could not be decoded and was skipped.
    MessageUndecodable = "message_undecodable", MessageUndecodable, "a message could not be decoded and was skipped";
    /// The provider fails.
    ProviderFailing = "provider_failing", ProviderFailing, "provider failing";
    /// The provider works again.
    ProviderRecovered = "provider_recovered", ProviderRecovered, "the provider works again";
    /// A provider's answer was not provably ours.
    ProviderAnswerRefused = "provider_answer_refused", ProviderAnswerRefused, "the provider answered with an instance that is not provably ours";
    /// Runners fail to come online; creates back off.
    BootstrapBackoff = "bootstrap_backoff", BootstrapBackoff, "runners fail to come online; creates back off";
    /// Runners come online again.
    BootstrapRecovered = "bootstrap_recovered", BootstrapRecovered, "runners come online again";
    /// A runner was not online by its bootstrap deadline.
    BootstrapTimeout = "bootstrap_timeout", BootstrapTimeout, "a runner was not online by its bootstrap deadline; removed";
    /// A runner's instance reported a failed bootstrap; retired.
    BootstrapFailed = "bootstrap_failed", BootstrapFailed, "a runner's instance reported a failed bootstrap; removed";
    /// An instance reported a failed bootstrap.
    InstanceBootstrapFailed = "instance_bootstrap_failed", InstanceBootstrapFailed, "an instance reported a failed bootstrap";
    /// The provider reports an instance stopped; its runner retired.
    InstanceStopped = "instance_stopped", InstanceStopped, "the provider reports an instance stopped; its runner was removed";
    /// GitHub lists a runner offline past its deadline; retired.
    RunnerOffline = "runner_offline", RunnerOffline, "GitHub lists a runner offline; removed";
    /// A runner older than `max_lifetime` was retired.
    MaxLifetime = "max_lifetime", MaxLifetime, "an idle runner older than max_lifetime was removed";
    /// A runner idle longer than `max_idle_lifetime` was retired.
    MaxIdleLifetime = "max_idle_lifetime", MaxIdleLifetime, "a runner idle longer than max_idle_lifetime was removed";
    /// An idle runner GARM left was retired.
    InheritedRunnerRetired = "inherited_runner_retired", InheritedRunnerRetired, "an idle runner GARM left was replaced by ours";
    /// An offline runner GARM left was retired.
    InheritedRunnerOffline = "inherited_runner_offline", InheritedRunnerOffline, "an offline runner GARM left was removed";
    /// Recovering the instances after a start fails.
    RecoveryFailing = "recovery_failing", RecoveryFailed, "recovering its instances after a start fails; retrying";
    /// Recovering the instances worked.
    RecoveryRecovered = "recovery_recovered", RecoveryRecovered, "recovering its instances worked";
    /// An instance under our pool key was recorded again.
    InstanceRerecorded = "instance_rerecorded", InstanceRerecorded, "an instance of ours with a live runner was recorded again";
    /// An instance under our pool key with no runner was deleted.
    OrphanInstanceDeleted = "orphan_instance_deleted", OrphanInstanceDeleted, "an instance of ours with no runner and no record was deleted";
    /// A runner with no instance was removed.
    StrayRunnerRemoved = "stray_runner_removed", StrayRunnerRemoved, "a runner of ours with no instance and no record was removed";
    /// An instance GARM left was taken over.
    InstanceInherited = "instance_inherited", InstanceInherited, "an instance GARM left was taken over";
    /// An instance GARM left with no runner was deleted.
    InheritedInstanceDeleted = "inherited_instance_deleted", InheritedInstanceDeleted, "an instance GARM left with no runner was deleted";
    /// Draining: instances are left.
    Draining = "draining", Draining, "draining: runners left finish their jobs";
    /// Drained: nothing is left.
    Drained = "drained", Drained, "drained: no instance left";
    /// An instance of a GitHub scale set that no longer exists.
    SupersededInstance = "superseded_instance", SupersededInstance, "an instance of a deleted GitHub scale set no longer counts";
    /// An instance of a GitHub scale set that no longer exists was deleted.
    SupersededInstanceDeleted = "superseded_instance_deleted", SupersededInstanceDeleted, "an instance of a deleted GitHub scale set was deleted";
}

impl ReasonCode {
    /// The code of an adoption refusal. `Refusal` is the adoption crate's (non-exhaustive): one
    /// this build does not name is coded as unproven ownership, the refusal that promises least.
    pub fn of_refusal(refusal: &scaleset_adopt::Refusal) -> Self {
        use scaleset_adopt::Refusal;
        match refusal {
            Refusal::KnownIdConflict { .. } => Self::KnownIdConflict,
            Refusal::NameCaseCollision { .. } => Self::NameCaseCollision,
            Refusal::GroupMismatch { .. } => Self::GroupMismatch,
            Refusal::Ambiguous { .. } => Self::Ambiguous,
            Refusal::ForeignOwner { .. } => Self::ForeignOwner,
            Refusal::ScaleSetExists { .. } => Self::ScaleSetExists,
            Refusal::ForeignSession { .. } => Self::SessionRefused,
            Refusal::ImportedStillRunning { .. } => Self::ImportedStillRunning,
            Refusal::Drifted { .. } => Self::Drifted,
            Refusal::RepairDidNotTake { .. } => Self::RepairDidNotTake,
            _ => Self::OwnershipUnproven,
        }
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_and_kind_reads_back_by_its_stored_name() {
        for code in ReasonCode::ALL {
            assert_eq!(ReasonCode::from_stored(code.as_str()), *code);
        }
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_stored(kind.as_str()), *kind);
        }
    }

    #[test]
    fn a_name_this_build_does_not_know_reads_as_the_fallback() {
        assert_eq!(
            ReasonCode::from_stored("from_the_future"),
            ReasonCode::Unspecified
        );
        assert_eq!(ReasonCode::from_stored(""), ReasonCode::Unspecified);
        assert_eq!(EventKind::from_stored("tick"), EventKind::Other);
    }

    #[test]
    fn stored_names_are_unique_snake_case_and_summaries_are_one_line() {
        let mut names: Vec<&str> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ReasonCode::ALL.len());
        for code in ReasonCode::ALL {
            let name = code.as_str();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            let summary = code.summary();
            assert!(
                !summary.is_empty() && !summary.contains('\n') && summary.len() <= 100,
                "{name}: {summary}"
            );
            assert!(!summary.contains('['), "{name}: {summary}");
        }
    }
}
