//! Scale-set create, adoption, refusal, drain and ownership-aware delete against the
//! simulator. The API only records a create and answers at once; the tests then run the
//! worker's ensure step ([`App::converge`]), so these are the adoption rules seen through HTTP.

use std::time::Duration;

use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, Label, NewRunnerScaleSet};
use scaleset_store::{
    InstanceStore as _, LeaseStore as _, NewInstance, ReasonCode, RunnerDownloadStore as _,
    ScaleSetId,
};
use serde_json::{Value, json};

use crate::helpers::{Answer, App, Backend, CONTROLLER, RunningSim, backend_tests};

fn create_body(entity: &str, name: &str) -> Value {
    json!({"entity_id": entity, "name": name, "provider": "fake", "max_runners": 3, "labels": ["gpu"]})
}

/// `POST /api/v1/scale-sets` of [`create_body`] on `app`: the record, pending.
async fn post(app: &App, entity: &str, name: &str) -> Answer {
    let answer = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(create_body(entity, name)),
        )
        .await;
    assert_eq!(answer.status, 201, "{answer:?}");
    assert_eq!(answer.json["state"], "pending", "{answer:?}");
    answer
}

/// [`post`], then the worker's ensure step: the scale set as shown after it, and the refusal
/// code if adoption refused it.
async fn create_refused(app: &App, entity: &str, name: &str) -> (Answer, Option<String>) {
    let posted = post(app, entity, name).await;
    app.converge(posted.json["id"].as_str().expect("an id"))
        .await
}

/// [`create_refused`] without the refusal.
async fn create(app: &App, entity: &str, name: &str) -> Answer {
    create_refused(app, entity, name).await.0
}

fn event_kinds(set: &Value) -> Vec<&str> {
    set["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("a kind"))
        .collect()
}

/// A TCP listener that accepts connections and never answers on them: a GitHub endpoint that
/// hangs.
async fn silent_endpoint() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (base, task)
}

/// Issue 29 item 7: `POST /scale-sets` used to run the ensure (and its retries) inside the
/// request; with GitHub hanging the request never ended and the record stayed pending and
/// disabled for ever. It is now stored as asked and answered at once; the worker ensures it.
async fn a_create_answers_at_once_while_github_hangs(backend: Backend) {
    let (hanging, _accepting) = silent_endpoint().await;
    let app = App::start(backend, "a_create_answers_at_once_while_github_hangs").await;
    let credentials = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(json!({
                "name": "hang", "auth": {"kind": "pat", "token": "ghp_hang"},
                "endpoint": {"base_url": hanging, "api_base_url": format!("{hanging}/api/v3")},
            })),
        )
        .await;
    assert_eq!(credentials.status, 201, "{credentials:?}");
    let entity = app
        .call(
            "POST",
            "/api/v1/entities",
            Some(json!({"kind": "organization", "name": "acme", "credentials": "hang"})),
        )
        .await;
    assert_eq!(entity.status, 201, "{entity:?}");
    let entity = entity.json["id"].as_str().unwrap().to_owned();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        app.call(
            "POST",
            "/api/v1/scale-sets",
            Some(create_body(&entity, "hang3")),
        ),
    )
    .await
    .expect("the create answers without waiting for GitHub");
    assert_eq!(answer.status, 201, "{answer:?}");
    let set = &answer.json;
    assert_eq!(set["state"], "pending", "{set}");
    assert_eq!(set["spec"]["enabled"], true, "stored as asked: {set}");
    assert!(
        set["state_reason"].as_str().unwrap().contains("worker"),
        "the reason says who converges it: {set}"
    );
    assert!(event_kinds(set).contains(&"created"), "{set}");
    // Visible as such in the list, and deletable (never on GitHub: only removed).
    let listed = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(listed.json["items"][0]["state"], "pending");
    let id = set["id"].as_str().unwrap();
    let deleted = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    assert_eq!(deleted.json["action"], "detached");
}

/// A scale set created disabled is stored so, and its reason says how to have it ensured.
async fn a_disabled_create_says_how_to_enable_it(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "a_disabled_create_says_how_to_enable_it").await;
    let entity = app.seed(&sim).await;
    let mut body = create_body(&entity, "off");
    body["enabled"] = json!(false);
    let answer = app.call("POST", "/api/v1/scale-sets", Some(body)).await;
    assert_eq!(answer.status, 201, "{answer:?}");
    assert_eq!(answer.json["state"], "pending", "{answer:?}");
    assert_eq!(answer.json["spec"]["enabled"], false, "{answer:?}");
    let reason = answer.json["state_reason"].as_str().unwrap();
    assert!(
        reason.contains("scalesetctl scale-set update off --enabled true"),
        "{reason}"
    );
    assert!(github_ids_named(&sim, "off").is_empty(), "GitHub not asked");
}

fn github_ids_named(sim: &RunningSim, name: &str) -> Vec<i64> {
    sim.sim
        .state()
        .scale_sets_named(name)
        .map(|s| s.id)
        .collect()
}

