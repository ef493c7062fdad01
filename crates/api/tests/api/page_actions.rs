//! The status page's actions over real HTTP, as a browser without JavaScript sends them
//! (URL-encoded or multipart forms, the session cookie, this server's Origin): each goes
//! through the API route's own handler (same state, same events), answers with a redirect to
//! the page showing the new state, refuses a stale form, a forged one (no or another form's
//! CSRF token, another site's Origin) and a token whose scope is too narrow, with the reason.

use scaleset_store::test_util::simulator_credentials;
use scaleset_store::{
    ApiScope, ApiTokenStore as _, CredentialStore as _, ExposeSecret as _, ScaleSetStore as _,
};

use crate::helpers::{App, Backend, backend_tests};

backend_tests!(
    the_fleet_page_plans_an_uploaded_file_and_applies_the_reviewed_plan,
    a_drain_and_an_edit_from_the_page_go_through_the_api_and_show_the_new_state,
    page_actions_need_the_forms_token_this_site_and_the_scope,
    the_delete_confirmation_states_what_happens_on_github_and_the_delete_goes_through,
);

const FLEET: &str = r#"
[[scale_set]]
name = "linux"
credentials = "sim"
organization = "acme"
provider = "fake"
max_runners = 4
"#;

/// A signed-in browser: the session cookie of a token of `scope`.
struct Browser<'a> {
    app: &'a App,
    cookie: String,
}

impl<'a> Browser<'a> {
    async fn signed_in(app: &'a App, scope: ApiScope) -> Self {
        let cookie = if scope == ApiScope::Admin {
            format!("scaleset_token={}", app.token)
        } else {
            let (_, secret) = app
                .store
                .create_scoped_api_token(scope.as_str(), scope)
                .await
                .expect("a token");
            format!("scaleset_token={}", secret.expose_secret())
        };
        Self { app, cookie }
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let (status, _, body) = self
            .app
            .send("GET", path, &[("cookie", &self.cookie)], None)
            .await;
        (status, body)
    }

    /// POSTs `fields` URL-encoded to `path` from this server's own page.
    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (u16, Option<String>, String) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        self.post_raw(
            path,
            &self.app.base,
            "application/x-www-form-urlencoded",
            body.into_bytes(),
        )
        .await
    }

    async fn post_raw(
        &self,
        path: &str,
        origin: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (u16, Option<String>, String) {
        let (status, headers, text) = self
            .app
            .send(
                "POST",
                path,
                &[
                    ("cookie", &self.cookie),
                    ("origin", origin),
                    ("content-type", content_type),
                ],
                Some(body),
            )
            .await;
        let location = headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (status, location, text)
    }
}

/// The value of the hidden field `name` of the form posting to `action` in `page`.
fn field(page: &str, action: &str, name: &str) -> String {
    let form = page
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no form posting to {action} in:\n{page}"));
    let rest = &page[form..];
    let end = rest.find("</form>").unwrap_or(rest.len());
    let rest = &rest[..end];
    let at = rest
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no {name} in the form posting to {action}:\n{rest}"));
    let value = &rest[at + name.len() + 15..];
    value[..value.find('"').expect("a closing quote")].replace("&quot;", "\"")
}

/// The button of the form posting to `action`, as rendered.
fn button(page: &str, action: &str) -> String {
    let form = page
        .find(&format!("action=\"{action}\""))
        .expect("the form");
    let rest = &page[form..];
    let at = rest.find("<button").expect("a button");
    rest[at..at + rest[at..].find('>').expect("the tag's end")].to_owned()
}

/// The app with credentials `sim` and the fleet applied through the API: one scale set.
async fn with_a_scale_set(backend: Backend, test: &str) -> (App, String) {
    let app = App::start(backend, test).await;
    app.store
        .create_credentials(simulator_credentials("http://127.0.0.1:9"))
        .await
        .expect("credentials");
    let planned = app
        .call(
            "POST",
            "/api/v1/plan",
            Some(serde_json::json!({"fleet": FLEET})),
        )
        .await;
    let applied = app
        .call(
            "POST",
            "/api/v1/apply",
            Some(serde_json::json!({"fleet": FLEET, "digest": planned.json["digest"]})),
        )
        .await;
    assert_eq!(applied.status, 200, "{applied:?}");
    let id = applied.json["created"][0]
        .as_str()
        .expect("created")
        .to_owned();
    (app, id)
}

