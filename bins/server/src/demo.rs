//! Wiring for `scaleset-server demo`: the whole product in one process on a data directory
//! (`scaleset_demo::Demo`: simulated GitHub, fake cloud, SQLite, the process built by
//! `scaleset_app::App` as `serve --with-worker` builds it, a job stream), the API and status
//! page served over its store, a freshly minted API token, and a banner saying where
//! everything is. Runs until SIGINT (Ctrl-C) or SIGTERM.

use anyhow::{Context as _, Result};
use scaleset_app::console::init_tracing;
use scaleset_app::{Deferred, Exit, errln, out, outln};
use scaleset_demo::{Demo, DemoOptions};
use scaleset_store::ExposeSecret as _;
use tokio_util::sync::CancellationToken;

use crate::cli::{Args, DemoArgs};

/// `scaleset-server demo`: refuses the flags the demo does not take, then runs it until a signal.
pub(crate) fn main(args: &Args, demo: DemoArgs, signals: Deferred) -> Exit {
    if args.config.is_some() || args.with_worker {
        errln!(
            "scaleset-server demo: the demo takes no --config or --with-worker: it makes its \
             own configuration and always runs the worker (scaleset-server demo --help)"
        );
        return Exit::Failed;
    }
    init_tracing(args.log_format, "warn");
    // The demo's store keeps the default pool of 8 connections.
    scaleset_app::block_on("scaleset-server", 8, run(demo, signals))
}

async fn run(args: DemoArgs, signals: Deferred) -> Result<()> {
    // Installed first (blocked since main's first line), so a Ctrl-C at any point is a clean
    // stop.
    let signals = signals
        .install()
        .context("installing the SIGTERM and SIGINT handlers")?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (pass --listen ADDR, or 127.0.0.1:0 for any free port)",
                args.listen
            )
        })?;
    let listen = listener.local_addr().context("reading the bound address")?;
    let mut options = DemoOptions::new(args.data_dir.clone());
    // The fake machines boot as GARM's images do, through this server's metadata endpoints.
    options.settings.instance_api_url =
        Some(url::Url::parse(&format!("http://{listen}")).context("the demo's own URL")?);
    options.github_listen = args.github_listen;
    options.reset = args.reset;
    let mut demo = Demo::start(options)
        .await
        .with_context(|| format!("starting the demo in {}", args.data_dir.display()))?;
    let name = format!("demo-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let (_, token) = demo
        .store()
        .create_api_token(&name)
        .await
        .context("minting the demo's API token")?;
    let stop = CancellationToken::new();
    let server = tokio::spawn(scaleset_api::serve(
        listener,
        demo.app().api_router(),
        None,
        stop.clone().cancelled_owned(),
    ));
    out!(
        "{}",
        banner(&demo, &format!("http://{listen}"), token.expose_secret())
    );

    let outcome = tokio::select! {
        signal = signals.wait() => {
            tracing::info!(signal, "stopping the demo");
            Ok(())
        }
        failed = demo.failed() => Err(anyhow::Error::new(failed)),
    };
    stop.cancel();
    let served = server.await;
    let stopped = demo.stop().await.context("stopping the demo");
    outcome?;
    served.context("the API server panicked")?;
    stopped?;
    outln!("demo stopped; run the same command again to resume");
    Ok(())
}
/// What the demo prints when it is ready (the README shows it).
fn banner(demo: &Demo, api: &str, token: &str) -> String {
    let dir = demo.data_dir();
    let run = if demo.first_run() {
        "first run: the simulated GitHub was seeded, one scale set already on it"
    } else if demo.declared() > 0 {
        "the database was missing: the fleet is declared again and will be adopted"
    } else {
        "resumed"
    };
    let ctl = "cargo run --release --bin scalesetctl --";
    format!(
        "scaleset demo is running ({run})\n\
         \n\
         \x20 status page       {api}/   (sign in with the API token)\n\
         \x20 API               {api}/api/v1\n\
         \x20 API token         {token}\n\
         \x20 simulated GitHub  {github}   (organization acme; control API under /_sim/)\n\
         \x20 data directory    {data}\n\
         \n\
         Try (the token in the environment, not on the command line, where the process list\n\
         shows it to every local user):\n\
         \x20 export SCALESET_URL={api} SCALESET_TOKEN={token}\n\
         \x20 {ctl} scale-set list\n\
         \x20 {ctl} instance list --scale-set linux-x64\n\
         \n\
         Rehearse a disaster: Ctrl-C, delete {db}, run the same command again\n\
         (docs/quickstart.md). Ctrl-C stops everything; --reset starts over.\n",
        github = demo.github_url(),
        data = dir.root().display(),
        db = dir.database().display(),
    )
}
