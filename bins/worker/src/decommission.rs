//! `scaleset-worker decommission`: the plan printed, then applied only with `--apply` and only
//! as reviewed (`--digest`). The decisions are the control crate's decommission planner's; this
//! reads the arguments and prints.
//!
//! Exit codes (`scaleset_app::Exit`, the table in docs/cli.md, the same as `scalesetctl
//! decommission`'s): 0 (a plan with nothing to do, or applied with nothing of ours left), 1 (bad
//! arguments, a read or a step failed), 2 (a plan with work in it, shown and not applied; or
//! refused: the plan changed since it was reviewed, or the configuration is invalid), 3
//! (applied, but busy runners of ours were left: see the output).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use scaleset_app::decommission_types::{
    DecommissionAct, DecommissionError, DecommissionOptions, DecommissionPlan, DecommissionWhy,
    PlanDigest, parse_scope,
};
use scaleset_app::{Env, Exit, errln, outln};
use scaleset_config::Config;
use tokio_util::sync::CancellationToken;

/// The decommission's arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct DecommissionArgs {
    /// Only this entity (its path: `acme` for an organization, `acme/web` for a repository).
    #[arg(long, value_name = "ENTITY")]
    entity: Option<String>,
    /// Only this scale set of --entity.
    #[arg(long, value_name = "NAME", requires = "entity")]
    scale_set: Option<String>,
    /// Delete scale sets we adopted too (they are detached otherwise: left on GitHub).
    #[arg(long)]
    include_adopted: bool,
    /// Wait this long for busy runners (e.g. 10m); 0 does not wait.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration)]
    wait: Duration,
    /// Kill runners still busy when --wait runs out (their jobs fail), instead of leaving them.
    #[arg(long)]
    force_busy: bool,
    /// Read no database even if there is one: plan from GitHub and the providers alone.
    #[arg(long)]
    no_database: bool,
    /// Carry the plan out (without it, only print it).
    #[arg(long, requires = "digest")]
    apply: bool,
    /// The digest of the reviewed plan: apply refuses if the plan is not that one any more.
    #[arg(long, value_name = "HEX", value_parser = digest)]
    digest: Option<PlanDigest>,
}

fn duration(text: &str) -> Result<Duration, scaleset_duration::Error> {
    scaleset_duration::parse(text)
}

fn digest(text: &str) -> Result<PlanDigest, String> {
    PlanDigest::parse(text)
        .ok_or_else(|| "a plan digest is 64 lowercase hex digits, as the plan prints it".to_owned())
}

pub(crate) fn main(path: &Path, config: &Config, env: &Env, args: &DecommissionArgs) -> ExitCode {
    let scope = match parse_scope(args.entity.as_deref(), args.scale_set.as_deref()) {
        Ok(scope) => scope,
        Err(e) => {
            errln!("scaleset-worker decommission: {e}");
            return Exit::Failed.into();
        }
    };
    let options = DecommissionOptions {
        scope,
        include_adopted: args.include_adopted,
        force_busy: args.force_busy,
        wait: args.wait,
    };
    scaleset_app::console::init_tracing(scaleset_app::console::LogFormat::Text, "warn");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("scaleset-worker decommission: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    runtime
        .block_on(run(path, config, env, args, &options))
        .into()
}

async fn run(
    path: &Path,
    config: &Config,
    env: &Env,
    args: &DecommissionArgs,
    options: &DecommissionOptions,
) -> Exit {
    let site = match scaleset_app::decommission(config, env, !args.no_database).await {
        Ok(site) => site,
        Err(e) => {
            errln!("scaleset-worker decommission: {}", chain(&e));
            return Exit::Failed;
        }
    };
    outln!("records: {}", site.records);
    let plan = match site.decommission.plan(options).await {
        Ok(plan) => plan,
        Err(e) => {
            errln!(
                "scaleset-worker decommission: planning failed: {}",
                chain(&e)
            );
            return Exit::Failed;
        }
    };
    print_plan(&plan);
    let (true, Some(reviewed)) = (args.apply, &args.digest) else {
        outln!(
            "nothing was changed; to apply exactly this plan: scaleset-worker decommission \
             --config {} {}--apply --digest {}",
            path.display(),
            flags(args),
            plan.digest
        );
        return if has_work(&plan) {
            Exit::Refused
        } else {
            Exit::Done
        };
    };
    let cancel = CancellationToken::new();
    let report = match site.decommission.apply(options, reviewed, &cancel).await {
        Ok(report) => report,
        Err(e @ DecommissionError::StaleDecommission { .. }) => {
            errln!("scaleset-worker decommission: refused: {}", chain(&e));
            return Exit::Refused;
        }
        Err(e) => {
            errln!("scaleset-worker decommission: {}", chain(&e));
            return Exit::Failed;
        }
    };
    for (item, outcome) in &report.done {
        outln!("done   {}: {outcome}", item.subject);
    }
    let mut busy_left = false;
    for (item, why) in &report.left {
        busy_left |= matches!(
            item.why,
            DecommissionWhy::Busy | DecommissionWhy::StillBusy | DecommissionWhy::HasBusyRunners
        );
        outln!("left   {}: {why}", item.subject);
    }
    if busy_left {
        outln!("busy runners of ours were left: decommission again later, or with --force-busy");
        return Exit::Partial;
    }
    outln!("decommissioned: nothing of ours is left in scope");
    Exit::Done
}

/// Whether carrying the plan out would change anything (a plan of skips alone would not).
fn has_work(plan: &DecommissionPlan) -> bool {
    plan.items
        .iter()
        .any(|item| item.act != DecommissionAct::Skip)
}

fn print_plan(plan: &DecommissionPlan) {
    outln!("decommission plan ({} steps):", plan.items.len());
    for item in &plan.items {
        outln!("  {item}");
    }
    outln!(
        "delete {}, detach {}, wait {}, kill {}, skip {}",
        plan.count(DecommissionAct::Delete),
        plan.count(DecommissionAct::Detach),
        plan.count(DecommissionAct::Wait),
        plan.count(DecommissionAct::Kill),
        plan.count(DecommissionAct::Skip)
    );
    if plan.count(DecommissionAct::Kill) > 0 {
        outln!("--force-busy kills the runners marked kill: their jobs fail");
    }
    outln!("plan digest: {}", plan.digest);
}

/// The flags that change the plan, to repeat with --apply.
fn flags(args: &DecommissionArgs) -> String {
    let mut out = String::new();
    if let Some(entity) = &args.entity {
        out.push_str(&format!("--entity {entity} "));
    }
    if let Some(name) = &args.scale_set {
        out.push_str(&format!("--scale-set {name} "));
    }
    if args.include_adopted {
        out.push_str("--include-adopted ");
    }
    if !args.wait.is_zero() {
        out.push_str(&format!("--wait {}s ", args.wait.as_secs()));
    }
    if args.force_busy {
        out.push_str("--force-busy ");
    }
    if args.no_database {
        out.push_str("--no-database ");
    }
    out
}

/// The error and its causes, one after the other.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
