//! `scalesetctl scale-set …`: list with state, show with reason, evidence and events, create
//! (the server stores it, the worker adopts or creates it on GitHub: the create waits for the
//! outcome, and a refusal exits 2 with its remedy), update at a generation, drain, and the
//! ownership-aware delete.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail};
use comfy_table::Cell;
use scaleset_api::v1::{
    AdoptionPolicy, CreateScaleSet as CreateBody, DeleteAction, DeleteScaleSetResult,
    DrainScaleSetResult, EntityList, Evidence, Provenance, RetryScaleSetResult, ScaleSet,
    ScaleSetList, ScaleSetState, UpdateScaleSet as UpdateBody,
};
use uuid::Uuid;

use super::pick::{Candidate, full_id, pick};
use super::{Ctx, entity};
use crate::cli::{CreateScaleSet, PolicyArg, ScaleSetCommand, UpdateScaleSet};
use crate::exit::Outcome;
use crate::output::{Output, Tone, short_id, short_time};

/// Runs a `scale-set` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: ScaleSetCommand) -> Result<Outcome> {
    match command {
        ScaleSetCommand::List { entity } => list(ctx, entity.as_deref()).await,
        ScaleSetCommand::Show { scale_set } => {
            let id = resolve(ctx, &scale_set).await?;
            let found: ScaleSet = ctx.api.get(&["scale-sets", &id.to_string()]).await?;
            let entities = entity_names(ctx).await?;
            ctx.show(&found, || details(ctx, &found, &entities));
            Ok(Outcome::Done)
        }
        ScaleSetCommand::Create(args) => create(ctx, *args).await,
        ScaleSetCommand::Update(args) => update(ctx, *args).await,
        ScaleSetCommand::Drain { scale_set } => drain(ctx, &scale_set).await,
        ScaleSetCommand::Retry { scale_set } => retry(ctx, &scale_set).await,
        ScaleSetCommand::Delete { scale_set, force } => delete(ctx, &scale_set, force).await,
    }
}

/// The id of the scale set `wanted` names.
pub(crate) async fn resolve(ctx: &Ctx<'_>, wanted: &str) -> Result<Uuid> {
    if let Some(id) = full_id(wanted) {
        return Ok(id);
    }
    let all: ScaleSetList = ctx.api.get_all(&["scale-sets"], &[]).await?;
    let entities = entity_names(ctx).await?;
    let candidates: Vec<Candidate> = all
        .items
        .iter()
        .map(|s| Candidate {
            id: s.id,
            name: s.spec.name.clone(),
            describe: format!(
                "{}, group {}",
                entity_name(&entities, s.entity_id),
                s.spec.runner_group
            ),
        })
        .collect();
    pick(
        "scale set",
        "scalesetctl scale-set list",
        wanted,
        &candidates,
    )
}

/// Entity ids to `kind name`, for showing scale sets by their entity's name.
pub(crate) async fn entity_names(ctx: &Ctx<'_>) -> Result<BTreeMap<Uuid, String>> {
    let all: EntityList = ctx.api.get_all(&["entities"], &[]).await?;
    Ok(all.items.into_iter().map(|e| (e.id, e.name)).collect())
}

fn entity_name(entities: &BTreeMap<Uuid, String>, id: Uuid) -> String {
    entities.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

pub(crate) fn state_text(state: ScaleSetState) -> (&'static str, Tone) {
    match state {
        ScaleSetState::Pending => ("pending", Tone::Warn),
        ScaleSetState::Ready => ("ready", Tone::Good),
        ScaleSetState::Refused => ("refused", Tone::Bad),
        ScaleSetState::Drifted => ("drifted", Tone::Warn),
        ScaleSetState::ForeignSession => ("foreign_session", Tone::Bad),
        ScaleSetState::Dormant => ("dormant", Tone::Warn),
        ScaleSetState::Error => ("error", Tone::Bad),
        _ => ("unknown", Tone::Warn),
    }
}

/// The evidence in words, `-` when there is none.
fn evidence_text(evidence: &[Evidence]) -> String {
    if evidence.is_empty() {
        return "-".to_owned();
    }
    let words: Vec<&str> = evidence
        .iter()
        .map(|e| match e {
            Evidence::CreatedThisRun => "created this run",
            Evidence::StoredId => "stored id",
            Evidence::OwnerLabel => "owner label",
            Evidence::OwnSession => "own session",
            _ => "other",
        })
        .collect();
    words.join(", ")
}

fn provenance_text(provenance: Option<Provenance>) -> &'static str {
    match provenance {
        Some(Provenance::Created) => "created",
        Some(Provenance::Known) => "known",
        Some(Provenance::Adopted) => "adopted",
        Some(_) => "other",
        None => "-",
    }
}

