//! What an operator can do from the status page, without JavaScript: forms that POST, each
//! answered by a redirect to the page showing the new state (or a page saying why not).
//!
//! **No second door.** Every action calls the API route's own handler
//! ([`crate::routes::scale_sets`], [`crate::routes::plan`], [`crate::routes::decommission`]):
//! the same checks, the same store writes, the same events; the delete's confirmation states
//! what happens on GitHub from the same deletion planner the route carries out
//! ([`scaleset_fleet::plan_deletion`]).
//!
//! **Who may.** The token that signed the page in (cookie or bearer header) is checked against
//! the scope of the API route the action calls ([`crate::auth::required_scope`]): a token
//! whose scope is too narrow sees the forms disabled, with the reason, and a POST anyway is
//! answered 403 with the same reason.
//!
//! **Forged forms.** On top of the Origin check ([`super::same_origin`]), every form carries a
//! token: the HMAC-SHA256, keyed by the signed-in API token, of the form's action path. A page
//! on another site knows neither the cookie (`HttpOnly`) nor the HMAC, so it cannot make a
//! form this server accepts. Destructive actions (delete) go through a confirmation page.
//! Edits carry the generation read with the page, so a stale form is refused and says so.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use maud::{Markup, html};
use scaleset_store::{ApiScope, ScaleSet, ScaleSetId, SecretString};

use super::form_data::{self, Fields};
use super::html::page;
use super::{Page, bearer_token, clear_cookie, cookie_token, same_origin, to_login, unavailable};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Body, Params};
use crate::routes::{decommission, plan, scale_sets};
use crate::v1::{
    ApplyRequest, DecommissionRequest, PlanAction, PlanRequest, PlanResponse, UpdateScaleSet,
};

/// A signed-in page request: who, and the token that keys its forms' CSRF tokens.
pub(crate) struct Session {
    caller: Caller,
    token: String,
}

impl Session {
    /// The CSRF token of a form posting to `action` (a path).
    fn csrf(&self, action: &str) -> String {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.token.as_bytes());
        URL_SAFE_NO_PAD.encode(ring::hmac::sign(&key, action.as_bytes()).as_ref())
    }

    /// Whether `given` is the CSRF token of a form posting to `action` (constant time).
    fn csrf_ok(&self, action: &str, given: &str) -> bool {
        let Ok(tag) = URL_SAFE_NO_PAD.decode(given) else {
            return false;
        };
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.token.as_bytes());
        ring::hmac::verify(&key, action.as_bytes(), &tag).is_ok()
    }

    /// Why this token may not call `method` on the API route `route`, if it may not.
    fn refusal(&self, method: &Method, route: &str) -> Option<String> {
        self.caller.may(method, route).err().map(|e| e.to_string())
    }

    /// The scope of the signed-in token.
    pub(crate) fn scope(&self) -> ApiScope {
        self.caller.scope
    }
}

/// The signed-in session of a page request (cookie or bearer header), or the response to send
/// instead: to the sign-in form, saying why when a cookie's token no longer authenticates
/// (which also clears that cookie).
pub(crate) async fn session(page: &Page, headers: &HeaderMap) -> Result<Session, Response> {
    let (token, from_cookie) = match (bearer_token(headers), cookie_token(headers)) {
        (Some(token), _) => (token, false),
        (None, Some(token)) => (token, true),
        (None, None) => return Err(to_login()),
    };
    let found = if token.is_empty() || token.len() > super::MAX_TOKEN {
        None
    } else {
        page.store
            .authenticate_api_token(&SecretString::from(token.as_str()))
            .await
            .map_err(|e| unavailable(&e))?
    };
    let Some(record) = found else {
        if !from_cookie {
            return Err(to_login());
        }
        let mut response = Redirect::to("/login?why=revoked").into_response();
        response
            .headers_mut()
            .insert(header::SET_COOKIE, clear_cookie(page));
        return Err(response);
    };
    Ok(Session {
        caller: Caller {
            token_id: record.id.0,
            name: record.name,
            scope: record.scope,
        },
        token,
    })
}

