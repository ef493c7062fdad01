//! The status page's HTML, from the views: the overview (summary cards, filter, one row per
//! scale set, pager), one scale set's detail (facts, evidence, instances, events), the login
//! form. Pure: views in, text out, every stored string escaped.

use std::fmt::Write as _;
use std::time::SystemTime;

use scaleset_store::{Event, Evidence, Provenance, ScaleSetState};

use super::html::{esc, page, query_value, time_el};
use super::view::{Detail, Filter, Overview, Row};

const STATES: [&str; 7] = [
    "ready",
    "pending",
    "refused",
    "drifted",
    "foreign_session",
    "dormant",
    "error",
];

fn state_badge(state: ScaleSetState) -> String {
    let name = state.as_str();
    format!(
        r#"<span class="badge s-{name}" data-state="{name}">{}</span>"#,
        name.replace('_', " ")
    )
}

fn provenance(p: Option<&Provenance>) -> String {
    match p {
        Some(p) => format!(
            r#"<span class="p-{0}" data-provenance="{0}">{0}</span>"#,
            p.as_str()
        ),
        None => r#"<span class="sub" data-provenance="">—</span>"#.to_owned(),
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
            _ => "evidence this version does not name",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn events_list(events: &[Event], now: SystemTime) -> String {
    if events.is_empty() {
        return r#"<span class="sub">—</span>"#.to_owned();
    }
    let mut out = String::from(r#"<ul class="events">"#);
    for e in events {
        let _ = write!(
            out,
            r#"<li title="{}">{} <span class="k">{}</span>{} {}</li>"#,
            esc(&e.reason),
            time_el(e.last_at, now),
            esc(&e.kind),
            repeats(e, now),
            esc(&e.reason)
        );
    }
    out.push_str("</ul>");
    out
}

/// For an event that happened more than once: how often, and since when (the list shows when
/// it happened last).
fn repeats(e: &Event, now: SystemTime) -> String {
    if e.count <= 1 {
        return String::new();
    }
    format!(
        r#" <span class="repeats">×{} since {}</span>"#,
        e.count,
        time_el(e.at, now)
    )
}

fn row_html(row: &Row, now: SystemTime) -> String {
    let set = &row.set;
    let id = set.id.0;
    let last = set.last_message_at.map_or_else(
        || r#"<span class="sub">never</span>"#.to_owned(),
        |at| time_el(at, now),
    );
    let evidence = evidence_words(&set.evidence);
    let github = set
        .github_id
        .map_or_else(String::new, |g| format!(" · GitHub id {g}"));
    format!(
        r#"<tr class="scale-set" data-name="{name}" data-state="{state}"><td class="name"><a href="/scale-sets/{id}">{name}</a><div class="sub">{labels}</div></td><td>{entity}<div class="sub">group {group}{github}</div></td><td>{badge}<div class="reason">{reason}</div></td><td>{prov}<div class="sub evidence">{evidence}</div></td><td class="num desired">{desired}</td><td class="num idle">{idle}</td><td class="num busy">{busy}</td><td class="num waiting">{waiting}</td><td class="last">{last}</td><td>{events}</td></tr>"#,
        name = esc(&set.spec.name),
        state = set.state.as_str(),
        labels = esc(&set.spec.labels.join(", ")),
        entity = esc(&row.entity),
        group = esc(&set.spec.runner_group.name),
        badge = state_badge(set.state),
        reason = esc(&set.state_reason),
        prov = provenance(set.provenance.as_ref()),
        evidence = esc(&evidence),
        desired = set.desired_runners,
        idle = row.runners.idle,
        busy = row.runners.busy,
        waiting = set.jobs_waiting,
        events = events_list(&row.events, now),
    )
}

fn link(filter: &Filter, page: usize) -> String {
    let mut query = format!("?page={page}");
    if !filter.q.is_empty() {
        let _ = write!(query, "&q={}", query_value(&filter.q));
    }
    if let Some(state) = &filter.state {
        let _ = write!(query, "&state={}", query_value(state));
    }
    esc(&query)
}

/// The overview page.
pub(crate) fn overview(view: &Overview, now: SystemTime) -> String {
    let t = &view.totals;
    let mut body = format!(
        r#"<section class="summary"><div class="card"><b id="total">{}</b><span>scale sets</span></div><div class="card"><b id="ready">{}</b><span>ready</span></div><div class="card"><b id="attention">{}</b><span>need attention</span></div><div class="card"><b>{}</b><span>desired runners</span></div><div class="card"><b>{}</b><span>jobs waiting</span></div></section>"#,
        t.scale_sets, t.ready, t.attention, t.desired, t.jobs_waiting
    );
    let mut options = String::from(r#"<option value="">any state</option>"#);
    let selected = |v: &str| {
        if view.filter.state.as_deref() == Some(v) {
            " selected"
        } else {
            ""
        }
    };
    let _ = write!(
        options,
        r#"<option value="attention"{}>needs attention</option>"#,
        selected("attention")
    );
    for state in STATES {
        let _ = write!(
            options,
            r#"<option value="{state}"{}>{}</option>"#,
            selected(state),
            state.replace('_', " ")
        );
    }
    let _ = write!(
        body,
        r#"<form class="filter" method="get" action="/"><input type="search" name="q" placeholder="filter by name or entity" value="{}" aria-label="filter"><select name="state" aria-label="state">{options}</select><button type="submit">Filter</button><span class="sub">{} of {} shown</span></form>"#,
        esc(&view.filter.q),
        view.matching,
        t.scale_sets
    );
    if view.rows.is_empty() {
        body.push_str(r#"<p class="empty">No scale set matches.</p>"#);
    } else {
        body.push_str(r#"<table id="scale-sets"><thead><tr><th>scale set</th><th>entity</th><th>state and reason</th><th>provenance and evidence</th><th class="num">desired</th><th class="num">idle</th><th class="num">busy</th><th class="num">jobs waiting</th><th>last message</th><th>recent events</th></tr></thead><tbody>"#);
        for row in &view.rows {
            body.push_str(&row_html(row, now));
        }
        body.push_str("</tbody></table>");
    }
    if view.pages > 1 {
        let page = view.filter.page;
        body.push_str(r#"<nav class="pager">"#);
        if page > 1 {
            let _ = write!(
                body,
                r#"<a href="{}" rel="prev">← previous</a>"#,
                link(&view.filter, page - 1)
            );
        }
        let _ = write!(
            body,
            r#"<span id="page">page {page} of {}</span>"#,
            view.pages
        );
        if page < view.pages {
            let _ = write!(
                body,
                r#"<a href="{}" rel="next">next →</a>"#,
                link(&view.filter, page + 1)
            );
        }
        body.push_str("</nav>");
    }
    page("Scale sets", &body, true, true)
}

/// One scale set's page.
pub(crate) fn detail(view: &Detail, now: SystemTime) -> String {
    let row = &view.row;
    let set = &row.set;
    let spec = &set.spec;
    let mut body = format!(
        r#"<p><a href="/">← all scale sets</a></p><h2 id="name">{name}</h2><dl class="facts"><dt>state</dt><dd>{badge} <span class="reason">{reason}</span></dd><dt>entity</dt><dd>{entity}, runner group {group}</dd><dt>GitHub id</dt><dd>{github}</dd><dt>provenance</dt><dd>{prov}</dd><dt>evidence</dt><dd>{evidence}</dd><dt>labels</dt><dd>{labels}</dd><dt>runners</dt><dd>desired {desired} (min idle {min_idle}, max {max}); idle {idle}, busy {busy}, starting {starting}</dd><dt>jobs waiting</dt><dd>{waiting}</dd><dt>last message</dt><dd>{last}</dd><dt>policy</dt><dd>adoption {policy}{repair}; provider {provider}</dd></dl>"#,
        name = esc(&spec.name),
        badge = state_badge(set.state),
        reason = esc(&set.state_reason),
        entity = esc(&row.entity),
        group = esc(&spec.runner_group.name),
        github = set
            .github_id
            .map_or_else(|| "—".to_owned(), |g| g.to_string()),
        prov = provenance(set.provenance.as_ref()),
        evidence = esc(&evidence_words(&set.evidence)),
        labels = esc(&spec.labels.join(", ")),
        desired = set.desired_runners,
        min_idle = spec.min_idle,
        max = spec.max_runners,
        idle = row.runners.idle,
        busy = row.runners.busy,
        starting = row.runners.starting,
        waiting = set.jobs_waiting,
        last = set
            .last_message_at
            .map_or_else(|| "never".to_owned(), |at| time_el(at, now)),
        policy = set_policy(set),
        repair = if spec.repair { ", repair on" } else { "" },
        provider = esc(&spec.provider),
    );
    let _ = write!(body, r#"<h2>Instances ({})</h2>"#, view.instances.len());
    if view.instances.is_empty() {
        body.push_str(r#"<p class="empty">No instances.</p>"#);
    } else {
        body.push_str(r#"<table id="instances"><thead><tr><th>name</th><th>status</th><th>provider id</th><th>GitHub runner id</th><th>pool key</th><th>created</th><th>bootstrap deadline</th></tr></thead><tbody>"#);
        for i in &view.instances {
            let _ = write!(
                body,
                r#"<tr class="instance" data-status="{status}"><td><code>{name}</code></td><td>{status}</td><td><code>{provider}</code></td><td>{runner}</td><td><code>{pool}</code></td><td>{created}</td><td>{deadline}</td></tr>"#,
                status = i.status.as_str(),
                name = esc(&i.name),
                provider = esc(i.provider_id.as_deref().unwrap_or("—")),
                runner = i
                    .github_runner_id
                    .map_or_else(|| "—".to_owned(), |r| r.to_string()),
                pool = esc(&i.pool_key),
                created = time_el(i.created_at, now),
                deadline = i
                    .bootstrap_deadline
                    .map_or_else(|| "—".to_owned(), |d| time_el(d, now)),
            );
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<h2>Events</h2>");
    if row.events.is_empty() {
        body.push_str(r#"<p class="empty">No events.</p>"#);
    } else {
        body.push_str(r#"<table id="events"><thead><tr><th>first seen</th><th>last seen</th><th class="num">times</th><th>event</th><th>reason</th></tr></thead><tbody>"#);
        for e in &row.events {
            let _ = write!(
                body,
                r#"<tr class="event"><td>{}</td><td class="last-seen">{}</td><td class="num count">{}</td><td><b>{}</b></td><td>{}</td></tr>"#,
                time_el(e.at, now),
                time_el(e.last_at, now),
                e.count,
                esc(&e.kind),
                esc(&e.reason)
            );
        }
        body.push_str("</tbody></table>");
    }
    page(&spec.name, &body, true, true)
}

fn set_policy(set: &scaleset_store::ScaleSet) -> &'static str {
    set.spec.adoption_policy.as_str()
}

/// The sign-in form; `error` says why the last attempt failed.
pub(crate) fn login(error: Option<&str>) -> String {
    let error = error.map_or_else(String::new, |e| {
        format!(r#"<p class="error" id="login-error">{}</p>"#, esc(e))
    });
    let body = format!(
        r#"<form class="login" method="post" action="/login"><h2>Sign in</h2><p class="sub">The status page uses the API's tokens. Create one with <code>scaleset-server token create NAME</code> (the demo prints one when it starts).</p>{error}<label for="token">API token</label><input id="token" name="token" type="password" autocomplete="off" required autofocus><button type="submit">Sign in</button></form>"#
    );
    page("Sign in", &body, false, false)
}
