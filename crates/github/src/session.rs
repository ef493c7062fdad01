//! Message sessions: the [`Session`] type and endpoints 7-9 of protocol §5 (create, refresh,
//! delete), plus the refresh-once-on-401 rule for queue calls (protocol §3.7).

use http::Method;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::call::Call;
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::http::Incoming;
use crate::id::GithubScaleSetId;
use crate::lenient::null_default;
use crate::scale_set::RunnerScaleSet;
use crate::statistics::Statistics;
use crate::wire::decode;
use secrecy::{ExposeSecret, SecretString};

/// A message session of one scale set (protocol §6.4).
///
/// The queue calls take `&mut Session`: when the queue answers 401 they refresh the session
/// (replacing the token and possibly the queue URL in place) and retry once.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Session {
    /// Session id (a UUID string).
    #[serde(default, deserialize_with = "null_default")]
    pub session_id: String,
    /// The owner name given at creation.
    #[serde(default, deserialize_with = "null_default")]
    pub owner_name: String,
    /// The scale set (at least `id` and `name`).
    #[serde(default)]
    pub runner_scale_set: Option<RunnerScaleSet>,
    /// The absolute message-queue URL.
    #[serde(default, deserialize_with = "null_default")]
    pub message_queue_url: String,
    /// The message-queue bearer token.
    #[serde(default, deserialize_with = "null_default")]
    pub message_queue_access_token: SecretString,
    /// Statistics at session creation/refresh.
    #[serde(default)]
    pub statistics: Option<Statistics>,
    /// The scale set the session was created for (set by the client, not the wire).
    #[serde(skip)]
    pub(crate) scale_set_id: GithubScaleSetId,
}

impl Session {
    /// The scale-set id this session belongs to.
    pub fn scale_set_id(&self) -> GithubScaleSetId {
        if self.scale_set_id.0 != 0 {
            self.scale_set_id
        } else {
            self.runner_scale_set
                .as_ref()
                .map(|s| s.id)
                .unwrap_or_default()
        }
    }

