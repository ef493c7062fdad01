//! The external provider against real executables (recorder scripts): the
//! GARM environment and nothing else, stdin, stdout parsing, exit codes,
//! timeouts that kill the process group, bounded output, spawn errors, the
//! concurrency limit and the call trace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use scaleset_provider::{
    Command, EnvAllowList, Error, ExternalProvider, InstanceId, InstanceStatus, InterfaceVersion,
    OutputProblem, Pool, PoolKey, Provider, SecretString,
};
use uuid::Uuid;

use crate::helpers::{
    CONTROLLER, Call, JIT, Recorder, TOKEN, config, env_of, eventually, instance_json, pool,
    provider, provider_in, request, write_executable,
};

/// A runner-download token, as GitHub returns for some runner packages.
const DOWNLOAD_TOKEN: &str = "temp-download-token-do-not-log";

/// The variables every call passes with the operator environment of
/// [`crate::helpers::operator_env`] and its allow-list.
const GARM_BASE: [&str; 7] = [
    "GARM_COMMAND",
    "GARM_CONTROLLER_ID",
    "GARM_INTERFACE_VERSION",
    "GARM_PROVIDER_CONFIG_FILE",
    "HTTPS_PROXY",
    "OS_AUTH_URL",
    "OS_PASSWORD",
];

/// A script that starts a grandchild, writes both pids, and sleeps.
const SLEEPS_WITH_A_GRANDCHILD: &str =
    "sleep 1000 &\necho $! > \"$DIR/grandchild.pid\"\necho $$ > \"$DIR/child.pid\"\nsleep 1000";

fn keys(call: &Call) -> BTreeSet<&str> {
    call.env.keys().map(String::as_str).collect()
}

