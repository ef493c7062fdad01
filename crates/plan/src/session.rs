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
pub const EXPECTED_EXPIRY_MINUTES: u64 = 5;

/// The facts of one refused session create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict<'a> {
    /// The owner GitHub's 409 named, if it named one.
    pub holder: Option<&'a str>,
    /// Our own session owner (`scaleset-<controller id>`).
    pub our_owner: &'a str,
    /// Our probe owner (`scaleset-<controller id>-probe`): under policy `any` the adoption
    /// probe's session is handed to the listener and keeps this owner, so after a crash and a
    /// lost database a conflict may name it; it is ours as much as the session owner is.
    pub probe_owner: &'a str,
    /// Whether a session id of ours was recorded, and deleted, before this create.
    pub recorded_deleted: bool,
    /// Whether a create of ours failed in transit earlier in this attempt (it may have
    /// succeeded on GitHub, leaving a session we never learnt the id of).
    pub own_create_failed: bool,
    /// The controller id of the GARM the scale set was imported from, while no session of
    /// ours has held it yet (its takeover is pending): that GARM is the first suspect.
    pub imported_from: Option<&'a str>,
}

/// Who holds the session, as far as is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldBy {
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
    /// The GARM an imported scale set was taken over from, while no session of ours has held
    /// it: named by GitHub as GARM's owner, or not named (github.com names nobody; no session
    /// of ours can hold it unless a create of ours failed in transit, and that case stays
    /// [`HeldBy::Unnamed`]).
    Importer {
        /// GARM's controller id (from the takeover note).
        controller: String,
        /// Whether GitHub named the holder (as `garm-<controller id>`).
        named: bool,
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
pub fn held_by(conflict: &Conflict<'_>) -> HeldBy {
    if let Some(controller) = conflict.imported_from {
        let garm = format!("garm-{controller}");
        let named = match conflict.holder {
            Some(owner) if owner == garm => Some(true),
            None if !conflict.own_create_failed => Some(false),
            _ => None,
        };
        if let Some(named) = named {
            return HeldBy::Importer {
                controller: controller.to_owned(),
                named,
            };
        }
    }
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
pub fn is_garm_owner(owner: &str) -> bool {
    owner
        .strip_prefix("garm-")
        .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok())
}

impl HeldBy {
    /// Whether the holder may be this controller's own session (then it expires by itself and
    /// is rechecked on the short schedule).
    pub fn may_be_ours(&self) -> bool {
        matches!(self, Self::OurOwn { .. } | Self::Unnamed { .. })
    }

    /// What the operator is told: who holds it, what is known, what to do. `recheck` is the
    /// short recheck period, named in the text.
    pub fn reason(&self, recheck: Duration, takeover_recheck: Duration) -> String {
        let expiry = format!(
            "GitHub drops the session of a listener that stopped within about \
             {EXPECTED_EXPIRY_MINUTES} minutes, and serving resumes by itself (rechecked every \
             {}s)",
            recheck.as_secs().max(1)
        );
        match self {
            Self::Importer { controller, named } => {
                let who = if *named {
                    format!("GARM's listener (\"garm-{controller}\") holds the message session")
                } else {
                    "GitHub does not name the listener holding the message session (github.com \
                     names none), and no session of ours has held it yet: most likely GARM's"
                        .to_owned()
                };
                format!(
                    "GARM still runs: stop it first. {who}; this scale set was imported from \
                     GARM {controller}. Stop GARM (its clean stop deletes its sessions; after a \
                     crash GitHub drops them within about {EXPECTED_EXPIRY_MINUTES} minutes) and \
                     serving resumes within seconds (rechecked every {}s until our first session \
                     opens). Nothing was written to it. Nothing was deleted",
                    takeover_recheck.as_secs().max(1)
                )
            }
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

/// How often a held session is looked at again ([`recheck_after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rechecks {
    /// While the holder may be our own, during `window`.
    pub short: Duration,
    /// How long the short rechecks go on (from the first conflict).
    pub window: Duration,
    /// Another owner's, or after the window.
    pub slow: Duration,
    /// An imported set's importer ([`HeldBy::Importer`]): for as long as it holds the
    /// session, so that serving starts within seconds of the operator's stopping GARM,
    /// however long after the import that is.
    pub takeover: Duration,
}

/// When to look again at a scale set whose session is held, `held_for` after the first
/// conflict: an importer's every `takeover`, whatever the time; every `short` during `window`
/// when the holder may be our own, then (or for another owner's) every `slow`.
pub fn recheck_after(held: &HeldBy, held_for: Duration, every: Rechecks) -> Duration {
    let Rechecks {
        short,
        window,
        slow,
        takeover,
    } = every;
    if matches!(held, HeldBy::Importer { .. }) {
        takeover
    } else if held.may_be_ours() && held_for < window {
        short
    } else {
        slow
    }
}

/// What GitHub answered to deleting a session (the session executor's fact,
/// `crate::session::answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteAnswer {
    /// Deleted.
    Deleted,
    /// GitHub says the session is gone already.
    Gone,
    /// Any other 400.
    BadRequest,
    /// The scale set itself is gone (`RunnerScaleSetNotFoundException`).
    ScaleSetNotFound,
    /// Anything else (after the client's retries).
    Failed,
}

/// What follows deleting our recorded (stale) session before opening ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStaleDelete {
    /// Forget the recorded id, say so, and open ours.
    Forget,
    /// The scale set is gone: ensure it again.
    Reensure,
    /// The delete failed: the attempt fails (the task retries with back-off).
    Fail,
}

/// What follows the answer to deleting our stale session. Any sign it is gone will do, and so
/// does any 400: a new session is opened next either way, and one still open shows up there
/// as our own session conflict.
pub fn after_stale_delete(answer: DeleteAnswer) -> AfterStaleDelete {
    match answer {
        DeleteAnswer::Deleted | DeleteAnswer::Gone | DeleteAnswer::BadRequest => {
            AfterStaleDelete::Forget
        }
        DeleteAnswer::ScaleSetNotFound => AfterStaleDelete::Reensure,
        DeleteAnswer::Failed => AfterStaleDelete::Fail,
    }
}

/// Whether the recorded session id is cleared after deleting our session at shutdown: only
/// when GitHub deleted it; otherwise the next start deletes it ([`after_stale_delete`]).
pub fn forget_after_close(answer: DeleteAnswer) -> bool {
    answer == DeleteAnswer::Deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_session_gone_any_way_is_forgotten_and_a_gone_scale_set_is_ensured_again() {
        for answer in [
            DeleteAnswer::Deleted,
            DeleteAnswer::Gone,
            DeleteAnswer::BadRequest,
        ] {
            assert_eq!(
                after_stale_delete(answer),
                AfterStaleDelete::Forget,
                "{answer:?}"
            );
        }
        assert_eq!(
            after_stale_delete(DeleteAnswer::ScaleSetNotFound),
            AfterStaleDelete::Reensure
        );
        assert_eq!(
            after_stale_delete(DeleteAnswer::Failed),
            AfterStaleDelete::Fail
        );
    }

    #[test]
    fn only_a_session_deleted_at_shutdown_is_forgotten() {
        assert!(forget_after_close(DeleteAnswer::Deleted));
        for answer in [
            DeleteAnswer::Gone,
            DeleteAnswer::BadRequest,
            DeleteAnswer::ScaleSetNotFound,
            DeleteAnswer::Failed,
        ] {
            assert!(!forget_after_close(answer), "{answer:?}");
        }
    }

    const OURS: &str = "scaleset-0000";
    const PROBE: &str = "scaleset-0000-probe";

    fn conflict(holder: Option<&str>) -> Conflict<'_> {
        Conflict {
            holder,
            our_owner: OURS,
            probe_owner: PROBE,
            recorded_deleted: false,
            own_create_failed: false,
            imported_from: None,
        }
    }

    const EVERY: Rechecks = Rechecks {
        short: Duration::from_secs(30),
        window: Duration::from_secs(600),
        slow: Duration::from_secs(300),
        takeover: Duration::from_secs(5),
    };

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
        let reason = held.reason(Duration::from_secs(30), EVERY.takeover);
        assert!(
            reason.starts_with("GARM still runs: stop it first."),
            "{reason}"
        );
        assert!(reason.contains(garm), "{reason}");
        assert!(reason.ends_with("Nothing was deleted"), "{reason}");
        let other =
            HeldBy::Another("garm-x".to_owned()).reason(Duration::from_secs(30), EVERY.takeover);
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
    fn an_unnamed_holder_says_what_is_known() {
        let recheck = Duration::from_secs(30);
        let lost = held_by(&conflict(None)).reason(recheck, EVERY.takeover);
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
        .reason(recheck, EVERY.takeover);
        assert!(cleared.contains("was deleted first"), "{cleared}");
        assert!(!cleared.contains("no session of ours"), "{cleared}");
        let leaked = held_by(&Conflict {
            own_create_failed: true,
            recorded_deleted: true,
            ..conflict(None)
        })
        .reason(recheck, EVERY.takeover);
        assert!(leaked.contains("most likely our own"), "{leaked}");
        assert!(!leaked.contains("was deleted first"), "{leaked}");
    }

    #[test]
    fn our_own_named_session_says_it_is_ours_and_expires() {
        let recheck = Duration::from_millis(200);
        let lost = held_by(&conflict(Some(OURS))).reason(recheck, EVERY.takeover);
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
        .reason(recheck, EVERY.takeover);
        assert!(cleared.contains("never recorded"), "{cleared}");
        assert!(!cleared.contains("no session of ours"), "{cleared}");
    }

    #[test]
    fn another_owners_session_names_it_and_nothing_is_deleted() {
        let text =
            held_by(&conflict(Some("rival"))).reason(Duration::from_secs(30), EVERY.takeover);
        assert!(text.contains("\"rival\""), "{text}");
        assert!(text.contains("Nothing was deleted"), "{text}");
        assert!(!text.contains("minutes"), "{text}");
    }

    #[test]
    fn a_session_that_may_be_ours_is_rechecked_often_within_the_window_only() {
        let Rechecks {
            short,
            window,
            slow,
            ..
        } = EVERY;
        let ours = held_by(&conflict(None));
        let rival = held_by(&conflict(Some("rival")));
        assert_eq!(recheck_after(&ours, Duration::ZERO, EVERY), short);
        assert_eq!(recheck_after(&ours, Duration::from_secs(599), EVERY), short);
        assert_eq!(recheck_after(&ours, window, EVERY), slow);
        assert_eq!(recheck_after(&rival, Duration::ZERO, EVERY), slow);
    }

    const GARM_ID: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";

    fn imported(holder: Option<&str>) -> Conflict<'_> {
        Conflict {
            imported_from: Some(GARM_ID),
            ..conflict(holder)
        }
    }

    /// github.com names no holder: for a set imported from GARM that no session of ours has
    /// held, GARM is the first suspect, and the operator is told to stop it.
    #[test]
    fn an_unnamed_holder_of_an_imported_set_is_taken_for_its_garm() {
        let garm = format!("garm-{GARM_ID}");
        let unnamed = held_by(&imported(None));
        assert_eq!(
            unnamed,
            HeldBy::Importer {
                controller: GARM_ID.to_owned(),
                named: false
            }
        );
        let named = held_by(&imported(Some(&garm)));
        assert_eq!(
            named,
            HeldBy::Importer {
                controller: GARM_ID.to_owned(),
                named: true
            }
        );
        for held in [&unnamed, &named] {
            assert!(!held.may_be_ours());
            let text = held.reason(Duration::from_secs(30), Duration::from_secs(5));
            for part in [
                "GARM still runs: stop it first.",
                GARM_ID,
                "rechecked every 5s until our first session opens",
                "Nothing was written to it. Nothing was deleted",
            ] {
                assert!(text.contains(part), "{part:?} in {text}");
            }
            assert!(
                text.starts_with("GARM still runs: stop it first."),
                "{text}"
            );
        }
        let text = unnamed.reason(Duration::from_secs(30), EVERY.takeover);
        assert!(text.contains("GitHub does not name"), "{text}");
        assert!(text.contains("most likely GARM's"), "{text}");
        let text = named.reason(Duration::from_secs(30), EVERY.takeover);
        assert!(text.contains(&format!("({garm:?}) holds")), "{text}");
        // Another holder, or a create of ours that may have succeeded, is judged as before.
        assert_eq!(
            held_by(&imported(Some("rival"))),
            HeldBy::Another("rival".to_owned())
        );
        assert_eq!(
            held_by(&imported(Some("garm-00000000-0000-0000-0000-000000000000"))),
            HeldBy::Another("garm-00000000-0000-0000-0000-000000000000".to_owned())
        );
        assert!(held_by(&imported(Some(OURS))).may_be_ours());
        assert_eq!(
            held_by(&Conflict {
                own_create_failed: true,
                ..imported(None)
            }),
            HeldBy::Unnamed {
                recorded_deleted: false,
                own_create_failed: true
            }
        );
        assert_eq!(
            held_by(&Conflict {
                own_create_failed: true,
                ..imported(Some(&garm))
            }),
            HeldBy::Importer {
                controller: GARM_ID.to_owned(),
                named: true
            }
        );
    }

    /// However long GARM keeps running, its imported set is looked at every few seconds.
    #[test]
    fn an_imported_set_held_by_its_garm_is_rechecked_within_seconds_for_ever() {
        let held = held_by(&imported(None));
        for held_for in [Duration::ZERO, EVERY.window, Duration::from_secs(86_400)] {
            assert_eq!(recheck_after(&held, held_for, EVERY), EVERY.takeover);
        }
        let named = held_by(&imported(Some(&format!("garm-{GARM_ID}"))));
        assert_eq!(
            recheck_after(&named, Duration::from_secs(3600), EVERY),
            EVERY.takeover
        );
    }
}
