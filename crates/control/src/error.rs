//! The control crate's error: what failed, for which scale set, and during what.

/// A failure of the control loop. Every variant names the thing, the cause and, through its
/// message, what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configured controller id is not a UUID.
    #[error(
        "invalid configuration: controller_id is not a UUID; it names our sessions, scale sets \
         and instances, so keep the id this controller was first started with"
    )]
    ControllerId {
        /// What is wrong with the text.
        #[source]
        source: scaleset_adopt::ControllerIdError,
    },
    /// A GitHub client cannot be built from credentials, or refused their rotated secret (the
    /// old one stays in use).
    #[error("invalid configuration: credentials {credentials:?}: {part}")]
    Client {
        /// The credentials' name.
        credentials: String,
        /// Which part of them is refused.
        part: ClientPart,
        /// The client's refusal.
        #[source]
        source: ClientRefusal,
    },
    /// A scale set names a runner install template this worker cannot hand out.
    #[error(
        "invalid configuration: scale set {scale_set:?} names runner install template \
         {template:?}, which this worker cannot hand out"
    )]
    InstallTemplate {
        /// The scale set's name.
        scale_set: String,
        /// The template's name.
        template: String,
        /// What is wrong, and what to do.
        #[source]
        problem: TemplateProblem,
    },
    /// A stored instance's pool key does not parse: the row cannot name its instance at the
    /// provider, so nothing is deleted through it.
    #[error(
        "the pool key {pool_key:?} of instance {instance} cannot be read; the row \
         cannot name its instance at the provider, so it is left: delete the instance by hand \
         and then its row"
    )]
    StoredPoolKey {
        /// The instance's name.
        instance: String,
        /// The stored text.
        pool_key: String,
        /// Why it does not parse.
        #[source]
        source: scaleset_provider::InvalidPoolKey,
    },
    /// A stored (or planned) instance name is not a provider instance id, so nothing is
    /// deleted by it.
    #[error(
        "instance {instance:?} is not a valid provider instance id, so it is left: delete the \
         instance by hand and then its row"
    )]
    InstanceId {
        /// The text.
        instance: String,
    },
    /// The runner downloads of the scale set's entity (GARM's `tools`) could not be read, and
    /// none read before are held: no runner is created (a GARM provider refuses a bootstrap
    /// without them), and the read is tried again.
    #[error(
        "no runner is created for scale set {scale_set}: the runner downloads of its GitHub \
         entity (GET …/actions/runners/downloads, the `tools` every provider is given) could \
         not be read; check that the credential may read the entity's runners (it is tried \
         again)"
    )]
    RunnerTools {
        /// The scale set's name.
        scale_set: String,
        /// Why the read failed.
        #[source]
        source: std::sync::Arc<scaleset_github::Error>,
    },
    /// A GitHub call failed.
    #[error("github call failed while {during} (scale set {scale_set})")]
    GitHub {
        /// The scale set's name.
        scale_set: String,
        /// What the controller was doing.
        during: &'static str,
        /// The client's error.
        #[source]
        source: scaleset_github::Error,
    },
    /// A store call failed.
    #[error("store call failed while {during}")]
    Store {
        /// What the controller was doing.
        during: &'static str,
        /// The store's error.
        #[source]
        source: scaleset_store::Error,
    },
    /// A provider call failed.
    #[error("provider {provider:?} failed while {during}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// What the controller was doing.
        during: &'static str,
        /// The provider's error.
        #[source]
        source: scaleset_provider::Error,
    },
    /// A provider answered a create with an instance that is not provably the one asked for
    /// (another name, another pool, or a provider id another row claims): the answer is not
    /// recorded (`crate::planner::claim`).
    #[error(
        "provider {provider:?} answered the create of runner {runner:?} with an instance that \
         is not provably ours ({code}): {reason}; check the provider"
    )]
    ProviderAnswerRefused {
        /// The provider's name.
        provider: String,
        /// The runner the create was for.
        runner: String,
        /// The refusal's stable code (`answered_other_name`, ...).
        code: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// A scale set names a provider the controller was not given.
    #[error(
        "scale set {scale_set} names provider {provider:?}, which is not configured; add it to \
         the providers or change the scale set"
    )]
    UnknownProvider {
        /// The scale set's name.
        scale_set: String,
        /// The provider name.
        provider: String,
    },
    /// The runner group named by a scale set does not exist on GitHub.
    #[error(
        "runner group {group:?} of scale set {scale_set} does not exist on GitHub; create it or \
         correct the scale set"
    )]
    UnknownRunnerGroup {
        /// The scale set's name.
        scale_set: String,
        /// The group's name.
        group: String,
    },
    /// GitHub answered something the adoption machine has no fact for, or the machine was fed
    /// a fact that does not fit (a driver bug).
    #[error("adoption of scale set {scale_set} stopped")]
    Adoption {
        /// The scale set's name.
        scale_set: String,
        /// What happened.
        #[source]
        stop: AdoptionStop,
    },
    /// The control loop is stopping: a step was stopped mid-way (what it had opened is closed).
    #[error("stopped while serving scale set {scale_set}: the control loop is shutting down")]
    Cancelled {
        /// The scale set's name.
        scale_set: String,
    },
    /// Another worker took the scale set's lease over.
    #[error("the lease of scale set {scale_set} was taken over by another worker")]
    LeaseLost {
        /// The scale set's name.
        scale_set: String,
    },
    /// A teardown core gave its executor a command that executor cannot carry out (the
    /// orphan sweep has no rows; a served scale set reaches no other entity): a bug.
    #[error("the teardown executor cannot carry out {command} here")]
    Misrouted {
        /// The command's name.
        command: &'static str,
    },
}

