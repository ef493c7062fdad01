//! The idle planner (issue 35 item 3, idle CPU): whether an empty poll needs the store's
//! instance list again or may stand on the last one. Pure (no I/O, no clock: "now" comes in as
//! a value); the listener takes the list, hands the facts in, and skips the pass when told.
//!
//! An empty poll runs the scale planner, the bootstrap-deadline check and the lifetime rules
//! over the scale set's rows. Its outcome changes only when (a) the rows change, or the facts
//! beside them (the assigned jobs, a recovery, creates in flight), or (b) a time-based rule
//! comes due with nothing changed. So a pass that wrote nothing may stand for the following
//! empty polls while:
//!
//! - no write of this task touched the rows since ([`Poll::writes`] is the task's count of its
//!   own writes: creates, moves, removals, re-recorded rows, by any path: messages, landed
//!   creates, a recovery landing, a reconciliation); a lease taken over ends the task;
//! - no write from outside touched them: the server's `DELETE /api/v1/instances/{name}` (the
//!   only such write to the rows; the supervisor reads which scale sets have such a request
//!   once per watch, [`Poll::removal_requested`]) and an instance's bootstrap report (a record
//!   beside the row, read on every pass while a runner boots: such rows are [`Due::Now`]);
//!   anything else (a hand edit of the database) is seen within [`Poll::max_age`];
//! - the assigned jobs are those the pass planned from, and no create is in flight and no
//!   recovery runs beside the listener (both end in writes, and a recovery changes the plan);
//! - no reconciliation is due, and no time-based rule of the rows is ([`next_due`]: a
//!   bootstrap deadline, `scale_down_delay` for idle surplus, `max_idle_lifetime`,
//!   `max_lifetime`; rows that wait for the provider's back-off, a create, or a removal are
//!   due at once).
//!
//! A moment at or before the list was judged by the pass that took it (the rules compare with
//! `<=`/`>=`, so a moment is reached at exactly its time); only later ones are waited for.

use std::time::Duration;

use scaleset_store::{Instance, InstanceStatus, Timestamp};

use super::reconcile::{Limits, elapsed};

/// When the rows of a list next need the rules run over them again, with no change to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// At the next empty poll: a row waits on something the list cannot show.
    Now,
    /// Once this moment is reached.
    At(Timestamp),
    /// Never, while nothing changes.
    Never,
}

impl Due {
    /// The earlier of the two.
    fn min(self, other: Self) -> Self {
        match (self, other) {
            (Self::Now, _) | (_, Self::Now) => Self::Now,
            (Self::At(a), Self::At(b)) => Self::At(a.min(b)),
            (Self::At(a), Self::Never) | (Self::Never, Self::At(a)) => Self::At(a),
            (Self::Never, Self::Never) => Self::Never,
        }
    }
}

/// The scale set's side of [`next_due`].
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// When the list was taken: moments at or before it were judged.
    pub listed_at: Timestamp,
    /// How long a surplus idle runner stays warm (zero: retired at once).
    pub scale_down_delay: Duration,
    /// The lifetime settings.
    pub limits: Limits,
    /// Instances report their bootstrap through the server (a record beside the row).
    pub reports: bool,
}

/// One row of the list, with what the task knows of it beside the row.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// The row as listed.
    pub instance: &'a Instance,
    /// Seen online past its bootstrap deadline in this pass: not asked about again.
    pub seen_online: bool,
}

/// When the rows of a list next need a look with nothing changed: the earliest of each row's
/// [`row_due`].
pub fn next_due<'a>(rows: impl IntoIterator<Item = Row<'a>>, rules: &Rules) -> Due {
    rows.into_iter()
        .fold(Due::Never, |due, row| due.min(row_due(&row, rules)))
}

/// When one row next needs a look: a busy runner never (its job's messages move it); an idle
/// one (`running`) at the first of its bootstrap deadline (unless seen online), the end of its
/// `scale_down_delay`, `max_idle_lifetime` and `max_lifetime` still ahead of the list; at once
/// while it boots and may report a failed bootstrap, or an operator asked for it to go; any
/// other status at once (a create in flight or left by a crash, a delete waiting for the
/// provider's back-off, a removal half done).
pub fn row_due(row: &Row<'_>, rules: &Rules) -> Due {
    let instance = row.instance;
    match instance.status {
        InstanceStatus::Busy => return Due::Never,
        InstanceStatus::Running => {}
        _ => return Due::Now,
    }
    if instance.removal_requested_at.is_some() || (rules.reports && !row.seen_online) {
        return Due::Now;
    }
    let ahead = |moment: Timestamp| {
        if moment > rules.listed_at {
            Due::At(moment)
        } else {
            Due::Never
        }
    };
    let after = |from: Timestamp, limit: Duration| {
        if limit.is_zero() {
            Due::Never
        } else {
            ahead(from.saturating_add(limit))
        }
    };
    let deadline = match instance.bootstrap_deadline {
        Some(_) if row.seen_online => Due::Never,
        // Past and not seen online: the pass did not judge it (a row of a superseded scale
        // set is never checked), so no list may stand on it.
        Some(deadline) if deadline <= rules.listed_at => Due::Now,
        Some(deadline) => Due::At(deadline),
        None => Due::Never,
    };
    deadline
        .min(after(instance.updated_at, rules.scale_down_delay))
        .min(after(instance.updated_at, rules.limits.max_idle_lifetime))
        .min(after(instance.created_at, rules.limits.max_lifetime))
}

/// What a pass that changed nothing left for the next empty polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    /// When the list was taken.
    pub at: Timestamp,
    /// [`next_due`] of its rows.
    pub due: Due,
    /// The assigned jobs the pass planned from.
    pub assigned: i64,
    /// The task's count of its own writes to the rows when the pass began.
    pub writes: u64,
}

/// The facts at an empty poll.
#[derive(Debug, Clone, Copy)]
pub struct Poll {
    /// Now.
    pub now: Timestamp,
    /// The assigned jobs of the last statistics.
    pub assigned: i64,
    /// The task's count of its own writes to the rows now.
    pub writes: u64,
    /// Creates in flight, or a recovery running beside the listener.
    pub beside: bool,
    /// The periodic reconciliation is due.
    pub reconcile_due: bool,
    /// The supervisor's last watch found an operator's removal request for the scale set.
    pub removal_requested: bool,
    /// How long a list may stand at most (writes nobody accounts for).
    pub max_age: Duration,
}

/// Whether the empty poll `poll` may stand on `listed` instead of listing the rows again (the
/// module documentation says when). No list to stand on, or a clock that went back: list.
pub fn reuse(listed: Option<&Listed>, poll: &Poll) -> bool {
    let Some(listed) = listed else {
        return false;
    };
    let unchanged = listed.writes == poll.writes
        && listed.assigned == poll.assigned
        && !poll.beside
        && !poll.removal_requested;
    let fresh = poll.now >= listed.at && elapsed(listed.at, poll.now) < poll.max_age;
    let not_due = match listed.due {
        Due::Now => false,
        Due::At(moment) => poll.now < moment,
        Due::Never => true,
    };
    unchanged && fresh && not_due && !poll.reconcile_due
}

#[cfg(test)]
mod tests;
