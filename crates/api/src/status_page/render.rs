//! The status page's HTML, from the views: the overview (summary cards, filter, one row per
//! scale set, pager), one scale set's detail (facts, evidence, instances, events), the login
//! form. Pure: views in, text out; `maud` escapes every stored string.

use std::time::SystemTime;

use maud::{Markup, html};
use scaleset_store::{
    Attention, Event, Evidence, Instance, InstanceStatus, JobShown, Provenance, ReasonCode,
    ScaleSet, ScaleSetState, Timestamp,
};

use super::actions::{self, Session};
use super::chart;
use super::html::{ago, page, query_value, rfc3339, time_el, utc};
use super::lease;
use super::reason;
use super::view::{Detail, Filter, Overview, Row, Runners, service};
use crate::ours_undeclared::Known;

const STATES: [&str; 7] = [
    "ready",
    "pending",
    "refused",
    "drifted",
    "foreign_session",
    "dormant",
    "error",
];

/// Beside the state badge of a set that is not served: `draining` or `disabled`
/// ([`service`]), so a drained set never reads as a plain green `ready`.
fn service_badge(set: &ScaleSet, runners: &Runners) -> Markup {
    let service = service(set, runners);
    html! {
        @if service != "served" {
            " " span class={ "badge s-" (service) } data-service=(service) { (service) }
        }
    }
}

fn state_badge(state: ScaleSetState) -> Markup {
    let name = state.as_str();
    html! {
        span class={ "badge s-" (name) } data-state=(name) { (name.replace('_', " ")) }
    }
}

fn provenance(p: Option<&Provenance>) -> Markup {
    html! {
        @match p {
            Some(p) => span class={ "p-" (p.as_str()) } data-provenance=(p.as_str()) { (p.as_str()) },
            None => span.sub data-provenance="" { "—" },
        }
    }
}

