//! The endpoints booting instances call, with GARM's routes and payloads, so GARM provider
//! images bootstrap unchanged: `/api/v1/metadata/...` (JIT files, registration token, CA
//! bundle, systemd service name and unit file) and `/api/v1/callbacks/...` (status and system
//! info). Each path also answers with a trailing slash, as GARM's do.
//!
//! They take the instance's own token (`instance-token` of the bootstrap parameters), never an
//! API token: the token opens only its instance's records, only until it expires, and only
//! while the instance is still bootstrapping (`pending` or `installing`), as GARM allows.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use base64::Engine as _;
use bytes::Bytes;
use scaleset_store::{
    BootstrapReport, ExposeSecret as _, INSTANCE_TOKEN_PREFIX, InstanceAccess, SecretString,
    SystemInfo,
};
use serde::Deserialize;

use crate::bootstrap_files::{self, JitFileError};
use crate::error::ApiError;
use crate::extract::Params;
use crate::state::AppState;
use crate::v1::{
    CertificateBundle, ErrorBody, InstanceBootstrap, StatusCallback, SystemInfoCallback,
};
use crate::view;

/// The routes, relative to `/api/v1`, behind the instance-token check.
pub(crate) fn routes(state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/metadata/runner-registration-token",
            get(registration_token),
        )
        .route(
            "/metadata/runner-registration-token/",
            get(registration_token),
        )
        .route("/metadata/credentials/{file}", get(jit_file))
        .route("/metadata/credentials/{file}/", get(jit_file))
        .route("/metadata/system/cert-bundle", get(cert_bundle))
        .route("/metadata/system/cert-bundle/", get(cert_bundle))
        .route("/metadata/system/service-name", get(service_name))
        .route("/metadata/system/service-name/", get(service_name))
        .route("/metadata/systemd/unit-file", get(unit_file))
        .route("/metadata/systemd/unit-file/", get(unit_file))
        .route("/callbacks/status", post(status))
        .route("/callbacks/status/", post(status))
        .route("/callbacks/system-info", post(system_info))
        .route("/callbacks/system-info/", post(system_info))
        .route_layer(middleware::from_fn_with_state(
            state,
            require_instance_token,
        ))
}

/// The instance a request's token opened, as a request extension.
#[derive(Debug, Clone)]
pub(crate) struct Caller(InstanceAccess);

/// Middleware: the instance token, valid, unexpired, of an instance still bootstrapping.
async fn require_instance_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    crate::auth::guard(request, next, "scaleset-instance", |header| async move {
        authenticate(&state, header).await.map(Caller)
    })
    .await
}

async fn authenticate(
    state: &AppState,
    header: Option<Result<String, axum::http::header::ToStrError>>,
) -> Result<InstanceAccess, ApiError> {
    let token = crate::auth::bearer(header).map_err(|missing| {
        if missing {
            ApiError::MissingInstanceToken
        } else {
            ApiError::InvalidInstanceToken { hint: "" }
        }
    })?;
    if !token.starts_with(INSTANCE_TOKEN_PREFIX) {
        let hint = if token.starts_with(scaleset_store::API_TOKEN_PREFIX) {
            " (this is an API token: instance endpoints take the instance's own token)"
        } else {
            ""
        };
        return Err(ApiError::InvalidInstanceToken { hint });
    }
    let access = state
        .store
        .authenticate_instance(&SecretString::from(token))
        .await
        .map_err(ApiError::store("checking the instance token", || {
            "instance token".to_owned()
        }))?
        .ok_or(ApiError::InvalidInstanceToken { hint: "" })?;
    if !access.bootstrap_status.is_bootstrapping() {
        return Err(ApiError::BootstrapFinished {
            instance: access.instance_name,
            status: access.bootstrap_status.as_str(),
        });
    }
    Ok(access)
}

/// A registration token (GARM's non-JIT path): never, since every scale-set runner has a
/// JIT config; the route answers so an image that asks learns why.
#[utoipa::path(get, path = "/api/v1/metadata/runner-registration-token", tag = "instance",
    operation_id = "get_runner_registration_token",
    security(("instance_token" = [])),
    responses((status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, description = "jit_configured: every scale-set runner has a JIT config, never a registration token", body = ErrorBody)))]
pub(crate) async fn registration_token(Extension(Caller(access)): Extension<Caller>) -> ApiError {
    ApiError::JitConfigured {
        instance: access.instance_name,
    }
}

