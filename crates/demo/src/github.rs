//! The simulated GitHub of the demo: a `scaleset-sim` served on a loopback port, its world
//! loaded from and saved to the data directory (every few seconds and when the demo stops), and
//! the boot hook through which the fake cloud's machines start their runners in it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use scaleset_sim::{AppPublicKey, AppSeed, InstallationSeed, SimConfig, Simulator};
use scaleset_store::chain;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// The organization the demo's scale sets live in.
pub const ORGANIZATION: &str = "acme";
/// The PAT the simulated GitHub accepts (the simulator's default seed).
pub const PAT: &str = "ghp_simulator";

/// The GitHub App the demo's fleet authenticates as, and its installation on `acme`.
pub const APP_ID: i64 = 31;
/// The installation of [`APP_ID`] on [`ORGANIZATION`].
pub const INSTALLATION_ID: i64 = 3101;
/// The App's private key. ring (the one crypto library of the build) cannot generate RSA
/// keys and the `rsa` crate would be a heavy dependency for a demo, so the demo ships one
/// fixed key, for the simulated GitHub only: it is public, registered nowhere else, and
/// written into the data directory so the fleet reads it the way an operator's
/// `private_key_file` is read.
pub(crate) const APP_KEY: &str = include_str!("../assets/demo-app-key.pem");

/// How often the simulated world is written to disk while the demo runs.
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// The simulator's settings for the demo: the default seed (organization `acme`, PAT
/// `ghp_simulator` for exploring with `scalesetctl`), the demo's GitHub App [`APP_ID`]
/// registered with its public key (so its JWTs are signature-checked) and installed on
/// `acme` as [`INSTALLATION_ID`], `JobStarted` at once, owner names in session conflicts, and sessions that
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
    match AppPublicKey::of_private_key_pem(APP_KEY) {
        Ok(public_key) => {
            config.apps.push(AppSeed {
                id: APP_ID.to_string(),
                client_id: None,
                public_key,
            });
            config.installations.push(InstallationSeed {
                id: INSTALLATION_ID,
                app_id: APP_ID.to_string(),
                accounts: vec![ORGANIZATION.to_owned()],
            });
        }
        // The committed key parses (a test says so); were it not to, the App's token fetch
        // is refused with a message naming the App, not a panic.
        Err(e) => tracing::error!(error = %e, "the demo's App key does not parse"),
    }
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
    #[allow(
        clippy::disallowed_methods,
        reason = "the demo saves the simulator's state every interval"
    )]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_app_is_registered_with_the_committed_key_and_installed_on_acme() {
        let config = sim_config();
        assert_eq!(config.apps.len(), 1);
        assert_eq!(config.apps[0].id, APP_ID.to_string());
        assert_eq!(
            config.apps[0].public_key,
            AppPublicKey::of_private_key_pem(APP_KEY).expect("the committed key parses")
        );
        let installation = config
            .installations
            .iter()
            .find(|i| i.id == INSTALLATION_ID)
            .expect("the demo's installation");
        assert_eq!(installation.app_id, APP_ID.to_string());
        assert_eq!(installation.accounts, [ORGANIZATION]);
    }
}
