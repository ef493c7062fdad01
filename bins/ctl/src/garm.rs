//! `scalesetctl import garm`: GARM's REST answers (read-only) turned into a fleet file. This
//! module is the pure half: the answers as typed values ([`Snapshot`]) and the mapping to the
//! fleet's TOML with what the operator must supply and what could not be carried ([`Import`]).
//! The HTTP half is `commands::import`.
//!
//! Field meanings follow the capture of a real GARM (`shared/reference/garm`, its field
//! guide): a scale set's `id` is GARM's own, `scale_set_id` is GitHub's; labels are GARM's
//! `tags`; `min_idle_runners` is left out when 0; the runner group is kept by name; a scale set
//! uses its entity's credentials; GARM's API never returns a secret.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Deserialize;

use crate::fleet_file::{FleetFile, FleetScaleSet, FleetTakeover, to_toml};

/// What the fleet file calls GARM in a takeover note (`[scale_set.takeover] from`).
pub(crate) const FROM_GARM: &str = "garm";

/// GARM's `GET /api/v1/controller-info`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Controller {
    /// The controller id: GARM's session owner is `garm-<id>` and its provider calls carry
    /// it as `GARM_CONTROLLER_ID`.
    #[serde(default)]
    pub(crate) controller_id: String,
    /// GARM's version (a commit or a tag).
    #[serde(default)]
    pub(crate) version: String,
}

/// A GitHub endpoint as GARM shows it (inside credentials, entities and scale sets).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Endpoint {
    #[serde(default)]
    pub(crate) base_url: String,
    #[serde(default)]
    pub(crate) api_base_url: String,
}

/// GARM's `GET /api/v1/github/credentials` item (no secret in it).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Credential {
    #[serde(default)]
    pub(crate) name: String,
    /// `pat` or `app`.
    #[serde(default, rename = "auth-type")]
    pub(crate) auth_type: String,
    #[serde(default)]
    pub(crate) endpoint: Endpoint,
    /// Present for App credentials in GARM versions that expose them.
    #[serde(default)]
    pub(crate) app_id: Option<i64>,
    #[serde(default)]
    pub(crate) installation_id: Option<i64>,
}

/// An organization, repository or enterprise as GARM lists it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Entity {
    /// GARM's id of the entity: the second half of its pseudo pool ids.
    #[serde(default)]
    pub(crate) id: String,
    /// The organization's login, the repository's name or the enterprise's slug.
    #[serde(default)]
    pub(crate) name: String,
    /// A repository's owner.
    #[serde(default)]
    pub(crate) owner: String,
    #[serde(default)]
    pub(crate) credentials_name: String,
}

/// One of GARM's labels ("tags").
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Tag {
    #[serde(default)]
    pub(crate) name: String,
}

/// GARM's `GET /api/v1/scalesets` item.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ScaleSet {
    /// GARM's own id (what its instances' `scale_set_id` refers to).
    #[serde(default)]
    pub(crate) id: u64,
    /// GitHub's scale-set id.
    #[serde(default)]
    pub(crate) scale_set_id: u64,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) runner_prefix: String,
    #[serde(default)]
    pub(crate) disable_update: bool,
    #[serde(default)]
    pub(crate) provider_name: String,
    #[serde(default)]
    pub(crate) max_runners: i64,
    /// Left out of GARM's answers when 0.
    #[serde(default)]
    pub(crate) min_idle_runners: i64,
    #[serde(default)]
    pub(crate) image: String,
    #[serde(default)]
    pub(crate) flavor: String,
    #[serde(default)]
    pub(crate) os_type: String,
    #[serde(default)]
    pub(crate) os_arch: String,
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    #[serde(default)]
    pub(crate) enable_shell: bool,
    /// Minutes.
    #[serde(default)]
    pub(crate) runner_bootstrap_timeout: i64,
    #[serde(default)]
    pub(crate) extra_specs: Option<serde_json::Value>,
    /// By name; empty means `Default`.
    #[serde(default, rename = "github-runner-group")]
    pub(crate) runner_group: String,
    #[serde(default)]
    pub(crate) tags: Vec<Tag>,
    #[serde(default)]
    pub(crate) org_id: Option<String>,
    #[serde(default)]
    pub(crate) repo_id: Option<String>,
    #[serde(default)]
    pub(crate) enterprise_id: Option<String>,
    /// The list shows only the id; a single GET adds the name.
    #[serde(default)]
    pub(crate) template_id: Option<u64>,
    #[serde(default)]
    pub(crate) template_name: Option<String>,
}

fn yes() -> bool {
    true
}

