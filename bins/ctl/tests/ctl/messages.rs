//! What a newcomer meets first: a URL copied from the demo's banner, a URL without its
//! scheme, `https://` against a plain-HTTP server, a URL that is not a scaleset server, a
//! mistyped name, a refused token; each says what is wrong and what to do, and with `-o json`
//! prints an error body of the API's shape on stdout.

use std::io::{Read as _, Write as _};

use crate::helpers::{Server, ctl_with_env};

fn json_error(stdout: &str) -> serde_json::Value {
    let body: serde_json::Value = serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout:?}"));
    assert!(
        body["code"].is_string() && body["message"].is_string() && body["request_id"].is_string(),
        "the API's error shape: {body}"
    );
    body
}

#[test]
fn a_url_ending_in_api_v1_is_taken_as_the_servers_url() {
    let server = Server::start();
    for suffix in ["/api/v1", "/api/v1/"] {
        let url = format!("{}{suffix}", server.url);
        let run = ctl_with_env(
            &["--url", &url, "controller"],
            &[("SCALESET_TOKEN", &server.token)],
        );
        assert_eq!(run.code, 0, "{url}: {run:?}");
    }
}

#[test]
fn a_url_without_its_scheme_says_to_write_http() {
    for url in ["127.0.0.1:8080", "localhost:8080"] {
        let run = ctl_with_env(&["--url", url, "controller"], &[]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stderr
                .contains(&format!("write the scheme too: http://{url}")),
            "{run:?}"
        );
        let json = ctl_with_env(&["-o", "json", "--url", url, "controller"], &[]);
        assert_eq!(json.code, 1, "{json:?}");
        assert_eq!(json_error(&json.stdout)["code"], "client_error");
    }
}

#[test]
fn https_against_a_plain_http_server_says_it_speaks_plain_http() {
    let server = Server::start();
    let url = server.url.replacen("http://", "https://", 1);
    let run = ctl_with_env(
        &["-o", "json", "--url", &url, "controller"],
        &[("SCALESET_TOKEN", &server.token)],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("speaks plain HTTP, not HTTPS")
            && run.stderr.contains(&format!("use {}", server.url)),
        "{run:?}"
    );
    let body = json_error(&run.stdout);
    assert_eq!(body["code"], "unreachable", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("plain HTTP")),
        "{body}"
    );
}

#[test]
fn a_url_that_is_not_a_scaleset_server_says_so() {
    // Some other web server: every path is a plain 404.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut request = [0_u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: 9\r\n\
                  connection: close\r\n\r\nnot found",
            );
        }
    });
    let run = ctl_with_env(
        &["-o", "json", "--url", &url, "scale-set", "list"],
        &[("SCALESET_TOKEN", "sst_x")],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("404") && run.stderr.contains("is not a scaleset-server"),
        "{run:?}"
    );
    assert_eq!(json_error(&run.stdout)["code"], "not_scaleset", "{run:?}");
}

#[test]
fn a_mistyped_scale_set_name_suggests_the_nearest_stored_one() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux-x64", 1, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = server.ctl(&["scale-set", "show", "linux-x46"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("did you mean \"linux-x64\"?"),
        "{run:?}"
    );
    let run = server.ctl(&["-o", "json", "events", "--scale-set", "linux-x46"]);
    assert_eq!(run.code, 1, "{run:?}");
    let body = json_error(&run.stdout);
    assert_eq!(body["code"], "not_found", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("did you mean")),
        "{body}"
    );
}

#[test]
fn a_refused_token_says_the_remedy_once_and_names_the_demos_banner() {
    let server = Server::start();
    let run = server.ctl_env(&["controller"], &[("SCALESET_TOKEN", "sst_not-a-token")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr.matches("token create").count(),
        1,
        "one remedy: {run:?}"
    );
    assert!(
        run.stderr
            .contains("the token from SCALESET_TOKEN was refused")
            && run.stderr.contains("banner"),
        "{run:?}"
    );
}

#[test]
fn import_garm_help_describes_garms_url_without_scaleset_defaults() {
    let run = ctl_with_env(&["import", "garm", "--help"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("GARM's URL"), "{run:?}");
    for scaleset_only in [
        "SCALESET_URL]",
        "127.0.0.1:8080",
        "SCALESET_TOKEN_FILE",
        "--token <",
    ] {
        assert!(
            !run.stdout.contains(scaleset_only),
            "{scaleset_only} is scaleset-server's, not GARM's:\n{}",
            run.stdout
        );
    }
}
