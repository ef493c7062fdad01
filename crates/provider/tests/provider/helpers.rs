//! Test helpers: recorder scripts that stand in for GARM provider
//! executables and write down every invocation (environment, arguments,
//! stdin), sample requests, and a bounded polling helper.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use scaleset_provider::{
    BootstrapInstance, CreateRequest, EnvAllowList, ExternalConfig, ExternalProvider,
    InterfaceVersion, OsArch, OsType, Pool, PoolKey, RunnerTool, SecretString, UserDataOptions,
};
use uuid::Uuid;

pub(crate) const CONTROLLER: Uuid = Uuid::from_u128(0x0c0ffee0_0000_4000_8000_000000000001);
pub(crate) const TOKEN: &str = "instance-token-do-not-log";
pub(crate) const JIT: &str = "jit-config-do-not-log";

/// One recorded invocation of a recorder script.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) stdin: Vec<u8>,
}

/// A temporary directory holding recorder scripts and what they recorded.
pub(crate) struct Recorder {
    dir: tempfile::TempDir,
}

impl Recorder {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// [`config`]'s defaults for the script [`Self::script`] writes from `body`, speaking
    /// `version`.
    pub(crate) fn config(&self, body: &str, version: InterfaceVersion) -> ExternalConfig {
        config(&self.script("provider", body), version)
    }

    /// A provider running the script [`Self::script`] writes from `body`, speaking `version`
    /// with [`config`]'s defaults.
    pub(crate) fn provider(&self, body: &str, version: InterfaceVersion) -> ExternalProvider {
        provider(self.config(body, version))
    }

    /// As [`Self::provider`], with `adjust` applied to the settings first.
    pub(crate) fn provider_with(
        &self,
        body: &str,
        version: InterfaceVersion,
        adjust: impl FnOnce(&mut ExternalConfig),
    ) -> ExternalProvider {
        let mut config = self.config(body, version);
        adjust(&mut config);
        provider(config)
    }

    /// Writes an executable bash script that records its invocation and then
    /// runs `body`. The script's own initial environment is read from
    /// `/proc/$$/environ`, so it is exactly what the provider passed (bash adds
    /// nothing there).
    pub(crate) fn script(&self, name: &str, body: &str) -> PathBuf {
        let calls = self.path().join("calls");
        std::fs::create_dir_all(&calls).expect("calls dir");
        let text = format!(
            "#!/bin/bash\nset -u\nREC='{calls}'\nDIR='{dir}'\n\
             tr '\\0' '\\n' < /proc/$$/environ > \"$REC/$$.env\"\n\
             cat > \"$REC/$$.stdin\"\n{body}\n",
            calls = calls.display(),
            dir = self.path().display(),
        );
        let path = self.path().join(name);
        write_executable(&path, &text);
        path
    }

    /// Every recorded invocation.
    pub(crate) fn calls(&self) -> Vec<Call> {
        let mut calls = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.path().join("calls")) else {
            return calls;
        };
        let mut envs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "env"))
            .collect();
        envs.sort();
        for env_path in envs {
            let env = std::fs::read_to_string(&env_path)
                .expect("env file")
                .lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let stdin = std::fs::read(env_path.with_extension("stdin")).unwrap_or_default();
            calls.push(Call { env, stdin });
        }
        calls
    }

    /// The single recorded invocation.
    pub(crate) fn only_call(&self) -> Call {
        let mut calls = self.calls();
        assert_eq!(calls.len(), 1, "expected exactly one invocation");
        calls.remove(0)
    }
}

pub(crate) fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write script");
    let mut perms = std::fs::metadata(path).expect("metadata").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// External-provider settings for a test executable.
pub(crate) fn config(executable: &Path, version: InterfaceVersion) -> ExternalConfig {
    let mut config = ExternalConfig::new(executable, "/etc/scaleset/provider.toml");
    config.interface_version = version;
    config.environment = EnvAllowList::parse(&["HTTPS_PROXY", "OS_*"]).expect("allow-list");
    config.timeout = Duration::from_secs(30);
    config
}

/// The operator's environment as the tests pretend it is.
pub(crate) fn operator_env() -> BTreeMap<String, String> {
    env_of(&[
        ("HTTPS_PROXY", "http://proxy.internal:3128"),
        ("OS_AUTH_URL", "https://keystone.internal:5000/v3"),
        ("OS_PASSWORD", "hunter2"),
        ("HOME", "/root"),
        ("PATH", "/usr/bin:/bin"),
        ("AWS_SECRET_ACCESS_KEY", "not-allowed"),
        ("GARM_COMMAND", "smuggled"),
    ])
}

pub(crate) fn provider(config: ExternalConfig) -> ExternalProvider {
    provider_in(config, &operator_env())
}

/// A provider with `config` started from the operator environment `env`.
pub(crate) fn provider_in(
    config: ExternalConfig,
    env: &BTreeMap<String, String>,
) -> ExternalProvider {
    ExternalProvider::new("test", config, CONTROLLER, env)
}

/// An environment map from literal pairs.
pub(crate) fn env_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(crate) fn pool() -> Pool {
    Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(42),
    ))
    .with_extra_specs(serde_json::json!({"flavor_override": "big"}))
}

pub(crate) fn bootstrap(name: &str, pool: &Pool) -> BootstrapInstance {
    BootstrapInstance {
        name: name.into(),
        tools: vec![RunnerTool {
            os: Some("linux".into()),
            architecture: Some("x64".into()),
            download_url: Some("https://example.invalid/actions-runner-linux-x64.tar.gz".into()),
            filename: Some("actions-runner-linux-x64.tar.gz".into()),
            temp_download_token: None,
            sha256_checksum: Some("00".into()),
        }],
        repo_url: "https://github.com/acme".into(),
        callback_url: "https://scaleset.example/api/v1/callbacks".into(),
        metadata_url: "https://scaleset.example/api/v1/metadata".into(),
        instance_token: SecretString::from(TOKEN),
        ssh_keys: vec!["ssh-ed25519 AAAA test".into()],
        extra_specs: pool.extra_specs.clone(),
        github_runner_group: "default".into(),
        ca_cert_bundle: None,
        arch: OsArch::Amd64,
        os_type: OsType::Linux,
        flavor: "m1.small".into(),
        image: "ubuntu:24.04".into(),
        labels: vec!["self-hosted".into(), "linux".into()],
        pool_id: pool.key.clone(),
        user_data_options: UserDataOptions::default(),
        jit_config_enabled: true,
        proxy_config: None,
    }
}

pub(crate) fn request(name: &str, pool: &Pool) -> CreateRequest {
    CreateRequest {
        bootstrap: bootstrap(name, pool),
        jit_config: Some(SecretString::from(JIT)),
        bootstrap_timeout: None,
    }
}

/// An instance JSON line for scripts to print.
pub(crate) fn instance_json(provider_id: &str, name: &str, status: &str) -> String {
    format!(
        r#"{{"provider_id":"{provider_id}","name":"{name}","os_type":"linux","os_name":"ubuntu","os_version":"24.04","os_arch":"amd64","addresses":[{{"address":"10.1.2.3","type":"private"}}],"status":"{status}","provider_fault":""}}"#
    )
}

/// The one bounded poll of the workspace's tests.
pub(crate) use scaleset_eventually::eventually_holds as eventually;
