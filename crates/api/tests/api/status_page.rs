//! Issue 32 items 2 and 4: the status page over real HTTP. What needs attention (a held
//! session, a failing provider, jobs waiting past the bootstrap timeout) is counted and shown
//! with its reason and remedy, the same as the API says; the pager says which rows it shows; an
//! unknown filter says so; a busy runner shows no countdown; an unknown URL answers a browser in
//! HTML. Every page carries the security headers, a cross-origin sign-in is refused, and a
//! revoked token is told on the sign-in form. The scale sets are written through the store, as
//! the worker writes them.

use std::time::Duration;

use scaleset_store::{
    ApiTokenStore as _, EntityId, InstanceStatus, InstanceStore as _, JobShown, ManualClock,
    NewInstance, NewScaleSet, ScaleSetSpec, ScaleSetState, ScaleSetStore as _, Timestamp,
};

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(
    the_page_counts_and_shows_what_needs_attention,
    pages_carry_the_security_headers,
    a_cross_origin_sign_in_is_refused,
    after_a_revoked_token_the_sign_in_page_says_why,
    an_unknown_url_is_html_for_a_browser_and_json_for_a_client,
    a_drained_or_disabled_scale_set_is_shown_as_such_and_not_counted_as_ready,
);

pub(crate) fn spec(name: &str) -> ScaleSetSpec {
    scaleset_store::test_util::spec_with(name, |raw| {
        raw.labels = vec!["linux".to_owned()];
        raw.disable_update = Some(false);
        raw.max_runners = Some(4);
    })
}

async fn lease(
    store: &dyn scaleset_store::Store,
    id: scaleset_store::ScaleSetId,
) -> scaleset_store::Lease {
    match store
        .acquire_lease(id, "worker-a", Duration::from_secs(600))
        .await
        .unwrap()
    {
        scaleset_store::Acquisition::Acquired(lease) => lease,
        other => panic!("{other:?}"),
    }
}

fn bearer(app: &App) -> String {
    format!("Bearer {}", app.token)
}

