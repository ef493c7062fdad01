//! The start planner (issue 35 item 1, "listen before listing"): a scale set polls for jobs as
//! soon as its session is open, and the recovery of its instances (the provider's list, the
//! provider's and GitHub's answers on each row, GitHub's runners) runs beside the listener.
//! The listener serves jobs meanwhile: it creates runners, removes finished ones and marks busy
//! ones. When the recovery's facts land they are older than what the listener did since, so
//! they are merged by these rules, pure (no I/O, no clock), before the reconcile planner sees
//! them:
//!
//! - A step decided for a row ([`still_applies`]) is carried out only if the row is still there
//!   with the status it had when the facts were gathered, and the listener did not touch its
//!   name since (created, removed, or saw its runner finish a job). Otherwise the listener's
//!   fresher knowledge wins, and the next reconciliation looks again.
//! - The late reconciliation counts as recorded ([`recorded_when_landed`]) every row the store
//!   holds when the facts land and every name the listener touched: an instance the listener
//!   created and removed again after the provider listed it is neither recorded again (a ghost
//!   row) nor deleted twice, and a runner whose job completed meanwhile is not recorded as busy.
//! - Only rows unchanged since the facts were gathered are judged for their life
//!   ([`unchanged`]): a row the listener created or moved is not judged by lists older than it.
//! - Until the recovery has landed, no runner is made for the warm pool, and the idle runners
//!   the store knows stay ([`warm_pool`]: a restart keeps its warm runners); the
//!   runners GitHub counts as registered beyond the rows the store knows count as busy
//!   ([`unrecorded_runners`]): after a lost database those runners are the warm pool, or run
//!   the very jobs GitHub counts as assigned. Runners for jobs beyond them are created at once.
//!
//! Together: a job served before the recovery lands never makes the recovery delete a live
//! instance or record one twice, and the listener never makes a second runner for a job an
//! unrecorded runner runs, nor a second warm pool. What it may do is make fewer runners than
//! wanted until the facts land (a row whose runner is gone still counts), never more.

use std::collections::HashSet;

use scaleset_store::{Instance, InstanceStatus};

/// Whether a recovery step decided for a row from facts gathered when the row had status
/// `then` may still be carried out: the row is there now with that same status (`now`), and
/// the listener did not touch its name since (`touched`).
pub fn still_applies(then: InstanceStatus, now: Option<InstanceStatus>, touched: bool) -> bool {
    !touched && now == Some(then)
}

/// The names the late reconciliation counts as recorded: the rows now (`rows`) and the names
/// the listener touched since the lists were asked for.
pub fn recorded_when_landed(rows: &[Instance], touched: &HashSet<String>) -> HashSet<String> {
    rows.iter()
        .map(|i| i.name.clone())
        .chain(touched.iter().cloned())
        .collect()
}

/// The rows of `now` to judge for their life with lists gathered when the rows were `then`:
/// those [`still_applies`] keeps.
pub fn unchanged(then: &[Instance], now: &[Instance], touched: &HashSet<String>) -> Vec<Instance> {
    now.iter()
        .filter(|row| {
            then.iter()
                .find(|old| old.name == row.name)
                .is_some_and(|old| {
                    still_applies(old.status, Some(row.status), touched.contains(&row.name))
                })
        })
        .cloned()
        .collect()
}

/// The runners GitHub had `registered` for the scale set when its recovery began that the
/// store did not know (`known` live rows at the first plan): until the facts land they count
/// as busy, because after a lost database they may be running the very jobs GitHub counts as
/// assigned, and a runner made for such a job would be a second one. Rows whose runner is gone
/// meanwhile count too, so this errs towards making fewer runners until the facts land.
pub fn unrecorded_runners(registered: i64, known: u32) -> u32 {
    u32::try_from(registered.max(0))
        .unwrap_or(u32::MAX)
        .saturating_sub(known)
}

