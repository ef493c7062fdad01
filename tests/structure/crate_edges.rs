//! The crate graph as Cargo sees it (`cargo metadata`), not as the sources spell it: the
//! operator's fleet operations (`scaleset-fleet`) sit beside the autoscaling loop
//! (`scaleset-control`), and the configuration, the API and the composition root take the
//! fleet's types from the fleet crate. Only normal dependencies count (a dev-dependency is a
//! test's, and Cargo allows it to point back). What a package reaches transitively is asked of
//! `cargo tree`, which resolves features for that package alone, as building it does: the
//! fleet's drivers (and with them the loop) are a feature the configuration does not turn on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Each workspace package and the workspace packages it depends on (normal dependencies).
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {output:?}");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let ours: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    packages
        .iter()
        .map(|package| {
            let name = package["name"].as_str().unwrap_or_default().to_owned();
            let uses = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| ours.contains(*d))
                .map(str::to_owned)
                .collect();
            (name, uses)
        })
        .collect()
}

/// The packages `cargo tree` names for `package` (itself left out) through normal
/// dependencies, `depth` levels down (all when `None`), with the features a build of `package`
/// alone turns on (Cargo's own resolution, not the workspace's union).
fn tree(package: &str, depth: Option<u32>) -> BTreeSet<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut command = Command::new(env!("CARGO"));
    command
        .args(["tree", "--offline", "--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}", "--package", package]);
    if let Some(depth) = depth {
        command.args(["--depth", &depth.to_string()]);
    }
    let output = command
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "cargo tree: {output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != package)
        .map(str::to_owned)
        .collect()
}

/// Every workspace package `package` reaches through normal dependencies.
fn reaches(package: &str) -> BTreeSet<String> {
    tree(package, None)
        .into_iter()
        .filter(|name| name.starts_with("scaleset-"))
        .collect()
}

fn uses(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    edges
        .get(from)
        .unwrap_or_else(|| panic!("{from} is not a workspace package"))
        .contains(to)
}

#[test]
fn the_fleet_types_come_from_the_fleet_crate_and_config_does_not_use_the_loop() {
    let edges = edges();
    for user in ["scaleset-api", "scaleset-config", "scaleset-app"] {
        assert!(
            uses(&edges, user, "scaleset-fleet"),
            "{user} takes the fleet's types and operations from scaleset-fleet"
        );
    }
    assert!(
        !uses(&edges, "scaleset-config", "scaleset-control"),
        "scaleset-config depends on the autoscaling loop; the fleet's types are scaleset-fleet's"
    );
    assert!(
        !uses(&edges, "scaleset-control", "scaleset-fleet"),
        "the autoscaling loop depends on the fleet operations; they run through the loop, not \
         the reverse"
    );
}

#[test]
fn config_does_not_reach_the_loop_even_through_the_fleet() {
    let reached = reaches("scaleset-config");
    assert!(
        reached.contains("scaleset-fleet"),
        "scaleset-config parses the fleet file into scaleset-fleet's types: {reached:?}"
    );
    assert!(
        !reached.contains("scaleset-control"),
        "scaleset-config reaches the autoscaling loop (through {reached:?}); it needs the declared \
         fleet only, so take scaleset-fleet without its `driver` feature"
    );
}

#[test]
fn the_fleet_drivers_run_through_the_loop() {
    // The other half of the fence: with its drivers, the fleet does reach the loop (else the
    // check above would pass for a reason that says nothing).
    assert!(reaches("scaleset-fleet").contains("scaleset-control"));
    assert!(reaches("scaleset-api").contains("scaleset-control"));
}

#[test]
fn adopt_uses_only_the_domain_and_sim_and_domain_nothing_of_ours() {
    let edges = edges();
    let only = |krate: &str, allowed: &[&str]| {
        let used: BTreeSet<String> = edges.get(krate).cloned().unwrap_or_default();
        let allowed: BTreeSet<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(used, allowed, "{krate} uses {used:?}, not only {allowed:?}");
    };
    // The adoption machine is pure: GitHub's scale-set id and the owner-label prefix are the
    // domain's values, and nothing else of ours may reach it.
    only("scaleset-adopt", &["scaleset-domain"]);
    only("scaleset-sim", &[]);
    only("scaleset-domain", &[]);
}

#[test]
fn the_decisions_crate_has_no_runtime_clock_or_randomness_of_its_own() {
    // The per-scale-set decisions take facts and the time as arguments and return commands:
    // with no async runtime, no randomness and nothing of the loop among its dependencies, the
    // compiler keeps them so (a clock it could still read from std; the planners take `now`).
    let dependencies = tree("scaleset-plan", Some(1));
    let allowed: BTreeSet<String> = [
        "scaleset-adopt",
        "scaleset-domain",
        "scaleset-github",
        "scaleset-provider",
        "scaleset-store",
        "uuid",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(
        dependencies, allowed,
        "scaleset-plan depends on {dependencies:?}: its decisions take what they need as \
         arguments; only the types' crates belong here"
    );
    assert!(
        reaches("scaleset-control").contains("scaleset-plan"),
        "the loop executes the decisions of scaleset-plan"
    );
}