fn policy_text(policy: AdoptionPolicy) -> &'static str {
    match policy {
        AdoptionPolicy::Never => "never",
        AdoptionPolicy::Owned => "owned",
        AdoptionPolicy::Any => "any",
        _ => "other",
    }
}

fn policy(arg: PolicyArg) -> AdoptionPolicy {
    match arg {
        PolicyArg::Never => AdoptionPolicy::Never,
        PolicyArg::Owned => AdoptionPolicy::Owned,
        PolicyArg::Any => AdoptionPolicy::Any,
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

async fn list(ctx: &Ctx<'_>, entity_filter: Option<&str>) -> Result<Outcome> {
    let all: ScaleSetList = match entity_filter {
        Some(wanted) => {
            let id = entity::resolve(ctx, wanted).await?.to_string();
            ctx.api
                .get_all(&["scale-sets"], &[("entity_id", &id)])
                .await?
        }
        None => ctx.api.get_all(&["scale-sets"], &[]).await?,
    };
    let entities = if ctx.out.format == crate::output::Format::Table {
        entity_names(ctx).await?
    } else {
        BTreeMap::new()
    };
    ctx.show(&all, || table(ctx.out, &all.items, &entities));
    Ok(Outcome::Done)
}

/// The list table, then one line per scale set that needs a look, with its reason (the
/// reason is too long for a column at 80 columns).
pub(crate) fn table(out: &Output, items: &[ScaleSet], entities: &BTreeMap<Uuid, String>) -> String {
    let rows = items
        .iter()
        .map(|s| {
            let (state, tone) = state_text(s.state);
            // A disabled set is not served: its `ready` is no longer good news.
            let tone = if s.spec.enabled { tone } else { Tone::Warn };
            vec![
                Cell::new(short_id(&s.id)),
                Cell::new(&s.spec.name),
                Cell::new(entity_name(entities, s.entity_id)),
                out.toned(state, tone),
                out.toned(
                    enabled_text(s.spec.enabled),
                    if s.spec.enabled {
                        Tone::Good
                    } else {
                        Tone::Warn
                    },
                ),
                Cell::new(provenance_text(s.provenance)),
                Cell::new(format!("{}/{}", s.desired_runners, s.spec.max_runners)),
                Cell::new(
                    s.github_id
                        .map_or_else(|| "-".to_owned(), |id| id.to_string()),
                ),
                Cell::new(yes_no(s.declared)),
            ]
        })
        .collect();
    let mut text = out.table(
        &[
            "ID",
            "NAME",
            "ENTITY",
            "STATE",
            "ENABLED",
            "PROVENANCE",
            "RUNNERS",
            "GITHUB",
            "DECLARED",
        ],
        rows,
        "no scale sets (create one with `scalesetctl scale-set create`, or apply a fleet file)",
    );
    if let Some(note) = attention_note(items.iter().map(|s| s.attention.is_some())) {
        text.push_str(&out.note(&note, Tone::Bad));
    }
    if let Some(note) = disabled_note(items.iter().map(|s| s.spec.enabled)) {
        text.push_str(&out.note(&note, Tone::Warn));
    }
    if let Some(note) = undeclared_note(items.iter().filter(|s| !s.declared).count()) {
        text.push_str(&out.note(&note, Tone::Warn));
    }
    for s in items {
        let (state, tone) = state_text(s.state);
        if let Some(attention) = &s.attention {
            text.push_str(&out.note(
                &format!(
                    "{} {} (run: {})",
                    s.spec.name, attention.reason, attention.remedy
                ),
                Tone::Bad,
            ));
        } else if tone != Tone::Good && !s.state_reason.is_empty() {
            text.push_str(&out.note(
                &format!("{} {state}: {}", s.spec.name, s.state_reason),
                tone,
            ));
        }
    }
    text
}

/// "N of M scale sets need attention", when any does: those the server marked (the store's
/// one rule, the status page's count).
fn attention_note(needs: impl Iterator<Item = bool>) -> Option<String> {
    let (mut total, mut attention) = (0usize, 0usize);
    for needs in needs {
        total += 1;
        attention += usize::from(needs);
    }
    (attention > 0).then(|| format!("{attention} of {total} scale sets need attention"))
}

/// "N scale sets not declared: lost on a database loss", when any is: they exist only in the
/// server's database (DESIGN §6).
fn undeclared_note(count: usize) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "{count} scale set(s) not declared (DECLARED no): lost on a database loss; \
             `scalesetctl fleet export` writes them as a fleet file to declare"
        )
    })
}

