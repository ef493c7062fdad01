//! End-to-end adoption: the pure machine of `scaleset-adopt`, driven through the real
//! `scaleset-github` client by the one adoption driver, `scaleset_control::adoption` (the
//! controller's own, through `scaleset_e2e::adoption_driver`), against the real simulator.
//!
//! Each test checks scaleset's promise from both sides, the machine's outcome and GitHub's
//! state: lose the database or crash, converge again with no duplicates, no orphans, and no
//! harm to what it cannot prove it owns.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use scaleset_adopt::CommandKind::{CloseSession, Create, GetById, ListByName, OpenSession, Update};
use scaleset_adopt::{
    CommandKind, ControllerId, CreateSpec, Desired, Evidence, Failure, GithubScaleSetId, Identity,
    Input, Notice, Outcome, Policy, Provenance, Refusal, RetryBounds, RetryReason, RunnerGroupId,
    SessionId,
};
use scaleset_control::adoption::Hooks;
use scaleset_e2e::RunningSim;
use scaleset_e2e::adoption_driver::{Run, ensure, run_once};
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, Label, RetryPolicy, RunnerScaleSetPatch,
};
use scaleset_sim::{
    Burst, ForeignScaleSet, NestedStyle, RaceCreate, RateLimit, ScaleSetInfo, SimConfig,
};

/// Our controller.
const OURS: &str = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab";
/// Another scaleset controller sharing the organization.
const OTHER: &str = "9b1d7e20-0c4a-4f6e-8d21-fedcba987654";
/// A non-scaleset listener (e.g. ARC) holding a session.
const RIVAL: &str = "arc-listener-7f9c";
const NAME: &str = "linux-x64";

const POLICIES: [Policy; 3] = [Policy::Never, Policy::Owned, Policy::Any];

/// A simulator started with `config` and a client for `acme` with fast retries.
async fn start(config: SimConfig) -> Result<(RunningSim, Client)> {
    let github = RunningSim::start(config).await?;
    let client = client(&github)?;
    Ok((github, client))
}

/// A simulator whose session conflicts name the holder (`conflictNamesOwner`, the older wording).
fn naming_owners() -> SimConfig {
    SimConfig {
        conflict_names_owner: true,
        ..SimConfig::default()
    }
}

fn client_with(github: &RunningSim, retry: RetryPolicy) -> Result<Client> {
    let url = ConfigUrl::parse(&github.url("/acme"))?;
    Ok(Client::new(
        ClientConfig::new(url, Credentials::pat("ghp_simulator")).with_retry(retry),
    )?)
}

fn client(github: &RunningSim) -> Result<Client> {
    client_with(
        github,
        RetryPolicy::new(5, Duration::from_millis(1), Duration::from_millis(5)),
    )
}

fn input(controller: &str, known_id: Option<GithubScaleSetId>, policy: Policy) -> Input {
    Input {
        desired: Desired {
            name: NAME.to_owned(),
            runner_group_id: RunnerGroupId(1),
            labels: vec!["linux".to_owned()],
            disable_update: true,
        },
        known_id,
        policy,
        repair: false,
        probe: false,
        identity: identity(controller),
        retry: RetryBounds {
            attempt: 0,
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        },
        takeover: None,
        await_session: false,
    }
}

/// `input` with the opt-in ownership probe (a session) under policy `owned`, and `repair` on:
/// drift is decided before probing, and these scenarios are about what the probe meets.
fn probing(controller: &str, policy: Policy) -> Input {
    Input {
        probe: true,
        repair: true,
        ..input(controller, None, policy)
    }
}

/// The identity of one of the test's controllers (constants that parse as UUIDs).
fn identity(controller: &str) -> Identity {
    Identity::new(ControllerId::parse(controller).expect("the test's controller ids are UUIDs"))
}

fn owner_label(controller: &str) -> Result<String> {
    identity(controller)
        .owner_label()
        .context("owner labels are on by default")
}

/// The fields of a `Ready` outcome the tests look at.
#[derive(Debug)]
struct Ready {
    id: GithubScaleSetId,
    provenance: Provenance,
    evidence: Vec<Evidence>,
    session: Option<SessionId>,
    reset_cursor: bool,
    permit: Option<GithubScaleSetId>,
}

fn expect_ready(run: &Run) -> Result<Ready> {
    let Outcome::Ready {
        id,
        provenance,
        evidence,
        session,
        reset_cursor,
        rollback,
        ..
    } = &run.outcome
    else {
        bail!("expected ready, got {:?}", run.outcome);
    };
    Ok(Ready {
        id: *id,
        provenance: *provenance,
        evidence: evidence.clone(),
        session: session.clone(),
        reset_cursor: *reset_cursor,
        permit: rollback.permit().map(|permit| permit.id()),
    })
}

/// The run created a new scale set in place of `old` and resets the message cursor.
fn expect_created_again(run: &Run, old: GithubScaleSetId) -> Result<Ready> {
    let ready = expect_ready(run)?;
    assert_eq!(ready.provenance, Provenance::Created);
    assert!(ready.reset_cursor, "the old message cursor is meaningless");
    assert_ne!(ready.id, old);
    Ok(ready)
}

/// The run failed on its read by id (a bad request, never retried).
fn expect_failed_read(run: &Run) -> Result<()> {
    let Outcome::Failed {
        reason: Failure::BadRequest { command, .. },
    } = &run.outcome
    else {
        bail!("expected a failed read, got {:?}", run.outcome);
    };
    assert_eq!(*command, CommandKind::GetById);
    Ok(())
}

/// The reason of a `Retry` outcome.
fn retry_reason(run: &Run) -> Result<&RetryReason> {
    let Outcome::Retry { reason, .. } = &run.outcome else {
        bail!("expected a retry, got {:?}", run.outcome);
    };
    Ok(reason)
}

