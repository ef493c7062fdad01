//! What the status page shows, read from the store: the filtered, paginated overview (one row
//! per scale set with its runner counts and recent events) and one scale set's detail with its
//! instances. The filter and page arithmetic are plain functions over the listed scale sets.
//! Whether a scale set needs attention is the store's one rule ([`ScaleSet::attention`]),
//! decided once per scale set at `now` and used by the cards, the filter and the rows alike,
//! so the counts agree with the rows.

use std::collections::HashMap;

use scaleset_fleet::ConfiguredFleet;

use super::chart;
use super::reason::{self, Group, Short};
use scaleset_store::{
    Attention, Entity, EntityId, Event, Instance, InstanceStatus, JobShown, SAMPLE_WINDOW, Sample,
    ScaleSet, ScaleSetId, ScaleSetState, Store, Timestamp,
};

/// Rows per page.
pub(crate) const PER_PAGE: usize = 50;
/// Events shown per row of the overview.
const ROW_EVENTS: u32 = 3;
/// Events shown on the detail view.
const DETAIL_EVENTS: u32 = 50;

/// The overview's query string: `?q=<name part>&state=<state>&page=<n>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// Case-insensitive substring of the name or the entity.
    pub(crate) q: String,
    /// Only this state, or `attention` (the store's rule).
    pub(crate) state: Option<String>,
    /// A `state` that names no state: said on the page, and not applied.
    pub(crate) unknown_state: Option<String>,
    /// 1-based page.
    pub(crate) page: usize,
}

impl Filter {
    /// Parses a raw query string; unknown keys and unparsable pages are ignored.
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut filter = Self {
            page: 1,
            ..Self::default()
        };
        for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match key.as_ref() {
                "q" => filter.q = value.trim().chars().take(200).collect(),
                "state" if !value.is_empty() => {
                    let known = value == "attention"
                        || ScaleSetState::ALL.iter().any(|s| s.as_str() == value);
                    if known {
                        filter.state = Some(value.into_owned());
                    } else {
                        filter.unknown_state = Some(value.chars().take(100).collect());
                    }
                }
                "page" => filter.page = value.parse().unwrap_or(1).max(1),
                _ => {}
            }
        }
        filter
    }

    fn matches(&self, set: &ScaleSet, entity: &str, attention: bool) -> bool {
        let q = self.q.to_lowercase();
        let text = q.is_empty()
            || set.spec.name().as_str().to_lowercase().contains(&q)
            || entity.to_lowercase().contains(&q);
        let state = match self.state.as_deref() {
            None => true,
            Some("attention") => attention,
            Some(wanted) => set.state.as_str() == wanted,
        };
        text && state
    }
}

/// Runner counts of one scale set, from its instances.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Runners {
    pub(crate) idle: usize,
    pub(crate) busy: usize,
    pub(crate) starting: usize,
}

impl Runners {
    fn count(instances: &[Instance]) -> Self {
        let mut runners = Self::default();
        for instance in instances {
            match instance.status {
                InstanceStatus::Running => runners.idle += 1,
                InstanceStatus::Busy => runners.busy += 1,
                InstanceStatus::Pending | InstanceStatus::Creating => runners.starting += 1,
                InstanceStatus::Deleting | InstanceStatus::Deleted | InstanceStatus::Failed => {}
            }
        }
        runners
    }
}

/// How a scale set is served, beside its state: `served`; or, disabled, `draining` while it
/// has runners left and `disabled` once it has none. A disabled set makes no runner: its jobs
/// wait on GitHub whatever its state says.
pub(crate) fn service(set: &ScaleSet, runners: &Runners) -> &'static str {
    match (
        set.spec.enabled(),
        runners.idle + runners.busy + runners.starting,
    ) {
        (true, _) => "served",
        (false, 0) => "disabled",
        (false, _) => "draining",
    }
}

/// One row of the overview.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) set: ScaleSet,
    pub(crate) entity: String,
    pub(crate) runners: Runners,
    pub(crate) events: Vec<Event>,
    /// Why it needs attention, if it does (the store's rule at the time of reading).
    pub(crate) attention: Option<Attention>,
    /// Its samples of the last hour, oldest first.
    pub(crate) samples: Vec<Sample>,
    /// Its reason in one line (the table shows this, the detail page the full text).
    pub(crate) short: Short,
    /// The worker serving it (its lease holder), filled in by `lease::serve_rows`.
    pub(crate) served_by: Option<crate::v1::ServedBy>,
}

/// Totals over every scale set (not only the page).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) scale_sets: usize,
    /// Ready, served (enabled) and not needing attention.
    pub(crate) ready: usize,
    /// Disabled or draining: not served, whatever the state says.
    pub(crate) disabled: usize,
    pub(crate) attention: usize,
    pub(crate) desired: u64,
    pub(crate) jobs_waiting: u64,
    /// Not declared in the configuration file: only in the database, lost on a database loss.
    pub(crate) not_declared: usize,
}

