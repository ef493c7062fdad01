//! Helpers for scaleset's whole-system tests: a GitHub simulator serving on a loopback port for
//! the duration of a test ([`RunningSim`], `scaleset-sim`'s harness), stopped when the test is done.
//!
//! It also holds [`adoption_driver`], the adoption tests' back-to-back retry loop around the one
//! adoption driver, `scaleset_control::adoption::run_once` (the controller's own), which runs
//! the machine of `scaleset-adopt` through the real `scaleset-github` client.
//!
//! It deliberately holds no test logic; the tests live in `e2e/`. It is a test-only package:
//! nothing depends on it, which is why it may use our crates as normal dependencies.
//!
//! Main types: [`RunningSim`], and [`adoption_driver::ensure`] / [`adoption_driver::run_once`]
//! with their [`adoption_driver::Run`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> anyhow::Result<()> {
//! let github = scaleset_e2e::RunningSim::start(scaleset_sim::SimConfig::default()).await?;
//! assert!(github.url("/acme").starts_with("http://127.0.0.1:"));
//! Ok(github.stop().await?)
//! # }
//! ```

pub mod adoption_driver;

/// The simulator serving on `127.0.0.1:0` that every test here talks to (the simulator's own
/// harness, re-exported so the tests name one thing).
pub use scaleset_sim::RunningSim;
