//! Issue 31: a fleet whose credentials are a GitHub App declared in the file, against a
//! simulator that checks App JWT signatures, through simulated time past every token's expiry
//! and a wiped database.

use std::time::Duration;

use nix::sys::signal::Signal;
use scaleset_sim::{AppPublicKey, AppSeed, InstallationSeed};

use crate::helpers::{BIN, RunningSim, Site, Worker, eventually, worker_env};
use crate::{assert_served_once, serve_jobs};

const APP_KEY: &str = include_str!("../../../../crates/sim/tests/conformance/app-key.pem");

/// A simulator that knows no PAT, only App 4242 (registered with its public key, so its JWTs
/// are signature-checked) installed on `acme` as installation 77.
async fn app_only_sim() -> RunningSim {
    RunningSim::start_with(|config| {
        config.pats.clear();
        config.apps = vec![AppSeed {
            id: "4242".to_owned(),
            client_id: None,
            public_key: AppPublicKey::of_private_key_pem(APP_KEY).expect("test key"),
        }];
        config.installations = vec![InstallationSeed {
            id: 77,
            app_id: "4242".to_owned(),
            accounts: vec!["acme".to_owned()],
        }];
    })
    .await
}

/// A site whose `[[credentials]]` is App 4242, installation 77, key in a file beside it.
fn app_site(sim: &RunningSim, scale_sets: &[&str]) -> Site {
    let site = Site::new(sim, scale_sets);
    let key = site.dir.path().join("app.pem");
    std::fs::write(&key, APP_KEY).expect("key file");
    let text = std::fs::read_to_string(site.config())
        .expect("config")
        .replace(
            "token_env = \"TEST_GITHUB_TOKEN\"",
            &format!(
                "app_id = 4242\ninstallation_id = 77\nprivate_key_file = \"{}\"",
                key.display()
            ),
        );
    assert!(text.contains("app_id = 4242"), "{text}");
    std::fs::write(site.config(), text).expect("config");
    site
}

/// Every call of the token chain the simulator answered, as (endpoint, status).
fn chain_calls(sim: &RunningSim) -> Vec<(String, u16)> {
    sim.sim
        .request_log()
        .into_iter()
        .filter(|r| {
            matches!(
                r.endpoint.as_str(),
                "installation_token" | "registration_token" | "runner_registration"
            )
        })
        .map(|r| (r.endpoint, r.status))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_declared_fleet_survives_time_and_a_wiped_database_with_signatures_checked() {
    let sim = app_only_sim().await;
    let site = app_site(&sim, &["linux", "arm"]);

    // `--check` parses the key and says which App it is for; GitHub is asked only for each
    // entity's runner downloads (with the installation token they take).
    let check = tokio::process::Command::new(BIN)
        .arg("--config")
        .arg(site.config())
        .arg("--check")
        .env_clear()
        .envs(worker_env())
        .output()
        .await
        .expect("run --check");
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    assert!(
        said.contains("credentials \"sim\": GitHub App 4242, installation 77, private key SHA256:"),
        "{said}"
    );
    assert!(!said.contains("PRIVATE KEY"), "{said}");
    let asked: Vec<String> = sim
        .sim
        .request_log()
        .into_iter()
        .map(|r| r.endpoint)
        .filter(|e| e != "installation_token")
        .collect();
    assert_eq!(asked, ["runner_downloads"], "--check asked GitHub more");

    let worker = Worker::spawn(&site.config(), &worker_env());
    let ids = eventually("both scale sets listen", || async {
        let linux = sim.scale_set_id("linux")?;
        let arm = sim.scale_set_id("arm")?;
        (sim.has_session(linux) && sim.has_session(arm)).then_some([linux, arm])
    })
    .await;
    for id in ids {
        serve_jobs(&sim, &site, id, 2).await;
    }
    // Past the installation, admin and queue tokens' lifetimes (1 h) in simulated time: the
    // worker fetches new ones (a new App JWT, a new installation token) and keeps serving.
    let minted = sim.sim.request_count("installation_token");
    sim.sim.advance(Duration::from_secs(2 * 3600));
    for id in ids {
        serve_jobs(&sim, &site, id, 2).await;
    }
    assert!(
        sim.sim.request_count("installation_token") > minted,
        "a new installation token after the old one expired"
    );
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(sim.sim.request_count("create_scale_set"), 2);

    site.wipe_database();
    assert!(!site.db().exists());
    let worker = Worker::spawn(&site.config(), &worker_env());
    sim.all_listening("both scale sets listen again", &ids)
        .await;
    assert_eq!(
        sim.sim.request_count("create_scale_set"),
        2,
        "every scale set was adopted, none created"
    );
    for id in ids {
        serve_jobs(&sim, &site, id, 2).await;
        assert_served_once(&sim, id);
        assert_eq!(sim.job_states(id).len(), 6);
    }
    assert_eq!(sim.sim.state().scale_sets.len(), 2, "no duplicate");
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));

    // Every token-chain call was answered with success: no JWT was refused, no expired
    // installation token was used, and the App path (the simulator knows no PAT) served it all.
    let chain = chain_calls(&sim);
    assert!(
        chain.iter().all(|(_, status)| (200..300).contains(status)),
        "{chain:?}"
    );
    assert!(
        chain
            .iter()
            .filter(|(e, _)| e == "installation_token")
            .count()
            >= 3,
        "one per start and one after the expiry: {chain:?}"
    );
}

