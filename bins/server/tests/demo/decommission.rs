//! Issue 34 item 3, the demo's decommission walk (docs/quickstart.md, "Walk: decommission"), as
//! a person runs it against `scaleset-server demo`: decommission one scale set through the API
//! (what `scalesetctl decommission` calls), then, after a Ctrl-C and a deleted database, the
//! whole demo; the simulated GitHub and the fake cloud end empty of ours while the other
//! controller's scale set and machine the demo seeds stay.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use scaleset_eventually::try_eventually;
use serde_json::{Value, json};

use crate::{Running, get, start};

const FOREIGN: &str = "9b1d2c3e-0000-4000-8000-00000000beef";

async fn post(url: &str, token: &str, body: &Value) -> Result<(u16, Value)> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = http::Request::post(url)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))?;
    let response = client.request(request).await?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// The simulated GitHub's scale sets, by name.
async fn github_sets(demo: &Running) -> Result<Vec<String>> {
    let (status, _, body) = get(&format!("{}_sim/state", demo.github), None).await?;
    if status != 200 {
        bail!("/_sim/state answered {status}: {body}");
    }
    let state: Value = serde_json::from_str(&body)?;
    let mut names: Vec<String> = state["scaleSets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// The fake cloud's machines: (pool key, name).
fn machines(demo: &Running) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let Ok(pools) = std::fs::read_dir(demo.dir.join("instances")) else {
        return found;
    };
    for pool in pools.flatten() {
        let key = pool.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(pool.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some(name) = name.strip_suffix(".json") {
                found.push((key.clone(), name.to_owned()));
            }
        }
    }
    found.sort();
    found
}

async fn ready(demo: &Running) -> Result<()> {
    let api = format!("{}/scale-sets", demo.api);
    try_eventually("the demo's three scale sets are ready", || {
        let (api, token) = (api.clone(), demo.token.clone());
        async move {
            let (_, _, body) = get(&api, Some(&token)).await?;
            let sets: Value = serde_json::from_str(&body)?;
            let items = sets["items"].as_array().cloned().unwrap_or_default();
            anyhow::Ok(
                (items.len() == 3 && items.iter().all(|i| i["state"] == "ready")).then_some(()),
            )
        }
    })
    .await
}

/// Plans `scope`, prints the plan as a person would read it, and applies it with its digest.
/// The demo's job stream keeps runners coming and going, so a plan can be stale by the time it
/// is applied (409 `stale_plan`): as the docs say, plan again.
async fn decommission(demo: &Running, scope: &Value) -> Result<(Value, Value)> {
    let polling =
        scaleset_eventually::Polling::new("a decommission plan is applied before it goes stale");
    let mut stale = 0;
    loop {
        let (status, plan) = post(
            &format!("{}/decommission/plan", demo.api),
            &demo.token,
            scope,
        )
        .await?;
        if status != 200 {
            bail!("the plan answered {status}: {plan}");
        }
        let mut apply = scope.clone();
        apply["digest"] = plan["digest"].clone();
        let (status, applied) = post(
            &format!("{}/decommission/apply", demo.api),
            &demo.token,
            &apply,
        )
        .await?;
        match status {
            200 => return Ok((plan, applied)),
            409 if applied["code"] == "stale_plan" => {
                stale += 1;
                polling
                    .again(|| format!("the plan was stale {stale} times"))
                    .await;
            }
            _ => bail!("the apply answered {status}: {applied}"),
        }
    }
}

fn steps(plan: &Value) -> Vec<String> {
    plan["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{} {}",
                s["act"].as_str().unwrap_or(""),
                s["subject"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decommission_walk_one_set_then_the_whole_demo_after_deleting_the_database()
-> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut demo = start(dir.path()).await?;
    ready(&demo).await?;
    let foreign_machine = machines(&demo)
        .into_iter()
        .find(|(pool, _)| pool.starts_with(FOREIGN))
        .context("the demo seeds another controller's machine")?;
    assert_eq!(foreign_machine.1, "their-runner");
    assert!(
        github_sets(&demo)
            .await?
            .contains(&"their-linux".to_owned())
    );

    // One scale set: linux-x64 goes, with its runners and machines; the rest stays.
    let scope = json!({"entity": "acme", "scale_set": "linux-x64", "force_busy": true});
    let (plan, applied) = decommission(&demo, &scope).await?;
    let shown = steps(&plan);
    assert!(
        shown
            .iter()
            .any(|s| s.starts_with("delete scale set acme/linux-x64")),
        "{shown:?}"
    );
    assert!(
        !shown.iter().any(|s| s.contains("their-")),
        "nothing of the other controller is in a scale set's scope: {shown:?}"
    );
    assert_eq!(applied["busy_left"], false, "{applied}");
    assert_eq!(
        github_sets(&demo).await?,
        ["linux-arm64", "release", "their-linux"],
        "only linux-x64 left GitHub"
    );
    let (_, _, body) = get(&format!("{}/scale-sets", demo.api), Some(&demo.token)).await?;
    let stored: Value = serde_json::from_str(&body)?;
    assert_eq!(
        stored["items"].as_array().map(Vec::len),
        Some(2),
        "its record went last: {stored}"
    );
    assert!(machines(&demo).contains(&foreign_machine));

    // Ctrl-C, delete the database, start again: the rest is adopted back (and linux-x64, still
    // declared, created again); then the whole demo goes.
    let pid = nix::unistd::Pid::from_raw(
        i32::try_from(demo.child.id().context("pid")?).context("pid range")?,
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)?;
    let status = tokio::time::timeout(Duration::from_secs(120), demo.child.wait())
        .await
        .context("the demo did not stop on SIGINT")??;
    assert!(status.success(), "exit {status:?}");
    std::fs::remove_file(dir.path().join("scaleset.db"))?;
    let demo = start(dir.path()).await?;
    assert!(
        demo.banner.contains("database was missing"),
        "{}",
        demo.banner
    );
    ready(&demo).await?;

    let (plan, applied) = decommission(&demo, &json!({"force_busy": true})).await?;
    let shown = steps(&plan);
    assert!(
        shown
            .iter()
            .any(|s| s.starts_with("skip scale set acme/their-linux")),
        "the other controller's scale set is shown left alone: {shown:?}"
    );
    assert_eq!(applied["busy_left"], false, "{applied}");
    assert_eq!(
        github_sets(&demo).await?,
        ["their-linux"],
        "GitHub is empty of ours"
    );
    try_eventually("the fake cloud is empty of ours", || async {
        let left = machines(&demo);
        anyhow::Ok((left == [foreign_machine.clone()]).then_some(()))
    })
    .await?;
    let (_, _, body) = get(&format!("{}/scale-sets", demo.api), Some(&demo.token)).await?;
    let stored: Value = serde_json::from_str(&body)?;
    assert_eq!(stored["items"], json!([]), "{stored}");
    Ok(())
}
