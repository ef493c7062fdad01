//! `plan -f` and `apply -f` against the real server: a plan writes nothing and exits 2 when
//! there is work; applying the reviewed digest writes it; an unchanged fleet plans to 0 and
//! applies as a no-op; a plan made stale by a concurrent change is refused with exit 2.

use crate::helpers::Server;

const FLEET: &str = r#"
[[scale_set]]
name = "linux"
credentials = "sim"
organization = "acme"
provider = "fake"
labels = ["linux", "x64"]
max_runners = 5
"#;

fn fleet_file(server: &Server, name: &str, text: &str) -> String {
    let path = server.dir().join(name);
    std::fs::write(&path, text).expect("write the fleet");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn plan_writes_nothing_apply_does_the_plan_and_again_is_a_no_op() {
    let server = Server::start();
    server.with_acme();
    let file = fleet_file(&server, "fleet.toml", FLEET);

    let plan = server.ctl(&["plan", "-f", &file]);
    assert_eq!(plan.code, 2, "a plan with changes exits 2: {plan:?}");
    let lines: Vec<&str> = plan.stdout.lines().collect();
    assert!(
        lines[0].starts_with("SCALE SET") && lines[0].contains("WHY"),
        "{plan:?}"
    );
    assert!(
        lines[1].starts_with("create") && lines[1].contains("linux"),
        "{plan:?}"
    );
    assert!(
        plan.stdout.contains("changes to apply (1 create)"),
        "{plan:?}"
    );
    assert!(
        plan.stdout
            .contains(&format!("scalesetctl apply -f {file} --digest ")),
        "{plan:?}"
    );
    let empty = server.ctl(&["scale-set", "list"]);
    assert!(
        empty.stdout.starts_with("no scale sets"),
        "plan wrote nothing: {empty:?}"
    );

    let (code, json) = server.json(&["plan", "-f", &file]);
    assert_eq!(code, 2);
    assert_eq!(json["has_changes"], true);
    assert_eq!(json["scale_sets"][0]["action"], "create");
    let digest = json["digest"].as_str().expect("digest").to_owned();

    let applied = server.ok(&["apply", "-f", &file, "--digest", &digest]);
    assert!(applied.stdout.contains("applied: "), "{applied:?}");
    let (_, shown) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(shown["spec"]["max_runners"], 5);
    assert_eq!(shown["spec"]["labels"], serde_json::json!(["linux", "x64"]));

    // In place now: the plan is empty (exit 0), and apply writes nothing.
    let again = server.ok(&["plan", "-f", &file]);
    assert!(again.stdout.contains("no changes"), "{again:?}");
    assert!(
        again
            .stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("unchanged")),
        "{again:?}"
    );
    let (code, noop) = server.json(&["apply", "-f", &file]);
    assert_eq!(code, 0);
    assert_eq!(noop["writes"], 0, "{noop}");
}

#[test]
fn a_stale_plan_is_refused_with_exit_2_and_nothing_written() {
    let server = Server::start();
    server.with_acme();
    let file = fleet_file(&server, "fleet.toml", FLEET);
    assert_eq!(server.ctl(&["apply", "-f", &file]).code, 0);

    // Review a change, then someone else changes the scale set before it is applied.
    let changed = fleet_file(
        &server,
        "ours.toml",
        &FLEET.replace("max_runners = 5", "max_runners = 8"),
    );
    let (code, plan) = server.json(&["plan", "-f", &changed]);
    assert_eq!(code, 2);
    assert_eq!(plan["scale_sets"][0]["action"], "update");
    let shown = server.ctl(&["plan", "-f", &changed]);
    assert!(
        shown.stdout.contains("max_runners: 5 → 8"),
        "the change is shown: {shown:?}"
    );
    let digest = plan["digest"].as_str().expect("digest").to_owned();
    // Another operator applies a different change first.
    let theirs = fleet_file(
        &server,
        "theirs.toml",
        &FLEET.replace("max_runners = 5", "max_runners = 6"),
    );
    let (code, _) = server.json(&["apply", "-f", &theirs]);
    assert_eq!(code, 0);

    let refused = server.ctl(&["apply", "-f", &changed, "--digest", &digest]);
    assert_eq!(refused.code, 2, "a stale plan is a refusal: {refused:?}");
    assert!(
        refused.stderr.contains("apply refused") && refused.stderr.contains("stale_plan"),
        "{refused:?}"
    );
    let (_, shown) = server.json(&["scale-set", "show", "linux"]);
    assert_eq!(
        shown["spec"]["max_runners"], 6,
        "nothing written by the stale apply"
    );

    // JSON mode: the error body on stdout for the script.
    let (code, body) = server.json(&["apply", "-f", &changed, "--digest", &digest]);
    assert_eq!(code, 2);
    assert_eq!(body["code"], "stale_plan");
}

