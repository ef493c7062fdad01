//! The status page: server-rendered HTML at `/` (no JavaScript build; a small script,
//! `/static/refresh.js`, reloads it every 5 s, and the page works without it), read from the
//! store. The overview has one row per scale set (name,
//! entity, state with reason, whether it needs attention with the reason and the `scalesetctl`
//! command to run (the store's one rule, [`scaleset_store::ScaleSet::attention`]), provenance
//! and evidence, desired/idle/busy runners, jobs waiting, a sparkline of the last hour, last
//! message time, recent events), filtered by name or entity and state and paginated
//! (50 rows a page), so it stays readable at thousands of scale sets;
//! `/scale-sets/{id}` shows one scale set with SVG charts of its last hour (jobs waiting,
//! runners idle/busy/starting, job start latency, from the samples its worker stores), its
//! instances and events.
//!
//! **Auth.** The page uses the API's tokens: `GET /login` is a form, `POST /login` checks the
//! token against the store and sets it as an `HttpOnly`, `SameSite=Strict` cookie
//! (`scaleset_token`; also `Secure` when browsers reach the server over HTTPS,
//! [`crate::AppState::https`]), `POST /logout` clears it. An `Authorization: Bearer` header works too
//! (for curl). Without either, the pages redirect to `/login`. The API under `/api/v1` keeps
//! requiring its bearer token; the cookie is not accepted there. A page reached with a cookie
//! whose token no longer authenticates (revoked) clears the cookie and sends the browser to the
//! sign-in form, which says why.
//!
//! **Hardening.** Every response carries a Content-Security-Policy that allows no inline script
//! or style, `X-Frame-Options: DENY` and `frame-ancestors 'none'`, and `Cache-Control:
//! no-store` (the stylesheet and script excepted). `POST /login` and `POST /logout` refuse a
//! request whose `Origin` (or, without one, `Referer`) is not this server's own host: a form on
//! another site cannot sign a browser in with the attacker's token, or out.
//!
//! [`crate::router`] mounts [`routes`] at the root, beside `/api/v1`.

mod actions;
mod chart;
mod form_data;
mod html;
mod lease;
mod reason;
mod render;
mod view;

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use scaleset_store::{ScaleSetId, SecretString, Timestamp};

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
        .route("/static/status.css", get(stylesheet))
        .route("/static/refresh.js", get(script))
        .merge(actions::routes())
        .layer(middleware::map_response(hardened))
}

async fn hardened(mut response: Response) -> Response {
    html::harden(response.headers_mut());
    response
}

/// A constant of this crate, cacheable for a few minutes (it changes only with the binary).
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", html::STYLE)
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", html::REFRESH)
}

/// The HTML page for a URL nothing serves, for a browser (API clients get the JSON error).
pub(crate) fn not_found_page(path: &str) -> Response {
    let body = html::page(
        "Not found",
        &maud::html! {
            p.empty { "Nothing is served at " code { (path) } "." }
            p { a href="/" { "← all scale sets" } " · the API is under " code { "/api/v1" } }
        },
        false,
        false,
    );
    let mut response = (StatusCode::NOT_FOUND, Html(body)).into_response();
    html::harden(response.headers_mut());
    response
}

/// Whether a request prefers HTML (a browser's `Accept` names `text/html`).
pub(crate) fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}

/// The host (`host[:port]`) of an `Origin` or `Referer` value; `None` for `null` or text that
/// is no URL.
fn url_host(value: &str) -> Option<String> {
    let url = url::Url::parse(value).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Whether a state-changing form POST comes from this server's own pages: its `Origin` (or,
/// when a client sends none, its `Referer`) names the host the request was sent to. A request
/// with neither (curl, a script) is no browser's cross-site form and passes; `Origin: null`
/// (a sandboxed or privacy-stripped context) does not.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let Some(host) = text(header::HOST) else {
        // HTTP/1.1 requires Host; without one nothing can be compared.
        return text(header::ORIGIN).is_none() && text(header::REFERER).is_none();
    };
    let host = host.trim().to_ascii_lowercase();
    // The default ports: `url` leaves them out of `port()`, a Host header may carry them.
    let host = host
        .strip_suffix(":80")
        .or_else(|| host.strip_suffix(":443"))
        .unwrap_or(&host)
        .to_owned();
    match (text(header::ORIGIN), text(header::REFERER)) {
        (Some(origin), _) => url_host(origin).is_some_and(|o| o.to_ascii_lowercase() == host),
        (None, Some(referer)) => url_host(referer).is_some_and(|r| r.to_ascii_lowercase() == host),
        (None, None) => true,
    }
}

