//! Every endpoint of the protocol reference, driven through the real `scaleset-github` client.

use anyhow::Result;
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Credentials, GithubScaleSetId, JitConfigRequest, JobMessage, Label, MessageId,
    NewRunnerScaleSet, Removal, RunnerGroupId, RunnerId, RunnerRequestId, RunnerScaleSetPatch,
};
use scaleset_sim::{AssignmentMode, JobSpec};

use crate::helpers::{
    TestSim, assign_one, config, create_refused, create_set, fast_retry, next_message, no_message,
    post_as, with_client, with_session, with_set,
};

#[tokio::test]
async fn pat_token_chain_reaches_the_actions_service_for_every_scope() -> Result<()> {
    let sim = TestSim::default().await?;
    for scope in ["acme", "acme/widgets", "enterprises/acme-corp"] {
        let client = sim.client(scope)?;
        let url = client.service_url().await?;
        assert_eq!(url.as_str(), sim.url("/tenant/1/"), "{scope}");
    }
    assert_eq!(sim.sim.request_count("registration_token"), 3);
    assert_eq!(sim.sim.request_count("runner_registration"), 3);
    // Tenants are separate: a scale set of the org is not visible to the repository.
    let org = sim.client("acme")?;
    let repo = sim.client("acme/widgets")?;
    create_set(&org, "shared-name").await?;
    assert!(
        repo.get_scale_set_by_name(RunnerGroupId(1), "shared-name")
            .await?
            .is_none()
    );
    create_set(&repo, "shared-name").await?;
    sim.stop().await
}

#[tokio::test]
async fn unknown_pat_and_unseeded_org_are_refused() -> Result<()> {
    let sim = TestSim::default().await?;
    let bad = sim.client_with("acme", Credentials::pat("ghp_wrong"), fast_retry())?;
    let err = bad.service_url().await.expect_err("bad PAT");
    assert_eq!(err.status(), Some(401), "{err:#}");
    let nowhere = sim.client("no-such-org")?;
    let err = nowhere.service_url().await.expect_err("unseeded org");
    assert_eq!(err.status(), Some(404), "{err:#}");
    sim.stop().await
}

/// Issue 31 item 3: a PAT rotated in a running client is used from the next token fetch, and
/// a revoked PAT is refused (401) and counted; a secret the client would refuse at build time
/// is refused by the rotation too, the old one staying in use.
#[tokio::test]
async fn a_rotated_pat_is_used_from_the_next_token_fetch_and_a_revoked_one_refused() -> Result<()> {
    let sim = TestSim::default().await?;
    let client = sim.client("acme")?;
    client.service_url().await?;
    let err = client
        .rotate_credentials(Credentials::pat(""))
        .expect_err("an empty PAT");
    assert!(err.to_string().contains("empty"), "{err:#}");
    sim.sim.add_pat(scaleset_sim::PatSeed {
        token: "ghp_next".to_owned(),
        scopes: Vec::new(),
    });
    client.rotate_credentials(Credentials::pat("ghp_next"))?;
    assert!(sim.sim.revoke_pat(crate::helpers::PAT));
    let used = |token: &str| {
        sim.sim
            .pat_uses()
            .into_iter()
            .find(|p| p.token == token)
            .map(|p| (p.uses, p.revoked))
    };
    let old = used(crate::helpers::PAT);
    client.service_url().await?;
    assert_eq!(
        used("ghp_next"),
        Some((1, false)),
        "the next fetch used the new PAT"
    );
    assert_eq!(
        used(crate::helpers::PAT),
        old,
        "the old PAT was not sent again"
    );
    let stale = sim.client("acme")?;
    let err = stale.service_url().await.expect_err("a revoked PAT");
    assert_eq!(err.status(), Some(401), "{err:#}");
    assert_eq!(
        used(crate::helpers::PAT).map(|(_, revoked)| revoked),
        Some(true)
    );
    assert!(!sim.sim.revoke_pat("ghp_never_accepted"));
    sim.stop().await
}

