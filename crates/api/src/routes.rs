//! The route modules, one per resource, each exposing `routes()`: the public health routes and
//! the authenticated `/api/v1` ones. [`crate::app`] puts them together.

pub(crate) mod controller;
pub(crate) mod credentials;
pub(crate) mod decommission;
pub(crate) mod entities;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod instance_facing;
pub(crate) mod instances;
pub(crate) mod plan;
pub(crate) mod scale_sets;
pub(crate) mod tokens;
pub(crate) mod workers;
