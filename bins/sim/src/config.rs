//! Configuration of `scaleset-sim`: the optional TOML file (`RawConfig`, unknown keys refused)
//! merged with the flags, validated into a `SimConfig`, every problem reported at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use scaleset_sim::{
    AppPublicKey, AppSeed, AssignmentMode, InstallationSeed, PatSeed, RunnerGroupSeed, SimConfig,
    TlsIdentity,
};
use serde::Deserialize;

use crate::cli::Cli;

/// The TOML file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    default_seed: Option<bool>,
    #[serde(default)]
    organizations: Vec<String>,
    #[serde(default)]
    repositories: Vec<String>,
    #[serde(default)]
    enterprises: Vec<String>,
    #[serde(default)]
    pats: Vec<RawPat>,
    #[serde(default)]
    apps: Vec<RawApp>,
    #[serde(default)]
    installations: Vec<RawInstallation>,
    #[serde(default)]
    runner_groups: Vec<RawGroup>,
    #[serde(default)]
    behaviour: RawBehaviour,
    tls: Option<RawTls>,
}

/// `[tls]`: serve HTTPS.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: PathBuf,
    key_file: PathBuf,
    #[serde(default = "yes")]
    offer_h2: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPat {
    token: String,
    #[serde(default)]
    scopes: Vec<String>,
}

