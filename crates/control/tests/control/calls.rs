//! GitHub calls per scale set (issue 18, measurement 1), counted from the simulator's request
//! log while the real controller runs: a create, a restart that knows the set, an adoption
//! after the database is lost, a session start, one job from its message to the runner's
//! instance, and the REST token chain per worker start. The counts are deterministic, so they
//! are asserted here; `docs/benchmarks.md` publishes the same table. Run with `--nocapture` to
//! see every endpoint counted.

use std::collections::BTreeMap;

use scaleset_sim::{AssignmentMode, JobSpec};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    calls_per_scale_set_auto_assign,
    calls_per_scale_set_acquire,
    github_call_metrics_count_each_call_once_under_the_clients_endpoint_name
);

/// The scale-set endpoints of the Actions service (what the issue's "Actions-service calls per
/// scale set" counts for create, known and adopted).
const SCALE_SET_ENDPOINTS: [&str; 5] = [
    "get_scale_set",
    "list_scale_sets",
    "create_scale_set",
    "update_scale_set",
    "delete_scale_set",
];
/// The REST token chain: registration token, then the Actions admin token.
const TOKEN_CHAIN: [&str; 3] = [
    "installation_token",
    "registration_token",
    "runner_registration",
];
const SESSION_ENDPOINTS: [&str; 3] = ["create_session", "delete_session", "refresh_session"];
/// Everything a job costs between its message and its runner's instance.
const JOB_ENDPOINTS: [&str; 6] = [
    "acquirable_jobs",
    "list_agents",
    "acquire_jobs",
    "generate_jit_config",
    "get_agent",
    "delete_agent",
];

/// Waits for the reconciliation that follows every ensure (one `list_agents`), so its call
/// lands in the window of the start that made it.
async fn reconciled(h: &Harness) {
    eventually("the start's reconciliation ran", || async {
        (h.sim().request_count("list_agents") >= 1).then_some(())
    })
    .await;
}

/// The requests the simulator answered since the last clear (printed, then cleared).
fn counted(h: &Harness, label: &str) -> BTreeMap<String, u64> {
    let counts = h.sim().request_counts();
    eprintln!("{label}: {counts:?}");
    h.sim().clear_requests();
    counts
}

fn sum(counts: &BTreeMap<String, u64>, endpoints: &[&str]) -> u64 {
    endpoints
        .iter()
        .map(|e| counts.get(*e).copied().unwrap_or(0))
        .sum()
}

async fn calls_per_scale_set_auto_assign(db: TestDb) {
    calls_per_scale_set(db, AssignmentMode::AutoAssign).await;
}

async fn calls_per_scale_set_acquire(db: TestDb) {
    calls_per_scale_set(db, AssignmentMode::AvailableThenAcquire).await;
}

