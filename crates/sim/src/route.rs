//! Routing: which endpoint a request addresses, from its method and path. Each endpoint has the
//! stable name used in request counts, the request log and fault targeting.

use http::Method;

/// An endpoint of the simulated services (or the control API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    InstallationToken(i64),
    RegistrationToken(String),
    RunnerRegistration,
    /// `GET …/actions/runners/downloads` for a scope path (`acme`, `acme/w`, `enterprises/e`).
    RunnerDownloads(String),
    /// `GET /api/v3/{orgs/{o}|enterprises/{e}}/actions/runner-groups`: the REST list GARM reads
    /// to resolve a runner group other than `Default`, for a scope path (`acme`, `enterprises/e`).
    RestRunnerGroups(String),
    /// `GET /api/v3/rate_limit`.
    RateLimit,
    /// `GET /actions/runner/releases/download/{tag}/{filename}`: a runner archive.
    RunnerArchive {
        /// The release tag, `v` and the runner version.
        tag: String,
        /// The archive's file name.
        filename: String,
    },
    ListRunnerGroups,
    ListScaleSets,
    GetScaleSet(i64),
    CreateScaleSet,
    UpdateScaleSet(i64),
    DeleteScaleSet(i64),
    CreateSession(i64),
    RefreshSession(i64, String),
    DeleteSession(i64, String),
    GetMessage,
    DeleteMessage(i64),
    AcquirableJobs(i64),
    AcquireJobs(i64),
    GenerateJitConfig(i64),
    GetAgent(i64),
    ListAgents,
    DeleteAgent(i64),
    /// Anything under `/_sim/`: the rest of the path after the prefix.
    Control(String),
    /// No such route.
    NotFound,
}

impl Endpoint {
    /// The endpoint's stable name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::InstallationToken(_) => "installation_token",
            Self::RegistrationToken(_) => "registration_token",
            Self::RunnerRegistration => "runner_registration",
            Self::RunnerDownloads(_) => "runner_downloads",
            Self::RestRunnerGroups(_) => "rest_runner_groups",
            Self::RateLimit => "rate_limit",
            Self::RunnerArchive { .. } => "runner_archive",
            Self::ListRunnerGroups => "list_runner_groups",
            Self::ListScaleSets => "list_scale_sets",
            Self::GetScaleSet(_) => "get_scale_set",
            Self::CreateScaleSet => "create_scale_set",
            Self::UpdateScaleSet(_) => "update_scale_set",
            Self::DeleteScaleSet(_) => "delete_scale_set",
            Self::CreateSession(_) => "create_session",
            Self::RefreshSession(..) => "refresh_session",
            Self::DeleteSession(..) => "delete_session",
            Self::GetMessage => "get_message",
            Self::DeleteMessage(_) => "delete_message",
            Self::AcquirableJobs(_) => "acquirable_jobs",
            Self::AcquireJobs(_) => "acquire_jobs",
            Self::GenerateJitConfig(_) => "generate_jit_config",
            Self::GetAgent(_) => "get_agent",
            Self::ListAgents => "list_agents",
            Self::DeleteAgent(_) => "delete_agent",
            Self::Control(_) => "control",
            Self::NotFound => "not_found",
        }
    }

    /// Whether this is a GitHub REST call (counted against the simulated REST rate limit and
    /// answered with `x-ratelimit-*` headers).
    pub(crate) fn is_rest(&self) -> bool {
        matches!(
            self,
            Self::InstallationToken(_)
                | Self::RegistrationToken(_)
                | Self::RunnerRegistration
                | Self::RunnerDownloads(_)
                | Self::RestRunnerGroups(_)
                | Self::RateLimit
        )
    }

    /// Whether this is one of the REST token-chain calls a controller makes to reach the
    /// Actions service (installation token, registration token, runner-registration).
    pub(crate) fn is_token_chain(&self) -> bool {
        matches!(
            self,
            Self::InstallationToken(_) | Self::RegistrationToken(_) | Self::RunnerRegistration
        )
    }
}

/// Where the routes are mounted.
#[derive(Debug, Clone)]
pub(crate) struct Mounts {
    /// Actions base path, with leading and trailing slash.
    pub(crate) actions_base: String,
    /// Queue path, with a leading slash and no trailing slash.
    pub(crate) queue: String,
}