/// The routes of the actions, merged into the status page's.
pub(super) fn routes() -> axum::Router<Page> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/scale-sets/{id}/drain", post(drain))
        .route("/scale-sets/{id}/enable", post(enable))
        .route("/scale-sets/{id}/disable", post(disable))
        .route("/scale-sets/{id}/retry", post(retry))
        .route("/scale-sets/{id}/edit", post(edit))
        .route("/scale-sets/{id}/delete", get(confirm_delete).post(delete))
        .route("/fleet", get(fleet_form))
        .route("/fleet/plan", post(fleet_plan))
        .route("/fleet/apply", post(fleet_apply))
        .route("/decommission", get(decommission_preview))
}

// ---- rendering: the forms that go into the overview and detail pages ----

/// The scope each form needs: the API route it calls.
const DRAIN: (Method, &str) = (Method::POST, "/api/v1/scale-sets/{id}/drain");
const RETRY: (Method, &str) = (Method::POST, "/api/v1/scale-sets/{id}/retry");
const UPDATE: (Method, &str) = (Method::PATCH, "/api/v1/scale-sets/{id}");
const DELETE: (Method, &str) = (Method::DELETE, "/api/v1/scale-sets/{id}");
const PLAN: (Method, &str) = (Method::POST, "/api/v1/plan");
const APPLY: (Method, &str) = (Method::POST, "/api/v1/apply");
const DECOMMISSION: (Method, &str) = (Method::POST, "/api/v1/decommission/plan");

/// One POST form of a single button: `action`, its CSRF token, `hidden` fields; disabled
/// with the reason as its title when the session's scope does not open `needs`.
fn button(
    session: &Session,
    action: &str,
    label: &str,
    class: &str,
    hidden: &[(&str, String)],
    needs: &(Method, &str),
) -> Markup {
    let refusal = session.refusal(&needs.0, needs.1);
    html! {
        form.action method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf(action));
            @for (name, value) in hidden {
                input type="hidden" name=(name) value=(value);
            }
            button type="submit" class=(class) disabled[refusal.is_some()] title=[refusal.as_deref()] { (label) }
        }
    }
}

/// The buttons of one row of the overview: drain or enable, and retry now.
pub(crate) fn row_actions(session: &Session, set: &ScaleSet) -> Markup {
    let base = format!("/scale-sets/{}", set.id.0);
    let generation = [("generation", set.generation.to_string())];
    html! {
        div.actions {
            @if set.spec.enabled() {
                (button(session, &format!("{base}/drain"), "Drain", "drain", &[], &DRAIN))
                (button(session, &format!("{base}/retry"), "Retry now", "retry", &[], &RETRY))
            } @else {
                (button(session, &format!("{base}/enable"), "Enable", "enable", &generation, &UPDATE))
            }
        }
    }
}

/// Above the overview's table: where the fleet and decommission pages are, and the scope.
pub(crate) fn overview_bar(session: &Session) -> Markup {
    html! {
        nav.actions id="page-actions" {
            a href="/fleet" { "Apply a fleet file" }
            " · "
            a href="/decommission" { "Decommission preview" }
            span.sub id="scope" { " · signed in as " code { (session.caller.name) } ", scope " b { (session.scope()) } }
        }
    }
}

/// What an action just did, from the `?done=` the redirect after it carries.
fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "drain" => {
            "Drain asked for: the scale set is no longer served (no new runners); idle runners \
             are retired and busy ones finish their jobs."
        }
        "enable" => {
            "Enabled: the worker serving it makes runners for it again within its watch \
             interval (10 s by default)."
        }
        "disable" => "Disabled: no longer served; its runners are retired as for a drain.",
        "retry" => {
            "Retry asked for: the worker serving it tries again within its watch interval \
             (10 s by default), without waiting out its back-off."
        }
        "edit" => {
            "Saved: the worker serving it applies the change within its watch interval \
             (10 s by default)."
        }
        _ => return None,
    })
}

