//! Version 1 of the REST API's request and response bodies, as they travel on the wire under
//! `/api/v1`. This module is the contract: the server's handlers produce and accept exactly
//! these types, the OpenAPI document is derived from them, and clients (`scalesetctl`) use them
//! with the crate's `server` feature off (serde and utoipa only).
//!
//! Stability: fields are only ever added, as optional on input and as new keys on output;
//! inputs refuse unknown fields (`deny_unknown_fields`), so a misspelt key is a 400
//! `invalid_body`, never silently ignored. Clients should ignore unknown output keys.
//! Times are RFC 3339 strings in UTC; ids are UUIDs.

mod controller;
mod credentials;
mod decommission;
mod entity;
mod error;
mod events;
mod health;
mod instance;
mod plan;
mod scale_set;
mod token;
mod worker;

pub use controller::ControllerInfo;
pub use credentials::{
    AuthInput, AuthKind, CreateCredentials, Credentials, Endpoint, EndpointInput,
};
pub use decommission::{
    DecommissionApplyRequest, DecommissionApplyResponse, DecommissionOutcome,
    DecommissionPlanResponse, DecommissionRequest, DecommissionStep,
};
pub use entity::{CreateEntity, Entity, EntityKind};
pub use error::{ErrorBody, ErrorCode};
pub use events::{EventList, FleetEvent};
pub use health::{NotReady, Readiness};
pub use instance::{
    CertificateBundle, Instance, InstanceBootstrap, InstanceStatus, StatusCallback,
    SystemInfoCallback,
};
pub use plan::{
    ApplyRequest, ApplyResponse, FieldChange, PlanAction, PlanRequest, PlanResponse,
    PlannedCredentials, PlannedEntity, PlannedScaleSet,
};
pub use scale_set::{
    AdoptionPolicy, Attention, CreateScaleSet, DeleteAction, DeleteScaleSetResult,
    DrainScaleSetResult, Event, Evidence, LeaseStatus, OursUndeclared, OursUndeclaredList,
    Provenance, Refusal, RetryScaleSetResult, RunnerTool, ScaleSet, ScaleSetList, ScaleSetSpec,
    ScaleSetState, ServedBy, UnlistedEntity, UpdateScaleSet,
};
pub use token::{Token, TokenScope};
pub use worker::DrainWorkerResult;

/// How many items a list answers when the request gives no `limit`.
pub const DEFAULT_PAGE_LIMIT: u32 = 500;

/// The largest `limit` a list accepts; a larger one is a 400.
pub const MAX_PAGE_LIMIT: u32 = 1000;

/// One page of a list: its `next_cursor` is where the next page starts (`None` on the last),
/// and [`Paged::append`] joins the next page onto this one, so a client that wants the whole
/// list asks with each cursor in turn until there is none.
pub trait Paged {
    /// The cursor of the next page, or `None` when this page is the last.
    fn next_cursor(&self) -> Option<&str>;
    /// Adds the next page's items after this page's, and takes its cursor.
    fn append(&mut self, next: Self);
}

macro_rules! list {
    ($(#[$meta:meta])* $name:ident of $item:ty) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        pub struct $name {
            /// The items of this page.
            pub items: Vec<$item>,
            /// Pass it as `cursor` to get the next page; null on the last page.
            #[serde(default)]
            pub next_cursor: Option<String>,
        }

        impl Paged for $name {
            fn next_cursor(&self) -> Option<&str> {
                self.next_cursor.as_deref()
            }

            fn append(&mut self, next: Self) {
                self.items.extend(next.items);
                self.next_cursor = next.next_cursor;
            }
        }
    };
}

list! {
    /// `GET /api/v1/credentials`: by name.
    CredentialsList of Credentials
}
list! {
    /// `GET /api/v1/entities`: by kind and name.
    EntityList of Entity
}
list! {
    /// `GET /api/v1/tokens`: by name.
    TokenList of Token
}
list! {
    /// `GET /api/v1/instances` and `GET /api/v1/scale-sets/{id}/instances`: by name.
    InstanceList of Instance
}