#[tokio::test]
async fn github_app_token_chain_mints_an_installation_token() -> Result<()> {
    let mut cfg = config();
    cfg.organizations.push("other".to_owned());
    cfg.installations[0].accounts.push("acme-corp".to_owned());
    let sim = TestSim::start(cfg).await?;
    let key = include_str!("app-key.pem");
    let client = sim.client_with("acme", Credentials::app("1", 1, key), fast_retry())?;
    client.service_url().await?;
    assert_eq!(sim.sim.request_count("installation_token"), 1);
    // The installation covers `acme` only.
    let other = sim.client_with("other", Credentials::app("1", 1, key), fast_retry())?;
    let err = other.service_url().await.expect_err("not covered");
    assert_eq!(err.status(), Some(403), "{err:#}");
    // Wrong App id for the installation.
    let wrong = sim.client_with("acme", Credentials::app("2", 1, key), fast_retry())?;
    let err = wrong.service_url().await.expect_err("wrong app");
    assert_eq!(err.status(), Some(401), "{err:#}");
    // Enterprise scope is PAT-only, even for an installation that names the enterprise (the
    // client refuses App credentials for it, so this goes over raw HTTP; the simulator checks
    // an unregistered App's JWT claims, not its signature).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let b64 = |v: serde_json::Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let jwt = format!(
        "{}.{}.dW5zaWduZWQ",
        b64(serde_json::json!({"alg": "RS256", "typ": "JWT"})),
        b64(serde_json::json!({"iss": "1", "iat": now - 60, "exp": now + 480}))
    );
    let minted = post_as(&sim.url("/api/v3/app/installations/1/access_tokens"), &jwt).await?;
    assert_eq!(minted.status, 201);
    let minted = minted.json()?;
    let installation = minted["token"].as_str().unwrap_or_default();
    for (path, status) in [("orgs/acme", 201), ("enterprises/acme-corp", 403)] {
        let answer = post_as(
            &sim.url(&format!(
                "/api/v3/{path}/actions/runners/registration-token"
            )),
            installation,
        )
        .await?;
        assert_eq!(answer.status, status, "{path}");
    }
    sim.stop().await
}

#[tokio::test]
async fn runner_groups_by_name_default_and_spaces() -> Result<()> {
    let sim = TestSim::default().await?;
    sim.sim.create_runner_group("acme", "GPU runners & co")?;
    let client = sim.client("acme")?;
    let default = client.get_runner_group_by_name("default").await?;
    assert_eq!(
        default.as_ref().map(|g| (g.id, g.is_default_group)),
        Some((RunnerGroupId(1), true))
    );
    let gpu = client.get_runner_group_by_name("GPU runners & co").await?;
    assert_eq!(gpu.map(|g| g.id), Some(RunnerGroupId(2)));
    assert!(client.get_runner_group_by_name("nope").await?.is_none());
    sim.stop().await
}