/// The adoption evidence in words (the store keeps the machine's typed `Evidence`).
pub(crate) fn evidence_words(evidence: &[Evidence]) -> String {
    evidence
        .iter()
        .map(|e| match e {
            Evidence::CreatedThisRun => "created by this controller",
            Evidence::StoredId => "stored GitHub id matches",
            Evidence::OwnerLabel => "carries our owner label",
            Evidence::OwnSession => "a session conflict named our owner",
            Evidence::ImportedFrom => "imported from GARM (its takeover note names it)",
            _ => "evidence this version does not name",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An event in one line: its code's sentence (the detail text is for the detail page); an
/// entry without a code (older than codes) shows its kind in words (`foreign session`, not
/// the stored `foreign_session`).
fn event_summary(e: &Event) -> String {
    match e.code {
        ReasonCode::Unspecified => e.kind.as_str().replace('_', " "),
        code => code.summary().to_owned(),
    }
}

fn events_list(events: &[Event], now: SystemTime) -> Markup {
    html! {
        @if events.is_empty() {
            span.sub { "—" }
        } @else {
            ul.events {
                @for e in events {
                    li data-code=(e.code.as_str()) {
                        (time_el(e.last_at, now)) " " span.k { (event_summary(e)) } (repeats(e, now))
                    }
                }
            }
        }
    }
}

/// For an event that happened more than once: how often, and since when (the list shows when
/// it happened last).
fn repeats(e: &Event, now: SystemTime) -> Markup {
    html! {
        @if e.count > 1 {
            " " span.repeats { "×" (e.count) " since " (time_el(e.at, now)) }
        }
    }
}

/// Why a scale set needs attention (in one line: the full text is the state's, shown once on
/// the detail page) and the command to run.
fn attention_html(short: &reason::Short, attention: &Attention) -> Markup {
    html! {
        div.attention {
            span.badge.s-attention { "needs attention" }
            div.why { (short.text) }
            div.remedy { "run " code { (attention.remedy) } }
        }
    }
}

/// Scale sets that need attention for the same reason, at the top of the overview.
fn groups_html(groups: &[reason::Group]) -> Markup {
    /// Names shown per group before "and N more".
    const NAMES: usize = 5;
    html! {
        @if !groups.is_empty() {
            section id="groups" {
                @for group in groups {
                    div.group data-count=(group.names.len()) {
                        b { (group.names.len()) " scale sets: " (group.text) }
                        span.sub {
                            " — " (group.names.iter().take(NAMES).cloned().collect::<Vec<_>>().join(", "))
                            @if group.names.len() > NAMES { ", and " (group.names.len() - NAMES) " more" }
                        }
                    }
                }
            }
        }
    }
}

fn row_html(row: &Row, now: SystemTime, session: &Session) -> Markup {
    let set = &row.set;
    let name = set.spec.name().as_str();
    let attention = if row.attention.is_some() { "yes" } else { "no" };
    html! {
        tr.scale-set data-name=(name) data-state=(set.state.as_str()) data-attention=(attention) data-service=(service(set, &row.runners)) {
            td.name {
                a href={ "/scale-sets/" (set.id.0) } { (name) }
                div.sub { (set.spec.label_texts().join(", ")) }
                (actions::row_actions(session, set))
            }
            td {
                (row.entity)
                div.sub {
                    "group " (set.spec.runner_group().name)
                    @if let Some(github) = set.github_id { " · GitHub id " (github) }
                }
            }
            td {
                (state_badge(set.state))
                (service_badge(set, &row.runners))
                @if row.attention.is_some() {
                    span.badge.s-attention { "needs attention" }
                }
                @if row.served_by.is_some() {
                    div.sub { (lease::served_by_html(row.served_by.as_ref(), false)) }
                }
                div.reason data-code=(row.short.code.map_or("", ReasonCode::as_str)) { (row.short.text) }
            }
            td { (provenance(set.provenance.as_ref())) div.sub.evidence { (evidence_words(&set.evidence)) } }
            td.num.desired { (set.desired_runners) }
            td.num.idle { (row.runners.idle) }
            td.num.busy { (row.runners.busy) }
            td.num.waiting { (set.jobs_waiting) }
            td.spark { (chart::sparkline(&row.samples, Timestamp::from_system_time(now))) }
            td.last {
                @match set.last_message_at {
                    Some(at) => (time_el(at, now)),
                    None => span.sub { "never" },
                }
            }
            td { (events_list(&row.events, now)) }
        }
    }
}

fn link(filter: &Filter, page: usize) -> String {
    let mut query = format!("?page={page}");
    if !filter.q.is_empty() {
        query.push_str("&q=");
        query.push_str(&query_value(&filter.q));
    }
    if let Some(state) = &filter.state {
        query.push_str("&state=");
        query.push_str(&query_value(state));
    }
    query
}

/// Scale sets on GitHub with our owner label that nothing declares (the last background
/// listing): never a silent zero, so a listing not finished, failed or partial says so.
fn ours_undeclared_card(known: &Known, now: SystemTime) -> Markup {
    html! {
        div.card {
            @match known {
                Known::NotYet => {
                    b id="ours-undeclared" { "?" }
                    span { "ours on GitHub, declared nowhere: not listed yet (a listing runs now; reload)" }
                }
                Known::Listed { at, found, unlisted } => {
                    b id="ours-undeclared" { (found.len()) }
                    span {
                        "ours on GitHub, declared nowhere"
                        @if !unlisted.is_empty() {
                            ", and " span id="ours-undeclared-unlisted" { (unlisted.len()) }
                            " entities not listed (" (unlisted.join("; ")) ")"
                        }
                        " · listed " (time_el(*at, now))
                    }
                    @if !found.is_empty() {
                        span.sub {
                            (found.join(", "))
                            ": declare each in the configuration file, or decommission it \
                             (scalesetctl fleet undeclared gives both commands)"
                        }
                    }
                }
                Known::Failed { at, reason } => {
                    b id="ours-undeclared" { "?" }
                    span { "ours on GitHub, declared nowhere: the listing failed " (time_el(*at, now)) ": " (reason) }
                }
            }
        }
    }
}

/// The overview page.
pub(crate) fn overview(
    view: &Overview,
    ours_undeclared: &Known,
    now: SystemTime,
    session: &Session,
) -> String {
    let t = &view.totals;
    let selected = |v: &str| view.filter.state.as_deref() == Some(v);
    let body = html! {
        (actions::overview_bar(session))
        section.summary {
            div.card { b id="total" { (t.scale_sets) } span { "scale sets" } }
            div.card { b id="ready" { (t.ready) } span { "ready and served, nothing wrong" } }
            div.card { b id="attention" { (t.attention) } span { "need attention" } }
            div.card { b id="disabled" { (t.disabled) } span { "disabled or draining: no new runners" } }
            div.card { b id="desired" { (t.desired) } span { "desired runners" } }
            div.card { b id="jobs-waiting" { (t.jobs_waiting) } span { "jobs waiting" } }
            div.card { b id="not-declared" { (t.not_declared) } span { "not declared: lost on a database loss" } }
            (ours_undeclared_card(ours_undeclared, now))
        }
        form.filter method="get" action="/" {
            input type="search" name="q" placeholder="filter by name or entity" value=(view.filter.q) aria-label="filter";
            select name="state" aria-label="state" {
                option value="" { "any state" }
                option value="attention" selected[selected("attention")] { "needs attention" }
                @for state in STATES {
                    option value=(state) selected[selected(state)] { (state.replace('_', " ")) }
                }
            }
            button type="submit" { "Filter" }
            span.sub id="shown" {
                @match view.shown {
                    Some((first, last)) => {
                        "showing " (first) "–" (last) " of " (view.matching) " matching"
                        @if view.matching != t.scale_sets { " (" (t.scale_sets) " in all)" }
                    }
                    None => { "0 of " (t.scale_sets) " match" }
                }
            }
        }
        @if let Some(unknown) = &view.filter.unknown_state {
            p.error id="unknown-state" {
                "There is no state " code { (unknown) } "; the state filter was not applied. "
                "States: needs attention, " (STATES.join(", ")) "."
            }
        }
        (groups_html(&view.groups))
        @if view.rows.is_empty() {
            p.empty { "No scale set matches." }
        } @else {
            table id="scale-sets" {
                thead { tr {
                    th { "scale set" } th { "entity" } th { "state and reason" }
                    th { "provenance and evidence" } th.num { "desired" } th.num { "idle" }
                    th.num { "busy" } th.num { "jobs waiting" } th { "last hour" }
                    th { "last message" }
                    th { "recent events" }
                } }
                tbody {
                    @for row in &view.rows { (row_html(row, now, session)) }
                }
            }
        }
        @if view.pages > 1 {
            @let page = view.filter.page;
            nav.pager {
                @if page > 1 {
                    a href=(link(&view.filter, page - 1)) rel="prev" { "← previous" }
                }
                span id="page" { "page " (page) " of " (view.pages) }
                @if page < view.pages {
                    a href=(link(&view.filter, page + 1)) rel="next" { "next →" }
                }
            }
        }
    };
    page("Scale sets", &body, true, true)
}

/// One scale set's page.
/// The runners' proxy, SSH keys and user-data options in one line (`none` when unset); SSH
/// keys are counted, not shown.
fn runner_setup(setup: &scaleset_store::RunnerSetup) -> String {
    let mut parts = Vec::new();
    for (name, value) in [
        ("http_proxy", &setup.http_proxy),
        ("https_proxy", &setup.https_proxy),
        ("no_proxy", &setup.no_proxy),
    ] {
        if let Some(value) = value {
            parts.push(format!("{name}={value}"));
        }
    }
    if !setup.ssh_keys.is_empty() {
        parts.push(format!("{} SSH keys", setup.ssh_keys.len()));
    }
    if !setup.extra_packages.is_empty() {
        parts.push(format!("packages {}", setup.extra_packages.join(",")));
    }
    if setup.disable_updates_on_boot {
        parts.push("no updates on boot".to_owned());
    }
    if setup.enable_boot_debug {
        parts.push("boot debug".to_owned());
    }
    if let Some(name) = &setup.runner_install_template {
        parts.push(format!("install template {name}"));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join("; ")
    }
}

pub(crate) fn detail(
    view: &Detail,
    now: SystemTime,
    session: &Session,
    done: Option<&str>,
) -> String {
    let row = &view.row;
    let set = &row.set;
    let spec = &set.spec;
    let body = html! {
        p { a href="/" { "← all scale sets" } }
        h2 id="name" { (spec.name()) }
        (actions::detail_actions(session, set, done))
        @if let Some(attention) = &row.attention {
            section id="attention-box" { (attention_html(&row.short, attention)) }
        }
        dl.facts {
            dt { "state" }
            dd { (state_badge(set.state)) (service_badge(set, &row.runners)) " " span.reason { (set.state_reason) } }
            dt { "served by" }
            dd id="served-by" { (lease::served_by_html(row.served_by.as_ref(), true)) }
            dt { "entity" }
            dd { (row.entity) ", runner group " (spec.runner_group().name) }
            dt { "GitHub id" }
            dd {
                @match set.github_id {
                    Some(id) => (id),
                    None => "—",
                }
            }
            dt { "provenance" }
            dd { (provenance(set.provenance.as_ref())) }
            dt { "evidence" }
            dd { (evidence_words(&set.evidence)) }
            dt { "labels" }
            dd { (spec.label_texts().join(", ")) }
            dt { "runners" }
            dd {
                "desired " (set.desired_runners) " (min idle " (spec.min_idle()) ", max "
                (spec.max_runners()) "); idle " (row.runners.idle) ", busy " (row.runners.busy)
                ", starting " (row.runners.starting)
            }
            dt { "jobs waiting" }
            dd { (set.jobs_waiting) }
            dt { "last message" }
            dd {
                @match set.last_message_at {
                    Some(at) => (time_el(at, now)),
                    None => "never",
                }
            }
            dt { "provider" }
            dd {
                (spec.provider())
                @if let Some(error) = &set.provider_error {
                    // The provider's message once: the state's reason quotes it when the
                    // provider's failure is what the state says.
                    " — " span.error id="provider-error" {
                        "failing since " (time_el(error.at, now))
                        @if !set.state_reason.contains(error.message.as_str()) { ": " (error.message) }
                    }
                }
            }
            dt { "platform" }
            dd id="platform" { (spec.os_type().as_str()) "/" (spec.os_arch().as_str()) }
            dt { "runner setup" }
            dd id="runner-setup" { (runner_setup(spec.runner_setup())) }
            dt { "policy" }
            dd {
                "adoption " (spec.adoption_policy().as_str())
                @if spec.repair() { ", repair on" }
            }
        }
        h2 { "Last hour" }
        @let window = chart::Window::of(&row.samples, Timestamp::from_system_time(now));
        @let no_samples = "no samples yet: the worker serving it writes one a minute";
        section.charts {
            (chart::chart("chart-waiting", "Jobs waiting", &chart::waiting_series(&row.samples), window, no_samples))
            (chart::chart("chart-runners", "Runners idle, busy, starting", &chart::runner_series(&row.samples), window, no_samples))
            (chart::chart("chart-latency", "Job start latency (queued to started, s)", &chart::latency_series(&row.samples), window,
                if row.samples.is_empty() { no_samples } else { "no job started in this window" }))
        }
        (chart::collecting_since(window))
        h2 { "Instances (" (view.instances.len()) ")" }
        @if view.instances.is_empty() {
            p.empty { "No instances." }
        } @else {
            @let failing = set.provider_error.is_some();
            table id="instances" {
                thead { tr {
                    th { "name" } th { "status" } th { "in this status" } th { "provider id" }
                    th { "GitHub runner id" } th { "created (UTC)" } th { "bootstrap deadline" }
                } }
                tbody {
                    @for i in &view.instances {
                        tr.instance data-status=(i.status.as_str()) {
                            // The pool key is rarely needed: the name's tooltip keeps it.
                            td title={ "pool key " (i.pool_key) } { code { (i.name) } }
                            (status_cell(i, view.jobs.get(&i.name), failing))
                            td.since title={ "last change " (utc(i.updated_at)) } {
                                (for_how_long(i.updated_at, now))
                            }
                            td { code { (i.provider_id.as_deref().unwrap_or("—")) } }
                            td {
                                @match i.github_runner_id {
                                    Some(runner) => (runner),
                                    None => "—",
                                }
                            }
                            td.created { time datetime=(rfc3339(i.created_at)) { (utc(i.created_at)) } }
                            td.deadline {
                                // Only a runner still coming up has a deadline that matters:
                                // an online or busy one met it.
                                @match (i.status, i.bootstrap_deadline) {
                                    (InstanceStatus::Pending | InstanceStatus::Creating, Some(deadline)) => (time_el(deadline, now)),
                                    (InstanceStatus::Busy, _) => span.sub { "met (running a job)" },
                                    (InstanceStatus::Running, _) => span.sub { "met (online)" },
                                    _ => "—",
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Events" }
        @if row.events.is_empty() {
            p.empty { "No events." }
        } @else {
            table id="events" {
                thead { tr {
                    th { "first seen" } th { "last seen" } th.num { "times" } th { "event" }
                    th { "reason" }
                } }
                tbody {
                    @for e in &row.events {
                        tr.event {
                            td { (time_el(e.at, now)) }
                            td.last-seen { (time_el(e.last_at, now)) }
                            td.num.count { (e.count) }
                            td data-code=(e.code.as_str()) { b { (event_summary(e)) } }
                            td.detail {
                                // The state's reason is shown above; its event says so
                                // instead of repeating it.
                                @if e.reason == set.state_reason {
                                    span.sub { "the state's reason, above" }
                                } @else {
                                    (e.reason)
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page(spec.name().as_str(), &body, true, true)
}

/// An instance's status in the operator's words: `running` is a registered runner without a
/// job, which newcomers read as "running a job", so it says `idle`.
fn instance_status(status: InstanceStatus) -> &'static str {
    match status {
        InstanceStatus::Pending => "starting: the provider is about to be asked",
        InstanceStatus::Creating => "starting: the provider creates it",
        InstanceStatus::Running => "idle: online, no job",
        InstanceStatus::Busy => "busy: running a job",
        InstanceStatus::Deleting => "deleting",
        InstanceStatus::Deleted => "deleted",
        InstanceStatus::Failed => "failed: to be deleted",
    }
}

/// An instance's status cell: its status (naming a busy runner's job) and what it waits for.
fn status_cell(i: &Instance, job: Option<&JobShown>, provider_failing: bool) -> Markup {
    html! {
        td.status {
            @match busy_with(i.status, job) {
                Some(job) => (job),
                None => (instance_status(i.status)),
            }
            @if let Some(waits) = waits_for(i, provider_failing) {
                div.sub.waits { (waits) }
            }
        }
    }
}

/// A busy runner's status naming the job it runs, where GitHub named it:
/// `busy: owner/repo · .github/workflows/ci.yml@refs/heads/main` (the workflow ref loses the
/// repository it starts with; either part may be missing). `None` for any other status, or a
/// job with no names (then [`instance_status`] says `busy: running a job`).
fn busy_with(status: InstanceStatus, job: Option<&JobShown>) -> Option<String> {
    let job = job.filter(|j| status == InstanceStatus::Busy && !j.is_empty())?;
    let workflow = job.workflow.as_deref().map(|w| {
        job.repository
            .as_deref()
            .and_then(|r| w.strip_prefix(r))
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|rest| !rest.is_empty())
            .unwrap_or(w)
    });
    let parts: Vec<&str> = [job.repository.as_deref(), workflow]
        .into_iter()
        .flatten()
        .collect();
    Some(format!("busy: {}", parts.join(" · ")))
}

/// What an instance waits for before it goes, where it waits: a `deleting` row for the
/// provider to delete its machine (after the provider's back-off when it fails), a runner an
/// operator asked to remove for its job to end.
fn waits_for(instance: &Instance, provider_failing: bool) -> Option<&'static str> {
    match (instance.status, instance.removal_requested_at.is_some()) {
        (InstanceStatus::Deleting, _) if provider_failing => Some(
            "its runner is removed from GitHub; waits for the provider, which is failing, to \
             delete its machine (tried again after the back-off)",
        ),
        (InstanceStatus::Deleting, _) => {
            Some("its runner is removed from GitHub; waits for the provider to delete its machine")
        }
        (InstanceStatus::Busy, true) => Some("removal asked for: retired when its job ends"),
        (InstanceStatus::Pending | InstanceStatus::Creating | InstanceStatus::Running, true) => {
            Some("removal asked for: retired within the worker's watch interval")
        }
        _ => None,
    }
}

/// How long since `since`, as `for 3 min` (never negative).
fn for_how_long(since: Timestamp, now: SystemTime) -> String {
    let ago = ago(since, now);
    match ago.strip_suffix(" ago") {
        Some(span) => format!("for {span}"),
        None => "just now".to_owned(),
    }
}

/// The sign-in form; `error` says why the last attempt failed.
pub(crate) fn login(error: Option<&str>) -> String {
    let body = html! {
        form.login method="post" action="/login" {
            h2 { "Sign in" }
            p.sub {
                "The status page uses the API's tokens. Create one with "
                code { "scaleset-server token create NAME" } " (the demo prints one when it starts)."
            }
            @if let Some(error) = error {
                p.error id="login-error" { (error) }
            }
            label for="token" { "API token" }
            input id="token" name="token" type="password" autocomplete="off" required autofocus;
            button type="submit" { "Sign in" }
        }
    };
    page("Sign in", &body, false, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(status: InstanceStatus, removal: bool) -> Instance {
        Instance {
            name: "linux-x64-abc".to_owned(),
            scale_set_id: scaleset_store::ScaleSetId(uuid::Uuid::from_u128(1)),
            provider_id: Some("i-1".to_owned()),
            github_runner_id: Some(5),
            pool_key: "pool".to_owned(),
            status,
            bootstrap_deadline: None,
            created_at: Timestamp::from_unix_millis(1_796_205_600_000),
            updated_at: Timestamp::from_unix_millis(1_796_205_600_000),
            removal_requested_at: removal.then(|| Timestamp::from_unix_millis(1_796_205_600_000)),
        }
    }

    #[test]
    fn a_busy_runner_names_its_job_with_what_github_gave() {
        let job = |repository: Option<&str>, workflow: Option<&str>| JobShown {
            repository: repository.map(str::to_owned),
            workflow: workflow.map(str::to_owned),
        };
        let ci = "octo/app/.github/workflows/ci.yml@refs/heads/main";
        let busy = |j: &JobShown| busy_with(InstanceStatus::Busy, Some(j));
        assert_eq!(
            busy(&job(Some("octo/app"), Some(ci))).as_deref(),
            Some("busy: octo/app · .github/workflows/ci.yml@refs/heads/main")
        );
        assert_eq!(
            busy(&job(Some("octo/app"), None)).as_deref(),
            Some("busy: octo/app")
        );
        assert_eq!(
            busy(&job(None, Some(ci))).as_deref(),
            Some(&*format!("busy: {ci}"))
        );
        // A workflow from another repository (a reusable one) is shown whole.
        let shared = "octo/shared/.github/workflows/build.yml@v1";
        assert_eq!(
            busy(&job(Some("octo/app"), Some(shared))).as_deref(),
            Some(&*format!("busy: octo/app · {shared}"))
        );
        // Nothing named, no job recorded, or not busy: the plain words.
        assert_eq!(busy(&job(None, None)), None);
        assert_eq!(busy_with(InstanceStatus::Busy, None), None);
        assert_eq!(
            busy_with(
                InstanceStatus::Running,
                Some(&job(Some("octo/app"), Some(ci)))
            ),
            None
        );
    }

    #[test]
    fn a_busy_row_shows_its_job_escaped_and_one_without_names_says_running_a_job() {
        let busy = instance(InstanceStatus::Busy, false);
        let job = JobShown {
            repository: Some("octo/<app>".to_owned()),
            workflow: Some(".github/workflows/ci.yml@refs/heads/main".to_owned()),
        };
        let named = status_cell(&busy, Some(&job), false).into_string();
        assert_eq!(
            named,
            r#"<td class="status">busy: octo/&lt;app&gt; · .github/workflows/ci.yml@refs/heads/main</td>"#
        );
        let unnamed = status_cell(&busy, None, false).into_string();
        assert_eq!(unnamed, r#"<td class="status">busy: running a job</td>"#);
        // A removal asked for still says so beside the job.
        let leaving = status_cell(&instance(InstanceStatus::Busy, true), Some(&job), false);
        assert!(
            leaving.into_string().contains("retired when its job ends"),
            "the waits line stays"
        );
    }

    #[test]
    fn an_idle_runner_says_idle_and_a_busy_one_says_it_runs_a_job() {
        assert_eq!(
            instance_status(InstanceStatus::Running),
            "idle: online, no job"
        );
        assert_eq!(instance_status(InstanceStatus::Busy), "busy: running a job");
        for status in [
            InstanceStatus::Pending,
            InstanceStatus::Creating,
            InstanceStatus::Running,
            InstanceStatus::Deleting,
            InstanceStatus::Deleted,
            InstanceStatus::Failed,
        ] {
            assert!(
                !instance_status(status).contains("running"),
                "{status:?} never reads as running a job"
            );
        }
    }

    #[test]
    fn a_deleting_instance_says_what_it_waits_for() {
        let deleting = instance(InstanceStatus::Deleting, false);
        assert_eq!(
            waits_for(&deleting, false),
            Some("its runner is removed from GitHub; waits for the provider to delete its machine")
        );
        assert!(
            waits_for(&deleting, true).is_some_and(|w| w.contains("failing")),
            "a failing provider is named"
        );
        assert_eq!(
            waits_for(&instance(InstanceStatus::Busy, true), false),
            Some("removal asked for: retired when its job ends")
        );
        assert_eq!(
            waits_for(&instance(InstanceStatus::Busy, false), false),
            None
        );
        assert_eq!(
            waits_for(&instance(InstanceStatus::Running, false), false),
            None
        );
    }

    #[test]
    fn instance_times_are_in_utc_to_the_second_with_how_long_since() {
        let at = Timestamp::from_unix_millis(1_796_205_600_000 + 7_000);
        assert_eq!(utc(at), "2026-12-02 10:00:07 UTC");
        let now =
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_796_205_600_000 + 187_000);
        assert_eq!(for_how_long(at, now), "for 3 min");
    }

    #[test]
    fn an_event_reads_as_its_codes_sentence_or_its_kind_in_words() {
        let event = |kind, code| Event {
            id: 1,
            scale_set_id: scaleset_store::ScaleSetId(uuid::Uuid::from_u128(1)),
            kind,
            code,
            reason: "detail".to_owned(),
            at: Timestamp::from_unix_millis(0),
            count: 1,
            last_at: Timestamp::from_unix_millis(0),
        };
        assert_eq!(
            event_summary(&event(
                scaleset_store::EventKind::Ready,
                ReasonCode::ScaleSetCreated
            )),
            "ready: created on GitHub by this controller"
        );
        assert_eq!(
            event_summary(&event(
                scaleset_store::EventKind::ForeignSession,
                ReasonCode::Unspecified
            )),
            "foreign session"
        );
    }

    fn card(known: &Known) -> String {
        ours_undeclared_card(known, SystemTime::now()).into_string()
    }

    #[test]
    fn the_ours_undeclared_card_never_shows_a_zero_it_does_not_know() {
        let at = Timestamp::from_system_time(SystemTime::now());
        let not_yet = card(&Known::NotYet);
        assert!(
            not_yet.contains(r#"<b id="ours-undeclared">?</b>"#)
                && not_yet.contains("not listed yet"),
            "{not_yet}"
        );
        let failed = card(&Known::Failed {
            at,
            reason: "the database did not answer".to_owned(),
        });
        assert!(
            failed.contains(r#"<b id="ours-undeclared">?</b>"#)
                && failed.contains("the database did not answer"),
            "{failed}"
        );
        let partial = card(&Known::Listed {
            at,
            found: Vec::new(),
            unlisted: vec!["organization acme: GitHub did not answer".to_owned()],
        });
        assert!(
            partial.contains(r#"<b id="ours-undeclared">0</b>"#)
                && partial.contains(r#"<span id="ours-undeclared-unlisted">1</span>"#)
                && partial.contains("organization acme: GitHub did not answer"),
            "{partial}"
        );
        let found = card(&Known::Listed {
            at,
            found: vec!["made-by-api (organization acme)".to_owned()],
            unlisted: Vec::new(),
        });
        assert!(
            found.contains(r#"<b id="ours-undeclared">1</b>"#)
                && found.contains("made-by-api (organization acme)")
                && found.contains("decommission")
                && !found.contains("not listed"),
            "{found}"
        );
    }
}
