//! `scalesetctl plan -f fleet.toml` and `scalesetctl apply -f fleet.toml`: the declarative
//! fleet. The file travels as it is (the server parses it with its own fleet code). `plan`
//! writes nothing and exits 2 when there is something to change or refuse; `apply` applies
//! exactly a reviewed plan (`--digest`) or the plan it shows first, and exits 2 when the
//! server refuses because the world changed since (`stale_plan`) or the plan holds refusals.

use std::path::Path;

use anyhow::{Context as _, Result};
use comfy_table::Cell;
use scaleset_api::v1::{
    ApplyRequest, ApplyResponse, EntityList, FieldChange, OursUndeclaredList, PlanAction,
    PlanRequest, PlanResponse, ScaleSetList,
};

use super::Ctx;
use crate::cli::{FleetArgs, FleetExport};
use crate::client::ApiError;
use crate::exit::Outcome;
use crate::fleet_file::FleetFile;
use crate::output::{Format, Output, Tone};

fn read_fleet(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read the fleet from stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the fleet file {}", path.display()))
}

/// `plan`.
pub(crate) async fn plan(ctx: &Ctx<'_>, args: FleetArgs) -> Result<Outcome> {
    let request = PlanRequest {
        fleet: read_fleet(&args.file)?,
        prune: args.prune,
    };
    let plan: PlanResponse = crate::progress::while_waiting(
        "planning (asking GitHub about undeclared scale sets)",
        true,
        ctx.api.post(&["plan"], &request),
    )
    .await?;
    ctx.show(&plan, || {
        let mut text = render(ctx.out, &plan);
        text.push_str(&summary(ctx.out, &plan));
        if plan.has_changes {
            text.push_str(&ctx.out.note(
                &format!(
                    "apply exactly this plan with: scalesetctl apply -f {} --digest {}",
                    args.file.display(),
                    plan.digest
                ),
                Tone::Plain,
            ));
        }
        text
    });
    Ok(if plan.has_changes || plan.has_refusals {
        Outcome::Changes
    } else {
        Outcome::Done
    })
}

/// `apply`.
pub(crate) async fn apply(
    ctx: &Ctx<'_>,
    args: FleetArgs,
    digest: Option<String>,
) -> Result<Outcome> {
    let fleet = read_fleet(&args.file)?;
    let digest = match digest {
        Some(digest) => digest,
        None => {
            // No reviewed digest: plan now, show it, and apply exactly what was shown.
            let plan: PlanResponse = crate::progress::while_waiting(
                "planning",
                true,
                ctx.api.post(
                    &["plan"],
                    &PlanRequest {
                        fleet: fleet.clone(),
                        prune: args.prune,
                    },
                ),
            )
            .await?;
            if ctx.out.format == Format::Table {
                super::print(&render(ctx.out, &plan));
            }
            plan.digest
        }
    };
    let request = ApplyRequest {
        fleet,
        prune: args.prune,
        digest,
    };
    let applied: Result<ApplyResponse, ApiError> =
        crate::progress::while_waiting("applying", true, ctx.api.post(&["apply"], &request)).await;
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) if e.code() == Some("stale_plan") => {
            // Not an error of the tool or the file: the server refused, as asked, because
            // the world moved since the plan. Exit 2 so scripts can re-plan.
            if ctx.out.format == Format::Json
                && let ApiError::Status {
                    body: Some(body), ..
                } = &e
            {
                super::print(&Output::json(body));
            }
            super::print_err(&format!("scalesetctl: apply refused: {e}"));
            return Ok(Outcome::Refused);
        }
        Err(e) => return Err(e.into()),
    };
    ctx.show(&applied, || {
        let mut text = String::new();
        if ctx.out.format == Format::Table {
            text.push_str(&summary(ctx.out, &applied.plan));
        }
        let line = if applied.writes == 0 {
            "applied: nothing to write (the fleet was already in place)".to_owned()
        } else {
            format!(
                "applied: {} write(s), {} scale set(s) stored; the worker ensures them on GitHub",
                applied.writes,
                applied.created.len()
            )
        };
        text.push_str(&ctx.out.note(&line, Tone::Good));
        text
    });
    Ok(if applied.plan.has_refusals {
        Outcome::Refused
    } else {
        Outcome::Done
    })
}

fn action_text(action: PlanAction) -> (&'static str, Tone) {
    match action {
        PlanAction::Create => ("create", Tone::Good),
        PlanAction::Adopt => ("adopt", Tone::Good),
        PlanAction::Update => ("update", Tone::Warn),
        PlanAction::Detach => ("detach", Tone::Warn),
        PlanAction::Refuse => ("refuse", Tone::Bad),
        PlanAction::Unchanged => ("unchanged", Tone::Plain),
        _ => ("other", Tone::Warn),
    }
}