#[tokio::test]
async fn scale_set_create_get_list_update_delete() -> Result<()> {
    let sim = TestSim::default().await?;
    let group = sim.sim.create_runner_group("acme", "second")?;
    let client = sim.client("acme")?;
    let created = create_set(&client, "Linux x64").await?;
    assert!(created.id > GithubScaleSetId(0));
    assert_eq!(created.runner_group_id, Some(RunnerGroupId(1)));
    assert_eq!(created.runner_group_name, "Default");
    assert_eq!(
        created.labels,
        vec![Label {
            id: Some(1),
            ..Label::system("Linux x64")
        }]
    );
    assert!(created.runner_setting.disable_update);
    assert!(created.statistics.is_some());

    let by_id = client.get_scale_set(created.id).await?;
    assert_eq!(by_id.name, "Linux x64");
    // The server matches names case-insensitively (the simulator's documented choice); the
    // client keeps only the exact name.
    let (_, loose) = client
        .query_scale_sets_by_name(RunnerGroupId(1), "linux X64")
        .await?;
    assert_eq!(
        loose.value.iter().map(|s| s.id).collect::<Vec<_>>(),
        [created.id]
    );
    assert!(
        client
            .get_scale_set_by_name(RunnerGroupId(1), "linux X64")
            .await?
            .is_none()
    );
    let by_name = client
        .get_scale_set_by_name(RunnerGroupId(1), "Linux x64")
        .await?;
    assert_eq!(by_name.map(|s| s.id), Some(created.id));
    assert!(
        client
            .get_scale_set_by_name(RunnerGroupId(group), "Linux x64")
            .await?
            .is_none()
    );
    assert_eq!(client.list_scale_sets(None).await?.len(), 1);
    assert_eq!(
        client
            .list_scale_sets(Some(RunnerGroupId(group)))
            .await?
            .len(),
        0
    );

    // A partial PATCH keeps every field it does not name.
    let moved = client
        .update_scale_set(
            created.id,
            &RunnerScaleSetPatch {
                runner_group_id: Some(RunnerGroupId(group)),
                ..RunnerScaleSetPatch::default()
            },
        )
        .await?;
    assert_eq!(
        (moved.runner_group_id, moved.name.as_str()),
        (Some(RunnerGroupId(group)), "Linux x64")
    );
    let renamed = client
        .update_scale_set(
            created.id,
            &RunnerScaleSetPatch {
                name: Some("renamed".to_owned()),
                ..RunnerScaleSetPatch::default()
            },
        )
        .await?;
    assert_eq!(
        (renamed.runner_group_id, renamed.name.as_str()),
        (Some(RunnerGroupId(group)), "renamed")
    );
    assert_eq!(renamed.labels.len(), 1);

    client.delete_scale_set(created.id).await?;
    let err = client.get_scale_set(created.id).await.expect_err("deleted");
    assert!(err.is_scale_set_not_found(), "{err:#}");
    sim.stop().await
}

#[tokio::test]
async fn duplicate_scale_set_names_in_a_group_get_exists() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    create_set(&client, "dup").await?;
    let err = create_refused(&client, "DUP").await?;
    assert!(err.is_scale_set_exists(), "{err:#}");
    assert_eq!(err.status(), Some(400));
    sim.stop().await
}

#[tokio::test]
async fn sessions_conflict_refresh_and_delete() -> Result<()> {
    let (sim, client, set, session) = with_session(config(), "s").await?;
    assert_eq!(session.message_queue_url, sim.url("/scalesets/message"));
    assert_eq!(session.owner_name, "test-owner");
    assert!(session.statistics.is_some());

    let err = client
        .create_session(set.id, "other")
        .await
        .expect_err("conflict");
    assert!(err.is_session_conflict(), "{err:#}");
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.session_conflict_owner(), None);
    sim.sim.update_faults(|f| f.conflict_names_owner = true);
    let err = client
        .create_session(set.id, "other")
        .await
        .expect_err("conflict");
    assert_eq!(err.session_conflict_owner().as_deref(), Some("test-owner"));

    let refreshed = client.refresh_session(&session).await?;
    assert_eq!(refreshed.session_id, session.session_id);
    client.delete_session(set.id, &session.session_id).await?;
    let err = client
        .delete_session(set.id, &session.session_id)
        .await
        .expect_err("gone");
    assert!(err.is_session_expired_or_unknown(), "{err:#}");
    // The set is free again.
    client.create_session(set.id, "next").await?;
    sim.stop().await
}

#[tokio::test]
async fn session_on_a_deleted_scale_set_is_not_found() -> Result<()> {
    let (sim, client, set) = with_set(config(), "gone").await?;
    sim.sim.delete_scale_set(set.id.0)?;
    let err = client
        .create_session(set.id, "me")
        .await
        .expect_err("deleted");
    assert!(err.is_scale_set_not_found(), "{err:#}");
    sim.stop().await
}