/// The action bar of a scale set's page: the notice of what was just done, drain, enable or
/// disable, retry now, max runners and min idle, delete.
pub(crate) fn detail_actions(session: &Session, set: &ScaleSet, done: Option<&str>) -> Markup {
    let base = format!("/scale-sets/{}", set.id.0);
    let generation = ("generation", set.generation.to_string());
    let edit = format!("{base}/edit");
    let edit_refusal = session.refusal(&UPDATE.0, UPDATE.1);
    html! {
        @if let Some(text) = notice(done) {
            p.notice id="notice" role="status" { (text) }
        }
        section.actions id="actions" {
            @if set.spec.enabled() {
                (button(session, &format!("{base}/drain"), "Drain", "drain", &[], &DRAIN))
                (button(session, &format!("{base}/disable"), "Disable", "disable", std::slice::from_ref(&generation), &UPDATE))
                (button(session, &format!("{base}/retry"), "Retry now", "retry", &[], &RETRY))
            } @else {
                (button(session, &format!("{base}/enable"), "Enable", "enable", std::slice::from_ref(&generation), &UPDATE))
            }
            form.action.edit id="edit" method="post" action=(edit) {
                input type="hidden" name="csrf" value=(session.csrf(&edit));
                input type="hidden" name="generation" value=(set.generation);
                label { "max runners " input type="number" name="max_runners" min="0" value=(set.spec.max_runners()) disabled[edit_refusal.is_some()]; }
                label { "min idle " input type="number" name="min_idle" min="0" value=(set.spec.min_idle()) disabled[edit_refusal.is_some()]; }
                button type="submit" class="save" disabled[edit_refusal.is_some()] title=[edit_refusal.as_deref()] { "Save" }
            }
            a.delete href={ (base) "/delete" } { "Delete…" }
            @if let Some(why) = session.refusal(&DRAIN.0, DRAIN.1) {
                p.sub id="actions-refused" { (why) }
            }
        }
    }
}

// ---- handlers ----

/// A page saying why an action was not done, with `status`, and the way back.
fn refused_page(status: StatusCode, title: &str, message: &str, back: &str) -> Response {
    let body = page(
        title,
        &html! {
            p { a href=(back) { "← back" } }
            h2 { (title) }
            p.error id="refused" { (message) }
        },
        true,
        false,
    );
    (status, Html(body)).into_response()
}

/// The page for an API error met by an action: the route's own message and status; a stale
/// generation says that the form was stale.
fn api_error_page(error: &ApiError, back: &str) -> Response {
    let status = crate::error::status(error.code());
    let message = match error {
        ApiError::StaleGeneration { given, current, .. } => format!(
            "This form was stale: it was read at generation {given}, and the scale set has \
             changed since (now at generation {current}). Nothing was changed. Reload the page \
             to see the current values, then try again."
        ),
        other => other.to_string(),
    };
    let title = if status == StatusCode::FORBIDDEN {
        "Not allowed"
    } else {
        "Not done"
    };
    refused_page(status, title, &message, back)
}

/// The checks every action POST passes before it acts: signed in, from this server's own
/// page (Origin), with the form's CSRF token, and a scope that opens `needs`. `path` is the
/// form's action.
async fn checked(
    page: &Page,
    headers: &HeaderMap,
    path: &str,
    fields: &Fields,
    needs: &(Method, &str),
) -> Result<Session, Response> {
    let session = session(page, headers).await?;
    if !same_origin(headers) {
        return Err(refused_page(
            StatusCode::FORBIDDEN,
            "Not allowed",
            "Refused: the form was posted from another site. Use this server's own page.",
            "/",
        ));
    }
    if !session.csrf_ok(path, fields.get("csrf")) {
        return Err(refused_page(
            StatusCode::FORBIDDEN,
            "Not allowed",
            "Refused: the form's security token is missing or not this session's (a form from \
             another session or site, or an old page). Reload the page and try again.",
            "/",
        ));
    }
    if let Err(e) = session.caller.may(&needs.0, needs.1) {
        return Err(api_error_page(&e, "/"));
    }
    Ok(session)
}

