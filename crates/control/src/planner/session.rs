//! The session planner: who holds a scale set's message session when GitHub refuses ours with a
//! conflict, what the operator is told, and when the scale set is looked at again. Pure (no
//! I/O, no clock: the elapsed time comes in as an argument); the listener makes the call and
//! records the answer, the task waits.
//!
//! What is known on a conflict: GitHub's 409 names the holder only on some backends (older text
//! "… for owner X"); github.com today names none. A holder named as another owner is another
//! listener: shown, never deleted, rechecked slowly. A holder named as our own owner, or not
//! named at all, may be this controller's own session from before a crash whose id the
//! database no longer has (a lost or restored database): nothing can delete it (a delete needs
//! its id), but GitHub drops a crashed listener's session within minutes, so it is rechecked
//! on a short schedule for a bounded window and then slowly. Every held case needs attention
//! (state `foreign_session`): nothing is served meanwhile.

use std::time::Duration;

/// About how long GitHub takes to drop the session of a listener that stopped polling. The
/// protocol reference marks the expiry unverified; the clients that wait a conflict out retry
/// for about 4 minutes (runner-style clients: about 240 s) to 5–7.5 (ARC in 2023: 10 tries
/// every 30–45 s), so 5 minutes is what an operator is told, and the short rechecks run for
/// twice that by default (`Settings::held_session_window`).
pub(crate) const EXPECTED_EXPIRY_MINUTES: u64 = 5;

/// The facts of one refused session create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Conflict<'a> {
    /// The owner GitHub's 409 named, if it named one.
    pub(crate) holder: Option<&'a str>,
    /// Our own session owner (`scaleset-<controller id>`).
    pub(crate) our_owner: &'a str,
    /// Our probe owner (`scaleset-<controller id>-probe`): under policy `any` the adoption
    /// probe's session is handed to the listener and keeps this owner, so after a crash and a
    /// lost database a conflict may name it; it is ours as much as the session owner is.
    pub(crate) probe_owner: &'a str,
    /// Whether a session id of ours was recorded, and deleted, before this create.
    pub(crate) recorded_deleted: bool,
    /// Whether a create of ours failed in transit earlier in this attempt (it may have
    /// succeeded on GitHub, leaving a session we never learnt the id of).
    pub(crate) own_create_failed: bool,
}

/// Who holds the session, as far as is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeldBy {
    /// Another owner, named by GitHub.
    Another(String),
    /// Our own owner, named by GitHub: an earlier session of ours whose id we do not have.
    OurOwn {
        /// Our owner name, as GitHub gave it.
        owner: String,
        /// Whether a recorded session of ours was deleted first (so this one was never
        /// recorded).
        recorded_deleted: bool,
    },
    /// Nobody named.
    Unnamed {
        /// Whether a recorded session of ours was deleted first.
        recorded_deleted: bool,
        /// Whether a create of ours failed in transit before (then it is most likely ours).
        own_create_failed: bool,
    },
}

/// Who holds the session, from a conflict's facts.
pub(crate) fn held_by(conflict: &Conflict<'_>) -> HeldBy {
    match conflict.holder {
        Some(owner) if owner == conflict.our_owner || owner == conflict.probe_owner => {
            HeldBy::OurOwn {
                owner: owner.to_owned(),
                recorded_deleted: conflict.recorded_deleted,
            }
        }
        Some(owner) => HeldBy::Another(owner.to_owned()),
        None => HeldBy::Unnamed {
            recorded_deleted: conflict.recorded_deleted,
            own_create_failed: conflict.own_create_failed,
        },
    }
}

/// Whether `owner` is GARM's session owner, `garm-<controller id>` (observed in
/// `shared/reference/garm`: GARM holds every scale set's session under it).
pub(crate) fn is_garm_owner(owner: &str) -> bool {
    owner
        .strip_prefix("garm-")
        .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok())
}

impl HeldBy {
    /// Whether the holder may be this controller's own session (then it expires by itself and
    /// is rechecked on the short schedule).
    pub(crate) fn may_be_ours(&self) -> bool {
        !matches!(self, Self::Another(_))
    }