async fn a_fresh_create_is_created_on_github(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "a_fresh_create_is_created_on_github").await;
    let entity = app.seed(&sim).await;
    let posted = post(&app, &entity, "linux").await;
    assert!(
        github_ids_named(&sim, "linux").is_empty(),
        "the API only records: {posted:?}"
    );
    let (answer, _) = app.converge(posted.json["id"].as_str().unwrap()).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let set = &answer.json;
    assert_eq!(set["state"], "ready", "{set}");
    assert_eq!(set["provenance"], "created", "{set}");
    assert!(set.get("refusal").is_none());
    assert_eq!(set["spec"]["enabled"], true, "enabled once ensured: {set}");
    let github_id = set["github_id"].as_i64().expect("github id");
    assert_eq!(github_ids_named(&sim, "linux"), vec![github_id]);
    let on_github = sim.sim.state().scale_set(github_id).cloned().unwrap();
    let owner = format!("scaleset-owner-{}", CONTROLLER.simple());
    assert!(on_github.labels.contains(&owner), "{:?}", on_github.labels);
    assert!(
        on_github.labels.contains(&"gpu".to_owned()),
        "{:?}",
        on_github.labels
    );
    let kinds: Vec<&str> = set["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"create_intent") && kinds.contains(&"ready"),
        "{kinds:?}"
    );
    assert!(set["generation"].as_i64().unwrap() > 1);
    // No session is left open on GitHub by the API (nobody listens there).
    assert!(on_github.session.is_none(), "{on_github:?}");
    // The lease the API took is released for the worker.
    let id = ScaleSetId(set["id"].as_str().unwrap().parse().unwrap());
    let lease = app.store.get_lease(id).await.unwrap().expect("a lease row");
    assert!(
        lease.expires_at.unix_millis()
            <= scaleset_store::Timestamp::from_system_time(std::time::SystemTime::now())
                .unix_millis()
    );

    // show and list agree.
    let shown = app
        .call(
            "GET",
            &format!("/api/v1/scale-sets/{}", set["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(shown.status, 200);
    assert_eq!(shown.json["github_id"], github_id);
    assert_eq!(shown.json["state_reason"], set["state_reason"]);
    let listed = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(listed.json["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed.json["items"][0]["state"], "ready");
    let filtered = app
        .call(
            "GET",
            &format!("/api/v1/scale-sets?entity_id={}", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    assert_eq!(filtered.json["items"], json!([]));
}

async fn after_a_database_wipe_the_owner_label_adopts(backend: Backend) {
    let sim = RunningSim::start().await;
    let first = App::start(backend, "after_a_database_wipe_the_owner_label_adopts").await;
    let entity = first.seed(&sim).await;
    let created = create(&first, &entity, "linux").await;
    assert_eq!(created.json["provenance"], "created", "{created:?}");
    let github_id = created.json["github_id"].as_i64().unwrap();
    drop(first);

    // The same controller on an empty database.
    let wiped = App::start(backend, "after_a_database_wipe_the_owner_label_adopts").await;
    let entity = wiped.seed(&sim).await;
    let adopted = create(&wiped, &entity, "linux").await;
    assert_eq!(adopted.status, 200, "{adopted:?}");
    assert_eq!(adopted.json["state"], "ready", "{adopted:?}");
    assert_eq!(adopted.json["provenance"], "adopted", "{adopted:?}");
    assert_eq!(
        adopted.json["github_id"], github_id,
        "the same GitHub scale set"
    );
    let evidence = adopted.json["evidence"].to_string();
    assert!(
        evidence.to_lowercase().contains("owner"),
        "evidence names the owner label: {evidence}"
    );
    assert_eq!(
        github_ids_named(&sim, "linux"),
        vec![github_id],
        "no duplicate on GitHub"
    );

    // Deleting an adopted set detaches it: GitHub keeps it.
    let id = adopted.json["id"].as_str().unwrap();
    let deleted = wiped
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    assert_eq!(deleted.json["action"], "detached");
    assert_eq!(
        github_ids_named(&sim, "linux"),
        vec![github_id],
        "an adopted set is never deleted on GitHub"
    );
    let gone = wiped
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    gone.error(404, "not_found");
}

async fn a_foreign_owned_set_is_refused_with_its_remedy(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "a_foreign_owned_set_is_refused_with_its_remedy").await;
    let entity = app.seed(&sim).await;
    // Another controller's scale set of the same name, carrying its owner label.
    let other = uuid::Uuid::from_u128(0xdead_beef_0000_4000_8000_0000_0000_0001);
    let config = ClientConfig::new(
        ConfigUrl::parse(&format!("{}/acme", sim.base())).unwrap(),
        Credentials::pat("ghp_simulator"),
    )
    .with_api_base(url::Url::parse(&format!("{}/api/v3", sim.base())).unwrap());
    let client = Client::new(config).unwrap();
    let foreign = client
        .create_scale_set(
            &NewRunnerScaleSet::new("linux".to_owned(), 1.into()).with_labels(vec![
                Label::system("linux"),
                Label::system(format!("scaleset-owner-{}", other.simple())),
            ]),
        )
        .await
        .unwrap();

    let (answer, refusal) = create_refused(&app, &entity, "linux").await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json["state"], "refused", "{answer:?}");
    assert!(answer.json.get("github_id").is_none(), "{answer:?}");
    assert!(answer.json.get("provenance").is_none(), "{answer:?}");
    assert!(
        refusal.as_deref().is_some_and(|c| c.contains("Foreign")),
        "{refusal:?}"
    );
    let reason = answer.json["state_reason"].as_str().unwrap();
    assert!(
        reason.contains("what to do"),
        "the stored reason carries the remedy: {reason}"
    );
    // Show carries the same reason later.
    let id = answer.json["id"].as_str().unwrap();
    let shown = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(shown.json["state"], "refused");
    assert_eq!(shown.json["state_reason"], reason);

    // Deleting the refused record (even with force) never touches the foreign set.
    let deleted = app
        .call(
            "DELETE",
            &format!("/api/v1/scale-sets/{id}?force=true"),
            None,
        )
        .await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    assert_eq!(deleted.json["action"], "detached");
    assert_eq!(github_ids_named(&sim, "linux"), vec![i64::from(foreign.id)]);
}

/// Issue 29 item 6: the delete used to say "PATCH max_runners and min_idle to 0", which the
/// API refuses (1–10000). Drain is an operation: it stops the serving (no new runners), the
/// worker retires idle runners and lets busy ones finish, and the delete works once drained.
/// Every refusal names the `scalesetctl` command to run.
async fn a_served_set_is_drained_then_deleted_on_github(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "a_served_set_is_drained_then_deleted_on_github").await;
    let entity = app.seed(&sim).await;
    let created = create(&app, &entity, "linux").await;
    let id = created.json["id"].as_str().unwrap().to_owned();
    let github_id = created.json["github_id"].as_i64().unwrap();
    let sid = ScaleSetId(id.parse().unwrap());

    // A worker serving it holds the lease: refused, nothing changes.
    let scaleset_store::Acquisition::Acquired(lease) = app
        .store
        .acquire_lease(sid, "worker-1", Duration::from_secs(60))
        .await
        .unwrap()
    else {
        panic!("the lease is free")
    };
    let before = app.written().await;
    let answer = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    let message = answer.error(409, "lease_held");
    assert!(
        message.contains("worker-1") && message.contains("scalesetctl scale-set drain linux"),
        "{message}"
    );
    assert!(!message.contains("PATCH"), "{message}");
    // An instance left: not drained.
    app.store
        .create_instance(
            &lease,
            NewInstance::pending("linux-aaaaaaaa", format!("{CONTROLLER}_{github_id}"), None),
        )
        .await
        .unwrap();
    let before_instance = app.written().await;
    assert_ne!(before, before_instance);
    let answer = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    let message = answer.error(409, "not_drained");
    assert!(
        message.contains("1 instance") && message.contains("scalesetctl scale-set drain linux"),
        "{message}"
    );
    assert!(!message.contains("PATCH"), "{message}");
    assert_eq!(app.written().await, before_instance);
    assert_eq!(github_ids_named(&sim, "linux"), vec![github_id]);
    // The instance shows through the API.
    let instances = app
        .call("GET", &format!("/api/v1/scale-sets/{id}/instances"), None)
        .await;
    assert_eq!(instances.json["items"][0]["name"], "linux-aaaaaaaa");
    assert_eq!(instances.json["items"][0]["status"], "pending");
    let one = app
        .call("GET", "/api/v1/instances/linux-aaaaaaaa", None)
        .await;
    assert_eq!(one.json["pool_key"], format!("{CONTROLLER}_{github_id}"));
    let all = app.call("GET", "/api/v1/instances", None).await;
    assert_eq!(all.json["items"].as_array().unwrap().len(), 1);

    // Drain: serving stops (disabled), one event, and the answer says what is left.
    let drain = format!("/api/v1/scale-sets/{id}/drain");
    let draining = app.call("POST", &drain, None).await;
    assert_eq!(draining.status, 200, "{draining:?}");
    assert_eq!(draining.json["scale_set"]["spec"]["enabled"], false);
    assert_eq!(draining.json["instances"], 1, "{draining:?}");
    assert_eq!(draining.json["drained"], false, "{draining:?}");
    let kinds = event_kinds(&draining.json["scale_set"]);
    assert_eq!(kinds.first(), Some(&"drain"), "{kinds:?}");
    // Asked again: the same answer, no second event.
    let again = app.call("POST", &drain, None).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(
        event_kinds(&again.json["scale_set"]),
        kinds,
        "no event repeats"
    );
    assert_eq!(
        again.json["scale_set"]["generation"],
        draining.json["scale_set"]["generation"]
    );

    // The worker drains it (its instance gone) and lets it go: drained, then deleted on
    // GitHub and removed.
    app.store
        .delete_instance(&lease, "linux-aaaaaaaa")
        .await
        .unwrap();
    app.store.release_lease(&lease).await.unwrap();
    let drained = app.call("POST", &drain, None).await;
    assert_eq!(drained.json["instances"], 0, "{drained:?}");
    assert_eq!(drained.json["drained"], true, "{drained:?}");
    let answer = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json["action"], "deleted_on_github");
    assert_eq!(answer.json["github_id"], github_id);
    assert!(
        github_ids_named(&sim, "linux").is_empty(),
        "a created set is deleted on GitHub"
    );
    app.call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await
        .error(404, "not_found");
    app.call(
        "POST",
        &format!("/api/v1/scale-sets/{}/drain", uuid::Uuid::new_v4()),
        None,
    )
    .await
    .error(404, "not_found");
}

async fn force_deletes_an_adopted_set_on_github(backend: Backend) {
    let sim = RunningSim::start().await;
    let first = App::start(backend, "force_deletes_an_adopted_set_on_github").await;
    let entity = first.seed(&sim).await;
    create(&first, &entity, "linux").await;
    drop(first);
    let app = App::start(backend, "force_deletes_an_adopted_set_on_github").await;
    let entity = app.seed(&sim).await;
    let adopted = create(&app, &entity, "linux").await;
    assert_eq!(adopted.json["provenance"], "adopted", "{adopted:?}");
    let id = adopted.json["id"].as_str().unwrap();
    let generation = adopted.json["generation"].as_i64().unwrap();
    let answer = app
        .call(
            "DELETE",
            &format!("/api/v1/scale-sets/{id}?force=true&generation={generation}"),
            None,
        )
        .await;
    assert_eq!(answer.json["action"], "deleted_on_github", "{answer:?}");
    assert!(github_ids_named(&sim, "linux").is_empty());
    // The API's own GitHub calls are counted by the client's observer, as the worker's are.
    let metrics = app.raw("GET", "/metrics", None, None, "").await;
    assert!(
        metrics
            .text
            .contains("scaleset_github_calls_total{endpoint=\"delete_scale_set\",class=\"ok\"} 1"),
        "the API's delete is counted:\n{}",
        metrics.text
    );
}

/// The worker's ensure, as it runs after the API's create: the same control step over the same
/// store, under a worker's lease name.
async fn workers_ensure(app: &App, id: ScaleSetId) {
    let store: std::sync::Arc<dyn scaleset_store::Store> = app.store.clone();
    let ensure = scaleset_control::EnsureOnce::new(
        store.clone(),
        std::sync::Arc::new(crate::helpers::fast_clients(store)),
        scaleset_control::ControllerIdentity::new(CONTROLLER),
        crate::helpers::settings(),
        std::sync::Arc::new(scaleset_control::Metrics::new(
            &mut prometheus_client::registry::Registry::default(),
        )),
    );
    let result = ensure
        .run(id, "worker-1")
        .await
        .expect("the worker's ensure");
    assert!(
        matches!(result, scaleset_control::EnsureResult::Ready { .. }),
        "{result:?}"
    );
}

/// Issue 29 item 3: a scale set this controller created stays `created` after the worker's
/// ensure (which sees it by its stored id), and its delete deletes it on GitHub without
/// `force`; one adopted after a database loss is detached, and the answer says why.
async fn a_created_set_stays_created_after_the_workers_ensure_and_is_deleted_on_github(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let name = "created_stays_created";
    let app = App::start(backend, name).await;
    let entity = app.seed(&sim).await;
    let created = create(&app, &entity, "linux").await;
    assert_eq!(created.json["provenance"], "created", "{created:?}");
    let id = created.json["id"].as_str().unwrap().to_owned();
    let github_id = created.json["github_id"].as_i64().unwrap();
    let sid = ScaleSetId(id.parse().unwrap());

    workers_ensure(&app, sid).await;
    workers_ensure(&app, sid).await;
    let shown = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(shown.json["state"], "ready", "{shown:?}");
    assert_eq!(shown.json["provenance"], "created", "{shown:?}");
    let reason = shown.json["state_reason"].as_str().unwrap();
    assert!(reason.contains("created"), "{reason}");

    let answer = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json["action"], "deleted_on_github", "{answer:?}");
    assert_eq!(answer.json["provenance"], "created", "{answer:?}");
    assert_eq!(answer.json["github_id"], github_id, "{answer:?}");
    assert!(
        github_ids_named(&sim, "linux").is_empty(),
        "deleted on GitHub without force"
    );

    // A database loss: the next create finds our owner label and adopts; deleting that one
    // detaches it and says why.
    create(&app, &entity, "gpu").await;
    let gpu_id = github_ids_named(&sim, "gpu");
    drop(app);
    let wiped = App::start(backend, name).await;
    let entity = wiped.seed(&sim).await;
    let adopted = create(&wiped, &entity, "gpu").await;
    assert_eq!(adopted.json["provenance"], "adopted", "{adopted:?}");
    let id = adopted.json["id"].as_str().unwrap();
    workers_ensure(&wiped, ScaleSetId(id.parse().unwrap())).await;
    let answer = wiped
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json["action"], "detached", "{answer:?}");
    assert_eq!(answer.json["provenance"], "adopted", "{answer:?}");
    let why = answer.json["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("adopted") && why.contains("owner label") && why.contains("database"),
        "the answer says it was adopted by its owner label, as after a database loss: {answer:?}"
    );
    assert_eq!(github_ids_named(&sim, "gpu"), gpu_id, "GitHub keeps it");
}