fn changes_text(changes: &[FieldChange]) -> String {
    changes
        .iter()
        .map(|c| match (&c.from, &c.to) {
            (Some(from), Some(to)) => format!("{}: {from} → {to}", c.field),
            (None, Some(to)) => format!("{}: {to}", c.field),
            (Some(from), None) => format!("{}: {from} → (none)", c.field),
            (None, None) => c.field.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tone_of(action: &str) -> Tone {
    match action {
        "create" => Tone::Good,
        "update" => Tone::Warn,
        _ => Tone::Plain,
    }
}

/// The plan as tables: credentials and entities when they change, then every scale set.
fn render(out: &Output, plan: &PlanResponse) -> String {
    let mut text = String::new();
    let credentials: Vec<Vec<Cell>> = plan
        .credentials
        .iter()
        .filter(|c| c.action != "unchanged")
        .map(|c| {
            vec![
                out.toned(&c.action, tone_of(&c.action)),
                Cell::new(&c.name),
                Cell::new(changes_text(&c.changes)),
            ]
        })
        .collect();
    if !credentials.is_empty() {
        text.push_str(&out.table(&["CREDENTIALS", "NAME", "CHANGES"], credentials, ""));
        text.push('\n');
    }
    let entities: Vec<Vec<Cell>> = plan
        .entities
        .iter()
        .filter(|e| e.action != "unchanged")
        .map(|e| {
            vec![
                out.toned(&e.action, tone_of(&e.action)),
                Cell::new(&e.entity),
                Cell::new(&e.credentials),
            ]
        })
        .collect();
    if !entities.is_empty() {
        text.push_str(&out.table(&["ENTITY", "NAME", "CREDENTIALS"], entities, ""));
        text.push('\n');
    }
    let scale_sets: Vec<Vec<Cell>> = plan
        .scale_sets
        .iter()
        .map(|s| {
            let (action, tone) = action_text(s.action);
            // An imported set says so where the action is read (issue 37).
            let action = match (&s.imported_from, s.action) {
                (Some(garm), PlanAction::Adopt) => format!("{action} (imported from GARM {garm})"),
                _ => action.to_owned(),
            };
            let mut why = s.reason.clone();
            if s.action == PlanAction::Update && !s.changes.is_empty() {
                why = format!("{why}\n{}", changes_text(&s.changes));
            }
            vec![
                out.toned(&action, tone),
                Cell::new(&s.name),
                Cell::new(&s.entity),
                Cell::new(why),
            ]
        })
        .collect();
    text.push_str(&out.table(
        &["SCALE SET", "NAME", "ENTITY", "WHY"],
        scale_sets,
        "the fleet declares no scale sets",
    ));
    text
}

/// One line: how many of each action, and the digest.
fn summary(out: &Output, plan: &PlanResponse) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for s in &plan.scale_sets {
        let (action, _) = action_text(s.action);
        match counts.iter_mut().find(|(a, _)| *a == action) {
            Some((_, n)) => *n += 1,
            None => counts.push((action, 1)),
        }
    }
    let counted = counts
        .iter()
        .map(|(action, n)| format!("{n} {action}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (verdict, tone) = match (plan.has_changes, plan.has_refusals) {
        (false, false) => ("no changes", Tone::Good),
        (true, false) => ("changes to apply", Tone::Warn),
        (_, true) => (
            "refusals: the refused scale sets are not written",
            Tone::Bad,
        ),
    };
    out.note(
        &format!(
            "\nplan {}: {verdict} ({})",
            plan.digest,
            if counted.is_empty() {
                "no scale sets".to_owned()
            } else {
                counted
            }
        ),
        tone,
    )
}

/// `fleet export`: every stored scale set as a fleet file (the typed [`FleetFile`]), to stdout
/// or `--output-file`; what could not be carried goes to stderr.
pub(crate) async fn export(ctx: &Ctx<'_>, args: FleetExport) -> Result<Outcome> {
    let sets: ScaleSetList = ctx.api.get_all(&["scale-sets"], &[]).await?;
    let entities: EntityList = ctx.api.get_all(&["entities"], &[]).await?;
    let (file, dropped) = FleetFile::of(&sets.items, &entities.items);
    let mut text = String::from(
        "# Written by `scalesetctl fleet export`: the stored scale sets as [[scale_set]] tables.\n\
         # Put them in the configuration file (with [[credentials]] for the credentials they\n\
         # name, their secret by file or variable) so a database loss does not lose them.\n",
    );
    text.push_str(&file.to_toml().context("writing the fleet as TOML")?);
    for name in &dropped.without_entity {
        eprintln!("scalesetctl: scale set {name} skipped: its entity is not listed");
    }
    for path in &dropped.nulls {
        eprintln!("scalesetctl: {path} is null, which TOML cannot hold: left out");
    }
    match &args.output_file {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write the fleet file {}", path.display()))?;
            eprintln!(
                "wrote {} scale set(s) to {}",
                file.scale_set.len(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(Outcome::Done)
}

/// `fleet undeclared`: our scale sets on GitHub that are declared nowhere, with the remedies;
/// exit 2 when there is any (something to decide), 0 otherwise.
pub(crate) async fn undeclared(ctx: &Ctx<'_>) -> Result<Outcome> {
    let list: OursUndeclaredList = ctx.api.get(&["github", "ours-undeclared"]).await?;
    ctx.show(&list, || {
        let rows = list
            .items
            .iter()
            .map(|s| {
                vec![
                    Cell::new(&s.entity),
                    Cell::new(&s.name),
                    Cell::new(&s.runner_group),
                    Cell::new(s.github_id),
                ]
            })
            .collect();
        let mut text = ctx.out.table(
            &["ENTITY", "NAME", "RUNNER GROUP", "GITHUB"],
            rows,
            "no scale set on GitHub is ours and undeclared",
        );
        for s in &list.items {
            text.push_str(
                &ctx.out
                    .note(&format!("{}: {}", s.name, s.remedy), Tone::Warn),
            );
        }
        for u in &list.unlisted {
            text.push_str(&ctx.out.note(
                &format!("{}: not listed ({})", u.entity, u.reason),
                Tone::Bad,
            ));
        }
        text
    });
    Ok(if list.items.is_empty() {
        Outcome::Done
    } else {
        Outcome::Changes
    })
}
