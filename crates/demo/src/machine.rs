//! The fake cloud's machines booting their runners in the in-process simulator. Given a
//! metadata URL (the controller's `instance_api_url` is set), a machine boots as GARM's
//! provider images do: it reports `installing`, fetches its JIT files from the server's
//! metadata endpoints with its instance token, starts the runner, reports its system info and
//! then `idle` with the runner's agent id. Without one, it starts the runner from the JIT
//! config the provider was handed.

use std::collections::BTreeMap;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use scaleset_provider::{Boot, BootInstance};
use scaleset_sim::Simulator;

/// The files of a JIT config, as the metadata endpoints serve them (without their dot).
const JIT_FILES: [&str; 3] = ["runner", "credentials", "credentials_rsaparams"];

/// Boots a fake machine's runner in the in-process simulator.
pub(crate) struct SimBoot {
    sim: Simulator,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl SimBoot {
    pub(crate) fn new(sim: Simulator) -> Self {
        Self {
            sim,
            http: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// One request with the instance token; the body of a 2xx answer, or why not.
    async fn call(
        &self,
        method: http::Method,
        url: &str,
        token: &str,
        body: Option<String>,
    ) -> Result<Bytes, CallError> {
        let mut request = http::Request::builder()
            .method(method)
            .uri(url)
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json");
        if body.is_some() {
            // As GARM's scripts send it (`curl -d`).
            request = request.header("content-type", "application/x-www-form-urlencoded");
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|source| CallError::Build {
                url: url.to_owned(),
                source,
            })?;
        let response =
            self.http
                .request(request)
                .await
                .map_err(|source| CallError::Unreachable {
                    url: url.to_owned(),
                    source,
                })?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| CallError::Read {
                url: url.to_owned(),
                source: e.into(),
            })?
            .to_bytes();
        if status.is_success() {
            Ok(bytes)
        } else {
            Err(CallError::Status {
                url: url.to_owned(),
                status,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            })
        }
    }

    /// Fetches the JIT files and encodes them as GitHub does.
    async fn fetch_jit_config(&self, instance: &BootInstance<'_>) -> Result<String, CallError> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let base = instance.metadata_url.trim_end_matches('/');
        let mut files = BTreeMap::new();
        for file in JIT_FILES {
            let url = format!("{base}/credentials/{file}/");
            let contents = self
                .call(http::Method::GET, &url, instance.instance_token, None)
                .await?;
            files.insert(format!(".{file}"), b64.encode(contents));
        }
        let json = serde_json::to_vec(&files).map_err(CallError::Encode)?;
        Ok(b64.encode(json))
    }

    /// Reports to the callback URL; a failed report is logged, not fatal (GARM's scripts do
    /// the same: `|| echo "failed to call home"`).
    async fn report(&self, instance: &BootInstance<'_>, url: &str, body: serde_json::Value) {
        if url.is_empty() {
            return;
        }
        if let Err(e) = self
            .call(
                http::Method::POST,
                url,
                instance.instance_token,
                Some(body.to_string()),
            )
            .await
        {
            let reason = scaleset_store::chain(&e);
            tracing::warn!(runner = %instance.name, %reason, "fake machine could not call home");
        }
    }
}

/// Why a fake machine's call to the server failed (tried again at the next look).
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// The request could not be built.
    #[error("cannot build a request to {url}")]
    Build {
        /// The URL.
        url: String,
        /// The builder's error.
        #[source]
        source: http::Error,
    },
    /// The server could not be reached.
    #[error("{url} is unreachable")]
    Unreachable {
        /// The URL.
        url: String,
        /// The client's error.
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// The answer could not be read.
    #[error("reading the answer of {url}")]
    Read {
        /// The URL.
        url: String,
        /// The body's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server answered an error.
    #[error("{url} answered {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: http::StatusCode,
        /// The body, as text.
        body: String,
    },
    /// The JIT files could not be encoded.
    #[error("cannot encode the JIT files")]
    Encode(#[source] serde_json::Error),
}

#[async_trait]
impl Boot for SimBoot {
    async fn boot(&self, instance: &BootInstance<'_>) -> bool {
        let status_url = instance.callback_url.to_owned();
        let system_info_url = match status_url.trim_end_matches('/').strip_suffix("/status") {
            Some(base) => format!("{base}/system-info/"),
            None => String::new(),
        };
        let jit = if instance.metadata_url.is_empty() {
            match instance.jit_config {
                Some(jit) => jit.to_owned(),
                None => return true,
            }
        } else {
            self.report(
                instance,
                &status_url,
                serde_json::json!({"status": "installing", "message": "fetching the JIT config"}),
            )
            .await;
            match self.fetch_jit_config(instance).await {
                Ok(jit) => jit,
                Err(e) => {
                    // Tried again at the next look, until the bootstrap deadline removes it.
                    let reason = scaleset_store::chain(&e);
                    tracing::warn!(runner = %instance.name, %reason, "fake machine could not fetch its JIT config");
                    return false;
                }
            }
        };
        match self.sim.start_runner(&jit) {
            Ok(agent_id) => {
                self.report(
                    instance,
                    &system_info_url,
                    serde_json::json!({"os_name": "scaleset-demo", "os_version": "1", "agent_id": agent_id}),
                )
                .await;
                self.report(
                    instance,
                    &status_url,
                    serde_json::json!({"status": "idle", "message": "runner started", "agent_id": agent_id}),
                )
                .await;
                true
            }
            // Started already: the boot is done with.
            Err(scaleset_sim::Error::Conflict { .. }) => true,
            Err(e) => {
                // A machine whose runner never starts: the bootstrap deadline removes it.
                tracing::warn!(runner = %instance.name, error = %e, "fake machine did not boot its runner");
                false
            }
        }
    }
}
