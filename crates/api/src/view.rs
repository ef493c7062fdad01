//! Conversions from the store's records to the v1 wire types, and RFC 3339 times.

use scaleset_store as store;

use crate::v1;

/// A stored time as RFC 3339 (UTC, milliseconds).
pub(crate) fn time(at: store::Timestamp) -> String {
    let nanos = i128::from(at.unix_millis()) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("@{}ms", at.unix_millis()))
}

pub(crate) fn credentials(c: &store::Credentials) -> v1::Credentials {
    let (kind, app, installation_id) = match &c.auth {
        store::Auth::App {
            app,
            installation_id,
            ..
        } => (v1::AuthKind::App, Some(app), Some(*installation_id)),
        store::Auth::Pat { .. } => (v1::AuthKind::Pat, None, None),
    };
    let (app_id, client_id) = match app {
        Some(store::AppIdentity::Id(id)) => (Some(*id), None),
        Some(store::AppIdentity::ClientId(client_id)) => (None, Some(client_id.to_string())),
        None => (None, None),
    };
    v1::Credentials {
        id: c.id.0,
        name: c.name.clone(),
        kind,
        app_id,
        client_id,
        installation_id,
        endpoint: v1::Endpoint {
            base_url: c.endpoint.base_url.clone(),
            api_base_url: c.endpoint.api_base_url.clone(),
            ca_bundle: c.endpoint.ca_bundle.clone(),
        },
        created_at: time(c.created_at),
        updated_at: time(c.updated_at),
    }
}

pub(crate) fn entity(e: &store::Entity, credentials: &str) -> v1::Entity {
    let kind = match &e.kind {
        store::EntityKind::Repository { .. } => v1::EntityKind::Repository,
        store::EntityKind::Enterprise { .. } => v1::EntityKind::Enterprise,
        store::EntityKind::Organization { .. } => v1::EntityKind::Organization,
    };
    v1::Entity {
        id: e.id.0,
        kind,
        name: e.kind.path(),
        credentials_id: e.credentials_id.0,
        credentials: credentials.to_owned(),
        created_at: time(e.created_at),
    }
}

/// The wire's policy for a stored one. Both enums are this workspace's and matched whole, so
/// a policy added to either is a compile error here, not a silent `owned`.
pub(crate) fn policy(p: store::AdoptionPolicy) -> v1::AdoptionPolicy {
    match p {
        store::AdoptionPolicy::Never => v1::AdoptionPolicy::Never,
        store::AdoptionPolicy::Owned => v1::AdoptionPolicy::Owned,
        store::AdoptionPolicy::Any => v1::AdoptionPolicy::Any,
    }
}

/// The stored policy for the wire's (the inverse of [`policy`]).
pub(crate) fn policy_to_store(p: v1::AdoptionPolicy) -> store::AdoptionPolicy {
    match p {
        v1::AdoptionPolicy::Never => store::AdoptionPolicy::Never,
        v1::AdoptionPolicy::Owned => store::AdoptionPolicy::Owned,
        v1::AdoptionPolicy::Any => store::AdoptionPolicy::Any,
    }
}

fn state(s: store::ScaleSetState) -> v1::ScaleSetState {
    use store::ScaleSetState as S;
    match s {
        S::Pending => v1::ScaleSetState::Pending,
        S::Ready => v1::ScaleSetState::Ready,
        S::Refused => v1::ScaleSetState::Refused,
        S::Drifted => v1::ScaleSetState::Drifted,
        S::ForeignSession => v1::ScaleSetState::ForeignSession,
        S::Dormant => v1::ScaleSetState::Dormant,
        S::Error => v1::ScaleSetState::Error,
    }
}

pub(crate) fn provenance(p: &store::Provenance) -> v1::Provenance {
    match p {
        store::Provenance::Created(_) => v1::Provenance::Created,
        store::Provenance::Known => v1::Provenance::Known,
        store::Provenance::Adopted => v1::Provenance::Adopted,
    }
}