/// The idle runners kept warm: the scale set's `min_idle` once its recovery has landed
/// (`recovered`); before, the idle runners the store knows (`idle`), up to `min_idle`. So a
/// restart (clean, a kill -9, a lease taken over) keeps every idle runner it had and makes no
/// new one for the warm pool until the facts land: what GitHub counts beyond the rows may be
/// the warm pool already ([`unrecorded_runners`]).
pub fn warm_pool(min_idle: u32, recovered: bool, idle: u32) -> u32 {
    if recovered {
        min_idle
    } else {
        idle.min(min_idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaleset_store::{ScaleSetId, Timestamp};

    fn row(name: &str, status: InstanceStatus) -> Instance {
        Instance {
            name: name.to_owned(),
            scale_set_id: ScaleSetId::generate(),
            provider_id: None,
            github_runner_id: None,
            pool_key: "c_5".to_owned(),
            status,
            bootstrap_deadline: None,
            created_at: Timestamp::EPOCH,
            updated_at: Timestamp::EPOCH,
            removal_requested_at: None,
        }
    }

    #[test]
    fn a_step_applies_only_to_an_untouched_row_with_the_status_it_was_decided_on() {
        for then in InstanceStatus::ALL.iter().copied() {
            assert!(still_applies(then, Some(then), false), "{then:?} unchanged");
            assert!(!still_applies(then, Some(then), true), "{then:?} touched");
            assert!(!still_applies(then, None, false), "{then:?} gone");
            for now in InstanceStatus::ALL
                .iter()
                .copied()
                .filter(|now| *now != then)
            {
                assert!(
                    !still_applies(then, Some(now), false),
                    "{then:?} -> {now:?}"
                );
            }
        }
    }

    #[test]
    fn the_late_reconciliation_counts_rows_now_and_touched_names_as_recorded() {
        let rows = [row("a-1", InstanceStatus::Running)];
        let touched = HashSet::from(["a-2".to_owned()]);
        let recorded = recorded_when_landed(&rows, &touched);
        assert_eq!(
            recorded,
            HashSet::from(["a-1".to_owned(), "a-2".to_owned()])
        );
        assert!(recorded_when_landed(&[], &HashSet::new()).is_empty());
    }

    #[test]
    fn only_unchanged_untouched_rows_are_judged_for_their_life() {
        let then = [
            row("kept", InstanceStatus::Running),
            row("moved", InstanceStatus::Running),
            row("touched", InstanceStatus::Running),
            row("gone", InstanceStatus::Running),
        ];
        let now = [
            row("kept", InstanceStatus::Running),
            row("moved", InstanceStatus::Busy),
            row("touched", InstanceStatus::Running),
            row("new", InstanceStatus::Running),
        ];
        let touched = HashSet::from(["touched".to_owned()]);
        let judged: Vec<String> = unchanged(&then, &now, &touched)
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(judged, ["kept"]);
        // The periodic reconciliation: the same rows, nothing touched, all judged.
        assert_eq!(unchanged(&now, &now, &HashSet::new()).len(), now.len());
    }

    #[test]
    fn runners_github_has_beyond_the_known_rows_are_unrecorded() {
        assert_eq!(unrecorded_runners(3, 1), 2);
        assert_eq!(unrecorded_runners(3, 3), 0);
        assert_eq!(unrecorded_runners(1, 3), 0, "rows whose runners are gone");
        assert_eq!(unrecorded_runners(-1, 0), 0);
        assert_eq!(unrecorded_runners(i64::MAX, 1), u32::MAX - 1);
    }

    #[test]
    fn before_the_recovery_lands_the_known_idle_runners_stay_warm_and_none_is_made() {
        assert_eq!(warm_pool(3, false, 0), 0, "none made before the facts land");
        assert_eq!(warm_pool(3, false, 2), 2, "the known idle runners stay");
        assert_eq!(warm_pool(3, false, 5), 3, "never more than min_idle");
        assert_eq!(warm_pool(3, true, 0), 3);
        assert_eq!(warm_pool(3, true, 5), 3);
        assert_eq!(warm_pool(0, true, 2), 0);
        assert_eq!(warm_pool(0, false, 2), 0);
    }

    /// Regression: at start a worker planned with no warm pool until its recovery landed,
    /// retired its idle runner, and made a new one once the facts landed.
    #[test]
    fn a_restart_keeps_its_idle_runner_before_the_recovery_lands() {
        use crate::{PlanInput, RunnerPhase, RunnerView, plan};
        let runners = [RunnerView {
            name: "r-1".to_owned(),
            phase: RunnerPhase::Idle,
            idle_for: std::time::Duration::from_secs(3600),
        }];
        let step = plan(&PlanInput {
            min_idle: warm_pool(1, false, 1),
            max_runners: 10,
            assigned_jobs: 0,
            scale_down_delay: std::time::Duration::ZERO,
            runners: &runners,
        });
        assert!(step.retire.is_empty(), "{step:?}");
        assert_eq!(step.create, 0);
    }
}
