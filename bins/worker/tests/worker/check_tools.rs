//! `scaleset-worker --check` reads each entity's runner downloads from GitHub once and says, for
//! every declared scale set, which download a new runner would get, or warns (exit 0: GitHub's
//! list may change) that its OS/architecture has none, naming the platforms GitHub offers.

use crate::helpers::{BIN, RunningSim, Site, worker_env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_warns_when_a_declared_sets_platform_has_no_runner_download() {
    let sim = RunningSim::start().await;
    // This entity's GitHub builds no linux/arm64 runner.
    sim.sim
        .update_faults(|f| f.omit_runner_downloads = vec!["linux/arm64".to_owned()]);
    let site = Site::new(&sim, &["linux", "arm", "win"]);
    let text = std::fs::read_to_string(site.config())
        .expect("config")
        .replace("name = \"arm\"\n", "name = \"arm\"\nos_arch = \"arm64\"\n")
        .replace(
            "name = \"win\"\n",
            "name = \"win\"\nos_type = \"windows\"\n",
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
    let (stdout, stderr) = (
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr),
    );
    assert_eq!(
        check.status.code(),
        Some(0),
        "a warning, not a failure: {check:?}"
    );
    assert!(stdout.starts_with("configuration ok\n"), "{stdout}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("scale set \"{name}\"")))
            .unwrap_or_else(|| panic!("no line for {name}: {stdout}"))
            .to_owned()
    };
    assert!(
        line("linux").contains("a new linux/amd64 runner gets actions-runner-linux-x64-"),
        "{stdout}"
    );
    assert!(
        line("win").contains("a new windows/amd64 runner gets actions-runner-win-x64-"),
        "{stdout}"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("scaleset-worker: warning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    let warning = warnings[0];
    assert!(warning.contains("scale set \"arm\""), "{warning}");
    assert!(warning.contains("have none for linux/arm64"), "{warning}");
    assert!(
        warning.contains(
            "GitHub offers: linux/amd64, linux/arm, windows/amd64, windows/arm64, osx/amd64, \
             osx/arm64"
        ),
        "{warning}"
    );
    assert_eq!(
        sim.sim.request_count("runner_downloads"),
        1,
        "one read for the entity, whatever its number of scale sets"
    );
}
