//! Operating the demo from its status page in Chromium, as a person would: signed in with a
//! `read` token the actions are greyed out and a forced click is refused with the reason; with
//! an `operate` token a click on **Drain** drains the scale set (the page and the API both say
//! so) and **Enable** serves it again; with the `admin` token a pasted and an uploaded fleet file
//! are planned (digest shown) and applied, and the decommission preview is shown. Screenshots
//! go to `target/tmp/screenshots/` (test output, not committed).

use anyhow::{Context as _, Result};
use scaleset_eventually::try_eventually;
use serde_json::Value;

use crate::browser::Browser;
use crate::{Running, get, screenshots};

/// Stores a token of `scope` named `name` in the demo's database, as `scaleset-server token
/// create NAME --scope SCOPE` does (its SHA-256, never its text); returns its text.
fn token(demo: &Running, name: &str, scope: &str) -> Result<String> {
    use diesel::{Connection as _, RunQueryDsl as _};
    let text = format!("sst_browser-test-{name}-{}", std::process::id());
    let hash = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let id = format!("00000000-0000-4000-8000-{}", &hex[..12]);
    let path = demo.dir.join("scaleset.db");
    let mut db = diesel::sqlite::SqliteConnection::establish(&path.display().to_string())?;
    diesel::sql_query("PRAGMA busy_timeout = 10000").execute(&mut db)?;
    diesel::sql_query(format!(
        "INSERT INTO api_tokens (id, name, token_hash, created_at, scope) \
         VALUES ('{id}', '{name}', X'{hex}', 0, '{scope}')"
    ))
    .execute(&mut db)
    .with_context(|| format!("storing the {scope} token"))?;
    Ok(text)
}

/// Signs out (if signed in) and signs in with `token`; waits for the overview.
async fn sign_in(browser: &Browser, demo: &Running, token: &str) -> Result<()> {
    browser.goto(&demo.page).await?;
    if !browser.url().await?.ends_with("/login") {
        browser.click("form[action='/logout'] button").await?;
        try_eventually("signed out", || async {
            anyhow::Ok(browser.url().await?.ends_with("/login").then_some(()))
        })
        .await?;
    }
    browser.type_into("#token", token).await?;
    browser.click("button[type=submit]").await?;
    try_eventually("the overview after signing in", || async {
        let rows = browser
            .eval("return document.querySelectorAll('#scale-sets tr.scale-set').length")
            .await?;
        anyhow::Ok(rows.as_u64().filter(|n| *n > 0))
    })
    .await?;
    Ok(())
}

/// A scale set as the API shows it (`GET /scale-sets/{id}`), by name.
async fn scale_set(demo: &Running, name: &str) -> Result<Value> {
    let (status, _, body) = get(&format!("{}/scale-sets", demo.api), Some(&demo.token)).await?;
    anyhow::ensure!(status == 200, "listing scale sets: {status} {body}");
    let list: Value = serde_json::from_str(&body)?;
    let id = list["items"]
        .as_array()
        .and_then(|items| items.iter().find(|s| s["spec"]["name"] == name))
        .and_then(|s| s["id"].as_str())
        .with_context(|| format!("no scale set {name} in {body}"))?;
    // One scale set's own answer carries its events; the list's does not.
    let (status, _, body) =
        get(&format!("{}/scale-sets/{id}", demo.api), Some(&demo.token)).await?;
    anyhow::ensure!(status == 200, "showing scale set {name}: {status} {body}");
    Ok(serde_json::from_str(&body)?)
}

/// The text of the element `css`, or `None` while there is none.
async fn text(browser: &Browser, css: &str) -> Result<Option<String>> {
    let script = format!(
        "var e = document.querySelector({}); return e ? e.textContent : null",
        serde_json::to_string(css)?
    );
    Ok(browser.eval(&script).await?.as_str().map(str::to_owned))
}

