//! The status page: server-rendered HTML at `/` (no JavaScript build; a small inline script
//! reloads it every 5 s), read from the store. The overview has one row per scale set (name,
//! entity, state with reason, provenance and evidence, desired/idle/busy runners, jobs waiting,
//! last message time, recent events), filtered by name or entity and state and paginated
//! (50 rows a page), so it stays readable at thousands of scale sets;
//! `/scale-sets/{id}` shows one scale set with its instances and events.
//!
//! **Auth.** The page uses the API's tokens: `GET /login` is a form, `POST /login` checks the
//! token against the store and sets it as an `HttpOnly`, `SameSite=Strict` cookie
//! (`scaleset_token`), `POST /logout` clears it. An `Authorization: Bearer` header works too
//! (for curl). Without either, the pages redirect to `/login`. The API under `/api/v1` keeps
//! requiring its bearer token; the cookie is not accepted there.
//!
//! [`crate::router`] mounts [`routes`] at the root, beside `/api/v1`.

mod html;
mod render;
mod view;

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use scaleset_store::{ScaleSetId, SecretString};

use crate::state::AppState;

/// The cookie that carries the API token.
pub const COOKIE: &str = "scaleset_token";

/// The longest token accepted (the store's are 47 characters).
const MAX_TOKEN: usize = 512;

type Page = Arc<AppState>;

/// The status page's routes (`/`, `/scale-sets/{id}`, `/login`, `/logout`), merged at the root
/// by [`crate::router`]; they authenticate themselves (cookie or bearer token).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(overview))
        .route("/scale-sets/{id}", get(detail))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_owned())
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// Whether the request carries a valid API token (cookie or bearer header).
async fn signed_in(page: &Page, headers: &HeaderMap) -> Result<bool, Response> {
    let Some(token) = bearer_token(headers).or_else(|| cookie_token(headers)) else {
        return Ok(false);
    };
    valid(page, &token).await
}

async fn valid(page: &Page, token: &str) -> Result<bool, Response> {
    if token.is_empty() || token.len() > MAX_TOKEN {
        return Ok(false);
    }
    match page
        .store
        .authenticate_api_token(&SecretString::from(token))
        .await
    {
        Ok(found) => Ok(found.is_some()),
        Err(e) => Err(unavailable(&e)),
    }
}

fn unavailable(e: &scaleset_store::Error) -> Response {
    tracing::warn!(error = %e, "status page: the store did not answer");
    let body = html::page(
        "Unavailable",
        &maud::html! {
            p.error { "The database did not answer: " (e) ". The page retries on its next refresh." }
        },
        false,
        true,
    );
    (StatusCode::SERVICE_UNAVAILABLE, Html(body)).into_response()
}

fn to_login() -> Response {
    Redirect::to("/login").into_response()
}

async fn overview(
    State(page): State<Page>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    match signed_in(&page, &headers).await {
        Ok(true) => {}
        Ok(false) => return to_login(),
        Err(response) => return response,
    }
    let filter = view::Filter::parse(query.as_deref());
    match view::overview(page.store.as_ref(), filter).await {
        Ok(view) => Html(render::overview(&view, SystemTime::now())).into_response(),
        Err(e) => unavailable(&e),
    }
}

async fn detail(State(page): State<Page>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    match signed_in(&page, &headers).await {
        Ok(true) => {}
        Ok(false) => return to_login(),
        Err(response) => return response,
    }
    let not_found = || {
        let body = html::page(
            "Not found",
            &maud::html! {
                p { a href="/" { "← all scale sets" } }
                p.empty { "No such scale set." }
            },
            true,
            false,
        );
        (StatusCode::NOT_FOUND, Html(body)).into_response()
    };
    let Ok(uuid) = uuid::Uuid::parse_str(&id) else {
        return not_found();
    };
    match view::detail(page.store.as_ref(), ScaleSetId(uuid)).await {
        Ok(view) => Html(render::detail(&view, SystemTime::now())).into_response(),
        Err(e) if e.is_not_found() => not_found(),
        Err(e) => unavailable(&e),
    }
}

async fn login_form() -> Html<String> {
    Html(render::login(None))
}

async fn login(State(page): State<Page>, body: Bytes) -> Response {
    let token = url::form_urlencoded::parse(&body)
        .find(|(key, _)| key == "token")
        .map(|(_, value)| value.trim().to_owned())
        .unwrap_or_default();
    match valid(&page, &token).await {
        Ok(true) => {}
        Ok(false) => {
            let body = render::login(Some("That token is not valid (unknown or revoked)."));
            return (StatusCode::UNAUTHORIZED, Html(body)).into_response();
        }
        Err(response) => return response,
    }
    // The token only ever travels back to this origin, never readable by scripts.
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
    let mut response = Redirect::to("/").into_response();
    match HeaderValue::from_str(&cookie) {
        Ok(value) => {
            response.headers_mut().insert(header::SET_COOKIE, value);
            response
        }
        Err(_) => {
            let body = render::login(Some("That token is not valid (unknown or revoked)."));
            (StatusCode::UNAUTHORIZED, Html(body)).into_response()
        }
    }
}

async fn logout() -> Response {
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("scaleset_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}