/// The machine's evidence on the wire; a kind this version does not name is left out (the
/// machine's enum is non-exhaustive).
fn evidence(evidence: &[store::Evidence]) -> Vec<v1::Evidence> {
    evidence
        .iter()
        .filter_map(|e| match e {
            store::Evidence::CreatedThisRun => Some(v1::Evidence::CreatedThisRun),
            store::Evidence::StoredId => Some(v1::Evidence::StoredId),
            store::Evidence::OwnerLabel => Some(v1::Evidence::OwnerLabel),
            store::Evidence::OwnSession => Some(v1::Evidence::OwnSession),
            store::Evidence::ImportedFrom => Some(v1::Evidence::ImportedFrom),
            _ => None,
        })
        .collect()
}

/// The machine's refusal on the wire: its stable code, what was found, and what to do.
pub(crate) fn refusal(r: &store::Refusal) -> v1::Refusal {
    v1::Refusal {
        code: r.code().to_owned(),
        message: r.to_string(),
        remedy: r.remediation(),
    }
}

pub(crate) fn scale_set(s: &store::ScaleSet, events: &[store::Event]) -> v1::ScaleSet {
    let spec = &s.spec;
    v1::ScaleSet {
        id: s.id.0,
        entity_id: s.entity_id.0,
        generation: s.generation,
        spec: v1::ScaleSetSpec {
            name: spec.name().to_string(),
            runner_group: spec.runner_group().name.clone(),
            runner_group_id: spec.runner_group().id,
            labels: spec.label_texts(),
            disable_update: spec.disable_update(),
            provider: spec.provider().to_string(),
            image: spec.image().to_owned(),
            flavor: spec.flavor().to_owned(),
            os_type: spec.os_type().as_str().to_owned(),
            os_arch: spec.os_arch().as_str().to_owned(),
            http_proxy: spec.runner_setup().http_proxy.clone(),
            https_proxy: spec.runner_setup().https_proxy.clone(),
            no_proxy: spec.runner_setup().no_proxy.clone(),
            ssh_keys: spec.runner_setup().ssh_keys.clone(),
            extra_packages: spec.runner_setup().extra_packages.clone(),
            disable_updates_on_boot: spec.runner_setup().disable_updates_on_boot,
            enable_boot_debug: spec.runner_setup().enable_boot_debug,
            runner_install_template: spec.runner_setup().runner_install_template.clone(),
            min_idle: spec.min_idle(),
            max_runners: spec.max_runners(),
            bootstrap_timeout_secs: spec.bootstrap_timeout().as_secs(),
            scale_down_delay_secs: spec.scale_down_delay().as_secs(),
            max_idle_lifetime_secs: spec.max_idle_lifetime().as_secs(),
            max_lifetime_secs: spec.max_lifetime().as_secs(),
            runner_prefix: spec
                .own_runner_prefix()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            extra_specs: spec.extra_specs().clone(),
            enabled: spec.enabled(),
            adoption_policy: policy(spec.adoption_policy()),
            repair: spec.repair(),
        },
        github_id: s.github_id,
        provenance: s.provenance.as_ref().map(provenance),
        evidence: evidence(&s.evidence),
        state: state(s.state),
        state_reason: s.state_reason.clone(),
        refusal: s.refusal.as_ref().map(refusal),
        desired_runners: s.desired_runners,
        jobs_waiting: s.jobs_waiting,
        attention: s
            .attention(store::Timestamp::from_system_time(
                std::time::SystemTime::now(),
            ))
            .map(|a| v1::Attention {
                reason: a.reason,
                remedy: a.remedy,
            }),
        events: events.iter().map(event).collect(),
        runner_tool: None,
        warnings: Vec::new(),
        served_by: None,
        declared: false,
        created_at: time(s.created_at),
        updated_at: time(s.updated_at),
    }
}

