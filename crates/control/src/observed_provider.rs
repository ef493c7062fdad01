//! [`ObservedProvider`]: a provider whose every call is counted and timed in [`Metrics`] by
//! command, so providers (in-process or external executables) need not count themselves.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use scaleset_provider::{
    CreateRequest, Error, InstanceId, Pool, PoolKey, Provider, ProviderInstance,
};

use crate::metrics::Metrics;

/// A provider reporting its calls to the controller's metrics under its configured name.
pub(crate) struct ObservedProvider {
    name: String,
    inner: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
}

impl ObservedProvider {
    /// Wraps `inner`, and exports its series at 0.
    pub(crate) fn new(name: &str, inner: Arc<dyn Provider>, metrics: &Arc<Metrics>) -> Self {
        metrics.provider_known(name);
        Self {
            name: name.to_owned(),
            inner,
            metrics: Arc::clone(metrics),
        }
    }

    async fn timed<T>(
        &self,
        command: &str,
        call: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let started = tokio::time::Instant::now();
        let result = call.await;
        let took: Duration = started.elapsed();
        self.metrics
            .provider_call(&self.name, command, result.is_err(), took);
        result
    }
}

#[async_trait]
impl Provider for ObservedProvider {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        self.timed("create", self.inner.create(request)).await
    }

    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.timed("delete", self.inner.delete(pool, instance))
            .await
    }

    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        self.timed("get", self.inner.get(pool, instance)).await
    }

    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        self.timed("list", self.inner.list(pool)).await
    }

    async fn remove_all(&self) -> Result<(), Error> {
        self.timed("remove_all", self.inner.remove_all()).await
    }

    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        self.timed("pools", self.inner.pools()).await
    }

    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.timed("start", self.inner.start(pool, instance)).await
    }

    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.timed("stop", self.inner.stop(pool, instance)).await
    }

    async fn version(&self) -> Result<String, Error> {
        self.timed("version", self.inner.version()).await
    }
}