/// Issue 30 item 5: the machine's refusal is stored typed and every read serves it, not only
/// the create's answer.
async fn a_refused_set_shows_its_typed_refusal_on_every_read(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "refusal_on_every_read").await;
    let entity = app.seed(&sim).await;
    let other = uuid::Uuid::from_u128(0xdead_beef_0000_4000_8000_0000_0000_0002);
    let config = ClientConfig::new(
        ConfigUrl::parse(&format!("{}/acme", sim.base())).unwrap(),
        Credentials::pat("ghp_simulator"),
    )
    .with_api_base(url::Url::parse(&format!("{}/api/v3", sim.base())).unwrap());
    let foreign = Client::new(config)
        .unwrap()
        .create_scale_set(
            &NewRunnerScaleSet::new("linux".to_owned(), 1.into()).with_labels(vec![
                Label::system("linux"),
                Label::system(format!("scaleset-owner-{}", other.simple())),
            ]),
        )
        .await
        .unwrap();
    let answer = create(&app, &entity, "linux").await;
    assert_eq!(answer.json["state"], "refused", "{answer:?}");
    let id = answer.json["id"].as_str().unwrap();
    let shown = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    let refusal = &shown.json["refusal"];
    assert_eq!(refusal["code"], "ForeignOwner", "{shown:?}");
    assert_eq!(refusal, &answer.json["refusal"], "the same refusal");
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.contains(&foreign.id.to_string())),
        "{refusal}"
    );
    let listed = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(listed.json["items"][0]["refusal"]["code"], "ForeignOwner");
}

