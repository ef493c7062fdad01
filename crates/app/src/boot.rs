//! Booting the directory-backed fake provider's runners in a simulator over its control API
//! (`POST /_sim/runners` at `[fake] simulator_url`), for rehearsals of the worker against
//! `scaleset-sim`. The provider itself is `scaleset_provider::DirectoryProvider`.

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use scaleset_provider::{Boot, BootInstance};

/// Starts runners in the simulator at `base` over HTTP.
pub(crate) struct HttpBoot {
    base: url::Url,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl HttpBoot {
    pub(crate) fn new(base: url::Url) -> Self {
        Self {
            base,
            http: Client::builder(TokioExecutor::new()).build_http(),
        }
    }
}

#[async_trait]
impl Boot for HttpBoot {
    async fn boot(&self, instance: &BootInstance<'_>) -> bool {
        let name = instance.name;
        // This rehearsal boot is handed the JIT config; with none there is nothing to start.
        let Some(jit) = instance.jit_config else {
            return true;
        };
        let Ok(url) = self.base.join("_sim/runners") else {
            return true;
        };
        let body = serde_json::json!({ "jitConfig": jit }).to_string();
        let request = http::Request::post(url.as_str())
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)));
        let outcome = match request {
            Ok(request) => match self.http.request(request).await {
                Ok(response)
                    if response.status().is_success()
                        || response.status() == http::StatusCode::CONFLICT =>
                {
                    let _ = response.into_body().collect().await;
                    return true;
                }
                Ok(response) => format!("the simulator answered {}", response.status()),
                Err(e) => format!("the simulator is unreachable: {e}"),
            },
            Err(e) => format!("cannot build the request: {e}"),
        };
        // A machine whose boot failed: the bootstrap deadline removes it.
        tracing::warn!(runner = %name, reason = %outcome, "fake instance did not boot its runner");
        false
    }
}
