//! Exchange-level tests of `scaleset-github` against mockito (plain HTTP) and a local HTTPS
//! server with a test CA: every endpoint, the token chain, errors, retries and sessions.
//!
//! `data/test-app-key.pem` is a throwaway RSA key generated for these tests only.

mod endpoints;
mod errors;
mod helpers;
mod https;
mod observer;
mod proxy;
mod retries;
mod secrets;
mod sessions;
mod tokens;
