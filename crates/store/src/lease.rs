//! The lease aggregate: which worker serves a scale set, with a fencing token that strictly
//! increases every time the lease changes hands (DESIGN §5).

use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::ScaleSetId;

/// Proof of holding a scale set's lease, as of when it was acquired or renewed. Only the
/// store makes one; fenced writes take it and fail with [`crate::Error::LeaseLost`] once its
/// token is no longer the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub(crate) scale_set_id: ScaleSetId,
    pub(crate) holder: String,
    pub(crate) token: i64,
    pub(crate) expires_at: Timestamp,
}

impl Lease {
    /// The scale set.
    pub fn scale_set_id(&self) -> ScaleSetId {
        self.scale_set_id
    }

    /// Who holds it.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The fencing token.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// When it expires unless renewed.
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }
}

/// The outcome of [`LeaseStore::acquire_lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquisition {
    /// The caller holds the lease.
    Acquired(Lease),
    /// Someone else holds an unexpired lease.
    Held {
        /// The current holder.
        holder: String,
        /// When their lease expires.
        expires_at: Timestamp,
    },
}

/// A lease as stored, for status displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The last holder.
    pub holder: String,
    /// The current fencing token.
    pub token: i64,
    /// When it expires (the epoch once released).
    pub expires_at: Timestamp,
}

/// An unexpired lease, as [`LeaseStore::live_leases`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLease {
    /// The scale set.
    pub scale_set_id: ScaleSetId,
    /// Who holds it.
    pub holder: String,
    /// When it expires unless renewed.
    pub expires_at: Timestamp,
}

/// Per-scale-set leases.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Takes the lease for `ttl` if it is free, expired, or already held by `holder`. A
    /// change of hands (including a re-acquire by the same holder after expiry or release)
    /// gets a strictly greater token; an unexpired re-acquire keeps it and extends expiry.
    async fn acquire_lease(
        &self,
        scale_set_id: ScaleSetId,
        holder: &str,
        ttl: Duration,
    ) -> Result<Acquisition>;

    /// Extends the lease by `ttl` from now, keeping the token. [`crate::Error::LeaseLost`] if
    /// it was taken over.
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease>;

    /// Renews several leases in one commit, each as [`LeaseStore::renew_lease`] would (fenced
    /// by its own holder and token, all to one expiry): one answer per lease, in order, a
    /// taken-over lease's answer being [`crate::Error::LeaseLost`]. An error of the backend
    /// fails the whole batch and renews none. A worker serving 10,000 scale sets renews 250
    /// leases a second; batched, that is a few commits a second instead of 250.
    async fn renew_leases(&self, leases: &[Lease], ttl: Duration) -> Result<Vec<Result<Lease>>>;

    /// Gives the lease up so another worker can take it at once. [`crate::Error::LeaseLost`]
    /// if it was taken over already.
    async fn release_lease(&self, lease: &Lease) -> Result<()>;

    /// Every lease that has not expired (nor been released), as of the store's clock; a scale
    /// set missing from the list is free to take.
    async fn live_leases(&self) -> Result<Vec<LiveLease>>;

    /// The lease as stored, if the scale set ever had one.
    async fn get_lease(&self, scale_set_id: ScaleSetId) -> Result<Option<LeaseRecord>>;

    /// Every lease row, held, expired or released, by scale set (one read: the API and the
    /// status page say who serves each scale set, and which lease is in doubt, from it).
    async fn leases(&self) -> Result<Vec<(ScaleSetId, LeaseRecord)>>;
}
