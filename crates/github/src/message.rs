//! The message queue: [`Message`] and [`JobMessage`] decoding (the double-encoded `body`,
//! unknown job types skipped and counted) and endpoints 10-11 of protocol §5.

use http::{HeaderValue, Method};
use serde::Deserialize;

use crate::call::{Auth, Call, Expect, Target, set_form_query};
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::id::{MessageId, RunnerId, RunnerRequestId};
use crate::lenient::{lenient_i64, lenient_timestamp, null_default};
use crate::session::Session;
use crate::statistics::Statistics;
use crate::timestamp::Timestamp;
use crate::wire::decode;

/// The only top-level message type the service sends today.
pub const JOB_MESSAGES_TYPE: &str = "RunnerScaleSetJobMessages";

/// A message from the queue (protocol §6.6).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Message {
    /// Message id; pass it as `last_message_id` on the next poll and to `delete_message`.
    pub message_id: MessageId,
    /// Top-level type, normally [`JOB_MESSAGES_TYPE`]. Other types carry no decoded jobs.
    pub message_type: String,
    /// Statistics at the time of the message.
    pub statistics: Option<Statistics>,
    /// The decoded job messages, in order.
    pub jobs: Vec<JobMessage>,
    /// Job messages skipped because their type is unknown or they did not decode.
    pub skipped_job_messages: usize,
    /// Set when the envelope (`messageId`, `messageType`) decoded but the rest did not: the
    /// decode error, with its causes. `jobs` and `statistics` are then empty; the caller
    /// decides whether to acknowledge the message by its id.
    pub undecodable: Option<String>,
}

/// Fields common to every job message (protocol §6.7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct JobInfo {
    /// The acquire key on GHES; 0 on the github.com broker.
    pub runner_request_id: RunnerRequestId,
    /// Opaque job id; key jobs by it when `runner_request_id` is 0.
    pub job_id: String,
    /// Repository name.
    pub repository_name: String,
    /// Repository owner.
    pub owner_name: String,
    /// `owner/repo/.github/workflows/x.yml@ref`.
    pub job_workflow_ref: String,
    /// Display name of the job.
    pub job_display_name: String,
    /// Workflow run id.
    pub workflow_run_id: i64,
    /// Triggering event (e.g. `push`).
    pub event_name: String,
    /// The job's `runs-on` labels.
    pub request_labels: Vec<String>,
    /// When the job was queued.
    pub queue_time: Option<Timestamp>,
    /// When the job was assigned to the scale set.
    pub scale_set_assign_time: Option<Timestamp>,
    /// When a runner was assigned.
    pub runner_assign_time: Option<Timestamp>,
    /// When the job finished.
    pub finish_time: Option<Timestamp>,
}

/// One job message from a message body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobMessage {
    /// `JobAvailable`: acquire it with `acquire_jobs` (GHES / available-acquire mode).
    Available {
        /// Common fields.
        job: JobInfo,
        /// `acquireJobUrl`.
        acquire_job_url: String,
    },
    /// `JobAssigned`: the job is assigned to this scale set.
    Assigned {
        /// Common fields.
        job: JobInfo,
    },
    /// `JobStarted`: a runner took the job.
    Started {
        /// Common fields.
        job: JobInfo,
        /// The runner's id.
        runner_id: RunnerId,
        /// The runner's name.
        runner_name: String,
    },
    /// `JobCompleted`: the job finished (or was cancelled before a runner took it).
    Completed {
        /// Common fields.
        job: JobInfo,
        /// `succeeded`, `failed`, `canceled`, … (open set).
        result: String,
        /// The runner's id (0 when no runner took the job).
        runner_id: RunnerId,
        /// The runner's name (empty when no runner took the job).
        runner_name: String,
    },
}

