//! Jobs in the available→acquire flow: [`AcquirableJob`] and endpoints 12-13 of protocol §5.

use http::Method;
use serde::Deserialize;

use crate::call::{Auth, Call};
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::Result;
use crate::id::{GithubScaleSetId, RunnerRequestId};
use crate::lenient::null_default;
use crate::session::Session;
use crate::wire::{List, decode};

/// A job that can be acquired (protocol §6.9).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AcquirableJob {
    /// `acquireJobUrl`.
    #[serde(default, deserialize_with = "null_default")]
    pub acquire_job_url: String,
    /// `messageType`.
    #[serde(default, deserialize_with = "null_default")]
    pub message_type: String,
    /// The acquire key.
    #[serde(default)]
    pub runner_request_id: RunnerRequestId,
    /// Repository name.
    #[serde(default, deserialize_with = "null_default")]
    pub repository_name: String,
    /// Repository owner.
    #[serde(default, deserialize_with = "null_default")]
    pub owner_name: String,
    /// Workflow reference.
    #[serde(default, deserialize_with = "null_default")]
    pub job_workflow_ref: String,
    /// Triggering event.
    #[serde(default, deserialize_with = "null_default")]
    pub event_name: String,
    /// The job's labels.
    #[serde(default, deserialize_with = "null_default")]
    pub request_labels: Vec<String>,
}

impl Client {
    /// (12) `GET /_apis/runtime/runnerscalesets/{id}/acquirablejobs`; 204 means none.
    pub async fn get_acquirable_jobs(
        &self,
        scale_set_id: GithubScaleSetId,
    ) -> Result<Vec<AcquirableJob>> {
        let call = Call::service(
            Endpoint::GetAcquirableJobs,
            Method::GET,
            format!("_apis/runtime/runnerscalesets/{scale_set_id}/acquirablejobs"),
            &[200, 204],
        );
        let response = self.execute(&call).await?;
        if response.status == 204 {
            return Ok(Vec::new());
        }
        let list: List<AcquirableJob> = decode(call.endpoint, response.status, &response.body)?;
        Ok(list.value)
    }

    /// (13) `POST /_apis/runtime/runnerscalesets/{id}/acquirejobs` with the session's queue
    /// token and a JSON array of `runnerRequestId`s; returns the ids actually acquired.
    /// Refreshes the session once on 401.
    pub async fn acquire_jobs(
        &self,
        session: &mut Session,
        runner_request_ids: &[RunnerRequestId],
    ) -> Result<Vec<RunnerRequestId>> {
        let endpoint = Endpoint::AcquireJobs;
        let response = self
            .execute_queue(session, |session| {
                let mut call = Call::service(
                    endpoint,
                    Method::POST,
                    format!(
                        "_apis/runtime/runnerscalesets/{}/acquirejobs",
                        session.scale_set_id()
                    ),
                    &[200],
                )
                .json(runner_request_ids)?;
                call.auth = Auth::Bearer(session.message_queue_access_token.clone());
                Ok(call)
            })
            .await?;
        let list: List<RunnerRequestId> = decode(endpoint, response.status, &response.body)?;
        Ok(list.value)
    }
}
