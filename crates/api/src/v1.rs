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
pub use health::Readiness;
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
    DrainScaleSetResult, Event, Evidence, OursUndeclared, OursUndeclaredList, Provenance, Refusal,
    RetryScaleSetResult, RunnerTool, ScaleSet, ScaleSetList, ScaleSetSpec, ScaleSetState,
    UnlistedEntity, UpdateScaleSet,
};
pub use token::Token;
pub use worker::DrainWorkerResult;

macro_rules! list {
    ($(#[$meta:meta])* $name:ident of $item:ty) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        pub struct $name {
            /// The items.
            pub items: Vec<$item>,
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