fn refusal(run: &Run) -> Result<&Refusal> {
    run.outcome
        .refusal()
        .with_context(|| format!("expected a refusal, got {:?}", run.outcome))
}

fn kinds(run: &Run) -> Vec<CommandKind> {
    run.commands.iter().map(|c| c.kind()).collect()
}

/// Every scale set on the simulator with the desired name (any case, any group, any scope).
fn named(github: &RunningSim) -> Vec<ScaleSetInfo> {
    github
        .sim
        .state()
        .scale_sets
        .into_iter()
        .filter(|set| set.name.eq_ignore_ascii_case(NAME))
        .collect()
}

fn only_one(github: &RunningSim) -> Result<ScaleSetInfo> {
    let mut sets = named(github);
    if sets.len() != 1 {
        bail!("expected exactly one scale set named {NAME}, found {sets:?}");
    }
    sets.pop().context("one scale set")
}

/// Requests that change GitHub (create, update, delete, sessions).
fn writes(github: &RunningSim) -> u64 {
    calls(github, WRITES)
}

/// The endpoints that change GitHub.
const WRITES: &[&str] = &[
    "create_scale_set",
    "update_scale_set",
    "delete_scale_set",
    "create_session",
    "delete_session",
];

/// Requests the simulator saw to any of `endpoints`.
fn calls(github: &RunningSim, endpoints: &[&str]) -> u64 {
    endpoints
        .iter()
        .map(|endpoint| github.sim.request_count(endpoint))
        .sum()
}

/// The scale set `NAME` created by somebody else (no owner label), its session held by `RIVAL`.
fn rivals(github: &RunningSim) -> Result<ForeignScaleSet> {
    Ok(github
        .sim
        .create_foreign_scale_set("acme", 1, NAME, RIVAL)?)
}

/// [`start`], then the scale set created by controller `OURS`; returns its id too.
async fn ours(config: SimConfig) -> Result<(RunningSim, Client, GithubScaleSetId)> {
    let (github, client) = start(config).await?;
    let id = created_by_us(&client).await?;
    Ok((github, client, id))
}

/// Creates the scale set as controller `OURS` on a fresh simulator state.
async fn created_by_us(client: &Client) -> Result<GithubScaleSetId> {
    let run = run_once(client, input(OURS, None, Policy::Owned)).await?;
    Ok(expect_ready(&run)?.id)
}

/// Scenario 1: nothing stored, nothing on GitHub.
#[tokio::test]
async fn a_fresh_ensure_creates_one_scale_set_with_a_delete_permit() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;

    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!(ready.provenance, Provenance::Created);
    assert_eq!(ready.evidence, vec![Evidence::CreatedThisRun]);
    assert_eq!(
        ready.permit,
        Some(ready.id),
        "only a created set may be deleted"
    );
    assert!(!ready.reset_cursor);
    assert_eq!(kinds(&run), [ListByName, Create]);

    let set = only_one(&github)?;
    assert_eq!(set.id, ready.id.0);
    assert_eq!(
        set.labels,
        [NAME.to_owned(), "linux".to_owned(), owner_label(OURS)?],
        "the name, the configured labels and our owner label"
    );
    assert!(
        set.session.is_none(),
        "the machine leaves no session behind"
    );
    assert_eq!(github.sim.request_count("create_scale_set"), 1);
    let on_github = client.get_scale_set(GithubScaleSetId(set.id)).await?;
    assert!(on_github.runner_setting.disable_update);
    Ok(github.stop().await?)
}

/// Scenario 2: a restart with the stored id reads it and creates nothing.
#[tokio::test]
async fn a_restart_with_the_stored_id_is_known_and_creates_nothing() -> Result<()> {
    let (github, client, id) = ours(SimConfig::default()).await?;
    github.sim.clear_requests();

    let run = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Known));
    assert_eq!(
        ready.evidence,
        vec![Evidence::StoredId, Evidence::OwnerLabel]
    );
    assert_eq!(ready.permit, None, "a known scale set may only be detached");
    assert!(!ready.reset_cursor);
    assert_eq!(kinds(&run), [GetById]);
    assert_eq!(github.sim.request_count("create_scale_set"), 0);
    assert_eq!(writes(&github), 0);
    only_one(&github)?;
    Ok(github.stop().await?)
}

/// Requests the simulator answered on the Actions service's scale-set and session endpoints
/// (the token chain not counted).
fn actions_calls(github: &RunningSim) -> u64 {
    calls(github, &["get_scale_set", "list_scale_sets"]) + writes(github)
}

/// One Actions call per adoption, counted on GitHub's side: a create costs the lookup and the
/// create (2), a restart from the stored id one read (1), and a lost database one lookup whose
/// full record carries the owner label (1, no re-read by id).
#[tokio::test]
async fn each_scenario_costs_the_fewest_actions_calls() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    github.sim.clear_requests();
    let created = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    let id = expect_ready(&created)?.id;
    let mut counts = vec![("create", actions_calls(&github))];

    github.sim.clear_requests();
    let known = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    assert_eq!(expect_ready(&known)?.provenance, Provenance::Known);
    counts.push(("known", actions_calls(&github)));

    github.sim.clear_requests();
    let adopted = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    assert_eq!(expect_ready(&adopted)?.provenance, Provenance::Adopted);
    counts.push(("adopted by owner label", actions_calls(&github)));

    assert_eq!(
        counts,
        [("create", 2), ("known", 1), ("adopted by owner label", 1)]
    );
    Ok(github.stop().await?)
}

