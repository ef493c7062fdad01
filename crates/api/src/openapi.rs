//! The OpenAPI 3.1 document, derived by utoipa from the handlers' `#[utoipa::path]`
//! attributes and the [`crate::v1`] types. Served at `/api/v1/openapi.json` by the route here
//! (public, tagged `health`: the document describes only shapes); a copy is committed as
//! `docs/openapi.json`, and a test fails when the two differ. The route lives here rather than
//! with the other health routes because the document lists every route module: they must not
//! depend on it in turn.
//!
//! A module that adds routes adds its paths to [`ApiDoc`]'s list (or merges its own
//! `OpenApi` into [`document`]).

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    controller, credentials, decommission, entities, events, health, instance_facing, instances,
    plan, scale_sets, tokens, workers,
};
use crate::state::AppState;
use crate::v1;

/// The document's root.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "scaleset API",
        description = "Manage GitHub Actions runner scale sets: credentials, entities, scale sets \
                       (with adoption), instances. Every /api/v1 route takes \
                       `Authorization: Bearer <token>` (an API token; the instance-facing \
                       metadata and callbacks take the instance's own token); errors are \
                       `{code, message, request_id}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        health::healthz, health::readyz, health::metrics, serve_document,
        controller::show,
        credentials::create, credentials::list, credentials::show, credentials::replace, credentials::delete,
        entities::create, entities::list, entities::show, entities::delete,
        scale_sets::create, scale_sets::list, scale_sets::show, scale_sets::update, scale_sets::delete, scale_sets::drain, scale_sets::retry, scale_sets::ours_undeclared,
        events::list,
        instances::list, instances::list_of, instances::show, instances::delete,
        plan::plan, plan::apply,
        decommission::plan, decommission::apply,
        tokens::list, tokens::revoke,
        workers::drain,
        instance_facing::registration_token, instance_facing::jit_file, instance_facing::cert_bundle,
        instance_facing::service_name, instance_facing::unit_file, instance_facing::status,
        instance_facing::system_info,
    ),
    components(schemas(
        v1::ErrorBody, v1::ErrorCode, v1::Readiness, v1::NotReady, v1::ControllerInfo,
        v1::CreateCredentials, v1::AuthInput, v1::EndpointInput, v1::Credentials, v1::AuthKind, v1::Endpoint, v1::CredentialsList,
        v1::CreateEntity, v1::Entity, v1::EntityKind, v1::EntityList,
        v1::CreateScaleSet, v1::UpdateScaleSet, v1::ScaleSet, v1::ScaleSetSpec, v1::ScaleSetState, v1::Attention, v1::Provenance, v1::Evidence,
        v1::AdoptionPolicy, v1::Refusal, v1::Event, v1::ScaleSetList, v1::OursUndeclaredList, v1::OursUndeclared, v1::UnlistedEntity, v1::DeleteScaleSetResult, v1::DeleteAction, v1::DrainScaleSetResult, v1::RetryScaleSetResult, v1::RunnerTool, v1::ServedBy, v1::LeaseStatus,
        v1::EventList, v1::FleetEvent,
        v1::Instance, v1::InstanceStatus, v1::InstanceList, v1::InstanceBootstrap,
        v1::StatusCallback, v1::SystemInfoCallback, v1::CertificateBundle,
        v1::Token, v1::TokenScope, v1::TokenList,
        v1::DrainWorkerResult,
        v1::PlanRequest, v1::ApplyRequest, v1::PlanResponse, v1::ApplyResponse, v1::PlanAction,
        v1::FieldChange, v1::PlannedCredentials, v1::PlannedEntity, v1::PlannedScaleSet,
        v1::DecommissionRequest, v1::DecommissionApplyRequest, v1::DecommissionPlanResponse,
        v1::DecommissionApplyResponse, v1::DecommissionStep, v1::DecommissionOutcome,
    )),
    // Relative: the document is served by the server it describes, which listens wherever its
    // configuration says (behind any proxy or port); a client resolves `/` against the URL it
    // fetched the document from, and a generated client takes its base URL as a parameter.
    servers((url = "/", description = "The server that serves this document")),
    modifiers(&BearerAuth, &ClosedAuthInput, &Scopes, &ErrorDescriptions),
    security(("bearer" = [])),
    tags(
        (name = "health", description = "Probes, metrics and this document (no token)"),
        (name = "controller", description = "Who this controller is"),
        (name = "credentials", description = "GitHub credentials (secrets are write-only)"),
        (name = "entities", description = "Repositories, organizations, enterprises"),
        (name = "scale-sets", description = "Scale sets, adoption, drain, retry now, ownership-aware delete"),
        (name = "instances", description = "Provider instances running runners"),
        (name = "fleet", description = "Plan and apply of a declarative fleet"),
        (name = "decommission", description = "Tear down everything this controller owns, and nothing else"),
        (name = "workers", description = "Worker processes: drain one before stopping it"),
        (name = "tokens", description = "API tokens: list and revoke (created on the server host only)"),
        (name = "instance", description = "Called by booting instances with their instance token (GARM's metadata and callback URLs)"),
    ),
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token from `scaleset-server token create NAME` (sst_…)",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "instance_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An instance's own token (ssi_…), the `instance-token` of its bootstrap \
                         parameters; it opens only that instance's records while it bootstraps",
                    ))
                    .build(),
            ),
        );
    }
}

