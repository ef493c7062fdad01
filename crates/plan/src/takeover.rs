//! A scale set taken over from GARM (issue 37): whether the served GitHub scale set is the one
//! GARM ran (its takeover note names that id), and then the pool under which GARM's running
//! instances are found (GARM's pool id, listed with GARM's controller id) and the prefix its
//! runners carry on GitHub. Pure; the scaler lists that pool beside ours, and the reconcile
//! planner decides what becomes of each instance and runner found.

use scaleset_adopt::Takeover;
use scaleset_github::GithubScaleSetId;
use scaleset_provider::{Pool, PoolKey};
use uuid::Uuid;

/// GARM's prefix when its scale set shows none (observed in `shared/reference/garm`).
const GARM_DEFAULT_PREFIX: &str = "garm";

/// What the served scale set inherited from GARM.
#[derive(Debug, Clone, PartialEq)]
pub struct Inherited {
    /// GARM's pool: its pool id, with GARM's controller id.
    pub pool: Pool,
    /// GARM's runner-name prefix, with its dash.
    pub prefix: String,
}

/// The pool and prefix inherited by the GitHub scale set `served` from the takeover `note`:
/// none without a note, when the note is for another GitHub id (GARM's set was deleted and
/// this one is new: GARM's instances never served it), or when it names no pool id or no
/// controller id that parses (nothing can be found then, and nothing is touched).
pub fn inherited(note: Option<&Takeover>, served: GithubScaleSetId) -> Option<Inherited> {
    let note = note?;
    if note.github_id != served {
        return None;
    }
    let key = PoolKey::parse(note.pool_id.as_deref()?).ok()?;
    let controller = Uuid::parse_str(&note.controller_id).ok()?;
    let prefix = note
        .runner_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(GARM_DEFAULT_PREFIX);
    Some(Inherited {
        pool: Pool::new(key).of_controller(controller),
        prefix: format!("{prefix}-"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GARM: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";
    const POOL: &str = "gpu-big-df2a9b56-d0d9-4e79-ad71-44d114828592";

    fn note() -> Takeover {
        Takeover {
            controller_id: GARM.into(),
            github_id: GithubScaleSetId(4),
            pool_id: Some(POOL.into()),
            runner_prefix: Some("gpu".into()),
        }
    }

    #[test]
    fn the_set_garm_ran_inherits_its_pool_with_garms_controller_and_prefix() {
        let got = inherited(Some(&note()), GithubScaleSetId(4)).expect("inherited");
        assert_eq!(got.pool.key.as_str(), POOL);
        assert_eq!(got.pool.controller_id, Some(Uuid::parse_str(GARM).unwrap()));
        assert_eq!(got.prefix, "gpu-");
    }

    #[test]
    fn without_a_prefix_garms_default_is_taken() {
        for prefix in [None, Some(String::new())] {
            let note = Takeover {
                runner_prefix: prefix,
                ..note()
            };
            let got = inherited(Some(&note), GithubScaleSetId(4)).expect("inherited");
            assert_eq!(got.prefix, "garm-");
        }
    }

    #[test]
    fn nothing_is_inherited_by_another_set_or_from_an_incomplete_note() {
        assert_eq!(inherited(None, GithubScaleSetId(4)), None);
        assert_eq!(inherited(Some(&note()), GithubScaleSetId(5)), None);
        let no_pool = Takeover {
            pool_id: None,
            ..note()
        };
        assert_eq!(inherited(Some(&no_pool), GithubScaleSetId(4)), None);
        let bad_pool = Takeover {
            pool_id: Some(String::new()),
            ..note()
        };
        assert_eq!(inherited(Some(&bad_pool), GithubScaleSetId(4)), None);
        let bad_controller = Takeover {
            controller_id: "not-a-uuid".into(),
            ..note()
        };
        assert_eq!(inherited(Some(&bad_controller), GithubScaleSetId(4)), None);
        // A note for another id than the served one inherits nothing.
        let other = Takeover {
            github_id: GithubScaleSetId(i64::MAX),
            ..note()
        };
        assert_eq!(inherited(Some(&other), GithubScaleSetId(-1)), None);
    }
}
