//! Fault injection: the misbehaviours of GitHub that clients must survive, each switchable at run
//! time through [`crate::Simulator::set_faults`] or `PUT /_sim/faults`.
//!
//! Counted faults (`remaining`) disarm themselves after firing that many times.

use serde::{Deserialize, Serialize};

/// Every fault the simulator can inject. The default injects none. Serialised in camelCase for
/// the control API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Faults {
    /// Omit `runnerGroupId` (and `runnerGroupName`) from items of scale-set lists filtered by
    /// group.
    pub omit_runner_group_id: bool,
    /// Ignore the `name` filter of the scale-set list: the whole group is returned.
    pub ignore_name_filter: bool,
    /// Wrap every Actions-service exception inside another error.
    pub nested_exceptions: Option<NestedStyle>,
    /// Prefix every JSON response body with a UTF-8 byte-order mark.
    pub bom: bool,
    /// Send Actions-service errors as `text/plain` (the message only) instead of JSON.
    pub text_plain_errors: bool,
    /// Answer the next requests with a server error, without acting on them.
    pub server_errors: Option<Burst>,
    /// Answer the next requests with 429 and a `Retry-After` header, without acting on them.
    pub rate_limit: Option<RateLimit>,
    /// Answer the next REST token-chain calls (installation token, registration token,
    /// runner-registration) with one of GitHub's REST rate-limit answers, without acting on
    /// them; `GET /api/v3/rate_limit` reports the quota exhausted while it is armed.
    pub rest_rate_limit: Option<RestRateLimit>,
    /// Act on the next POSTs (commit), then answer them with a server error.
    pub commit_then_fail: Option<Burst>,
    /// Before the next scale-set create, a competitor creates a scale set with the same name in
    /// the same group (so the create meets `RunnerScaleSetExistsException`).
    pub race_create: Option<RaceCreate>,
    /// Sessions are created and refreshed with an empty `messageQueueUrl`.
    pub empty_message_queue_url: bool,
    /// The next this-many message GETs answer 200 with an empty body.
    pub empty_message_body: u32,
    /// The next this-many messages delivered carry a `body` that does not decode (their
    /// `messageId` and `messageType` are intact), on every delivery until they are deleted.
    pub undecodable_messages: u32,
    /// The next this-many message GETs of a scale set that has had a message answer with the
    /// message delivered to it last, again, whatever `lastMessageId` says (as GitHub does when
    /// it lost an acknowledgement).
    pub redeliver_messages: u32,
    /// The next this-many `runner-registration` calls answer 401.
    pub runner_registration_unauthorized: u32,
    /// The next this-many message GETs that are held (nothing to deliver yet) close their
    /// connection gracefully mid-poll: HTTP/2 `GOAWAY` (HTTP/1.1: the connection closes after
    /// the answer); every poll held on that connection answers 202 at once, requests already
    /// sent on it are answered, and the client must carry on over a new connection.
    pub goaway: u32,
    /// Real-time delay added before every request is handled, in milliseconds.
    pub latency_ms: u64,
    /// `…/actions/runners/downloads` answers an empty list `[]` (an entity GitHub lists no
    /// runner downloads for): every provider built on garm-provider-common then refuses to create
    /// an instance ("failed to find tools for OS … and arch …").
    pub empty_runner_downloads: bool,
    /// `…/actions/runners/downloads` leaves out the downloads of these platforms, each
    /// `os/architecture` in GitHub's spelling (`linux/arm64`, `win/x64`): an entity GitHub
    /// builds the runner for only some platforms of.
    pub omit_runner_downloads: Vec<String>,
    /// Whether a 409 session conflict names the active session's owner (starts from
    /// [`crate::SimConfig::conflict_names_owner`]).
    pub conflict_names_owner: bool,
}

/// How a nested exception is wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NestedStyle {
    /// The real exception sits in the outer error's `innerException`.
    InnerException,
    /// The real exception's JSON document is the outer error's `message` string.
    Message,
}

/// A counted burst of error answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Burst {
    /// How many more requests get the error.
    pub remaining: u32,
    /// The status to answer (e.g. 500, 502, 503).
    pub status: u16,
    /// Only requests to this endpoint (its request-count name, e.g. `create_scale_set`); any
    /// endpoint when absent.
    #[serde(default)]
    pub endpoint: Option<String>,
}

impl Burst {
    /// `remaining` errors with `status` on any endpoint.
    pub fn new(remaining: u32, status: u16) -> Self {
        Self {
            remaining,
            status,
            endpoint: None,
        }
    }

    /// Restricts the burst to one endpoint.
    pub fn on(mut self, endpoint: &str) -> Self {
        self.endpoint = Some(endpoint.to_owned());
        self
    }
}