/// `AuthInput`'s variants refuse unknown fields (serde's `deny_unknown_fields` on the enum),
/// which utoipa does not carry into the variants' schemas: each is closed here, so a client
/// (or schemathesis) reading the document knows an extra key is a 400.
struct ClosedAuthInput;

impl Modify for ClosedAuthInput {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{AdditionalProperties, Schema};
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let Some(RefOr::T(Schema::OneOf(one_of))) = components.schemas.get_mut("AuthInput") else {
            return;
        };
        for item in &mut one_of.items {
            if let RefOr::T(Schema::Object(object)) = item {
                object.additional_properties =
                    Some(Box::new(AdditionalProperties::FreeForm(false)));
            }
        }
    }
}

/// Every route behind the API token (the operations without a `security` of their own) says
/// which scope it needs, as `x-scaleset-scope`, and answers 403 `insufficient_scope` to a
/// token of a narrower one; both from [`crate::auth::required_scope`], the table the server
/// enforces.
struct Scopes;

impl Modify for Scopes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use axum::http::Method;
        use utoipa::openapi::extensions::Extensions;
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        for (path, item) in &mut openapi.paths.paths {
            let operations = [
                (Method::GET, &mut item.get),
                (Method::PUT, &mut item.put),
                (Method::POST, &mut item.post),
                (Method::DELETE, &mut item.delete),
                (Method::PATCH, &mut item.patch),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation.as_mut() else {
                    continue;
                };
                if operation.security.is_some() || !path.starts_with("/api/v1/") {
                    continue;
                }
                let needed = crate::auth::required_scope(&method, path);
                let mut extensions = operation.extensions.take().unwrap_or_default();
                extensions.merge(Extensions::from_iter([(
                    "x-scaleset-scope",
                    serde_json::Value::from(needed.as_str()),
                )]));
                operation.extensions = Some(extensions);
                if needed == scaleset_store::ApiScope::Read {
                    // Every token reads: a GET is never refused for its scope.
                    continue;
                }
                let description = format!(
                    "insufficient_scope: this route needs an API token of scope `{needed}`{}; \
                     `message` names the token's scope",
                    if needed == scaleset_store::ApiScope::Operate {
                        " or `admin`"
                    } else {
                        ""
                    }
                );
                let response = ResponseBuilder::new()
                    .description(description)
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("ErrorBody")))
                            .build(),
                    )
                    .build();
                operation
                    .responses
                    .responses
                    .insert("403".to_owned(), response.into());
            }
        }
    }
}

/// The error answers every route shares mean the same everywhere; a route that leaves one
/// without a description gets its meaning here (a route with more to say writes its own). The
/// success answers have no such default: each route describes its own.
struct ErrorDescriptions;

/// The shared meaning of an error status, or `None` for one whose meaning is the route's own.
fn error_description(status: &str) -> Option<&'static str> {
    Some(match status {
        "400" => "A path or query parameter, or the body, is invalid (`message` names it and why)",
        "401" => "No token, or not a valid one (`message` says which)",
        "403" => "The token is valid but does not open this (`message` says why)",
        "404" => "Not found (`message` names what)",
        "413" => "The body is larger than the server accepts (`message` gives the limit)",
        "415" => "The body is not `application/json`",
        _ => return None,
    })
}

impl Modify for ErrorDescriptions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                for (status, response) in &mut operation.responses.responses {
                    if let RefOr::T(response) = response
                        && response.description.is_empty()
                        && let Some(meaning) = error_description(status)
                    {
                        meaning.clone_into(&mut response.description);
                    }
                }
            }
        }
    }
}

/// The document, with the server's version.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// The document as pretty JSON with a trailing newline (exactly `docs/openapi.json`).
pub fn json() -> String {
    match document().to_pretty_json() {
        Ok(mut text) => {
            text.push('\n');
            text
        }
        Err(e) => format!("{{\"error\": \"cannot encode the OpenAPI document: {e}\"}}\n"),
    }
}

/// The route serving the document.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/api/v1/openapi.json", get(serve_document))
}

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "health", security(()),
    operation_id = "get_openapi_document",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)))]
pub(crate) async fn serve_document() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], json()).into_response()
}
