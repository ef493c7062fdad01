//! GitHub Apps checked as GitHub checks them: an App registered with its public key, JWTs
//! signed with another key, expired or issued in the future refused with GitHub's 401 and
//! message, an unknown installation refused, and installation tokens that expire in
//! simulated time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use scaleset_github::Credentials;
use scaleset_sim::{AppPublicKey, AppSeed, SimConfig};

use crate::helpers::{TestSim, config, fast_retry, post_as};

const APP_KEY: &str = include_str!("app-key.pem");
const OTHER_KEY: &str = include_str!("other-app-key.pem");

/// The default seed with App `1` (client id `Iv1.sim`) registered with the key of
/// `app-key.pem`: its JWTs must be signed with that key.
fn checked() -> SimConfig {
    let mut cfg = config();
    cfg.apps.push(AppSeed {
        id: "1".to_owned(),
        client_id: Some("Iv1.sim".to_owned()),
        public_key: AppPublicKey::of_private_key_pem(APP_KEY).expect("test key"),
    });
    cfg
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An RS256 JWT over `claims`, signed with the PKCS#8 `app-key.pem`.
fn signed(claims: &serde_json::Value) -> String {
    let der: String = APP_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(der)
        .expect("test key");
    let pair = RsaKeyPair::from_pkcs8(&der).expect("RSA key");
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut signature,
    )
    .expect("sign");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

async fn access_tokens(sim: &TestSim, installation: i64, jwt: &str) -> Result<(u16, String)> {
    let answer = post_as(
        &sim.url(&format!(
            "/api/v3/app/installations/{installation}/access_tokens"
        )),
        jwt,
    )
    .await?;
    let message = answer.json()?["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((answer.status, message))
}

#[tokio::test]
async fn a_jwt_signed_with_the_wrong_key_is_refused_with_githubs_message() -> Result<()> {
    let sim = TestSim::start(checked()).await?;
    let right = sim.client_with("acme", Credentials::app("1", 1, APP_KEY), fast_retry())?;
    right.service_url().await?;
    let by_client_id = sim.client_with(
        "acme",
        Credentials::app("Iv1.sim", 1, APP_KEY),
        fast_retry(),
    )?;
    by_client_id.service_url().await?;

    let wrong = sim.client_with("acme", Credentials::app("1", 1, OTHER_KEY), fast_retry())?;
    let err = wrong
        .service_url()
        .await
        .expect_err("signed with another key");
    assert_eq!(err.status(), Some(401), "{err:#}");
    assert!(
        format!("{err:#}").contains("A JSON web token could not be decoded"),
        "{err:#}"
    );
    let log = sim.sim.request_log();
    assert_eq!(
        log.iter()
            .filter(|r| r.endpoint == "installation_token")
            .map(|r| r.status)
            .collect::<Vec<_>>(),
        [201, 201, 401],
        "only the JWT signed with the registered key got a token"
    );
    sim.stop().await
}

#[tokio::test]
async fn an_expired_a_future_or_a_too_long_jwt_is_refused() -> Result<()> {
    let sim = TestSim::start(checked()).await?;
    let t = now();
    let expired = serde_json::json!({"iat": t - 700, "exp": t - 100, "iss": "1"});
    assert_eq!(
        access_tokens(&sim, 1, &signed(&expired)).await?,
        (
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires".to_owned()
        )
    );
    let future = serde_json::json!({"iat": t + 120, "exp": t + 500, "iss": "1"});
    assert_eq!(
        access_tokens(&sim, 1, &signed(&future)).await?,
        (
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued".to_owned()
        )
    );
    let too_long = serde_json::json!({"iat": t - 60, "exp": t + 3600, "iss": "1"});
    assert_eq!(
        access_tokens(&sim, 1, &signed(&too_long)).await?,
        (
            401,
            "'Expiration time' claim ('exp') is too far in the future".to_owned()
        )
    );
    // What the client sends passes: back-dated 60 s, valid 9 min.
    let client = serde_json::json!({"iat": t - 60, "exp": t + 480, "iss": "1"});
    assert_eq!(access_tokens(&sim, 1, &signed(&client)).await?.0, 201);
    // The claims are judged on the wall clock, which advancing simulated time does not move:
    // the client signs with its own clock.
    sim.sim.advance(Duration::from_secs(2 * 3600));
    assert_eq!(access_tokens(&sim, 1, &signed(&client)).await?.0, 201);
    sim.stop().await
}

#[tokio::test]
async fn an_unknown_installation_or_app_is_refused() -> Result<()> {
    let sim = TestSim::start(checked()).await?;
    let unknown = sim.client_with("acme", Credentials::app("1", 99, APP_KEY), fast_retry())?;
    let err = unknown.service_url().await.expect_err("no installation 99");
    assert_eq!(err.status(), Some(404), "{err:#}");
    let t = now();
    let stranger = serde_json::json!({"iat": t - 60, "exp": t + 480, "iss": "2"});
    assert_eq!(
        access_tokens(&sim, 1, &signed(&stranger)).await?,
        (401, "Integration not found".to_owned())
    );
    assert_eq!(sim.sim.request_count("registration_token"), 0);
    sim.stop().await
}

#[tokio::test]
async fn installation_tokens_expire_after_an_hour_of_simulated_time() -> Result<()> {
    let sim = TestSim::start(checked()).await?;
    let t = now();
    let jwt = signed(&serde_json::json!({"iat": t - 60, "exp": t + 480, "iss": "1"}));
    let minted = post_as(&sim.url("/api/v3/app/installations/1/access_tokens"), &jwt).await?;
    assert_eq!(minted.status, 201);
    let token = minted.json()?["token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let registration = sim.url("/api/v3/orgs/acme/actions/runners/registration-token");
    assert_eq!(post_as(&registration, &token).await?.status, 201);
    sim.sim.advance(Duration::from_secs(3600));
    let expired = post_as(&registration, &token).await?;
    assert_eq!(expired.status, 401);
    assert_eq!(expired.json()?["message"], "Bad credentials");
    // The client mints a new one on its next chain run.
    let client = sim.client_with("acme", Credentials::app("1", 1, APP_KEY), fast_retry())?;
    client.service_url().await?;
    assert_eq!(sim.sim.request_count("installation_token"), 2);
    sim.stop().await
}
