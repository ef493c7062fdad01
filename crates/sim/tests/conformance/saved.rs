//! The saved state file: a simulator restarted on the file written by `save_state` is the same
//! GitHub (scale sets with their labels, sessions, unacknowledged messages, jobs, agents, runner
//! groups, simulated time), and goes on handing out new ids.

use std::time::Duration;

use anyhow::Result;
use scaleset_github::ExposeSecret as _;
use scaleset_github::JitConfigRequest;
use scaleset_sim::{JobSpec, Simulator};

use crate::helpers::{TestSim, config, create_set};

#[tokio::test]
async fn a_restarted_simulator_continues_the_saved_world() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("github.json");
    let first = TestSim::default().await?;
    let client = first.client("acme")?;
    let mine = create_set(&client, "linux").await?;
    let seeded = first
        .sim
        .seed_scale_set("acme", 0, "old", &["scaleset-owner-abc".to_owned()])?;
    let foreign = first.sim.create_foreign_scale_set_with_labels(
        "acme",
        0,
        "theirs",
        "other-controller",
        &["scaleset-owner-def".to_owned()],
    )?;
    let group = first.sim.create_runner_group("acme", "gpu")?;
    let jobs = first
        .sim
        .enqueue_jobs(i64::from(mine.id), &JobSpec::count(3))?;
    let mut session = client.create_session(mine.id, "me").await?;
    let assigned = client
        .get_message(&mut session, 0.into(), 10)
        .await?
        .expect("the jobs are assigned");
    let jit = client
        .generate_jit_config(mine.id, &JitConfigRequest::new("runner-1"))
        .await?;
    first
        .sim
        .start_runner(jit.encoded_jit_config.expose_secret())?;
    first.sim.advance(Duration::from_secs(5));
    let before = first.sim.state();
    let offset = first.sim.time_offset();
    first.sim.save_state(&path)?;
    first.stop().await?;

    let sim = Simulator::with_saved_state(config(), &path)?;
    let after = sim.state();
    assert_eq!(
        serde_json::to_value(&after.scale_sets)?,
        serde_json::to_value(&before.scale_sets)?,
        "scale sets, labels, sessions and message logs survive"
    );
    assert_eq!(
        serde_json::to_value(&after.jobs)?,
        serde_json::to_value(&before.jobs)?
    );
    assert_eq!(after.jobs.len(), jobs.len());
    assert_eq!(
        serde_json::to_value(&after.agents)?,
        serde_json::to_value(&before.agents)?
    );
    assert_eq!(after.agents.len(), 1, "the busy runner is still there");
    let set = after.scale_set(i64::from(mine.id)).expect("mine");
    assert_eq!(
        set.session.as_ref().map(|s| s.owner_name.as_str()),
        Some("me")
    );
    assert!(
        set.unacknowledged_message_ids
            .contains(&i64::from(assigned.message_id))
    );
    assert_eq!(
        after
            .jobs_of(i64::from(mine.id))
            .filter(|j| j.state == "running")
            .count(),
        1
    );
    assert!(after.runner_groups.iter().any(|g| g.id == group));
    assert_eq!(sim.time_offset(), offset, "simulated time goes on");
    let old = after.scale_set(seeded).expect("the seeded set is kept");
    assert!(old.labels.contains(&"scaleset-owner-abc".to_owned()));
    let theirs = after
        .scale_set(foreign.scale_set_id)
        .expect("the foreign set");
    assert_eq!(
        theirs.session.as_ref().map(|s| s.owner_name.as_str()),
        Some("other-controller")
    );
    let next = sim.seed_scale_set("acme", 0, "new", &[])?;
    assert!(
        next > foreign.scale_set_id,
        "ids go on after the saved ones"
    );
    let more = sim.enqueue_jobs(i64::from(mine.id), &JobSpec::count(1))?;
    assert!(more[0] > *jobs.iter().max().unwrap_or(&0));
    // The restored runner goes on: its job finishes in simulated time and it deregisters.
    sim.advance(Duration::from_secs(60));
    let later = sim.state();
    assert_eq!(
        later
            .jobs_of(i64::from(mine.id))
            .filter(|j| j.state == "completed")
            .count(),
        1
    );
    assert!(later.agents.is_empty());
    Ok(())
}

#[tokio::test]
async fn no_file_means_the_seed_and_a_bad_file_is_refused_naming_it() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("github.json");
    let sim = Simulator::with_saved_state(config(), &path)?;
    assert!(sim.state().scale_sets.is_empty());
    assert!(!sim.state().runner_groups.is_empty(), "seeded as new");
    std::fs::write(&path, b"{not json")?;
    let err = Simulator::with_saved_state(config(), &path).expect_err("a corrupt file");
    let text = format!("{err:#}");
    assert!(text.contains("github.json"), "{text}");
    std::fs::write(&path, br#"{"version": 99}"#)?;
    assert!(Simulator::with_saved_state(config(), &path).is_err());
    Ok(())
}
