//! The delete rule over every stored provenance, and the sentences the operator reads.

use scaleset_adopt::{
    Command, ControllerId, Desired, Fact, GithubScaleSetId, Identity, Input, Machine, Outcome,
    Policy, RetryBounds, RunnerGroupId, ScaleSet as AdoptScaleSet, Step,
};
use scaleset_store::{
    Creation, EntityId, Evidence, Provenance, ScaleSet, ScaleSetId, ScaleSetState, Timestamp,
};

use super::*;

/// A record of creation of `github_id`, earned on the machine's create path against an empty
/// GitHub.
pub(crate) fn creation(github_id: i64) -> Creation {
    let mut machine = Machine::new(Input {
        desired: Desired {
            name: "ci".into(),
            runner_group_id: RunnerGroupId(1),
            labels: vec![],
            disable_update: false,
        },
        known_id: None,
        policy: Policy::Owned,
        repair: false,
        probe: false,
        identity: Identity::new(
            ControllerId::parse("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").expect("a uuid"),
        ),
        retry: RetryBounds::default(),
        takeover: None,
        await_session: false,
    });
    let mut step = machine.start();
    let mut created = Vec::new();
    for _ in 0..20 {
        step = match step {
            Step::Done(Outcome::Ready { rollback, .. }) => {
                let permit = rollback.permit().expect("created: a permit");
                return Creation::from_permit(permit);
            }
            Step::Done(other) => panic!("{other:?}"),
            Step::Do(Command::Create(spec)) => {
                let set = AdoptScaleSet {
                    id: GithubScaleSetId(github_id),
                    name: spec.name,
                    runner_group_id: Some(spec.runner_group_id),
                    labels: spec.labels,
                    disable_update: spec.disable_update,
                };
                created.push(set.clone());
                machine.next(Fact::ScaleSet(set)).expect("fits")
            }
            Step::Do(Command::GetById { .. }) => machine
                .next(Fact::ScaleSet(created[0].clone()))
                .expect("fits"),
            Step::Do(_) => machine
                .next(Fact::ScaleSets(created.clone()))
                .expect("fits"),
        };
    }
    panic!("no outcome in 20 steps")
}

pub(crate) fn stored(github_id: Option<i64>, provenance: Option<Provenance>) -> ScaleSet {
    ScaleSet {
        id: ScaleSetId::generate(),
        entity_id: EntityId::generate(),
        spec: scaleset_store::test_util::spec("ci"),
        github_id,
        provenance,
        evidence: vec![Evidence::OwnerLabel],
        refusal: None,
        takeover: None,
        state: ScaleSetState::Ready,
        state_reason: String::new(),
        last_message_id: 0,
        session_id: None,
        desired_runners: 0,
        last_message_at: None,
        jobs_waiting: 0,
        jobs_waiting_since: None,
        provider_error: None,
        retry_requested_at: None,
        generation: 1,
        created_at: Timestamp::EPOCH,
        updated_at: Timestamp::EPOCH,
    }
}