/// A GARM pool (`GET /api/v1/pools`): not a scale set, never carried.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Pool {
    #[serde(default)]
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) provider_name: String,
    #[serde(default)]
    pub(crate) max_runners: i64,
}

/// A provider GARM has configured (`GET /api/v1/providers`).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Provider {
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default, rename = "type")]
    pub(crate) kind: String,
}

/// A GARM instance (`GET /api/v1/instances`), counted per scale set for the takeover notes.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Instance {
    /// GARM's scale-set id, when the instance belongs to a scale set.
    #[serde(default)]
    pub(crate) scale_set_id: Option<u64>,
    #[serde(default)]
    pub(crate) runner_status: String,
}

/// Everything the importer reads from GARM.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    pub(crate) controller: Controller,
    pub(crate) credentials: Vec<Credential>,
    pub(crate) organizations: Vec<Entity>,
    pub(crate) repositories: Vec<Entity>,
    pub(crate) enterprises: Vec<Entity>,
    pub(crate) scale_sets: Vec<ScaleSet>,
    pub(crate) pools: Vec<Pool>,
    pub(crate) providers: Vec<Provider>,
    pub(crate) instances: Vec<Instance>,
}

/// The result of an import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Import {
    /// The fleet file's text.
    pub(crate) fleet: String,
    /// What the operator must supply or fill in before applying it.
    pub(crate) must_supply: Vec<String>,
    /// What GARM had that the fleet cannot carry.
    pub(crate) not_carried: Vec<String>,
    /// The scale sets written (name, GitHub id).
    pub(crate) scale_sets: Vec<(String, u64)>,
}

/// The placeholder path written for a credential's secret file.
pub(crate) fn secret_path(credential: &str, auth_type: &str) -> String {
    let what = if auth_type == "app" { "pem" } else { "token" };
    format!("/etc/scaleset/garm-{credential}.{what}")
}

/// GARM's pseudo pool id for a scale-set instance: `<scale set name>-<entity id>`.
pub(crate) fn pseudo_pool_id(scale_set: &str, entity_id: &str) -> String {
    format!("{scale_set}-{entity_id}")
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// Which entity a scale set belongs to: the fleet key and value, its credentials and GARM's id.
struct Owner<'a> {
    key: &'static str,
    value: String,
    credentials: &'a str,
    garm_id: &'a str,
}

fn owner<'a>(snapshot: &'a Snapshot, set: &ScaleSet) -> Option<Owner<'a>> {
    let find = |list: &'a [Entity], id: &Option<String>| {
        let id = id.as_deref().filter(|id| !id.is_empty())?;
        list.iter().find(|e| e.id == id)
    };
    if let Some(org) = find(&snapshot.organizations, &set.org_id) {
        return Some(Owner {
            key: "organization",
            value: org.name.clone(),
            credentials: &org.credentials_name,
            garm_id: &org.id,
        });
    }
    if let Some(repo) = find(&snapshot.repositories, &set.repo_id) {
        return Some(Owner {
            key: "repository",
            value: format!("{}/{}", repo.owner, repo.name),
            credentials: &repo.credentials_name,
            garm_id: &repo.id,
        });
    }
    find(&snapshot.enterprises, &set.enterprise_id).map(|ent| Owner {
        key: "enterprise",
        value: ent.name.clone(),
        credentials: &ent.credentials_name,
        garm_id: &ent.id,
    })
}