#[tokio::test]
async fn auto_assign_delivers_assigned_jobs_and_202_when_idle() -> Result<()> {
    let (sim, client, set, mut session) = with_session(config(), "auto").await?;
    assert!(no_message(&client, &mut session, MessageId(0), 10).await?);
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(2))?;
    let message = next_message(&client, &mut session, MessageId(0), 10, "a message").await?;
    assert_eq!(message.jobs.len(), 2);
    for job in &message.jobs {
        let JobMessage::Assigned { job } = job else {
            panic!("expected JobAssigned, got {job:?}");
        };
        assert_eq!(
            job.runner_request_id,
            RunnerRequestId(0),
            "github.com sends 0"
        );
        assert!(!job.job_id.is_empty());
        assert!(job.queue_time.is_some());
    }
    assert_eq!(message.statistics.map(|s| s.total_assigned_jobs), Some(2));
    client
        .delete_message(&mut session, message.message_id)
        .await?;
    assert!(no_message(&client, &mut session, message.message_id, 10).await?);
    // Acquire does not exist on the github.com broker: a router 404.
    let err = client
        .acquire_jobs(&mut session, &[RunnerRequestId(1)])
        .await
        .expect_err("no route");
    assert_eq!(err.status(), Some(404), "{err:#}");
    assert_eq!(
        err.service_error().map(|s| s.body),
        Some(scaleset_github::ErrorBody::Text)
    );
    sim.stop().await
}

#[tokio::test]
async fn available_then_acquire_mode() -> Result<()> {
    let mut cfg = config();
    cfg.assignment = AssignmentMode::AvailableThenAcquire;
    let (sim, client, set, mut session) = with_session(cfg, "ghes").await?;
    assert!(
        client.get_acquirable_jobs(set.id).await?.is_empty(),
        "204 = empty"
    );
    let ids = sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(2))?;
    let offer = next_message(&client, &mut session, MessageId(0), 10, "offer").await?;
    let offered: Vec<i64> = offer
        .jobs
        .iter()
        .filter_map(|j| match j {
            JobMessage::Available { job, .. } => Some(job.runner_request_id.0),
            _ => None,
        })
        .collect();
    assert_eq!(offered, ids);
    client
        .delete_message(&mut session, offer.message_id)
        .await?;
    let acquirable = client.get_acquirable_jobs(set.id).await?;
    assert_eq!(acquirable.len(), 2);
    let won = client
        .acquire_jobs(
            &mut session,
            &[RunnerRequestId(ids[0]), RunnerRequestId(424_242)],
        )
        .await?;
    assert_eq!(won, vec![RunnerRequestId(ids[0])]);
    let next = next_message(&client, &mut session, offer.message_id, 10, "assigned").await?;
    assert!(
        matches!(&next.jobs[..], [JobMessage::Assigned { job }] if job.runner_request_id == RunnerRequestId(ids[0]))
    );
    let stats = next.statistics.unwrap_or_default();
    assert_eq!(
        (stats.total_available_jobs, stats.total_assigned_jobs),
        (1, 1)
    );
    sim.stop().await
}