async fn updates_need_the_current_generation(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "updates_need_the_current_generation").await;
    let entity = app.seed(&sim).await;
    let created = create(&app, &entity, "linux").await;
    let id = created.json["id"].as_str().unwrap();
    let generation = created.json["generation"].as_i64().unwrap();
    let path = format!("/api/v1/scale-sets/{id}");
    let updated = app
        .call(
            "PATCH",
            &path,
            Some(json!({"generation": generation, "max_runners": 7, "labels": ["gpu", "big"]})),
        )
        .await;
    assert_eq!(updated.status, 200, "{updated:?}");
    assert_eq!(updated.json["spec"]["max_runners"], 7);
    assert_eq!(updated.json["spec"]["labels"], json!(["gpu", "big"]));
    assert_eq!(updated.json["generation"], generation + 1);
    assert_eq!(updated.json["events"][0]["kind"], "updated");
    // The old generation is now stale: refused, nothing written.
    let before = app.written().await;
    let stale = app
        .call(
            "PATCH",
            &path,
            Some(json!({"generation": generation, "max_runners": 1})),
        )
        .await;
    let message = stale.error(409, "stale_generation");
    assert!(
        message.contains(&format!("generation {}", generation + 1)),
        "{message}"
    );
    assert_eq!(app.written().await, before);
}