#[test]
fn only_a_recorded_creation_deletes_on_github_without_force() {
    let created = stored(Some(8), Some(Provenance::Created(creation(8))));
    for force in [false, true] {
        let plan = plan_deletion(&created, force);
        let Deletion::OnGitHub(github) = &plan else {
            panic!("created: deleted on GitHub, force {force}: {plan:?}");
        };
        assert_eq!((github.github_id(), github.is_forced()), (8, false));
        assert!(plan.deletes_on_github());
        assert_eq!(
            plan.to_string(),
            "GitHub scale set 8 is deleted too: this controller created it"
        );
    }

    let adopted = stored(Some(8), Some(Provenance::Adopted));
    let plan = plan_deletion(&adopted, false);
    assert_eq!(
        plan,
        Deletion::Detach(Detachment::Adopted {
            github_id: 8,
            evidence: vec![Evidence::OwnerLabel]
        })
    );
    assert!(!plan.deletes_on_github());
    let text = plan.to_string();
    assert!(
        text.starts_with("GitHub scale set 8 is left in place: it was adopted on owner label")
            && text.contains("database loss")
            && text.ends_with("--force deletes it on GitHub"),
        "{text}"
    );
    let forced = plan_deletion(&adopted, true);
    let Deletion::OnGitHub(github) = &forced else {
        panic!("{forced:?}");
    };
    assert!(github.is_forced());
    assert_eq!(
        forced.to_string(),
        "GitHub scale set 8 is deleted too, as forced: it was adopted, not created by this \
         controller"
    );

    let known = stored(Some(8), Some(Provenance::Known));
    let plan = plan_deletion(&known, false);
    assert_eq!(plan, Deletion::Detach(Detachment::Known { github_id: 8 }));
    assert!(plan.to_string().contains("no record of how it became ours"));
    assert!(plan_deletion(&known, true).deletes_on_github());
    let unrecorded = stored(Some(8), None);
    assert_eq!(
        plan_deletion(&unrecorded, false),
        Deletion::Detach(Detachment::Known { github_id: 8 })
    );
    let forced = plan_deletion(&unrecorded, true);
    assert!(forced.to_string().contains("it was known"), "{forced}");

    // Never ensured (or refused before it was ours): nothing of ours on GitHub, even forced.
    for force in [false, true] {
        let plan = plan_deletion(&stored(None, None), force);
        assert_eq!(plan, Deletion::Detach(Detachment::NeverEnsured));
        assert_eq!(
            plan.to_string(),
            "it was never ensured on GitHub: only the record is removed"
        );
    }
}

#[test]
fn a_creation_of_another_github_id_is_no_permission() {
    // A row can hold only its own GitHub id's creation (the store refuses another); should one
    // ever disagree, the delete detaches rather than delete a scale set the record does not name.
    let odd = stored(Some(9), Some(Provenance::Created(creation(8))));
    assert_eq!(
        plan_deletion(&odd, false),
        Deletion::Detach(Detachment::Known { github_id: 9 })
    );
}

#[test]
fn evidence_reads_as_words() {
    assert_eq!(evidence_words(&[]), "policy alone (no evidence)");
    assert_eq!(
        evidence_words(&[
            Evidence::CreatedThisRun,
            Evidence::StoredId,
            Evidence::OwnerLabel,
            Evidence::OwnSession,
            Evidence::ImportedFrom
        ]),
        "created by this run, stored id, owner label, our own stale session, imported from GARM"
    );
}

fn refusal(
    status: u16,
    exception: Option<scaleset_github::ExceptionKind>,
) -> scaleset_github::Error {
    let exceptions = exception
        .into_iter()
        .map(|kind| scaleset_github::Exception {
            type_name: "GitHub.Actions.Runtime.WebApi.SomeException".to_owned(),
            short_name: "SomeException".to_owned(),
            kind,
            message: String::new(),
        })
        .collect();
    scaleset_github::Error::from(scaleset_github::ServiceError {
        endpoint: scaleset_github::Endpoint::DeleteScaleSet,
        status,
        message: "refused".to_owned(),
        exceptions,
        activity_id: None,
        request_id: None,
        body: scaleset_github::ErrorBody::Json,
        rate_limit_wait: None,
    })
}

#[test]
fn a_scale_set_github_no_longer_has_counts_as_deleted() {
    use scaleset_github::ExceptionKind;
    // Named as not found, whatever the status; or a bare 404.
    assert!(already_gone(&refusal(
        404,
        Some(ExceptionKind::RunnerScaleSetNotFound)
    )));
    assert!(already_gone(&refusal(
        400,
        Some(ExceptionKind::RunnerScaleSetNotFound)
    )));
    assert!(already_gone(&refusal(404, None)));
    // Anything else is a failed delete: the operator must hear of it.
    assert!(!already_gone(&refusal(400, None)));
    assert!(!already_gone(&refusal(403, None)));
    assert!(!already_gone(&refusal(
        400,
        Some(ExceptionKind::RunnerScaleSetExists)
    )));
}