#[test]
fn a_bad_fleet_file_is_exit_1_naming_the_key() {
    let server = Server::start();
    server.with_acme();
    let file = fleet_file(
        &server,
        "bad.toml",
        &FLEET.replace("max_runners = 5", "max_runners = \"many\""),
    );
    let run = server.ctl(&["plan", "-f", &file]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("invalid_input") && run.stderr.contains("max_runners"),
        "{run:?}"
    );
    let missing = server.ctl(&["plan", "-f", "/nonexistent/fleet.toml"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing
            .stderr
            .contains("cannot read the fleet file /nonexistent/fleet.toml"),
        "{missing:?}"
    );
}

/// Regression: scale sets made through the API existed only in the database, said so nowhere,
/// and could not be turned into a fleet file but by hand. `scale-set list` marks them (and
/// counts them), and `fleet export` writes every stored set as a fleet file that `plan` then
/// shows as no change.
#[test]
fn fleet_export_writes_every_stored_set_as_a_file_that_plans_as_no_change() {
    let server = Server::start();
    server.with_acme();
    let linux = server.create_scale_set(
        "linux",
        5,
        &[
            "--label",
            "linux",
            "--label",
            "x64",
            "--image",
            "ubuntu-24.04",
            "--flavor",
            "big",
            "--min-idle",
            "1",
            "--bootstrap-timeout",
            "90",
            "--runner-prefix",
            "lx",
            "--extra-specs",
            r#"{"disk": 40, "zones": ["a", "b"], "nested": {"k": "v"}}"#,
            "--wait",
            "0",
        ],
    );
    assert_eq!(linux.code, 0, "{linux:?}");
    let arm = server.create_scale_set(
        "arm",
        2,
        &[
            "--disabled",
            "--adoption-policy",
            "any",
            "--repair",
            "--disable-update",
            "--wait",
            "0",
        ],
    );
    assert_eq!(arm.code, 0, "{arm:?}");

    let list = server.ok(&["scale-set", "list"]);
    assert!(
        list.stdout
            .lines()
            .next()
            .is_some_and(|l| l.contains("DECLARED")),
        "{list:?}"
    );
    assert!(
        list.stdout
            .contains("2 scale set(s) not declared (DECLARED no): lost on a database loss"),
        "{list:?}"
    );
    let (_, json) = server.json(&["scale-set", "list"]);
    assert_eq!(json["not_declared"], 2, "{json}");

    let path = server.dir().join("exported.toml");
    let file = path.to_str().expect("utf-8");
    server.ok(&["fleet", "export", "--output-file", file]);
    let text = std::fs::read_to_string(&path).expect("the export");
    assert_eq!(
        text.lines().filter(|l| *l == "[[scale_set]]").count(),
        2,
        "{text}"
    );
    let printed = server.ok(&["fleet", "export"]);
    assert_eq!(
        printed.stdout, text,
        "stdout and the file are the same fleet"
    );

    let plan = server.ctl(&["plan", "-f", file]);
    assert_eq!(
        plan.code, 0,
        "the export plans as no change: {plan:?}\n{text}"
    );
    assert!(plan.stdout.contains("no changes"), "{plan:?}");
    let (_, json) = server.json(&["plan", "-f", file]);
    let actions: Vec<(&str, &str)> = json["scale_sets"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default(),
                s["action"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [("arm", "unchanged"), ("linux", "unchanged")],
        "{json}"
    );
}

/// Regression: after a database loss, a scale set made through the API stayed on GitHub with
/// our owner label and appeared nowhere. `fleet undeclared` lists it with the two remedies
/// (exit 2: something to decide), and not another controller's nor a stored one.
#[test]
fn fleet_undeclared_lists_our_sets_on_github_that_nothing_declares() {
    let server = Server::start();
    server.with_acme();
    let none = server.ok(&["fleet", "undeclared"]);
    assert!(
        none.stdout
            .contains("no scale set on GitHub is ours and undeclared"),
        "{none:?}"
    );
    let ours = format!(
        "scaleset-owner-{}",
        crate::helpers::CONTROLLER_ID.replace('-', "")
    );
    let theirs = "scaleset-owner-9b1d2c3e00004000800000000000beef".to_owned();
    for (name, label) in [("made-by-api", &ours), ("their-linux", &theirs)] {
        server
            .sim
            .seed_scale_set("acme", 0, name, &["linux".to_owned(), label.clone()])
            .expect("seed");
    }
    let listed = server.ctl(&["fleet", "undeclared"]);
    assert_eq!(listed.code, 2, "{listed:?}");
    assert!(
        listed.stdout.contains("made-by-api")
            && listed.stdout.contains("declare it")
            && listed.stdout.contains("decommission")
            && !listed.stdout.contains("their-linux"),
        "{listed:?}"
    );
    let (code, json) = server.json(&["fleet", "undeclared"]);
    assert_eq!(code, 2);
    assert_eq!(json["items"][0]["name"], "made-by-api", "{json}");
    assert_eq!(json["items"].as_array().map(Vec::len), Some(1), "{json}");
}
