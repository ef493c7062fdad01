//! HTTPS against a local server whose certificate is issued by a CA generated in the test:
//! trusted through `with_ca_bundle_pem`, rejected (without retries) otherwise.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, Error, GithubScaleSetId};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::helpers::{RecordingSleeper, admin_jwt};

pub(crate) struct TlsServer {
    pub(crate) port: u16,
    pub(crate) ca_pem: String,
    pub(crate) task: tokio::task::JoinHandle<()>,
}

async fn respond(
    request: Request<Incoming>,
    port: u16,
    admin: String,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match (request.method().as_str(), request.uri().path()) {
        ("POST", "/api/v3/orgs/tls-org/actions/runners/registration-token") => (201, r#"{"token":"reg"}"#.to_owned()),
        ("POST", "/api/v3/actions/runner-registration") => (
            201,
            serde_json::json!({"url": format!("https://127.0.0.1:{port}/tenant/1/"), "token": admin}).to_string(),
        ),
        ("GET", "/tenant/1/_apis/runtime/runnerscalesets/5") => (200, r#"{"id":5,"name":"over-tls"}"#.to_owned()),
        _ => (404, "404 page not found".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    Ok(response)
}

pub(crate) async fn tls_server() -> TlsServer {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "scaleset test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let server_cert = server_params.signed_by(&server_key, &ca).unwrap();

    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![server_cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
    )
    .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let admin = admin_jwt("tls", 3600);
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                break;
            };
            let acceptor = acceptor.clone();
            let admin = admin.clone();
            tokio::spawn(async move {
                // Handshake failures (the untrusting client) just end the connection.
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = service_fn(move |request| respond(request, port, admin.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    TlsServer {
        port,
        ca_pem: ca.pem(),
        task,
    }
}

#[tokio::test]
async fn https_with_a_custom_ca_bundle() {
    let server = tls_server().await;
    let url = ConfigUrl::parse(&format!("https://127.0.0.1:{}/tls-org", server.port)).unwrap();
    let config = ClientConfig::new(url, Credentials::pat("pat"))
        .with_ca_bundle_pem(server.ca_pem.clone())
        .with_sleeper(Arc::new(RecordingSleeper::default()));
    let client = Client::new(config).unwrap();
    let set = client.get_scale_set(GithubScaleSetId(5)).await.unwrap();
    assert_eq!(set.name, "over-tls");
    server.task.abort();
}

#[tokio::test]
async fn an_untrusted_certificate_fails_without_retries() {
    let server = tls_server().await;
    let url = ConfigUrl::parse(&format!("https://127.0.0.1:{}/tls-org", server.port)).unwrap();
    let sleeper = Arc::new(RecordingSleeper::default());
    let client =
        Client::new(ClientConfig::new(url, Credentials::pat("pat")).with_sleeper(sleeper.clone()))
            .unwrap();
    let err = client.get_scale_set(GithubScaleSetId(5)).await.unwrap_err();
    assert!(matches!(err.unshared(), Error::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("with_ca_bundle_pem"), "{err}");
    assert_eq!(err.class(), scaleset_github::ErrorClass::Fatal);
    assert!(sleeper.waits().is_empty());
    server.task.abort();
}

#[test]
fn an_invalid_ca_bundle_is_refused() {
    let url = ConfigUrl::parse("https://ghes.local/org").unwrap();
    let err =
        Client::new(ClientConfig::new(url, Credentials::pat("p")).with_ca_bundle_pem("not pem"))
            .unwrap_err();
    assert!(matches!(err, Error::InvalidCaBundle { .. }), "{err}");
}

/// The system trust store is a choice of its own: it does not contain the test CA, so the
/// server is refused as untrusted (on a machine without a store, building says so instead).
#[tokio::test]
async fn the_system_trust_store_is_offered_and_does_not_trust_a_private_ca() {
    let server = tls_server().await;
    let url = ConfigUrl::parse(&format!("https://127.0.0.1:{}/tls-org", server.port)).unwrap();
    let config = ClientConfig::new(url, Credentials::pat("pat"))
        .with_trust_roots(scaleset_github::TrustRoots::System)
        .with_sleeper(Arc::new(RecordingSleeper::default()));
    assert!(format!("{config:?}").contains("System"));
    match Client::new(config) {
        Ok(client) => {
            let err = client.get_scale_set(GithubScaleSetId(5)).await.unwrap_err();
            assert!(matches!(err.unshared(), Error::Tls { .. }), "{err:?}");
        }
        Err(err) => assert!(
            matches!(&err, Error::InvalidConfig { reason } if reason.contains("system trust store")),
            "{err}"
        ),
    }
    // Trusting the bundle instead reaches the server, and Debug shows only the bundle's size.
    let config = ClientConfig::new(
        ConfigUrl::parse(&format!("https://127.0.0.1:{}/tls-org", server.port)).unwrap(),
        Credentials::pat("pat"),
    )
    .with_trust_roots(scaleset_github::TrustRoots::CaBundle(
        server.ca_pem.clone().into(),
    ))
    .with_sleeper(Arc::new(RecordingSleeper::default()));
    assert!(!format!("{config:?}").contains("BEGIN CERTIFICATE"));
    let client = Client::new(config).unwrap();
    assert_eq!(
        client
            .get_scale_set(GithubScaleSetId(5))
            .await
            .unwrap()
            .name,
        "over-tls"
    );
    server.task.abort();
}