/// One file of the instance's JIT config (`runner`, `credentials`, `credentials_rsaparams`),
/// as the runner's configuration directory holds it (`.runner`, …).
#[utoipa::path(get, path = "/api/v1/metadata/credentials/{file}", tag = "instance",
    operation_id = "get_instance_credentials_file",
    security(("instance_token" = [])),
    params(("file" = String, Path, description = "The file name without its leading dot")),
    responses((status = 200, description = "The file's contents", content_type = "application/octet-stream"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn jit_file(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let name = &access.instance_name;
    let jit = state
        .store
        .open_instance_jit_config(name)
        .await
        .map_err(ApiError::store("opening an instance's JIT config", || {
            format!("the JIT config of instance {name:?}")
        }))?;
    let contents = bootstrap_files::jit_file(jit.expose_secret(), &file).map_err(|e| match e {
        JitFileError::BadName => ApiError::InvalidParameter {
            reason: format!(
                "{file:?} is not a JIT file name (letters, digits, `_` and `-`, without the \
                 leading dot: runner, credentials, credentials_rsaparams)"
            ),
        },
        JitFileError::NoSuchFile => ApiError::NotFound {
            what: format!("JIT file .{file} of instance {name:?}"),
        },
        JitFileError::Malformed(reason) => ApiError::Internal {
            during: "reading a JIT config",
            reason: format!("the JIT config of instance {name:?} is malformed: {reason}"),
        },
    })?;
    let disposition =
        HeaderValue::from_str(&format!("attachment; filename=.{file}")).map_err(|_| {
            ApiError::Internal {
                during: "answering a JIT file",
                reason: "the file name is not a header value".to_owned(),
            }
        })?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        contents,
    )
        .into_response())
}

/// The CA certificates the instance should trust besides its own: the GHES endpoint's bundle
/// of the scale set's credentials (empty for github.com).
#[utoipa::path(get, path = "/api/v1/metadata/system/cert-bundle", tag = "instance",
    operation_id = "get_cert_bundle",
    security(("instance_token" = [])),
    responses((status = 200, description = "The CA certificates the instance should trust (empty when none are configured)", body = CertificateBundle), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub(crate) async fn cert_bundle(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
) -> Result<Json<CertificateBundle>, ApiError> {
    let (_, credentials) = entity_of(&state, &access).await?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let root_certificates = credentials
        .endpoint
        .ca_bundle
        .as_deref()
        .map(bootstrap_files::split_certificates)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, pem)| (name, b64.encode(pem)))
        .collect();
    Ok(Json(CertificateBundle { root_certificates }))
}

/// The runner's systemd service name.
#[utoipa::path(get, path = "/api/v1/metadata/system/service-name", tag = "instance",
    operation_id = "get_service_name",
    security(("instance_token" = [])),
    responses((status = 200, description = "The service name", content_type = "text/plain"),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub(crate) async fn service_name(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
) -> Result<String, ApiError> {
    let (entity, _) = entity_of(&state, &access).await?;
    Ok(bootstrap_files::service_name(
        &entity.kind,
        &access.instance_name,
    ))
}

/// The query of the unit-file route.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(crate) struct UnitFileQuery {
    /// The user the runner runs as (default `runner`).
    run_as_user: Option<String>,
}

/// A systemd unit file for the runner's service.
#[utoipa::path(get, path = "/api/v1/metadata/systemd/unit-file", tag = "instance",
    operation_id = "get_systemd_unit_file",
    security(("instance_token" = [])), params(UnitFileQuery),
    responses((status = 200, description = "The unit file", content_type = "text/plain"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub(crate) async fn unit_file(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
    Params(query): Params<UnitFileQuery>,
) -> Result<String, ApiError> {
    let user = query
        .run_as_user
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| bootstrap_files::DEFAULT_RUNNER_USER.to_owned());
    if !bootstrap_files::valid_user(&user) {
        return Err(ApiError::InvalidParameter {
            reason: format!(
                "runAsUser {user:?} is not a user name (letters, digits, `_` and `-`, at most \
                 32 characters)"
            ),
        });
    }
    let (entity, _) = entity_of(&state, &access).await?;
    let name = bootstrap_files::service_name(&entity.kind, &access.instance_name);
    Ok(bootstrap_files::unit_file(&name, &user))
}

/// A status report: `installing` while bootstrapping, then `idle` (the runner started) or
/// `failed`. A failure is also put on the scale set's event trail.
#[utoipa::path(post, path = "/api/v1/callbacks/status", tag = "instance",
    operation_id = "report_instance_status",
    security(("instance_token" = [])), request_body = StatusCallback,
    responses((status = 200, description = "Recorded; the instance's bootstrap record as it now stands", body = InstanceBootstrap), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody)))]
