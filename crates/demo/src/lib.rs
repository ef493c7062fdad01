//! `scaleset-demo`: the one-command demo of scaleset on one machine, with no GitHub account, no
//! cloud and no database server. One [`Demo`] runs, in process:
//!
//! - the simulator (`scaleset-sim`) as "GitHub", serving on a loopback port, its world saved in
//!   the data directory so a restart finds the same scale sets, sessions, runners and jobs;
//! - a fake cloud ([`scaleset_provider::DirectoryProvider`]) whose machines are files in the
//!   data directory and "boot" simulated runners that take their jobs and finish them;
//! - SQLite in the data directory, with the controller id and encryption key pinned beside it;
//! - a declared fleet of three scale sets in organization `acme`, one of them already on the
//!   simulated GitHub with our owner label (so the first run adopts it); and another
//!   controller's scale set and machine beside them, which a decommission must leave alone;
//! - a configuration naming all of the above, built into a process by `scaleset-app`'s
//!   `App::build`, the one composition root the worker and `scaleset-server --with-worker` use
//!   too: the fleet applied by `apply_declared`, the fake provider from `[fake]`, and the
//!   control loop serving them; and a steady, bounded stream of jobs.
//!
//! Delete the database between two runs and the next one rebuilds it through the production
//! path: every scale set comes back adopted, none is created, and the running machines are
//! re-recorded. `scaleset-server demo` serves the HTTP API and the status page from
//! [`Demo::app`].
//!
//! **What it deliberately does not do.** It talks to no real GitHub or cloud, and it is not a
//! way to run production fleets: the simulator's PAT and the demo App's key
//! (`assets/demo-app-key.pem`, copied to `github-app.pem` in the data directory) are public,
//! and its runners are state transitions. The fleet authenticates as a GitHub App, the way
//! most organizations connect a manager, and the simulated GitHub checks its JWTs' signatures. DESIGN allows the server to depend on the simulator only for this demo.
//!
//! ```no_run
//! # async fn demo() -> Result<(), scaleset_demo::Error> {
//! let mut options = scaleset_demo::DemoOptions::new("/tmp/scaleset-demo".into());
//! options.github_listen = "127.0.0.1:0".parse().expect("an address");
//! let demo = scaleset_demo::Demo::start(options).await?;
//! println!("GitHub (simulated) at {}", demo.github_url());
//! demo.stop().await?;
//! # Ok(())
//! # }
//! ```

mod data_dir;
mod demo;
mod error;
mod fleet;
mod github;
mod jobs;
mod machine;

pub use data_dir::DataDir;
pub use demo::{Demo, DemoOptions};
pub use error::Error;
pub use fleet::{
    CREDENTIALS, Declared, FLEET, FOREIGN_CONTROLLER, FOREIGN_INSTANCE, FOREIGN_SCALE_SET,
    PROVIDER, spec,
};
pub use github::{APP_ID, INSTALLATION_ID, ORGANIZATION, PAT, sim_config};
pub use jobs::JobStream;
