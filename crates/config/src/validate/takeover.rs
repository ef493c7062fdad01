//! A scale set's takeover note (`[scale_set.takeover]`, written by `scalesetctl import garm`):
//! the GARM controller that ran the set and the GitHub id it ran it under. It becomes the
//! adoption machine's evidence for exactly that set, so every part is checked here: a wrong
//! id would let the note vouch for the wrong set.

use scaleset_adopt::{GithubScaleSetId, Takeover};

use super::Problems;
use crate::raw::RawTakeover;

/// The one manager a note may name today.
const GARM: &str = "garm";

/// The note of table `at`, every problem reported. A note without `runner_prefix` (written
/// before the import carried it) takes the scale set's own prefix, `set_prefix`: the import
/// writes GARM's prefix there.
pub(super) fn note(
    p: &mut Problems,
    at: &str,
    raw: &RawTakeover,
    set_prefix: &str,
) -> Option<Takeover> {
    let mut ok = true;
    match raw.from.as_deref() {
        Some(GARM) => {}
        Some(other) => {
            p.add(
                format!("{at}.from"),
                format!("{other:?} is not a manager scaleset takes over from: write \"garm\""),
            );
            ok = false;
        }
        None => {
            p.add(format!("{at}.from"), "missing: write \"garm\"");
            ok = false;
        }
    }
    let controller_id = match raw.controller_id.as_deref().map(str::trim) {
        Some(text) if uuid::Uuid::parse_str(text).is_ok() => Some(text.to_ascii_lowercase()),
        Some(text) => {
            p.add(
                format!("{at}.controller_id"),
                format!(
                    "{text:?} is not a UUID: copy GARM's controller_id (`garm-cli controller \
                     show`) or re-run scalesetctl import garm"
                ),
            );
            None
        }
        None => {
            p.add(
                format!("{at}.controller_id"),
                "missing: GARM's controller_id (`garm-cli controller show`)",
            );
            None
        }
    };
    let github_id = match raw.github_id {
        Some(id) if id > 0 => Some(id),
        Some(id) => {
            p.add(
                format!("{at}.github_id"),
                format!("{id} is not a GitHub scale-set id (a positive integer)"),
            );
            None
        }
        None => {
            p.add(
                format!("{at}.github_id"),
                "missing: the GitHub scale-set id (GARM's scale_set_id, `garm-cli scaleset show`)",
            );
            None
        }
    };
    if let Some(id) = raw.garm_id
        && id <= 0
    {
        p.add(
            format!("{at}.garm_id"),
            format!("{id} is not GARM's scale-set id (a positive integer)"),
        );
        ok = false;
    }
    if raw
        .pool_id
        .as_deref()
        .is_some_and(|id| id.trim().is_empty())
    {
        p.add(
            format!("{at}.pool_id"),
            "is empty: leave it out or re-run the import",
        );
        ok = false;
    }
    let runner_prefix = match raw.runner_prefix.as_deref().map(str::trim) {
        Some("") => {
            p.add(
                format!("{at}.runner_prefix"),
                "is empty: GARM's runner_prefix of the set (`garm` when GARM shows none), or \
                 leave it out to use the scale set's runner_prefix",
            );
            ok = false;
            None
        }
        Some(prefix) if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            p.add(
                format!("{at}.runner_prefix"),
                format!("{prefix:?} is not a runner-name prefix (no spaces or control characters)"),
            );
            ok = false;
            None
        }
        Some(prefix) => Some(prefix.to_owned()),
        None => Some(set_prefix.to_owned()),
    };
    Some(Takeover {
        controller_id: controller_id?,
        github_id: GithubScaleSetId(github_id?),
        pool_id: raw
            .pool_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
        runner_prefix,
    })
    .filter(|_| ok)
}