/// How a caller treats a control error: the one input to the driver's retry policy and to
/// the API's status code (`scaleset_api` maps each class to one status, nothing else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// A dependency failed in a way that passes: the same step may succeed later (a GitHub
    /// outage, a provider timeout, a busy or unwritable database).
    Retryable(Dependency),
    /// A dependency refused the call for good as it stands (GitHub said no, a provider
    /// failed): retrying unchanged will not help; the chain says what to fix.
    Upstream(Dependency),
    /// The control loop (or the request) is stopping; nothing is wrong.
    Stopping,
    /// The world no longer matches what the step was given: another worker holds the scale
    /// set, a reviewed plan is stale. Read again (plan again) and retry.
    Conflict(Conflict),
    /// Declined to protect what the controller cannot prove it owns (a provider's answer that
    /// is not provably ours). Nothing was touched; an operator must look.
    Refusal,
    /// The configuration or the input is wrong (a controller id, a scale-set name, a scope, a
    /// template, credentials): fix it; retrying unchanged will not help.
    Invalid,
    /// A bug or corrupt data.
    Internal,
}

/// What an [`ErrorClass::Conflict`] conflicts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// A reviewed plan (a fleet's or a decommission's) that the world no longer matches: plan
    /// again, review, apply the new digest.
    StalePlan,
    /// Another worker serves the scale set (holds or took over its lease): stop or drain it,
    /// then try again.
    LeaseHeld,
    /// Another writer changed or removed the row meanwhile: read again and retry.
    Changed,
}

/// What an [`ErrorClass::Retryable`] or [`ErrorClass::Upstream`] failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// GitHub (its REST API or the Actions service).
    GitHub,
    /// A compute provider.
    Provider,
    /// The store's database.
    Database,
}

impl Error {
    /// The class of this error: what a caller may do about it.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::ControllerId { .. }
            | Self::Client { .. }
            | Self::InstallTemplate { .. }
            | Self::UnknownProvider { .. }
            | Self::UnknownRunnerGroup { .. } => ErrorClass::Invalid,
            Self::ProviderAnswerRefused { .. } => ErrorClass::Refusal,
            // A row that cannot name its instance: corrupt data. Nothing is deleted through it.
            Self::StoredPoolKey { .. } | Self::InstanceId { .. } => ErrorClass::Internal,
            Self::Misrouted { .. } => ErrorClass::Internal,
            Self::LeaseLost { .. } => ErrorClass::Conflict(Conflict::LeaseHeld),
            Self::Cancelled { .. } => ErrorClass::Stopping,
            Self::RunnerTools { source, .. } => github_class(source),
            Self::GitHub { source, .. } => github_class(source),
            Self::Provider { source, .. } => {
                if source.is_retryable() {
                    ErrorClass::Retryable(Dependency::Provider)
                } else {
                    ErrorClass::Upstream(Dependency::Provider)
                }
            }
            Self::Store { source, .. } => {
                if source.is_lease_lost() {
                    return ErrorClass::Conflict(Conflict::LeaseHeld);
                }
                if source.is_conflict() || source.is_not_found() {
                    // Another writer got there first (a row written or deleted meanwhile).
                    return ErrorClass::Conflict(Conflict::Changed);
                }
                match source.class() {
                    scaleset_store::ErrorClass::Retryable => {
                        ErrorClass::Retryable(Dependency::Database)
                    }
                    scaleset_store::ErrorClass::Refusal | scaleset_store::ErrorClass::Fatal => {
                        ErrorClass::Internal
                    }
                }
            }
            Self::Adoption { stop, .. } => match stop {
                AdoptionStop::NoFact { .. } => ErrorClass::Upstream(Dependency::GitHub),
                AdoptionStop::InvalidGitHubId { .. } => ErrorClass::Upstream(Dependency::GitHub),
                AdoptionStop::IdOutOfRange { .. }
                | AdoptionStop::UnknownCommand { .. }
                | AdoptionStop::Misfit { .. }
                | AdoptionStop::SessionNotOpened { .. }
                | AdoptionStop::UnknownOutcome { .. } => ErrorClass::Internal,
            },
        }
    }

    /// Whether the fenced write failed because the lease was taken over.
    pub fn is_lease_lost(&self) -> bool {
        match self {
            Self::LeaseLost { .. } => true,
            Self::Store { source, .. } => source.is_lease_lost(),
            _ => false,
        }
    }

    /// Whether the step stopped because the control loop is shutting down.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled { .. })
    }

    /// The GitHub error behind this one, if any.
    pub fn github(&self) -> Option<&scaleset_github::Error> {
        match self {
            Self::GitHub { source, .. } => Some(source),
            Self::RunnerTools { source, .. } => Some(source),
            Self::Adoption {
                stop: AdoptionStop::NoFact { source, .. },
                ..
            } => Some(source),
            _ => None,
        }
    }
}