/// A counted burst of 429 answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// How many more requests get 429.
    pub remaining: u32,
    /// The `Retry-After` value in seconds.
    pub retry_after_secs: u64,
    /// Only requests to this endpoint; any endpoint when absent.
    #[serde(default)]
    pub endpoint: Option<String>,
}

impl RateLimit {
    /// `remaining` 429s carrying `Retry-After: retry_after_secs` on any endpoint.
    pub fn new(remaining: u32, retry_after_secs: u64) -> Self {
        Self {
            remaining,
            retry_after_secs,
            endpoint: None,
        }
    }

    /// Restricts the burst to one endpoint.
    pub fn on(mut self, endpoint: &str) -> Self {
        self.endpoint = Some(endpoint.to_owned());
        self
    }
}

/// How GitHub's REST API refuses a rate-limited call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RestRateLimitAnswer {
    /// 403 with `Retry-After` (a secondary rate limit).
    RetryAfter403,
    /// 429 with `Retry-After` (a secondary rate limit).
    RetryAfter429,
    /// 403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (the primary limit used up).
    RemainingZero403,
}

/// A counted burst of REST rate-limit answers on the token-chain calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestRateLimit {
    /// How many more token-chain calls are refused.
    pub remaining: u32,
    /// Which of GitHub's answers they get.
    pub answer: RestRateLimitAnswer,
    /// How long the client is told to wait, in seconds: the `Retry-After` value, or how far
    /// after the (simulated) time of the answer `x-ratelimit-reset` lies.
    pub wait_secs: u64,
    /// Only this token-chain endpoint (`installation_token`, `registration_token` or
    /// `runner_registration`); all three when absent. Other endpoints are never refused.
    #[serde(default)]
    pub endpoint: Option<String>,
}

impl RestRateLimit {
    /// `remaining` refusals of every token-chain call with `answer`, telling the client to wait
    /// `wait_secs`.
    pub fn new(remaining: u32, answer: RestRateLimitAnswer, wait_secs: u64) -> Self {
        Self {
            remaining,
            answer,
            wait_secs,
            endpoint: None,
        }
    }

    /// Restricts the refusals to one token-chain endpoint.
    pub fn on(mut self, endpoint: &str) -> Self {
        self.endpoint = Some(endpoint.to_owned());
        self
    }

    /// Whether it still refuses calls.
    pub(crate) fn armed(&self) -> bool {
        self.remaining > 0
    }
}

/// Takes one shot of a REST rate-limit burst that matches the token-chain `endpoint`.
pub(crate) fn take_rest_rate_limit(
    slot: &mut Option<RestRateLimit>,
    endpoint: &str,
) -> Option<(RestRateLimitAnswer, u64)> {
    let limit = slot.as_mut()?;
    if !limit.armed() {
        *slot = None;
        return None;
    }
    if limit.endpoint.as_deref().is_some_and(|e| e != endpoint) {
        return None;
    }
    let shot = (limit.answer, limit.wait_secs);
    limit.remaining -= 1;
    if !limit.armed() {
        *slot = None;
    }
    Some(shot)
}

/// The competitor of a racing create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RaceCreate {
    /// When set, the competitor also holds a session on its scale set under this owner name.
    #[serde(default)]
    pub owner_name: Option<String>,
}

impl RaceCreate {
    /// A competitor that holds a session under `owner`.
    pub fn with_owner(owner: &str) -> Self {
        Self {
            owner_name: Some(owner.to_owned()),
        }
    }
}

/// Takes one shot of a counted burst that matches `endpoint`; returns its status.
pub(crate) fn take_burst(slot: &mut Option<Burst>, endpoint: &str) -> Option<u16> {
    let burst = slot.as_mut()?;
    if burst.remaining == 0 {
        *slot = None;
        return None;
    }
    if burst.endpoint.as_deref().is_some_and(|e| e != endpoint) {
        return None;
    }
    let status = burst.status;
    burst.remaining = burst.remaining.saturating_sub(1);
    if burst.remaining == 0 {
        *slot = None;
    }
    Some(status)
}

/// Takes one shot of a 429 burst that matches `endpoint`; returns its `Retry-After` seconds.
pub(crate) fn take_rate_limit(slot: &mut Option<RateLimit>, endpoint: &str) -> Option<u64> {
    let limit = slot.as_mut()?;
    if limit.remaining == 0 {
        *slot = None;
        return None;
    }
    if limit.endpoint.as_deref().is_some_and(|e| e != endpoint) {
        return None;
    }
    let secs = limit.retry_after_secs;
    limit.remaining = limit.remaining.saturating_sub(1);
    if limit.remaining == 0 {
        *slot = None;
    }
    Some(secs)
}

/// Takes one shot of a counter fault.
pub(crate) fn take_count(counter: &mut u32) -> bool {
    if *counter == 0 {
        return false;
    }
    *counter -= 1;
    true
}