pub(crate) async fn status(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
    body: Bytes,
) -> Result<Json<InstanceBootstrap>, ApiError> {
    let report: StatusCallback = callback_body(&body)?;
    let status =
        bootstrap_files::parse_status(&report.status).ok_or_else(|| ApiError::InvalidInput {
            field: "status".to_owned(),
            reason: format!(
                "{:?} is not a status an instance reports (installing, idle or failed)",
                report.status
            ),
        })?;
    let name = access.instance_name.clone();
    let message = clip(&report.message);
    let updated = state
        .store
        .report_instance_status(
            &name,
            BootstrapReport {
                status,
                message: message.clone(),
                agent_id: report.agent_id,
            },
        )
        .await
        .map_err(report_error(&name))?;
    if status == scaleset_store::BootstrapStatus::Failed {
        tracing::warn!(instance = %name, reported = %message, "instance reported a failed bootstrap");
        // The trail is for operators; losing this entry must not fail the report.
        if let Err(e) = state
            .store
            .append_event(
                access.scale_set_id,
                scaleset_store::ReasonCode::InstanceBootstrapFailed,
                &format!("instance {name} reported a failed bootstrap: {message}"),
            )
            .await
        {
            tracing::warn!(instance = %name, error = %e, "could not record the failed bootstrap");
        }
    }
    Ok(Json(view::bootstrap(&updated)))
}

/// The instance's operating system.
#[utoipa::path(post, path = "/api/v1/callbacks/system-info", tag = "instance",
    operation_id = "report_instance_system_info",
    security(("instance_token" = [])), request_body = SystemInfoCallback,
    responses((status = 200, description = "Recorded; the instance's bootstrap record as it now stands", body = InstanceBootstrap), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody)))]
pub(crate) async fn system_info(
    State(state): State<Arc<AppState>>,
    Extension(Caller(access)): Extension<Caller>,
    body: Bytes,
) -> Result<Json<InstanceBootstrap>, ApiError> {
    let info: SystemInfoCallback = callback_body(&body)?;
    let name = access.instance_name.clone();
    let updated = state
        .store
        .report_instance_system_info(
            &name,
            SystemInfo {
                os_name: clip(&info.os_name),
                os_version: clip(&info.os_version),
                agent_id: info.agent_id,
            },
        )
        .await
        .map_err(report_error(&name))?;
    Ok(Json(view::bootstrap(&updated)))
}

/// A callback's JSON body, whatever its `Content-Type`: GARM's scripts post with `curl -d`,
/// which labels the body `application/x-www-form-urlencoded`.
fn callback_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::InvalidBody {
        reason: format!("not the JSON this callback takes: {e}"),
    })
}

/// Reported text is kept to a bounded length: it is shown to operators, not parsed.
fn clip(text: &str) -> String {
    const MAX: usize = 1_000;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn report_error(name: &str) -> impl FnOnce(scaleset_store::Error) -> ApiError + '_ {
    move |e| match e {
        // Bootstrap finished between the token check and the write (a concurrent report).
        scaleset_store::Error::Invalid { reason, .. } => ApiError::InvalidInput {
            field: "status".to_owned(),
            reason,
        },
        other => ApiError::store("recording an instance's report", || {
            format!("instance {name:?}")
        })(other),
    }
}

/// The entity and credentials of the instance's scale set.
async fn entity_of(
    state: &AppState,
    access: &InstanceAccess,
) -> Result<(scaleset_store::Entity, scaleset_store::Credentials), ApiError> {
    let scale_set_id = access.scale_set_id;
    let scale_set = state
        .store
        .get_scale_set(scale_set_id)
        .await
        .map_err(ApiError::store("reading the instance's scale set", || {
            format!("scale set {scale_set_id}")
        }))?;
    let entity_id = scale_set.entity_id;
    let entity = state
        .store
        .get_entity(entity_id)
        .await
        .map_err(ApiError::store("reading the instance's entity", || {
            format!("entity {entity_id}")
        }))?;
    let credentials_id = entity.credentials_id;
    let credentials =
        state
            .store
            .get_credentials(credentials_id)
            .await
            .map_err(ApiError::store(
                "reading the instance's credentials",
                || format!("credentials {credentials_id}"),
            ))?;
    Ok((entity, credentials))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_text_is_clipped_on_a_character_boundary() {
        assert_eq!(clip("  short  "), "short");
        let long = "é".repeat(1_001);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), 1_001);
        assert!(clipped.ends_with('…'));
        assert_eq!(clip(&"a".repeat(1_000)), "a".repeat(1_000));
    }
}
