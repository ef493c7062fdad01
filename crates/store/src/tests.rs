//! Unit tests of the pure parts: stored text forms, timestamps, the transition table and
//! error classification.

use std::time::{Duration, UNIX_EPOCH};

use super::*;

#[test]
fn stored_enum_text_round_trips_and_unknown_text_is_none() {
    for &status in InstanceStatus::ALL {
        assert_eq!(InstanceStatus::from_stored(status.as_str()), Some(status));
    }
    for &state in ScaleSetState::ALL {
        assert_eq!(ScaleSetState::from_stored(state.as_str()), Some(state));
    }
    for &policy in AdoptionPolicy::ALL {
        assert_eq!(AdoptionPolicy::from_stored(policy.as_str()), Some(policy));
    }
    assert_eq!(InstanceStatus::from_stored("Running"), None);
    assert_eq!(ScaleSetState::from_stored(""), None);
    assert_eq!(ScaleSetState::ForeignSession.to_string(), "foreign_session");
}

/// Issue 29 item 5: a held session (`foreign_session`) is counted as needing attention by
/// every reader of this one rule; only `ready` and `pending` are not.
#[test]
fn every_state_but_ready_and_pending_needs_attention() {
    for &state in ScaleSetState::ALL {
        let expected = !matches!(state, ScaleSetState::Ready | ScaleSetState::Pending);
        assert_eq!(state.needs_attention(), expected, "{state}");
    }
    assert!(ScaleSetState::ForeignSession.needs_attention());
    assert!(!ScaleSetState::Ready.needs_attention());
    assert!(!ScaleSetState::Pending.needs_attention());
}

/// The stored text of each kind decodes and encodes back to the same text, so rows written
/// before stay readable (the integration suite's `entity_round_trip` runs values through a real
/// database, which would not notice the text form itself changing); malformed or unknown text
/// is no kind.
#[test]
fn entity_kinds_stored_text_decodes_and_encodes_back() {
    for (kind, path) in [
        ("repository", "acme/widgets"),
        ("organization", "acme"),
        ("enterprise", "acme-corp"),
    ] {
        let decoded =
            EntityKind::from_stored(kind, path).unwrap_or_else(|| panic!("{kind} {path} decodes"));
        assert_eq!((decoded.kind_str(), decoded.path().as_str()), (kind, path));
    }
    assert_eq!(EntityKind::from_stored("repository", "no-slash"), None);
    assert_eq!(EntityKind::from_stored("team", "x"), None);
}

#[test]
fn no_status_leaves_deleted_and_every_status_is_reachable() {
    for &to in InstanceStatus::ALL {
        assert_eq!(
            InstanceStatus::Deleted.can_move_to(to),
            to == InstanceStatus::Deleted
        );
        let reachable = InstanceStatus::ALL
            .iter()
            .any(|&from| from != to && from.can_move_to(to));
        assert!(
            reachable || to == InstanceStatus::Pending,
            "{to} unreachable"
        );
    }
    assert!(!InstanceStatus::Pending.can_move_to(InstanceStatus::Running));
    assert!(!InstanceStatus::Busy.can_move_to(InstanceStatus::Running));
}

#[test]
fn timestamps_convert_and_saturate() {
    let t = Timestamp::from_system_time(UNIX_EPOCH + Duration::from_millis(1_500));
    assert_eq!(t.unix_millis(), 1_500);
    assert_eq!(
        t.to_system_time(),
        UNIX_EPOCH + Duration::from_millis(1_500)
    );
    let before = Timestamp::from_system_time(UNIX_EPOCH - Duration::from_millis(20));
    assert_eq!(before.unix_millis(), -20);
    assert_eq!(
        before.to_system_time(),
        UNIX_EPOCH - Duration::from_millis(20)
    );
    assert_eq!(
        t.saturating_add(Duration::from_secs(1)).unix_millis(),
        2_500
    );
    assert_eq!(
        Timestamp::from_unix_millis(i64::MAX)
            .saturating_add(Duration::MAX)
            .unix_millis(),
        i64::MAX
    );
    let clock = ManualClock::new(t);
    clock.advance(Duration::from_millis(5));
    assert_eq!(clock.now().unix_millis(), 1_505);
}

#[test]
fn errors_classify_for_retry_policy() {
    let stale = Error::Stale {
        id: "x".into(),
        expected: 1,
    };
    assert_eq!(stale.class(), ErrorClass::Retryable);
    assert!(stale.is_stale());
    let lost = Error::LeaseLost {
        scale_set: "x".into(),
        holder: "w".into(),
        token: 3,
    };
    assert_eq!(lost.class(), ErrorClass::Refusal);
    assert!(lost.is_lease_lost());
    let mismatch = Error::ControllerMismatch {
        stored: uuid::Uuid::nil(),
        configured: uuid::Uuid::max(),
    };
    assert_eq!(mismatch.class(), ErrorClass::Fatal);
}