#[tokio::test]
async fn jit_configs_and_agents() -> Result<()> {
    let (sim, client, set) = with_set(config(), "jit").await?;
    let jit = client
        .generate_jit_config(
            set.id,
            &JitConfigRequest::new("runner 1").with_work_folder("_work"),
        )
        .await?;
    assert_eq!(jit.runner.name, "runner 1");
    assert_eq!(jit.runner.runner_scale_set_id, set.id);
    assert!(!jit.encoded_jit_config.expose_secret().is_empty());
    let err = client
        .generate_jit_config(set.id, &JitConfigRequest::new("runner 1"))
        .await
        .expect_err("duplicate");
    assert!(err.is_agent_exists(), "{err:#}");
    assert_eq!(err.status(), Some(409));

    let by_id = client.get_runner(jit.runner.id).await?;
    assert_eq!(by_id.map(|r| r.name).as_deref(), Some("runner 1"));
    let by_name = client.get_runner_by_name("runner 1").await?;
    assert_eq!(by_name.map(|r| r.id), Some(jit.runner.id));
    assert!(client.get_runner_by_name("nobody").await?.is_none());
    assert_eq!(client.list_runners().await?.len(), 1);
    assert_eq!(client.remove_runner(jit.runner.id).await?, Removal::Removed);
    // The simulator answers a removed runner as GitHub does (404 `AgentNotFoundException`),
    // which the client reads as not registered.
    assert!(client.get_runner(jit.runner.id).await?.is_none());
    assert_eq!(client.remove_runner(jit.runner.id).await?, Removal::Gone);
    sim.stop().await
}

#[tokio::test]
async fn a_simulated_runner_runs_one_job_through_the_queue() -> Result<()> {
    // Immediate `JobStarted` (the fast-test mode); the default timing is in `queue.rs`.
    let mut cfg = config();
    cfg.job_started_delay = std::time::Duration::ZERO;
    let (sim, client, set, mut session) = with_session(cfg, "loop").await?;
    let assigned = assign_one(&sim, &client, &set, &mut session, 1).await?;
    let jit = client
        .generate_jit_config(set.id, &JitConfigRequest::new("runner-0001"))
        .await?;
    let agent = sim
        .sim
        .start_runner(jit.encoded_jit_config.expose_secret())?;
    assert_eq!(RunnerId(agent), jit.runner.id);

    let started = next_message(&client, &mut session, assigned.message_id, 1, "started").await?;
    assert!(
        matches!(&started.jobs[..], [JobMessage::Started { runner_name, .. }] if runner_name == "runner-0001")
    );
    assert_eq!(
        client.remove_runner(RunnerId(agent)).await?,
        Removal::StillRunning
    );
    client
        .delete_message(&mut session, started.message_id)
        .await?;

    sim.sim.advance(sim.sim.config().runner_job_duration);
    let done = next_message(&client, &mut session, started.message_id, 1, "completed").await?;
    assert!(
        matches!(&done.jobs[..], [JobMessage::Completed { result, runner_name, .. }] if result == "succeeded" && runner_name == "runner-0001")
    );
    assert!(
        client.get_runner_by_name("runner-0001").await?.is_none(),
        "deregistered"
    );
    assert!(sim.sim.start_runner("garbage").is_err());
    sim.stop().await
}

#[tokio::test]
async fn labels_and_setting_round_trip() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    let created = client
        .create_scale_set(
            &NewRunnerScaleSet::new("labelled", RunnerGroupId(1))
                .with_labels(vec![Label::system("labelled"), Label::system("gpu")]),
        )
        .await?;
    let names: Vec<&str> = created.labels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["labelled", "gpu"]);
    assert!(created.labels.iter().all(|l| l.kind == "System"));
    sim.stop().await
}

#[tokio::test]
async fn awkward_names_survive_the_query_string() -> Result<()> {
    let (sim, client) = with_client(config()).await?;
    for name in ["example+garm&123", "a b", "x#y", "50%", "a;b", "größe"] {
        let set = create_set(&client, name).await?;
        let found = client.get_scale_set_by_name(RunnerGroupId(1), name).await?;
        assert_eq!(found.map(|s| s.id), Some(set.id), "{name}");
        let jit = client
            .generate_jit_config(set.id, &JitConfigRequest::new(format!("runner {name}")))
            .await?;
        let runner = client.get_runner_by_name(&format!("runner {name}")).await?;
        assert_eq!(runner.map(|r| r.id), Some(jit.runner.id), "{name}");
    }
    sim.stop().await
}