/// The ENABLED column: `yes`, or `no (draining)` for a set that is not served (drained or
/// disabled: no new runner is made, idle ones are retired, busy ones finish their jobs).
fn enabled_text(enabled: bool) -> &'static str {
    if enabled { "yes" } else { "no (draining)" }
}

/// "N of M scale sets are disabled or draining", when any is: not served whatever their state
/// says, so jobs for them wait on GitHub.
fn disabled_note(enabled: impl Iterator<Item = bool>) -> Option<String> {
    let (mut total, mut disabled) = (0usize, 0usize);
    for enabled in enabled {
        total += 1;
        disabled += usize::from(!enabled);
    }
    (disabled > 0).then(|| {
        format!(
            "{disabled} of {total} scale sets are disabled or draining: no new runners, their \
             jobs wait on GitHub (serve one again: scalesetctl scale-set update NAME --enabled true)"
        )
    })
}

fn details(ctx: &Ctx<'_>, s: &ScaleSet, entities: &BTreeMap<Uuid, String>) -> String {
    let out = ctx.out;
    let (state, tone) = state_text(s.state);
    let spec = &s.spec;
    let mut pairs = vec![
        ("id", Cell::new(s.id)),
        ("name", Cell::new(&spec.name)),
        (
            "entity",
            Cell::new(format!(
                "{} ({})",
                entity_name(entities, s.entity_id),
                s.entity_id
            )),
        ),
        (
            "runner group",
            Cell::new(match spec.runner_group_id {
                Some(id) => format!("{} (id {id})", spec.runner_group),
                None => spec.runner_group.clone(),
            }),
        ),
        ("state", out.toned(state, tone)),
    ];
    if !s.state_reason.is_empty() {
        pairs.push(("reason", out.toned(&s.state_reason, tone)));
    }
    if let Some(refusal) = &s.refusal {
        pairs.push(("refusal", out.toned(&refusal.code, Tone::Bad)));
        pairs.push(("found", Cell::new(&refusal.message)));
        pairs.push(("remedy", Cell::new(&refusal.remedy)));
    }
    if let Some(attention) = &s.attention {
        pairs.push(("attention", out.toned(&attention.reason, Tone::Bad)));
        pairs.push(("run", Cell::new(&attention.remedy)));
    }
    pairs.extend([
        ("provenance", Cell::new(provenance_text(s.provenance))),
        (
            "github id",
            Cell::new(
                s.github_id
                    .map_or_else(|| "-".to_owned(), |id| id.to_string()),
            ),
        ),
        ("generation", Cell::new(s.generation)),
        (
            "runners",
            Cell::new(format!(
                "{} wanted, {} idle kept, at most {}",
                s.desired_runners, spec.min_idle, spec.max_runners
            )),
        ),
        (
            "labels",
            Cell::new(if spec.labels.is_empty() {
                "-".to_owned()
            } else {
                spec.labels.join(", ")
            }),
        ),
        (
            "provider",
            Cell::new(format!(
                "{} (image {:?}, flavor {:?})",
                spec.provider, spec.image, spec.flavor
            )),
        ),
        (
            "platform",
            Cell::new(format!("{}/{}", spec.os_type, spec.os_arch)),
        ),
        ("runner tool", runner_tool(ctx, s)),
        ("runner setup", Cell::new(runner_setup(spec))),
        ("enabled", Cell::new(yes_no(spec.enabled))),
        (
            "adoption",
            Cell::new(format!(
                "policy {}, repair {}, disable update {}",
                policy_text(spec.adoption_policy),
                yes_no(spec.repair),
                yes_no(spec.disable_update)
            )),
        ),
        (
            "bootstrap",
            Cell::new(format!("{}s timeout", spec.bootstrap_timeout_secs)),
        ),
        ("evidence", Cell::new(evidence_text(&s.evidence))),
        ("created", Cell::new(&s.created_at)),
        ("updated", Cell::new(&s.updated_at)),
    ]);
    for warning in &s.warnings {
        pairs.push(("warning", out.toned(warning, Tone::Warn)));
    }
    let mut text = out.details(pairs);
    if !s.events.is_empty() {
        text.push('\n');
        let rows = s
            .events
            .iter()
            .map(|e| {
                vec![
                    Cell::new(short_time(&e.at)),
                    Cell::new(short_time(&e.last_at)),
                    Cell::new(e.count.to_string()),
                    Cell::new(&e.kind),
                    Cell::new(&e.reason),
                ]
            })
            .collect();
        text.push_str(&out.table(
            &["FIRST SEEN", "LAST SEEN", "TIMES", "KIND", "REASON"],
            rows,
            "",
        ));
    }
    text
}

