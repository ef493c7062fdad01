//! Against a real server: every resource through the CLI, table and JSON output, and the exit
//! codes of success (0), errors (1) and refusals (2).

use crate::helpers::{CONTROLLER_ID, Server};

/// Every line of a table fits `width` columns.
fn assert_fits(text: &str, width: usize) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{} columns > {width}: {line:?}\n{text}",
            line.chars().count()
        );
    }
}

#[test]
fn controller_as_a_record_and_as_json() {
    let server = Server::start();
    let run = server.ok(&["controller"]);
    let owner = format!("scaleset-owner-{}", CONTROLLER_ID.replace('-', ""));
    assert!(
        run.stdout
            .contains(&format!("owner label:            {owner}")),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains(&format!("id:                     {CONTROLLER_ID}")),
        "{run:?}"
    );
    assert!(
        !run.stdout.contains('\x1b'),
        "no colour without a terminal: {run:?}"
    );

    let (code, json) = server.json(&["controller"]);
    assert_eq!(code, 0);
    assert_eq!(json["id"], CONTROLLER_ID);
    assert_eq!(json["owner_label"], owner.as_str());
    assert_eq!(
        json["session_owner"],
        format!("scaleset-{CONTROLLER_ID}").as_str()
    );
}

#[test]
fn a_bad_or_missing_token_is_exit_1_saying_how_to_get_one() {
    let server = Server::start();
    let run = server.ctl_env(
        &["scale-set", "list"],
        &[("SCALESET_TOKEN", "sst_not-a-token")],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("401 Unauthorized"), "{run:?}");
    assert!(run.stderr.contains("(invalid_token, request "), "{run:?}");
    assert!(
        run.stderr
            .contains("the token from SCALESET_TOKEN was refused")
            && run.stderr.contains("scaleset-server token create NAME"),
        "{run:?}"
    );
    assert!(
        run.stdout.is_empty(),
        "nothing on stdout in table mode: {run:?}"
    );

    // No token at all, and JSON output: the server's error body on stdout for scripts.
    let run =
        crate::helpers::ctl_with_env(&["-o", "json", "--url", &server.url, "controller"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no token was given"), "{run:?}");
    let body: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON error body");
    assert_eq!(body["code"], "missing_token");
    assert!(
        body["request_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{body}"
    );
}

#[test]
fn credentials_and_entities_list_show_delete() {
    let server = Server::start();
    server.ok_starting_with(&["credential", "list"], "no credentials");

    server.with_acme();
    let list = server.ok(&["credential", "list"]);
    let header = list.stdout.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("ID") && header.contains("NAME") && header.contains("ENDPOINT"),
        "{list:?}"
    );
    assert!(
        list.stdout.contains("sim") && list.stdout.contains("pat"),
        "{list:?}"
    );
    assert!(
        !list.stdout.contains("ghp_simulator"),
        "the secret never comes back: {list:?}"
    );

    let (code, json) = server.json(&["credential", "list"]);
    assert_eq!(code, 0);
    let items = json["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], "sim");
    assert!(!json.to_string().contains("ghp_simulator"));
    let id = items[0]["id"].as_str().expect("id").to_owned();

    // By name, full id, or id prefix.
    for wanted in ["sim", id.as_str(), &id[..8]] {
        let show = server.ctl(&["credential", "show", wanted]);
        assert_eq!(show.code, 0, "{wanted}: {show:?}");
        let first = show.stdout.lines().next().unwrap_or_default();
        assert!(first.starts_with("id:") && first.ends_with(&id), "{show:?}");
    }

    let entities = server.ok(&["entity", "list"]);
    assert!(
        entities.stdout.contains("organization") && entities.stdout.contains("acme"),
        "{entities:?}"
    );

    // Credentials in use are refused by the server: an error (1), not a refusal (2).
    let in_use = server.ctl(&["credential", "delete", "sim"]);
    assert_eq!(in_use.code, 1, "{in_use:?}");
    assert!(
        in_use.stderr.contains("409 Conflict") && in_use.stderr.contains("in_use"),
        "{in_use:?}"
    );

    server.ok_starting_with(&["entity", "delete", "acme"], "deleted entity ");
    server.ok(&["credential", "delete", "sim"]);
    let missing = server.ctl(&["credential", "show", "sim"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stderr.contains("no credential is named \"sim\""),
        "{missing:?}"
    );
}

#[test]
fn scale_set_create_list_show_update_delete() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 10, &["--label", "linux", "--label", "x64"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("state:") && run.stdout.contains("ready"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("provenance:") && run.stdout.contains("created"),
        "{run:?}"
    );
    let on_github = server.sim.state().scale_sets;
    assert_eq!(on_github.len(), 1, "created on GitHub: {on_github:?}");
    assert_eq!(on_github[0].name, "linux");

    let list = server.ok(&["scale-set", "list"]);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("STATE") && lines[0].contains("PROVENANCE"),
        "{list:?}"
    );
    assert!(
        lines[1].contains("linux") && lines[1].contains("acme") && lines[1].contains("ready"),
        "{list:?}"
    );
    assert!(lines[1].contains("0/10"), "{list:?}");

    let (code, json) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(code, 0);
    assert_eq!(json["state"], "ready");
    assert_eq!(json["provenance"], "created");
    assert_eq!(json["spec"]["labels"], serde_json::json!(["linux", "x64"]));
    let generation = json["generation"].as_i64().expect("generation");
    assert!(
        !json["events"].as_array().expect("events").is_empty(),
        "{json}"
    );

    let show = server.ok(&["scale-set", "show", "linux"]);
    assert!(
        ["FIRST SEEN", "LAST SEEN", "TIMES"]
            .iter()
            .all(|h| show.stdout.contains(h)),
        "events are shown with when they were first and last seen and how often (issue 29 \
         item 14): {show:?}"
    );

    // A change at the generation read; then the same stale generation is refused, unchanged.
    let updated = server.ok(&[
        "scale-set",
        "update",
        "linux",
        "--max-runners",
        "20",
        "--generation",
        &generation.to_string(),
    ]);
    assert!(updated.stdout.contains("at most 20"), "{updated:?}");
    let stale = server.ctl(&[
        "scale-set",
        "update",
        "linux",
        "--max-runners",
        "30",
        "--generation",
        &generation.to_string(),
    ]);
    assert_eq!(stale.code, 1, "{stale:?}");
    assert!(stale.stderr.contains("stale_generation"), "{stale:?}");
    let (_, json) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(json["spec"]["max_runners"], 20);

    // Served by the worker: drained first, then deleted (created here: on GitHub too).
    server.ok(&["scale-set", "drain", "linux"]);
    let deleted = server.eventually("the drained scale set is deleted", || {
        let run = server.ctl(&["scale-set", "delete", "linux"]);
        (run.code == 0).then_some(run)
    });
    assert!(deleted.stdout.contains("here and on GitHub"), "{deleted:?}");
    assert!(
        deleted.stdout.contains("this controller created it"),
        "{deleted:?}"
    );
    assert!(server.sim.state().scale_sets.is_empty());
    server.ok_starting_with(&["scale-set", "list"], "no scale sets");
}

/// `scale-set show` prints the runner download a new runner of the set would get, from the
/// entity's list the worker read before creating its first runner, and, once the set asks for
/// a platform GitHub builds no runner for, the warning saying which ones it does (the update
/// still goes through).
#[test]
fn scale_set_show_prints_the_runner_tool_a_new_runner_gets_or_the_warning() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("tooled", 3, &["--min-idle", "1"]);
    assert_eq!(run.code, 0, "{run:?}");
    // The worker reads the entity's downloads before it creates the idle runner.
    let tool = server.eventually("the runner tool is known", || {
        let (_, json) = server.json(&["scale-set", "show", "tooled"]);
        let tool = json["runner_tool"].clone();
        (!tool.is_null()).then_some(tool)
    });
    assert_eq!(tool["os"], "linux");
    assert_eq!(tool["architecture"], "x64");
    let filename = tool["filename"].as_str().expect("a filename");
    let url = tool["download_url"].as_str().expect("a URL");
    assert!(filename.starts_with("actions-runner-linux-x64-"), "{tool}");
    let show = server.ok(&["scale-set", "show", "tooled"]);
    let line = show
        .stdout
        .lines()
        .find(|l| l.contains("runner tool"))
        .unwrap_or_else(|| panic!("no runner tool line: {show:?}"));
    assert!(line.contains(filename), "{show:?}");
    assert!(show.stdout.contains(url), "{show:?}");
    assert!(!show.stdout.contains("warning"), "{show:?}");

    // GitHub builds no 32-bit x86 runner: the update is stored, and warned about.
    let updated = server.ok(&["scale-set", "update", "tooled", "--os-arch", "386"]);
    assert!(updated.stdout.contains("warning"), "{updated:?}");
    assert!(updated.stdout.contains("none for linux/386"), "{updated:?}");
    assert!(
        updated.stdout.contains("linux/amd64, linux/arm64"),
        "{updated:?}"
    );
    let show = server.ok(&["scale-set", "show", "tooled"]);
    assert!(show.stdout.contains("none known"), "{show:?}");
    assert!(
        show.stdout.contains("--os-type OS --os-arch ARCH"),
        "{show:?}"
    );
    let (_, json) = server.json(&["scale-set", "show", "tooled"]);
    assert_eq!(json["spec"]["os_arch"], "386");
    assert_eq!(json["runner_tool"], serde_json::Value::Null);
}

/// Issue 29 item 6, through the CLI against the API and a worker: `delete` of a served scale
/// set names the drain command (it used to name a PATCH the API refuses); `drain` stops the
/// serving, the idle runners are retired while the busy one finishes its job, and the delete
/// goes through once drained.
#[test]
fn drain_retires_idle_runners_lets_busy_ones_finish_then_delete() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 4, &["--min-idle", "2"]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, set) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(set["state"], "ready", "{set}");
    let github_id = set["github_id"].as_i64().expect("a GitHub id");
    server
        .sim
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");
    let job_states = || -> Vec<String> {
        server
            .sim
            .state()
            .jobs_of(github_id)
            .map(|j| j.state.clone())
            .collect()
    };
    let instances = || -> Vec<serde_json::Value> {
        let (code, list) = server.json(&["instance", "list", "--scale-set", "linux"]);
        assert_eq!(code, 0, "{list}");
        list["items"].as_array().cloned().unwrap_or_default()
    };
    server.eventually("a job runs beside idle runners", || {
        let listed = instances();
        let busy = listed.iter().filter(|i| i["status"] == "busy").count();
        (job_states() == ["running"] && busy == 1 && listed.len() >= 3).then_some(())
    });

    let refused = server.ctl(&["scale-set", "delete", "linux"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("scalesetctl scale-set drain linux"),
        "the refusal names the command to run: {refused:?}"
    );
    assert!(!refused.stderr.contains("PATCH"), "{refused:?}");

    let drain = server.ok(&["scale-set", "drain", "linux"]);
    assert!(
        drain.stdout.contains("draining scale set linux"),
        "{drain:?}"
    );
    server.eventually("only the busy runner is left", || {
        let (_, answer) = server.json(&["scale-set", "drain", "linux"]);
        (answer["instances"] == 1 && answer["busy"] == 1).then_some(())
    });
    assert_eq!(job_states(), ["running"], "the busy runner's job runs on");
    let (_, shown) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(shown["spec"]["enabled"], false, "{shown}");

    // The job ends: nothing hears it but the drain, which finds the runner gone.
    server.sim.advance(std::time::Duration::from_secs(3700));
    let drained = server.eventually("the scale set is drained", || {
        let run = server.ok(&["scale-set", "drain", "linux"]);
        run.stdout.contains("is drained").then_some(run)
    });
    assert!(
        drained
            .stdout
            .contains("scalesetctl scale-set delete linux"),
        "{drained:?}"
    );
    assert_eq!(job_states(), ["completed"]);
    assert!(
        server.sim.state().agents.is_empty(),
        "no runner left on GitHub"
    );
    let deleted = server.ok(&["scale-set", "delete", "linux"]);
    assert!(deleted.stdout.contains("here and on GitHub"), "{deleted:?}");
    assert!(server.sim.state().scale_sets.is_empty());
}

/// Issue 29 item 3: a scale set of ours that this database never saw created (what a database
/// loss leaves: our owner label on GitHub, no record) is adopted, and its delete detaches it
/// saying so, instead of claiming this controller did not create it.
#[test]
fn deleting_an_adopted_set_says_it_was_adopted_by_its_owner_label() {
    let server = Server::start();
    server.with_acme();
    let owner = format!("scaleset-owner-{}", CONTROLLER_ID.replace('-', ""));
    let github_id = server
        .sim
        .seed_scale_set("acme", 0, "linux", &[owner])
        .expect("our scale set, left by a lost database");
    let run = server.create_scale_set("linux", 4, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, json) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(json["provenance"], "adopted", "{json}");
    assert_eq!(
        json["evidence"],
        serde_json::json!(["OwnerLabel"]),
        "{json}"
    );

    // A served scale set is drained before it is deleted (issue 29 item 6).
    server.ok(&["scale-set", "drain", "linux"]);
    server.eventually("the scale set is drained", || {
        let run = server.ok(&["scale-set", "drain", "linux"]);
        run.stdout.contains("is drained").then_some(())
    });
    let deleted = server.ok(&["scale-set", "delete", "linux"]);
    assert!(
        deleted.stdout.contains(&format!(
            "GitHub scale set {github_id} is left in place: it was adopted on owner label"
        )) && deleted.stdout.contains("after a database loss")
            && deleted.stdout.contains("--force deletes it on GitHub"),
        "{deleted:?}"
    );
    assert!(
        !deleted
            .stdout
            .contains("only scale sets this controller created"),
        "{deleted:?}"
    );
    assert_eq!(server.sim.state().scale_sets.len(), 1, "GitHub keeps it");
}

#[test]
fn a_foreign_scale_set_is_refused_with_exit_2_and_its_remedy() {
    let server = Server::start();
    server.with_acme();
    server
        .sim
        .create_foreign_scale_set("acme", 0, "linux", "another-controller")
        .expect("a foreign scale set");
    let run = server.create_scale_set("linux", 4, &[]);
    assert_eq!(run.code, 2, "a refusal is exit 2: {run:?}");
    assert!(run.stdout.contains("refused"), "{run:?}");
    // The worker's refusal reason carries the remedy (the create answers before the worker
    // ensures, so it shows the stored reason, not a structured refusal).
    assert!(
        run.stdout.contains("what to do:"),
        "the remedy is printed: {run:?}"
    );

    // The list says why under the table.
    let list = server.ctl(&["scale-set", "list"]);
    assert_eq!(list.code, 0, "listing is not a refusal: {list:?}");
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("linux refused: ")),
        "{list:?}"
    );

    let (code, json) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(code, 0);
    assert_eq!(json["state"], "refused");
    // Refused: never deleted on GitHub, whatever the delete does to the record. The worker
    // re-checks a refused set, so it is drained (let go) first.
    server.ok(&["scale-set", "drain", "linux"]);
    server.eventually("the refused record is deleted", || {
        (server.ctl(&["scale-set", "delete", "linux"]).code == 0).then_some(())
    });
    assert_eq!(
        server.sim.state().scale_sets.len(),
        1,
        "the foreign set is untouched"
    );
}