/// Who serves a scale set (`enabled` or not), from its lease row `lease` as the store has it at `now`:
/// `doubted_here` says this process's own worker holds the lease but could not renew it (it
/// has fenced itself before the lease ran out in the database). A lease that ran out without
/// being released is in doubt (its holder is cut off, paused or dead, and nobody took the set
/// over yet), except on a disabled set, which nobody is to serve; a released one (the epoch)
/// and no row at all mean nobody serves it.
pub(crate) fn served_by(
    enabled: bool,
    lease: Option<&store::LeaseRecord>,
    doubted_here: bool,
    now: store::Timestamp,
) -> Option<v1::ServedBy> {
    let lease = lease.filter(|l| l.expires_at != store::Timestamp::EPOCH)?;
    let status = if lease.expires_at > now {
        if doubted_here {
            v1::LeaseStatus::InDoubt
        } else {
            v1::LeaseStatus::Held
        }
    } else if enabled {
        v1::LeaseStatus::InDoubt
    } else {
        return None;
    };
    Some(v1::ServedBy {
        worker: lease.holder.clone(),
        lease: status,
        expires_at: time(lease.expires_at),
    })
}

/// The download a new runner of `spec` would get from `stored` (the entity's runner
/// downloads as a worker last recorded them, `None` before any), and what the scale set needs
/// said as warnings with what to do (a `declared` set's platform is changed in the
/// configuration file). `entity` names the entity in them.
pub(crate) fn runner_tool(
    spec: &store::ScaleSetSpec,
    entity: &store::EntityKind,
    stored: Option<&store::RunnerDownloads>,
    declared: bool,
) -> (Option<v1::RunnerTool>, Vec<String>) {
    let (os_type, os_arch) = (spec.os_type(), spec.os_arch());
    let platform = format!("{os_type}/{os_arch}");
    let mut warnings = Vec::new();
    let (read, failure) = match stored {
        Some(stored) => (stored.read.as_ref(), stored.failure.as_ref()),
        None => (None, None),
    };
    let Some((list, read_at)) = read else {
        warnings.push(match failure {
            Some((failure, at)) => format!(
                "reading the runner downloads of {entity} from GitHub failed at {}: \
                 {failure}; no runner of this scale set can be created until a read succeeds \
                 (the worker tries again); check that the credentials may read the entity's \
                 self-hosted runners",
                time(*at)
            ),
            None => format!(
                "the runner downloads of {entity} have not been read yet (not an error): a \
                 worker reads them from GitHub when it serves the entity's scale sets, then \
                 this shows the download a {platform} runner gets"
            ),
        });
        return (None, warnings);
    };
    if let Some((failure, at)) = failure {
        warnings.push(format!(
            "the last read of the runner downloads of {entity} failed at {}: {failure}; the \
             list read at {} stays in use",
            time(*at),
            time(*read_at)
        ));
    }
    match store::pick_download(list, os_type, os_arch) {
        Some(download) => (
            Some(v1::RunnerTool {
                os: download.os.clone(),
                architecture: download.architecture.clone(),
                filename: download.filename.clone(),
                download_url: download.download_url.clone(),
                sha256_checksum: download.sha256_checksum.clone(),
                read_at: time(*read_at),
            }),
            warnings,
        ),
        None => {
            let change = if declared {
                "in the configuration file that declares it".to_owned()
            } else {
                format!(
                    "scalesetctl scale-set update {} --os-type OS --os-arch ARCH, or the fleet file",
                    spec.name()
                )
            };
            warnings.push(format!(
                "the runner downloads of {entity} (read at {}) {}",
                time(*read_at),
                store::no_download(list, os_type, os_arch, &change)
            ));
            (None, warnings)
        }
    }
}

fn event(e: &store::Event) -> v1::Event {
    v1::Event {
        id: e.id,
        kind: e.kind.as_str().to_owned(),
        code: e.code.as_str().to_owned(),
        reason: e.reason.clone(),
        at: time(e.at),
        count: e.count,
        last_at: time(e.last_at),
    }
}

