//! The claim planner: whether a provider's answer to a create may be recorded as our instance,
//! and by which id an instance is ever deleted. Pure: no I/O, no clock.
//!
//! A provider's answer is a claim, not a proof (DESIGN §5). An external provider is a program
//! we did not write: it may answer a create with another controller's instance (a copy-paste
//! bug, a cache keyed wrongly, or hostility), and whatever id we record is the id we later hand
//! to `DeleteInstance`. So an answer ([`Answer`]) is judged against what we asked ([`Asked`])
//! and what is already recorded ([`Recorded`]) before it is recorded ([`judge`]):
//!
//! - the name it reports must be the name we asked for;
//! - the pool id it reports, when it reports one, must be our pool key;
//! - its provider id must not be claimed by another row: recorded for it, or its name (a row
//!   without a provider id is deleted by its name). An id answered for two runners of one
//!   batch is claimed by each for the other, so both are refused;
//! - its provider id must not have come with an answer refused before (the scaler remembers
//!   them while it runs): a provider that first answered with a foreign pool and then without
//!   one does not get the id recorded the second time.
//!
//! A refused answer is not recorded; the scaler marks the provider failing with the refusal and
//! removes the runner as it removes a failed create's, deleting by the **name we asked for**
//! (never by the refused id): an instance the provider did make under our name and pool key is
//! not left running, and nothing we did not name is touched. When the refused id is recorded
//! for another row, that row's id is no longer verified either ([`Refused::disowns`]): the
//! scaler records the row's own name in its place, so it too is deleted by its name.
//! [`delete_id`] is the one rule for the id a delete is sent with.

/// What we asked the provider to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked<'a> {
    /// The instance (runner) name.
    pub name: &'a str,
    /// Our pool key, passed as `GARM_POOL_ID`.
    pub pool_key: &'a str,
}

/// What the provider answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The name it reports.
    pub name: &'a str,
    /// The provider id it reports.
    pub provider_id: &'a str,
    /// The pool id it reports, if it reports one.
    pub pool_id: Option<&'a str>,
}

/// A row recorded already (of any scale set), or another answer of the same batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its provider id, if recorded.
    pub provider_id: Option<&'a str>,
}

/// An answer not recorded as ours: why, and the rows whose recorded id it leaves unverified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Why.
    pub reason: Refusal,
    /// The other rows recorded with the refused provider id: it is no longer proof of
    /// anything, so each is deleted by its own name from now on.
    pub disowns: Vec<String>,
}

/// Why an answer is not recorded as ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It names another instance than the one asked for.
    OtherName {
        /// The name asked for.
        asked: String,
        /// The name answered.
        answered: String,
    },
    /// It reports a pool that is not ours.
    OtherPool {
        /// Our pool key.
        ours: String,
        /// The pool id answered.
        answered: String,
    },
    /// Its provider id is claimed by another row (recorded for it, or its name).
    IdClaimed {
        /// The provider id answered.
        provider_id: String,
        /// The row claiming it.
        by: String,
    },
    /// Its provider id came with an answer refused before.
    RefusedBefore {
        /// The provider id answered.
        provider_id: String,
    },
}

impl Refusal {
    /// A stable code for events and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Self::OtherName { .. } => "answered_other_name",
            Self::OtherPool { .. } => "answered_other_pool",
            Self::IdClaimed { .. } => "answered_claimed_id",
            Self::RefusedBefore { .. } => "answered_refused_id",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OtherName { asked, answered } => write!(
                f,
                "asked to create {asked:?}, the provider answered with an instance named \
                 {answered:?}"
            ),
            Self::OtherPool { ours, answered } => write!(
                f,
                "the provider answered with an instance of pool {answered:?}, not ours \
                 ({ours:?})"
            ),
            Self::IdClaimed { provider_id, by } => write!(
                f,
                "the provider answered with provider id {provider_id:?}, which instance {by:?} \
                 already claims"
            ),
            Self::RefusedBefore { provider_id } => write!(
                f,
                "the provider answered with provider id {provider_id:?}, which came with an \
                 answer refused before"
            ),
        }
    }
}

/// Whether `answer`, to our request `asked`, may be recorded as our instance, given the rows
/// (and other answers of the same batch) in `recorded` and the provider ids of answers
/// `refused` before. `recorded` may hold the asked row itself; it claims nothing against its
/// own answer.
pub fn judge(
    asked: &Asked<'_>,
    answer: &Answer<'_>,
    recorded: &[Recorded<'_>],
    refused: &std::collections::HashSet<String>,
) -> Result<(), Refused> {
    let others = || recorded.iter().filter(|row| row.name != asked.name);
    let reason = if answer.name != asked.name {
        Refusal::OtherName {
            asked: asked.name.to_owned(),
            answered: answer.name.to_owned(),
        }
    } else if let Some(pool) = answer.pool_id.filter(|pool| *pool != asked.pool_key) {
        Refusal::OtherPool {
            ours: asked.pool_key.to_owned(),
            answered: pool.to_owned(),
        }
    } else if let Some(row) = others()
        .find(|row| row.provider_id == Some(answer.provider_id) || row.name == answer.provider_id)
    {
        Refusal::IdClaimed {
            provider_id: answer.provider_id.to_owned(),
            by: row.name.to_owned(),
        }
    } else if refused.contains(answer.provider_id) {
        Refusal::RefusedBefore {
            provider_id: answer.provider_id.to_owned(),
        }
    } else {
        return Ok(());
    };
    Err(Refused {
        reason,
        disowns: others()
            .filter(|row| row.provider_id == Some(answer.provider_id))
            .map(|row| row.name.to_owned())
            .collect(),
    })
}

/// The id a delete of `row` is sent with: its recorded provider id (recorded only once
/// [`judge`] verified it) while no other row in `claimed` claims it (recorded with it, or named
/// it) and no answer with it was `refused`; else its name, as GARM addresses an instance whose
/// provider never answered. A row recorded before these rules, or beside a row of another
/// scale set whose answer carried the same id, is so never deleted by a disputed id.
pub fn delete_id<'a>(
    row: &Recorded<'a>,
    claimed: &[Recorded<'_>],
    refused: &std::collections::HashSet<String>,
) -> &'a str {
    match row.provider_id {
        Some(id)
            if !refused.contains(id)
                && claimed.iter().all(|other| {
                    other.name == row.name || (other.provider_id != Some(id) && other.name != id)
                }) =>
        {
            id
        }
        _ => row.name,
    }
}

#[cfg(test)]
mod tests;