/// A 404 that is not GitHub's scale-set-not-found answer (here a `VssServiceException`, as a
/// router or proxy might answer) is no proof the stored scale set is gone: the run fails on
/// it instead of forgetting the id, resetting the cursor or creating anything, and the next
/// run finds the set Known.
#[tokio::test]
async fn a_404_that_is_not_githubs_not_found_never_forgets_the_stored_id() -> Result<()> {
    let (github, client, id) = ours(SimConfig::default()).await?;
    github.sim.clear_requests();
    github.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(1, 404).on("get_scale_set"));
    });

    let run = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    expect_failed_read(&run)?;
    assert_eq!(kinds(&run), [GetById], "no lookup, no create");
    assert_eq!(writes(&github), 0);

    let run = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Known));
    assert!(!ready.reset_cursor);
    Ok(github.stop().await?)
}

/// Scenario 3: the database is lost; the owner label proves the scale set is ours.
#[tokio::test]
async fn a_lost_database_adopts_our_scale_set_by_its_owner_label() -> Result<()> {
    let (github, client, id) = ours(SimConfig::default()).await?;
    github.sim.clear_requests();

    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Adopted));
    assert_eq!(ready.evidence, vec![Evidence::OwnerLabel]);
    assert_eq!(ready.permit, None, "an adopted scale set is never deleted");
    assert_eq!(
        kinds(&run),
        [ListByName],
        "the list item is a full record: no re-read"
    );
    assert_eq!(writes(&github), 0, "no create, no probe session");
    assert_eq!(only_one(&github)?.id, id.0, "no duplicate");

    // Policy `never` accepts only the stored id, so the same loss is a refusal there.
    let run = run_once(&client, input(OURS, None, Policy::Never)).await?;
    assert!(matches!(refusal(&run)?, Refusal::ScaleSetExists { .. }));
    Ok(github.stop().await?)
}

/// Scenario 4: another controller (another owner label) loses its database and looks for the
/// same name: it must not take our scale set, under any policy.
#[tokio::test]
async fn another_controller_is_refused_our_scale_set_under_every_policy() -> Result<()> {
    let (github, client, id) = ours(SimConfig::default()).await?;
    let before = github.sim.state().scale_sets;
    github.sim.clear_requests();

    for policy in POLICIES {
        let run = run_once(&client, input(OTHER, None, policy)).await?;
        let Refusal::ForeignOwner { scale_set, labels } = refusal(&run)? else {
            bail!("{policy:?}: expected ForeignOwner, got {:?}", run.outcome);
        };
        assert_eq!(scale_set.id, id, "{policy:?}");
        assert_eq!(labels, &[owner_label(OURS)?], "{policy:?}");
        assert!(
            !kinds(&run).contains(&CommandKind::OpenSession),
            "{policy:?}: no probe on a foreign-owned set"
        );
    }
    assert_eq!(writes(&github), 0, "nothing created, modified or deleted");
    assert_eq!(github.sim.state().scale_sets, before);
    Ok(github.stop().await?)
}

/// Scenario 5: a scale set somebody else created (no owner label), whose session another
/// listener holds. The conflict names the holder here (the simulator's older wording).
#[tokio::test]
async fn a_foreign_scale_set_with_a_live_session_is_never_taken() -> Result<()> {
    let (github, client) = start(naming_owners()).await?;
    let foreign = rivals(&github)?;
    let before = github.sim.state().scale_sets;
    github.sim.clear_requests();

    for policy in POLICIES {
        let run = run_once(&client, probing(OURS, policy)).await?;
        match (policy, refusal(&run)?) {
            (Policy::Never, Refusal::ScaleSetExists { scale_set }) => {
                assert_eq!(scale_set.id.0, foreign.scale_set_id);
                assert!(!kinds(&run).contains(&CommandKind::OpenSession));
            }
            (Policy::Owned | Policy::Any, Refusal::ForeignSession { scale_set, owner }) => {
                assert_eq!(scale_set.id.0, foreign.scale_set_id);
                assert_eq!(owner, RIVAL);
            }
            (policy, other) => bail!("{policy:?}: unexpected refusal {other:?}"),
        }
    }
    // Two probes met the 409; nothing else was written.
    assert_eq!(github.sim.request_count("create_session"), 2);
    assert_eq!(writes(&github), 2);
    assert_eq!(
        github.sim.state().scale_sets,
        before,
        "the rival's session is intact"
    );
    Ok(github.stop().await?)
}

/// Scenario 5 with today's wording: the 409 does not name the holder, so nothing can be
/// proven either way. The machine retries (`SessionHeld`) and then gives up; it never adopts.
#[tokio::test]
async fn an_unnamed_session_holder_is_waited_for_then_given_up_on() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    let foreign = rivals(&github)?;
    let before = github.sim.state().scale_sets;

    for policy in [Policy::Owned, Policy::Any] {
        let runs = ensure(&client, probing(OURS, policy)).await?;
        assert_eq!(runs.len(), 3, "{policy:?}: max_attempts runs");
        for run in &runs[..2] {
            let RetryReason::SessionHeld { scale_set, owner } = retry_reason(run)? else {
                bail!("{policy:?}: expected SessionHeld, got {:?}", run.outcome);
            };
            assert_eq!(scale_set.id.0, foreign.scale_set_id);
            assert_eq!(owner, &None);
        }
        let last = runs.last().context("a last run")?;
        let Outcome::Failed {
            reason: Failure::AttemptsExhausted { attempts, last },
        } = &last.outcome
        else {
            bail!(
                "{policy:?}: expected AttemptsExhausted, got {:?}",
                last.outcome
            );
        };
        assert_eq!(*attempts, 3);
        assert!(matches!(last, RetryReason::SessionHeld { owner: None, .. }));
    }
    assert_eq!(github.sim.request_count("create_scale_set"), 0);
    assert_eq!(github.sim.state().scale_sets, before);
    Ok(github.stop().await?)
}

