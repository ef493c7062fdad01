//! `[scale_set.takeover]`: the note `scalesetctl import garm` writes, parsed into the adoption
//! machine's evidence, or refused naming each wrong key.

use std::collections::BTreeSet;

use scaleset_adopt::{GithubScaleSetId, Takeover};

use crate::{Problem, parse_fleet};

const CONTROLLER: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";

fn fleet(note: &str) -> String {
    format!(
        r#"
[[scale_set]]
name = "gpu-big"
credentials = "simpat"
organization = "acme"
runner_group = "gpu runners"
provider = "rec"
[scale_set.takeover]
{note}
"#
    )
}

fn parse(note: &str) -> Result<Option<Takeover>, Vec<Problem>> {
    let stored = BTreeSet::from(["simpat".to_owned()]);
    parse_fleet("fleet.toml", &fleet(note), None, &stored, None)
        .map(|f| f.scale_sets[0].takeover.clone())
        .map_err(|e| e.problems)
}

#[test]
fn a_note_is_carried_to_the_declared_scale_set() {
    let note = parse(&format!(
        "from = \"garm\"\ncontroller_id = \"{}\"\ngithub_id = 4\ngarm_id = 2\npool_id = \"gpu-big-x\"",
        CONTROLLER.to_uppercase()
    ))
    .unwrap();
    assert_eq!(
        note,
        Some(Takeover {
            controller_id: CONTROLLER.into(),
            github_id: GithubScaleSetId(4),
            pool_id: Some("gpu-big-x".into()),
            // No prefix in the note: the scale set's (here its name, none being set).
            runner_prefix: Some("gpu-big".into()),
        })
    );
    // GARM's prefix, when the note carries it.
    let note = parse(&format!(
        "from = \"garm\"\ncontroller_id = \"{CONTROLLER}\"\ngithub_id = 4\nrunner_prefix = \"gpu\""
    ))
    .unwrap()
    .unwrap();
    assert_eq!(
        (note.pool_id, note.runner_prefix),
        (None, Some("gpu".to_owned()))
    );
    // Without a note, none.
    let stored = BTreeSet::from(["simpat".to_owned()]);
    let plain = fleet("").replace("[scale_set.takeover]\n", "");
    let parsed = parse_fleet("fleet.toml", &plain, None, &stored, None).unwrap();
    assert_eq!(parsed.scale_sets[0].takeover, None);
}

#[test]
fn every_wrong_part_of_a_note_is_named() {
    let problems = parse(
        "from = \"arc\"\ncontroller_id = \"nope\"\ngithub_id = 0\ngarm_id = -1\npool_id = \" \"",
    )
    .unwrap_err();
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "scale_set[0].takeover.from",
            "scale_set[0].takeover.controller_id",
            "scale_set[0].takeover.github_id",
            "scale_set[0].takeover.garm_id",
            "scale_set[0].takeover.pool_id",
        ]
    );
    assert!(problems[0].message.contains("write \"garm\""));
    assert!(problems[1].message.contains("garm-cli controller show"));
    assert!(problems[2].message.contains("positive integer"));

    let missing = parse("").unwrap_err();
    let keys: Vec<&str> = missing.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "scale_set[0].takeover.from",
            "scale_set[0].takeover.controller_id",
            "scale_set[0].takeover.github_id",
        ]
    );
    // Each part alone is enough to refuse the note.
    let good = format!("controller_id = \"{CONTROLLER}\"\ngithub_id = 4");
    assert!(parse(&format!("from = \"garm\"\n{good}")).is_ok());
    assert!(parse(&format!("from = \"garm\"\n{good}\ngarm_id = 0")).is_err());
    assert!(parse(&format!("from = \"garm\"\n{good}\npool_id = \"\"")).is_err());
    assert!(parse(&format!("from = \"ga\"\n{good}")).is_err());
    for prefix in ["", " ", "g pu"] {
        let problems = parse(&format!(
            "from = \"garm\"\n{good}\nrunner_prefix = \"{prefix}\""
        ))
        .unwrap_err();
        assert_eq!(
            problems[0].key, "scale_set[0].takeover.runner_prefix",
            "{prefix:?}"
        );
    }
}

#[test]
fn an_unknown_key_in_a_note_is_refused() {
    let problems = parse(&format!(
        "from = \"garm\"\ncontroller_id = \"{CONTROLLER}\"\ngithub_id = 4\nsession = \"x\""
    ))
    .unwrap_err();
    assert!(
        problems[0].message.contains("unknown field `session`"),
        "{problems:?}"
    );
}
