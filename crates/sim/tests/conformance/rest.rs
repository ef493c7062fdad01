//! The REST calls other runner tools make (GARM among them), over raw HTTP with GitHub's shapes
//! checked field by field: runner-registration at the root path, the runner application
//! downloads with their archives, `/rate_limit`, and paths with repeated slashes.

use std::collections::BTreeSet;

use anyhow::Result;
use ring::digest;
use serde_json::Value;

use crate::helpers::{
    PAT, TestSim, admin_token, get, get_as, post_as, post_runner_registration, raw,
    registration_token,
};

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn runner_registration_is_served_at_the_root_path_too() -> Result<()> {
    let sim = TestSim::default().await?;
    let token = registration_token(&sim, "orgs/acme").await?;
    let answer =
        post_runner_registration(&sim, "/actions/runner-registration", &token, "acme").await?;
    assert_eq!(answer.status, 200);
    let json = answer.json()?;
    assert_eq!(
        keys(&json),
        BTreeSet::from(["token", "token_schema", "url"])
    );
    assert_eq!(json["url"], sim.url("/tenant/1/"));
    assert_eq!(json["token_schema"], "OAuthAccessToken");
    let admin = json["token"].as_str().unwrap_or_default();
    // The admin token it hands out works on the Actions service.
    let listed = get_as(
        &sim.url("/tenant/1/_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        admin,
    )
    .await?;
    assert_eq!(listed.status, 200);
    assert_eq!(sim.sim.request_count("runner_registration"), 1);
    // Only POST is served there.
    let answer = get(&sim.url("/actions/runner-registration")).await?;
    assert_eq!(answer.status, 404);
    sim.stop().await
}

#[tokio::test]
async fn runner_downloads_list_every_usual_platform_with_matching_archives() -> Result<()> {
    let sim = TestSim::default().await?;
    let expected: BTreeSet<(String, String)> = [
        ("osx", "x64"),
        ("osx", "arm64"),
        ("linux", "x64"),
        ("linux", "arm"),
        ("linux", "arm64"),
        ("win", "x64"),
        ("win", "arm64"),
    ]
    .iter()
    .map(|(o, a)| ((*o).to_owned(), (*a).to_owned()))
    .collect();
    for path in ["repos/acme/widgets", "orgs/acme", "enterprises/acme-corp"] {
        // GitHub takes the older `token` scheme as well as `Bearer`.
        let answer = raw(
            "GET",
            &sim.url(&format!("/api/v3/{path}/actions/runners/downloads")),
            &[("authorization", &format!("token {PAT}"))],
            None,
        )
        .await?;
        assert_eq!(answer.status, 200, "{path}");
        let list = answer.json()?;
        let items = list.as_array().cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        for item in &items {
            assert_eq!(
                keys(item),
                BTreeSet::from([
                    "architecture",
                    "download_url",
                    "filename",
                    "os",
                    "sha256_checksum"
                ]),
                "{path}: no temp_download_token, as on github.com"
            );
            let os = item["os"].as_str().unwrap_or_default();
            let arch = item["architecture"].as_str().unwrap_or_default();
            let extension = if os == "win" { "zip" } else { "tar.gz" };
            let filename = format!("actions-runner-{os}-{arch}-2.330.0.{extension}");
            assert_eq!(item["filename"], filename.as_str());
            let url = sim.url(&format!(
                "/actions/runner/releases/download/v2.330.0/{filename}"
            ));
            assert_eq!(item["download_url"], url.as_str());
            let checksum = item["sha256_checksum"].as_str().unwrap_or_default();
            assert_eq!(checksum.len(), 64);
            assert!(
                checksum
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
            // The archive is there, without credentials, and its checksum matches.
            let archive = raw("GET", &url, &[], None).await?;
            assert_eq!(archive.status, 200, "{url}");
            assert_eq!(
                archive.headers.get("content-type").map(|v| v.as_bytes()),
                Some(&b"application/octet-stream"[..])
            );
            let digest = digest::digest(&digest::SHA256, &archive.body);
            let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, checksum, "{filename}");
            let magic: &[u8] = if os == "win" {
                b"PK\x03\x04"
            } else {
                b"\x1f\x8b"
            };
            assert!(archive.body.starts_with(magic), "{filename}");
            seen.insert((os.to_owned(), arch.to_owned()));
        }
        assert_eq!(items.len(), expected.len(), "{path}: each platform once");
        assert_eq!(seen, expected, "{path}");
    }
    // The same rules as the registration token.
    for (path, auth, status) in [
        ("orgs/acme", None, 401),
        ("orgs/acme", Some("Bearer ghp_wrong"), 401),
        ("orgs/nowhere", Some("Bearer ghp_simulator"), 404),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let answer = raw(
            "GET",
            &sim.url(&format!("/api/v3/{path}/actions/runners/downloads")),
            &headers,
            None,
        )
        .await?;
        assert_eq!(answer.status, status, "{path} {auth:?}");
        assert!(answer.json()?["message"].is_string());
    }
    let missing =
        get(&sim.url("/actions/runner/releases/download/v2.330.0/actions-runner-plan9-x64.tar.gz"))
            .await?;
    assert_eq!(missing.status, 404);
    assert_eq!(sim.sim.request_count("runner_downloads"), 6);
    sim.stop().await
}

/// `GET /api/v3/rate_limit` checked against GitHub's shape; returns `resources.core`.
async fn core_quota(sim: &TestSim) -> Result<Value> {
    let answer = get_as(&sim.url("/api/v3/rate_limit"), PAT).await?;
    anyhow::ensure!(answer.status == 200, "rate_limit: {}", answer.status);
    let json = answer.json()?;
    assert_eq!(keys(&json), BTreeSet::from(["rate", "resources"]));
    let core = json["resources"]["core"].clone();
    assert_eq!(
        keys(&core),
        BTreeSet::from(["limit", "remaining", "reset", "resource", "used"])
    );
    assert_eq!(core["resource"], "core");
    assert_eq!(json["rate"], core, "`rate` is the deprecated copy of core");
    for resource in ["search", "graphql", "integration_manifest"] {
        let other = &json["resources"][resource];
        assert_eq!(other["remaining"], other["limit"], "{resource} untouched");
    }
    Ok(core)
}

#[tokio::test]
async fn rate_limit_follows_the_rest_calls_the_simulator_has_seen() -> Result<()> {
    let sim = TestSim::default().await?;
    let before = sim.sim.now().as_secs();
    let fresh = core_quota(&sim).await?;
    assert_eq!(fresh["limit"], 5000);
    assert_eq!(fresh["remaining"], 5000);
    assert_eq!(fresh["used"], 0);
    let reset = fresh["reset"].as_u64().unwrap_or_default();
    assert!(
        (before + 3600..=sim.sim.now().as_secs() + 3600).contains(&reset),
        "an hourly window in epoch seconds: {reset}"
    );
    // Token chain: registration token and runner-registration (2 REST calls) …
    let (admin, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    // … then an Actions-service call, which is not a REST call.
    let listed = get_as(
        &format!("{base}_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        &admin,
    )
    .await?;
    assert_eq!(listed.status, 200);
    let after = core_quota(&sim).await?;
    assert_eq!(after["used"], 2, "/rate_limit itself is not counted");
    assert_eq!(after["remaining"], 4998);
    assert_eq!(after["reset"], reset, "same window");
    // An unauthenticated call is answered too; an unknown token is refused.
    let anonymous = get(&sim.url("/api/v3/rate_limit")).await?;
    assert_eq!(anonymous.status, 200);
    let refused = get_as(&sim.url("/api/v3/rate_limit"), "ghp_wrong").await?;
    assert_eq!(refused.status, 401);
    // A new window starts full.
    sim.sim.advance(std::time::Duration::from_secs(3600));
    let next = core_quota(&sim).await?;
    assert_eq!(
        (next["used"].as_u64(), next["remaining"].as_u64()),
        (Some(0), Some(5000))
    );
    assert!(next["reset"].as_u64().unwrap_or_default() >= reset + 3600);
    sim.stop().await
}

#[tokio::test]
async fn repeated_slashes_are_collapsed_before_routing() -> Result<()> {
    let sim = TestSim::default().await?;
    let registration = post_as(
        &sim.url("//api/v3//orgs/acme/actions/runners//registration-token"),
        PAT,
    )
    .await?;
    assert_eq!(registration.status, 201);
    let (admin, _) = admin_token(&sim, "acme", "orgs/acme").await?;
    let auth = format!("Bearer {admin}");
    let created = raw(
        "POST",
        &sim.url("/tenant/1//_apis/runtime/runnerscalesets?api-version=6.0-preview"),
        &[("authorization", &auth)],
        Some(r#"{"name":"slashes","runnerGroupId":1}"#),
    )
    .await?;
    assert_eq!(created.status, 200);
    let id = created.json()?["id"].as_i64().unwrap_or_default();
    let session = raw(
        "POST",
        &sim.url(&format!(
            "/tenant/1/_apis/runtime/runnerscalesets//{id}///sessions?api-version=6.0-preview"
        )),
        &[("authorization", &auth)],
        Some(r#"{"ownerName":"me"}"#),
    )
    .await?;
    assert_eq!(session.status, 200);
    let queue_token = session.json()?["messageQueueAccessToken"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let poll = get_as(&sim.url("//scalesets//message"), &queue_token).await?;
    assert_eq!(poll.status, 202, "held, then nothing");
    let counts = sim.sim.request_counts();
    assert_eq!(counts.get("not_found"), None, "{counts:?}");
    assert_eq!(counts.get("create_session"), Some(&1));
    assert_eq!(counts.get("get_message"), Some(&1));
    sim.stop().await
}

/// GARM resolves every runner group but `Default` through REST (shared/reference/garm: its
/// `GET /orgs/{org}/actions/runner-groups?per_page=100` got 404 from the simulator, so it could
/// not create a scale set in another group). Served in GitHub's shape, with the ids the Actions
/// service uses for the same groups.
#[tokio::test]
async fn rest_runner_groups_are_listed_as_github_lists_them_for_garm() -> Result<()> {
    let sim = TestSim::default().await?;
    let spare = sim.sim.create_runner_group("acme", "spare")?;
    let gpu = sim.sim.create_runner_group("acme", "gpu runners")?;
    let answer = get_as(
        &sim.url("/api/v3/orgs/acme/actions/runner-groups?per_page=100"),
        PAT,
    )
    .await?;
    assert_eq!(answer.status, 200);
    assert!(
        answer.headers.get("link").is_none(),
        "one page needs no Link"
    );
    let json = answer.json()?;
    assert_eq!(json["total_count"], 3);
    let groups = json["runner_groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let listed: Vec<(i64, &str, bool)> = groups
        .iter()
        .map(|g| {
            (
                g["id"].as_i64().unwrap_or_default(),
                g["name"].as_str().unwrap_or_default(),
                g["default"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (1, "Default", true),
            (spare, "spare", false),
            (gpu, "gpu runners", false)
        ]
    );
    // Every field of the captured answer, with the runners URL under the caller's origin.
    assert_eq!(
        keys(&groups[2]),
        BTreeSet::from([
            "allows_public_repositories",
            "default",
            "id",
            "inherited",
            "name",
            "restricted_to_workflows",
            "runners_url",
            "selected_workflows",
            "visibility",
            "workflow_restrictions_read_only",
        ])
    );
    assert_eq!(
        groups[2]["runners_url"],
        sim.url(&format!(
            "/api/v3/orgs/acme/actions/runner-groups/{gpu}/runners"
        ))
    );
    assert_eq!(sim.sim.request_count("rest_runner_groups"), 1);
    // Authenticated like every runner-admin REST call; an unknown organization is 404.
    let anonymous = get(&sim.url("/api/v3/orgs/acme/actions/runner-groups")).await?;
    assert_eq!(anonymous.status, 401);
    let unknown = get_as(&sim.url("/api/v3/orgs/nobody/actions/runner-groups"), PAT).await?;
    assert_eq!(unknown.status, 404);
    // A repository has no runner groups.
    let repo = get_as(
        &sim.url("/api/v3/repos/acme/widgets/actions/runner-groups"),
        PAT,
    )
    .await?;
    assert_eq!(repo.status, 404);
    sim.stop().await
}

#[tokio::test]
async fn rest_runner_groups_page_with_link_headers_and_serve_enterprises() -> Result<()> {
    let sim = TestSim::default().await?;
    for name in ["b", "c", "d", "e"] {
        sim.sim.create_runner_group("acme", name)?;
    }
    let url = sim.url("/api/v3/orgs/acme/actions/runner-groups");
    let first = get_as(&format!("{url}?per_page=2"), PAT).await?;
    assert_eq!(first.status, 200);
    let json = first.json()?;
    assert_eq!(json["total_count"], 5);
    assert_eq!(json["runner_groups"].as_array().map(Vec::len), Some(2));
    let link = first
        .headers
        .get("link")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        link,
        format!("<{url}?per_page=2&page=2>; rel=\"next\", <{url}?per_page=2&page=3>; rel=\"last\"")
    );
    let last = get_as(&format!("{url}?per_page=2&page=3"), PAT).await?;
    let json = last.json()?;
    assert_eq!(json["runner_groups"][0]["name"], "e");
    assert_eq!(json["runner_groups"].as_array().map(Vec::len), Some(1));
    let link = last
        .headers
        .get("link")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        link,
        format!(
            "<{url}?per_page=2&page=2>; rel=\"prev\", <{url}?per_page=2&page=1>; rel=\"first\""
        )
    );

    let enterprise = get_as(
        &sim.url("/api/v3/enterprises/acme-corp/actions/runner-groups"),
        PAT,
    )
    .await?;
    assert_eq!(enterprise.status, 200);
    let json = enterprise.json()?;
    assert_eq!(json["runner_groups"][0]["name"], "Default");
    assert_eq!(
        json["runner_groups"][0]["selected_organizations_url"],
        sim.url("/api/v3/enterprises/acme-corp/actions/runner-groups/1/organizations")
    );
    assert!(json["runner_groups"][0].get("inherited").is_none());
    sim.stop().await
}
