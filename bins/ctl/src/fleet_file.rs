//! A fleet file as typed data: the `[[scale_set]]` tables of `docs/configuration.md` with the
//! keys the server's fleet parser reads, serialized by `toml` (never assembled as text), so
//! `scalesetctl fleet export` writes what `plan` reads back as the stored specs, and
//! `scalesetctl import garm` writes what GARM ran, with its takeover note, through the same
//! serializer.

use std::collections::BTreeMap;

use scaleset_api::v1::{Entity, ScaleSet};
use serde::Serialize;

/// The file: its scale sets.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct FleetFile {
    /// `[[scale_set]]`.
    pub(crate) scale_set: Vec<FleetScaleSet>,
}

/// One `[[scale_set]]` table. An export writes every value out in full, so the file states the
/// stored spec, not the parser's defaults of the day; an import leaves out (`None`) what GARM
/// has no value for, so the parser's default applies.
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
    /// Signed as GARM's answers are: an import writes what GARM had, and the fleet parser
    /// refuses a negative count with its own message.
    pub(crate) min_idle: i64,
    pub(crate) max_runners: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bootstrap_timeout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) scale_down_delay: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_idle_lifetime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_lifetime: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) runner_prefix: String,
    pub(crate) enabled: bool,
    pub(crate) adoption_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) repair: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) extra_specs: Option<toml::Table>,
    /// `[scale_set.takeover]`: whose scale set it was (written by an import, never exported:
    /// it matters only until the set is adopted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) takeover: Option<FleetTakeover>,
}

/// A scale set's takeover note: the manager that ran it and under which ids, the evidence
/// adoption takes it on (`docs/adoption.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FleetTakeover {
    pub(crate) from: String,
    pub(crate) controller_id: String,
    pub(crate) github_id: u64,
    pub(crate) garm_id: u64,
    pub(crate) pool_id: String,
    /// The other manager's runner prefix: its runners on GitHub are recognised by it even if
    /// the operator changes the set's own `runner_prefix`.
    pub(crate) runner_prefix: String,
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
            let extra_specs = match to_toml(&spec.extra_specs, &path, &mut dropped.nulls) {
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
                min_idle: i64::from(spec.min_idle),
                max_runners: i64::from(spec.max_runners),
                bootstrap_timeout: Some(seconds(spec.bootstrap_timeout_secs)),
                scale_down_delay: Some(seconds(spec.scale_down_delay_secs)),
                max_idle_lifetime: Some(seconds(spec.max_idle_lifetime_secs)),
                max_lifetime: Some(seconds(spec.max_lifetime_secs)),
                runner_prefix: spec.runner_prefix.clone(),
                enabled: spec.enabled,
                adoption_policy: serde_json::to_value(spec.adoption_policy)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "owned".to_owned()),
                repair: Some(spec.repair),
                extra_specs: Some(extra_specs),
                takeover: None,
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

/// JSON → TOML for extra specs; TOML has no null, so nulls are dropped and named in `dropped`.
pub(crate) fn to_toml(
    value: &serde_json::Value,
    path: &str,
    dropped: &mut Vec<String>,
) -> Option<toml::Value> {
    use serde_json::Value as J;
    Some(match value {
        J::Null => {
            dropped.push(path.to_owned());
            return None;
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(f)) => toml::Value::Float(f),
            (None, None) => toml::Value::String(n.to_string()),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(
            items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| to_toml(v, &format!("{path}[{i}]"), dropped))
                .collect(),
        ),
        J::Object(map) => toml::Value::Table(
            map.iter()
                .filter_map(|(k, v)| {
                    Some((k.clone(), to_toml(v, &format!("{path}.{k}"), dropped)?))
                })
                .collect(),
        ),
    })
}