backend_tests!(
    a_fresh_create_is_created_on_github,
    after_a_database_wipe_the_owner_label_adopts,
    a_foreign_owned_set_is_refused_with_its_remedy,
    a_served_set_is_drained_then_deleted_on_github,
    a_create_answers_at_once_while_github_hangs,
    a_disabled_create_says_how_to_enable_it,
    force_deletes_an_adopted_set_on_github,
    updates_need_the_current_generation,
    the_runners_platform_is_stored_shown_and_changed,
    the_download_a_new_runner_gets_is_shown_and_a_platform_without_one_is_warned_about,
    the_runners_proxy_keys_and_boot_options_are_stored_shown_changed_and_cleared,
    a_repeated_event_shows_its_count_and_last_seen_time,
    a_created_set_stays_created_after_the_workers_ensure_and_is_deleted_on_github,
    a_refused_set_shows_its_typed_refusal_on_every_read,
    markup_in_stored_text_is_escaped_on_the_status_page,
    a_retry_is_recorded_for_the_worker_and_refused_for_a_disabled_or_unknown_set,
);

/// "Retry now" travels through the store to the worker holding the lease: the API records it
/// (202, with an event, each request later than the last), answers 404 for an unknown scale
/// set and refuses a disabled (drained) one with 409 `disabled`, saying to enable it first.
async fn a_retry_is_recorded_for_the_worker_and_refused_for_a_disabled_or_unknown_set(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(
        backend,
        "a_retry_is_recorded_for_the_worker_and_refused_for_a_disabled_or_unknown_set",
    )
    .await;
    let entity = app.seed(&sim).await;
    let posted = post(&app, &entity, "linux").await;
    let id = posted.json["id"].as_str().expect("an id").to_owned();
    let path = format!("/api/v1/scale-sets/{id}/retry");

    let first = app.call("POST", &path, None).await;
    assert_eq!(first.status, 202, "{first:?}");
    assert_eq!(first.json["served_by"], Value::Null, "no worker runs here");
    assert!(event_kinds(&first.json["scale_set"]).contains(&"retry_requested"));
    let second = app.call("POST", &path, None).await;
    assert_eq!(second.status, 202, "{second:?}");
    let row = scaleset_store::ScaleSetStore::get_scale_set(
        app.store.as_ref(),
        ScaleSetId(id.parse().expect("a uuid")),
    )
    .await
    .expect("the row");
    let (first_at, second_at) = (
        first.json["requested_at"].as_str().expect("a time"),
        second.json["requested_at"].as_str().expect("a time"),
    );
    // Each request is a new time, which the worker acts on (the store's order is pinned by
    // each_retry_request_is_later_than_the_last_and_an_unknown_set_is_not_found).
    assert_ne!(second_at, first_at, "a second request is a new time");
    assert!(row.retry_requested_at.is_some(), "recorded for the worker");

    let unknown = app
        .call(
            "POST",
            &format!("/api/v1/scale-sets/{}/retry", ScaleSetId::generate()),
            None,
        )
        .await;
    unknown.error(404, "not_found");

    let drained = app
        .call("POST", &format!("/api/v1/scale-sets/{id}/drain"), None)
        .await;
    assert_eq!(drained.status, 200, "{drained:?}");
    let before = app.written().await;
    let refused = app.call("POST", &path, None).await;
    let message = refused.error(409, "disabled");
    assert!(
        message.contains("enable it first")
            && message.contains("scalesetctl scale-set update linux --enabled true"),
        "{message}"
    );
    assert_eq!(
        app.written().await,
        before,
        "a refused retry writes nothing"
    );
}