async fn calls_per_scale_set(db: TestDb, mode: AssignmentMode) {
    let mut config = sim_config();
    config.assignment = mode;
    // Queue tokens that outlive the test: no refresh is counted.
    let mut h = Harness::new(db, config, |_| {}).await;
    h.boot.store(false, std::sync::atomic::Ordering::SeqCst);
    h.sim().clear_requests();

    // 1. Create: the runner group, the lookup by name and the create; then the session.
    let (controller, github_id) = h.start_ready().await;
    reconciled(&h).await;
    controller.stop().await;
    let create = counted(&h, "create (first worker start)");
    assert_eq!(sum(&create, &SCALE_SET_ENDPOINTS), 2, "create: {create:?}");
    assert_eq!(create.get("create_scale_set"), Some(&1));
    assert_eq!(create.get("list_runner_groups"), Some(&1), "{create:?}");
    assert_eq!(sum(&create, &TOKEN_CHAIN), 2, "token chain: {create:?}");
    assert_eq!(
        create.get("list_agents"),
        Some(&1),
        "one reconciliation: {create:?}"
    );
    // The clean stop deleted the session it opened.
    assert_eq!(create.get("create_session"), Some(&1));
    assert_eq!(create.get("delete_session"), Some(&1));

    // 2. Known: a restart with the stored id reads it once; the runner group id is cached.
    let (controller, _) = h.start_ready().await;
    reconciled(&h).await;
    controller.stop().await;
    let known = counted(&h, "known (restart)");
    assert_eq!(sum(&known, &SCALE_SET_ENDPOINTS), 1, "known: {known:?}");
    assert_eq!(known.get("get_scale_set"), Some(&1));
    assert_eq!(known.get("list_runner_groups"), None, "{known:?}");
    assert_eq!(sum(&known, &TOKEN_CHAIN), 2, "token chain: {known:?}");
    assert_eq!(
        known.get("list_agents"),
        Some(&1),
        "one reconciliation: {known:?}"
    );
    assert_eq!(known.get("create_session"), Some(&1));

    // 3. Adopted: a new, empty database with the same declared spec; one lookup whose list item
    //    carries our owner label, nothing created.
    let fresh = h.another_db("calls_after_wipe").await;
    h.wipe_store(fresh, |_| {}).await;
    let controller = h.start(None);
    assert_eq!(h.ready().await, github_id, "the same scale set, adopted");
    reconciled(&h).await;
    let adopted = counted(&h, "adopted (after a database wipe)");
    assert_eq!(
        sum(&adopted, &SCALE_SET_ENDPOINTS),
        1,
        "adopted: {adopted:?}"
    );
    assert_eq!(adopted.get("list_scale_sets"), Some(&1));
    assert_eq!(adopted.get("create_scale_set"), None);
    assert_eq!(adopted.get("list_runner_groups"), Some(&1), "{adopted:?}");
    assert_eq!(sum(&adopted, &TOKEN_CHAIN), 2, "token chain: {adopted:?}");
    assert_eq!(
        adopted.get("list_agents"),
        Some(&1),
        "one reconciliation: {adopted:?}"
    );
    // Session start: one create (no stale session is stored after a wipe).
    assert_eq!(
        sum(&adopted, &SESSION_ENDPOINTS),
        1,
        "session start: {adopted:?}"
    );

    // 4. One job at a time, from its message to its runner's instance.
    for job in 1..=3usize {
        h.sim()
            .enqueue_jobs(github_id, &JobSpec::count(1))
            .expect("enqueue");
        eventually("the job's runner has an instance", || async {
            (h.created.lock().expect("created").len() == job).then_some(())
        })
        .await;
        let counts = counted(&h, &format!("job {job} ({mode:?})"));
        let acquire = u64::from(mode == AssignmentMode::AvailableThenAcquire);
        assert_eq!(
            counts.get("acquire_jobs").copied().unwrap_or(0),
            acquire,
            "job {job}: {counts:?}"
        );
        assert_eq!(
            counts.get("generate_jit_config"),
            Some(&1),
            "job {job}: {counts:?}"
        );
        assert_eq!(
            sum(&counts, &JOB_ENDPOINTS),
            1 + acquire,
            "job {job}: {counts:?}"
        );
        assert_eq!(
            sum(&counts, &SCALE_SET_ENDPOINTS),
            0,
            "job {job}: {counts:?}"
        );
        assert_eq!(sum(&counts, &TOKEN_CHAIN), 0, "job {job}: {counts:?}");
        assert_eq!(sum(&counts, &SESSION_ENDPOINTS), 0, "job {job}: {counts:?}");
    }
    controller.stop().await;
}

/// The `scaleset_github_calls_total` metric is counted by the client (issue 30 item 7), once
/// per call: after a create and a clean stop it holds exactly the calls the simulator answered,
/// under the client's endpoint names (the token chain's included, which no caller counted).
async fn github_call_metrics_count_each_call_once_under_the_clients_endpoint_name(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    h.boot.store(false, std::sync::atomic::Ordering::SeqCst);
    h.sim().clear_requests();
    let (controller, _) = h.start_ready().await;
    reconciled(&h).await;
    let metrics = controller.metrics.clone();
    // The simulator counts a request when it answers; the client counts it when the answer
    // arrives. A stop between the two cancels a call the client never saw succeed, so the
    // stop waits for the client's count.
    eventually(
        "the client counted the reconciliation's list_runners",
        || async { (metrics.github_call_count("list_runners", "ok") >= 1).then_some(()) },
    )
    .await;
    controller.stop().await;
    let answered = counted(&h, "create (first worker start)");
    // The client's endpoint name, and the simulator's name for the same request.
    for (endpoint, request) in [
        ("registration_token", "registration_token"),
        ("runner_registration", "runner_registration"),
        ("get_runner_group_by_name", "list_runner_groups"),
        ("get_scale_set_by_name", "list_scale_sets"),
        ("create_scale_set", "create_scale_set"),
        ("create_session", "create_session"),
        ("list_runners", "list_agents"),
        ("delete_session", "delete_session"),
    ] {
        assert_eq!(
            answered.get(request),
            Some(&1),
            "the simulator answered one {request}: {answered:?}"
        );
        assert_eq!(
            metrics.github_call_count(endpoint, "ok"),
            1,
            "one {endpoint} counted"
        );
    }
}