/// The overview.
#[derive(Debug, Clone)]
pub(crate) struct Overview {
    pub(crate) totals: Totals,
    pub(crate) filter: Filter,
    /// Scale sets matching the filter.
    pub(crate) matching: usize,
    /// The 1-based positions (among the matching) of the first and last row shown.
    pub(crate) shown: Option<(usize, usize)>,
    pub(crate) pages: usize,
    pub(crate) rows: Vec<Row>,
    /// Scale sets that need attention for the same reason (over every matching set, not only
    /// the page), largest group first.
    pub(crate) groups: Vec<Group>,
}

/// One scale set in full.
#[derive(Debug, Clone)]
pub(crate) struct Detail {
    pub(crate) row: Row,
    pub(crate) instances: Vec<Instance>,
    /// The job each busy instance runs, as GitHub's `JobStarted` named it, by instance name.
    pub(crate) jobs: HashMap<String, JobShown>,
}

/// `organization acme`, `repository o/r`, `enterprise e`.
pub(crate) fn entity_label(entity: &Entity) -> String {
    let kind = match entity.kind {
        scaleset_store::EntityKind::Repository { .. } => "repository",
        scaleset_store::EntityKind::Organization { .. } => "organization",
        scaleset_store::EntityKind::Enterprise { .. } => "enterprise",
    };
    format!("{kind} {}", entity.kind.path())
}

/// Reads the overview for `filter` at `now` (the page is clamped to the last one).
pub(crate) async fn overview(
    store: &dyn Store,
    configured: &ConfiguredFleet,
    mut filter: Filter,
    now: Timestamp,
) -> scaleset_store::Result<Overview> {
    let listed = store.list_entities().await?;
    let entities: HashMap<EntityId, String> =
        listed.iter().map(|e| (e.id, entity_label(e))).collect();
    let mut sets = store.list_scale_sets(None).await?;
    let not_declared = sets
        .iter()
        .filter(|s| {
            !listed
                .iter()
                .any(|e| e.id == s.entity_id && configured.declares(&e.kind, &s.spec))
        })
        .count();
    sets.sort_by(|a, b| {
        a.spec
            .name()
            .as_str()
            .to_lowercase()
            .cmp(&b.spec.name().as_str().to_lowercase())
            .then(a.id.0.cmp(&b.id.0))
    });
    // Decided once per scale set: the cards, the filter and the rows read the same answer.
    let judged: Vec<(ScaleSet, Option<Attention>)> = sets
        .into_iter()
        .map(|s| {
            let attention = s.attention(now);
            (s, attention)
        })
        .collect();
    let totals = Totals {
        not_declared,
        ..totals(&judged)
    };
    let label = |set: &ScaleSet| entities.get(&set.entity_id).cloned().unwrap_or_default();
    let matching: Vec<(ScaleSet, Option<Attention>)> = judged
        .into_iter()
        .filter(|(s, a)| filter.matches(s, &label(s), a.is_some()))
        .collect();
    let (pages, shown) = page_of(matching.len(), &mut filter.page);
    let on_page: Vec<&(ScaleSet, Option<Attention>)> = matching
        .iter()
        .skip((filter.page - 1) * PER_PAGE)
        .take(PER_PAGE)
        .collect();
    let ids: Vec<ScaleSetId> = on_page.iter().map(|(s, _)| s.id).collect();
    let mut samples = samples_by_set(store, &ids, now).await?;
    let mut rows = Vec::new();
    for (set, attention) in on_page {
        let mut row = row(store, set.clone(), label(set), ROW_EVENTS).await?.0;
        row.attention = attention.clone();
        row.samples = samples.remove(&set.id).unwrap_or_default();
        waiting_reason(&mut row);
        rows.push(row);
    }
    // A row's reason may come from its events; a set off the page is judged by its own
    // typed fields (refusal, provider failure) without an event read per set.
    let groups = reason::groups(matching.iter().filter(|(_, a)| a.is_some()).map(|(s, _)| {
        let short = rows
            .iter()
            .find(|r| r.set.id == s.id)
            .map_or_else(|| reason::short(s, &[]), |r| r.short.clone());
        (s.spec.name().to_string(), short)
    }));
    Ok(Overview {
        groups,
        totals,
        matching: matching.len(),
        shown,
        pages,
        filter,
        rows,
    })
}

/// The summary cards, over every scale set (not only the page).
fn totals(judged: &[(ScaleSet, Option<Attention>)]) -> Totals {
    Totals {
        scale_sets: judged.len(),
        ready: judged
            .iter()
            .filter(|(s, a)| s.state == ScaleSetState::Ready && s.spec.enabled() && a.is_none())
            .count(),
        disabled: judged.iter().filter(|(s, _)| !s.spec.enabled()).count(),
        attention: judged.iter().filter(|(_, a)| a.is_some()).count(),
        desired: judged
            .iter()
            .map(|(s, _)| u64::from(s.desired_runners))
            .sum(),
        jobs_waiting: judged.iter().map(|(s, _)| u64::from(s.jobs_waiting)).sum(),
        not_declared: 0,
    }
}