pub(crate) async fn operate_from_the_page(demo: &Running, browser: &Browser) -> Result<()> {
    let reader = token(demo, "reader", "read")?;
    let operator = token(demo, "operator", "operate")?;
    let drain = "tr.scale-set[data-name='linux-x64'] form.action button.drain";

    // read: the buttons are greyed out with the reason; a click forced past that is refused.
    sign_in(browser, demo, &reader).await?;
    let scope = text(browser, "#scope b").await?;
    assert_eq!(scope.as_deref(), Some("read"));
    let disabled = browser
        .eval(&format!(
            "return document.querySelector(\"{drain}\").disabled"
        ))
        .await?;
    assert_eq!(disabled, true, "a read token's drain button is disabled");
    browser
        .screenshot(&screenshots().join("actions-read.png"))
        .await?;
    browser
        .eval(&format!(
            "document.querySelector(\"{drain}\").disabled = false; return null"
        ))
        .await?;
    browser.click(drain).await?;
    let refused = try_eventually("the refusal page", || async {
        text(browser, "#refused").await
    })
    .await?;
    assert!(
        refused.contains("has scope `read`") && refused.contains("needs `operate`"),
        "{refused}"
    );
    browser
        .screenshot(&screenshots().join("actions-refused.png"))
        .await?;
    assert_eq!(scale_set(demo, "linux-x64").await?["spec"]["enabled"], true);

    // operate: Drain by clicking; the page and the API say it is drained.
    sign_in(browser, demo, &operator).await?;
    browser.click(drain).await?;
    let notice = try_eventually("the scale set's page after the drain", || async {
        text(browser, "#notice").await
    })
    .await?;
    assert!(notice.contains("Drain asked for"), "{notice}");
    let heading = text(browser, "#name").await?;
    assert_eq!(heading.as_deref(), Some("linux-x64"));
    let enable = browser
        .eval("return document.querySelector('#actions form[action$=\"/enable\"] button') !== null")
        .await?;
    assert_eq!(enable, true, "a drained scale set offers Enable");
    let shown = scale_set(demo, "linux-x64").await?;
    assert_eq!(shown["spec"]["enabled"], false, "{shown}");
    assert!(
        shown["events"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["kind"] == "drain")),
        "the API route's event: {shown}"
    );
    browser
        .screenshot(&screenshots().join("actions-drained.png"))
        .await?;
    browser
        .click("#actions form[action$='/enable'] button")
        .await?;
    try_eventually("enabled again", || async {
        let shown = scale_set(demo, "linux-x64").await?;
        anyhow::Ok((shown["spec"]["enabled"] == true).then_some(()))
    })
    .await?;
    // The fleet page is admin's: an operate token's Plan button is greyed out.
    browser.goto(&format!("{}fleet", demo.page)).await?;
    let plan_disabled = browser
        .eval("return document.querySelector('#plan').disabled")
        .await?;
    assert_eq!(plan_disabled, true);

    // admin: paste a fleet file, plan, apply.
    sign_in(browser, demo, &demo.token).await?;
    browser.goto(&format!("{}fleet", demo.page)).await?;
    browser
        .type_into(
            "#fleet",
            "[[scale_set]]\nname = \"pasted\"\ncredentials = \"simulated-github\"\n\
             organization = \"acme\"\nprovider = \"fake\"\nmax_runners = 2\n",
        )
        .await?;
    browser.click("#plan").await?;
    apply_the_plan(browser, "pasted", "fleet-plan.png").await?;
    assert_eq!(scale_set(demo, "pasted").await?["spec"]["max_runners"], 2);

    // admin: upload a fleet file.
    let file = demo.dir.join("uploaded-fleet.toml");
    std::fs::write(
        &file,
        "[[scale_set]]\nname = \"uploaded\"\ncredentials = \"simulated-github\"\n\
         organization = \"acme\"\nprovider = \"fake\"\nmax_runners = 3\n",
    )?;
    browser.goto(&format!("{}fleet", demo.page)).await?;
    browser
        .type_into("#file", &file.display().to_string())
        .await?;
    browser.click("#plan").await?;
    apply_the_plan(browser, "uploaded", "fleet-upload-plan.png").await?;
    assert_eq!(scale_set(demo, "uploaded").await?["spec"]["max_runners"], 3);

    // The decommission plan, read-only.
    browser.goto(&format!("{}decommission", demo.page)).await?;
    let digest = try_eventually("the decommission preview", || async {
        text(browser, "#digest code").await
    })
    .await?;
    assert_eq!(digest.len(), 64, "{digest}");
    browser
        .screenshot(&screenshots().join("decommission-preview.png"))
        .await?;
    Ok(())
}

/// On a plan page that plans to create `name`: the digest is shown; Apply; the answer says it
/// stored one scale set.
async fn apply_the_plan(browser: &Browser, name: &str, shot: &str) -> Result<()> {
    let action = try_eventually("the plan", || async {
        let action = browser
            .eval(&format!(
                "var r = document.querySelector(\"tr.planned[data-name='{name}']\"); return r ? r.dataset.action : null"
            ))
            .await?;
        anyhow::Ok(action.as_str().map(str::to_owned))
    })
    .await?;
    assert_eq!(action, "create");
    let digest = text(browser, "#digest code").await?.unwrap_or_default();
    assert_eq!(digest.len(), 64, "{digest}");
    browser.screenshot(&screenshots().join(shot)).await?;
    browser.click("#apply").await?;
    let notice = try_eventually("the apply's answer", || async {
        text(browser, "#notice").await
    })
    .await?;
    assert!(
        notice.contains(&digest) && notice.contains("1 scale set(s) stored"),
        "{notice}"
    );
    Ok(())
}