async fn the_fleet_page_plans_an_uploaded_file_and_applies_the_reviewed_plan(backend: Backend) {
    let app = App::start(
        backend,
        "the_fleet_page_plans_an_uploaded_file_and_applies_the_reviewed_plan",
    )
    .await;
    app.store
        .create_credentials(simulator_credentials("http://127.0.0.1:9"))
        .await
        .expect("credentials");
    let admin = Browser::signed_in(&app, ApiScope::Admin).await;
    let (status, form) = admin.get("/fleet").await;
    assert_eq!(status, 200, "{form}");
    assert!(form.contains("enctype=\"multipart/form-data\""), "{form}");
    let csrf = field(&form, "/fleet/plan", "csrf");
    let multipart = format!(
        "--b0undary\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n\
         --b0undary\r\nContent-Disposition: form-data; name=\"fleet\"\r\n\r\n\r\n\
         --b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"fleet.toml\"\r\n\
         Content-Type: application/toml\r\n\r\n{FLEET}\r\n--b0undary--\r\n"
    );
    let before = app.written().await;
    let (status, _, planned) = admin
        .post_raw(
            "/fleet/plan",
            &app.base,
            "multipart/form-data; boundary=b0undary",
            multipart.into_bytes(),
        )
        .await;
    assert_eq!(status, 200, "{planned}");
    assert_eq!(app.written().await, before, "a plan writes nothing");
    assert!(
        planned.contains("data-name=\"linux\" data-action=\"create\""),
        "{planned}"
    );
    let digest = field(&planned, "/fleet/apply", "digest");
    assert_eq!(digest.len(), 64, "{digest}");
    assert!(planned.contains(&digest));
    let (status, _, applied) = admin
        .post(
            "/fleet/apply",
            &[
                ("csrf", &field(&planned, "/fleet/apply", "csrf")),
                ("digest", &digest),
                ("fleet", &field(&planned, "/fleet/apply", "fleet")),
            ],
        )
        .await;
    assert_eq!(status, 200, "{applied}");
    assert!(applied.contains("1 scale set(s) stored"), "{applied}");
    let listed = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(
        listed.json["items"][0]["spec"]["name"], "linux",
        "{listed:?}"
    );
    // The same digest again: the world changed (it is applied), so the API's stale_plan.
    let (status, _, again) = admin
        .post(
            "/fleet/apply",
            &[
                ("csrf", &field(&planned, "/fleet/apply", "csrf")),
                ("digest", &digest),
                ("fleet", FLEET),
            ],
        )
        .await;
    assert_eq!(status, 409, "{again}");
}