fn extra_specs(text: Option<&str>) -> Result<Option<serde_json::Value>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let value: serde_json::Value =
        serde_json::from_str(text).context("--extra-specs is not JSON")?;
    if !value.is_object() {
        bail!("--extra-specs must be a JSON object, like '{{\"key\": \"value\"}}'");
    }
    Ok(Some(value))
}

/// Prints a scale set the server answered with, and the outcome for the exit code: a refused
/// adoption is exit 2.
fn answered(ctx: &Ctx<'_>, s: &ScaleSet, entities: &BTreeMap<Uuid, String>) -> Outcome {
    ctx.show(s, || details(ctx, s, entities));
    if s.state == ScaleSetState::Refused || s.refusal.is_some() {
        Outcome::Refused
    } else {
        Outcome::Done
    }
}

/// An update's list: replaced when given, emptied when cleared, else unchanged.
fn list_change(given: Vec<String>, clear: bool) -> Option<Vec<String>> {
    if clear {
        Some(Vec::new())
    } else if given.is_empty() {
        None
    } else {
        Some(given)
    }
}

/// The runner download a new runner of the set would get (its file and URL), or that none is
/// known (the warnings below it say why and what to do).
fn runner_tool(ctx: &Ctx<'_>, s: &ScaleSet) -> Cell {
    match &s.runner_tool {
        Some(tool) => Cell::new(format!("{} ({})", tool.filename, tool.download_url)),
        None => ctx.out.toned("none known (see the warning)", Tone::Warn),
    }
}

/// The runners' proxy, SSH keys and user-data options in one line (`none` when unset).
fn runner_setup(spec: &scaleset_api::v1::ScaleSetSpec) -> String {
    let mut parts = Vec::new();
    for (name, value) in [
        ("http_proxy", &spec.http_proxy),
        ("https_proxy", &spec.https_proxy),
        ("no_proxy", &spec.no_proxy),
    ] {
        if let Some(value) = value {
            parts.push(format!("{name}={value}"));
        }
    }
    if !spec.ssh_keys.is_empty() {
        parts.push(format!("{} SSH keys", spec.ssh_keys.len()));
    }
    if !spec.extra_packages.is_empty() {
        parts.push(format!("packages {}", spec.extra_packages.join(",")));
    }
    if spec.disable_updates_on_boot {
        parts.push("no updates on boot".to_owned());
    }
    if spec.enable_boot_debug {
        parts.push("boot debug".to_owned());
    }
    if let Some(name) = &spec.runner_install_template {
        parts.push(format!("install template {name}"));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join("; ")
    }
}

