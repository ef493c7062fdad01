//! Helpers for scaleset's whole-system tests: a GitHub simulator serving on a loopback port for
//! the duration of a test, stopped (and awaited) when the test is done.
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
//! github.stop().await
//! # }
//! ```

pub mod adoption_driver;

use std::net::SocketAddr;

use anyhow::{Context, Result};
use scaleset_sim::{SimConfig, Simulator};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A simulator serving on `127.0.0.1:0`.
#[derive(Debug)]
pub struct RunningSim {
    /// The handle that steers it (enqueue jobs, faults, time, runners).
    pub sim: Simulator,
    /// Where it listens.
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<Result<(), scaleset_sim::Error>>>,
}

impl RunningSim {
    /// Binds a loopback port and serves a simulator built from `config`.
    pub async fn start(config: SimConfig) -> Result<Self> {
        let sim = Simulator::new(config).context("invalid simulator configuration")?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot bind a loopback port")?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let (sim, stop) = (sim.clone(), stop.clone());
            async move { sim.serve(listener, stop.cancelled_owned()).await }
        });
        Ok(Self {
            sim,
            addr,
            stop,
            task: Some(task),
        })
    }

    /// `http://ADDR{path}`, e.g. the config URL `url("/acme")`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops serving and waits for the server to return.
    pub async fn stop(mut self) -> Result<()> {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.await.context("the simulator task panicked")??;
        }
        Ok(())
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