/// The page count for `matching` rows, the page clamped into it, and the positions of the
/// first and last row on it (`None` when nothing matches).
fn page_of(matching: usize, page: &mut usize) -> (usize, Option<(usize, usize)>) {
    let pages = matching.div_ceil(PER_PAGE).max(1);
    *page = (*page).clamp(1, pages);
    let first = (*page - 1) * PER_PAGE;
    let shown = (matching > first).then(|| (first + 1, matching.min(first + PER_PAGE)));
    (pages, shown)
}

/// The last hour's samples of `ids`, by scale set, each minute drawn
/// ([`chart::held_each_minute`]).
async fn samples_by_set(
    store: &dyn Store,
    ids: &[ScaleSetId],
    now: Timestamp,
) -> scaleset_store::Result<HashMap<ScaleSetId, Vec<Sample>>> {
    let since = Timestamp::from_unix_millis(
        now.unix_millis()
            .saturating_sub(i64::try_from(SAMPLE_WINDOW.as_millis()).unwrap_or(i64::MAX)),
    );
    let mut by_set: HashMap<ScaleSetId, Vec<Sample>> = HashMap::new();
    if ids.is_empty() {
        return Ok(by_set);
    }
    for (id, sample) in store.list_samples(ids, since).await? {
        by_set.entry(id).or_default().push(sample);
    }
    for samples in by_set.values_mut() {
        *samples = chart::held_each_minute(samples, since, now);
    }
    Ok(by_set)
}

async fn row(
    store: &dyn Store,
    set: ScaleSet,
    entity: String,
    events: u32,
) -> scaleset_store::Result<(Row, Vec<Instance>)> {
    let instances = store.list_instances(set.id).await?;
    let mut events = store.list_events(set.id, events).await?;
    // Newest first.
    events.sort_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
    Ok((
        Row {
            short: reason::short(&set, &events),
            runners: Runners::count(&instances),
            set,
            entity,
            events,
            attention: None,
            samples: Vec::new(),
            served_by: None,
        },
        instances,
    ))
}

/// A set that needs attention only because jobs wait too long (its state and provider are
/// fine) says so in its short reason: the store's rule words it in one line.
fn waiting_reason(row: &mut Row) {
    if let Some(attention) = &row.attention
        && !row.set.state.needs_attention()
        && row.set.provider_error.is_none()
    {
        row.short = Short {
            code: None,
            text: attention.reason.clone(),
        };
    }
}

/// Reads one scale set with its instances and its longer event trail.
pub(crate) async fn detail(
    store: &dyn Store,
    id: ScaleSetId,
    now: Timestamp,
) -> scaleset_store::Result<Detail> {
    let set = store.get_scale_set(id).await?;
    let entity = store
        .get_entity(set.entity_id)
        .await
        .map(|e| entity_label(&e))?;
    let attention = set.attention(now);
    let (mut row, mut instances) = row(store, set, entity, DETAIL_EVENTS).await?;
    row.attention = attention;
    waiting_reason(&mut row);
    row.samples = samples_by_set(store, &[id], now)
        .await?
        .remove(&id)
        .unwrap_or_default();
    instances.sort_by(|a, b| a.name.cmp(&b.name));
    let jobs = store.list_instance_jobs(id).await?.into_iter().collect();
    Ok(Detail {
        row,
        instances,
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_reads_its_query_and_ignores_the_rest() {
        let f = Filter::parse(Some("q=linux+x64&state=refused&page=3&x=1"));
        assert_eq!(
            f,
            Filter {
                q: "linux x64".to_owned(),
                state: Some("refused".to_owned()),
                page: 3,
                unknown_state: None,
            }
        );
        assert_eq!(Filter::parse(Some("page=-2")).page, 1);
        assert_eq!(Filter::parse(Some("page=0")).page, 1);
        assert_eq!(Filter::parse(None).page, 1);
        assert_eq!(Filter::parse(Some("state=")).state, None);
    }

    #[test]
    fn an_unknown_state_filter_is_kept_aside_and_not_applied() {
        let f = Filter::parse(Some("state=bogus"));
        assert_eq!(f.state, None);
        assert_eq!(f.unknown_state.as_deref(), Some("bogus"));
        let f = Filter::parse(Some("state=foreign_session"));
        assert_eq!(f.state.as_deref(), Some("foreign_session"));
        assert_eq!(f.unknown_state, None);
        assert_eq!(
            Filter::parse(Some("state=attention")).state.as_deref(),
            Some("attention")
        );
    }

    /// Issue 32 item 2: 66 matching on pages of 50 shows rows 1–50, then 51–66.
    #[test]
    fn the_page_says_which_rows_it_shows() {
        let mut page = 1;
        assert_eq!(page_of(66, &mut page), (2, Some((1, 50))));
        let mut page = 2;
        assert_eq!(page_of(66, &mut page), (2, Some((51, 66))));
        let mut page = 9;
        assert_eq!(page_of(66, &mut page), (2, Some((51, 66))));
        assert_eq!(page, 2, "clamped to the last page");
        let mut page = 1;
        assert_eq!(page_of(0, &mut page), (1, None));
        let mut page = 1;
        assert_eq!(page_of(50, &mut page), (1, Some((1, 50))));
    }
}