/// A database error as diesel reports one, with only a message.
#[derive(Debug)]
struct DatabaseMessage(&'static str);

impl diesel::result::DatabaseErrorInformation for DatabaseMessage {
    fn message(&self) -> &str {
        self.0
    }
    fn details(&self) -> Option<&str> {
        None
    }
    fn hint(&self) -> Option<&str> {
        None
    }
    fn table_name(&self) -> Option<&str> {
        None
    }
    fn column_name(&self) -> Option<&str> {
        None
    }
    fn constraint_name(&self) -> Option<&str> {
        None
    }
    fn statement_position(&self) -> Option<i32> {
        None
    }
}

fn backend_error(message: &'static str) -> Error {
    Error::Backend {
        operation: "test",
        source: diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::Unknown,
            Box::new(DatabaseMessage(message)),
        ),
    }
}

#[test]
fn lock_contention_is_retryable_and_other_backend_errors_are_fatal() {
    for message in [
        "deadlock detected",
        "could not obtain lock on row in relation \"leases\"",
        "database is locked",
        "database is busy",
    ] {
        assert_eq!(
            backend_error(message).class(),
            ErrorClass::Retryable,
            "{message}"
        );
    }
    assert_eq!(
        backend_error("relation \"leases\" does not exist").class(),
        ErrorClass::Fatal
    );
}

#[test]
fn a_full_disk_or_a_read_only_database_refuses_writes_and_nothing_else_does() {
    let driver = |kind, message: &'static str| {
        diesel::result::Error::DatabaseError(kind, Box::new(DatabaseMessage(message)))
    };
    use diesel::result::DatabaseErrorKind::{ReadOnlyTransaction, Unknown};
    for refused in [
        driver(Unknown, "database or disk is full"),
        driver(
            Unknown,
            "could not extend file \"base/16384/16385\": No space left on device",
        ),
        driver(
            Unknown,
            "could not write to file \"pg_wal/xlogtemp.1\": No space left on device",
        ),
        driver(
            ReadOnlyTransaction,
            "cannot execute INSERT in a read-only transaction",
        ),
    ] {
        assert!(crate::error::refuses_writes(&refused), "{refused}");
    }
    for other in [
        driver(Unknown, "database is locked"),
        driver(Unknown, "relation \"leases\" does not exist"),
        diesel::result::Error::NotFound,
    ] {
        assert!(!crate::error::refuses_writes(&other), "{other}");
    }
    let unwritable = Error::Unwritable {
        database: "sqlite:///var/lib/scaleset/scaleset.db".to_owned(),
        operation: "create credentials",
        source: driver(Unknown, "database or disk is full"),
    };
    assert!(unwritable.is_unwritable());
    assert_eq!(unwritable.class(), ErrorClass::Retryable);
}

#[test]
fn public_types_are_thread_safe_and_the_store_is_object_safe() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
    assert_send_sync::<DieselStore>();
    assert_send_sync::<std::sync::Arc<dyn Store>>();
}