impl JobMessage {
    /// The common fields.
    pub fn job(&self) -> &JobInfo {
        match self {
            Self::Available { job, .. }
            | Self::Assigned { job }
            | Self::Started { job, .. }
            | Self::Completed { job, .. } => job,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageWire {
    #[serde(default)]
    message_id: MessageId,
    #[serde(default, deserialize_with = "null_default")]
    message_type: String,
    #[serde(default)]
    body: Option<serde_json::Value>,
    #[serde(default)]
    statistics: Option<Statistics>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobWire {
    #[serde(default, deserialize_with = "null_default")]
    message_type: String,
    #[serde(default)]
    runner_request_id: RunnerRequestId,
    #[serde(default, deserialize_with = "null_default")]
    job_id: String,
    #[serde(default, deserialize_with = "null_default")]
    repository_name: String,
    #[serde(default, deserialize_with = "null_default")]
    owner_name: String,
    #[serde(default, deserialize_with = "null_default")]
    job_workflow_ref: String,
    #[serde(default, deserialize_with = "null_default")]
    job_display_name: String,
    #[serde(default, deserialize_with = "lenient_i64")]
    workflow_run_id: i64,
    #[serde(default, deserialize_with = "null_default")]
    event_name: String,
    #[serde(default, deserialize_with = "null_default")]
    request_labels: Vec<String>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    queue_time: Option<Timestamp>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    scale_set_assign_time: Option<Timestamp>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    runner_assign_time: Option<Timestamp>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    finish_time: Option<Timestamp>,
    #[serde(default, deserialize_with = "null_default")]
    acquire_job_url: String,
    #[serde(default)]
    runner_id: RunnerId,
    #[serde(default, deserialize_with = "null_default")]
    runner_name: String,
    #[serde(default, deserialize_with = "null_default")]
    result: String,
}

impl JobWire {
    fn into_message(self) -> Option<JobMessage> {
        let job = JobInfo {
            runner_request_id: self.runner_request_id,
            job_id: self.job_id,
            repository_name: self.repository_name,
            owner_name: self.owner_name,
            job_workflow_ref: self.job_workflow_ref,
            job_display_name: self.job_display_name,
            workflow_run_id: self.workflow_run_id,
            event_name: self.event_name,
            request_labels: self.request_labels,
            queue_time: self.queue_time,
            scale_set_assign_time: self.scale_set_assign_time,
            runner_assign_time: self.runner_assign_time,
            finish_time: self.finish_time,
        };
        Some(match self.message_type.as_str() {
            "JobAvailable" => JobMessage::Available {
                job,
                acquire_job_url: self.acquire_job_url,
            },
            "JobAssigned" => JobMessage::Assigned { job },
            "JobStarted" => JobMessage::Started {
                job,
                runner_id: self.runner_id,
                runner_name: self.runner_name,
            },
            "JobCompleted" => JobMessage::Completed {
                job,
                result: self.result,
                runner_id: self.runner_id,
                runner_name: self.runner_name,
            },
            _ => return None,
        })
    }
}

impl Message {
    /// Decodes a GET-message response body (BOM allowed). The `body` field may be a string
    /// holding a JSON array (the normal, double-encoded form), an array, empty or absent.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        Self::decode_with(Endpoint::GetMessage, 200, bytes)
    }

    fn decode_with(endpoint: Endpoint, status: u16, bytes: &[u8]) -> Result<Self> {
        let wire: MessageWire = decode(endpoint, status, bytes)?;
        let items = match wire.body {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::String(text)) if text.trim().is_empty() => Vec::new(),
            Some(serde_json::Value::String(text)) => {
                let inner = crate::error::strip_bom(text.trim().as_bytes());
                match serde_json::from_slice::<serde_json::Value>(inner) {
                    Ok(serde_json::Value::Array(items)) => items,
                    Ok(serde_json::Value::Null) => Vec::new(),
                    Ok(_) => {
                        return Err(Error::UnexpectedResponse {
                            endpoint,
                            status,
                            reason: "the message body is not a JSON array".to_owned(),
                        });
                    }
                    Err(source) => {
                        return Err(Error::Decode {
                            endpoint,
                            status,
                            source,
                        });
                    }
                }
            }
            Some(serde_json::Value::Array(items)) => items,
            Some(_) => {
                return Err(Error::UnexpectedResponse {
                    endpoint,
                    status,
                    reason: "the message body is neither a string nor an array".to_owned(),
                });
            }
        };
        let mut jobs = Vec::with_capacity(items.len());
        let mut skipped = 0usize;
        for item in items {
            match serde_json::from_value::<JobWire>(item)
                .ok()
                .and_then(JobWire::into_message)
            {
                Some(job) => jobs.push(job),
                None => skipped += 1,
            }
        }
        if skipped > 0 {
            tracing::debug!(
                message_id = wire.message_id.0,
                skipped,
                "skipped unknown job messages"
            );
        }
        Ok(Self {
            message_id: wire.message_id,
            message_type: wire.message_type,
            statistics: wire.statistics,
            jobs,
            skipped_job_messages: skipped,
            undecodable: None,
        })
    }

    /// The message of a body that failed to decode with `error`, when its envelope still
    /// names a message id (> 0): id and type kept, `undecodable` holding the error. `None`
    /// when no id can be read (nothing could acknowledge it).
    pub fn undecodable(bytes: &[u8], error: &Error) -> Option<Self> {
        let envelope: serde_json::Value =
            serde_json::from_slice(crate::error::strip_bom(bytes)).ok()?;
        let message_id: MessageId =
            serde_json::from_value(envelope.get("messageId")?.clone()).ok()?;
        if message_id.0 <= 0 {
            return None;
        }
        let message_type = envelope
            .get("messageType")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        Some(Self {
            message_id,
            message_type,
            undecodable: Some(text),
            ..Self::default()
        })
    }
}

impl Client {
    /// (10) Long-polls `GET {messageQueueUrl}[?lastMessageId=M]` with the queue token and
    /// `X-ScaleSetMaxCapacity`. `Ok(None)` on 202 (nothing within the server's hold). On 401 the
    /// session is refreshed once and the poll retried once; a second 401 is returned
    /// ([`Error::is_queue_token_expired`]). An empty 200 body is an error; a body whose
    /// envelope names a message id but whose rest does not decode is answered as that message
    /// with [`Message::undecodable`] set.
    pub async fn get_message(
        &self,
        session: &mut Session,
        last_message_id: MessageId,
        max_capacity: u32,
    ) -> Result<Option<Message>> {
        let endpoint = Endpoint::GetMessage;
        let response = self
            .execute_queue(session, |session| {
                let mut url = session.queue_url(endpoint)?;
                if last_message_id.0 > 0 {
                    let mut pairs: Vec<(String, String)> = url
                        .query_pairs()
                        .filter(|(k, _)| k != "lastMessageId")
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    pairs.push(("lastMessageId".to_owned(), last_message_id.to_string()));
                    set_form_query(&mut url, &pairs);
                }
                Ok(Call {
                    endpoint,
                    method: Method::GET,
                    target: Target::Absolute(url),
                    auth: Auth::Bearer(session.message_queue_access_token.clone()),
                    headers: vec![
                        (
                            "accept",
                            HeaderValue::from_static("application/json; api-version=6.0-preview"),
                        ),
                        ("x-scalesetmaxcapacity", HeaderValue::from(max_capacity)),
                    ],
                    content_type: None,
                    body: None,
                    expect: Expect::Status(&[200, 202]),
                    long_poll: true,
                    also_retry: &[],
                })
            })
            .await?;
        if response.status == 202 {
            return Ok(None);
        }
        match Message::decode_with(endpoint, response.status, &response.body) {
            Ok(message) => Ok(Some(message)),
            Err(error) => {
                Message::undecodable(&response.body, &error).map_or(Err(error), |m| Ok(Some(m)))
            }
        }
    }

    /// (11) `DELETE {messageQueueUrl path}/{messageId}` (query kept) with the queue token;
    /// expects 204. Refreshes the session once on 401 like [`Client::get_message`].
    pub async fn delete_message(&self, session: &mut Session, message_id: MessageId) -> Result<()> {
        let endpoint = Endpoint::DeleteMessage;
        self.execute_queue(session, |session| {
            let mut url = session.queue_url(endpoint)?;
            let path = format!("{}/{message_id}", url.path().trim_end_matches('/'));
            url.set_path(&path);
            Ok(Call {
                endpoint,
                method: Method::DELETE,
                target: Target::Absolute(url),
                auth: Auth::Bearer(session.message_queue_access_token.clone()),
                headers: Vec::new(),
                content_type: Some("application/json"),
                body: None,
                expect: Expect::Status(&[204]),
                long_poll: false,
                also_retry: &[],
            })
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
