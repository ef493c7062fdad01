//! With the `serde` feature: inputs, commands and facts survive a JSON round trip, outcomes
//! serialise (a delete permit never deserialises), and ids serialise as plain numbers/strings.
#![cfg(feature = "serde")]

use scaleset_adopt::{
    Command, ControllerId, Desired, Fact, GithubScaleSetId, Identity, Input, Machine, Outcome,
    Policy, RetryBounds, RunnerGroupId, ScaleSet, Step,
};

fn input() -> Input {
    Input {
        desired: Desired {
            name: "ci".into(),
            runner_group_id: RunnerGroupId(1),
            labels: vec!["linux".into()],
            disable_update: true,
        },
        known_id: Some(GithubScaleSetId(7)),
        policy: Policy::Any,
        repair: true,
        probe: true,
        identity: Identity::new(
            ControllerId::parse("0123abcd-4567-89ef-0123-456789abcdef").expect("a uuid"),
        ),
        retry: RetryBounds::default(),
        takeover: None,
        await_session: false,
    }
}

fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let json = serde_json::to_string(value).expect("serialises");
    serde_json::from_str(&json).expect("deserialises")
}

#[test]
fn public_types_round_trip_through_json() {
    let input = input();
    assert_eq!(round_trip(&input), input);
    let identity = serde_json::to_value(&input.identity).expect("identity");
    assert_eq!(
        identity["controller_id"], "0123abcd-4567-89ef-0123-456789abcdef",
        "the controller id serialises as its canonical text"
    );
    let mut without_probe = serde_json::to_value(&input).expect("input");
    without_probe
        .as_object_mut()
        .expect("an object")
        .remove("probe");
    let read: Input = serde_json::from_value(without_probe).expect("probe defaults");
    assert!(!read.probe, "the probe is off unless asked for");
    let mut forged = identity.clone();
    forged["controller_id"] = "not-a-uuid".into();
    assert!(
        serde_json::from_value::<Identity>(forged).is_err(),
        "an identity cannot be deserialised from arbitrary text"
    );
    assert_eq!(serde_json::to_value(input.policy).expect("policy"), "any");

    let mut machine = Machine::new(input);
    let Step::Do(command) = machine.start() else {
        panic!("expected a command");
    };
    assert_eq!(round_trip(&command), command);
    assert_eq!(
        serde_json::to_value(&command).expect("command"),
        serde_json::json!({"GetById": {"id": 7}})
    );

    let set = ScaleSet {
        id: GithubScaleSetId(7),
        name: "ci".into(),
        runner_group_id: Some(RunnerGroupId(1)),
        labels: vec![
            "ci".into(),
            "linux".into(),
            "scaleset-owner-0123abcd456789ef0123456789abcdef".into(),
        ],
        disable_update: true,
    };
    let fact = Fact::ScaleSet(set);
    assert_eq!(round_trip(&fact), fact);
    let Ok(Step::Done(outcome)) = machine.next(fact) else {
        panic!("expected an outcome");
    };
    assert!(matches!(outcome, Outcome::Ready { .. }));
    // Outcomes serialise for logs and traces, but never deserialise: a ready one may carry a
    // delete permit, which only the machine makes (issue 30 item 5).
    let written = serde_json::to_value(&outcome).expect("outcome");
    assert_eq!(written["Ready"]["provenance"], "Known", "{written}");
    assert_eq!(
        round_trip(&Command::ListGroup {
            group: RunnerGroupId(2)
        }),
        Command::ListGroup {
            group: RunnerGroupId(2)
        }
    );
}
