//! Storage for scaleset: what the controller knows about its credentials, entities, scale
//! sets, instances, leases, the live workers, events and API tokens, behind one async trait per aggregate, with
//! one diesel implementation over SQLite (the embedded default) and PostgreSQL (several
//! worker processes sharing one database).
//!
//! What it guarantees: unique `(entity, runner group, name)` enforced by the database;
//! optimistic concurrency on scale sets ([`Error::Stale`]); per-scale-set leases whose
//! fencing token strictly increases on every change of hands, and fenced writes that fail
//! with [`Error::LeaseLost`] once a lease was taken over; secrets sealed with AES-256-GCM
//! before they reach the database, with a key id beside each ciphertext so keys can rotate;
//! API tokens stored only as SHA-256 hashes; a refusal to run against another controller's
//! database ([`Error::ControllerMismatch`]). Rows this version cannot read give
//! [`Error::Corrupt`], never a panic.
//!
//! What it deliberately does not do: call GitHub or providers, or decide anything; the
//! control crate does. It does not read configuration files or the environment either: the
//! binaries parse `docs/configuration.md`'s settings into [`StoreOptions`].
//!
//! Async without blocking the runtime: diesel is blocking, so every operation runs in
//! `tokio::task::spawn_blocking` on a pooled connection, inside the caller's tracing span.
//!
//! Main types: [`DieselStore`] (open it with [`DieselStore::open`]), the [`Store`] trait
//! that bundles the per-aggregate traits ([`ControllerStore`], [`CredentialStore`],
//! [`EntityStore`], [`ScaleSetStore`], [`InstanceStore`], [`LeaseStore`], [`EventStore`],
//! [`ApiTokenStore`], [`WorkerStore`], [`RunnerDownloadStore`]) so the control crate can hold an `Arc<dyn Store>`, [`Keyring`] and
//! [`Error`].
//!
//! ```
//! use std::sync::Arc;
//! use scaleset_store::{
//!     Auth, DatabaseUrl, DieselStore, EncryptionKey, Endpoint, EntityKind,
//!     Keyring, NewCredentials, NewEntity, SecretString, Store, StoreOptions,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let url = DatabaseUrl::parse(&format!("sqlite://{}", dir.path().join("scaleset.db").display()))?;
//! // In production the key comes from a key file or the environment (docs/configuration.md).
//! let key = EncryptionKey::from_base64("k1", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")?;
//! let store: Arc<dyn Store> = Arc::new(DieselStore::open(StoreOptions::new(url, Keyring::new(key))).await?);
//!
//! let credentials = store
//!     .create_credentials(NewCredentials {
//!         name: "main".into(),
//!         endpoint: Endpoint::github_com(),
//!         auth: Auth::Pat { token: SecretString::from("ghp_example") },
//!     })
//!     .await?;
//! let org = store
//!     .create_entity(NewEntity {
//!         kind: EntityKind::Organization { name: "acme".into() },
//!         credentials_id: credentials.id,
//!     })
//!     .await?;
//! assert_eq!(store.list_entities().await?, vec![org]);
//! # Ok(())
//! # }
//! ```

mod api_token;
mod clock;
mod controller;
mod credentials;
mod database;
mod entity;
mod error;
mod event;
mod id;
mod instance;
mod instance_access;
mod keyring;
mod lease;
mod options;
mod platform;
mod runner_downloads;
mod runner_setup;
mod scale_set;
pub mod spec;
#[cfg(feature = "test-util")]
pub mod test_util;
mod worker;
mod writer_lock;

pub use api_token::{API_TOKEN_PREFIX, ApiScope, ApiToken, ApiTokenStore};
pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use controller::{ControllerBinding, ControllerStore};
pub use credentials::{
    AppIdentity, Auth, ClientId, ClientIdError, CredentialStore, Credentials, Endpoint,
    MAX_CLIENT_ID, NewCredentials,
};
pub use database::DieselStore;
pub use entity::{Entity, EntityKind, EntityStore, NewEntity};
pub use error::{Error, ErrorClass, Result, chain};
pub use event::{Event, EventFilter, EventKind, EventStore, ReasonCode};
pub use id::{ApiTokenId, CredentialsId, EntityId, ScaleSetId};
pub use instance::{
    Instance, InstanceAdvance, InstanceStatus, InstanceStore, JOB_TEXT_MAX, JobShown, NewInstance,
};
pub use instance_access::{
    BootstrapReport, BootstrapStatus, INSTANCE_TOKEN_PREFIX, InstanceAccess, InstanceAccessStore,
    SystemInfo,
};
pub use keyring::{EncryptionKey, Keyring};
pub use lease::{Acquisition, Lease, LeaseRecord, LeaseStore, LiveLease};
pub use options::{DatabaseUrl, SqliteSync, StoreOptions};
pub use platform::{OsArch, OsType};
pub use runner_downloads::{
    RunnerDownloadStore, RunnerDownloads, ToolDownload, no_download, offered as offered_platforms,
    pick as pick_download, runs_on,
};
pub use runner_setup::{RunnerSetup, SETUP_LIST_MAX, SETUP_TEXT_MAX, is_template_name};
pub use scale_set::{
    AdoptionPolicy, Attention, Creation, MODIFY_ATTEMPTS, NewScaleSet, Progress, Provenance,
    ProviderError, Revision, RunnerGroup, SAMPLE_HELD_AT_MOST, SAMPLE_WINDOW, Sample, ScaleSet,
    ScaleSetChanges, ScaleSetSpec, ScaleSetState, ScaleSetStore,
};
/// The adoption machine's typed proofs the store keeps: the evidence of a ready scale set and
/// the refusal of a refused one (a [`Creation`] is made from its `DeletePermit`).
pub use scaleset_adopt::{DeletePermit, Evidence, Refusal};
/// Secrets (PATs, private keys, API tokens): `secrecy`'s, the type every scaleset crate holds;
/// `Debug` redacts and the value is wiped on drop.
pub use secrecy::{ExposeSecret, SecretString};
pub use spec::{RawScaleSetSpec, SpecProblem};
pub use worker::{MAX_WORKER_NAME, WorkerStore, worker_name_problem};
pub use writer_lock::{WriterLock, WriterLockError};

/// Every aggregate's store in one object-safe trait, for `Arc<dyn Store>`.
pub trait Store:
    ControllerStore
    + CredentialStore
    + EntityStore
    + ScaleSetStore
    + InstanceStore
    + InstanceAccessStore
    + LeaseStore
    + EventStore
    + ApiTokenStore
    + WorkerStore
    + RunnerDownloadStore
    + Send
    + Sync
    + 'static
{
}

impl<T> Store for T where
    T: ControllerStore
        + CredentialStore
        + EntityStore
        + ScaleSetStore
        + InstanceStore
        + InstanceAccessStore
        + LeaseStore
        + EventStore
        + ApiTokenStore
        + WorkerStore
        + RunnerDownloadStore
        + Send
        + Sync
        + 'static
{
}

/// Declares an enum stored as lowercase text.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+];

            /// The stored (and displayed) text.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// Parses the stored text; `None` for text this version does not know.
            pub fn from_stored(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use text_enum;

#[cfg(test)]
mod tests;