/// `[[apps]]`: a GitHub App whose JWTs must be signed with the key named here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApp {
    id: String,
    client_id: Option<String>,
    /// The App's public key (`BEGIN PUBLIC KEY` or `BEGIN RSA PUBLIC KEY`).
    public_key_file: Option<PathBuf>,
    /// Or its private key, whose public half is taken (convenient when the App was made for
    /// the simulator and only its private key is at hand).
    private_key_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstallation {
    id: i64,
    app_id: String,
    #[serde(default)]
    accounts: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    scope: String,
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBehaviour {
    actions_base_path: Option<String>,
    queue_path: Option<String>,
    long_poll_hold: Option<String>,
    admin_token_ttl: Option<String>,
    queue_token_ttl: Option<String>,
    installation_token_ttl: Option<String>,
    assignment: Option<String>,
    reassign_after: Option<String>,
    dormancy: Option<String>,
    session_expiry: Option<String>,
    runner_job_duration: Option<String>,
    job_started_delay: Option<String>,
    conflict_names_owner: Option<bool>,
    http2_max_concurrent_streams: Option<u32>,
}

/// Reads the file named by `--config` (if any).
pub(crate) fn read_file(path: Option<&Path>) -> Result<RawConfig> {
    let Some(path) = path else {
        return Ok(RawConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the configuration file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid configuration file {}", path.display()))
}

/// Merges the file and the flags into a validated simulator configuration.
pub(crate) fn build(raw: RawConfig, cli: &Cli) -> Result<SimConfig> {
    let mut problems = Vec::new();
    let default_seed = !cli.no_default_seed && raw.default_seed.unwrap_or(true);
    let mut config = if default_seed {
        SimConfig::default()
    } else {
        SimConfig::empty()
    };
    config.organizations.extend(raw.organizations);
    config.organizations.extend(cli.orgs.iter().cloned());
    config.repositories.extend(raw.repositories);
    config.repositories.extend(cli.repos.iter().cloned());
    config.enterprises.extend(raw.enterprises);
    config.enterprises.extend(cli.enterprises.iter().cloned());
    config.pats.extend(raw.pats.into_iter().map(|p| PatSeed {
        token: p.token,
        scopes: p.scopes,
    }));
    config.pats.extend(cli.pats.iter().map(|token| PatSeed {
        token: token.clone(),
        scopes: Vec::new(),
    }));
    for (index, app) in raw.apps.into_iter().enumerate() {
        let at = format!("apps[{index}]");
        let key = match (&app.public_key_file, &app.private_key_file) {
            (Some(file), None) => read_key(file, AppPublicKey::from_pem),
            (None, Some(file)) => read_key(file, AppPublicKey::of_private_key_pem),
            _ => Err("give exactly one of public_key_file or private_key_file".to_owned()),
        };
        match key {
            Ok(public_key) => config.apps.push(AppSeed {
                id: app.id,
                client_id: app.client_id,
                public_key,
            }),
            Err(problem) => problems.push(format!("{at}: {problem}")),
        }
    }
    config
        .installations
        .extend(raw.installations.into_iter().map(|i| InstallationSeed {
            id: i.id,
            app_id: i.app_id,
            accounts: i.accounts,
        }));
    config
        .runner_groups
        .extend(raw.runner_groups.into_iter().map(|g| RunnerGroupSeed {
            scope: g.scope,
            name: g.name,
        }));
    for spec in &cli.runner_groups {
        match spec.split_once('=') {
            Some((scope, name)) => config.runner_groups.push(RunnerGroupSeed {
                scope: scope.to_owned(),
                name: name.to_owned(),
            }),
            None => problems.push(format!(
                "--runner-group {spec:?} must be written SCOPE=NAME"
            )),
        }
    }

    let b = raw.behaviour;
    if let Some(path) = cli.actions_base_path.clone().or(b.actions_base_path) {
        config.actions_base_path = path;
    }
    if let Some(path) = cli.queue_path.clone().or(b.queue_path) {
        config.queue_path = path;
    }
    let mut duration = |name: &str, value: Option<String>, slot: &mut Duration| {
        if let Some(text) = value {
            match parse_duration(&text) {
                Ok(d) => *slot = d,
                Err(e) => problems.push(format!("{name}: {e}")),
            }
        }
    };
    duration(
        "long_poll_hold",
        cli.long_poll_hold.clone().or(b.long_poll_hold),
        &mut config.long_poll_hold,
    );
    duration(
        "admin_token_ttl",
        cli.admin_token_ttl.clone().or(b.admin_token_ttl),
        &mut config.admin_token_ttl,
    );
    duration(
        "queue_token_ttl",
        cli.queue_token_ttl.clone().or(b.queue_token_ttl),
        &mut config.queue_token_ttl,
    );
    duration(
        "installation_token_ttl",
        b.installation_token_ttl,
        &mut config.installation_token_ttl,
    );
    duration(
        "runner_job_duration",
        cli.runner_job_duration.clone().or(b.runner_job_duration),
        &mut config.runner_job_duration,
    );
    duration(
        "job_started_delay",
        cli.job_started_delay.clone().or(b.job_started_delay),
        &mut config.job_started_delay,
    );
    let mut optional = |name: &str, value: Option<String>, slot: &mut Option<Duration>| {
        if let Some(text) = value {
            if text.trim().eq_ignore_ascii_case("off") {
                *slot = None;
            } else {
                match parse_duration(&text) {
                    Ok(d) => *slot = Some(d),
                    Err(e) => problems.push(format!("{name}: {e}")),
                }
            }
        }
    };
    optional(
        "reassign_after",
        cli.reassign_after.clone().or(b.reassign_after),
        &mut config.reassign_after,
    );
    optional(
        "dormancy",
        cli.dormancy.clone().or(b.dormancy),
        &mut config.dormancy,
    );
    optional(
        "session_expiry",
        cli.session_expiry.clone().or(b.session_expiry),
        &mut config.session_expiry,
    );
    if let Some(mode) = cli.assignment.clone().or(b.assignment) {
        match mode.trim().to_ascii_lowercase().as_str() {
            "auto" => config.assignment = AssignmentMode::AutoAssign,
            "acquire" => config.assignment = AssignmentMode::AvailableThenAcquire,
            other => problems.push(format!("assignment {other:?} must be `auto` or `acquire`")),
        }
    }
    config.conflict_names_owner =
        cli.conflict_names_owner || b.conflict_names_owner.unwrap_or(false);
    if let Some(limit) = cli
        .http2_max_concurrent_streams
        .or(b.http2_max_concurrent_streams)
    {
        config.http2_max_concurrent_streams = limit;
    }
    let tls = match (&cli.tls_cert, &cli.tls_key) {
        (Some(cert), Some(key)) => Some((cert.clone(), key.clone(), !cli.tls_no_h2)),
        _ => raw
            .tls
            .map(|t| (t.cert_file, t.key_file, t.offer_h2 && !cli.tls_no_h2)),
    };
    if let Some((cert, key, offer_h2)) = tls {
        let read = |path: &Path, what: &str| {
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the TLS {what} {}: {e}", path.display()))
        };
        match (read(&cert, "certificate"), read(&key, "key")) {
            (Ok(cert), Ok(key)) => {
                let identity = TlsIdentity::new(cert, key);
                config.tls = Some(if offer_h2 {
                    identity
                } else {
                    identity.without_h2()
                });
            }
            (cert, key) => problems.extend(cert.err().into_iter().chain(key.err())),
        }
    }
    if !problems.is_empty() {
        bail!("invalid configuration: {}", problems.join("; "));
    }
    Ok(config)
}

/// Reads a key file and parses it with `parse`, naming the file in any problem.
fn read_key(
    file: &Path,
    parse: fn(&str) -> std::result::Result<AppPublicKey, scaleset_sim::KeyError>,
) -> std::result::Result<AppPublicKey, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    parse(&text).map_err(|e| format!("{}: {:#}", file.display(), anyhow::Error::new(e)))
}

/// The one grammar of every door ([`scaleset_duration`]): `250ms`, `50s`, `1m30s`, `7d`; a bare
/// number is seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration> {
    scaleset_duration::parse(text).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn durations_take_the_documented_units() {
        assert_eq!(
            parse_duration("200ms").ok(),
            Some(Duration::from_millis(200))
        );
        assert_eq!(parse_duration("50s").ok(), Some(Duration::from_secs(50)));
        assert_eq!(parse_duration("50").ok(), Some(Duration::from_secs(50)));
        assert_eq!(parse_duration("5m").ok(), Some(Duration::from_secs(300)));
        assert_eq!(
            parse_duration("7d").ok(),
            Some(Duration::from_secs(7 * 86_400))
        );
        assert_eq!(parse_duration("1m30s").ok(), Some(Duration::from_secs(90)));
        assert!(parse_duration("5 fortnights").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn file_and_flags_merge_and_every_problem_is_reported() {
        let raw: RawConfig = toml::from_str(
            r#"
            default_seed = false
            organizations = ["zeta"]
            [[pats]]
            token = "ghp_zeta"
            scopes = ["zeta"]
            [[runner_groups]]
            scope = "zeta"
            name = "gpu"
            [behaviour]
            long_poll_hold = "2s"
            assignment = "acquire"
            dormancy = "off"
            session_expiry = "10m"
            job_started_delay = "0s"
            "#,
        )
        .expect("valid toml");
        let cli = Cli::parse_from([
            "scaleset-sim",
            "--org",
            "omega",
            "--long-poll-hold",
            "150ms",
        ]);
        let config = build(raw, &cli).expect("valid");
        assert_eq!(config.organizations, ["zeta", "omega"]);
        assert_eq!(config.pats.len(), 1);
        assert_eq!(
            config.long_poll_hold,
            Duration::from_millis(150),
            "flags win"
        );
        assert_eq!(config.assignment, AssignmentMode::AvailableThenAcquire);
        assert_eq!(config.dormancy, None);
        assert_eq!(config.session_expiry, Some(Duration::from_secs(600)));
        assert_eq!(config.job_started_delay, Duration::ZERO, "immediate mode");
        let defaults =
            build(RawConfig::default(), &Cli::parse_from(["scaleset-sim"])).expect("valid");
        assert_eq!(defaults.job_started_delay, Duration::from_secs(50));

        let cli = Cli::parse_from([
            "scaleset-sim",
            "--long-poll-hold",
            "soon",
            "--assignment",
            "random",
            "--runner-group",
            "nogroup",
            "--job-started-delay",
            "later",
        ]);
        let err = build(RawConfig::default(), &cli).expect_err("invalid");
        let text = err.to_string();
        assert!(text.contains("long_poll_hold"), "{text}");
        assert!(text.contains("random"), "{text}");
        assert!(text.contains("SCOPE=NAME"), "{text}");
        assert!(text.contains("job_started_delay"), "{text}");
    }

    #[test]
    fn apps_are_registered_from_a_public_or_private_key_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let private = dir.path().join("app.pem");
        std::fs::write(
            &private,
            include_str!("../../../crates/sim/tests/conformance/app-key.pem"),
        )
        .expect("key");
        let public_key = AppPublicKey::of_private_key_pem(include_str!(
            "../../../crates/sim/tests/conformance/app-key.pem"
        ))
        .expect("key");
        let public = dir.path().join("app.pub.pem");
        std::fs::write(&public, public_key.to_pem()).expect("key");
        let text = format!(
            r#"
            [[apps]]
            id = "7"
            client_id = "Iv1.seven"
            public_key_file = "{}"
            [[apps]]
            id = "8"
            private_key_file = "{}"
            [[installations]]
            id = 70
            app_id = "7"
            accounts = ["acme"]
            [behaviour]
            installation_token_ttl = "10m"
            "#,
            public.display(),
            private.display()
        );
        let raw: RawConfig = toml::from_str(&text).expect("parses");
        let config = build(raw, &Cli::parse_from(["scaleset-sim"])).expect("valid");
        assert_eq!(config.apps.len(), 2);
        assert!(config.apps.iter().all(|a| a.public_key == public_key));
        assert_eq!(config.apps[0].client_id.as_deref(), Some("Iv1.seven"));
        assert_eq!(config.installation_token_ttl, Duration::from_secs(600));

        let bad: RawConfig = toml::from_str(&format!(
            r#"
            [[apps]]
            id = "7"
            public_key_file = "{}"
            [[apps]]
            id = "8"
            "#,
            private.display()
        ))
        .expect("parses");
        let text = build(bad, &Cli::parse_from(["scaleset-sim"]))
            .expect_err("a private key as public key, and no key")
            .to_string();
        assert!(
            text.contains("apps[0]") && text.contains("not a public key"),
            "{text}"
        );
        assert!(text.contains("apps[1]: give exactly one"), "{text}");
    }

    #[test]
    fn unknown_keys_in_the_file_are_refused() {
        assert!(toml::from_str::<RawConfig>("organisations = [\"typo\"]").is_err());
    }
}
