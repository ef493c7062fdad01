//! `scaleset-worker --check` looks at every file and directory the configuration names, as the
//! worker will use them: the three most common deployment mistakes (a provider executable that
//! is not there, a provider `config_file` that cannot be read, an SQLite database in a
//! directory that does not exist) exit 2 naming the key, instead of surfacing later as failed
//! creates.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::helpers::{BIN, KEY};

/// A worker file with an SQLite database at `db` and an external provider with `executable`
/// and `config_file`.
fn file(db: &Path, executable: &Path, config_file: &Path) -> String {
    format!(
        r#"
controller_id = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab"
[database]
url = "sqlite://{db}"
[encryption]
primary_key_id = "k1"
[[encryption.keys]]
id = "k1"
env = "K"
[worker]
instance_api_url = "https://scaleset.example.com"
[[provider]]
name = "lxd"
kind = "external"
executable = "{executable}"
config_file = "{config_file}"
"#,
        db = db.display(),
        executable = executable.display(),
        config_file = config_file.display(),
    )
}

/// `scaleset-worker --check` on `text`: (exit code, stdout, stderr).
async fn check(dir: &Path, text: &str) -> (Option<i32>, String, String) {
    let path = dir.join("worker.toml");
    std::fs::write(&path, text).expect("config");
    let output = tokio::process::Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("--check")
        .env_clear()
        .env("K", KEY)
        .output()
        .await
        .expect("run scaleset-worker --check");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn check_refuses_a_missing_executable_an_unreadable_provider_config_and_a_missing_database_directory()
 {
    let dir = tempfile::tempdir().expect("temp dir");
    let executable = dir.path().join("garm-provider-lxd");
    let config_file = dir.path().join("lxd.toml");
    let db = dir.path().join("no-such-dir").join("scaleset.db");

    let (code, stdout, stderr) = check(dir.path(), &file(&db, &executable, &config_file)).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    for key in [
        "database.url:",
        "provider \"lxd\".executable:",
        "provider \"lxd\".config_file:",
    ] {
        assert!(stderr.contains(key), "{key} not named in: {stderr}");
    }
    assert!(stderr.contains("no-such-dir"), "{stderr}");

    // A file that is there but not executable is still refused.
    std::fs::write(&executable, "#!/bin/sh\nexit 0\n").expect("executable");
    std::fs::write(&config_file, "").expect("provider config");
    std::fs::create_dir(db.parent().expect("db dir")).expect("db dir");
    let (code, _, stderr) = check(dir.path(), &file(&db, &executable, &config_file)).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("provider \"lxd\".executable:"), "{stderr}");
    assert!(stderr.contains("not executable"), "{stderr}");
    assert!(!stderr.contains("database.url"), "{stderr}");

    // Everything as the worker will use it: the check passes.
    std::fs::set_permissions(&executable, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, stdout, stderr) = check(dir.path(), &file(&db, &executable, &config_file)).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "configuration ok\n");
    assert!(!db.exists(), "--check created the database");
}

/// `--version` names the build as `scaleset_build_info` does: the version, the commit and the
/// compiler.
#[tokio::test]
async fn the_long_version_names_the_revision_and_the_compiler() {
    let output = tokio::process::Command::new(BIN)
        .arg("--version")
        .output()
        .await
        .expect("run scaleset-worker --version");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        text.trim(),
        format!("scaleset-worker {}", scaleset_api::LONG_VERSION)
    );
    assert!(
        text.contains(&format!("{} (revision ", env!("CARGO_PKG_VERSION")))
            && text.contains(", rustc "),
        "{text}"
    );
}