/// Scenario 5 without a holder: `owned` refuses without opening a session (the probe is
/// opt-in); with the probe on it opens one, proves nothing and closes it;
/// `any` adopts, repairs the settings (adding our owner label) and hands the probe's session to
/// the listener. Afterwards the owner label is evidence even for `owned`.
#[tokio::test]
async fn a_foreign_scale_set_without_a_session_is_adopted_only_under_any() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    let foreign = rivals(&github)?;
    github.sim.evict_session(foreign.scale_set_id)?;
    let id = GithubScaleSetId(foreign.scale_set_id);

    github.sim.clear_requests();
    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    assert!(matches!(refusal(&run)?, Refusal::OwnershipUnproven { .. }));
    assert_eq!(kinds(&run), [ListByName]);
    assert_eq!(writes(&github), 0, "no probe session by default");

    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    assert!(matches!(refusal(&run)?, Refusal::OwnershipUnproven { .. }));
    assert_eq!(kinds(&run), [ListByName, OpenSession, CloseSession]);
    let set = only_one(&github)?;
    assert!(set.session.is_none(), "the probe session was closed");
    assert_eq!(set.labels, [NAME], "untouched");

    let identity = identity(OURS);
    let mut any = input(OURS, None, Policy::Any);
    any.repair = true;
    let run = run_once(&client, any).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Adopted));
    assert!(ready.evidence.is_empty(), "adopted on policy alone");
    assert_eq!(ready.permit, None);
    let session = run.session.as_ref().context("the session is handed over")?;
    assert_eq!(ready.session, Some(SessionId(session.session_id.clone())));
    // Opened on a set not yet proven ours, the probe carries the probe owner, also once
    // handed over: our session owner is only ever used on sets already ours.
    assert_eq!(session.owner_name, identity.probe_owner());
    let set = only_one(&github)?;
    assert_eq!(
        set.session.map(|s| s.owner_name),
        Some(identity.probe_owner()),
        "the listener holds it now"
    );
    assert_eq!(
        set.labels,
        [NAME.to_owned(), "linux".to_owned(), owner_label(OURS)?]
    );
    client
        .delete_session(GithubScaleSetId(foreign.scale_set_id), &session.session_id)
        .await?;

    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    assert_eq!(expect_ready(&run)?.evidence, vec![Evidence::OwnerLabel]);
    Ok(github.stop().await?)
}

/// Scenario 6a: a competitor creates the same name between our lookup and our create. The
/// machine looks again and judges the winner by rule 3: without evidence it is not ours.
#[tokio::test]
async fn a_competitor_that_wins_the_create_race_is_not_adopted() -> Result<()> {
    let (github, client) = start(naming_owners()).await?;

    // The competitor holds its session.
    github
        .sim
        .update_faults(|f| f.race_create = Some(RaceCreate::with_owner(RIVAL)));
    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    let Refusal::ForeignSession { scale_set, owner } = refusal(&run)? else {
        bail!("expected ForeignSession, got {:?}", run.outcome);
    };
    assert_eq!(owner, RIVAL);
    assert_eq!(kinds(&run), [ListByName, Create, ListByName, OpenSession]);
    let theirs = only_one(&github)?;
    assert_eq!(theirs.id, scale_set.id.0);
    assert_eq!(theirs.labels, [NAME], "no owner label of ours");
    assert_eq!(theirs.session.map(|s| s.owner_name).as_deref(), Some(RIVAL));
    assert_eq!(
        github.sim.request_count("create_scale_set"),
        1,
        "created once"
    );
    github.sim.delete_scale_set(theirs.id)?;

    // The competitor holds no session: the probe opens, proves nothing and is closed.
    github
        .sim
        .update_faults(|f| f.race_create = Some(RaceCreate::default()));
    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    assert!(matches!(refusal(&run)?, Refusal::OwnershipUnproven { .. }));
    assert_eq!(run.outcome.delete_permit(), None);
    let theirs = only_one(&github)?;
    assert!(theirs.session.is_none(), "the probe was closed");
    github.sim.delete_scale_set(theirs.id)?;

    // Under `never` the winner is refused without a probe.
    github
        .sim
        .update_faults(|f| f.race_create = Some(RaceCreate::default()));
    let run = run_once(&client, input(OURS, None, Policy::Never)).await?;
    assert!(matches!(refusal(&run)?, Refusal::ScaleSetExists { .. }));
    assert!(!kinds(&run).contains(&CommandKind::OpenSession));
    only_one(&github)?;
    Ok(github.stop().await?)
}

/// Scenario 6b: our create commits on GitHub but answers 5xx. The client's retry meets
/// `RunnerScaleSetExistsException`; the machine looks again and finds our own owner label.
#[tokio::test]
async fn a_create_committed_behind_a_5xx_is_found_again_by_its_owner_label() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    github.sim.update_faults(|f| {
        f.commit_then_fail = Some(Burst::new(1, 503).on("create_scale_set"));
    });

    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!(ready.provenance, Provenance::Adopted);
    assert_eq!(ready.evidence, vec![Evidence::OwnerLabel]);
    // Our own set, but this run cannot prove it created it: no delete permit.
    assert_eq!(ready.permit, None);
    assert_eq!(kinds(&run), [ListByName, Create, ListByName]);
    assert_eq!(github.sim.request_count("create_scale_set"), 2, "one retry");
    assert_eq!(only_one(&github)?.id, ready.id.0, "no duplicate");
    Ok(github.stop().await?)
}

