//! The simulated GitHub of the demo: a `scaleset-sim` served on a loopback port, its world
//! loaded from and saved to the data directory (every few seconds and when the demo stops), and
//! the boot hook through which the fake cloud's machines start their runners in it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::chain;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// The organization the demo's scale sets live in.
pub const ORGANIZATION: &str = "acme";
/// The PAT the simulated GitHub accepts (the simulator's default seed).
pub const PAT: &str = "ghp_simulator";

/// How often the simulated world is written to disk while the demo runs.
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// The simulator's settings for the demo: the default seed (organization `acme`, PAT
/// `ghp_simulator`), `JobStarted` at once, owner names in session conflicts, and sessions that
/// expire after two minutes unpolled (so a demo killed with kill -9 is not locked out of its
/// own scale sets for long).
pub fn sim_config() -> SimConfig {
    let mut config = SimConfig {
        job_started_delay: Duration::ZERO,
        ..SimConfig::default()
    };
    config.conflict_names_owner = true;
    config.session_expiry = Some(Duration::from_secs(120));
    config.long_poll_hold = Duration::from_secs(20);
    config
}

/// The simulated GitHub, serving.
pub(crate) struct Github {
    pub(crate) sim: Simulator,
    pub(crate) addr: SocketAddr,
    path: PathBuf,
    stop: CancellationToken,
    server: JoinHandle<Result<(), scaleset_sim::Error>>,
    saver: JoinHandle<()>,
}

impl Github {
    /// Loads the world from `path` (or seeds a new one) and serves it on `listen`. Returns
    /// whether the world is new.
    pub(crate) async fn start(
        config: SimConfig,
        path: PathBuf,
        listen: SocketAddr,
    ) -> Result<(Self, bool), Error> {
        let fresh = !path.exists();
        let sim = Simulator::with_saved_state(config, &path)?;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| Error::Listen {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Listen {
            addr: listen,
            source,
        })?;
        let stop = CancellationToken::new();
        let server = tokio::spawn({
            let (sim, stop) = (sim.clone(), stop.clone());
            async move { sim.serve(listener, stop.cancelled_owned()).await }
        });
        let saver = tokio::spawn({
            let (sim, stop, path) = (sim.clone(), stop.clone(), path.clone());
            async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(SAVE_EVERY) => {}
                    }
                    if let Err(e) = sim.save_state(&path) {
                        tracing::warn!(error = %chain(&e), "cannot save the simulated GitHub");
                    }
                }
            }
        });
        Ok((
            Self {
                sim,
                addr,
                path,
                stop,
                server,
                saver,
            },
            fresh,
        ))
    }

    /// `http://ADDR/`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Writes the world now.
    pub(crate) fn save(&self) -> Result<(), Error> {
        Ok(self.sim.save_state(&self.path)?)
    }

    /// Stops serving and writes the world a last time.
    pub(crate) async fn stop(self) -> Result<(), Error> {
        self.stop.cancel();
        let _ = self.saver.await;
        match self.server.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(e) => tracing::warn!(error = %e, "the simulated GitHub's task ended abnormally"),
        }
        Ok(self.sim.save_state(&self.path)?)
    }
}