fn fields_of(headers: &HeaderMap, body: &Bytes) -> Result<Fields, form_data::FormError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    form_data::parse(content_type, body)
}

/// The page for a body that is no form this page reads.
fn bad_form(e: &form_data::FormError) -> Response {
    refused_page(StatusCode::BAD_REQUEST, "Not done", &format!("{e}."), "/")
}

/// The id of a scale-set action's path (`None`: not a scale set's, [`no_such_scale_set`]).
fn scale_set_id(id: &str) -> Option<ScaleSetId> {
    uuid::Uuid::parse_str(id).ok().map(ScaleSetId)
}

fn no_such_scale_set() -> Response {
    refused_page(
        StatusCode::NOT_FOUND,
        "Not found",
        "No such scale set.",
        "/",
    )
}

/// A scale-set action: checks, then `act` (the API route's handler), then a redirect to the
/// scale set's page with what was done.
async fn scale_set_action<F, Fut>(
    page: Page,
    id: String,
    headers: HeaderMap,
    body: Bytes,
    (verb, needs): (&str, &(Method, &str)),
    act: F,
) -> Response
where
    F: FnOnce(Page, String, Fields) -> Fut,
    Fut: std::future::Future<Output = Result<(), ApiError>>,
{
    let fields = match fields_of(&headers, &body) {
        Ok(fields) => fields,
        Err(e) => return bad_form(&e),
    };
    if scale_set_id(&id).is_none() {
        return no_such_scale_set();
    }
    let path = format!("/scale-sets/{id}/{verb}");
    if let Err(response) = checked(&page, &headers, &path, &fields, needs).await {
        return response;
    }
    let back = format!("/scale-sets/{id}");
    match act(page, id, fields).await {
        Ok(()) => Redirect::to(&format!("{back}?done={verb}")).into_response(),
        Err(e) => api_error_page(&e, &back),
    }
}

/// The generation field of a form, or the 400 saying the form is not this page's.
fn generation(fields: &Fields) -> Result<i64, ApiError> {
    fields
        .get("generation")
        .parse()
        .map_err(|_| ApiError::InvalidInput {
            field: "generation".to_owned(),
            reason: "the form carries no generation; reload the page and use its form".to_owned(),
        })
}

async fn drain(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    scale_set_action(
        page,
        id,
        headers,
        body,
        ("drain", &DRAIN),
        |page, id, _| async move { scale_sets::drain(State(page), Path(id)).await.map(drop) },
    )
    .await
}

async fn retry(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    scale_set_action(
        page,
        id,
        headers,
        body,
        ("retry", &RETRY),
        |page, id, _| async move { scale_sets::retry(State(page), Path(id)).await.map(drop) },
    )
    .await
}

/// `PATCH /api/v1/scale-sets/{id}` with `change` at the form's generation.
async fn update(
    page: Page,
    id: String,
    fields: &Fields,
    change: UpdateScaleSet,
) -> Result<(), ApiError> {
    let change = UpdateScaleSet {
        generation: generation(fields)?,
        ..change
    };
    scale_sets::update(State(page), Path(id), Body(change))
        .await
        .map(drop)
}

async fn enable(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    set_enabled(page, id, headers, body, true).await
}

async fn disable(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    set_enabled(page, id, headers, body, false).await
}

/// Enable and disable: the same update of the one field, under the name the form posts.
async fn set_enabled(
    page: Page,
    id: String,
    headers: HeaderMap,
    body: Bytes,
    enabled: bool,
) -> Response {
    let name = if enabled { "enable" } else { "disable" };
    scale_set_action(
        page,
        id,
        headers,
        body,
        (name, &UPDATE),
        move |page, id, fields| async move {
            let change = UpdateScaleSet {
                enabled: Some(enabled),
                ..UpdateScaleSet::default()
            };
            update(page, id, &fields, change).await
        },
    )
    .await
}

/// A whole number field of a form, or the 400 naming it.
fn count(fields: &Fields, name: &str) -> Result<u32, ApiError> {
    fields
        .get(name)
        .trim()
        .parse()
        .map_err(|_| ApiError::InvalidInput {
            field: name.to_owned(),
            reason: format!("{:?} is not a whole number of 0 or more", fields.get(name)),
        })
}