fn github_class(error: &scaleset_github::Error) -> ErrorClass {
    match error.class() {
        scaleset_github::ErrorClass::Retryable => ErrorClass::Retryable(Dependency::GitHub),
        _ => ErrorClass::Upstream(Dependency::GitHub),
    }
}

/// Which part of credentials a GitHub client refuses ([`Error::Client`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClientPart {
    /// The entity's config URL (endpoint base URL and entity path).
    #[error("the config URL is invalid")]
    ConfigUrl,
    /// The endpoint's API base URL.
    #[error("the API base URL is invalid")]
    ApiBaseUrl,
    /// The client as a whole (its secret, its TLS roots).
    #[error("cannot build a GitHub client")]
    Build,
    /// A rotated secret (the old one stays in use).
    #[error("the rotated secret is refused")]
    RotatedSecret,
}

/// Why a GitHub client refused a part of credentials ([`Error::Client`]).
#[derive(Debug, thiserror::Error)]
pub enum ClientRefusal {
    /// The client's own refusal.
    #[error(transparent)]
    GitHub(#[from] scaleset_github::Error),
    /// A URL that does not parse.
    #[error(transparent)]
    Url(#[from] url::ParseError),
}

/// Why a runner install template cannot be handed out ([`Error::InstallTemplate`]).
#[derive(Debug, thiserror::Error)]
pub enum TemplateProblem {
    /// The worker's configuration names no such template.
    #[error(
        "this worker's configuration has no template of that name; add it to \
         worker.runner_install_templates (name = \"/path/to/file\") or name one it has"
    )]
    NotConfigured,
    /// The file cannot be read.
    #[error("cannot read {}; check the file named in worker.runner_install_templates", path.display())]
    Unreadable {
        /// The configured path.
        path: std::path::PathBuf,
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
}

/// Why an adoption run stopped without an outcome ([`Error::Adoption`]): GitHub answered
/// something the machine has no fact for, or the driver and the machine disagree (a bug).
/// Never an adoption or a create.
#[derive(Debug, thiserror::Error)]
pub enum AdoptionStop {
    /// A client error that is not an answer from GitHub (invalid configuration, a request
    /// that cannot be encoded, a 2xx body that cannot be decoded).
    #[error("executing {command}: a client error with no adoption fact")]
    NoFact {
        /// The command being executed.
        command: scaleset_adopt::CommandKind,
        /// The client's error.
        #[source]
        source: scaleset_github::Error,
    },
    /// GitHub answered an id the machine cannot hold (a negative one).
    #[error("github answered {what} id {id}, which is not a valid id")]
    InvalidGitHubId {
        /// Which id (`scale set`, `runner group`).
        what: &'static str,
        /// The id.
        id: i64,
    },
    /// The machine holds an id the client cannot send.
    #[error("the machine's {what} id {id} is out of range for the GitHub client")]
    IdOutOfRange {
        /// Which id (`scale set`, `runner group`).
        what: &'static str,
        /// The id.
        id: u64,
    },
    /// The machine asked for a command this driver does not execute.
    #[error("this driver does not know the command {command}")]
    UnknownCommand {
        /// The command.
        command: scaleset_adopt::CommandKind,
    },
    /// The machine refused the fact the driver fed it.
    #[error("feeding the answer to {command}")]
    Misfit {
        /// The command answered.
        command: scaleset_adopt::CommandKind,
        /// The machine's refusal.
        #[source]
        source: scaleset_adopt::Error,
    },
    /// The outcome hands over a session the driver never opened.
    #[error("handed-over session {session} was never opened")]
    SessionNotOpened {
        /// The session id.
        session: String,
    },
    /// The machine ended in an outcome this driver does not know.
    #[error("the machine ended in an outcome this driver does not know: {outcome}")]
    UnknownOutcome {
        /// The outcome, as `Debug` shows it.
        outcome: String,
    },
}

/// A store error in context.
pub fn store(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    move |source| Error::Store { during, source }
}

pub(crate) use scaleset_store::chain;
