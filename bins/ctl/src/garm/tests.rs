//! The mapping, driven by the answers a real GARM gave (`shared/reference/garm/api`, read by
//! path: the capture is the fixture, nothing is copied).

use std::path::PathBuf;

use super::*;

/// The captured answers' directory (the clone's `../shared`, as CI has it).
pub(crate) fn capture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/garm/api")
}

/// The `response` of one captured answer.
fn answer<T: serde::de::DeserializeOwned>(file: &str) -> T {
    let path = capture_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the capture {} is readable: {e}", path.display()));
    let whole: serde_json::Value = serde_json::from_str(&text).expect("captured JSON");
    serde_json::from_value(whole["response"].clone()).expect("GARM's shape")
}

fn captured() -> Snapshot {
    Snapshot {
        controller: answer("controller-info.json"),
        credentials: answer("github-credentials.json"),
        organizations: answer("organizations.json"),
        repositories: answer("repositories.json"),
        enterprises: answer("enterprises.json"),
        scale_sets: answer("scalesets.json"),
        pools: answer("pools.json"),
        providers: answer("providers.json"),
        instances: answer("instances.json"),
    }
}

const CONTROLLER: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";
const ORG: &str = "df2a9b56-d0d9-4e79-ad71-44d114828592";

fn fleet_toml(import: &Import) -> toml::Table {
    toml::from_str(&import.fleet).unwrap_or_else(|e| panic!("{e}\n{}", import.fleet))
}