#[test]
fn tables_fit_80_columns() {
    let server = Server::start();
    server.with_acme();
    for name in ["linux-x64-large-with-gpu-and-a-very-long-name", "mac-arm64"] {
        let run = server.create_scale_set(name, 10, &[]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    server
        .sim
        .create_foreign_scale_set(
            "acme",
            0,
            "windows-2025-with-a-long-name-too",
            "another-controller",
        )
        .expect("foreign");
    let refused = server.create_scale_set("windows-2025-with-a-long-name-too", 10, &[]);
    assert_eq!(refused.code, 2, "{refused:?}");
    for args in [
        &["scale-set", "list"][..],
        &["scale-set", "show", "windows-2025-with-a-long-name-too"],
        &["credential", "list"],
        &["credential", "show", "sim"],
        &["entity", "list"],
        &["controller"],
    ] {
        let run = server.ctl_env(args, &[("COLUMNS", "80")]);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert_fits(&run.stdout, 80);
    }
    // Without a width (piped, no COLUMNS) a record stays on one line.
    let run = server.ctl(&["scale-set", "list"]);
    let long = run
        .stdout
        .lines()
        .find(|l| l.contains("linux-x64"))
        .expect("row");
    assert!(
        long.contains("linux-x64-large-with-gpu-and-a-very-long-name"),
        "{run:?}"
    );
}

#[test]
fn instances_empty_and_missing() {
    let server = Server::start();
    let run = server.ok(&["instance", "list"]);
    assert_eq!(run.stdout, "no instances\n");
    let (code, json) = server.json(&["instance", "list"]);
    assert_eq!(code, 0);
    assert_eq!(json["items"], serde_json::json!([]));
    let missing = server.ctl(&["instance", "show", "linux-abcdefgh"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stderr.contains("404 Not Found") && missing.stderr.contains("not_found"),
        "{missing:?}"
    );
}

#[test]
fn tokens_are_listed_and_revoked() {
    let server = Server::start();
    let list = server.ok_starting_with(&["token", "list"], "NAME");
    assert!(list.stdout.contains("tests"), "{list:?}");
    let header = list.stdout.lines().next().unwrap_or_default();
    assert!(header.trim_end().ends_with("SCOPE"), "{list:?}");
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with("tests"))
        .unwrap_or_default();
    assert!(
        row.trim_end().ends_with("admin"),
        "the scope of each token: {list:?}"
    );
    assert!(!list.stdout.contains(&server.token[4..]), "{list:?}");
    let (code, json) = server.json(&["token", "list"]);
    assert_eq!(code, 0);
    assert_eq!(json["items"].as_array().map(Vec::len), Some(1), "{json}");
    // Revoking the token in use cuts it off at once.
    let revoked = server.ok(&["token", "revoke", "tests"]);
    assert!(
        revoked.stdout.contains("revoked API token \"tests\""),
        "{revoked:?}"
    );
    let refused = server.ctl(&["controller"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("invalid_token"), "{refused:?}");
}

/// Issue 29 item 17e: a remedy the CLI prints is a scalesetctl command to run, not a raw API
/// call.
#[test]
fn remedies_are_scalesetctl_commands() {
    let server = Server::start();
    let run = server.ctl(&[
        "entity",
        "create",
        "organization",
        "acme",
        "--credentials",
        "missing",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("scalesetctl credential create \"missing\""),
        "{run:?}"
    );
    assert!(!run.stderr.contains("POST /api"), "{run:?}");
}

/// Issue 33 item 4, through the CLI against the API and a worker: `worker drain NAME` makes the
/// worker let go of its scale sets (its session is deleted, its lease released) and says so
/// once it holds none; an unknown worker is an error naming it.
#[test]
fn worker_drain_hands_the_workers_scale_sets_over() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 2, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, set) = server.json(&["scale-set", "show", "linux"]);
    let github_id = set["github_id"].as_i64().expect("a GitHub id");
    server.eventually("the worker listens", || {
        has_session(&server.sim, github_id).then_some(())
    });

    let drain = server.ok(&["worker", "drain", "ctl-test-worker"]);
    assert!(drain.stdout.contains("worker ctl-test-worker"), "{drain:?}");
    let drained = server.eventually("the worker is drained", || {
        let run = server.ok(&["worker", "drain", "ctl-test-worker"]);
        run.stdout.contains("is drained").then_some(run)
    });
    assert!(drained.stdout.contains("stop it now"), "{drained:?}");
    assert!(
        !has_session(&server.sim, github_id),
        "the drained worker deleted its session"
    );
    let (code, json) = server.json(&["worker", "drain", "ctl-test-worker"]);
    assert_eq!(code, 0);
    assert_eq!(json["leases"], 0, "{json}");

    let unknown = server.ctl(&["worker", "drain", "nobody"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(unknown.stderr.contains("\"nobody\""), "{unknown:?}");
}

fn has_session(sim: &scaleset_sim::Simulator, github_id: i64) -> bool {
    sim.state()
        .scale_set(github_id)
        .is_some_and(|s| s.session.is_some())
}

/// `credential create --client-id` stores a GitHub App named by its client id (`Iv23li…`),
/// and `credential show` says it (never the key); `--app-id` with `--client-id` is refused
/// before anything is sent.
#[test]
fn a_github_app_credential_is_created_by_its_client_id() {
    const KEY: &str = include_str!("../../../../crates/sim/tests/conformance/app-key.pem");
    let server = Server::start();
    let key = server.dir().join("app.pem");
    std::fs::write(&key, KEY).expect("key file");
    let key = key.to_str().expect("utf-8 path");
    let created = server.ctl(&[
        "credential",
        "create",
        "by-client-id",
        "--client-id",
        "Iv23liABCDEF12345678",
        "--installation-id",
        "77",
        "--private-key-file",
        key,
    ]);
    assert_eq!(created.code, 0, "{created:?}");
    let show = server.ok(&["credential", "show", "by-client-id"]);
    assert!(
        show.stdout.contains("client id:") && show.stdout.contains("Iv23liABCDEF12345678"),
        "{show:?}"
    );
    assert!(!show.stdout.contains("app id:"), "{show:?}");
    assert!(!show.stdout.contains("PRIVATE KEY"), "{show:?}");

    let both = server.ctl(&[
        "credential",
        "create",
        "both",
        "--app-id",
        "1",
        "--client-id",
        "Iv23liABCDEF",
        "--installation-id",
        "77",
        "--private-key-file",
        key,
    ]);
    assert_eq!(both.code, 1, "a usage error: {both:?}");
    assert!(both.stderr.contains("--client-id"), "{both:?}");
}

/// `scale-set retry` against a real server with a worker: exit 0 naming the worker that
/// acts on it, the request as an event; exit 1 with the remedy for a drained (disabled) set,
/// and for a name nothing matches.
#[test]
fn scale_set_retry_asks_the_serving_worker_and_refuses_a_disabled_set() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 2, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let (code, answer) = server.json(&["scale-set", "retry", "linux"]);
    assert_eq!(code, 0, "{answer}");
    assert!(
        answer["served_by"].is_string(),
        "the worker serves it: {answer}"
    );
    let (_, set) = server.json(&["scale-set", "show", "linux"]);
    assert!(
        set["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["kind"] == "retry_requested"),
        "{set}"
    );
    let text = server.ok(&["scale-set", "retry", "linux"]);
    assert!(text.stdout.contains("retry asked for"), "{text:?}");

    let unknown = server.ctl(&["scale-set", "retry", "nothing-by-this-name"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");

    server.ok(&["scale-set", "drain", "linux"]);
    let refused = server.ctl(&["scale-set", "retry", "linux"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("enable it first")
            && refused
                .stderr
                .contains("scalesetctl scale-set update linux --enabled true"),
        "{refused:?}"
    );
}

/// The test server answers two items a page (`helpers::Server`): each `list` follows
/// `next_cursor` to the end, so tables and JSON hold every item, once, in the server's order.
#[test]
fn list_commands_read_every_page() {
    let server = Server::start();
    server.with_acme();
    for name in ["zeta", "beta", "gamma", "alpha"] {
        let run = server.ctl(&[
            "entity",
            "create",
            "organization",
            name,
            "--credentials",
            "sim",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    for name in ["linux-c", "linux-a", "linux-b"] {
        let run = server.create_scale_set(name, 1, &[]);
        assert_eq!(run.code, 0, "{run:?}");
    }

    let (code, entities) = server.json(&["entity", "list"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = entities["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["acme", "alpha", "beta", "gamma", "zeta"],
        "{entities}"
    );
    assert!(entities["next_cursor"].is_null(), "{entities}");

    let (code, sets) = server.json(&["scale-set", "list"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = sets["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|s| s["spec"]["name"].as_str())
        .collect();
    assert_eq!(names, ["linux-a", "linux-b", "linux-c"], "{sets}");
    assert!(sets["next_cursor"].is_null(), "{sets}");
    // The entity filter is kept on every page.
    let (code, acme) = server.json(&["scale-set", "list", "--entity", "acme"]);
    assert_eq!(code, 0);
    assert_eq!(acme["items"].as_array().map(Vec::len), Some(3), "{acme}");

    let table = server.ok(&["entity", "list"]);
    for name in ["acme", "alpha", "beta", "gamma", "zeta"] {
        assert!(table.stdout.contains(name), "{name} missing: {table:?}");
    }
}