fn cross_origin() -> Response {
    let body = render::login(Some(
        "Refused: the sign-in form was posted from another site. Sign in from this page.",
    ));
    (StatusCode::FORBIDDEN, Html(body)).into_response()
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

fn clear_cookie(page: &Page) -> HeaderValue {
    if page.https {
        HeaderValue::from_static(
            "scaleset_token=; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=0",
        )
    } else {
        HeaderValue::from_static("scaleset_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    }
}

/// Why the sign-in form was shown, from its query (`?why=revoked`).
const REVOKED: &str = "Your token no longer signs you in: it was revoked (or never existed). \
     Sign in with a current one (scaleset-server token create NAME makes one).";

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
    let session = match actions::session(&page, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let filter = view::Filter::parse(query.as_deref());
    let now = Timestamp::from_system_time(SystemTime::now());
    page.refresh_ours_undeclared();
    let ours_undeclared = page.ours_undeclared.known();
    let read = async {
        let mut view = view::overview(page.store.as_ref(), &page.configured, filter, now).await?;
        lease::serve_rows(&page, &mut view.rows).await?;
        Ok::<_, scaleset_store::Error>(view)
    };
    match read.await {
        Ok(view) => Html(render::overview(
            &view,
            &ours_undeclared,
            SystemTime::now(),
            &session,
        ))
        .into_response(),
        Err(e) => unavailable(&e),
    }
}

async fn detail(
    State(page): State<Page>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let session = match actions::session(&page, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    // What the action that redirected here did (`?done=drain`).
    let done = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .find(|(key, _)| key == "done")
        .map(|(_, value)| value.into_owned());
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
    let now = Timestamp::from_system_time(SystemTime::now());
    let read = async {
        let mut view = view::detail(page.store.as_ref(), ScaleSetId(uuid), now).await?;
        lease::serve_rows(&page, [&mut view.row]).await?;
        Ok::<_, scaleset_store::Error>(view)
    };
    match read.await {
        Ok(view) => Html(render::detail(
            &view,
            SystemTime::now(),
            &session,
            done.as_deref(),
        ))
        .into_response(),
        Err(e) if e.is_not_found() => not_found(),
        Err(e) => unavailable(&e),
    }
}

async fn login_form(RawQuery(query): RawQuery) -> Html<String> {
    let revoked = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .any(|(key, value)| key == "why" && value == "revoked");
    Html(render::login(revoked.then_some(REVOKED)))
}

async fn login(State(page): State<Page>, headers: HeaderMap, body: Bytes) -> Response {
    if !same_origin(&headers) {
        return cross_origin();
    }
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
    // The token only ever travels back to this origin, never readable by scripts; over HTTPS
    // never in clear either (`Secure`: cookies are not port-scoped, so without it a browser
    // would send it to any `http://` URL of the same host).
    let secure = if page.https { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{secure}");
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

async fn logout(State(page): State<Page>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return cross_origin();
    }
    let mut response = Redirect::to("/login").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, clear_cookie(&page));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_post_from_this_host_passes_and_from_another_is_refused() {
        use header::{HOST, ORIGIN, REFERER};
        let ok = |pairs: &[(header::HeaderName, &str)]| same_origin(&headers(pairs));
        assert!(ok(&[
            (HOST, "127.0.0.1:8080"),
            (ORIGIN, "http://127.0.0.1:8080")
        ]));
        assert!(ok(&[
            (HOST, "Status.Example:443"),
            (ORIGIN, "https://status.example")
        ]));
        assert!(ok(&[
            (HOST, "status.example"),
            (REFERER, "https://status.example/login")
        ]));
        assert!(ok(&[(HOST, "status.example")]), "no browser form: curl");
        assert!(!ok(&[
            (HOST, "127.0.0.1:8080"),
            (ORIGIN, "http://evil.example")
        ]));
        assert!(!ok(&[
            (HOST, "127.0.0.1:8080"),
            (ORIGIN, "http://127.0.0.1:9090")
        ]));
        assert!(!ok(&[(HOST, "127.0.0.1:8080"), (ORIGIN, "null")]));
        assert!(
            !ok(&[
                (HOST, "a.example"),
                (ORIGIN, "http://b.example"),
                (REFERER, "http://a.example/")
            ]),
            "the Origin decides when there is one"
        );
        assert!(!ok(&[(HOST, "a.example"), (REFERER, "http://b.example/x")]));
        assert!(!ok(&[(ORIGIN, "http://a.example")]), "no Host to compare");
        assert!(ok(&[]));
    }

    #[test]
    fn a_browser_is_told_in_html() {
        assert!(wants_html(&headers(&[(
            header::ACCEPT,
            "text/html,application/xhtml+xml,*/*;q=0.8"
        )])));
        assert!(!wants_html(&headers(&[(
            header::ACCEPT,
            "application/json"
        )])));
        assert!(!wants_html(&HeaderMap::new()));
    }
}