/// Scenario 6b with a client that does not retry: the 5xx ends the attempt in
/// `Retry (Transient)`, and the next attempt starts at the lookup and adopts our set.
#[tokio::test]
async fn a_retried_ensure_after_a_committed_5xx_adopts_instead_of_duplicating() -> Result<()> {
    let github = RunningSim::start(SimConfig::default()).await?;
    let client = client_with(&github, RetryPolicy::never())?;
    github.sim.update_faults(|f| {
        f.commit_then_fail = Some(Burst::new(1, 503).on("create_scale_set"));
    });

    let runs = ensure(&client, input(OURS, None, Policy::Owned)).await?;
    let [first, second] = runs.as_slice() else {
        bail!("expected two attempts, got {runs:?}");
    };
    assert!(
        matches!(
            &first.outcome,
            Outcome::Retry {
                reason: RetryReason::Transient {
                    command: CommandKind::Create,
                    ..
                },
                ..
            }
        ),
        "{:?}",
        first.outcome
    );
    let ready = expect_ready(second)?;
    assert_eq!(ready.provenance, Provenance::Adopted);
    assert_eq!(ready.evidence, vec![Evidence::OwnerLabel]);
    assert_eq!(ready.permit, None);
    assert_eq!(second.count(CommandKind::Create), 0);
    assert_eq!(github.sim.request_count("create_scale_set"), 1);
    assert_eq!(only_one(&github)?.id, ready.id.0, "no duplicate");
    Ok(github.stop().await?)
}

/// A crash leaves our listener's session open, the database is lost, and owner labels are
/// off: the probe's 409 names our own session owner, which is evidence.
#[tokio::test]
async fn a_crashed_listeners_session_proves_ownership_without_owner_labels() -> Result<()> {
    let (github, client) = start(naming_owners()).await?;
    let mut unlabelled = input(OURS, None, Policy::Owned);
    unlabelled.identity = identity(OURS).without_owner_label();
    let created = run_once(&client, unlabelled.clone()).await?;
    let id = expect_ready(&created)?.id;
    assert_eq!(only_one(&github)?.labels, [NAME, "linux"]);
    // The listener opened its session and crashed without closing it.
    let identity = identity(OURS);
    client.create_session(id, &identity.session_owner()).await?;

    // Without the opt-in probe nothing proves it ours.
    let run = run_once(&client, unlabelled.clone()).await?;
    assert!(matches!(refusal(&run)?, Refusal::OwnershipUnproven { .. }));
    unlabelled.probe = true;
    let run = run_once(&client, unlabelled).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Adopted));
    assert_eq!(ready.evidence, vec![Evidence::OwnSession]);
    assert_eq!(ready.permit, None);
    assert_eq!(
        ready.session, None,
        "the stale session is the listener's to replace"
    );
    let set = only_one(&github)?;
    assert_eq!(
        set.session.map(|s| s.owner_name),
        Some(identity.session_owner())
    );
    Ok(github.stop().await?)
}

/// Scenario 7a: GitHub deleted the scale set out of band; the stored id reads 404.
#[tokio::test]
async fn a_scale_set_deleted_out_of_band_is_created_again_with_a_cursor_reset() -> Result<()> {
    let (github, client, old) = ours(SimConfig::default()).await?;
    github.sim.delete_scale_set(old.0)?;

    let run = run_once(&client, input(OURS, Some(old), Policy::Owned)).await?;
    let ready = expect_created_again(&run, old)?;
    assert_eq!(ready.permit, Some(ready.id));
    assert_eq!(kinds(&run), [GetById, ListByName, Create]);
    assert_eq!(only_one(&github)?.id, ready.id.0);
    Ok(github.stop().await?)
}

/// Scenario 7b: the same through dormancy, by moving simulated time past it.
///
/// The admin token the client cached expires with the jump (the client judges `exp` by its own
/// clock, the simulator by simulated time): the first read answers 401, which the client
/// classifies as retryable after dropping the token, so the first attempt ends in
/// `Retry (Transient)` and the next one, with a fresh token, converges.
#[tokio::test]
async fn a_dormant_scale_set_removed_by_github_is_created_again() -> Result<()> {
    let (github, client, old) = ours(SimConfig::default()).await?;
    github.sim.advance(Duration::from_secs(8 * 24 * 3600));
    assert!(named(&github).is_empty(), "dormancy removed it");

    let runs = ensure(&client, input(OURS, Some(old), Policy::Owned)).await?;
    let [expired, run] = runs.as_slice() else {
        bail!("expected two attempts, got {runs:?}");
    };
    let RetryReason::Transient { command, message } = retry_reason(expired)? else {
        bail!("expected a transient 401, got {:?}", expired.outcome);
    };
    assert_eq!(*command, CommandKind::GetById);
    assert!(message.contains("InvalidTokenException"), "{message}");
    let ready = expect_created_again(run, old)?;
    assert_eq!(only_one(&github)?.id, ready.id.0);
    Ok(github.stop().await?)
}

