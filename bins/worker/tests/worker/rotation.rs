//! Issue 31 item 3: a PAT behind `token_file` is rotated while jobs flow, as Kubernetes rotates
//! a mounted secret (the file replaced by a rename), and the worker uses the new token without
//! a restart: no job lost, and the simulator, which counts every PAT presented, sees the old
//! one no more once it is revoked.

use std::time::Duration;

use nix::sys::signal::Signal;
use scaleset_sim::PatSeed;
use scaleset_store::{Auth, CredentialStore as _, ExposeSecret as _};

use crate::helpers::{RunningSim, Site, Worker, eventually, worker_env};
use crate::{assert_served_once, finish, serve_jobs};

const OLD: &str = "ghp_simulator";
const NEW: &str = "ghp_rotated_0123456789";

fn uses(sim: &RunningSim, token: &str) -> u64 {
    sim.sim
        .pat_uses()
        .into_iter()
        .find(|p| p.token == token)
        .map_or(0, |p| p.uses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pat_file_rotated_while_jobs_flow_is_used_without_a_restart() {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux"]);
    let token = site.dir.path().join("github-token");
    std::fs::write(&token, format!("{OLD}\n")).expect("token file");
    let text = std::fs::read_to_string(site.config())
        .expect("config")
        .replace(
            "token_env = \"TEST_GITHUB_TOKEN\"",
            &format!("token_file = \"{}\"", token.display()),
        );
    assert!(text.contains("token_file"), "{text}");
    std::fs::write(site.config(), text).expect("config");

    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = sim.listening("the scale set listens", "linux").await;
    serve_jobs(&sim, &site, id, 2).await;
    assert!(uses(&sim, OLD) > 0, "the first token served the start");

    // Jobs in flight while the secret is replaced: the new PAT exists on GitHub first, then
    // the file is swapped by a rename (what a kubelet does), then the old PAT is revoked.
    sim.enqueue(id, 3);
    sim.sim.add_pat(PatSeed {
        token: NEW.to_owned(),
        scopes: Vec::new(),
    });
    let staged = site.dir.path().join("github-token.new");
    std::fs::write(&staged, format!("{NEW}\n")).expect("staged token");
    std::fs::rename(&staged, &token).expect("swap the token file");
    eventually("the worker seals the new token in the store", || async {
        let stored = site
            .store()
            .await
            .get_credentials_by_name("sim")
            .await
            .expect("the credentials are stored");
        matches!(&stored.auth, Auth::Pat { token } if token.expose_secret() == NEW).then_some(())
    })
    .await;
    // The next token fetch (a job to scale for) presents the new PAT.
    sim.enqueue(id, 2);
    eventually("the new PAT is used", || async {
        (uses(&sim, NEW) > 0).then_some(())
    })
    .await;
    assert!(sim.sim.revoke_pat(OLD));
    let old_uses = uses(&sim, OLD);

    eventually("the jobs across the rotation run", || async {
        let states = sim.job_states(id);
        (states.len() == 7 && states.iter().all(|s| s == "running" || s == "completed"))
            .then_some(())
    })
    .await;
    finish(&sim, &site, id).await;
    // Past every token's lifetime: the whole chain runs again, with the new PAT only.
    sim.sim.advance(Duration::from_secs(2 * 3600));
    serve_jobs(&sim, &site, id, 2).await;
    // The log is the subject of the last assertion: no token reaches it.
    let log = worker.log_lines();
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));

    assert_served_once(&sim, id);
    assert_eq!(sim.job_states(id).len(), 9, "no job lost");
    assert_eq!(
        uses(&sim, OLD),
        old_uses,
        "the revoked PAT was presented after the rotation"
    );
    assert!(uses(&sim, NEW) > 1, "the new PAT served the refreshes");
    let registration_refused = sim
        .sim
        .request_log()
        .iter()
        .filter(|r| r.endpoint == "registration_token" && r.status == 401)
        .count();
    assert_eq!(registration_refused, 0, "no token fetch was refused");
    assert!(
        log.iter()
            .all(|line| !line.contains(NEW) && !line.contains(OLD)),
        "a token reached the log"
    );
}