/// An event that repeats (a refusal found again at every recheck) is one entry: the API answers
/// its count and when it was last seen, and the status page shows both (issue 29 item 14).
async fn a_repeated_event_shows_its_count_and_last_seen_time(backend: Backend) {
    use scaleset_store::EventStore as _;
    let sim = RunningSim::start().await;
    let app = App::start(backend, "a_repeated_event_shows_its_count").await;
    let entity = app.seed(&sim).await;
    // `create` stores it and runs the worker's ensure once: the answer is the record shown.
    let answer = create(&app, &entity, "linux").await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let id = answer.json["id"].as_str().unwrap().to_owned();
    let scale_set = ScaleSetId(id.parse().unwrap());
    for _ in 0..3 {
        app.store
            .append_event(
                scale_set,
                ReasonCode::UnknownRunnerGroup,
                "no runner group \"gpu\"",
            )
            .await
            .unwrap();
    }
    let shown = app
        .call("GET", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    assert_eq!(shown.status, 200, "{shown:?}");
    let newest = &shown.json["events"][0];
    assert_eq!(newest["kind"], "config_error", "{newest}");
    assert_eq!(newest["code"], "unknown_runner_group", "{newest}");
    assert_eq!(newest["count"], 3, "{newest}");
    // RFC 3339 texts with their trailing fraction zeros trimmed (`.08Z` is later than
    // `.081Z` as text): compared with the fraction padded to nanoseconds.
    let sortable = |t: &str| {
        let t = t.trim_end_matches('Z');
        match t.split_once('.') {
            Some((seconds, fraction)) => format!("{seconds}.{fraction:0<9}"),
            None => format!("{t}.000000000"),
        }
    };
    assert!(
        newest["last_at"]
            .as_str()
            .is_some_and(|t| sortable(t) >= sortable(newest["at"].as_str().unwrap())),
        "{newest}"
    );
    assert_eq!(shown.json["events"][1]["count"], 1, "{}", shown.json);
    let page = app.call("GET", &format!("/scale-sets/{id}"), None).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.text.contains("last seen"), "{}", page.text);
    assert!(
        page.text.contains(r#"<td class="num count">3</td>"#),
        "{}",
        page.text
    );
}

/// A label, state reason or event stored with markup in it comes out of the status page as
/// text, never as markup (issue 30 item 7: the page is written with `maud`, which escapes every
/// value; the store does not judge that text). A name cannot hold markup: it is a
/// `ScaleSetName`.
async fn markup_in_stored_text_is_escaped_on_the_status_page(backend: Backend) {
    use scaleset_store::{EventStore as _, ScaleSetStore as _};
    let sim = RunningSim::start().await;
    let app = App::start(backend, "markup_is_escaped").await;
    let entity = app.seed(&sim).await;
    let answer = create(&app, &entity, "linux").await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let id = answer.json["id"].as_str().unwrap().to_owned();
    let scale_set = ScaleSetId(id.parse().unwrap());
    let markup = r#"<script>alert("x")</script>"#;
    let mut stored = app.store.get_scale_set(scale_set).await.unwrap();
    stored
        .spec
        .change(|r| r.labels = vec![format!("gpu{markup}")])
        .unwrap();
    stored.state_reason = format!("because{markup}");
    app.store.update_scale_set(&stored).await.unwrap();
    app.store
        .append_event(
            scale_set,
            ReasonCode::UnknownRunnerGroup,
            &format!("reason{markup}"),
        )
        .await
        .unwrap();
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";
    for path in ["/".to_owned(), format!("/scale-sets/{id}")] {
        let page = app.call("GET", &path, None).await;
        assert_eq!(page.status, 200, "{path}: {page:?}");
        assert!(
            !page.text.contains("<script>alert"),
            "{path}: {}",
            page.text
        );
        // The overview shows an event's code in words; its text is the detail page's.
        let texts: &[&str] = if path == "/" {
            &["gpu", "because"]
        } else {
            &["gpu", "because", "reason"]
        };
        for text in texts {
            assert!(
                page.text.contains(&format!("{text}{escaped}")),
                "{path} shows {text} escaped: {}",
                page.text
            );
        }
    }
}

/// `os_type` and `os_arch` (GARM's spellings) default to linux/amd64, are stored as written,
/// shown on every read and changed by an update.
async fn the_runners_platform_is_stored_shown_and_changed(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "the_runners_platform_is_stored_shown_and_changed").await;
    let entity = app.seed(&sim).await;
    let plain = post(&app, &entity, "linux").await;
    assert_eq!(plain.json["spec"]["os_type"], "linux");
    assert_eq!(plain.json["spec"]["os_arch"], "amd64");
    let mut body = create_body(&entity, "arm");
    body["os_type"] = json!("windows");
    body["os_arch"] = json!("arm64");
    let arm = app.call("POST", "/api/v1/scale-sets", Some(body)).await;
    assert_eq!(arm.status, 201, "{arm:?}");
    let id = arm.json["id"].as_str().unwrap();
    let path = format!("/api/v1/scale-sets/{id}");
    let read = app.call("GET", &path, None).await;
    assert_eq!(read.json["spec"]["os_type"], "windows");
    assert_eq!(read.json["spec"]["os_arch"], "arm64");
    let updated = app
        .call(
            "PATCH",
            &path,
            Some(json!({"generation": read.json["generation"], "os_type": "linux", "os_arch": "386"})),
        )
        .await;
    assert_eq!(updated.status, 200, "{updated:?}");
    assert_eq!(updated.json["spec"]["os_type"], "linux");
    assert_eq!(updated.json["spec"]["os_arch"], "386");
}