/// Scenario 8: labels changed out of band. Found by name without repair: refused, untouched.
/// With repair: patched and verified by a read-back. Known by its stored id: a configuration
/// change to apply, patched without `repair` (our own sets keep being served).
#[tokio::test]
async fn drifted_labels_are_refused_or_repaired_and_verified() -> Result<()> {
    let (github, client, id) = ours(SimConfig::default()).await?;
    let relabel = |labels: Vec<Label>| RunnerScaleSetPatch {
        labels: Some(labels),
        ..RunnerScaleSetPatch::default()
    };
    // Somebody replaces the labels, keeping ours.
    let ours_and_gpu = vec![
        Label::system(NAME),
        Label::system("gpu"),
        Label::system(owner_label(OURS)?),
    ];
    client.update_scale_set(id, &relabel(ours_and_gpu)).await?;
    github.sim.clear_requests();

    let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
    let Refusal::Drifted { ours, theirs, .. } = refusal(&run)? else {
        bail!("expected Drifted, got {:?}", run.outcome);
    };
    assert_eq!(ours.labels, ["linux", NAME]);
    assert_eq!(theirs.labels, ["gpu", NAME]);
    assert_eq!(writes(&github), 0, "no repair without repair = true");

    let mut repair = input(OURS, None, Policy::Owned);
    repair.repair = true;
    let run = run_once(&client, repair).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Adopted));
    assert!(matches!(
        run.outcome_notices(),
        [Notice::SpecApplied {
            moved_from: None,
            ..
        }]
    ));
    assert_eq!(kinds(&run), [ListByName, Update, GetById]);

    // Now the labels are replaced, dropping ours; the worker restarts from the stored id.
    client
        .update_scale_set(
            id,
            &relabel(vec![Label::system(NAME), Label::system("gpu")]),
        )
        .await?;
    github.sim.clear_requests();
    let run = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    let ready = expect_ready(&run)?;
    assert_eq!((ready.id, ready.provenance), (id, Provenance::Known));
    assert_eq!(ready.evidence, vec![Evidence::StoredId]);
    let [Notice::SpecApplied { before, after, .. }] = run.outcome_notices() else {
        bail!("expected one SpecApplied, got {:?}", run.outcome);
    };
    assert_eq!(before.labels, ["gpu", NAME]);
    assert_eq!(after.labels, ["linux", NAME]);
    assert_eq!(kinds(&run), [GetById, Update, GetById]);
    assert_eq!(
        only_one(&github)?.labels,
        [NAME.to_owned(), "linux".to_owned(), owner_label(OURS)?],
        "the owner label is back too"
    );
    assert_eq!(github.sim.request_count("update_scale_set"), 1);
    Ok(github.stop().await?)
}

/// Scenario 8 for `disableUpdate`. Turning it on applies; turning it off cannot: the client
/// omits `disableUpdate: false` (as the official clients do, protocol §6.1) and a PATCH
/// ignores zero values (protocol §5 (5)), so the read-back still shows `true`. A known set
/// stays served with a `SpecNotApplied` warning; a repair of a found one is refused
/// (`RepairDidNotTake`) rather than claiming success.
#[tokio::test]
async fn disable_update_repairs_to_true_but_cannot_be_turned_off() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    let mut off = input(OURS, None, Policy::Owned);
    off.desired.disable_update = false;
    let id = expect_ready(&run_once(&client, off.clone()).await?)?.id;
    assert!(
        !client
            .get_scale_set(id)
            .await?
            .runner_setting
            .disable_update
    );

    let run = run_once(&client, input(OURS, Some(id), Policy::Owned)).await?;
    assert_eq!(expect_ready(&run)?.provenance, Provenance::Known);
    assert!(matches!(
        run.outcome_notices(),
        [Notice::SpecApplied { .. }]
    ));
    assert!(
        client
            .get_scale_set(id)
            .await?
            .runner_setting
            .disable_update
    );

    let mut known_off = off.clone();
    known_off.known_id = Some(id);
    let run = run_once(&client, known_off).await?;
    assert_eq!(expect_ready(&run)?.provenance, Provenance::Known);
    let [notice @ Notice::SpecNotApplied { ours, theirs, .. }] = run.outcome_notices() else {
        bail!("expected SpecNotApplied, got {:?}", run.outcome);
    };
    assert!(notice.is_warning());
    assert!((!ours.disable_update, theirs.disable_update) == (true, true));

    let mut back_off = off;
    back_off.repair = true;
    let run = run_once(&client, back_off).await?;
    let reason = refusal(&run)?;
    let Refusal::RepairDidNotTake { ours, theirs, .. } = reason else {
        bail!("expected RepairDidNotTake, got {:?}", run.outcome);
    };
    assert!(!ours.disable_update);
    assert!(theirs.disable_update);
    // The operator is told what differs and what to do about it.
    let remediation = reason.remediation();
    assert!(
        remediation.contains("set `disable_update = true` in the configuration"),
        "{remediation}"
    );
    Ok(github.stop().await?)
}

/// Names are matched exactly, but GitHub (the simulator, case-insensitively unique) returns a
/// case variant for the name filter: the machine refuses instead of creating a near-duplicate.
#[tokio::test]
async fn a_name_differing_only_in_case_is_refused_not_duplicated() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    let variant = NAME.to_uppercase();
    github
        .sim
        .create_foreign_scale_set("acme", 1, &variant, RIVAL)?;

    for policy in POLICIES {
        let run = run_once(&client, input(OURS, None, policy)).await?;
        let Refusal::NameCaseCollision { existing, .. } = refusal(&run)? else {
            bail!(
                "{policy:?}: expected NameCaseCollision, got {:?}",
                run.outcome
            );
        };
        assert_eq!(
            existing.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            [variant.as_str()]
        );
    }
    assert_eq!(writes(&github), 0);
    assert_eq!(only_one(&github)?.name, variant);
    Ok(github.stop().await?)
}