fn scale_set<'a>(fleet: &'a toml::Table, name: &str) -> &'a toml::Table {
    fleet["scale_set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_table().unwrap())
        .find(|s| s["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("{name} in the fleet"))
}

#[test]
fn every_captured_scale_set_is_written_with_its_github_id_and_spec() {
    let import = import(&captured());
    let fleet = fleet_toml(&import);
    assert_eq!(
        import.scale_sets,
        vec![("linux-small".to_owned(), 3), ("gpu-big".to_owned(), 4)]
    );
    let linux = scale_set(&fleet, "linux-small");
    assert_eq!(linux["credentials"].as_str(), Some("simpat"));
    assert_eq!(linux["organization"].as_str(), Some("acme"));
    assert_eq!(linux["runner_group"].as_str(), Some("Default"));
    assert_eq!(
        linux["labels"],
        toml::Value::Array(vec!["linux".into(), "x64-small".into()])
    );
    assert_eq!(linux["provider"].as_str(), Some("rec"));
    assert_eq!(linux["image"].as_str(), Some("ubuntu-24.04"));
    assert_eq!(linux["flavor"].as_str(), Some("small"));
    assert_eq!(linux["max_runners"].as_integer(), Some(3));
    // GARM leaves min_idle_runners out when it is 0.
    assert_eq!(linux["min_idle"].as_integer(), Some(0));
    assert_eq!(linux["bootstrap_timeout"].as_str(), Some("20m"));
    assert_eq!(linux["runner_prefix"].as_str(), Some("garm"));
    assert_eq!(linux["disable_update"].as_bool(), Some(false));
    assert_eq!(linux["enabled"].as_bool(), Some(true));
    assert_eq!(linux["extra_specs"]["disk_gb"].as_integer(), Some(50));
    assert_eq!(
        linux["extra_specs"]["tags"],
        toml::Value::Array(vec!["ci".into()])
    );
    let note = linux["takeover"].as_table().unwrap();
    assert_eq!(note["from"].as_str(), Some("garm"));
    assert_eq!(note["controller_id"].as_str(), Some(CONTROLLER));
    assert_eq!(note["github_id"].as_integer(), Some(3));
    assert_eq!(note["garm_id"].as_integer(), Some(1));
    assert_eq!(
        note["pool_id"].as_str(),
        Some(format!("linux-small-{ORG}").as_str())
    );

    let gpu = scale_set(&fleet, "gpu-big");
    assert_eq!(gpu["runner_group"].as_str(), Some("gpu runners"));
    assert_eq!(
        gpu["labels"],
        toml::Value::Array(vec!["gpu".into(), "cuda".into()])
    );
    assert_eq!(gpu["runner_prefix"].as_str(), Some("gpu"));
    // GARM's prefix is in the note too: its runners are recognised by it.
    assert_eq!(gpu["takeover"]["runner_prefix"].as_str(), Some("gpu"));
    assert_eq!(linux["takeover"]["runner_prefix"].as_str(), Some("garm"));
    assert_eq!(gpu["disable_update"].as_bool(), Some(true));
    assert_eq!(gpu["bootstrap_timeout"].as_str(), Some("30m"));
    assert_eq!(gpu["image"].as_str(), Some("ubuntu-22.04-cuda"));
    assert_eq!(gpu["flavor"].as_str(), Some("gpu.large"));
    assert_eq!(gpu["extra_specs"]["gpu"].as_str(), Some("h100"));
    assert_eq!(gpu["extra_specs"]["zone"].as_str(), Some("z1"));
    assert_eq!(gpu["takeover"]["github_id"].as_integer(), Some(4));
    assert_eq!(gpu["takeover"]["garm_id"].as_integer(), Some(2));
}

#[test]
fn credentials_are_references_the_operator_supplies_and_no_secret_is_written() {
    let import = import(&captured());
    assert!(
        import.fleet.contains("GARM's API never returns secrets"),
        "{}",
        import.fleet
    );
    assert!(
        import
            .fleet
            .contains("# token_file = \"/etc/scaleset/garm-simpat.token\"")
    );
    // The endpoint is the simulator's (not github.com), so it is written out.
    assert!(
        import
            .fleet
            .contains("# base_url = \"http://127.0.0.1:43971\"")
    );
    assert!(
        import
            .fleet
            .contains("# api_base_url = \"http://127.0.0.1:44229/api/v3\"")
    );
    let cred = import
        .must_supply
        .iter()
        .find(|m| m.starts_with("credentials \"simpat\""))
        .expect("the credential to supply");
    assert!(
        cred.contains("scalesetctl credential create simpat --pat-file /etc/scaleset/garm-simpat.token --base-url http://127.0.0.1:43971 --api-base-url http://127.0.0.1:44229/api/v3"),
        "{cred}"
    );
    assert!(!import.fleet.contains("redacted"));
    // Credentials are commented out: the file is one scalesetctl plan accepts as it is.
    assert!(!fleet_toml(&import).contains_key("credentials"));
}

#[test]
fn providers_are_tables_to_complete_and_garm_must_be_stopped_first() {
    let import = import(&captured());
    assert!(
        import
            .fleet
            .contains("# [[provider]]\n# name = \"rec\"\n# kind = \"external\"")
    );
    assert!(
        import
            .must_supply
            .iter()
            .any(|m| m.starts_with("provider \"rec\"") && m.contains("provider_executable"))
    );
    assert!(import.fleet.contains("Stop GARM before applying this file"));
    // linux-small's idle runner and gpu-big's two (one busy) were live at the capture.
    let linux = import
        .must_supply
        .iter()
        .find(|m| m.starts_with("scale set \"linux-small\""))
        .unwrap();
    assert!(
        linux.contains("1 GARM instance(s) (0 running a job)"),
        "{linux}"
    );
    assert!(linux.contains("stop GARM first"), "{linux}");
    let gpu = import
        .must_supply
        .iter()
        .find(|m| m.starts_with("scale set \"gpu-big\""))
        .unwrap();
    assert!(
        gpu.contains("2 GARM instance(s) (1 running a job)"),
        "{gpu}"
    );
}

#[test]
fn what_cannot_be_carried_is_named() {
    let mut snapshot = captured();
    snapshot.pools.push(Pool {
        id: "pool-1".into(),
        provider_name: "rec".into(),
        max_runners: 5,
    });
    snapshot.scale_sets[0].enable_shell = true;
    snapshot.scale_sets[0].extra_specs = Some(serde_json::json!({"a": null, "b": [1, null]}));
    let import = import(&snapshot);
    let said = |needle: &str| {
        assert!(
            import.not_carried.iter().any(|n| n.contains(needle)),
            "{needle:?} not in {:#?}",
            import.not_carried
        );
    };
    said("pool pool-1 (provider \"rec\", max 5): GARM pools are not scale sets");
    said("\"linux-small\": enable_shell");
    said("\"linux-small\": extra_specs.a is null");
    said("\"linux-small\": extra_specs.b[1] is null");
    said("\"gpu-big\": os_type \"linux\" / os_arch \"arm64\"");
    said("\"gpu-big\": GARM's runner install template id 2");
    let fleet = fleet_toml(&import);
    assert_eq!(
        scale_set(&fleet, "linux-small")["extra_specs"]["b"],
        toml::Value::Array(vec![1.into()])
    );
}

#[test]
fn a_scale_set_without_a_github_id_or_entity_is_not_written_and_is_named() {
    let mut snapshot = captured();
    snapshot.scale_sets[0].scale_set_id = 0;
    snapshot.scale_sets[1].org_id = Some("unknown".into());
    let import = import(&snapshot);
    assert!(import.scale_sets.is_empty());
    assert!(
        import.not_carried[0].contains("\"linux-small\" (GARM id 1): GARM has no GitHub scale set")
    );
    assert!(import.not_carried[1].contains("\"gpu-big\" (GARM id 2): its organization"));
}

#[test]
fn repositories_enterprises_apps_and_github_com_map_to_their_fleet_forms() {
    let mut snapshot = captured();
    snapshot.repositories.push(Entity {
        id: "r1".into(),
        name: "app".into(),
        owner: "acme".into(),
        credentials_name: "gh-app".into(),
    });
    snapshot.enterprises.push(Entity {
        id: "e1".into(),
        name: "acme-corp".into(),
        owner: String::new(),
        credentials_name: "simpat".into(),
    });
    snapshot.credentials.push(Credential {
        name: "gh-app".into(),
        auth_type: "app".into(),
        endpoint: Endpoint {
            base_url: "https://github.com".into(),
            api_base_url: "https://api.github.com/".into(),
        },
        app_id: Some(12),
        installation_id: Some(34),
    });
    snapshot.scale_sets[0].org_id = None;
    snapshot.scale_sets[0].repo_id = Some("r1".into());
    snapshot.scale_sets[0].runner_prefix = String::new();
    snapshot.scale_sets[0].runner_group = String::new();
    snapshot.scale_sets[1].org_id = None;
    snapshot.scale_sets[1].enterprise_id = Some("e1".into());
    let import = import(&snapshot);
    let fleet = fleet_toml(&import);
    let repo = scale_set(&fleet, "linux-small");
    assert_eq!(repo["repository"].as_str(), Some("acme/app"));
    assert_eq!(repo["credentials"].as_str(), Some("gh-app"));
    assert_eq!(repo["runner_prefix"].as_str(), Some("garm"));
    assert_eq!(repo["runner_group"].as_str(), Some("Default"));
    assert_eq!(repo["takeover"]["pool_id"].as_str(), Some("linux-small-r1"));
    let ent = scale_set(&fleet, "gpu-big");
    assert_eq!(ent["enterprise"].as_str(), Some("acme-corp"));
    let app = import
        .must_supply
        .iter()
        .find(|m| m.starts_with("credentials \"gh-app\""))
        .unwrap();
    // github.com needs no endpoint flags.
    assert!(
        app.ends_with("`scalesetctl credential create gh-app --app-id 12 --installation-id 34 --private-key-file /etc/scaleset/garm-gh-app.pem`"),
        "{app}"
    );
    assert!(
        import
            .fleet
            .contains("# app_id = 12\n# installation_id = 34")
    );
}

/// The import's tables go through the one fleet serializer, and the server's fleet parser reads
/// back exactly what the import decided: every scale set, its spec and its takeover note.
#[test]
fn an_imported_fleet_reads_back_through_the_fleet_parser_as_the_import_wrote_it() {
    let snapshot = captured();
    let import = import(&snapshot);
    let stored = std::collections::BTreeSet::from(["simpat".to_owned()]);
    let fleet = scaleset_config::parse_fleet("import", &import.fleet, None, &stored, None)
        .unwrap_or_else(|e| panic!("the fleet parser refused the import: {e}\n{}", import.fleet));
    let names: Vec<String> = fleet
        .scale_sets
        .iter()
        .map(|s| s.spec.name().to_string())
        .collect();
    assert_eq!(names, ["linux-small", "gpu-big"]);
    for declared in &fleet.scale_sets {
        let spec = &declared.spec;
        let garm = snapshot
            .scale_sets
            .iter()
            .find(|s| s.name == spec.name().as_str())
            .expect("each parsed set is one GARM had");
        let prefix = if garm.runner_prefix.is_empty() {
            "garm"
        } else {
            &garm.runner_prefix
        };
        let tags: Vec<String> = garm.tags.iter().map(|t| t.name.clone()).collect();
        assert_eq!(declared.credentials, "simpat");
        assert_eq!(spec.label_texts(), tags);
        assert_eq!(spec.provider().as_str(), garm.provider_name);
        assert_eq!(spec.image(), garm.image);
        assert_eq!(spec.flavor(), garm.flavor);
        assert_eq!(i64::from(spec.min_idle()), garm.min_idle_runners);
        assert_eq!(i64::from(spec.max_runners()), garm.max_runners);
        assert_eq!(spec.enabled(), garm.enabled);
        assert_eq!(spec.disable_update(), garm.disable_update);
        assert_eq!(
            spec.bootstrap_timeout().as_secs(),
            u64::try_from(garm.runner_bootstrap_timeout).unwrap() * 60
        );
        assert_eq!(
            spec.own_runner_prefix().map(|p| p.as_str()),
            Some(prefix),
            "the set keeps GARM's prefix"
        );
        assert_eq!(
            Some(spec.extra_specs()),
            garm.extra_specs.as_ref(),
            "extra specs as GARM had them"
        );
        let note = declared.takeover.as_ref().expect("a takeover note");
        assert_eq!(note.controller_id, CONTROLLER);
        assert_eq!(
            i64::from(note.github_id),
            i64::try_from(garm.scale_set_id).unwrap()
        );
        assert_eq!(note.runner_prefix.as_deref(), Some(prefix));
        assert_eq!(
            note.pool_id.as_deref(),
            Some(pseudo_pool_id(&garm.name, ORG).as_str())
        );
    }
}
