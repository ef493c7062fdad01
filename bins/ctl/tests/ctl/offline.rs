//! What happens before a server answers: usage errors, bad configuration, no server.

use crate::helpers::ctl_with_env;

#[test]
fn usage_errors_exit_1_not_2() {
    // 2 means "refused / plan has changes" to scripts; a typo must not look like that.
    let run = ctl_with_env(&["scale-set", "lst"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("unrecognized subcommand 'lst'"),
        "{run:?}"
    );

    let help = ctl_with_env(&["--help"], &[]);
    assert_eq!(help.code, 0, "{help:?}");
    for command in [
        "controller",
        "credential",
        "entity",
        "scale-set",
        "instance",
    ] {
        assert!(help.stdout.contains(command), "{command} missing: {help:?}");
    }
    assert!(help.stdout.contains("Exit codes"), "{help:?}");
}

#[test]
fn an_unreachable_server_is_exit_1_with_what_to_do() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let run = ctl_with_env(
        &["--url", &url, "controller"],
        &[("SCALESET_TOKEN", "sst_x")],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with("scalesetctl: cannot reach the server at http://127.0.0.1:"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("is scaleset-server running there?"),
        "{run:?}"
    );
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn bad_configuration_is_exit_1_naming_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scaleset").join("ctl.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "url = \"http://127.0.0.1:1\"\ntoken = 5\n").unwrap();
    let xdg = dir.path().to_str().unwrap();
    let run = ctl_with_env(&["controller"], &[("XDG_CONFIG_HOME", xdg)]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("ctl.toml is invalid"), "{run:?}");

    let run = ctl_with_env(&["controller"], &[("SCALESET_URL", "127.0.0.1:8080")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("SCALESET_URL is not usable"), "{run:?}");
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    std::process::Stdio::from(writer)
}

/// Issue 29 item 17a: `scalesetctl … | head` closing the pipe early, or a closed stderr, is not
/// a panic (exit 101): the command exits with its own code.
#[test]
fn a_closed_stdout_or_stderr_is_not_a_panic() {
    for (args, stdout_closed, code) in [
        (&["config"][..], true, 0),
        (&["--help"][..], true, 0),
        (&["scale-set", "lst"][..], false, 1),
        (&["--url", "http://127.0.0.1:9", "controller"][..], false, 1),
    ] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_scalesetctl"));
        command
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("SCALESET_TOKEN", "sst_x");
        let output = if stdout_closed {
            command
                .stdout(closed_pipe())
                .stderr(std::process::Stdio::piped())
        } else {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(closed_pipe())
        }
        .output()
        .expect("scalesetctl runs");
        assert_eq!(output.status.code(), Some(code), "{args:?}: {output:?}");
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("panicked"),
            "{args:?}: {output:?}"
        );
    }
}

/// A server that answers the same `next_cursor` on every page would keep `list` asking for
/// ever: the CLI stops at the first repeated cursor with exit 1, naming it.
#[test]
fn a_list_whose_cursor_repeats_ends_with_an_error_not_a_loop() {
    use axum::routing::get;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route(
        "/api/v1/tokens",
        get(|| async { axum::Json(serde_json::json!({"items": [], "next_cursor": "same"})) }),
    );
    runtime.spawn(async move { axum::serve(listener, app).await });
    let run = crate::helpers::ctl_with_env(
        &["--url", &url, "--timeout", "10", "token", "list"],
        &[("SCALESET_TOKEN", "sst_any")],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("next_cursor \"same\" twice"), "{run:?}");
}

#[test]
fn the_bash_completion_script_completes_every_subcommand() {
    let run = ctl_with_env(&["completions", "bash"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("complete -F _scalesetctl"),
        "a bash completion function for scalesetctl: {run:?}"
    );
    for command in [
        "scale-set",
        "events",
        "decommission",
        "instance",
        "completions",
        "man",
    ] {
        assert!(
            run.stdout.contains(command),
            "{command} is not completed:\n{}",
            run.stdout
        );
    }
    for shell in ["zsh", "fish"] {
        let run = ctl_with_env(&["completions", shell], &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("scale-set"), "{shell}: {run:?}");
    }
}

#[test]
fn the_man_page_renders_and_names_the_commands() {
    let run = ctl_with_env(&["man"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with(".TH scalesetctl 1")),
        "a roff page titled scalesetctl(1):\n{}",
        run.stdout
    );
    for command in ["scale\\-set", "events", "decommission", "completions"] {
        assert!(
            run.stdout.contains(command),
            "{command} is not named:\n{}",
            run.stdout
        );
    }
    let dir = tempfile::tempdir().expect("a directory");
    let run = ctl_with_env(&["man", "--dir", dir.path().to_str().expect("utf-8")], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    for page in [
        "scalesetctl.1",
        "scalesetctl-events.1",
        "scalesetctl-scale-set-create.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH scalesetctl"), "{page}:\n{text}");
    }
}

/// `import garm` reads none of scalesetctl's connection settings: its man page, like its
/// `--help`, describes `--url` as GARM's and leaves `--token` and `--config` out.
#[test]
fn the_import_garm_man_page_describes_garms_flags_not_the_servers() {
    let dir = tempfile::tempdir().expect("a directory");
    let run = ctl_with_env(&["man", "--dir", dir.path().to_str().expect("utf-8")], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let page = std::fs::read_to_string(dir.path().join("scalesetctl-import-garm.1"))
        .expect("the import garm page");
    assert!(page.contains("GARM\\*(Aqs URL, e.g."), "{page}");
    assert!(!page.contains("[default: http://127.0.0.1:8080]"), "{page}");
    assert!(!page.contains("\\fB\\-\\-token\\fR"), "{page}");
    assert!(!page.contains("\\-\\-config"), "{page}");
    let list = std::fs::read_to_string(dir.path().join("scalesetctl-scale-set-list.1"))
        .expect("another command's page");
    assert!(
        list.contains("SCALESET_URL"),
        "other commands keep the server's: {list}"
    );
    for help in ["-h", "--help"] {
        let run = ctl_with_env(&["import", "garm", help], &[]);
        assert_eq!(run.code, 0, "{run:?}");
        // Help wraps to the terminal's width: compare the words.
        let words = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("SCALESET_URL is not read"),
            "{help}: {run:?}"
        );
        assert!(!words.contains("--config"), "{help}: {run:?}");
    }
}