/// GitHub's quirks that the simulator can inject (group ids omitted from group-scoped lists,
/// the name filter ignored, exceptions nested either way, BOM-prefixed bodies) change no
/// verdict: create, adopt after a lost database, and a lost race are decided as without them.
#[tokio::test]
async fn githubs_quirks_do_not_change_the_verdicts() -> Result<()> {
    for style in [NestedStyle::InnerException, NestedStyle::Message] {
        let (github, client) = start(naming_owners()).await?;
        github.sim.update_faults(|f| {
            f.omit_runner_group_id = true;
            f.ignore_name_filter = true;
            f.nested_exceptions = Some(style);
            f.bom = true;
        });
        // A neighbour in the same group, listed by every name lookup.
        github
            .sim
            .create_foreign_scale_set("acme", 1, "windows", RIVAL)?;

        let id = created_by_us(&client).await?;
        let run = run_once(&client, input(OURS, None, Policy::Owned)).await?;
        let ready = expect_ready(&run)?;
        assert_eq!(
            (ready.id, ready.provenance),
            (id, Provenance::Adopted),
            "{style:?}"
        );
        assert_eq!(ready.evidence, vec![Evidence::OwnerLabel], "{style:?}");

        github.sim.delete_scale_set(id.0)?;
        github
            .sim
            .update_faults(|f| f.race_create = Some(RaceCreate::with_owner(RIVAL)));
        let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
        let Refusal::ForeignSession { owner, .. } = refusal(&run)? else {
            bail!("{style:?}: expected ForeignSession, got {:?}", run.outcome);
        };
        assert_eq!(owner, RIVAL, "{style:?}");
        assert!(
            only_one(&github)?.labels.iter().all(|l| l == NAME),
            "{style:?}: theirs"
        );
        assert_eq!(github.sim.state().scale_sets.len(), 2, "{style:?}");
        github.stop().await?;
    }
    Ok(())
}

/// With `text/plain` error bodies the exception names are lost. A bare 404 is not GitHub's
/// scale-set-not-found answer (a router or proxy answers 404 too), so a deleted scale set is
/// not replaced on it: the run fails and creates nothing. A lost create race can no longer be
/// recognised either (`RunnerScaleSetExistsException` is gone from the body), and the run
/// fails on the 400 instead of adopting or creating twice.
#[tokio::test]
async fn text_plain_errors_fail_safely_instead_of_replacing_or_adopting() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    github.sim.update_faults(|f| f.text_plain_errors = true);
    let old = created_by_us(&client).await?;
    github.sim.delete_scale_set(old.0)?;
    github.sim.clear_requests();

    let run = run_once(&client, input(OURS, Some(old), Policy::Owned)).await?;
    expect_failed_read(&run)?;
    assert_eq!(writes(&github), 0, "nothing created on a bare 404");
    assert!(named(&github).is_empty());

    github
        .sim
        .update_faults(|f| f.race_create = Some(RaceCreate::default()));
    let run = run_once(&client, input(OURS, None, Policy::Any)).await?;
    let Outcome::Failed {
        reason: Failure::BadRequest {
            command, message, ..
        },
    } = &run.outcome
    else {
        bail!("expected a failed create, got {:?}", run.outcome);
    };
    assert_eq!(*command, CommandKind::Create);
    assert!(message.contains("already exists"), "{message}");
    assert_eq!(only_one(&github)?.labels, [NAME], "only the competitor's");
    Ok(github.stop().await?)
}

/// GitHub fails the deletes of the (opt-in) ownership probe's session: the run reports the
/// leak (`Retry (SessionNotClosed)`) rather than hiding it and the driver deletes it once more.
/// When that fails too, the leaked probe is never mistaken for our own stale session (it
/// answers `SessionHeld`, not evidence), and once it is deleted the next attempt decides as
/// before.
#[tokio::test]
async fn a_leaked_probe_session_is_reported_and_never_counts_as_evidence() -> Result<()> {
    let (github, client) = start(naming_owners()).await?;
    let foreign = rivals(&github)?;
    github.sim.evict_session(foreign.scale_set_id)?;
    let identity = identity(OURS);
    // Three closes, five client attempts each; the driver's own delete succeeds.
    github.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(15, 503).on("delete_session"));
    });
    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    let RetryReason::SessionNotClosed { session, .. } = retry_reason(&run)? else {
        bail!("expected SessionNotClosed, got {:?}", run.outcome);
    };
    assert_eq!(run.deleted_leaks, std::slice::from_ref(&session.0));
    assert!(
        only_one(&github)?.session.is_none(),
        "the driver deleted it"
    );

    // The driver's delete fails as well (5 more attempts).
    github.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(20, 503).on("delete_session"));
    });
    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    assert!(run.deleted_leaks.is_empty());
    let RetryReason::SessionNotClosed { session, .. } = retry_reason(&run)? else {
        bail!("expected SessionNotClosed, got {:?}", run.outcome);
    };
    assert_eq!(run.count(CommandKind::CloseSession), 3);
    let leaked = only_one(&github)?
        .session
        .context("the probe is still open")?;
    assert_eq!(leaked.session_id, session.0);
    assert_eq!(leaked.owner_name, identity.probe_owner());

    let mut next = probing(OURS, Policy::Owned);
    next.retry.attempt = 1;
    let run = run_once(&client, next.clone()).await?;
    let RetryReason::SessionHeld { owner, .. } = retry_reason(&run)? else {
        bail!("expected SessionHeld, got {:?}", run.outcome);
    };
    assert_eq!(owner.as_deref(), Some(identity.probe_owner().as_str()));

    // The driver deletes what the machine reported; the next attempt probes afresh.
    client
        .delete_session(GithubScaleSetId(foreign.scale_set_id), &session.0)
        .await?;
    next.retry.attempt = 2;
    let run = run_once(&client, next).await?;
    assert!(matches!(refusal(&run)?, Refusal::OwnershipUnproven { .. }));
    assert!(only_one(&github)?.session.is_none());
    assert_eq!(github.sim.request_count("create_scale_set"), 0);
    Ok(github.stop().await?)
}