async fn edit(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    scale_set_action(
        page,
        id,
        headers,
        body,
        ("edit", &UPDATE),
        |page, id, fields| async move {
            let change = UpdateScaleSet {
                max_runners: Some(count(&fields, "max_runners")?),
                min_idle: Some(count(&fields, "min_idle")?),
                ..UpdateScaleSet::default()
            };
            update(page, id, &fields, change).await
        },
    )
    .await
}

/// The delete's confirmation: what happens on GitHub (the deletion planner's own words, with
/// and without force), and the form that deletes at the generation read here.
async fn confirm_delete(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match session(&page, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let Some(scale_set_id) = scale_set_id(&id) else {
        return no_such_scale_set();
    };
    let set = match page.store.get_scale_set(scale_set_id).await {
        Ok(set) => set,
        Err(e) if e.is_not_found() => {
            return refused_page(
                StatusCode::NOT_FOUND,
                "Not found",
                "No such scale set.",
                "/",
            );
        }
        Err(e) => return unavailable(&e),
    };
    let plain = scaleset_fleet::plan_deletion(&set, false);
    let forced = scaleset_fleet::plan_deletion(&set, true);
    let action = format!("/scale-sets/{id}/delete");
    let refusal = session.refusal(&DELETE.0, DELETE.1);
    let body = html! {
        p { a href={ "/scale-sets/" (id) } { "← " (set.spec.name()) } }
        h2 { "Delete scale set " (set.spec.name()) "?" }
        p id="what-happens" { "On GitHub: " (plain) "." }
        ul.sub {
            li { "Its instances must be gone first: drain it and wait until it shows none, or the delete is refused." }
            li { "A worker serving it must have let it go (draining does that)." }
            li { "A scale set the configuration file declares cannot be deleted here: remove it from the file first." }
        }
        form.action.confirm method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf(&action));
            input type="hidden" name="generation" value=(set.generation);
            @if forced != plain {
                label {
                    input type="checkbox" name="force" value="true" disabled[refusal.is_some()];
                    " Force: " (forced) "."
                }
            }
            button type="submit" class="delete" disabled[refusal.is_some()] title=[refusal.as_deref()] { "Delete " (set.spec.name()) }
            " "
            a href={ "/scale-sets/" (id) } { "Cancel" }
        }
        @if let Some(why) = refusal {
            p.sub id="actions-refused" { (why) }
        }
    };
    Html(page_of(&format!("Delete {}", set.spec.name()), &body)).into_response()
}

fn page_of(title: &str, body: &Markup) -> String {
    page(title, body, true, false)
}

async fn delete(
    State(page): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fields = match fields_of(&headers, &body) {
        Ok(fields) => fields,
        Err(e) => return bad_form(&e),
    };
    if scale_set_id(&id).is_none() {
        return no_such_scale_set();
    }
    let path = format!("/scale-sets/{id}/delete");
    if let Err(response) = checked(&page, &headers, &path, &fields, &DELETE).await {
        return response;
    }
    let back = format!("/scale-sets/{id}");
    let generation = match generation(&fields) {
        Ok(generation) => generation,
        Err(e) => return api_error_page(&e, &back),
    };
    let query = scale_sets::DeleteQuery {
        force: fields.checked("force"),
        generation: Some(generation),
    };
    match scale_sets::delete(State(page), Path(id), Params(query)).await {
        Ok(Json(done)) => {
            let body = html! {
                p { a href="/" { "← all scale sets" } }
                h2 { "Deleted" }
                p.notice id="notice" role="status" { (done.reason) "." }
            };
            Html(page_of("Deleted", &body)).into_response()
        }
        Err(e) => api_error_page(&e, &back),
    }
}