/// Provenance is history (issue 29 item 3): for the same GitHub scale set it only gains
/// information; another GitHub scale set starts its own.
#[test]
fn provenance_of_one_github_scale_set_only_gains_information() {
    use crate::scale_set::{Creation, Provenance as P};
    let created = P::Created(Creation::stored(8));
    let cases = [
        // (stored, stored id, written, written id, recorded)
        (
            Some(created.clone()),
            Some(8),
            Some(P::Known),
            Some(8),
            Some(created.clone()),
        ),
        (
            Some(created.clone()),
            Some(8),
            Some(P::Adopted),
            Some(8),
            Some(created.clone()),
        ),
        (
            Some(created.clone()),
            Some(8),
            None,
            Some(8),
            Some(created.clone()),
        ),
        (
            Some(P::Adopted),
            Some(8),
            Some(P::Known),
            Some(8),
            Some(P::Adopted),
        ),
        (Some(P::Known), Some(8), None, Some(8), Some(P::Known)),
        (
            Some(P::Known),
            Some(8),
            Some(P::Adopted),
            Some(8),
            Some(P::Adopted),
        ),
        (
            Some(P::Adopted),
            Some(8),
            Some(created.clone()),
            Some(8),
            Some(created.clone()),
        ),
        (
            Some(created.clone()),
            Some(8),
            Some(P::Adopted),
            Some(9),
            Some(P::Adopted),
        ),
        (
            Some(created.clone()),
            Some(8),
            Some(P::Known),
            None,
            Some(P::Known),
        ),
        (Some(P::Known), None, None, None, None),
        (None, None, Some(P::Known), Some(8), Some(P::Known)),
    ];
    for (stored, stored_id, written, id, recorded) in cases {
        assert_eq!(
            P::recorded(stored.as_ref(), stored_id, written.clone(), id),
            recorded,
            "{stored:?} of {stored_id:?}, then {written:?} of {id:?}"
        );
    }
    assert_eq!(
        [created.as_str(), P::Known.as_str(), P::Adopted.as_str()],
        ["created", "known", "adopted"]
    );
    assert_eq!(P::Adopted.to_string(), "adopted");
    assert!(created.is_created() && !P::Known.is_created() && !P::Adopted.is_created());
    assert_eq!(Creation::stored(8).github_id(), 8);
    assert!(ScaleSetState::Refused.is_refusal() && ScaleSetState::Drifted.is_refusal());
    assert!(ScaleSetState::ForeignSession.is_refusal());
    for state in [
        ScaleSetState::Pending,
        ScaleSetState::Ready,
        ScaleSetState::Dormant,
        ScaleSetState::Error,
    ] {
        assert!(!state.is_refusal(), "{state}");
    }
}

/// Issue 30 item 4: one policy mapping. Every stored policy parses from its text (the
/// configuration's door), maps to the adoption machine's policy of the same meaning, and text
/// naming none is one problem that lists them all.
#[test]
fn every_policy_parses_from_its_text_and_maps_to_the_machines_one() {
    use scaleset_adopt::Policy;
    for &policy in AdoptionPolicy::ALL {
        assert_eq!(AdoptionPolicy::parse(policy.as_str()), Ok(policy));
        let machine = Policy::from(policy);
        let expected = match policy {
            AdoptionPolicy::Never => Policy::Never,
            AdoptionPolicy::Owned => Policy::Owned,
            AdoptionPolicy::Any => Policy::Any,
        };
        assert_eq!(machine, expected, "{policy}");
    }
    // Distinct policies stay distinct: no two map to one (a silent `owned` would).
    let mapped: std::collections::HashSet<String> = AdoptionPolicy::ALL
        .iter()
        .map(|&p| format!("{:?}", scaleset_adopt::Policy::from(p)))
        .collect();
    assert_eq!(mapped.len(), AdoptionPolicy::ALL.len());
    assert_eq!(
        AdoptionPolicy::parse("sometimes"),
        Err(SpecProblem {
            field: "adoption_policy".to_owned(),
            message: "\"sometimes\" is not a policy; use \"never\", \"owned\", \"any\"".to_owned(),
        })
    );
    assert!(AdoptionPolicy::parse("Owned").is_err(), "the text is exact");
}

/// A ready scale set named `name` with nothing wrong, for the attention rule's tests.
fn healthy(name: &str) -> ScaleSet {
    ScaleSet {
        id: ScaleSetId(uuid::Uuid::from_u128(1)),
        entity_id: EntityId(uuid::Uuid::from_u128(2)),
        spec: ScaleSetSpec {
            name: scaleset_domain::ScaleSetName::parse(name).expect("a test name"),
            runner_group: RunnerGroup {
                name: "Default".to_owned(),
                id: None,
            },
            labels: Vec::new(),
            disable_update: false,
            provider: scaleset_domain::ProviderName::parse("lxd").expect("a provider name"),
            image: String::new(),
            flavor: String::new(),
            os_type: Default::default(),
            os_arch: Default::default(),
            runner_setup: Default::default(),
            min_idle: 0,
            max_runners: 4,
            bootstrap_timeout: Duration::from_secs(600),
            runner_prefix: None,
            extra_specs: serde_json::Value::Null,
            enabled: true,
            adoption_policy: AdoptionPolicy::Owned,
            repair: false,
            scale_down_delay: Duration::ZERO,
            max_idle_lifetime: Duration::ZERO,
            max_lifetime: Duration::ZERO,
        },
        github_id: Some(7),
        provenance: None,
        evidence: Vec::new(),
        refusal: None,
        takeover: None,
        state: ScaleSetState::Ready,
        state_reason: String::new(),
        last_message_id: 0,
        session_id: None,
        desired_runners: 0,
        generation: 1,
        created_at: Timestamp::from_unix_millis(0),
        updated_at: Timestamp::from_unix_millis(0),
        last_message_at: None,
        jobs_waiting: 0,
        jobs_waiting_since: None,
        provider_error: None,
        retry_requested_at: None,
    }
}