async fn create(ctx: &Ctx<'_>, args: CreateScaleSet) -> Result<Outcome> {
    let entity_id = entity::resolve(ctx, &args.entity).await?;
    let body = CreateBody {
        entity_id,
        name: args.name,
        runner_group: args.runner_group,
        labels: args.labels,
        disable_update: args.disable_update,
        provider: args.provider,
        image: args.image,
        flavor: args.flavor,
        os_type: args.os_type,
        os_arch: args.os_arch,
        http_proxy: args.http_proxy,
        https_proxy: args.https_proxy,
        no_proxy: args.no_proxy,
        ssh_keys: args.ssh_keys,
        extra_packages: args.extra_packages,
        disable_updates_on_boot: args.disable_updates_on_boot,
        enable_boot_debug: args.enable_boot_debug,
        runner_install_template: args.runner_install_template,
        min_idle: args.min_idle,
        max_runners: args.max_runners,
        bootstrap_timeout_secs: args.bootstrap_timeout,
        // Not flags of scalesetctl yet: set in the configuration file or through the API.
        scale_down_delay_secs: None,
        max_idle_lifetime_secs: None,
        max_lifetime_secs: None,
        runner_prefix: args.runner_prefix,
        extra_specs: extra_specs(args.extra_specs.as_deref())?,
        enabled: Some(!args.disabled),
        adoption_policy: policy(args.adoption_policy),
        repair: args.repair,
    };
    let name = body.name.clone();
    let created: ScaleSet = ctx.api.post(&["scale-sets"], &body).await?;
    // The server answers at once with the record, pending; the worker ensures it.
    let shown = if created.state == ScaleSetState::Pending && created.spec.enabled && args.wait > 0
    {
        crate::progress::while_waiting(
            &format!("waiting for the worker to ensure scale set {name} on GitHub"),
            true,
            settled(ctx, created, std::time::Duration::from_secs(args.wait)),
        )
        .await?
    } else {
        created
    };
    let entities = entity_names(ctx).await?;
    let outcome = answered(ctx, &shown, &entities);
    if shown.state == ScaleSetState::Pending && shown.spec.enabled {
        eprintln!(
            "scale set {name} is stored and still pending: no worker has ensured it yet \
             (is a worker running?); `scalesetctl scale-set show {name}` shows the outcome"
        );
    }
    Ok(outcome)
}

/// Re-reads `created` until it leaves `pending` or `wait` has passed.
#[allow(
    clippy::disallowed_methods,
    reason = "`--wait` polls the server every interval"
)]
async fn settled(ctx: &Ctx<'_>, created: ScaleSet, wait: std::time::Duration) -> Result<ScaleSet> {
    let deadline = tokio::time::Instant::now() + wait;
    let id = created.id.to_string();
    let mut current = created;
    while current.state == ScaleSetState::Pending && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        current = ctx.api.get(&["scale-sets", &id]).await?;
    }
    Ok(current)
}

async fn drain(ctx: &Ctx<'_>, wanted: &str) -> Result<Outcome> {
    let id = resolve(ctx, wanted).await?;
    let result: DrainScaleSetResult = ctx
        .api
        .post(&["scale-sets", &id.to_string(), "drain"], &())
        .await?;
    let name = &result.scale_set.spec.name;
    let line = if result.drained {
        format!("scale set {name} is drained: `scalesetctl scale-set delete {name}` deletes it")
    } else if result.instances == 0 {
        format!(
            "scale set {name} has no instance left; its worker is letting it go: \
             `scalesetctl scale-set delete {name}` deletes it in a moment"
        )
    } else {
        format!(
            "draining scale set {name}: {} instance(s) left, {} running a job (left to finish; \
             idle runners are retired); run this again to see what is left, then \
             `scalesetctl scale-set delete {name}`",
            result.instances, result.busy
        )
    };
    ctx.done(&result, &line);
    Ok(Outcome::Done)
}

async fn retry(ctx: &Ctx<'_>, wanted: &str) -> Result<Outcome> {
    let id = resolve(ctx, wanted).await?;
    let result: RetryScaleSetResult = ctx
        .api
        .post(&["scale-sets", &id.to_string(), "retry"], &())
        .await?;
    let line = format!(
        "scale set {}: {}",
        result.scale_set.spec.name, result.reason
    );
    ctx.done(&result, &line);
    Ok(Outcome::Done)
}

