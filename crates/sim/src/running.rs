//! [`RunningSim`]: a simulator serving on a loopback port of its own until it is stopped or
//! dropped, the one harness that the simulator's, the client's, control's, the worker's and the
//! whole-system tests (and examples) all start GitHub with.

use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;
use crate::error::Error;
use crate::simulator::Simulator;

/// A [`Simulator`] serving on `127.0.0.1:0` (a free port the system picks, so tests running
/// side by side never collide).
///
/// Dropping it stops the server; [`RunningSim::stop`] also waits for it to return and reports
/// how it ended.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), scaleset_sim::Error> {
/// let github = scaleset_sim::RunningSim::start(scaleset_sim::SimConfig::default()).await?;
/// assert!(github.url("/acme").starts_with("http://127.0.0.1:"));
/// github.stop().await
/// # }
/// ```
#[derive(Debug)]
pub struct RunningSim {
    /// The handle that steers it (enqueue jobs, faults, time, runners).
    pub sim: Simulator,
    /// Where it listens.
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<Result<(), Error>>>,
}

impl RunningSim {
    /// Builds a simulator from `config`, binds a loopback port and serves it on a task of the
    /// current runtime.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a bad configuration, [`Error::Io`] when no loopback port
    /// can be bound.
    pub async fn start(config: SimConfig) -> Result<Self, Error> {
        let sim = Simulator::new(config)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|source| Error::Io {
                action: "bind a loopback port for the simulator",
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Io {
            action: "read the listener's address",
            source,
        })?;
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
    ///
    /// # Errors
    ///
    /// The error the server ended with.
    ///
    /// # Panics
    ///
    /// Re-raises a panic of the server task, so a test sees it rather than a silent stop.
    pub async fn stop(mut self) -> Result<(), Error> {
        self.stop.cancel();
        match self.task.take() {
            Some(task) => match task.await {
                Ok(served) => served,
                Err(joined) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
                Err(_) => Ok(()),
            },
            None => Ok(()),
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