fn tool(os: &str, architecture: &str) -> scaleset_store::ToolDownload {
    scaleset_store::ToolDownload {
        os: os.to_owned(),
        architecture: architecture.to_owned(),
        filename: format!("actions-runner-{os}-{architecture}-2.330.0.tar.gz"),
        download_url: format!("https://example.test/actions-runner-{os}-{architecture}.tar.gz"),
        sha256_checksum: Some("cd".repeat(32)),
    }
}

fn warnings(set: &Value) -> Vec<&str> {
    set["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w.as_str().expect("a warning"))
        .collect()
}

/// The scale-set view says which of the entity's runner downloads (as a worker recorded them)
/// a new runner gets, by garm-provider-common's rule (GARM's `amd64` is GitHub's `x64`), and
/// warns, without refusing the create or update, when none serves the set's OS/architecture
/// (listing the ones GitHub offers), when no list was read yet, and when the last read failed.
async fn the_download_a_new_runner_gets_is_shown_and_a_platform_without_one_is_warned_about(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "the_download_a_new_runner_gets").await;
    let entity = app.seed(&sim).await;
    let entity_id = scaleset_store::EntityId(entity.parse().expect("a uuid"));
    let created = post(&app, &entity, "linux").await;
    assert_eq!(created.json["runner_tool"], Value::Null, "{created:?}");
    let said = warnings(&created.json);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("not been read yet (not an error)"),
        "{}",
        said[0]
    );
    assert!(said[0].contains("organization acme"), "{}", said[0]);

    // What a worker records when it reads the list.
    app.store
        .record_runner_downloads(
            entity_id,
            &[
                tool("osx", "x64"),
                tool("linux", "arm64"),
                tool("linux", "x64"),
                tool("win", "x64"),
            ],
        )
        .await
        .expect("record");
    let id = created.json["id"].as_str().unwrap();
    let path = format!("/api/v1/scale-sets/{id}");
    let shown = app.call("GET", &path, None).await;
    assert_eq!(shown.status, 200, "{shown:?}");
    assert_eq!(warnings(&shown.json), Vec::<&str>::new());
    let runner_tool = &shown.json["runner_tool"];
    assert_eq!(runner_tool["os"], "linux");
    assert_eq!(runner_tool["architecture"], "x64");
    assert_eq!(
        runner_tool["filename"],
        "actions-runner-linux-x64-2.330.0.tar.gz"
    );
    assert_eq!(
        runner_tool["download_url"],
        "https://example.test/actions-runner-linux-x64.tar.gz"
    );
    assert_eq!(runner_tool["sha256_checksum"], "cd".repeat(32));

    // An update to a platform GitHub has no download for succeeds, with the warning.
    let updated = app
        .call(
            "PATCH",
            &path,
            Some(json!({"generation": shown.json["generation"], "os_arch": "arm"})),
        )
        .await;
    assert_eq!(updated.status, 200, "{updated:?}");
    assert_eq!(updated.json["spec"]["os_arch"], "arm");
    assert_eq!(updated.json["runner_tool"], Value::Null);
    let said = warnings(&updated.json);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("have none for linux/arm"), "{}", said[0]);
    assert!(
        said[0].contains("failed to find tools for OS linux and arch arm"),
        "{}",
        said[0]
    );
    assert!(
        said[0].contains("GitHub offers: linux/amd64, linux/arm64, windows/amd64, osx/amd64"),
        "{}",
        said[0]
    );
    assert!(
        said[0].contains("scalesetctl scale-set update linux --os-type OS --os-arch ARCH"),
        "{}",
        said[0]
    );

    // A create of such a platform succeeds too, with the warning.
    let mut body = create_body(&entity, "mac-arm");
    body["os_type"] = json!("osx");
    body["os_arch"] = json!("arm64");
    let mac = app.call("POST", "/api/v1/scale-sets", Some(body)).await;
    assert_eq!(mac.status, 201, "{mac:?}");
    assert!(
        warnings(&mac.json)[0].contains("have none for osx/arm64"),
        "{mac:?}"
    );

    // A failed later read keeps the list in use, and says so.
    app.store
        .record_runner_downloads_failure(entity_id, "GitHub answered 403 Forbidden")
        .await
        .expect("record");
    let windows = app
        .call(
            "PATCH",
            &path,
            Some(json!({"generation": updated.json["generation"], "os_type": "windows", "os_arch": "amd64"})),
        )
        .await;
    assert_eq!(windows.status, 200, "{windows:?}");
    assert_eq!(
        windows.json["runner_tool"]["filename"],
        "actions-runner-win-x64-2.330.0.tar.gz"
    );
    let said = warnings(&windows.json);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("failed at") && said[0].contains("GitHub answered 403 Forbidden"),
        "{}",
        said[0]
    );
    assert!(said[0].contains("stays in use"), "{}", said[0]);
}