async fn update(ctx: &Ctx<'_>, args: UpdateScaleSet) -> Result<Outcome> {
    let id = resolve(ctx, &args.scale_set).await?;
    let generation = match args.generation {
        Some(generation) => generation,
        None => {
            let current: ScaleSet = ctx.api.get(&["scale-sets", &id.to_string()]).await?;
            current.generation
        }
    };
    let labels = if args.clear_labels {
        Some(Vec::new())
    } else if args.labels.is_empty() {
        None
    } else {
        Some(args.labels)
    };
    let body = UpdateBody {
        generation,
        labels,
        disable_update: args.disable_update,
        provider: args.provider,
        image: args.image,
        flavor: args.flavor,
        os_type: args.os_type,
        os_arch: args.os_arch,
        http_proxy: args.http_proxy,
        https_proxy: args.https_proxy,
        no_proxy: args.no_proxy,
        ssh_keys: list_change(args.ssh_keys, args.clear_ssh_keys),
        extra_packages: list_change(args.extra_packages, args.clear_extra_packages),
        disable_updates_on_boot: args.disable_updates_on_boot,
        enable_boot_debug: args.enable_boot_debug,
        runner_install_template: args.runner_install_template,
        min_idle: args.min_idle,
        max_runners: args.max_runners,
        bootstrap_timeout_secs: args.bootstrap_timeout,
        // Not flags of scalesetctl yet: set in the configuration file or through the API.
        scale_down_delay_secs: None,
        max_idle_lifetime_secs: None,
        max_lifetime_secs: None,
        runner_prefix: args.runner_prefix,
        extra_specs: extra_specs(args.extra_specs.as_deref())?,
        enabled: args.enabled,
        adoption_policy: args.adoption_policy.map(policy),
        repair: args.repair,
    };
    let updated: ScaleSet = ctx
        .api
        .patch(&["scale-sets", &id.to_string()], &body)
        .await?;
    let entities = entity_names(ctx).await?;
    Ok(answered(ctx, &updated, &entities))
}

async fn delete(ctx: &Ctx<'_>, wanted: &str, force: bool) -> Result<Outcome> {
    let id = resolve(ctx, wanted).await?;
    let query: &[(&str, &str)] = if force { &[("force", "true")] } else { &[] };
    let result: DeleteScaleSetResult = crate::progress::while_waiting(
        "deleting the scale set",
        true,
        ctx.api.delete(&["scale-sets", &id.to_string()], query),
    )
    .await?;
    // The server's reason says why, from the stored provenance the control crate decided on.
    let reason = &result.reason;
    let line = match (result.action, result.github_id) {
        (DeleteAction::DeletedOnGitHub, Some(github)) => {
            format!("deleted scale set {id} here and on GitHub (GitHub id {github}): {reason}")
        }
        (DeleteAction::DeletedOnGitHub, None) => {
            format!("deleted scale set {id} on GitHub: {reason}")
        }
        (DeleteAction::Detached, Some(_)) => {
            format!("detached scale set {id}: the record is gone; {reason}")
        }
        (DeleteAction::Detached, None) => {
            format!("deleted scale set {id} (it was never on GitHub)")
        }
        (_, _) => format!("deleted scale set {id}: {reason}"),
    };
    ctx.done(&result, &line);
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29 item 5, issue 32 item 2: the list counts the scale sets the server marked as
    /// needing attention (the store's one rule), as the status page does.
    #[test]
    fn the_list_counts_the_scale_sets_needing_attention() {
        assert_eq!(attention_note([false, false].into_iter()), None);
        assert_eq!(
            attention_note([false, true, true].into_iter()).as_deref(),
            Some("2 of 3 scale sets need attention")
        );
    }

    /// A drained or disabled scale set is not counted as served: the list says how many are
    /// disabled or draining, and its ENABLED column says so.
    #[test]
    fn the_list_counts_the_disabled_or_draining_scale_sets() {
        assert_eq!(disabled_note([true, true].into_iter()), None);
        assert_eq!(
            disabled_note([true, false].into_iter()).as_deref(),
            Some(
                "1 of 2 scale sets are disabled or draining: no new runners, their jobs wait on \
                 GitHub (serve one again: scalesetctl scale-set update NAME --enabled true)"
            )
        );
        assert_eq!(enabled_text(true), "yes");
        assert_eq!(enabled_text(false), "no (draining)");
    }
}