const NOW: i64 = 1_796_205_600_000;

/// Issue 32 item 2: the one rule. Each case needs attention with a reason and a `scalesetctl`
/// remedy; ready and pending with nothing wrong do not.
#[test]
fn attention_covers_states_providers_and_long_waits() {
    let now = Timestamp::from_unix_millis(NOW);
    let set = healthy("linux");
    assert_eq!(set.attention(now), None);
    let pending = ScaleSet {
        state: ScaleSetState::Pending,
        ..healthy("linux")
    };
    assert_eq!(pending.attention(now), None);

    // Every state the state rule flags, with its reason; drifted's remedy is the repair.
    for &state in ScaleSetState::ALL {
        let set = ScaleSet {
            state,
            state_reason: "held by \"other\"".to_owned(),
            ..healthy("it.s")
        };
        let attention = set.attention(now);
        assert_eq!(attention.is_some(), state.needs_attention(), "{state}");
        if let Some(a) = attention {
            assert_eq!(a.reason, format!("{state}: held by \"other\""));
            let expected = if state == ScaleSetState::Drifted {
                "scalesetctl scale-set update 'it.s' --repair true"
            } else {
                "scalesetctl scale-set show 'it.s'"
            };
            assert_eq!(a.remedy, expected, "{state}");
        }
    }
    let unexplained = ScaleSet {
        state: ScaleSetState::Error,
        ..healthy("x")
    };
    assert_eq!(unexplained.attention(now).unwrap().reason, "state error");

    // A failing provider, in its own words.
    let failing = ScaleSet {
        provider_error: Some(ProviderError {
            message: "lxc: quota exceeded".to_owned(),
            at: Timestamp::from_unix_millis(NOW - 1),
        }),
        ..healthy("linux")
    };
    let a = failing
        .attention(now)
        .expect("a failing provider needs attention");
    assert_eq!(a.reason, "provider \"lxd\" failing: lxc: quota exceeded");
    assert!(
        a.remedy.starts_with("scalesetctl scale-set show 'linux'"),
        "{}",
        a.remedy
    );
    // The state comes first when both apply.
    let both = ScaleSet {
        state: ScaleSetState::ForeignSession,
        ..failing.clone()
    };
    assert_eq!(both.attention(now).unwrap().reason, "state foreign_session");
}

/// Issue 32 item 2: jobs waiting without a break for longer than the bootstrap timeout need
/// attention (a runner should have come by then); exactly the timeout does not, nor a stale
/// date with no job waiting. At the maximum, the remedy raises it.
#[test]
fn jobs_waiting_longer_than_the_bootstrap_timeout_need_attention() {
    let now = Timestamp::from_unix_millis(NOW);
    let waiting = |since_ms: i64, jobs: u32, desired: u32| ScaleSet {
        jobs_waiting: jobs,
        jobs_waiting_since: Some(Timestamp::from_unix_millis(NOW - since_ms)),
        desired_runners: desired,
        ..healthy("linux")
    };
    assert_eq!(
        waiting(600_000, 12, 1).attention(now),
        None,
        "exactly the timeout"
    );
    assert_eq!(
        waiting(3_600_000, 0, 1).attention(now),
        None,
        "none waiting"
    );
    let a = waiting(600_001, 12, 1)
        .attention(now)
        .expect("past the timeout");
    assert_eq!(
        a.reason,
        "12 jobs have waited for a runner for 10 min without a break, longer than the \
         bootstrap timeout (10 min)"
    );
    assert_eq!(a.remedy, "scalesetctl scale-set show 'linux'");
    let a = waiting(7_200_000, 3, 4)
        .attention(now)
        .expect("at the maximum");
    assert_eq!(
        a.reason,
        "3 jobs have waited for a runner for 2 h without a break, longer than the bootstrap \
         timeout (10 min); it runs at its maximum of 4 runners"
    );
    assert_eq!(
        a.remedy,
        "scalesetctl scale-set update 'linux' --max-runners 8"
    );
    let a = waiting(90_000, 1, 0);
    let short = ScaleSet {
        spec: ScaleSetSpec {
            bootstrap_timeout: Duration::from_secs(60),
            max_runners: 0,
            ..a.spec.clone()
        },
        ..a
    };
    let said = short.attention(now).expect("90 s past a 60 s timeout");
    assert!(
        said.reason.contains("for 90 s") && said.reason.contains("(60 s)"),
        "{}",
        said.reason
    );
    assert_eq!(
        said.remedy,
        "scalesetctl scale-set update 'linux' --max-runners 1"
    );
}