pub(crate) fn instance(i: &store::Instance) -> v1::Instance {
    use store::InstanceStatus as S;
    let status = match i.status {
        S::Pending => v1::InstanceStatus::Pending,
        S::Creating => v1::InstanceStatus::Creating,
        S::Running => v1::InstanceStatus::Running,
        S::Busy => v1::InstanceStatus::Busy,
        S::Deleting => v1::InstanceStatus::Deleting,
        S::Deleted => v1::InstanceStatus::Deleted,
        S::Failed => v1::InstanceStatus::Failed,
    };
    v1::Instance {
        name: i.name.clone(),
        scale_set_id: i.scale_set_id.0,
        status,
        provider_id: i.provider_id.clone(),
        github_runner_id: i.github_runner_id,
        pool_key: i.pool_key.clone(),
        bootstrap_deadline: i.bootstrap_deadline.map(time),
        created_at: time(i.created_at),
        updated_at: time(i.updated_at),
        removal_requested_at: i.removal_requested_at.map(time),
        bootstrap: None,
    }
}

pub(crate) fn bootstrap(a: &store::InstanceAccess) -> v1::InstanceBootstrap {
    v1::InstanceBootstrap {
        status: a.bootstrap_status.as_str().to_owned(),
        message: a.status_message.clone(),
        agent_id: a.agent_id,
        os_name: a.os_name.clone(),
        os_version: a.os_version.clone(),
        token_expires_at: time(a.expires_at),
        updated_at: time(a.updated_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30 item 4: one policy mapping. Each stored policy goes out and comes back as
    /// itself, and the API's JSON spells it as the stored text the configuration file uses.
    #[test]
    fn every_policy_goes_over_the_wire_and_back_under_its_stored_text() {
        for &stored in store::AdoptionPolicy::ALL {
            let wire = policy(stored);
            assert_eq!(policy_to_store(wire), stored);
            assert_eq!(
                serde_json::to_value(wire).unwrap(),
                serde_json::Value::String(stored.as_str().to_owned())
            );
        }
    }

    fn lease(holder: &str, expires_at: i64) -> store::LeaseRecord {
        store::LeaseRecord {
            holder: holder.to_owned(),
            token: 3,
            expires_at: store::Timestamp::from_unix_millis(expires_at),
        }
    }

    #[test]
    fn a_scale_set_is_served_by_its_lease_holder_in_doubt_once_the_lease_ran_out_unreleased() {
        let now = store::Timestamp::from_unix_millis(10_000);
        let status = |enabled, record: Option<&store::LeaseRecord>, doubted| {
            served_by(enabled, record, doubted, now).map(|s| (s.worker, s.lease))
        };
        let held = lease("worker-a", 12_000);
        assert_eq!(
            status(true, Some(&held), false),
            Some(("worker-a".to_owned(), v1::LeaseStatus::Held))
        );
        // This process's own worker could not renew it: in doubt before it runs out.
        assert_eq!(
            status(true, Some(&held), true),
            Some(("worker-a".to_owned(), v1::LeaseStatus::InDoubt))
        );
        // Ran out without a release: its holder is cut off, paused or dead.
        let ran_out = lease("worker-a", 9_000);
        assert_eq!(
            status(true, Some(&ran_out), false),
            Some(("worker-a".to_owned(), v1::LeaseStatus::InDoubt))
        );
        // Nobody is to serve a disabled set; a released lease and none at all: nobody serves.
        assert_eq!(status(false, Some(&ran_out), false), None);
        assert_eq!(status(true, Some(&lease("worker-a", 0)), false), None);
        assert_eq!(status(true, None, false), None);
        let shown =
            served_by(true, Some(&held), false, now).map(|s| serde_json::to_value(s).unwrap());
        assert_eq!(
            shown,
            Some(serde_json::json!({
                "worker": "worker-a",
                "lease": "held",
                "expires_at": "1970-01-01T00:00:12Z",
            }))
        );
    }
}