/// The App's client id as the simulator registers it beside its App ID 4242, the way
/// github.com shows both on the App's settings page.
const CLIENT_ID: &str = "Iv23liSimulatorApp42";

/// The twin of the App test above with the App named by its client id: `[[credentials]]`
/// gives `client_id` and no `app_id`, so the only issuer the worker can sign its JWT with is
/// the client id, and the simulator (which checks the signature against App 4242's key and
/// maps the client id to that App) must mint an installation token for it before any job is
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_named_by_its_client_id_gets_an_installation_token_and_serves_jobs() {
    let sim = RunningSim::start_with(|config| {
        config.pats.clear();
        config.apps = vec![AppSeed {
            id: "4242".to_owned(),
            client_id: Some(CLIENT_ID.to_owned()),
            public_key: AppPublicKey::of_private_key_pem(APP_KEY).expect("test key"),
        }];
        config.installations = vec![InstallationSeed {
            id: 77,
            app_id: "4242".to_owned(),
            accounts: vec!["acme".to_owned()],
        }];
    })
    .await;
    let site = Site::new(&sim, &["linux"]);
    let key = site.dir.path().join("app.pem");
    std::fs::write(&key, APP_KEY).expect("key file");
    let text = std::fs::read_to_string(site.config())
        .expect("config")
        .replace(
            "token_env = \"TEST_GITHUB_TOKEN\"",
            &format!(
                "client_id = \"{CLIENT_ID}\"\ninstallation_id = 77\nprivate_key_file = \"{}\"",
                key.display()
            ),
        );
    assert!(
        text.contains(CLIENT_ID) && !text.contains("app_id"),
        "{text}"
    );
    std::fs::write(site.config(), text).expect("config");

    let check = tokio::process::Command::new(BIN)
        .arg("--config")
        .arg(site.config())
        .arg("--check")
        .env_clear()
        .envs(worker_env())
        .output()
        .await
        .expect("run --check");
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    assert!(
        said.contains(&format!(
            "credentials \"sim\": GitHub App client id {CLIENT_ID}, installation 77"
        )),
        "{said}"
    );

    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = eventually("the scale set listens", || async {
        let id = sim.scale_set_id("linux")?;
        sim.has_session(id).then_some(id)
    })
    .await;
    serve_jobs(&sim, &site, id, 2).await;
    assert_served_once(&sim, id);
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));

    let chain = chain_calls(&sim);
    assert!(
        chain.iter().any(|(e, _)| e == "installation_token"),
        "{chain:?}"
    );
    assert!(
        chain.iter().all(|(_, status)| (200..300).contains(status)),
        "no JWT was refused: {chain:?}"
    );
}
