//! Whole-system tests over loopback HTTP: the real `scaleset-github` client drives the GitHub
//! simulator through the full loop a controller runs (look up or create, session, long-poll,
//! acknowledge, JIT runners booted by a fake provider, jobs started and completed).

mod adoption;

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Result, bail};
use scaleset_e2e::RunningSim;
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, JitConfigRequest, JobMessage, MessageId,
    NewRunnerScaleSet, RetryPolicy, RunnerGroupId,
};
use scaleset_sim::{Burst, JobSpec, SimConfig};

fn client(github: &RunningSim, scope: &str) -> Result<Client> {
    let url = ConfigUrl::parse(&github.url(&format!("/{scope}")))?;
    Ok(Client::new(
        ClientConfig::new(url, Credentials::pat("ghp_simulator")).with_retry(RetryPolicy::new(
            5,
            Duration::from_millis(1),
            Duration::from_millis(5),
        )),
    )?)
}

/// A listener + scaler + fake provider in miniature: every assigned job gets a JIT runner that
/// the simulator boots; the loop ends when every job has completed.
#[tokio::test]
async fn the_whole_loop_runs_on_one_machine_even_with_faults() -> Result<()> {
    let mut config = SimConfig {
        long_poll_hold: Duration::from_millis(50),
        ..SimConfig::default()
    };
    config.runner_job_duration = Duration::from_secs(5);
    let github = RunningSim::start(config).await?;
    let client = client(&github, "acme")?;

    let set = match client
        .get_scale_set_by_name(RunnerGroupId(1), "e2e")
        .await?
    {
        Some(existing) => existing,
        None => {
            client
                .create_scale_set(&NewRunnerScaleSet::new("e2e", RunnerGroupId(1)))
                .await?
        }
    };
    let mut session = client.create_session(set.id, "e2e-listener").await?;
    let jobs = github.sim.enqueue_jobs(set.id.0, &JobSpec::count(5))?;
    // GitHub misbehaves along the way; the client's retries absorb it.
    github.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(3, 503));
        f.bom = true;
    });

    let mut last = MessageId(0);
    let mut runners = 0;
    let mut started = BTreeSet::new();
    let mut completed = BTreeSet::new();
    for _ in 0..200 {
        if completed.len() == jobs.len() {
            break;
        }
        let Some(message) = client.get_message(&mut session, last, 3).await? else {
            // Nothing new: let simulated time run so busy runners finish.
            github.sim.advance(Duration::from_secs(5));
            continue;
        };
        last = message.message_id;
        client
            .delete_message(&mut session, message.message_id)
            .await?;
        for job in &message.jobs {
            match job {
                JobMessage::Assigned { .. } => {
                    runners += 1;
                    let jit = client
                        .generate_jit_config(
                            set.id,
                            &JitConfigRequest::new(format!("runner-{runners}")),
                        )
                        .await?;
                    github
                        .sim
                        .start_runner(jit.encoded_jit_config.expose_secret())?;
                }
                JobMessage::Started { job, .. } => {
                    started.insert(job.job_id.clone());
                }
                JobMessage::Completed { job, result, .. } => {
                    assert_eq!(result, "succeeded");
                    completed.insert(job.job_id.clone());
                }
                other => bail!("unexpected job message {other:?}"),
            }
        }
    }
    assert_eq!(completed.len(), 5, "every job completed");
    assert_eq!(started, completed);
    assert_eq!(runners, 5, "one runner per job");
    assert!(
        client.list_runners().await?.is_empty(),
        "ephemeral runners deregistered"
    );
    let stats = github.sim.state().scale_set(set.id.0).map(|s| s.statistics);
    assert_eq!(stats.map(|s| s.total_assigned_jobs), Some(0));
    client.delete_session(set.id, &session.session_id).await?;
    Ok(github.stop().await?)
}