    /// What the operator is told: who holds it, what is known, what to do. `recheck` is the
    /// short recheck period, named in the text.
    pub(crate) fn reason(&self, recheck: Duration) -> String {
        let expiry = format!(
            "GitHub drops the session of a listener that stopped within about \
             {EXPECTED_EXPIRY_MINUTES} minutes, and serving resumes by itself (rechecked every \
             {}s)",
            recheck.as_secs().max(1)
        );
        match self {
            Self::Another(owner) if is_garm_owner(owner) => format!(
                "GARM still runs: stop it first. GARM's listener ({owner:?}) holds the message \
                 session of this scale set, imported from GARM; stop GARM (after a crash, wait \
                 for GitHub to drop its session, about {EXPECTED_EXPIRY_MINUTES} minutes) and \
                 serving resumes by itself. Nothing was deleted"
            ),
            Self::Another(owner) => format!(
                "another listener ({owner:?}) holds the message session; stop it, or choose \
                 another scale-set name. Nothing was deleted"
            ),
            Self::OurOwn {
                owner,
                recorded_deleted,
            } => {
                let why = if *recorded_deleted {
                    "although our recorded session was deleted first (it is one the database \
                     never recorded: a crash right after its create, or a restored database)"
                } else {
                    "and no session of ours is recorded to delete (a crash, then a lost or \
                     restored database)"
                };
                format!(
                    "our own earlier session (owner {owner:?}) still holds the message session, \
                     {why}; {expiry}. Nothing was deleted"
                )
            }
            Self::Unnamed {
                recorded_deleted,
                own_create_failed,
            } => {
                let known = match (own_create_failed, recorded_deleted) {
                    (true, _) => {
                        "most likely our own: a session create of ours failed in transit and \
                         may have succeeded on GitHub"
                    }
                    (false, true) => {
                        "our recorded session was deleted first, so it is another listener or a \
                         session of ours the database never recorded"
                    }
                    (false, false) => {
                        "no session of ours is recorded: if this controller crashed and lost \
                         its database, it is our own"
                    }
                };
                format!(
                    "the message session is held by a listener GitHub does not name ({known}); \
                     {expiry}; if this controller crashed and lost its database, wait for \
                     that, otherwise stop the other listener. Nothing was deleted"
                )
            }
        }
    }
}

