//! The `Provider` trait: what scaleset asks of any compute provider.

use async_trait::async_trait;

use crate::bootstrap::CreateRequest;
use crate::error::Error;
use crate::instance::{InstanceId, ProviderInstance};
use crate::pool::{Pool, PoolKey};

/// A compute provider: creates, finds and removes the machines runners run on.
///
/// Contract, shared by every implementation:
/// - every instance is tagged with the controller ID and its pool key, so
///   [`Provider::list`] finds it again after a database loss;
/// - [`Provider::delete`] is idempotent: an instance that does not exist is
///   deleted successfully;
/// - a call may be cancelled by dropping its future; an external provider then
///   kills the executable's process group;
/// - errors are typed ([`Error`]); the caller decides whether to retry
///   ([`Error::is_retryable`]) and logs them, the provider does not.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Creates an instance from bootstrap parameters and returns the provider's
    /// view of it. [`Error::Duplicate`] if the name is taken; any other
    /// refusal (including an external provider's exit code 30, which LXD uses
    /// for a missing image or profile) is [`Error::Failed`] with its reason.
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error>;

    /// Deletes an instance; not found is success.
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error>;

    /// Describes one instance. [`Error::NotFound`] if it does not exist.
    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error>;

    /// Lists the instances tagged with the pool's key.
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error>;

    /// Removes every instance tagged with this controller's ID.
    async fn remove_all(&self) -> Result<(), Error>;

    /// The pool keys of this controller's instances (tagged with its ID), whatever the pool:
    /// what finds an instance again once its record and its scale set are both gone (a
    /// decommission). `None` when the provider cannot list across pools (the GARM executable
    /// protocol lists one pool at a time): callers say so rather than assume there is none.
    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        Ok(None)
    }

    /// Starts a stopped instance.
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error>;

    /// Stops a running instance.
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error>;

    /// The provider's version string, for display only.
    ///
    /// Not every provider implements `GetVersion` (older releases of the
    /// Kubernetes provider reject it), so a failure here means "version
    /// unknown", never "provider unhealthy": callers must not gate anything on
    /// it, and no other method of this crate calls it.
    async fn version(&self) -> Result<String, Error>;
}

/// A shared provider is a provider: [`crate::Limited`] can put an `Arc<dyn Provider>` (or one
/// a test keeps a handle on) under limits.
#[async_trait]
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        (**self).create(request).await
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        (**self).delete(pool, instance).await
    }
    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        (**self).get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        (**self).list(pool).await
    }
    async fn remove_all(&self) -> Result<(), Error> {
        (**self).remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        (**self).start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        (**self).stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, Error> {
        (**self).version().await
    }
    // Forwarded, not left to the default: a wrapper holding an `Arc<dyn Provider>` calls this
    // impl, and the default's `None` would hide the pools from a decommission.
    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        (**self).pools().await
    }
}
