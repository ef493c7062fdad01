//! The instance-facing endpoints (GARM's metadata and callback URLs): per-instance tokens,
//! JIT files served only to their instance, GARM's routes and payloads (trailing slashes,
//! `curl -d` bodies), and the bootstrap closing the token.

use std::time::Duration;

use base64::Engine as _;
use scaleset_store::ExposeSecret as _;
use scaleset_store::{
    Acquisition, Auth, CredentialStore as _, Endpoint, EntityKind, EntityStore as _,
    EventStore as _, InstanceAccessStore as _, InstanceStore as _, LeaseStore as _, NewCredentials,
    NewEntity, NewInstance, NewScaleSet, ScaleSetStore as _, SecretString,
};
use serde_json::json;

use crate::helpers::{Answer, App, Backend, backend_tests};

backend_tests!(
    one_instances_token_cannot_read_another_instances_jit_config,
    jit_files_are_served_as_garm_serves_them,
    metadata_answers_for_the_instances_scale_set,
    callbacks_take_garms_payloads_and_close_the_bootstrap,
    a_failed_bootstrap_is_put_on_the_scale_sets_trail,
    tokens_are_checked_before_anything_is_read,
    deleting_an_instance_records_the_request_for_its_worker,
);

const CERT_A: &str = "-----BEGIN CERTIFICATE-----\nQUFB\n-----END CERTIFICATE-----";
const CERT_B: &str = "-----BEGIN CERTIFICATE-----\nQkJC\n-----END CERTIFICATE-----";

/// GitHub's encoding of a JIT config: base64 of `{".runner": b64, ...}`.
fn jit(runner: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let files = json!({
        ".runner": b64.encode(runner),
        ".credentials": b64.encode(format!("credentials of {runner}")),
        ".credentials_rsaparams": b64.encode("{}"),
    });
    b64.encode(files.to_string())
}

/// A scale set of organization `acme` (credentials with a two-certificate CA bundle) whose
/// instances `names` were granted tokens valid for `valid_for`; returns the tokens.
async fn instances(app: &App, names: &[&str], valid_for: Duration) -> Vec<String> {
    let store = &app.store;
    let credentials = store
        .create_credentials(NewCredentials {
            name: "ghes".to_owned(),
            endpoint: Endpoint {
                base_url: "https://ghes.example.com".to_owned(),
                api_base_url: "https://ghes.example.com/api/v3".to_owned(),
                ca_bundle: Some(format!("{CERT_A}\n{CERT_B}\n")),
                system_trust: false,
            },
            auth: Auth::Pat {
                token: SecretString::from("ghp_x"),
            },
        })
        .await
        .unwrap();
    let entity = store
        .create_entity(NewEntity {
            kind: EntityKind::Organization {
                name: "acme".to_owned(),
            },
            credentials_id: credentials.id,
        })
        .await
        .unwrap();
    let mut spec = scaleset_store::test_util::spec_with("linux", |raw| {
        raw.labels = vec!["linux".to_owned()];
        raw.disable_update = Some(false);
        raw.image = Some("ubuntu-24.04".to_owned());
        raw.max_runners = Some(1);
        raw.bootstrap_timeout = Some(TTL);
        raw.runner_prefix = Some("linux".to_owned());
    });
    spec.set_runner_group_id(Some(1));
    let scale_set = store
        .create_scale_set(NewScaleSet {
            entity_id: entity.id,
            spec,
        })
        .await
        .unwrap();
    let Acquisition::Acquired(lease) = store
        .acquire_lease(scale_set.id, "test-worker", Duration::from_secs(60))
        .await
        .unwrap()
    else {
        panic!("lease not acquired");
    };
    let mut tokens = Vec::new();
    for name in names {
        store
            .create_instance(&lease, NewInstance::pending(*name, "pool", None))
            .await
            .unwrap();
        let token = store
            .grant_instance_access(&lease, name, &SecretString::from(jit(name)), valid_for)
            .await
            .unwrap();
        tokens.push(token.expose_secret().to_owned());
    }
    tokens
}

const TTL: Duration = Duration::from_secs(600);

async fn get(app: &App, path: &str, token: &str) -> Answer {
    app.raw(
        "GET",
        path,
        Some(&format!("Bearer {token}")),
        None,
        "application/json",
    )
    .await
}

/// Posts as GARM's scripts do: `curl -d '<json>'`, so labelled as a form.
async fn post(app: &App, path: &str, token: &str, body: &str) -> Answer {
    app.raw(
        "POST",
        path,
        Some(&format!("Bearer {token}")),
        Some(body.as_bytes().to_vec()),
        "application/x-www-form-urlencoded",
    )
    .await
}