/// The fleet page: paste or upload a fleet file, then see its plan.
async fn fleet_form(State(page): State<Page>, headers: HeaderMap) -> Response {
    let session = match session(&page, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    Html(page_of("Apply a fleet file", &fleet_input(&session, ""))).into_response()
}

fn fleet_input(session: &Session, text: &str) -> Markup {
    let refusal = session.refusal(&PLAN.0, PLAN.1);
    html! {
        p { a href="/" { "← all scale sets" } }
        h2 { "Apply a fleet file" }
        p.sub {
            "Paste the fleet file or upload it, and see what applying it would change before "
            "anything is written. Credentials are named, not declared: the fleet's scale sets "
            "use credentials stored on the server."
        }
        form.fleet id="fleet-form" method="post" action="/fleet/plan" enctype="multipart/form-data" {
            input type="hidden" name="csrf" value=(session.csrf("/fleet/plan"));
            label for="fleet" { "Fleet file (TOML)" }
            textarea id="fleet" name="fleet" rows="16" cols="90" spellcheck="false" { (text) }
            label for="file" { "or upload it" }
            input id="file" type="file" name="file" accept=".toml,text/plain";
            label { input type="checkbox" name="prune" value="true"; " prune: also detach stored scale sets the file no longer declares" }
            button type="submit" id="plan" disabled[refusal.is_some()] title=[refusal.as_deref()] { "Plan" }
        }
        @if let Some(why) = refusal {
            p.sub id="actions-refused" { (why) }
        }
    }
}

fn action_word(action: PlanAction) -> &'static str {
    match action {
        PlanAction::Create => "create",
        PlanAction::Adopt => "adopt",
        PlanAction::Update => "update",
        PlanAction::Detach => "detach",
        PlanAction::Refuse => "refuse",
        PlanAction::Unchanged => "unchanged",
    }
}

