//! `scalesetctl events` against the real server: every scale set's events or one's, oldest
//! first, `--since`, JSON, and `--follow` printing what is recorded after it started until
//! Ctrl-C (exit 0).

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use crate::helpers::Server;

#[test]
fn events_lists_every_scale_set_or_one_oldest_first_since_a_time() {
    let server = Server::start();
    server.with_acme();
    for name in ["linux", "mac"] {
        let run = server.create_scale_set(name, 1, &[]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let (code, all) = server.json(&["events"]);
    assert_eq!(code, 0, "{all}");
    let items = all["items"].as_array().expect("items");
    let names: std::collections::BTreeSet<&str> = items
        .iter()
        .map(|e| e["scale_set"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["linux", "mac"].into(), "{all}");
    let ids: Vec<i64> = items.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");

    let (code, linux) = server.json(&["events", "--scale-set", "linux", "--since", "1h"]);
    assert_eq!(code, 0, "{linux}");
    let linux = linux["items"].as_array().expect("items");
    assert!(!linux.is_empty());
    assert!(linux.iter().all(|e| e["scale_set"] == "linux"), "{linux:?}");

    let table = server.ok(&["events", "--scale-set", "mac"]);
    assert!(
        table.stdout.lines().all(|l| l.contains("  mac  ")),
        "one line per event, naming the scale set: {table:?}"
    );
    let none = server.ok(&["events", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(none.stdout, "no events\n", "{none:?}");
    let bad = server.ctl(&["events", "--since", "yesterday"]);
    assert_eq!(bad.code, 1, "{bad:?}");
    assert!(bad.stderr.contains("neither a duration"), "{bad:?}");
}

#[test]
fn events_follow_prints_new_events_until_ctrl_c() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 1, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, before) = server.json(&["events"]);
    let seen = before["items"].as_array().expect("items").len();

    let mut follow = Command::new(env!("CARGO_BIN_EXE_scalesetctl"))
        .args(["-o", "json", "events", "--follow", "--interval", "100ms"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("SCALESET_URL", &server.url)
        .env("SCALESET_TOKEN", &server.token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scalesetctl runs");
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stdout = follow.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed: Vec<serde_json::Value> = Vec::new();
    let drain = |printed: &mut Vec<serde_json::Value>| {
        while let Ok(line) = received.try_recv() {
            printed.push(serde_json::from_str(&line).expect("one JSON object per line"));
        }
    };
    server.eventually("the events so far are printed", || {
        drain(&mut printed);
        (printed.len() >= seen).then_some(())
    });
    // A scale set created while it follows: its events come out as they are recorded.
    let run = server.create_scale_set("mac", 1, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    server.eventually("the new scale set's events are printed", || {
        drain(&mut printed);
        printed
            .iter()
            .any(|e| e["scale_set"] == "mac")
            .then_some(())
    });
    let ids: Vec<i64> = printed.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "each event once, in order: {ids:?}"
    );

    let interrupted = Command::new("kill")
        .args(["-INT", &follow.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let status = follow.wait().expect("it stops");
    assert_eq!(status.code(), Some(0), "Ctrl-C ends a follow cleanly");
    reader.join().expect("the reader ends");
}