/// `path` with every run of slashes collapsed into one, as github.com normalises request paths
/// (one older client builds its acquire URL with `//`).
pub(crate) fn collapse_slashes(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains("//") {
        return std::borrow::Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

/// Resolves `method path` to an endpoint. Repeated slashes in `path` are collapsed first.
pub(crate) fn route(method: &Method, path: &str, mounts: &Mounts) -> Endpoint {
    let path = collapse_slashes(path);
    let path = path.as_ref();
    if let Some(rest) = path.strip_prefix("/_sim/") {
        return Endpoint::Control(rest.to_owned());
    }
    if let Some(rest) = path.strip_prefix("/api/v3/") {
        return rest_route(method, rest);
    }
    // GARM derives the registration URL from a GHES base without `/api/v3`; the reference
    // leaves open which path a real GHES answers, so both are served.
    if method == Method::POST && path.trim_end_matches('/') == "/actions/runner-registration" {
        return Endpoint::RunnerRegistration;
    }
    if let Some(rest) = path.strip_prefix("/actions/runner/releases/download/") {
        return match (method, rest.split('/').collect::<Vec<_>>().as_slice()) {
            (&Method::GET, [tag, filename]) if !tag.is_empty() && !filename.is_empty() => {
                Endpoint::RunnerArchive {
                    tag: (*tag).to_owned(),
                    filename: (*filename).to_owned(),
                }
            }
            _ => Endpoint::NotFound,
        };
    }
    if path == mounts.queue {
        return if method == Method::GET {
            Endpoint::GetMessage
        } else {
            Endpoint::NotFound
        };
    }
    if let Some(rest) = path
        .strip_prefix(mounts.queue.as_str())
        .and_then(|r| r.strip_prefix('/'))
    {
        return match (method, rest.parse::<i64>()) {
            (&Method::DELETE, Ok(id)) => Endpoint::DeleteMessage(id),
            _ => Endpoint::NotFound,
        };
    }
    if let Some(rest) = path.strip_prefix(mounts.actions_base.as_str()) {
        return actions_route(method, rest);
    }
    Endpoint::NotFound
}

fn rest_route(method: &Method, rest: &str) -> Endpoint {
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    if method == Method::GET {
        return match segs.as_slice() {
            ["rate_limit"] => Endpoint::RateLimit,
            // Runner groups are an organization's or an enterprise's; a repository has none.
            ["orgs", org, "actions", "runner-groups"] => {
                Endpoint::RestRunnerGroups((*org).to_owned())
            }
            ["enterprises", ent, "actions", "runner-groups"] => {
                Endpoint::RestRunnerGroups(format!("enterprises/{ent}"))
            }
            _ => match runner_scope(&segs, "downloads") {
                Some(scope) => Endpoint::RunnerDownloads(scope),
                None => Endpoint::NotFound,
            },
        };
    }
    if method != Method::POST {
        return Endpoint::NotFound;
    }
    match segs.as_slice() {
        ["app", "installations", id, "access_tokens"] => id
            .parse()
            .map_or(Endpoint::NotFound, Endpoint::InstallationToken),
        ["actions", "runner-registration"] => Endpoint::RunnerRegistration,
        _ => runner_scope(&segs, "registration-token")
            .map_or(Endpoint::NotFound, Endpoint::RegistrationToken),
    }
}

/// The scope path of `{repos/{o}/{r}|orgs/{o}|enterprises/{e}}/actions/runners/{leaf}`.
fn runner_scope(segs: &[&str], leaf: &str) -> Option<String> {
    let (scope, tail) = match segs {
        ["repos", owner, repo, tail @ ..] => (format!("{owner}/{repo}"), tail),
        ["orgs", org, tail @ ..] => ((*org).to_owned(), tail),
        ["enterprises", ent, tail @ ..] => (format!("enterprises/{ent}"), tail),
        _ => return None,
    };
    (tail == ["actions", "runners", leaf]).then_some(scope)
}

fn actions_route(method: &Method, rest: &str) -> Endpoint {
    let segs: Vec<&str> = rest.split('/').collect();
    let id = |s: &str| s.parse::<i64>().ok();
    match (method, segs.as_slice()) {
        (
            &Method::GET,
            ["_apis", "runtime", "runnergroups"] | ["_apis", "runtime", "runnergroups", ""],
        ) => Endpoint::ListRunnerGroups,
        (&Method::GET, ["_apis", "runtime", "runnerscalesets"]) => Endpoint::ListScaleSets,
        (&Method::POST, ["_apis", "runtime", "runnerscalesets"]) => Endpoint::CreateScaleSet,
        (_, ["_apis", "runtime", "runnerscalesets", s, tail @ ..]) => {
            let Some(s) = id(s) else {
                return Endpoint::NotFound;
            };
            match (method, tail) {
                (&Method::GET, []) => Endpoint::GetScaleSet(s),
                (&Method::PATCH, []) => Endpoint::UpdateScaleSet(s),
                (&Method::DELETE, []) => Endpoint::DeleteScaleSet(s),
                (&Method::POST, ["sessions"]) => Endpoint::CreateSession(s),
                (&Method::PATCH, ["sessions", sid]) => {
                    Endpoint::RefreshSession(s, (*sid).to_owned())
                }
                (&Method::DELETE, ["sessions", sid]) => {
                    Endpoint::DeleteSession(s, (*sid).to_owned())
                }
                (&Method::GET, ["acquirablejobs"]) => Endpoint::AcquirableJobs(s),
                (&Method::POST, ["acquirejobs"]) => Endpoint::AcquireJobs(s),
                (&Method::POST, ["generatejitconfig"]) => Endpoint::GenerateJitConfig(s),
                _ => Endpoint::NotFound,
            }
        }
        (&Method::GET, ["_apis", "distributedtask", "pools", "0", "agents"]) => {
            Endpoint::ListAgents
        }
        (&Method::GET, ["_apis", "distributedtask", "pools", "0", "agents", r]) => {
            id(r).map_or(Endpoint::NotFound, Endpoint::GetAgent)
        }
        (&Method::DELETE, ["_apis", "distributedtask", "pools", "0", "agents", r]) => {
            id(r).map_or(Endpoint::NotFound, Endpoint::DeleteAgent)
        }
        _ => Endpoint::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Mounts {
        Mounts {
            actions_base: "/tenant/1/".to_owned(),
            queue: "/scalesets/message".to_owned(),
        }
    }

    #[test]
    fn routes_every_endpoint() {
        let m = mounts();
        let cases = [
            (
                Method::POST,
                "/api/v3/app/installations/7/access_tokens",
                Endpoint::InstallationToken(7),
            ),
            (
                Method::POST,
                "/api/v3/orgs/acme/actions/runners/registration-token",
                Endpoint::RegistrationToken("acme".to_owned()),
            ),
            (
                Method::POST,
                "/api/v3/repos/acme/w/actions/runners/registration-token",
                Endpoint::RegistrationToken("acme/w".to_owned()),
            ),
            (
                Method::POST,
                "/api/v3/enterprises/big/actions/runners/registration-token",
                Endpoint::RegistrationToken("enterprises/big".to_owned()),
            ),
            (
                Method::POST,
                "/api/v3/actions/runner-registration",
                Endpoint::RunnerRegistration,
            ),
            (
                Method::POST,
                "/actions/runner-registration",
                Endpoint::RunnerRegistration,
            ),
            (
                Method::GET,
                "/actions/runner-registration",
                Endpoint::NotFound,
            ),
            (Method::GET, "/api/v3/rate_limit", Endpoint::RateLimit),
            (Method::POST, "/api/v3/rate_limit", Endpoint::NotFound),
            (
                Method::GET,
                "/api/v3/orgs/acme/actions/runner-groups",
                Endpoint::RestRunnerGroups("acme".to_owned()),
            ),
            (
                Method::GET,
                "/api/v3/enterprises/big/actions/runner-groups/",
                Endpoint::RestRunnerGroups("enterprises/big".to_owned()),
            ),
            (
                Method::GET,
                "/api/v3/repos/acme/w/actions/runner-groups",
                Endpoint::NotFound,
            ),
            (
                Method::POST,
                "/api/v3/orgs/acme/actions/runner-groups",
                Endpoint::NotFound,
            ),
            (
                Method::GET,
                "/api/v3/orgs/acme/actions/runners/downloads",
                Endpoint::RunnerDownloads("acme".to_owned()),
            ),
            (
                Method::GET,
                "/api/v3/repos/acme/w/actions/runners/downloads",
                Endpoint::RunnerDownloads("acme/w".to_owned()),
            ),
            (
                Method::GET,
                "/api/v3/enterprises/big/actions/runners/downloads",
                Endpoint::RunnerDownloads("enterprises/big".to_owned()),
            ),
            (
                Method::POST,
                "/api/v3/orgs/acme/actions/runners/downloads",
                Endpoint::NotFound,
            ),
            (
                Method::GET,
                "/api/v3/orgs/acme/actions/runners/registration-token",
                Endpoint::NotFound,
            ),
            (
                Method::GET,
                "/actions/runner/releases/download/v2.330.0/actions-runner-linux-x64-2.330.0.tar.gz",
                Endpoint::RunnerArchive {
                    tag: "v2.330.0".to_owned(),
                    filename: "actions-runner-linux-x64-2.330.0.tar.gz".to_owned(),
                },
            ),
            (
                Method::GET,
                "/actions/runner/releases/download/v2.330.0/",
                Endpoint::NotFound,
            ),
            // Repeated slashes are collapsed before routing, as github.com does.
            (
                Method::POST,
                "/tenant/1//_apis/runtime/runnerscalesets/3//acquirejobs",
                Endpoint::AcquireJobs(3),
            ),
            (
                Method::POST,
                "//api/v3//orgs/acme/actions/runners/registration-token",
                Endpoint::RegistrationToken("acme".to_owned()),
            ),
            (Method::GET, "/scalesets//message", Endpoint::GetMessage),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnergroups/",
                Endpoint::ListRunnerGroups,
            ),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnergroups",
                Endpoint::ListRunnerGroups,
            ),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnerscalesets",
                Endpoint::ListScaleSets,
            ),
            (
                Method::POST,
                "/tenant/1/_apis/runtime/runnerscalesets",
                Endpoint::CreateScaleSet,
            ),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnerscalesets/3",
                Endpoint::GetScaleSet(3),
            ),
            (
                Method::PATCH,
                "/tenant/1/_apis/runtime/runnerscalesets/3",
                Endpoint::UpdateScaleSet(3),
            ),
            (
                Method::DELETE,
                "/tenant/1/_apis/runtime/runnerscalesets/3",
                Endpoint::DeleteScaleSet(3),
            ),
            (
                Method::POST,
                "/tenant/1/_apis/runtime/runnerscalesets/3/sessions",
                Endpoint::CreateSession(3),
            ),
            (
                Method::PATCH,
                "/tenant/1/_apis/runtime/runnerscalesets/3/sessions/x",
                Endpoint::RefreshSession(3, "x".to_owned()),
            ),
            (
                Method::DELETE,
                "/tenant/1/_apis/runtime/runnerscalesets/3/sessions/x",
                Endpoint::DeleteSession(3, "x".to_owned()),
            ),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnerscalesets/3/acquirablejobs",
                Endpoint::AcquirableJobs(3),
            ),
            (
                Method::POST,
                "/tenant/1/_apis/runtime/runnerscalesets/3/acquirejobs",
                Endpoint::AcquireJobs(3),
            ),
            (
                Method::POST,
                "/tenant/1/_apis/runtime/runnerscalesets/3/generatejitconfig",
                Endpoint::GenerateJitConfig(3),
            ),
            (
                Method::GET,
                "/tenant/1/_apis/distributedtask/pools/0/agents",
                Endpoint::ListAgents,
            ),
            (
                Method::GET,
                "/tenant/1/_apis/distributedtask/pools/0/agents/9",
                Endpoint::GetAgent(9),
            ),
            (
                Method::DELETE,
                "/tenant/1/_apis/distributedtask/pools/0/agents/9",
                Endpoint::DeleteAgent(9),
            ),
            (Method::GET, "/scalesets/message", Endpoint::GetMessage),
            (
                Method::DELETE,
                "/scalesets/message/12",
                Endpoint::DeleteMessage(12),
            ),
            (
                Method::GET,
                "/_sim/state",
                Endpoint::Control("state".to_owned()),
            ),
            (Method::GET, "/tenant/1/_apis/other", Endpoint::NotFound),
            (
                Method::GET,
                "/tenant/1/_apis/runtime/runnerscalesets/abc",
                Endpoint::NotFound,
            ),
        ];
        for (method, path, want) in cases {
            assert_eq!(route(&method, path, &m), want, "{method} {path}");
        }
    }
}