fn plan_table(plan: &PlanResponse) -> Markup {
    html! {
        p id="digest" { "Plan digest " code { (plan.digest) } }
        @if plan.has_refusals {
            p.error { "Some scale sets would be refused: their reason says why." }
        }
        @if !plan.credentials.is_empty() || !plan.entities.is_empty() {
            ul.sub {
                @for c in &plan.credentials { li { "credentials " (c.name) ": " (c.action) } }
                @for e in &plan.entities { li { (e.entity) " (credentials " (e.credentials) "): " (e.action) } }
            }
        }
        table id="plan" {
            thead { tr { th { "scale set" } th { "entity" } th { "action" } th { "reason" } th { "changes" } } }
            tbody {
                @for s in &plan.scale_sets {
                    tr.planned data-name=(s.name) data-action=(action_word(s.action)) {
                        td { (s.name) div.sub { "group " (s.runner_group) } }
                        td { (s.entity) }
                        td { b { (action_word(s.action)) } }
                        td { (s.reason) }
                        td {
                            @for c in &s.changes {
                                div { code { (c.field) } ": " (c.from.as_deref().unwrap_or("—")) " → " (c.to.as_deref().unwrap_or("—")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Plans the pasted or uploaded fleet with the API's own plan; shows it with the form that
/// applies exactly this plan (its digest) and this text.
async fn fleet_plan(State(page): State<Page>, headers: HeaderMap, body: Bytes) -> Response {
    let fields = match fields_of(&headers, &body) {
        Ok(fields) => fields,
        Err(e) => return bad_form(&e),
    };
    let session = match checked(&page, &headers, "/fleet/plan", &fields, &PLAN).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    // An uploaded file wins over the text box.
    let text = match fields.get("file") {
        "" => fields.get("fleet").to_owned(),
        file => file.to_owned(),
    };
    let prune = fields.checked("prune");
    let request = PlanRequest {
        fleet: text.clone(),
        prune,
    };
    let planned = match plan::plan(State(page), Body(request)).await {
        Ok(Json(planned)) => planned,
        Err(e) => {
            let status = crate::error::status(e.code());
            let body = html! {
                p.error id="refused" { (e) }
                (fleet_input(&session, &text))
            };
            return (status, Html(page_of("Apply a fleet file", &body))).into_response();
        }
    };
    let refusal = session.refusal(&APPLY.0, APPLY.1);
    let body = html! {
        p { a href="/fleet" { "← edit the fleet file" } }
        h2 { "Plan" }
        (plan_table(&planned))
        @if planned.has_changes {
            form.action.confirm id="apply-form" method="post" action="/fleet/apply" {
                input type="hidden" name="csrf" value=(session.csrf("/fleet/apply"));
                input type="hidden" name="digest" value=(planned.digest);
                input type="hidden" name="fleet" value=(text);
                @if prune { input type="hidden" name="prune" value="true"; }
                button type="submit" id="apply" disabled[refusal.is_some()] title=[refusal.as_deref()] { "Apply this plan" }
                span.sub { " Applied only if planning again gives the same digest: if anything changed meanwhile, it is refused and you review the new plan." }
            }
        } @else {
            p.notice id="notice" { "Nothing to apply: the store already holds this fleet." }
        }
    };
    Html(page_of("Fleet plan", &body)).into_response()
}

/// Applies the reviewed plan through the API's own apply (refused, saying so, if the plan
/// changed since).
async fn fleet_apply(State(page): State<Page>, headers: HeaderMap, body: Bytes) -> Response {
    let fields = match fields_of(&headers, &body) {
        Ok(fields) => fields,
        Err(e) => return bad_form(&e),
    };
    if let Err(response) = checked(&page, &headers, "/fleet/apply", &fields, &APPLY).await {
        return response;
    }
    let request = ApplyRequest {
        fleet: fields.get("fleet").to_owned(),
        prune: fields.checked("prune"),
        digest: fields.get("digest").to_owned(),
    };
    match plan::apply(State(page), Body(request)).await {
        Ok(Json(applied)) => {
            let body = html! {
                p { a href="/" { "← all scale sets" } }
                h2 { "Applied" }
                p.notice id="notice" role="status" {
                    "Applied plan " code { (applied.plan.digest) } ": " (applied.writes) " write(s), "
                    (applied.created.len()) " scale set(s) stored. Workers ensure new scale sets on GitHub at their next watch."
                }
                (plan_table(&applied.plan))
            };
            Html(page_of("Fleet applied", &body)).into_response()
        }
        Err(e) => api_error_page(&e, "/fleet"),
    }
}

/// The decommission plan, read-only: what `scalesetctl decommission` would tear down.
async fn decommission_preview(State(page): State<Page>, headers: HeaderMap) -> Response {
    let session = match session(&page, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    if let Err(e) = session.caller.may(&DECOMMISSION.0, DECOMMISSION.1) {
        return api_error_page(&e, "/");
    }
    let planned = match decommission::plan(State(page), Body(DecommissionRequest::default())).await
    {
        Ok(Json(planned)) => planned,
        Err(e) => return api_error_page(&e, "/"),
    };
    let body = html! {
        p { a href="/" { "← all scale sets" } }
        h2 { "Decommission preview" }
        p.sub {
            "What decommissioning this controller would do, read-only: nothing here changes "
            "anything. To carry it out, use " code { "scalesetctl decommission" } " (it shows "
            "this plan and asks for its digest)."
        }
        p id="digest" { "Plan digest " code { (planned.digest) } }
        @if planned.steps.is_empty() {
            p.empty { "Nothing to tear down." }
        } @else {
            table id="decommission" {
                thead { tr { th { "act" } th { "what" } th { "subject" } th { "why" } } }
                tbody {
                    @for s in &planned.steps {
                        tr.step data-act=(s.act) { td { b { (s.act) } } td { (s.kind) } td { code { (s.subject) } } td { (s.reason) } }
                    }
                }
            }
        }
    };
    Html(page_of("Decommission preview", &body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_notice_is_a_sentence_in_the_operators_words() {
        for done in ["drain", "enable", "disable", "retry", "edit"] {
            let text = notice(Some(done)).unwrap_or_default();
            assert!(text.ends_with('.'), "{done}: {text}");
            assert!(
                !text.contains("next watch") && !text.contains('`') && !text.contains('['),
                "{done}: {text}"
            );
        }
        assert_eq!(notice(Some("unknown")), None);
        assert_eq!(notice(None), None);
    }
}
