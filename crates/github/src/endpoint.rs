//! [`Endpoint`]: the name of every call the client makes, used in errors, spans and retry policy.

use std::fmt;

/// One operation of the GitHub REST API, the Actions service or the message queue.
///
/// The numbers in the variant docs refer to section 5 of the protocol reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `POST {api}/app/installations/{id}/access_tokens` (GitHub App only).
    InstallationToken,
    /// `POST {api}/{repos|orgs|enterprises}/…/actions/runners/registration-token`.
    RegistrationToken,
    /// `POST {api}/actions/runner-registration` (admin token and service URL).
    RunnerRegistration,
    /// `GET {api}/{repos|orgs|enterprises}/…/actions/runners/downloads` (the runner
    /// application downloads of every OS and architecture).
    RunnerDownloads,
    /// (1) Runner group by name.
    GetRunnerGroupByName,
    /// (2) Scale set by name within a runner group.
    GetScaleSetByName,
    /// (2b) List scale sets.
    ListScaleSets,
    /// (3) Scale set by id.
    GetScaleSet,
    /// (4) Create a scale set.
    CreateScaleSet,
    /// (5) Update (PATCH) a scale set.
    UpdateScaleSet,
    /// (6) Delete a scale set.
    DeleteScaleSet,
    /// (7) Create a message session.
    CreateSession,
    /// (8) Refresh a message session.
    RefreshSession,
    /// (9) Delete a message session.
    DeleteSession,
    /// (10) Long-poll the message queue.
    GetMessage,
    /// (11) Delete (acknowledge) a message.
    DeleteMessage,
    /// (12) List acquirable jobs.
    GetAcquirableJobs,
    /// (13) Acquire jobs.
    AcquireJobs,
    /// (14) Generate a JIT runner configuration.
    GenerateJitConfig,
    /// (15) Runner by id.
    GetRunner,
    /// (16) Runner by name.
    GetRunnerByName,
    /// (16b) List runners.
    ListRunners,
    /// (17) Remove a runner.
    RemoveRunner,
}

impl Endpoint {
    /// Every endpoint, so metrics can export each one's counters from start at 0.
    pub const ALL: &'static [Self] = &[
        Self::InstallationToken,
        Self::RegistrationToken,
        Self::RunnerRegistration,
        Self::RunnerDownloads,
        Self::GetRunnerGroupByName,
        Self::GetScaleSetByName,
        Self::ListScaleSets,
        Self::GetScaleSet,
        Self::CreateScaleSet,
        Self::UpdateScaleSet,
        Self::DeleteScaleSet,
        Self::CreateSession,
        Self::RefreshSession,
        Self::DeleteSession,
        Self::GetMessage,
        Self::DeleteMessage,
        Self::GetAcquirableJobs,
        Self::AcquireJobs,
        Self::GenerateJitConfig,
        Self::GetRunner,
        Self::GetRunnerByName,
        Self::ListRunners,
        Self::RemoveRunner,
    ];

    /// A stable snake_case name, used as the `endpoint` field of spans and errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InstallationToken => "installation_token",
            Self::RegistrationToken => "registration_token",
            Self::RunnerRegistration => "runner_registration",
            Self::RunnerDownloads => "runner_downloads",
            Self::GetRunnerGroupByName => "get_runner_group_by_name",
            Self::GetScaleSetByName => "get_scale_set_by_name",
            Self::ListScaleSets => "list_scale_sets",
            Self::GetScaleSet => "get_scale_set",
            Self::CreateScaleSet => "create_scale_set",
            Self::UpdateScaleSet => "update_scale_set",
            Self::DeleteScaleSet => "delete_scale_set",
            Self::CreateSession => "create_session",
            Self::RefreshSession => "refresh_session",
            Self::DeleteSession => "delete_session",
            Self::GetMessage => "get_message",
            Self::DeleteMessage => "delete_message",
            Self::GetAcquirableJobs => "get_acquirable_jobs",
            Self::AcquireJobs => "acquire_jobs",
            Self::GenerateJitConfig => "generate_jit_config",
            Self::GetRunner => "get_runner",
            Self::GetRunnerByName => "get_runner_by_name",
            Self::ListRunners => "list_runners",
            Self::RemoveRunner => "remove_runner",
        }
    }

    /// Statuses this call retries in addition to 429 and 5xx: `runner-registration` also retries
    /// 401 and 403 (a fresh registration token can take a moment to become valid, protocol §3.5).
    pub(crate) fn also_retried_statuses(self) -> &'static [u16] {
        match self {
            Self::RunnerRegistration => &[401, 403],
            _ => &[],
        }
    }

    /// True for the REST token-chain calls (installation token, registration token,
    /// `runner-registration`), whose 403/429 with rate-limit headers means "wait and retry".
    pub fn is_token_chain(self) -> bool {
        matches!(
            self,
            Self::InstallationToken | Self::RegistrationToken | Self::RunnerRegistration
        )
    }

    /// True for every call to GitHub's REST API (the token chain and the runner downloads):
    /// the calls GitHub's REST rate limit counts, whose 403/429 with rate-limit headers means
    /// "wait and retry".
    pub fn is_rest(self) -> bool {
        self.is_token_chain() || matches!(self, Self::RunnerDownloads)
    }

    /// True for the calls authorised by the message-queue token, whose 401 means
    /// "refresh the session" (GET message, DELETE message, acquirejobs).
    pub fn uses_queue_token(self) -> bool {
        matches!(
            self,
            Self::GetMessage | Self::DeleteMessage | Self::AcquireJobs
        )
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