async fn a_drain_and_an_edit_from_the_page_go_through_the_api_and_show_the_new_state(
    backend: Backend,
) {
    let (app, id) = with_a_scale_set(
        backend,
        "a_drain_and_an_edit_from_the_page_go_through_the_api_and_show_the_new_state",
    )
    .await;
    let operator = Browser::signed_in(&app, ApiScope::Operate).await;
    let detail = format!("/scale-sets/{id}");
    let (status, page) = operator.get(&detail).await;
    assert_eq!(status, 200, "{page}");
    let edit = format!("{detail}/edit");
    let stale_generation = field(&page, &edit, "generation");
    let (status, location, _) = operator
        .post(
            &edit,
            &[
                ("csrf", &field(&page, &edit, "csrf")),
                ("generation", &stale_generation),
                ("max_runners", "9"),
                ("min_idle", "1"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    assert_eq!(location.as_deref(), Some(&*format!("{detail}?done=edit")));
    let shown = app.call("GET", &format!("/api/v1{detail}"), None).await;
    assert_eq!(shown.json["spec"]["max_runners"], 9, "{shown:?}");
    assert_eq!(shown.json["spec"]["min_idle"], 1, "{shown:?}");
    // The same form again: its generation is stale now, and the answer says so.
    let (status, _, refused) = operator
        .post(
            &edit,
            &[
                ("csrf", &field(&page, &edit, "csrf")),
                ("generation", &stale_generation),
                ("max_runners", "2"),
                ("min_idle", "0"),
            ],
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused.contains("This form was stale"), "{refused}");
    let unchanged = app.call("GET", &format!("/api/v1{detail}"), None).await;
    assert_eq!(unchanged.json["spec"]["max_runners"], 9);

    let drain = format!("{detail}/drain");
    let (status, location, _) = operator
        .post(&drain, &[("csrf", &field(&page, &drain, "csrf"))])
        .await;
    assert_eq!(status, 303);
    assert_eq!(location.as_deref(), Some(&*format!("{detail}?done=drain")));
    let shown = app.call("GET", &format!("/api/v1{detail}"), None).await;
    assert_eq!(shown.json["spec"]["enabled"], false, "{shown:?}");
    let kinds: Vec<&str> = shown.json["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"drain"), "the API route's event: {kinds:?}");
    assert!(kinds.contains(&"updated"), "the edit's event: {kinds:?}");
    let (_, after) = operator.get(&format!("{detail}?done=drain")).await;
    assert!(after.contains("id=\"notice\""), "{after}");
    assert!(
        after.contains(&format!("action=\"{detail}/enable\"")),
        "a drained set offers enable: {after}"
    );
}

async fn page_actions_need_the_forms_token_this_site_and_the_scope(backend: Backend) {
    let (app, id) = with_a_scale_set(
        backend,
        "page_actions_need_the_forms_token_this_site_and_the_scope",
    )
    .await;
    let detail = format!("/scale-sets/{id}");
    let drain = format!("{detail}/drain");
    let operator = Browser::signed_in(&app, ApiScope::Operate).await;
    let (_, page) = operator.get(&detail).await;
    let csrf = field(&page, &drain, "csrf");
    let reader = Browser::signed_in(&app, ApiScope::Read).await;
    let before = app.written().await;

    let (status, _, refused) = operator.post(&drain, &[]).await;
    assert_eq!(status, 403, "no CSRF token: {refused}");
    let other = field(&page, &format!("{detail}/retry"), "csrf");
    let (status, _, _) = operator.post(&drain, &[("csrf", &other)]).await;
    assert_eq!(status, 403, "another form's token");
    let (_, read_page) = reader.get(&detail).await;
    let (status, _, _) = reader.post(&drain, &[("csrf", &csrf)]).await;
    assert_eq!(status, 403, "another session's token");
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &csrf)
        .finish();
    let (status, _, _) = operator
        .post_raw(
            &drain,
            "http://evil.example",
            "application/x-www-form-urlencoded",
            form.into_bytes(),
        )
        .await;
    assert_eq!(status, 403, "another site");

    // A read token sees the buttons disabled with the reason, and a POST anyway is refused.
    assert!(
        button(&read_page, &drain).contains("disabled"),
        "{read_page}"
    );
    assert!(!button(&page, &drain).contains("disabled"), "{page}");
    assert!(read_page.contains("needs `operate`"), "{read_page}");
    let (status, _, refused) = reader
        .post(&drain, &[("csrf", &field(&read_page, &drain, "csrf"))])
        .await;
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused.contains("has scope `read`") && refused.contains("needs `operate`"),
        "{refused}"
    );
    // The fleet and decommission pages are admin's.
    let (_, fleet) = operator.get("/fleet").await;
    let (status, _, refused) = operator
        .post(
            "/fleet/plan",
            &[
                ("csrf", &field(&fleet, "/fleet/plan", "csrf")),
                ("fleet", FLEET),
            ],
        )
        .await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.contains("needs `admin`"), "{refused}");
    let (status, refused) = operator.get("/decommission").await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(app.written().await, before, "nothing refused was written");
}

async fn the_delete_confirmation_states_what_happens_on_github_and_the_delete_goes_through(
    backend: Backend,
) {
    let (app, id) = with_a_scale_set(
        backend,
        "the_delete_confirmation_states_what_happens_on_github_and_the_delete_goes_through",
    )
    .await;
    let operator = Browser::signed_in(&app, ApiScope::Operate).await;
    let delete = format!("/scale-sets/{id}/delete");
    let (status, confirm) = operator.get(&delete).await;
    assert_eq!(status, 200, "{confirm}");
    // Never ensured (no GitHub id): the deletion planner's words say nothing is on GitHub.
    let stored = app
        .store
        .get_scale_set(scaleset_store::ScaleSetId(id.parse().unwrap()))
        .await
        .unwrap();
    let words = scaleset_fleet::plan_deletion(&stored, false).to_string();
    assert!(confirm.contains(&words), "{words} in {confirm}");
    let (status, _, done) = operator
        .post(
            &delete,
            &[
                ("csrf", &field(&confirm, &delete, "csrf")),
                ("generation", &field(&confirm, &delete, "generation")),
            ],
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert!(done.contains("Deleted"), "{done}");
    let gone = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(gone.status, 404);
}
