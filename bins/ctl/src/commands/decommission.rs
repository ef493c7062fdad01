//! `scalesetctl decommission`: the server's decommission plan printed as
//! `scaleset-worker decommission` prints it, and applied only with `--apply` and only as
//! reviewed (`--digest`). The decisions are the server's (the control crate's planner).

use std::fmt::Write as _;

use anyhow::{Context as _, Result};
use scaleset_api::v1::{
    DecommissionApplyRequest, DecommissionApplyResponse, DecommissionPlanResponse,
    DecommissionRequest, DecommissionStep,
};

use super::Ctx;
use crate::cli::DecommissionArgs;
use crate::client::ApiError;
use crate::exit::Outcome;
use crate::output::{Format, Output};

/// `decommission`.
pub(crate) async fn run(ctx: &Ctx<'_>, args: DecommissionArgs) -> Result<Outcome> {
    let wait = scaleset_duration::parse(&args.wait)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("--wait {}", args.wait))?;
    let request = DecommissionRequest {
        entity: args.entity.clone(),
        scale_set: args.scale_set.clone(),
        wait_seconds: wait.as_secs(),
        force_busy: args.force_busy,
        include_adopted: args.include_adopted,
    };
    let (true, Some(digest)) = (args.apply, args.digest.clone()) else {
        let plan: DecommissionPlanResponse = crate::progress::while_waiting(
            "planning (listing GitHub's scale sets and runners, and the providers' instances)",
            true,
            ctx.api.post(&["decommission", "plan"], &request),
        )
        .await?;
        ctx.show(&plan, || {
            let mut text = render(&plan);
            let _ = writeln!(
                text,
                "nothing was changed; to apply exactly this plan: scalesetctl decommission \
                 {}--apply --digest {}",
                flags(&args),
                plan.digest
            );
            text
        });
        // Carrying out a plan of skips alone would change nothing.
        return Ok(if plan.steps.iter().any(|s| s.act != "skip") {
            Outcome::Changes
        } else {
            Outcome::Done
        });
    };
    let apply = DecommissionApplyRequest {
        entity: request.entity,
        scale_set: request.scale_set,
        wait_seconds: request.wait_seconds,
        force_busy: request.force_busy,
        include_adopted: request.include_adopted,
        digest,
    };
    // The server waits for busy runners up to --wait before it answers.
    let api = ctx.api.with_timeout(ctx.api.timeout().saturating_add(wait));
    let applied: Result<DecommissionApplyResponse, ApiError> = crate::progress::while_waiting(
        "decommissioning",
        true,
        api.post(&["decommission", "apply"], &apply),
    )
    .await;
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) if e.code() == Some("stale_plan") => {
            if ctx.out.format == Format::Json
                && let ApiError::Status {
                    body: Some(body), ..
                } = &e
            {
                super::print(&Output::json(body));
            }
            super::print_err(&format!("scalesetctl: decommission refused: {e}"));
            return Ok(Outcome::Refused);
        }
        Err(e) => return Err(e.into()),
    };
    ctx.show(&applied, || {
        let mut text = String::new();
        for done in &applied.done {
            let _ = writeln!(text, "done   {}: {}", done.step.subject, done.outcome);
        }
        for left in &applied.left {
            let _ = writeln!(text, "left   {}: {}", left.step.subject, left.outcome);
        }
        if applied.busy_left {
            text.push_str(
                "busy runners of ours were left: decommission again later, or with --force-busy\n",
            );
        } else {
            text.push_str("decommissioned: nothing of ours is left in scope\n");
        }
        text
    });
    Ok(if applied.busy_left {
        Outcome::Partial
    } else {
        Outcome::Done
    })
}

/// The plan as `scaleset-worker decommission` prints it.
fn render(plan: &DecommissionPlanResponse) -> String {
    let mut text = format!("decommission plan ({} steps):\n", plan.steps.len());
    for step in &plan.steps {
        let _ = writeln!(text, "  {}", line(step));
    }
    let count = |act: &str| plan.steps.iter().filter(|s| s.act == act).count();
    let _ = writeln!(
        text,
        "delete {}, detach {}, wait {}, kill {}, skip {}",
        count("delete"),
        count("detach"),
        count("wait"),
        count("kill"),
        count("skip")
    );
    if count("kill") > 0 {
        text.push_str("--force-busy kills the runners marked kill: their jobs fail\n");
    }
    let _ = writeln!(text, "plan digest: {}", plan.digest);
    text
}

fn line(step: &DecommissionStep) -> String {
    format!("{:<6} {}: {}", step.act, step.subject, step.reason)
}

/// The flags that change the plan, to repeat with --apply.
fn flags(args: &DecommissionArgs) -> String {
    let mut out = String::new();
    if let Some(entity) = &args.entity {
        let _ = write!(out, "--entity {entity} ");
    }
    if let Some(name) = &args.scale_set {
        let _ = write!(out, "--scale-set {name} ");
    }
    if args.include_adopted {
        out.push_str("--include-adopted ");
    }
    if args.wait.trim() != "0s" && args.wait.trim() != "0" {
        let _ = write!(out, "--wait {} ", args.wait);
    }
    if args.force_busy {
        out.push_str("--force-busy ");
    }
    out
}
