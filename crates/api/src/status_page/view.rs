//! What the status page shows, read from the store: the filtered, paginated overview (one row
//! per scale set with its runner counts and recent events) and one scale set's detail with its
//! instances. The filter and page arithmetic are plain functions over the listed scale sets.

use std::collections::HashMap;

use scaleset_store::{
    Entity, EntityId, Event, Instance, InstanceStatus, ScaleSet, ScaleSetId, ScaleSetState, Store,
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
    /// Only this state (`attention` = every state but ready and pending).
    pub(crate) state: Option<String>,
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
                "state" if !value.is_empty() => filter.state = Some(value.into_owned()),
                "page" => filter.page = value.parse().unwrap_or(1).max(1),
                _ => {}
            }
        }
        filter
    }

    fn matches(&self, set: &ScaleSet, entity: &str) -> bool {
        let q = self.q.to_lowercase();
        let text = q.is_empty()
            || set.spec.name.to_lowercase().contains(&q)
            || entity.to_lowercase().contains(&q);
        let state = match self.state.as_deref() {
            None => true,
            Some("attention") => needs_attention(set.state),
            Some(wanted) => set.state.as_str() == wanted,
        };
        text && state
    }
}

/// Whether an operator should look at a scale set in this state: the store's one rule, which
/// the metrics and the CLI count by too.
pub(crate) fn needs_attention(state: ScaleSetState) -> bool {
    state.needs_attention()
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

/// One row of the overview.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) set: ScaleSet,
    pub(crate) entity: String,
    pub(crate) runners: Runners,
    pub(crate) events: Vec<Event>,
}

/// Totals over every scale set (not only the page).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) scale_sets: usize,
    pub(crate) ready: usize,
    pub(crate) attention: usize,
    pub(crate) desired: u64,
    pub(crate) jobs_waiting: u64,
}

/// The overview.
#[derive(Debug, Clone)]
pub(crate) struct Overview {
    pub(crate) totals: Totals,
    pub(crate) filter: Filter,
    /// Scale sets matching the filter.
    pub(crate) matching: usize,
    pub(crate) pages: usize,
    pub(crate) rows: Vec<Row>,
}

/// One scale set in full.
#[derive(Debug, Clone)]
pub(crate) struct Detail {
    pub(crate) row: Row,
    pub(crate) instances: Vec<Instance>,
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

async fn entities(store: &dyn Store) -> scaleset_store::Result<HashMap<EntityId, String>> {
    Ok(store
        .list_entities()
        .await?
        .iter()
        .map(|e| (e.id, entity_label(e)))
        .collect())
}

/// Reads the overview for `filter` (the page is clamped to the last one).
pub(crate) async fn overview(
    store: &dyn Store,
    mut filter: Filter,
) -> scaleset_store::Result<Overview> {
    let entities = entities(store).await?;
    let mut sets = store.list_scale_sets(None).await?;
    sets.sort_by(|a, b| {
        a.spec
            .name
            .to_lowercase()
            .cmp(&b.spec.name.to_lowercase())
            .then(a.id.0.cmp(&b.id.0))
    });
    let totals = Totals {
        scale_sets: sets.len(),
        ready: sets
            .iter()
            .filter(|s| s.state == ScaleSetState::Ready)
            .count(),
        attention: sets.iter().filter(|s| needs_attention(s.state)).count(),
        desired: sets.iter().map(|s| u64::from(s.desired_runners)).sum(),
        jobs_waiting: sets.iter().map(|s| u64::from(s.jobs_waiting)).sum(),
    };
    let label = |set: &ScaleSet| entities.get(&set.entity_id).cloned().unwrap_or_default();
    let matching: Vec<ScaleSet> = sets
        .into_iter()
        .filter(|s| filter.matches(s, &label(s)))
        .collect();
    let pages = matching.len().div_ceil(PER_PAGE).max(1);
    filter.page = filter.page.min(pages);
    let mut rows = Vec::new();
    for set in matching
        .iter()
        .skip((filter.page - 1) * PER_PAGE)
        .take(PER_PAGE)
    {
        rows.push(row(store, set.clone(), label(set), ROW_EVENTS).await?.0);
    }
    Ok(Overview {
        totals,
        matching: matching.len(),
        pages,
        filter,
        rows,
    })
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
            runners: Runners::count(&instances),
            set,
            entity,
            events,
        },
        instances,
    ))
}

/// Reads one scale set with its instances and its longer event trail.
pub(crate) async fn detail(store: &dyn Store, id: ScaleSetId) -> scaleset_store::Result<Detail> {
    let set = store.get_scale_set(id).await?;
    let entity = store
        .get_entity(set.entity_id)
        .await
        .map(|e| entity_label(&e))?;
    let (row, mut instances) = row(store, set, entity, DETAIL_EVENTS).await?;
    instances.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Detail { row, instances })
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
                page: 3
            }
        );
        assert_eq!(Filter::parse(Some("page=-2")).page, 1);
        assert_eq!(Filter::parse(Some("page=0")).page, 1);
        assert_eq!(Filter::parse(None).page, 1);
        assert_eq!(Filter::parse(Some("state=")).state, None);
    }

    #[test]
    fn attention_is_every_state_but_ready_and_pending() {
        assert!(!needs_attention(ScaleSetState::Ready));
        assert!(!needs_attention(ScaleSetState::Pending));
        for state in [
            ScaleSetState::Refused,
            ScaleSetState::Drifted,
            ScaleSetState::ForeignSession,
            ScaleSetState::Dormant,
            ScaleSetState::Error,
        ] {
            assert!(needs_attention(state), "{state:?}");
        }
    }
}