/// GARM's answers → a fleet file, what the operator must supply, and what was left behind.
pub(crate) fn import(snapshot: &Snapshot) -> Import {
    let controller = &snapshot.controller.controller_id;
    let mut out = Import::default();
    let mut fleet = FleetFile::default();
    let mut used_credentials: BTreeSet<&str> = BTreeSet::new();
    let mut used_providers: BTreeSet<&str> = BTreeSet::new();

    let mut sets: Vec<&ScaleSet> = snapshot.scale_sets.iter().collect();
    sets.sort_by_key(|s| s.id);
    for set in sets {
        let Some(owner) = owner(snapshot, set) else {
            out.not_carried.push(format!(
                "scale set {:?} (GARM id {}): its organization, repository or enterprise is not \
                 in GARM's lists; add it by hand",
                set.name, set.id
            ));
            continue;
        };
        if set.scale_set_id == 0 {
            out.not_carried.push(format!(
                "scale set {:?} (GARM id {}): GARM has no GitHub scale set for it yet (its \
                 scale_set_id is 0); declare it by hand and let scaleset create it",
                set.name, set.id
            ));
            continue;
        }
        used_credentials.insert(owner.credentials);
        used_providers.insert(&set.provider_name);
        let group = if set.runner_group.is_empty() {
            "Default"
        } else {
            &set.runner_group
        };
        // GARM's default prefix is "garm"; an empty one in its answer means that default.
        let prefix = if set.runner_prefix.is_empty() {
            "garm"
        } else {
            &set.runner_prefix
        };
        let mut dropped = Vec::new();
        let extra_specs = match set
            .extra_specs
            .as_ref()
            .and_then(|specs| to_toml(specs, "extra_specs", &mut dropped))
        {
            Some(toml::Value::Table(table)) if table.is_empty() => None,
            Some(toml::Value::Table(table)) => Some(table),
            Some(_) => {
                out.not_carried.push(format!(
                    "scale set {:?}: extra_specs is not a JSON object; set it by hand",
                    set.name
                ));
                None
            }
            None => None,
        };
        for path in dropped {
            out.not_carried.push(format!(
                "scale set {:?}: {path} is null, which TOML cannot write; it was left out",
                set.name
            ));
        }
        let named = |wanted: &str| (owner.key == wanted).then(|| owner.value.clone());
        fleet.scale_set.push(FleetScaleSet {
            name: set.name.clone(),
            credentials: owner.credentials.to_owned(),
            organization: named("organization"),
            repository: named("repository"),
            enterprise: named("enterprise"),
            runner_group: group.to_owned(),
            labels: set.tags.iter().map(|t| t.name.clone()).collect(),
            disable_update: set.disable_update,
            provider: set.provider_name.clone(),
            image: set.image.clone(),
            flavor: set.flavor.clone(),
            min_idle: set.min_idle_runners,
            max_runners: set.max_runners,
            bootstrap_timeout: (set.runner_bootstrap_timeout > 0)
                .then(|| format!("{}m", set.runner_bootstrap_timeout)),
            scale_down_delay: None,
            max_idle_lifetime: None,
            max_lifetime: None,
            runner_prefix: prefix.to_owned(),
            enabled: set.enabled,
            adoption_policy: "owned".to_owned(),
            repair: None,
            extra_specs,
            // Whose scale set it was, so adoption can take it on this evidence.
            takeover: Some(FleetTakeover {
                from: FROM_GARM.to_owned(),
                controller_id: controller.clone(),
                github_id: set.scale_set_id,
                garm_id: set.id,
                pool_id: pseudo_pool_id(&set.name, owner.garm_id),
                runner_prefix: prefix.to_owned(),
            }),
        });
        if !set.os_type.is_empty() || !set.os_arch.is_empty() {
            out.not_carried.push(format!(
                "scale set {:?}: os_type {:?} / os_arch {:?} (scaleset's providers take the \
                 image's; put them in extra_specs if your provider reads them there)",
                set.name, set.os_type, set.os_arch
            ));
        }
        if set.enable_shell {
            out.not_carried.push(format!(
                "scale set {:?}: enable_shell (GARM's agent shell has no counterpart)",
                set.name
            ));
        }
        let template = match (&set.template_name, set.template_id) {
            (Some(name), _) if !name.is_empty() => Some(format!("{name:?}")),
            (_, Some(id)) => Some(format!("id {id}")),
            _ => None,
        };
        if let Some(template) = template {
            out.not_carried.push(format!(
                "scale set {:?}: GARM's runner install template {template} (scaleset's \
                 providers get the runner's JIT config; the template is GARM's)",
                set.name
            ));
        }
        let running: Vec<&Instance> = snapshot
            .instances
            .iter()
            .filter(|i| i.scale_set_id == Some(set.id))
            .collect();
        if !running.is_empty() {
            let busy = running
                .iter()
                .filter(|i| i.runner_status == "active")
                .count();
            out.must_supply.push(format!(
                "scale set {:?} has {} GARM instance(s) ({busy} running a job) tagged with pool \
                 id {:?}: stop GARM first (it deletes, every 5 minutes, runners and instances \
                 of its scale sets it does not know, which after a takeover means ours)",
                set.name,
                running.len(),
                pseudo_pool_id(&set.name, owner.garm_id)
            ));
        }
        out.scale_sets.push((set.name.clone(), set.scale_set_id));
    }

    for pool in &snapshot.pools {
        out.not_carried.push(format!(
            "pool {} (provider {:?}, max {}): GARM pools are not scale sets; declare a scale \
             set for its labels by hand and drain the pool in GARM",
            pool.id, pool.provider_name, pool.max_runners
        ));
    }

    let mut head = String::new();
    let _ = writeln!(
        head,
        "# Imported from GARM {} (controller {controller}) by scalesetctl import garm.",
        snapshot.controller.version
    );
    let _ = writeln!(
        head,
        "# Stop GARM before applying this file: while it runs, GARM deletes runners and provider\n\
         # instances of its scale sets that it does not know, and holds their message sessions."
    );
    let _ = writeln!(
        head,
        "#\n# GARM's API never returns secrets: the credentials below are references to files you\n\
         # must supply. For scalesetctl plan/apply, store them on the server instead (the\n\
         # commands are printed by the import) and keep these tables commented; for a worker's\n\
         # own configuration file, uncomment them."
    );
    for name in &used_credentials {
        let Some(cred) = snapshot.credentials.iter().find(|c| c.name == *name) else {
            out.must_supply.push(format!(
                "credentials {name:?}: not in GARM's credential list; create them by hand"
            ));
            continue;
        };
        let path = secret_path(name, &cred.auth_type);
        let _ = writeln!(head, "#\n# [[credentials]]\n# name = {}", quoted(name));
        let endpoint = &cred.endpoint;
        let github_com = endpoint.base_url.trim_end_matches('/') == "https://github.com";
        if !github_com && !endpoint.base_url.is_empty() {
            let _ = writeln!(head, "# base_url = {}", quoted(&endpoint.base_url));
            if !endpoint.api_base_url.is_empty() {
                let _ = writeln!(
                    head,
                    "# api_base_url = {}",
                    quoted(endpoint.api_base_url.trim_end_matches('/'))
                );
            }
        }
        let mut flags = String::new();
        if !github_com && !endpoint.base_url.is_empty() {
            let _ = write!(flags, " --base-url {}", endpoint.base_url);
            if !endpoint.api_base_url.is_empty() {
                let _ = write!(
                    flags,
                    " --api-base-url {}",
                    endpoint.api_base_url.trim_end_matches('/')
                );
            }
        }
        if cred.auth_type == "app" {
            let app = cred
                .app_id
                .map_or_else(|| "APP_ID".to_owned(), |v| v.to_string());
            let installation = cred
                .installation_id
                .map_or_else(|| "INSTALLATION_ID".to_owned(), |v| v.to_string());
            let _ = writeln!(
                head,
                "# app_id = {app}\n# installation_id = {installation}\n# private_key_file = {}",
                quoted(&path)
            );
            out.must_supply.push(format!(
                "credentials {name:?} (GitHub App): the App's private key at {path}{}; then \
                 `scalesetctl credential create {name} --app-id {app} --installation-id \
                 {installation} --private-key-file {path}{flags}`",
                if cred.app_id.is_none() {
                    ", and its app and installation ids (GARM's answer has none)"
                } else {
                    ""
                }
            ));
        } else {
            let _ = writeln!(head, "# token_file = {}", quoted(&path));
            out.must_supply.push(format!(
                "credentials {name:?} (personal access token): the token at {path}; then \
                 `scalesetctl credential create {name} --pat-file {path}{flags}`"
            ));
        }
    }
    let mut providers: BTreeMap<&str, &str> = BTreeMap::new();
    for p in &snapshot.providers {
        providers.insert(&p.name, &p.kind);
    }
    if !used_providers.is_empty() {
        let _ = writeln!(
            head,
            "#\n# Providers: add these to the server's (and workers') configuration, completed\n\
             # from GARM's config.toml [[provider]] tables (GARM's API does not show them)."
        );
    }
    for name in &used_providers {
        let kind = providers.get(name).copied().unwrap_or("");
        let _ = writeln!(head, "#\n# [[provider]]\n# name = {}", quoted(name));
        if kind == "external" || kind.is_empty() {
            let _ = writeln!(
                head,
                "# kind = \"external\"\n# executable = \"...\"   # GARM's provider_executable\n\
                 # config_file = \"...\"  # GARM's [provider.external] config_file"
            );
            out.must_supply.push(format!(
                "provider {name:?}: a [[provider]] table in the server's configuration with \
                 GARM's provider_executable and config_file (docs/providers.md)"
            ));
        } else {
            out.not_carried.push(format!(
                "provider {name:?} of GARM type {kind:?}: only external providers exist in \
                 scaleset; configure an external provider for it"
            ));
        }
    }
    // The comments above are for the operator; the tables are typed data, written by the one
    // fleet serializer `fleet export` uses. `toml` writes every value these tables hold.
    match fleet.to_toml() {
        Ok(body) => out.fleet = format!("{head}\n{body}"),
        Err(e) => out.not_carried.push(format!(
            "the fleet tables could not be written as TOML: {e}"
        )),
    }
    out
}

#[cfg(test)]
mod tests;