/// The rows of a rendered overview, as `(name, needs attention)`.
fn rows(page: &str) -> Vec<(String, bool)> {
    page.split(r#"<tr class="scale-set" data-name=""#)
        .skip(1)
        .map(|rest| {
            let name = rest.split('"').next().unwrap_or_default().to_owned();
            (
                name,
                rest.split('>')
                    .next()
                    .unwrap_or_default()
                    .contains(r#"data-attention="yes""#),
            )
        })
        .collect()
}

/// The number in a summary card.
fn card(page: &str, id: &str) -> u64 {
    let from = page
        .find(&format!(r#"<b id="{id}">"#))
        .unwrap_or_else(|| panic!("no card {id}: {page}"));
    page[from..]
        .split('>')
        .nth(1)
        .and_then(|t| t.split('<').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("card {id} holds no number"))
}

async fn the_page_counts_and_shows_what_needs_attention(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "attention").await;
    let entity = EntityId(app.seed(&sim).await.parse().unwrap());
    let long = "n".repeat(100);
    let mut ids = std::collections::HashMap::new();
    for i in 0..62 {
        let name = format!("set-{i:02}");
        let set = app
            .store
            .create_scale_set(NewScaleSet {
                entity_id: entity,
                spec: spec(&name),
            })
            .await
            .unwrap();
        ids.insert(name, set.id);
    }
    for name in ["blocked", "provider", "waiting", long.as_str()] {
        let set = app
            .store
            .create_scale_set(NewScaleSet {
                entity_id: entity,
                spec: spec(name),
            })
            .await
            .unwrap();
        ids.insert(name.to_owned(), set.id);
    }
    // Every set ready, as the worker leaves a served one.
    for id in ids.values() {
        let mut set = app.store.get_scale_set(*id).await.unwrap();
        set.state = ScaleSetState::Ready;
        set.github_id = Some(1);
        app.store.update_scale_set(&set).await.unwrap();
    }
    // A blocked session, as the listener records a conflict.
    let mut blocked = app.store.get_scale_set(ids["blocked"]).await.unwrap();
    blocked.state = ScaleSetState::ForeignSession;
    blocked.state_reason =
        "another listener (\"other-owner\") holds the message session; stop it".to_owned();
    app.store.update_scale_set(&blocked).await.unwrap();
    // A failing provider, as the scaler records it.
    let held = lease(app.store.as_ref(), ids["provider"]).await;
    app.store
        .set_provider_error(&held, Some("fake: quota exceeded"))
        .await
        .unwrap();
    // Twelve jobs waiting since an hour ago (a worker whose clock says so).
    let hour_ago = Timestamp::from_unix_millis(
        Timestamp::from_system_time(std::time::SystemTime::now()).unix_millis() - 3_600_000,
    );
    let worker = app.store_at(ManualClock::new(hour_ago)).await;
    let held = lease(&worker, ids["waiting"]).await;
    worker.set_jobs_waiting(&held, 12).await.unwrap();
    // A busy runner whose bootstrap deadline is ahead: no countdown for it.
    let deadline = Timestamp::from_unix_millis(hour_ago.unix_millis() + 7_200_000);
    let held = lease(app.store.as_ref(), ids["set-00"]).await;
    app.store
        .create_instance(
            &held,
            NewInstance::pending("runner-busy", "pool", Some(deadline)),
        )
        .await
        .unwrap();
    // Beside it, a busy runner whose job GitHub named.
    app.store
        .create_instance(&held, NewInstance::pending("runner-job", "pool", None))
        .await
        .unwrap();
    for to in [
        InstanceStatus::Creating,
        InstanceStatus::Running,
        InstanceStatus::Busy,
    ] {
        for (name, ids) in [("runner-busy", (1, 5)), ("runner-job", (2, 6))] {
            app.store
                .advance_instance(
                    &held,
                    name,
                    to,
                    Some(&format!("prov-{}", ids.0)),
                    Some(ids.1),
                )
                .await
                .unwrap();
        }
    }
    let job = JobShown::new(
        "acme",
        "app",
        "acme/app/.github/workflows/ci.yml@refs/heads/main",
    );
    assert!(
        app.store
            .record_job(&held, "runner-job", job)
            .await
            .unwrap()
    );

    let auth = bearer(&app);
    let get = |path: String| {
        let auth = auth.clone();
        let app = &app;
        async move {
            let (status, _, text) = app
                .send("GET", &path, &[("authorization", &auth)], None)
                .await;
            assert_eq!(status, 200, "{path}: {text}");
            text
        }
    };
    let first = get("/".to_owned()).await;
    assert_eq!(card(&first, "total"), 66);
    assert_eq!(card(&first, "attention"), 3, "{first}");
    assert_eq!(card(&first, "ready"), 63);
    assert_eq!(card(&first, "jobs-waiting"), 12);
    assert_eq!(rows(&first).len(), 50);
    assert!(first.contains("showing 1–50 of 66 matching"), "{first}");
    let second = get("/?page=2".to_owned()).await;
    assert_eq!(rows(&second).len(), 16);
    assert!(second.contains("showing 51–66 of 66 matching"), "{second}");

    // The filter and the cards go by the same rule: the three, and only they.
    let attention = get("/?state=attention".to_owned()).await;
    let flagged = rows(&attention);
    assert_eq!(
        flagged,
        vec![
            ("blocked".to_owned(), true),
            ("provider".to_owned(), true),
            ("waiting".to_owned(), true)
        ],
        "{attention}"
    );
    assert!(
        attention.contains("showing 1–3 of 3 matching (66 in all)"),
        "{attention}"
    );
    // The table says why in one line (the reason code's sentence); the full text and the
    // command are the detail page's.
    for said in [
        r#"data-code="session_held">another owner holds its message session<"#,
        r#"data-code="provider_failing">provider fake failing<"#,
        "12 jobs have waited for a runner for 60 min without a break, longer than the \
         bootstrap timeout (10 min)",
    ] {
        assert!(attention.contains(said), "{said}: {attention}");
    }
    assert!(!attention.contains("quota exceeded"), "{attention}");
    for (name, said) in [
        (
            "blocked",
            "another listener (&quot;other-owner&quot;) holds the message session",
        ),
        ("provider", "fake: quota exceeded"),
    ] {
        let detail = get(format!("/scale-sets/{}", ids[name].0)).await;
        assert_eq!(detail.matches(said).count(), 1, "{name}: once: {detail}");
        assert!(
            detail.contains(&format!("scalesetctl scale-set show '{name}'")),
            "{name}: {detail}"
        );
    }
    // The API and so the CLI say the same.
    let api = app.call("GET", "/api/v1/scale-sets", None).await;
    let marked: Vec<&str> = api.json["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|s| s.get("attention").is_some())
        .map(|s| s["spec"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(marked.len(), 3, "{marked:?}");
    let waiting = app
        .call(
            "GET",
            &format!("/api/v1/scale-sets/{}", ids["waiting"].0),
            None,
        )
        .await;
    assert_eq!(waiting.json["jobs_waiting"], 12);
    assert!(
        waiting.json["attention"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("12 jobs have waited"),
        "{}",
        waiting.json
    );

    let unknown = get("/?state=bogus".to_owned()).await;
    assert!(unknown.contains(r#"id="unknown-state""#), "{unknown}");
    assert!(
        unknown.contains("There is no state <code>bogus</code>"),
        "{unknown}"
    );
    assert_eq!(rows(&unknown).len(), 50, "not applied");

    let long_row = get(format!("/?q={long}")).await;
    assert_eq!(rows(&long_row), vec![(long.clone(), false)]);
    let (_, _, css) = app.send("GET", "/static/status.css", &[], None).await;
    assert!(
        css.contains(".name { min-width: 120px; max-width: 260px; overflow-wrap: anywhere; }"),
        "{css}"
    );

    let detail = get(format!("/scale-sets/{}", ids["set-00"].0)).await;
    assert!(detail.contains("met (running a job)"), "{detail}");
    // A busy runner reads as busy (and an idle one would read as idle, not `running`); the
    // pool key is the name's tooltip, not a column; created is UTC to the second.
    assert!(detail.contains("busy: running a job"), "{detail}");
    assert!(
        detail.contains("busy: acme/app · .github/workflows/ci.yml@refs/heads/main"),
        "{detail}"
    );
    assert!(!detail.contains("<th>pool key</th>"), "{detail}");
    assert!(detail.contains(r#"title="pool key pool""#), "{detail}");
    assert!(detail.contains("<th>created (UTC)</th>"), "{detail}");
    assert!(
        !detail.contains("in 60 min") && !detail.contains("in 59 min"),
        "a busy runner's deadline counts down: {detail}"
    );
}

async fn pages_carry_the_security_headers(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "headers").await;
    let entity = EntityId(app.seed(&sim).await.parse().unwrap());
    let set = app
        .store
        .create_scale_set(NewScaleSet {
            entity_id: entity,
            spec: spec("linux"),
        })
        .await
        .unwrap();
    let auth = bearer(&app);
    for (path, signed_in) in [
        ("/login".to_owned(), false),
        ("/".to_owned(), true),
        (format!("/scale-sets/{}", set.id.0), true),
    ] {
        let headers: Vec<(&str, &str)> = if signed_in {
            vec![("authorization", auth.as_str())]
        } else {
            Vec::new()
        };
        let (status, got, text) = app.send("GET", &path, &headers, None).await;
        assert_eq!(status, 200, "{path}");
        let header = |name: &str| got.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
        let csp = header("content-security-policy");
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("style-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        // Nothing inline for the CSP to refuse: scripts by src, no style element or attribute.
        assert!(!text.contains("<style"), "{path}");
        assert!(!text.contains(" style="), "{path}");
        for script in text.split("<script").skip(1) {
            assert!(
                script.trim_start().starts_with("src="),
                "{path}: an inline script"
            );
        }
    }
    let (status, got, js) = app.send("GET", "/static/refresh.js", &[], None).await;
    assert_eq!(status, 200);
    assert!(js.contains("location.reload()"));
    assert_eq!(got["content-type"], "text/javascript; charset=utf-8");
    // An unauthenticated page request is sent to sign in, with the headers too.
    let (status, got, _) = app.send("GET", "/", &[], None).await;
    assert_eq!(status, 303);
    assert_eq!(got["location"], "/login");
    assert_eq!(got["x-frame-options"], "DENY");
}

async fn a_cross_origin_sign_in_is_refused(backend: Backend) {
    let app = App::start(backend, "cross_origin").await;
    let host = app.base.trim_start_matches("http://").to_owned();
    let form = format!("token={}", app.token).into_bytes();
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    for (origin, referer) in [
        (Some("http://evil.example"), None),
        (Some("null"), None),
        (None, Some("http://evil.example/page")),
        (Some("http://127.0.0.1:1"), Some(app.base.as_str())),
    ] {
        let mut headers = vec![form_type];
        if let Some(origin) = origin {
            headers.push(("origin", origin));
        }
        if let Some(referer) = referer {
            headers.push(("referer", referer));
        }
        let (status, got, text) = app
            .send("POST", "/login", &headers, Some(form.clone()))
            .await;
        assert_eq!(status, 403, "{origin:?} {referer:?}: {text}");
        assert!(
            got.get("set-cookie").is_none(),
            "no cookie for a cross-origin form"
        );
        assert!(text.contains("posted from another site"), "{text}");
        let (status, got, _) = app.send("POST", "/logout", &headers, None).await;
        assert_eq!(status, 403, "sign-out too");
        assert!(got.get("set-cookie").is_none());
    }
    // The same form from this origin signs in.
    let origin = app.base.clone();
    let (status, got, _) = app
        .send(
            "POST",
            "/login",
            &[form_type, ("origin", origin.as_str())],
            Some(form.clone()),
        )
        .await;
    assert_eq!(status, 303, "host {host}");
    let cookie = got["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("scaleset_token="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let referer = format!("{}/login", app.base);
    let (status, _, _) = app
        .send(
            "POST",
            "/login",
            &[form_type, ("referer", referer.as_str())],
            Some(form),
        )
        .await;
    assert_eq!(status, 303, "a same-origin Referer without an Origin");
}

async fn after_a_revoked_token_the_sign_in_page_says_why(backend: Backend) {
    let app = App::start(backend, "revoked").await;
    let (token, secret) = app.store.create_api_token("browser").await.unwrap();
    use scaleset_github::ExposeSecret as _;
    let cookie = format!("scaleset_token={}", secret.expose_secret());
    let (status, _, _) = app.send("GET", "/", &[("cookie", &cookie)], None).await;
    assert_eq!(status, 200, "signed in");
    app.store.revoke_api_token(token.id).await.unwrap();
    let (status, got, _) = app.send("GET", "/", &[("cookie", &cookie)], None).await;
    assert_eq!(status, 303);
    assert_eq!(got["location"], "/login?why=revoked");
    let cleared = got["set-cookie"].to_str().unwrap();
    assert!(
        cleared.contains("Max-Age=0"),
        "the dead cookie is cleared: {cleared}"
    );
    let (status, _, text) = app.send("GET", "/login?why=revoked", &[], None).await;
    assert_eq!(status, 200);
    assert!(text.contains(r#"id="login-error""#), "{text}");
    assert!(text.contains("it was revoked"), "{text}");
    // Without a cookie, the plain form, no reproach.
    let (_, got, _) = app.send("GET", "/", &[], None).await;
    assert_eq!(got["location"], "/login");
    let (_, _, text) = app.send("GET", "/login", &[], None).await;
    assert!(!text.contains("login-error"), "{text}");
}

async fn an_unknown_url_is_html_for_a_browser_and_json_for_a_client(backend: Backend) {
    let app = App::start(backend, "unknown_url").await;
    let browser = ("accept", "text/html,application/xhtml+xml,*/*;q=0.8");
    let (status, got, text) = app.send("GET", "/no/such/page", &[browser], None).await;
    assert_eq!(status, 404);
    assert!(
        got["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        text.contains("Nothing is served at <code>/no/such/page</code>"),
        "{text}"
    );
    assert_eq!(got["x-frame-options"], "DENY");
    let (status, got, text) = app
        .send(
            "GET",
            "/no/such/page",
            &[("accept", "application/json")],
            None,
        )
        .await;
    assert_eq!(status, 404);
    assert!(
        got["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["code"], "not_found", "{json}");
    // Under the API a browser gets JSON too: it is the API's answer.
    let (_, got, _) = app.send("GET", "/api/v1/nothing", &[browser], None).await;
    assert!(
        got["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
}

/// A drained scale set with a busy runner left, and a disabled one with none, are `ready` in
/// the store (the worker leaves them so) but not served: the page counts them apart from the
/// ready ones and shows `draining` and `disabled` beside their state; the API says
/// `enabled: false`.
async fn a_drained_or_disabled_scale_set_is_shown_as_such_and_not_counted_as_ready(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "drained_sets_shown").await;
    let entity = EntityId(app.seed(&sim).await.parse().unwrap());
    let mut ids = std::collections::HashMap::new();
    for name in ["served", "draining", "disabled"] {
        let mut spec = spec(name);
        spec.set_enabled(name == "served");
        let set = app
            .store
            .create_scale_set(NewScaleSet {
                entity_id: entity,
                spec,
            })
            .await
            .unwrap();
        let mut set = app.store.get_scale_set(set.id).await.unwrap();
        set.state = ScaleSetState::Ready;
        set.github_id = Some(1);
        app.store.update_scale_set(&set).await.unwrap();
        ids.insert(name, set.id);
    }
    let held = lease(app.store.as_ref(), ids["draining"]).await;
    app.store
        .create_instance(&held, NewInstance::pending("runner-left", "pool", None))
        .await
        .unwrap();
    for to in [
        InstanceStatus::Creating,
        InstanceStatus::Running,
        InstanceStatus::Busy,
    ] {
        app.store
            .advance_instance(&held, "runner-left", to, Some("prov-1"), Some(5))
            .await
            .unwrap();
    }
    let (status, _, page) = app
        .send("GET", "/", &[("authorization", &bearer(&app))], None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(card(&page, "total"), 3);
    assert_eq!(
        card(&page, "ready"),
        1,
        "only the served set is ready: {page}"
    );
    assert_eq!(card(&page, "disabled"), 2, "{page}");
    assert_eq!(card(&page, "attention"), 0);
    let service = |name: &str| {
        let row = page
            .split(&format!(r#"<tr class="scale-set" data-name="{name}""#))
            .nth(1)
            .unwrap_or_else(|| panic!("row {name}: {page}"));
        let tag = row.split('>').next().unwrap_or_default();
        tag.split(r#"data-service=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(service("served"), "served");
    assert_eq!(service("draining"), "draining");
    assert_eq!(service("disabled"), "disabled");
    assert!(
        page.contains(r#"<span class="badge s-draining" data-service="draining">draining</span>"#),
        "{page}"
    );
    let (status, _, body) = app
        .send(
            "GET",
            &format!("/api/v1/scale-sets/{}", ids["draining"].0),
            &[("authorization", &bearer(&app))],
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["spec"]["enabled"], false, "{json}");
}