/// The runners' proxy (GARM's `proxy_config`), SSH keys and user-data options: none by
/// default, stored as given, shown on every read, changed and cleared by an update (`""` and
/// `[]`), and a newline in a proxy (it would break the cloud-config it is written into) is
/// refused naming the field.
async fn the_runners_proxy_keys_and_boot_options_are_stored_shown_changed_and_cleared(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "the_runners_setup").await;
    let entity = app.seed(&sim).await;
    let plain = post(&app, &entity, "plain").await;
    assert_eq!(plain.json["spec"]["ssh_keys"], json!([]));
    assert!(plain.json["spec"].get("https_proxy").is_none());
    let mut body = create_body(&entity, "proxied");
    body["https_proxy"] = json!("http://proxy.internal:3128");
    body["no_proxy"] = json!(".internal");
    body["ssh_keys"] = json!(["ssh-ed25519 AAAA ops"]);
    body["extra_packages"] = json!(["jq"]);
    body["enable_boot_debug"] = json!(true);
    let made = app.call("POST", "/api/v1/scale-sets", Some(body)).await;
    assert_eq!(made.status, 201, "{made:?}");
    let id = made.json["id"].as_str().unwrap();
    let path = format!("/api/v1/scale-sets/{id}");
    let read = app.call("GET", &path, None).await;
    let spec = &read.json["spec"];
    assert_eq!(spec["https_proxy"], "http://proxy.internal:3128");
    assert_eq!(spec["no_proxy"], ".internal");
    assert_eq!(spec["ssh_keys"], json!(["ssh-ed25519 AAAA ops"]));
    assert_eq!(spec["extra_packages"], json!(["jq"]));
    assert_eq!(spec["enable_boot_debug"], true);
    assert_eq!(spec["disable_updates_on_boot"], false);
    let updated = app
        .call(
            "PATCH",
            &path,
            Some(
                json!({"generation": read.json["generation"], "https_proxy": "", "ssh_keys": [],
                "http_proxy": "http://other:8080", "disable_updates_on_boot": true}),
            ),
        )
        .await;
    assert_eq!(updated.status, 200, "{updated:?}");
    let spec = &updated.json["spec"];
    assert!(spec.get("https_proxy").is_none(), "cleared: {spec}");
    assert_eq!(spec["http_proxy"], "http://other:8080");
    assert_eq!(spec["ssh_keys"], json!([]));
    assert_eq!(spec["extra_packages"], json!(["jq"]), "unchanged");
    assert_eq!(spec["disable_updates_on_boot"], true);
    let mut bad = create_body(&entity, "bad");
    bad["http_proxy"] = json!("http://p:3128\nruncmd: [reboot]");
    let refused = app.call("POST", "/api/v1/scale-sets", Some(bad)).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert!(
        refused.json.to_string().contains("http_proxy"),
        "names the field: {refused:?}"
    );
}