    /// The parsed message-queue URL.
    pub(crate) fn queue_url(&self, endpoint: Endpoint) -> Result<Url> {
        Url::parse(self.message_queue_url.trim()).map_err(|_| Error::InvalidRequest {
            endpoint,
            reason: "the session has no valid message queue url; create a new session".to_owned(),
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateSessionRequest<'a> {
    owner_name: &'a str,
}

fn sessions_path(scale_set_id: GithubScaleSetId) -> String {
    format!("_apis/runtime/runnerscalesets/{scale_set_id}/sessions")
}

/// The path of one session. The session id comes from the server and is a UUID in practice,
/// but it is escaped as one path segment so that a `/`, `?` or `#` in it can never address
/// another resource.
fn session_path(scale_set_id: GithubScaleSetId, session_id: &str) -> String {
    /// Everything but RFC 3986 unreserved characters is escaped.
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    format!(
        "{}/{}",
        sessions_path(scale_set_id),
        percent_encoding::utf8_percent_encode(session_id, SEGMENT)
    )
}

impl Client {
    /// (7) `POST /_apis/runtime/runnerscalesets/{id}/sessions` with `{"ownerName": owner}`;
    /// expects 200.
    ///
    /// A session without a usable queue URL or token (seen during incidents) is still open on
    /// the server, and a retry would meet it as a session conflict on our own session. So the
    /// client deletes it by its id first and returns [`Error::UnexpectedResponse`] (retryable).
    /// When that delete fails too, the error is [`Error::UnusableSessionLeftOpen`], which names
    /// the session ([`Error::open_session`]) so the caller can delete it.
    pub async fn create_session(
        &self,
        scale_set_id: GithubScaleSetId,
        owner_name: &str,
    ) -> Result<Session> {
        let call = Call::service(
            Endpoint::CreateSession,
            Method::POST,
            sessions_path(scale_set_id),
            &[200],
        )
        .json(&CreateSessionRequest { owner_name })?;
        let response = self.execute(&call).await?;
        let session: Session = decode(call.endpoint, response.status, &response.body)?;
        let Err(unusable) = check_session(call.endpoint, response.status, &session) else {
            return Ok(Session {
                scale_set_id,
                ..session
            });
        };
        if session.session_id.trim().is_empty() {
            // Nothing names the session: there is nothing to delete.
            return Err(unusable);
        }
        tracing::warn!(
            scale_set_id = scale_set_id.0,
            session_id = %session.session_id,
            error = %unusable,
            "session create returned an unusable session; deleting it"
        );
        match self.delete_session(scale_set_id, &session.session_id).await {
            Ok(()) => Err(unusable),
            Err(cleanup) if cleanup.is_session_expired_or_unknown() => Err(unusable),
            Err(cleanup) => Err(Error::UnusableSessionLeftOpen {
                status: response.status,
                scale_set_id,
                session_id: session.session_id,
                reason: unusable_reason(unusable),
                cleanup: Box::new(cleanup),
            }),
        }
    }

    /// (8) `PATCH /_apis/runtime/runnerscalesets/{id}/sessions/{sessionId}`; expects 200 and
    /// returns the new session (same id, new queue token). An evicted session gives an error for
    /// which [`Error::is_session_expired_or_unknown`] is true.
    pub async fn refresh_session(&self, session: &Session) -> Result<Session> {
        let scale_set_id = session.scale_set_id();
        let call = Call::service(
            Endpoint::RefreshSession,
            Method::PATCH,
            session_path(scale_set_id, &session.session_id),
            &[200],
        );
        let response = self.execute(&call).await?;
        let mut refreshed = session_from(call.endpoint, scale_set_id, &response)?;
        if refreshed.session_id.is_empty() {
            refreshed.session_id = session.session_id.clone();
        }
        Ok(refreshed)
    }

    /// (9) `DELETE /_apis/runtime/runnerscalesets/{id}/sessions/{sessionId}`; expects 204.
    pub async fn delete_session(
        &self,
        scale_set_id: GithubScaleSetId,
        session_id: &str,
    ) -> Result<()> {
        let call = Call::service(
            Endpoint::DeleteSession,
            Method::DELETE,
            session_path(scale_set_id, session_id),
            &[204],
        );
        self.execute(&call).await?;
        Ok(())
    }

    /// Runs a queue call; on 401 refreshes the session once (replacing it) and retries once.
    pub(crate) async fn execute_queue(
        &self,
        session: &mut Session,
        build: impl Fn(&Session) -> Result<Call>,
    ) -> Result<Incoming> {
        let call = build(session)?;
        match self.execute(&call).await {
            Err(error) if error.service_error().is_some_and(|s| s.status == 401) => {
                tracing::debug!(endpoint = %call.endpoint, "queue token rejected, refreshing the session");
                // Boxed: the refresh (admin token and all) and the retried call are rare, so
                // their futures stay out of every waiting long-poll's.
                *session = Box::pin(self.refresh_session(session)).await?;
                let call = build(session)?;
                Box::pin(self.execute(&call)).await
            }
            other => other,
        }
    }
}

fn session_from(
    endpoint: Endpoint,
    scale_set_id: GithubScaleSetId,
    response: &Incoming,
) -> Result<Session> {
    let mut session: Session = decode(endpoint, response.status, &response.body)?;
    session.scale_set_id = scale_set_id;
    check_session(endpoint, response.status, &session)?;
    Ok(session)
}

/// The reason text of an [`Error::UnexpectedResponse`] (the only error `check_session` gives).
fn unusable_reason(error: Error) -> String {
    match error {
        Error::UnexpectedResponse { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// A session the queue calls can use: a valid queue URL and a token.
fn check_session(endpoint: Endpoint, status: u16, session: &Session) -> Result<()> {
    let unexpected = |reason: &str| Error::UnexpectedResponse {
        endpoint,
        status,
        reason: reason.to_owned(),
    };
    if session.message_queue_url.trim().is_empty() {
        return Err(unexpected("the session has an empty messageQueueUrl"));
    }
    if Url::parse(session.message_queue_url.trim()).is_err() {
        return Err(unexpected(
            "the session's messageQueueUrl is not a valid url",
        ));
    }
    if session
        .message_queue_access_token
        .expose_secret()
        .is_empty()
    {
        return Err(unexpected("the session has no messageQueueAccessToken"));
    }
    Ok(())
}