async fn one_instances_token_cannot_read_another_instances_jit_config(backend: Backend) {
    let app = App::start(backend, "one_instances_token_cannot_read").await;
    let tokens = instances(&app, &["runner-a", "runner-b"], TTL).await;
    for (name, token) in ["runner-a", "runner-b"].iter().zip(&tokens) {
        let answer = get(&app, "/api/v1/metadata/credentials/runner", token).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        // Each token opens exactly its own instance's file: there is no way to name another.
        assert_eq!(answer.text, *name);
        let credentials = get(&app, "/api/v1/metadata/credentials/credentials", token).await;
        assert_eq!(credentials.text, format!("credentials of {name}"));
    }
    // An API token is not an instance token, and an instance token is not an API token.
    let answer = get(&app, "/api/v1/metadata/credentials/runner", &app.token).await;
    let message = answer.error(401, "invalid_token");
    assert!(message.contains("API token"), "{message}");
    let answer = get(&app, "/api/v1/instances/runner-b", &tokens[0]).await;
    answer.error(401, "invalid_token");
}

async fn jit_files_are_served_as_garm_serves_them(backend: Backend) {
    let app = App::start(backend, "jit_files_are_served_as_garm").await;
    let tokens = instances(&app, &["runner-a"], TTL).await;
    let token = &tokens[0];
    let response = reqwest_like_head(&app, "/api/v1/metadata/credentials/runner/", token).await;
    assert!(response.contains("200 OK"), "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/octet-stream"),
        "{response}"
    );
    assert!(
        lower.contains("content-disposition: attachment; filename=.runner"),
        "{response}"
    );
    let rsa = get(
        &app,
        "/api/v1/metadata/credentials/credentials_rsaparams",
        token,
    )
    .await;
    assert_eq!((rsa.status, rsa.text.as_str()), (200, "{}"));
    get(&app, "/api/v1/metadata/credentials/nothing", token)
        .await
        .error(404, "not_found");
    get(&app, "/api/v1/metadata/credentials/.runner", token)
        .await
        .error(400, "invalid_parameter");
}

