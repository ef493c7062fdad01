//! Malformed requests over real HTTP: bad JSON, bad ids in paths, huge numbers, missing or
//! garbled headers, on every surface (REST, Actions service, queue, control API). Each gets a
//! 4xx answer (never a 5xx, a dropped connection or a hang), and the simulator keeps serving.

use std::time::Duration;

use anyhow::{Context, Result};

use scaleset_github::ExposeSecret as _;

use crate::helpers::{admin_token, config, post_registration_token, raw, with_session};

/// One request of the battery.
struct Probe {
    method: &'static str,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Option<String>,
}

fn probe(method: &'static str, url: String) -> Probe {
    Probe {
        method,
        url,
        headers: Vec::new(),
        body: None,
    }
}

impl Probe {
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    fn body(mut self, body: &str) -> Self {
        self.body = Some(body.to_owned());
        self
    }
}

#[tokio::test]
async fn malformed_requests_get_4xx_and_the_simulator_keeps_serving() -> Result<()> {
    let (sim, client, set, session) = with_session(config(), "target").await?;
    let (token, base) = admin_token(&sim, "acme", "orgs/acme").await?;
    let admin = format!("Bearer {token}");
    let queue = format!(
        "Bearer {}",
        session.message_queue_access_token.expose_secret()
    );
    let v = "api-version=6.0-preview";
    let sets = format!("{base}_apis/runtime/runnerscalesets");
    let agents = format!("{base}_apis/distributedtask/pools/0/agents");
    let huge = "99999999999999999999999999";
    let bad_bodies = [
        "{not json",
        "[]",
        "\"text\"",
        "null",
        r#"{"name": 123, "runnerGroupId": "one"}"#,
        r#"{"name": "x", "runnerGroupId": 99999999999999999999999999}"#,
        r#"{"name": "x", "runnerGroupId": 1e400}"#,
        r#"{"name": "x", "runnerGroupId": 424242}"#,
        r#"{"name": "x", "runnerGroupId": -5, "labels": "nope"}"#,
    ];

    let registration = post_registration_token(&sim, "orgs/acme").await?.json()?;
    let remote_auth = format!(
        "RemoteAuth {}",
        registration["token"].as_str().unwrap_or_default()
    );

    let mut probes = Vec::new();
    // Actions service: bad JSON bodies on every endpoint that reads one.
    for body in bad_bodies {
        for (method, url, auth) in [
            ("POST", format!("{sets}?{v}"), &admin),
            ("PATCH", format!("{sets}/{}?{v}", set.id), &admin),
            (
                "POST",
                format!("{sets}/{}/generatejitconfig?{v}", set.id),
                &admin,
            ),
            ("POST", format!("{sets}/{}/acquirejobs?{v}", set.id), &queue),
            ("POST", format!("{sets}/{}/sessions?{v}", set.id), &admin),
        ] {
            probes.push(probe(method, url).header("authorization", auth).body(body));
        }
        for path in [
            "/api/v3/actions/runner-registration",
            "/actions/runner-registration",
        ] {
            probes.push(
                probe("POST", sim.url(path))
                    .header("authorization", &remote_auth)
                    .body(body),
            );
        }
    }
    // Bad ids in paths, huge numbers.
    for id in [huge, "-1", "0", "abc", "1.5", "%00", "9223372036854775807"] {
        probes.push(probe("GET", format!("{sets}/{id}?{v}")).header("authorization", &admin));
        probes.push(probe("DELETE", format!("{sets}/{id}?{v}")).header("authorization", &admin));
        probes.push(
            probe("POST", format!("{sets}/{id}/sessions?{v}"))
                .header("authorization", &admin)
                .body(r#"{"ownerName":"x"}"#),
        );
        probes.push(
            probe("PATCH", format!("{sets}/{}/sessions/{id}?{v}", set.id))
                .header("authorization", &admin),
        );
        probes.push(
            probe("DELETE", format!("{sets}/{}/sessions/{id}?{v}", set.id))
                .header("authorization", &admin),
        );
        probes.push(probe("GET", format!("{agents}/{id}?{v}")).header("authorization", &admin));
        probes.push(probe("DELETE", format!("{agents}/{id}?{v}")).header("authorization", &admin));
        probes.push(
            probe("DELETE", format!("{}/{id}", session.message_queue_url))
                .header("authorization", &queue),
        );
        probes.push(probe(
            "POST",
            sim.url(&format!("/api/v3/app/installations/{id}/access_tokens")),
        ));
        probes.push(probe("DELETE", sim.url(&format!("/_sim/scalesets/{id}"))));
        probes.push(probe(
            "POST",
            sim.url(&format!("/_sim/scalesets/{id}/evict-session")),
        ));
    }
    // REST paths other tools call, with odd scopes and file names, and repeated slashes.
    let pat = format!("Bearer {}", crate::helpers::PAT);
    for scope in [
        "orgs/%00",
        "orgs/..",
        "repos/acme",
        "repos/a/b/c",
        "enterprises/",
        &format!("orgs/{huge}"),
        "orgs/acme/extra",
    ] {
        for method in ["GET", "POST", "DELETE"] {
            probes.push(
                probe(
                    method,
                    sim.url(&format!("/api/v3/{scope}/actions/runners/downloads")),
                )
                .header("authorization", &pat),
            );
        }
    }
    for file in ["%00", "..%2F..%2Fetc%2Fpasswd", huge, "a.zip", "x/y"] {
        for tag in ["v2.330.0", "v", huge, "%2e%2e"] {
            probes.push(probe(
                "GET",
                sim.url(&format!("/actions/runner/releases/download/{tag}/{file}")),
            ));
        }
    }
    for (method, path) in [
        ("POST", "/api/v3/rate_limit"),
        ("DELETE", "/api/v3/rate_limit"),
        ("GET", "/api/v3/rate_limit/core"),
        ("GET", "////"),
        ("GET", "//api//v3//rate_limit//"),
        ("PUT", "/actions/runner-registration"),
        ("POST", "//actions//runner-registration//"),
        ("GET", "/actions/runner/releases/download/"),
    ] {
        probes.push(probe(method, sim.url(path)).body("{not json"));
    }
    // Bad and huge query values.
    for value in ["abc", huge, "-1", ""] {
        probes.push(
            probe("GET", format!("{sets}?runnerGroupId={value}&name=x&{v}"))
                .header("authorization", &admin),
        );
    }
    // Queue: bad cursors and capacities (the 202 of an empty poll is fine; 4xx is too).
    for (cursor, capacity) in [
        ("abc", "1"),
        (huge, "1"),
        ("-7", "-1"),
        ("0", huge),
        ("0", "x"),
    ] {
        probes.push(
            probe(
                "GET",
                format!("{}?lastMessageId={cursor}", session.message_queue_url),
            )
            .header("authorization", &queue)
            .header("x-scalesetmaxcapacity", capacity),
        );
    }
    // Missing and garbled credentials on every surface.
    for auth in [
        None,
        Some("Bearer"),
        Some("Bearer "),
        Some("garbage"),
        Some("Bearer a.b.c"),
    ] {
        let with = |p: Probe| match auth {
            Some(a) => p.header("authorization", a),
            None => p,
        };
        probes.push(with(probe("GET", format!("{sets}?{v}"))));
        probes.push(with(probe("GET", session.message_queue_url.clone())));
        probes.push(with(probe("POST", format!("{sets}/{}/acquirejobs?{v}", set.id))).body("[1]"));
        probes.push(with(probe(
            "POST",
            sim.url("/api/v3/orgs/acme/actions/runners/registration-token"),
        )));
        probes.push(with(probe(
            "POST",
            sim.url("/api/v3/app/installations/1/access_tokens"),
        )));
        for path in [
            "/api/v3/actions/runner-registration",
            "/actions/runner-registration",
        ] {
            probes.push(
                with(probe("POST", sim.url(path)))
                    .body(r#"{"url":"http://x/acme","runner_event":"register"}"#),
            );
        }
        probes.push(with(probe(
            "GET",
            sim.url("/api/v3/orgs/acme/actions/runners/downloads"),
        )));
        probes.push(with(probe("GET", sim.url("/api/v3/rate_limit"))));
    }
    // Control API: bad JSON, wrong types, huge numbers.
    for (path, body) in [
        ("jobs", "{not json"),
        ("jobs", r#"{"scaleSetId": "one"}"#),
        ("jobs", r#"{"scaleSetId": 99999999999999999999999999}"#),
        ("jobs", r#"{"scaleSetId": 424242, "count": 1}"#),
        ("jobs", r#"{"scaleSetId": 1, "count": -1}"#),
        ("jobs", r#"{"scaleSetId": 1, "count": 4294967295}"#),
        ("jobs", r#"{"scaleSetId": 1, "count": 4294967296}"#),
        ("jobs", r#"{"scaleSetId": 1, "runSeconds": 1e400}"#),
        ("jobs", r#"{"scaleSetId": 1, "runSeconds": -1}"#),
        ("jobs", r#"{"scaleSetId": 1, "runSeconds": 1e300}"#),
        ("time/advance", r#"{"seconds": -1}"#),
        ("time/advance", r#"{"seconds": 1e400}"#),
        ("time/advance", r#"{"seconds": 1e300}"#),
        ("time/advance", "[]"),
        ("runners", r#"{"jitConfig": 5}"#),
        ("runners", r#"{"jitConfig": "eyJ4Ijoi"}"#),
        ("foreign", r#"{"scope": "", "name": "", "ownerName": ""}"#),
        (
            "foreign",
            r#"{"scope": "a/b/c/d", "name": "x", "ownerName": "o"}"#,
        ),
        (
            "foreign",
            r#"{"scope": "acme", "name": "y", "ownerName": "o", "runnerGroupId": 99999999999999999999999}"#,
        ),
        ("runner-groups", r#"{"scope": "acme", "name": ""}"#),
        (
            "runner-groups",
            r#"{"scope": "nowhere/at/all/x", "name": "g"}"#,
        ),
    ] {
        probes.push(probe("POST", sim.url(&format!("/_sim/{path}"))).body(body));
    }
    probes.push(probe("PUT", sim.url("/_sim/faults")).body("{not json"));
    probes.push(probe("PUT", sim.url("/_sim/faults")).body(r#"{"latencyMs": -1}"#));
    probes.push(
        probe("PUT", sim.url("/_sim/faults"))
            .body(r#"{"serverErrors": {"remaining": 99999999999999, "status": 500}}"#),
    );
    for fault in [
        r#"{"restRateLimit": {"remaining": 1}}"#,
        r#"{"restRateLimit": {"remaining": 1, "answer": "nope", "waitSecs": 1}}"#,
        r#"{"restRateLimit": {"remaining": 1, "answer": "retryAfter429", "waitSecs": -1}}"#,
        r#"{"restRateLimit": {"remaining": 1, "answer": "retryAfter429", "waitSecs": 1e400}}"#,
        r#"{"restRateLimit": {"remaining": 1, "answer": "remainingZero403", "waitSecs": 99999999999999999999999}}"#,
        r#"{"restRateLimit": {"remaining": 1, "answer": "retryAfter403", "waitSecs": 1, "extra": 1}}"#,
        r#"{"restRateLimit": "yes"}"#,
    ] {
        probes.push(probe("PUT", sim.url("/_sim/faults")).body(fault));
    }

    for p in &probes {
        let headers: Vec<(&str, &str)> = p.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let what = format!("{} {} {:?}", p.method, p.url, p.body);
        let answer = tokio::time::timeout(
            Duration::from_secs(30),
            raw(p.method, &p.url, &headers, p.body.as_deref()),
        )
        .await
        .with_context(|| format!("no answer within 30 s: {what}"))?
        .with_context(|| format!("no HTTP answer (did the handler panic?): {what}"))?;
        assert!(
            answer.status < 500,
            "{what} answered {}: {:?}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
    }
    // No fault was armed by the battery, and the simulator still serves the real client.
    assert_eq!(sim.sim.faults(), scaleset_sim::Faults::default());
    assert_eq!(client.get_scale_set(set.id).await?.id, set.id);
    sim.stop().await
}
