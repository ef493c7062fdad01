//! A fleet file as typed data: the `[[scale_set]]` tables of `docs/configuration.md` with the
//! keys the server's fleet parser reads, serialized by `toml` (never assembled as text), so
//! `scalesetctl fleet export` writes what `plan` reads back as the stored specs.

use std::collections::BTreeMap;

use scaleset_api::v1::{Entity, ScaleSet};
use serde::Serialize;

/// The file: its scale sets.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct FleetFile {
    /// `[[scale_set]]`.
    pub(crate) scale_set: Vec<FleetScaleSet>,
}

/// One `[[scale_set]]` table. Empty and default-free values are written out in full, so the
/// file states the stored spec, not the parser's defaults of the day.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FleetScaleSet {
    pub(crate) name: String,
    pub(crate) credentials: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) repository: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) enterprise: Option<String>,
    pub(crate) runner_group: String,
    pub(crate) labels: Vec<String>,
    pub(crate) disable_update: bool,
    pub(crate) provider: String,
    pub(crate) image: String,
    pub(crate) flavor: String,
    pub(crate) min_idle: u32,
    pub(crate) max_runners: u32,
    pub(crate) bootstrap_timeout: String,
    pub(crate) scale_down_delay: String,
    pub(crate) max_idle_lifetime: String,
    pub(crate) max_lifetime: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) runner_prefix: String,
    pub(crate) enabled: bool,
    pub(crate) adoption_policy: String,
    pub(crate) repair: bool,
    pub(crate) extra_specs: toml::Table,
}

/// What an export could not carry, for the operator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Dropped {
    /// Scale sets whose entity is not listed (skipped).
    pub(crate) without_entity: Vec<String>,
    /// Extra-spec paths whose value was null (TOML has no null).
    pub(crate) nulls: Vec<String>,
}

impl FleetFile {
    /// The stored scale sets as fleet tables, by entity name then scale-set name.
    pub(crate) fn of(sets: &[ScaleSet], entities: &[Entity]) -> (Self, Dropped) {
        let by_id: BTreeMap<uuid::Uuid, &Entity> = entities.iter().map(|e| (e.id, e)).collect();
        let mut dropped = Dropped::default();
        let mut scale_set = Vec::new();
        for set in sets {
            let Some(entity) = by_id.get(&set.entity_id) else {
                dropped.without_entity.push(set.spec.name.clone());
                continue;
            };
            let spec = &set.spec;
            let path = format!("{}.extra_specs", spec.name);
            let extra_specs =
                match crate::garm::to_toml(&spec.extra_specs, &path, &mut dropped.nulls) {
                    Some(toml::Value::Table(table)) => table,
                    _ => toml::Table::new(),
                };
            let kind = entity.kind.as_str();
            let named = |wanted: &str| (kind == wanted).then(|| entity.name.clone());
            scale_set.push(FleetScaleSet {
                name: spec.name.clone(),
                credentials: entity.credentials.clone(),
                organization: named("organization"),
                repository: named("repository"),
                enterprise: named("enterprise"),
                runner_group: spec.runner_group.clone(),
                labels: spec.labels.clone(),
                disable_update: spec.disable_update,
                provider: spec.provider.clone(),
                image: spec.image.clone(),
                flavor: spec.flavor.clone(),
                min_idle: spec.min_idle,
                max_runners: spec.max_runners,
                bootstrap_timeout: seconds(spec.bootstrap_timeout_secs),
                scale_down_delay: seconds(spec.scale_down_delay_secs),
                max_idle_lifetime: seconds(spec.max_idle_lifetime_secs),
                max_lifetime: seconds(spec.max_lifetime_secs),
                runner_prefix: spec.runner_prefix.clone(),
                enabled: spec.enabled,
                adoption_policy: serde_json::to_value(spec.adoption_policy)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "owned".to_owned()),
                repair: spec.repair,
                extra_specs,
            });
        }
        scale_set.sort_by(|a, b| {
            (
                a.organization.as_ref(),
                a.repository.as_ref(),
                a.enterprise.as_ref(),
                &a.name,
            )
                .cmp(&(
                    b.organization.as_ref(),
                    b.repository.as_ref(),
                    b.enterprise.as_ref(),
                    &b.name,
                ))
        });
        (Self { scale_set }, dropped)
    }

    /// The file's text.
    ///
    /// # Errors
    ///
    /// When `toml` cannot write a value (it writes every value these tables hold).
    pub(crate) fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}

fn seconds(secs: u64) -> String {
    format!("{secs}s")
}