fn set(items: &[&'static str]) -> BTreeSet<&'static str> {
    items.iter().copied().collect()
}

/// [`GARM_BASE`] and `extra`.
fn garm_keys(extra: &[&'static str]) -> BTreeSet<&'static str> {
    let mut all = set(&GARM_BASE);
    all.extend(extra.iter().copied());
    all
}

fn instance_id(text: &str) -> InstanceId {
    InstanceId::new(text).expect("instance id")
}

fn decode_specs(value: &str) -> serde_json::Value {
    let json = base64::engine::general_purpose::STANDARD
        .decode(value)
        .expect("base64");
    serde_json::from_slice(&json).expect("JSON")
}

/// A script body that prints the running instance `vm-1` / `runner-1`.
fn prints_runner_1() -> String {
    format!("echo '{}'", instance_json("vm-1", "runner-1", "running"))
}

/// The error of creating `runner-1` in [`pool`].
async fn create_err(provider: &ExternalProvider) -> Error {
    provider
        .create(&request("runner-1", &pool()))
        .await
        .expect_err("create fails")
}

/// The error of getting instance `id` in [`pool`].
async fn get_err(provider: &ExternalProvider, id: &str) -> Error {
    provider
        .get(&pool(), &instance_id(id))
        .await
        .expect_err("get fails")
}

/// The error of listing [`pool`].
async fn list_err(provider: &ExternalProvider) -> Error {
    provider.list(&pool()).await.expect_err("list fails")
}

/// The fields of an [`Error::Failed`].
#[derive(Debug)]
struct Failure {
    command: Command,
    exit_code: Option<i32>,
    stderr_tail: String,
    provider_fault: Option<String>,
}

fn failure(err: Error) -> Failure {
    match err {
        Error::Failed {
            command,
            exit_code,
            stderr_tail,
            provider_fault,
        } => Failure {
            command,
            exit_code,
            stderr_tail,
            provider_fault,
        },
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// The variant, command and trimmed stderr tail of an [`Error::NotFound`] or
/// [`Error::Duplicate`]: the answers an exit code gives.
fn answer(err: &Error) -> (&'static str, Command, &str) {
    match err {
        Error::NotFound {
            command,
            stderr_tail,
        } => ("NotFound", *command, stderr_tail.trim()),
        Error::Duplicate {
            command,
            stderr_tail,
        } => ("Duplicate", *command, stderr_tail.trim()),
        other => panic!("expected NotFound or Duplicate, got {other:?}"),
    }
}

/// The command and limit of an [`Error::Timeout`].
fn timeout(err: &Error) -> (Command, Duration) {
    match err {
        Error::Timeout { command, after } => (*command, *after),
        other => panic!("expected Timeout, got {other:?}"),
    }
}

/// The problem of an [`Error::BadOutput`].
fn bad_output(err: Error) -> (Command, OutputProblem) {
    match err {
        Error::BadOutput { command, problem } => (command, problem),
        other => panic!("expected BadOutput, got {other:?}"),
    }
}

#[tokio::test]
async fn create_v011_passes_exactly_the_garm_environment_and_bootstrap_on_stdin() {
    let rec = Recorder::new();
    let provider = rec.provider(&prints_runner_1(), InterfaceVersion::V011);
    let pool = pool();
    let request = request("runner-1", &pool);

    let created = provider.create(&request).await.expect("create");
    assert_eq!(created.provider_id, "vm-1");
    assert_eq!(created.name, "runner-1");
    assert_eq!(created.status, InstanceStatus::Running);
    assert_eq!(created.addresses[0].address, "10.1.2.3");

    let call = rec.only_call();
    // Exactly these keys: no HOME, no PATH, no disallowed variable, no
    // smuggled GARM_COMMAND from the operator's environment, and (as GARM's
    // v0.1.1 does) GARM_POOL_EXTRASPECS with the bootstrap's extra specs.
    assert_eq!(
        keys(&call),
        garm_keys(&["GARM_POOL_EXTRASPECS", "GARM_POOL_ID"])
    );
    assert_eq!(
        decode_specs(&call.env["GARM_POOL_EXTRASPECS"]),
        serde_json::json!({"flavor_override": "big"})
    );
    assert_eq!(call.env["GARM_COMMAND"], "CreateInstance");
    assert_eq!(call.env["GARM_CONTROLLER_ID"], CONTROLLER.to_string());
    assert_eq!(call.env["GARM_INTERFACE_VERSION"], "v0.1.1");
    assert_eq!(call.env["GARM_POOL_ID"], pool.key.as_str());
    assert_eq!(
        call.env["GARM_PROVIDER_CONFIG_FILE"],
        "/etc/scaleset/provider.toml"
    );
    assert_eq!(call.env["HTTPS_PROXY"], "http://proxy.internal:3128");

    let stdin: serde_json::Value = serde_json::from_slice(&call.stdin).expect("stdin is JSON");
    assert_eq!(
        stdin["extra_specs"],
        serde_json::json!({"flavor_override": "big"})
    );
    assert_eq!(stdin, serde_json::to_value(&request.bootstrap).unwrap());
    assert_eq!(stdin["name"], "runner-1");
    assert_eq!(stdin["instance-token"], TOKEN);
    assert_eq!(
        stdin["callback-url"],
        "https://scaleset.example/api/v1/callbacks"
    );
    assert_eq!(
        stdin["metadata-url"],
        "https://scaleset.example/api/v1/metadata"
    );
    assert_eq!(stdin["pool_id"], pool.key.as_str());
    assert_eq!(stdin["jit_config_enabled"], true);
    // The JIT config itself never goes to an executable.
    assert!(!String::from_utf8_lossy(&call.stdin).contains(JIT));
}

#[tokio::test]
async fn create_v011_without_extra_specs_sends_null_as_garm() {
    let rec = Recorder::new();
    let provider = rec.provider(&prints_runner_1(), InterfaceVersion::V011);
    let mut request = request("runner-1", &pool());
    request.bootstrap.extra_specs = None;
    provider.create(&request).await.expect("create");
    let call = rec.only_call();
    assert_eq!(call.env["GARM_POOL_EXTRASPECS"], "bnVsbA==");
    assert_eq!(
        decode_specs(&call.env["GARM_POOL_EXTRASPECS"]),
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn create_v010_passes_the_same_variables_as_garm() {
    let rec = Recorder::new();
    let provider = rec.provider(&prints_runner_1(), InterfaceVersion::V010);
    let pool = pool();
    provider
        .create(&request("runner-1", &pool))
        .await
        .expect("create");
    let call = rec.only_call();
    assert_eq!(keys(&call), garm_keys(&["GARM_POOL_ID"]));
    assert_eq!(call.env["GARM_INTERFACE_VERSION"], "v0.1.0");
    assert_eq!(call.env["GARM_POOL_ID"], pool.key.as_str());
}

#[tokio::test]
async fn instance_commands_follow_the_interface_version() {
    let rec = Recorder::new();
    let exe = rec.script(
        "provider",
        &format!(
            "case \"$GARM_COMMAND\" in\n\
             GetInstance) echo '{}' ;;\n\
             ListInstances) echo '[]' ;;\n\
             GetVersion) echo 'v1.2.3' ;;\n\
             esac",
            instance_json("vm-1", "runner-1", "stopped")
        ),
    );
    let pool = pool();
    let id = instance_id("vm-1");
    for version in [InterfaceVersion::V010, InterfaceVersion::V011] {
        let provider = provider(config(&exe, version));
        provider.get(&pool, &id).await.expect("get");
        provider.delete(&pool, &id).await.expect("delete");
        provider.start(&pool, &id).await.expect("start");
        provider.stop(&pool, &id).await.expect("stop");
        provider.list(&pool).await.expect("list");
        provider.remove_all().await.expect("remove all");
        assert_eq!(provider.version().await.expect("version"), "v1.2.3");
    }

    let mut seen = 0;
    for call in rec.calls() {
        let version = call.env["GARM_INTERFACE_VERSION"].clone();
        let command = call.env["GARM_COMMAND"].clone();
        let expected = match (version.as_str(), command.as_str()) {
            ("v0.1.0", "GetInstance" | "DeleteInstance" | "StartInstance" | "StopInstance") => {
                garm_keys(&["GARM_INSTANCE_ID"])
            }
            ("v0.1.1", "GetInstance" | "DeleteInstance" | "StartInstance" | "StopInstance") => {
                garm_keys(&["GARM_INSTANCE_ID", "GARM_POOL_ID", "GARM_POOL_EXTRASPECS"])
            }
            ("v0.1.0", "ListInstances") => garm_keys(&["GARM_POOL_ID"]),
            ("v0.1.1", "ListInstances") => garm_keys(&["GARM_POOL_ID", "GARM_POOL_EXTRASPECS"]),
            (_, "RemoveAllInstances" | "GetVersion") => garm_keys(&[]),
            other => panic!("unexpected call {other:?}"),
        };
        assert_eq!(keys(&call), expected, "{version} {command}");
        if let Some(id) = call.env.get("GARM_INSTANCE_ID") {
            assert_eq!(id, "vm-1");
        }
        if let Some(specs) = call.env.get("GARM_POOL_EXTRASPECS") {
            assert_eq!(
                decode_specs(specs),
                serde_json::json!({"flavor_override": "big"}),
                "{command}"
            );
        }
        assert!(call.stdin.is_empty(), "{command} got stdin");
        seen += 1;
    }
    assert_eq!(seen, 14);
}

#[tokio::test]
async fn list_parses_an_array_and_get_parses_an_instance() {
    let rec = Recorder::new();
    let provider = rec.provider(
        &format!(
            "case \"$GARM_COMMAND\" in\n\
             GetInstance) echo '{}' ;;\n\
             ListInstances) echo '[{},{}]' ;;\n\
             esac",
            instance_json("vm-1", "runner-1", "error"),
            instance_json("vm-1", "runner-1", "running"),
            instance_json("vm-2", "runner-2", "pending_create"),
        ),
        InterfaceVersion::V011,
    );
    let got = provider
        .get(&pool(), &instance_id("vm-1"))
        .await
        .expect("get");
    assert_eq!(got.status, InstanceStatus::Error);
    assert_eq!(got.os_version.as_deref(), Some("24.04"));
    let listed = provider.list(&pool()).await.expect("list");
    let names: Vec<&str> = listed.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["runner-1", "runner-2"]);
    assert_eq!(listed[1].status, InstanceStatus::PendingCreate);
}

#[tokio::test]
async fn exit_code_30_is_not_found_for_get_and_success_for_delete_keeping_stderr() {
    let rec = Recorder::new();
    let mut config = rec.config(
        "echo \"no such instance $GARM_INSTANCE_ID password=$OS_PASSWORD\" >&2; exit 30",
        InterfaceVersion::V010,
    );
    config.environment = EnvAllowList::parse(&["OS_"]).expect("allow-list");
    let env = env_of(&[("OS_PASSWORD", "openstack-password-do-not-log")]);
    let provider = provider_in(config, &env);
    let err = get_err(&provider, "gone").await;
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        answer(&err),
        (
            "NotFound",
            Command::GetInstance,
            "no such instance gone password=<redacted>"
        )
    );
    assert!(err.to_string().contains("no such instance gone"), "{err}");
    assert!(!err.to_string().contains("do-not-log"), "{err}");
    provider
        .delete(&pool(), &instance_id("gone"))
        .await
        .expect("delete of a missing instance succeeds");
}

#[tokio::test]
async fn exit_code_30_elsewhere_is_a_failure_with_its_reason() {
    // LXD exits 30 from a create whose image is missing: the operator must
    // read that, not "the instance does not exist".
    let rec = Recorder::new();
    let provider = rec.provider(
        "echo \"$GARM_COMMAND: image ubuntu:24.04 not found on remote\" >&2; exit 30",
        InterfaceVersion::V011,
    );
    let pool = pool();
    let id = instance_id("vm-1");
    let errors = vec![
        provider.create(&request("runner-1", &pool)).await.map(drop),
        provider.start(&pool, &id).await,
        provider.stop(&pool, &id).await,
        provider.list(&pool).await.map(drop),
        provider.remove_all().await,
        provider.version().await.map(drop),
    ];
    let expected = [
        Command::CreateInstance,
        Command::StartInstance,
        Command::StopInstance,
        Command::ListInstances,
        Command::RemoveAllInstances,
        Command::GetVersion,
    ];
    for (result, expected) in errors.into_iter().zip(expected) {
        let err = result.expect_err("exit code 30 fails the call");
        assert!(!err.is_not_found(), "{err:?}");
        let shown = err.to_string();
        let failed = failure(err);
        assert_eq!(failed.command, expected);
        assert_eq!(failed.exit_code, Some(30), "{expected}");
        assert_eq!(
            failed.stderr_tail.trim(),
            format!("{expected}: image ubuntu:24.04 not found on remote")
        );
        assert!(shown.contains("image ubuntu:24.04 not found"), "{shown}");
    }
}

#[tokio::test]
async fn exit_code_31_is_duplicate_for_create_only_keeping_stderr() {
    let rec = Recorder::new();
    let provider = rec.provider(
        "echo \"$GARM_COMMAND: instance runner-1 already exists\" >&2; exit 31",
        InterfaceVersion::V011,
    );
    let err = create_err(&provider).await;
    assert!(err.is_duplicate(), "{err}");
    assert!(!err.is_retryable());
    assert_eq!(
        answer(&err),
        (
            "Duplicate",
            Command::CreateInstance,
            "CreateInstance: instance runner-1 already exists"
        )
    );
    assert!(err.to_string().contains("already exists"), "{err}");

    for err in [
        list_err(&provider).await,
        get_err(&provider, "vm-1").await,
        provider
            .delete(&pool(), &instance_id("vm-1"))
            .await
            .unwrap_err(),
    ] {
        assert!(!err.is_duplicate(), "{err:?}");
        let failed = failure(err);
        assert_eq!(failed.exit_code, Some(31));
        assert!(failed.stderr_tail.contains("already exists"), "{failed:?}");
    }
}

#[tokio::test]
async fn other_exit_codes_fail_with_the_code_and_stderr_tail() {
    let rec = Recorder::new();
    let provider = rec.provider(
        "echo 'quota exceeded in project ci' >&2; exit 2",
        InterfaceVersion::V011,
    );
    let err = create_err(&provider).await;
    assert!(err.is_retryable());
    assert!(err.to_string().contains("exit code 2"), "{err}");
    let failed = failure(err);
    assert_eq!(failed.command, Command::CreateInstance);
    assert_eq!(failed.exit_code, Some(2));
    assert_eq!(failed.stderr_tail.trim(), "quota exceeded in project ci");
    assert_eq!(failed.provider_fault, None);
}

#[tokio::test]
async fn a_failing_create_reports_its_fault_and_never_echoes_the_token() {
    let rec = Recorder::new();
    // Echo the bootstrap JSON (with the instance token) to stderr, print the
    // error instance GARM asks for (fault base64-encoded, as Go prints []byte).
    let provider = rec.provider("cat \"$REC/$$.stdin\" >&2\n\
         echo '{\"name\":\"runner-1\",\"status\":\"error\",\"provider_fault\":\"aW1hZ2Ugbm90IGZvdW5k\"}'\n\
         exit 1", InterfaceVersion::V011);
    let mut request = request("runner-1", &pool());
    request.bootstrap.tools[0].temp_download_token = Some(SecretString::from(DOWNLOAD_TOKEN));
    let err = provider.create(&request).await.unwrap_err();
    let shown = err.to_string();
    let Failure {
        stderr_tail,
        provider_fault,
        ..
    } = failure(err);
    assert_eq!(provider_fault.as_deref(), Some("image not found"));
    assert!(
        stderr_tail.contains("\"instance-token\":\"<redacted>\""),
        "{stderr_tail}"
    );
    assert!(!stderr_tail.contains(TOKEN));
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(
        stderr_tail.contains("\"temp_download_token\":\"<redacted>\""),
        "{stderr_tail}"
    );
    assert!(!shown.contains(DOWNLOAD_TOKEN), "{shown}");
    assert!(shown.contains("image not found"), "{shown}");
}

#[tokio::test]
async fn a_failing_call_never_echoes_passed_through_credentials() {
    const PASSWORD: &str = "openstack-password-do-not-log";
    const AWS_SECRET: &str = "aws-secret-key-do-not-log";
    let rec = Recorder::new();
    // A provider that dumps its environment to stderr and puts a credential
    // into its fault (base64 of "auth failed for openstack-password-do-not-log").
    let mut config = rec.config(
        "echo \"password=$OS_PASSWORD secret=$AWS_SECRET_ACCESS_KEY debug=$OS_DEBUG\" >&2\n\
         echo '{\"name\":\"runner-1\",\"status\":\"error\",\"provider_fault\":\"YXV0aCBmYWlsZWQgZm9yIG9wZW5zdGFjay1wYXNzd29yZC1kby1ub3QtbG9n\"}'\n\
         exit 1",
        InterfaceVersion::V011,
    );
    config.environment =
        EnvAllowList::parse(&["OS_*", "AWS_SECRET_ACCESS_KEY"]).expect("allow-list");
    let env = env_of(&[
        ("OS_PASSWORD", PASSWORD),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        ("OS_DEBUG", "true"),
    ]);
    let provider = provider_in(config, &env);

    // Every command redacts, not only CreateInstance.
    let errors = [
        create_err(&provider).await,
        get_err(&provider, "vm-1").await,
    ];
    for err in errors {
        let shown = err.to_string();
        let Failure {
            stderr_tail,
            provider_fault,
            ..
        } = failure(err);
        assert_eq!(
            stderr_tail.trim(),
            "password=<redacted> secret=<redacted> debug=true",
            "credentials redacted, short values readable"
        );
        assert_eq!(
            provider_fault.as_deref(),
            Some("auth failed for <redacted>")
        );
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(!shown.contains(AWS_SECRET), "{shown}");
    }
}

#[tokio::test]
async fn garbage_stdout_is_bad_output() {
    let rec = Recorder::new();
    let provider = rec.provider("echo 'Creating VM... done!'", InterfaceVersion::V011);
    let (command, problem) = bad_output(create_err(&provider).await);
    assert_eq!(command, Command::CreateInstance);
    assert!(
        matches!(problem, OutputProblem::NotJson { .. }),
        "{problem:?}"
    );
}

#[tokio::test]
async fn missing_ids_and_unknown_statuses_are_bad_output() {
    let rec = Recorder::new();
    let provider = rec.provider("case \"$GARM_COMMAND\" in\n\
         GetInstance) echo '{\"name\":\"runner-1\",\"status\":\"running\"}' ;;\n\
         ListInstances) echo '[{\"provider_id\":\"vm-1\",\"status\":\"running\"}]' ;;\n\
         CreateInstance) echo '{\"provider_id\":\"vm-1\",\"name\":\"runner-1\",\"status\":\"exploded\"}' ;;\n\
         esac", InterfaceVersion::V011);
    let problem = |err: Error| bad_output(err).1;
    assert_eq!(
        problem(get_err(&provider, "vm-1").await),
        OutputProblem::MissingProviderId
    );
    assert_eq!(
        problem(list_err(&provider).await),
        OutputProblem::MissingName
    );
    assert_eq!(
        problem(create_err(&provider).await),
        OutputProblem::UnknownStatus {
            status: "exploded".into()
        }
    );
}

#[tokio::test]
async fn an_empty_version_is_bad_output() {
    let rec = Recorder::new();
    let provider = rec.provider("echo '   '", InterfaceVersion::V011);
    let err = provider.version().await.unwrap_err();
    assert_eq!(bad_output(err).1, OutputProblem::EmptyVersion);
}

#[tokio::test]
async fn huge_stderr_neither_deadlocks_nor_grows_memory_and_keeps_the_tail() {
    let rec = Recorder::new();
    // 8 MiB on stderr, far past any pipe buffer, then the interesting line.
    let provider = rec.provider_with(
        "head -c 8388608 /dev/zero | tr '\\0' 'x' >&2\n\
         echo 'the real error is at the end' >&2\nexit 1",
        InterfaceVersion::V011,
        |config| config.stderr_limit = 1024,
    );
    let stderr_tail = failure(list_err(&provider).await).stderr_tail;
    assert!(
        stderr_tail.len() <= 1024,
        "kept {} bytes",
        stderr_tail.len()
    );
    assert!(stderr_tail.ends_with("the real error is at the end\n"));
    assert!(stderr_tail.starts_with("xxxx"));
}

#[tokio::test]
async fn huge_stdout_is_bounded_and_reported() {
    let rec = Recorder::new();
    let provider = rec.provider_with(
        "head -c 8388608 /dev/zero | tr '\\0' ' '\necho '[]'",
        InterfaceVersion::V011,
        |config| config.stdout_limit = 64 * 1024,
    );
    assert_eq!(
        bad_output(list_err(&provider).await).1,
        OutputProblem::TooLarge { limit: 65536 }
    );
}

fn process_is_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A killed process whose parent is gone may linger as a zombie until
        // init reaps it; it no longer runs.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The pid an executable wrote to `name` in the recorder's directory, once
/// it has written the whole line.
fn pid_file(rec: &Recorder, name: &str) -> Option<String> {
    std::fs::read_to_string(rec.path().join(name))
        .ok()
        .filter(|pid| pid.ends_with('\n'))
}

/// Waits until each process whose pid the executable wrote (to `<name>.pid`)
/// is gone.
async fn assert_killed(rec: &Recorder, names: &[&str]) {
    for name in names {
        let pid = pid_file(rec, &format!("{name}.pid")).expect("pid");
        eventually(&format!("the {name} is killed"), || {
            process_is_gone(pid.trim())
        })
        .await;
    }
}

#[tokio::test]
async fn a_timeout_kills_the_child_and_its_grandchildren() {
    let rec = Recorder::new();
    let provider = rec.provider_with(SLEEPS_WITH_A_GRANDCHILD, InterfaceVersion::V011, |config| {
        config.timeout = Duration::from_secs(3);
    });
    let err = list_err(&provider).await;
    assert_eq!(
        timeout(&err),
        (Command::ListInstances, Duration::from_secs(3))
    );
    assert!(err.is_timeout());
    assert_killed(&rec, &["grandchild", "child"]).await;
}

#[tokio::test]
async fn a_cancelled_call_kills_the_process_group() {
    let rec = Recorder::new();
    let provider = Arc::new(rec.provider_with(
        SLEEPS_WITH_A_GRANDCHILD,
        InterfaceVersion::V011,
        |config| config.timeout = Duration::from_secs(600),
    ));
    let call = {
        let provider = Arc::clone(&provider);
        tokio::spawn(async move { provider.list(&pool()).await })
    };
    eventually("the executable started its grandchild", || {
        pid_file(&rec, "grandchild.pid").is_some() && pid_file(&rec, "child.pid").is_some()
    })
    .await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_killed(&rec, &["grandchild", "child"]).await;
}

#[tokio::test]
async fn a_background_straggler_does_not_hold_the_call_open() {
    let rec = Recorder::new();
    // The straggler keeps stdout open; the call must still end when the
    // executable exits, and the straggler must not survive it.
    let provider = rec.provider_with(
        "sleep 1000 &\necho $! > \"$DIR/straggler.pid\"\necho '[]'\nexit 0",
        InterfaceVersion::V011,
        |config| config.timeout = Duration::from_secs(60),
    );
    let listed = provider.list(&pool()).await.expect("list");
    assert!(listed.is_empty());
    assert_killed(&rec, &["straggler"]).await;
}

/// The path and cause of an [`Error::Spawn`].
fn spawn_error(err: Error) -> (std::path::PathBuf, std::io::ErrorKind) {
    match err {
        Error::Spawn { path, cause } => (path, cause.kind()),
        other => panic!("expected Spawn, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_executable_is_a_spawn_error_naming_the_path() {
    let rec = Recorder::new();
    let missing = rec.path().join("garm-provider-nowhere");
    let provider = provider(config(&missing, InterfaceVersion::V011));
    let err = list_err(&provider).await;
    assert!(err.to_string().contains("garm-provider-nowhere"));
    assert_eq!(spawn_error(err), (missing, std::io::ErrorKind::NotFound));
}

#[tokio::test]
async fn a_non_executable_file_is_a_spawn_error() {
    let rec = Recorder::new();
    let path = rec.path().join("not-executable");
    std::fs::write(&path, "#!/bin/bash\necho '[]'\n").unwrap();
    let provider = provider(config(&path, InterfaceVersion::V011));
    assert_eq!(
        spawn_error(list_err(&provider).await),
        (path, std::io::ErrorKind::PermissionDenied)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_limit_holds() {
    let rec = Recorder::new();
    let gate = rec.path().join("gate");
    std::fs::create_dir(&gate).unwrap();
    // Each invocation registers itself, records how many are running, and
    // waits for the test's "go" before finishing.
    let provider = Arc::new(rec.provider_with(
        "touch \"$DIR/gate/running.$$\"\n\
         ls \"$DIR/gate\" | grep -c '^running\\.' >> \"$DIR/counts\"\n\
         while [ ! -e \"$DIR/go\" ]; do sleep 0.01; done\n\
         rm \"$DIR/gate/running.$$\"\necho '[]'",
        InterfaceVersion::V011,
        |config| config.concurrency = std::num::NonZeroUsize::new(2).unwrap(),
    ));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let provider = Arc::clone(&provider);
        calls.spawn(async move { provider.list(&pool()).await });
    }
    let running = || {
        std::fs::read_dir(&gate)
            .map(|d| d.filter_map(Result::ok).count())
            .unwrap_or(0)
    };
    eventually("two calls are running", || running() >= 2).await;
    std::fs::write(rec.path().join("go"), "").unwrap();
    while let Some(result) = calls.join_next().await {
        result.expect("task").expect("list");
    }
    let counts: Vec<usize> = std::fs::read_to_string(rec.path().join("counts"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 6);
    assert_eq!(counts.iter().max(), Some(&2), "{counts:?}");
}

#[tokio::test]
async fn a_busy_executable_is_retried_not_failed() {
    // Writing a script while another thread forks can leave it briefly
    // "text file busy"; simulate by holding it open for writing, release soon.
    let rec = Recorder::new();
    let path = rec.path().join("busy");
    write_executable(&path, "#!/bin/bash\necho '[]'\n");
    let holder = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let provider = provider(config(&path, InterfaceVersion::V011));
    let release = async {
        tokio::task::yield_now().await;
        drop(holder);
    };
    let pool = pool();
    let (listed, ()) = tokio::join!(provider.list(&pool), release);
    assert!(listed.expect("list after retry").is_empty());
}

#[tokio::test]
async fn each_call_is_traced_with_command_duration_and_exit_code_but_no_secrets() {
    let rec = Recorder::new();
    let provider = rec.provider(&prints_runner_1(), InterfaceVersion::V011);
    let (captured, guard) = scaleset_trace_capture::capture();
    provider
        .create(&request("runner-1", &pool()))
        .await
        .expect("create");
    drop(guard);
    let log = captured.text();
    assert!(log.contains("provider.exec"), "{log}");
    assert!(log.contains("CreateInstance"), "{log}");
    assert!(log.contains("runner-1"), "{log}");
    assert!(log.contains("duration_ms="), "{log}");
    assert!(log.contains("exit_code=0"), "{log}");
    assert!(!log.contains(TOKEN), "the instance token leaked: {log}");
    assert!(!log.contains(JIT), "the JIT config leaked: {log}");
    assert!(
        !log.contains("hunter2"),
        "a passed-through secret leaked: {log}"
    );
}

#[tokio::test]
async fn debug_of_the_provider_shows_no_passed_through_values() {
    let rec = Recorder::new();
    let provider = rec.provider("true", InterfaceVersion::V011);
    let shown = format!("{provider:?}");
    assert!(shown.contains("OS_PASSWORD"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}

/// An operator environment behind a proxy, with variables GARM-style
/// prefixes select.
fn proxied_env() -> BTreeMap<String, String> {
    env_of(&[
        ("http_proxy", "http://proxy.internal:3128"),
        ("https_proxy", "http://proxy.internal:3128"),
        ("no_proxy", "localhost,.internal"),
        ("HTTP_PROXY", "http://proxy.internal:3128"),
        ("HTTPS_PROXY", "http://proxy.internal:3128"),
        ("NO_PROXY", "localhost,.internal"),
        ("ALL_PROXY", "socks5://proxy.internal:1080"),
        ("OS_AUTH_URL", "https://keystone.internal:5000/v3"),
        ("OS_CLOUD", "ci"),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_REGION_EXTRA", "x"),
        ("HOME", "/root"),
    ])
}

fn passed_through(call: &Call) -> BTreeSet<&str> {
    keys(call)
        .into_iter()
        .filter(|k| !k.starts_with("GARM_"))
        .collect()
}

/// Lists [`pool`] once through a provider named `name` whose executable
/// prints an empty list, started from [`proxied_env`], with `adjust` applied
/// to its settings.
async fn list_behind_a_proxy(
    rec: &Recorder,
    name: &str,
    adjust: impl FnOnce(&mut scaleset_provider::ExternalConfig),
) {
    let mut config = rec.config("echo '[]'", InterfaceVersion::V010);
    adjust(&mut config);
    ExternalProvider::new(name, config, CONTROLLER, &proxied_env())
        .list(&pool())
        .await
        .expect("list");
}

#[tokio::test]
async fn proxy_variables_reach_the_executable_by_default_as_in_garm() {
    let rec = Recorder::new();
    list_behind_a_proxy(&rec, "test", |config| {
        config.environment = EnvAllowList::default();
    })
    .await;
    let call = rec.only_call();
    assert_eq!(
        passed_through(&call),
        set(&[
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy"
        ]),
        "the six proxy variables and nothing else (no ALL_PROXY, no HOME)"
    );
    assert_eq!(call.env["https_proxy"], "http://proxy.internal:3128");
    assert_eq!(call.env["NO_PROXY"], "localhost,.internal");
}

#[tokio::test]
async fn proxy_forwarding_can_be_turned_off() {
    let rec = Recorder::new();
    list_behind_a_proxy(&rec, "test", |config| {
        config.environment = EnvAllowList::parse(&["OS_"]).expect("allow-list");
        config.forward_proxy_variables = false;
    })
    .await;
    assert_eq!(
        passed_through(&rec.only_call()),
        set(&["OS_AUTH_URL", "OS_CLOUD"])
    );
}

#[tokio::test]
async fn environment_entries_are_garm_prefixes_unless_they_end_in_equals() {
    let rec = Recorder::new();
    // As copied from a GARM block: `OS_` and a full name are both prefixes;
    // `NAME=` asks for that one variable.
    for (name, entries) in [
        ("garm-style", &["OS_", "AWS_REGION"][..]),
        ("exact", &["AWS_REGION="][..]),
    ] {
        list_behind_a_proxy(&rec, name, |config| {
            config.forward_proxy_variables = false;
            config.environment = EnvAllowList::parse(entries).expect("allow-list");
        })
        .await;
    }
    let calls = rec.calls();
    let mut seen: Vec<BTreeSet<&str>> = calls.iter().map(passed_through).collect();
    seen.sort();
    let mut expected = vec![
        set(&["AWS_REGION", "AWS_REGION_EXTRA", "OS_AUTH_URL", "OS_CLOUD"]),
        set(&["AWS_REGION"]),
    ];
    expected.sort();
    assert_eq!(seen, expected);
}

/// A script body that never finishes.
const NEVER_FINISHES: &str = "exec sleep 1000";

#[tokio::test(start_paused = true)]
async fn create_is_bounded_by_the_scale_sets_bootstrap_timeout() {
    // Paused time: the executable never finishes, the runtime's clock jumps
    // to the limit, and the error says which limit was applied.
    let rec = Recorder::new();
    let mut request = request("runner-1", &pool());
    request.bootstrap_timeout = Some(Duration::from_secs(7 * 60));
    let provider = rec.provider(NEVER_FINISHES, InterfaceVersion::V010);
    let err = provider.create(&request).await.unwrap_err();
    assert_eq!(
        timeout(&err),
        (Command::CreateInstance, Duration::from_secs(7 * 60))
    );
    assert!(err.to_string().contains("bootstrap timeout"), "{err}");

    // Without a bootstrap timeout in the request: GARM's default, 20 minutes.
    request.bootstrap_timeout = None;
    let err = provider.create(&request).await.unwrap_err();
    assert_eq!(timeout(&err).1, Duration::from_secs(20 * 60));
}

#[tokio::test(start_paused = true)]
async fn create_timeout_overrides_and_other_calls_use_timeout() {
    let rec = Recorder::new();
    let provider = rec.provider_with(NEVER_FINISHES, InterfaceVersion::V010, |config| {
        config.create_timeout = Some(Duration::from_secs(45 * 60));
        config.timeout = Duration::from_secs(90);
    });
    let mut request = request("runner-1", &pool());
    request.bootstrap_timeout = Some(Duration::from_secs(60));
    let err = provider.create(&request).await.unwrap_err();
    assert_eq!(
        timeout(&err),
        (Command::CreateInstance, Duration::from_secs(45 * 60))
    );
    let err = list_err(&provider).await;
    assert_eq!(
        timeout(&err),
        (Command::ListInstances, Duration::from_secs(90))
    );
    assert!(err.to_string().contains("raise `timeout`"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn other_calls_default_to_a_generous_limit() {
    let rec = Recorder::new();
    let exe = rec.script("provider", NEVER_FINISHES);
    let config = scaleset_provider::ExternalConfig::new(&exe, "/etc/scaleset/provider.toml");
    let provider = provider(config);
    let err = provider
        .delete(&pool(), &instance_id("vm-1"))
        .await
        .unwrap_err();
    assert_eq!(
        timeout(&err),
        (Command::DeleteInstance, Duration::from_secs(20 * 60))
    );
}

/// Kills the detached helpers a test's executables started: they left the
/// process group on purpose, so nothing else will.
fn kill_helpers(rec: &Recorder) {
    let pids = std::fs::read_to_string(rec.path().join("helpers.pid")).unwrap_or_default();
    for pid in pids.lines().filter_map(|line| line.trim().parse().ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Lists [`pool`] through the executable `name`, which starts a helper in its
/// own session (so it outlives the process group, holding stdout and stderr)
/// and then runs `rest`; the helper is killed after the call.
async fn list_beside_a_detached_helper(
    rec: &Recorder,
    name: &str,
    rest: &str,
) -> Result<Vec<scaleset_provider::ProviderInstance>, Error> {
    let exe = rec.script(
        name,
        &format!("setsid sleep 600 &\necho $! >> \"$DIR/helpers.pid\"\n{rest}"),
    );
    let mut config = config(&exe, InterfaceVersion::V010);
    config.timeout = Duration::from_secs(120);
    let listed = provider(config).list(&pool()).await;
    kill_helpers(rec);
    listed
}

#[tokio::test]
async fn a_helper_in_its_own_session_holding_stdout_does_not_hold_the_call() {
    // The helper escapes the process group (setsid), so it is not killed when
    // the executable exits, and keeps stdout and stderr open. The call still
    // ends with what the executable printed, long before the timeout.
    let rec = Recorder::new();
    let listed = list_beside_a_detached_helper(
        &rec,
        "provider",
        "echo 'about to list' >&2\necho '[]'\nexit 0",
    )
    .await;
    assert!(
        listed
            .expect("list ends at the executable's exit")
            .is_empty()
    );

    // A failing call keeps the stderr the executable wrote before exiting.
    let listed =
        list_beside_a_detached_helper(&rec, "failing", "echo 'quota exceeded' >&2\nexit 2").await;
    let failed = failure(listed.unwrap_err());
    assert_eq!(failed.exit_code, Some(2));
    assert_eq!(failed.stderr_tail.trim(), "quota exceeded");
}

#[tokio::test]
async fn a_provider_that_rejects_get_version_still_serves_every_other_call() {
    // Older garm-provider-k8s releases reject GetVersion. Nothing but an
    // explicit `version()` runs it, so the provider works regardless.
    let rec = Recorder::new();
    let provider = rec.provider(
        &format!(
            "case \"$GARM_COMMAND\" in\n\
             GetVersion) echo 'unknown command GetVersion' >&2; exit 1 ;;\n\
             CreateInstance|GetInstance) echo '{}' ;;\n\
             ListInstances) echo '[]' ;;\n\
             esac",
            instance_json("vm-1", "runner-1", "running")
        ),
        InterfaceVersion::V010,
    );
    let pool = pool();
    let created = provider
        .create(&request("runner-1", &pool))
        .await
        .expect("create");
    provider.get(&pool, &created.id()).await.expect("get");
    provider.list(&pool).await.expect("list");
    provider.stop(&pool, &created.id()).await.expect("stop");
    provider.start(&pool, &created.id()).await.expect("start");
    provider.delete(&pool, &created.id()).await.expect("delete");
    provider.remove_all().await.expect("remove all");
    let commands: Vec<String> = rec
        .calls()
        .iter()
        .map(|c| c.env["GARM_COMMAND"].clone())
        .collect();
    assert!(
        !commands.iter().any(|c| c == "GetVersion"),
        "no call ran GetVersion: {commands:?}"
    );
    assert_eq!(commands.len(), 7);
    // Asked explicitly, it fails as an ordinary failure, with the reason.
    let failed = failure(provider.version().await.unwrap_err());
    assert_eq!(failed.command, Command::GetVersion);
    assert!(failed.stderr_tail.contains("unknown command"), "{failed:?}");
}

/// Issue 37: a pool taken over from GARM is listed, and its instances deleted, under GARM's
/// pool id and with GARM's controller id (as GARM itself called the provider); our own pools
/// keep ours, and a create is always ours.
#[tokio::test]
async fn a_garm_pool_is_listed_and_deleted_with_garms_controller_id() {
    let garm = Uuid::parse_str("89a4130b-9de1-47c5-8ca8-e2640daa0e13").expect("uuid");
    let rec = Recorder::new();
    let exe = rec.script(
        "provider",
        "case \"$GARM_COMMAND\" in\n ListInstances) echo '[]' ;;\n esac",
    );
    let taken_over =
        Pool::new(PoolKey::parse("linux-small-df2a9b56-d0d9-4e79-ad71-44d114828592").expect("key"))
            .of_controller(garm);
    for version in [InterfaceVersion::V010, InterfaceVersion::V011] {
        let provider = provider(config(&exe, version));
        provider.list(&taken_over).await.expect("list");
        provider
            .delete(&taken_over, &instance_id("gpu-g4wrcxxlxiik"))
            .await
            .expect("delete");
        provider.list(&pool()).await.expect("list ours");
    }
    let calls = rec.calls();
    assert_eq!(calls.len(), 6);
    for (n, call) in calls.iter().enumerate() {
        let expected = if n % 3 == 2 { CONTROLLER } else { garm };
        assert_eq!(
            call.env["GARM_CONTROLLER_ID"],
            expected.to_string(),
            "call {n}: {}",
            call.env["GARM_COMMAND"]
        );
    }
    assert_eq!(
        calls[0].env["GARM_POOL_ID"],
        "linux-small-df2a9b56-d0d9-4e79-ad71-44d114828592"
    );
}