/// When to look again at a scale set whose session is held, `held_for` after the first
/// conflict: every `short` during `window` when the holder may be our own, then (or for
/// another owner's) every `slow`.
pub(crate) fn recheck_after(
    held: &HeldBy,
    held_for: Duration,
    short: Duration,
    window: Duration,
    slow: Duration,
) -> Duration {
    if held.may_be_ours() && held_for < window {
        short
    } else {
        slow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "scaleset-0000";
    const PROBE: &str = "scaleset-0000-probe";

    fn conflict(holder: Option<&str>) -> Conflict<'_> {
        Conflict {
            holder,
            our_owner: OURS,
            probe_owner: PROBE,
            recorded_deleted: false,
            own_create_failed: false,
        }
    }

    #[test]
    fn a_session_held_by_garm_says_stop_it_first_and_deletes_nothing() {
        let garm = "garm-89a4130b-9de1-47c5-8ca8-e2640daa0e13";
        assert!(is_garm_owner(garm));
        assert!(!is_garm_owner("garm-not-a-uuid"));
        assert!(!is_garm_owner("89a4130b-9de1-47c5-8ca8-e2640daa0e13"));
        assert!(!is_garm_owner("other-controller"));
        let held = held_by(&conflict(Some(garm)));
        assert_eq!(held, HeldBy::Another(garm.to_owned()));
        assert!(!held.may_be_ours());
        let reason = held.reason(Duration::from_secs(30));
        assert!(
            reason.starts_with("GARM still runs: stop it first."),
            "{reason}"
        );
        assert!(reason.contains(garm), "{reason}");
        assert!(reason.ends_with("Nothing was deleted"), "{reason}");
        let other = HeldBy::Another("garm-x".to_owned()).reason(Duration::from_secs(30));
        assert!(other.starts_with("another listener"), "{other}");
    }

    #[test]
    fn the_holder_is_ours_another_or_unnamed() {
        assert_eq!(
            held_by(&conflict(Some("rival"))),
            HeldBy::Another("rival".to_owned())
        );
        assert_eq!(
            held_by(&Conflict {
                recorded_deleted: true,
                ..conflict(Some(OURS))
            }),
            HeldBy::OurOwn {
                owner: OURS.to_owned(),
                recorded_deleted: true
            }
        );
        assert_eq!(
            held_by(&Conflict {
                own_create_failed: true,
                ..conflict(None)
            }),
            HeldBy::Unnamed {
                recorded_deleted: false,
                own_create_failed: true
            }
        );
        assert_eq!(
            held_by(&Conflict {
                recorded_deleted: true,
                ..conflict(None)
            }),
            HeldBy::Unnamed {
                recorded_deleted: true,
                own_create_failed: false
            }
        );
    }

    /// Under policy `any` the listener serves the probe's session, which keeps the probe
    /// owner: a conflict naming it after a crash is our own session, not another listener's.
    #[test]
    fn a_holder_named_as_our_probe_owner_is_ours() {
        assert_eq!(
            held_by(&conflict(Some(PROBE))),
            HeldBy::OurOwn {
                owner: PROBE.to_owned(),
                recorded_deleted: false
            }
        );
        assert!(held_by(&conflict(Some(PROBE))).may_be_ours());
    }

    #[test]
    fn only_another_owners_session_is_surely_not_ours() {
        assert!(!HeldBy::Another("rival".to_owned()).may_be_ours());
        assert!(held_by(&conflict(Some(OURS))).may_be_ours());
        assert!(held_by(&conflict(None)).may_be_ours());
    }

    /// Issue 29 item 5: after a crash and a lost database the holder is most likely us, and
    /// nothing was cleared; the text must not say otherwise.
    #[test]
    fn issue_29_5_an_unnamed_holder_says_what_is_known() {
        let recheck = Duration::from_secs(30);
        let lost = held_by(&conflict(None)).reason(recheck);
        for part in [
            "GitHub does not name",
            "no session of ours is recorded",
            "lost its database",
            "within about 5 minutes",
            "rechecked every 30s",
            "Nothing was deleted",
        ] {
            assert!(lost.contains(part), "{part:?} in {lost}");
        }
        assert!(!lost.contains("not ours"), "{lost}");
        let cleared = held_by(&Conflict {
            recorded_deleted: true,
            ..conflict(None)
        })
        .reason(recheck);
        assert!(cleared.contains("was deleted first"), "{cleared}");
        assert!(!cleared.contains("no session of ours"), "{cleared}");
        let leaked = held_by(&Conflict {
            own_create_failed: true,
            recorded_deleted: true,
            ..conflict(None)
        })
        .reason(recheck);
        assert!(leaked.contains("most likely our own"), "{leaked}");
        assert!(!leaked.contains("was deleted first"), "{leaked}");
    }

    #[test]
    fn our_own_named_session_says_it_is_ours_and_expires() {
        let recheck = Duration::from_millis(200);
        let lost = held_by(&conflict(Some(OURS))).reason(recheck);
        for part in [
            "our own earlier session",
            OURS,
            "no session of ours is recorded",
            "within about 5 minutes",
            "rechecked every 1s",
            "Nothing was deleted",
        ] {
            assert!(lost.contains(part), "{part:?} in {lost}");
        }
        let cleared = held_by(&Conflict {
            recorded_deleted: true,
            ..conflict(Some(OURS))
        })
        .reason(recheck);
        assert!(cleared.contains("never recorded"), "{cleared}");
        assert!(!cleared.contains("no session of ours"), "{cleared}");
    }

    #[test]
    fn another_owners_session_names_it_and_nothing_is_deleted() {
        let text = held_by(&conflict(Some("rival"))).reason(Duration::from_secs(30));
        assert!(text.contains("\"rival\""), "{text}");
        assert!(text.contains("Nothing was deleted"), "{text}");
        assert!(!text.contains("minutes"), "{text}");
    }

    #[test]
    fn a_session_that_may_be_ours_is_rechecked_often_within_the_window_only() {
        let (short, window, slow) = (
            Duration::from_secs(30),
            Duration::from_secs(600),
            Duration::from_secs(300),
        );
        let ours = held_by(&conflict(None));
        let rival = held_by(&conflict(Some("rival")));
        assert_eq!(
            recheck_after(&ours, Duration::ZERO, short, window, slow),
            short
        );
        assert_eq!(
            recheck_after(&ours, Duration::from_secs(599), short, window, slow),
            short
        );
        assert_eq!(recheck_after(&ours, window, short, window, slow), slow);
        assert_eq!(
            recheck_after(&rival, Duration::ZERO, short, window, slow),
            slow
        );
    }
}