/// Issue 29 item 2, both runs through the real driver. Run 1 (`any`, repair on): the probe
/// opens a session on a drifted set never ours, the PATCH fails, every close fails and so does
/// the driver's extra delete. Run 2 (`owned`, repair, probe on): the probe meets run 1's leak,
/// and GitHub names its owner. The leak carries the probe owner, so it is waited for
/// (`SessionHeld`), never taken as our own stale session.
#[tokio::test]
async fn a_probe_leaked_under_any_is_never_evidence_for_owned() -> Result<()> {
    let (github, client) = start(naming_owners()).await?;
    let foreign = rivals(&github)?;
    github.sim.evict_session(foreign.scale_set_id)?;
    let identity = identity(OURS);
    // Five client attempts on the PATCH; three closes and the driver's delete, five each.
    github.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(5, 503).on("update_scale_set"));
        f.rate_limit = Some(RateLimit::new(20, 0).on("delete_session"));
    });
    let mut any = input(OURS, None, Policy::Any);
    any.repair = true;
    let run = run_once(&client, any).await?;
    let RetryReason::SessionNotClosed { session, .. } = retry_reason(&run)? else {
        bail!("expected SessionNotClosed, got {:?}", run.outcome);
    };
    assert_eq!(
        kinds(&run),
        [
            ListByName,
            OpenSession,
            Update,
            CloseSession,
            CloseSession,
            CloseSession
        ]
    );
    assert!(run.deleted_leaks.is_empty(), "the driver's delete failed");
    let set = only_one(&github)?;
    let leaked = set.session.context("the probe is still open")?;
    assert_eq!(leaked.session_id, session.0);
    assert_eq!(leaked.owner_name, identity.probe_owner());
    assert_eq!(set.labels, [NAME], "the PATCH never took");

    let run = run_once(&client, probing(OURS, Policy::Owned)).await?;
    let RetryReason::SessionHeld { owner, .. } = retry_reason(&run)? else {
        bail!("expected SessionHeld, got {:?}", run.outcome);
    };
    assert_eq!(owner.as_deref(), Some(identity.probe_owner().as_str()));
    assert_eq!(kinds(&run), [ListByName, OpenSession]);
    let set = only_one(&github)?;
    assert_eq!(set.labels, [NAME], "never adopted, never repaired");
    assert_eq!(set.session.map(|s| s.session_id), Some(session.0.clone()));
    Ok(github.stop().await?)
}

/// What the shared driver told a recording embedder, in order.
#[derive(Debug, Default)]
struct Recorder {
    seen: std::sync::Mutex<Vec<String>>,
    refuse_intent: bool,
}

impl Recorder {
    fn push(&self, what: String) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(what);
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl Hooks for Recorder {
    async fn before_create(&self, spec: &CreateSpec) -> Result<(), scaleset_control::Error> {
        self.push(format!("intent {}", spec.name));
        if self.refuse_intent {
            // As a fenced intent write fails when another worker took the lease over.
            return Err(scaleset_control::Error::LeaseLost {
                scale_set: spec.name.to_string(),
            });
        }
        Ok(())
    }

    async fn created(&self, spec: &CreateSpec) {
        self.push(format!("created {}", spec.name));
    }
}

/// The client reports every call (the metrics count them the same way); the token chain's
/// calls are the client's own, not the commands', and are left out.
impl scaleset_github::CallObserver for Recorder {
    fn finished(&self, report: &scaleset_github::CallReport<'_>) {
        if report.endpoint.is_token_chain() {
            return;
        }
        self.push(format!(
            "{} {}",
            report.endpoint,
            if report.outcome.is_ok() { "ok" } else { "err" }
        ));
    }
}

/// The controller records its create intent in a hook: the hook runs before the POST, learns
/// of the answer after it, and the client reports every GitHub call the run makes (as the
/// metrics count them).
#[tokio::test]
async fn the_embedder_hears_of_the_intent_before_the_create_and_of_every_call() -> Result<()> {
    let (_github, client) = start(SimConfig::default()).await?;
    let hooks = std::sync::Arc::new(Recorder::default());
    let client = client.with_observer(hooks.clone());

    let run =
        scaleset_control::adoption::run_once(&client, input(OURS, None, Policy::Owned), &*hooks)
            .await?;
    expect_ready(&run)?;

    let seen = hooks.seen();
    let intent = seen.iter().position(|s| *s == format!("intent {NAME}"));
    let post = seen.iter().position(|s| s == "create_scale_set ok");
    let created = seen.iter().position(|s| *s == format!("created {NAME}"));
    assert!(
        matches!((intent, post, created), (Some(i), Some(p), Some(c)) if i < p && p < c),
        "intent, POST, created in that order: {seen:?}"
    );
    let calls = seen
        .iter()
        .filter(|s| s.ends_with(" ok") || s.ends_with(" err"))
        .count();
    assert_eq!(calls, run.commands.len(), "one call per command: {seen:?}");
    Ok(())
}

/// An intent that cannot be recorded stops the run before the POST: nothing is created that
/// the store does not know it may have created.
#[tokio::test]
async fn an_intent_that_cannot_be_recorded_creates_nothing() -> Result<()> {
    let (github, client) = start(SimConfig::default()).await?;
    let hooks = Recorder {
        refuse_intent: true,
        ..Recorder::default()
    };

    let result =
        scaleset_control::adoption::run_once(&client, input(OURS, None, Policy::Owned), &hooks)
            .await;
    let Err(error) = result else {
        bail!("expected the run to stop on the hook's error");
    };
    assert!(error.is_lease_lost(), "the hook's own error: {error:?}");
    assert_eq!(github.sim.request_count("create_scale_set"), 0);
    assert!(named(&github).is_empty());
    Ok(())
}