/// The head of a GET answer as raw text (status line and headers), over its own connection.
async fn reqwest_like_head(app: &App, path: &str, token: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
         connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

async fn metadata_answers_for_the_instances_scale_set(backend: Backend) {
    let app = App::start(backend, "metadata_answers_for_the_instances").await;
    let tokens = instances(&app, &["runner-a"], TTL).await;
    let token = &tokens[0];

    let bundle = get(&app, "/api/v1/metadata/system/cert-bundle/", token).await;
    assert_eq!(bundle.status, 200, "{bundle:?}");
    let b64 = base64::engine::general_purpose::STANDARD;
    let certs = bundle.json["root_certificates"].as_object().unwrap();
    assert_eq!(certs.len(), 2, "{bundle:?}");
    let decoded: Vec<String> = certs
        .values()
        .map(|v| String::from_utf8(b64.decode(v.as_str().unwrap()).unwrap()).unwrap())
        .collect();
    assert_eq!(decoded, [format!("{CERT_A}\n"), format!("{CERT_B}\n")]);

    let service = get(&app, "/api/v1/metadata/system/service-name", token).await;
    assert_eq!(
        (service.status, service.text.as_str()),
        (200, "actions.runner.acme.runner-a")
    );
    let unit = get(
        &app,
        "/api/v1/metadata/systemd/unit-file/?runAsUser=ci",
        token,
    )
    .await;
    assert_eq!(unit.status, 200, "{unit:?}");
    assert!(unit.text.contains("User=ci\n"), "{}", unit.text);
    assert!(
        unit.text.contains("(actions.runner.acme.runner-a)"),
        "{}",
        unit.text
    );
    let default_user = get(&app, "/api/v1/metadata/systemd/unit-file", token).await;
    assert!(
        default_user.text.contains("User=runner\n"),
        "{default_user:?}"
    );
    get(
        &app,
        "/api/v1/metadata/systemd/unit-file?runAsUser=x%0AExecStartPre%3D%2Fbin%2Fsh",
        token,
    )
    .await
    .error(400, "invalid_parameter");

    let registration = get(&app, "/api/v1/metadata/runner-registration-token/", token).await;
    let message = registration.error(409, "jit_configured");
    assert!(message.contains("credentials/runner"), "{message}");
}

async fn callbacks_take_garms_payloads_and_close_the_bootstrap(backend: Backend) {
    let app = App::start(backend, "callbacks_take_garms_payloads").await;
    let tokens = instances(&app, &["runner-a"], TTL).await;
    let token = &tokens[0];

    let installing = post(
        &app,
        "/api/v1/callbacks/status",
        token,
        r#"{"status": "installing", "message": "Configuring runner"}"#,
    )
    .await;
    assert_eq!(installing.status, 200, "{installing:?}");
    assert_eq!(installing.json["status"], "installing");
    let info = post(
        &app,
        "/api/v1/callbacks/system-info/",
        token,
        r#"{"os_name": "Ubuntu", "os_version": "24.04", "agent_id": 5, "extra": true}"#,
    )
    .await;
    assert_eq!(info.status, 200, "{info:?}");
    post(
        &app,
        "/api/v1/callbacks/status/",
        token,
        r#"{"status": "active"}"#,
    )
    .await
    .error(400, "invalid_input");
    post(&app, "/api/v1/callbacks/status/", token, "status=idle")
        .await
        .error(400, "invalid_body");

    // Still bootstrapping: the JIT files are open.
    let file = get(&app, "/api/v1/metadata/credentials/runner", token).await;
    assert_eq!(file.status, 200, "{file:?}");

    let idle = post(
        &app,
        "/api/v1/callbacks/status/",
        token,
        r#"{"status": "idle", "message": "runner started", "agent_id": 5}"#,
    )
    .await;
    assert_eq!(idle.status, 200, "{idle:?}");

    let shown = app.call("GET", "/api/v1/instances/runner-a", None).await;
    assert_eq!(shown.status, 200, "{shown:?}");
    let bootstrap = &shown.json["bootstrap"];
    assert_eq!(bootstrap["status"], "idle");
    assert_eq!(bootstrap["message"], "runner started");
    assert_eq!(bootstrap["agent_id"], 5);
    assert_eq!(
        (
            bootstrap["os_name"].as_str(),
            bootstrap["os_version"].as_str()
        ),
        (Some("Ubuntu"), Some("24.04"))
    );

    // Bootstrap is over: the token opens nothing more, the JIT files least of all.
    for answer in [
        get(&app, "/api/v1/metadata/credentials/runner", token).await,
        post(
            &app,
            "/api/v1/callbacks/status",
            token,
            r#"{"status": "failed"}"#,
        )
        .await,
    ] {
        let message = answer.error(403, "bootstrap_finished");
        assert!(message.contains("runner-a"), "{message}");
    }
}

async fn a_failed_bootstrap_is_put_on_the_scale_sets_trail(backend: Backend) {
    let app = App::start(backend, "a_failed_bootstrap_is_put_on_the_trail").await;
    let tokens = instances(&app, &["runner-a"], TTL).await;
    let failed = post(
        &app,
        "/api/v1/callbacks/status",
        &tokens[0],
        r#"{"status": "failed", "message": "no space left on device"}"#,
    )
    .await;
    assert_eq!(failed.status, 200, "{failed:?}");
    let instance = app.store.get_instance("runner-a").await.unwrap();
    let events = app
        .store
        .list_events(instance.scale_set_id, 10)
        .await
        .unwrap();
    assert!(
        events.iter().any(
            |e| e.code == scaleset_store::ReasonCode::InstanceBootstrapFailed
                && e.reason.contains("runner-a")
                && e.reason.contains("no space left on device")
        ),
        "{events:?}"
    );
}

async fn tokens_are_checked_before_anything_is_read(backend: Backend) {
    let app = App::start(backend, "instance_tokens_are_checked").await;
    // A token that expired (granted for no time at all) opens nothing.
    let tokens = instances(&app, &["runner-a"], Duration::ZERO).await;
    let expired = get(&app, "/api/v1/metadata/credentials/runner", &tokens[0]).await;
    assert!(
        expired.error(401, "invalid_token").contains("expired"),
        "{expired:?}"
    );
    assert!(expired.www_authenticate.is_some(), "{expired:?}");

    let missing = app
        .raw(
            "GET",
            "/api/v1/metadata/system/service-name",
            None,
            None,
            "application/json",
        )
        .await;
    assert!(
        missing
            .error(401, "missing_token")
            .contains("instance-token")
    );
    let forged = get(
        &app,
        "/api/v1/metadata/system/service-name",
        "ssi_forgedforgedforgedforgedforgedforgedforg",
    )
    .await;
    forged.error(401, "invalid_token");
    // A body over the limit is refused before it is read, even with a bad token.
    let huge = post(
        &app,
        "/api/v1/callbacks/status",
        &tokens[0],
        &"x".repeat(128 * 1024),
    )
    .await;
    assert!(matches!(huge.status, 401 | 413), "{huge:?}");
    let before = app.store.get_instance_access("runner-a").await.unwrap();
    assert_eq!(
        before.map(|a| a.bootstrap_status),
        Some(scaleset_store::BootstrapStatus::Pending),
        "nothing was written"
    );
}

async fn deleting_an_instance_records_the_request_for_its_worker(backend: Backend) {
    let app = App::start(backend, "deleting_an_instance_records").await;
    instances(&app, &["runner-a"], TTL).await;
    let answer = app.call("DELETE", "/api/v1/instances/runner-a", None).await;
    assert_eq!(answer.status, 202, "{answer:?}");
    assert_eq!(answer.json["name"], "runner-a");
    let requested = answer.json["removal_requested_at"]
        .as_str()
        .expect("requested");
    let stored = app.store.get_instance("runner-a").await.unwrap();
    assert!(stored.removal_requested_at.is_some(), "{stored:?}");
    // The row stays until the worker has retired the runner.
    let shown = app.call("GET", "/api/v1/instances/runner-a", None).await;
    assert_eq!(shown.json["removal_requested_at"], requested);
}
