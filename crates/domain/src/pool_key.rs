//! The provider pool key's one spelling (DESIGN §3): `<controller id>_<GitHub scale-set id>`.

use std::fmt::Display;

use crate::GithubScaleSetId;

/// The provider pool key of GitHub scale set `scale_set` under `controller` (the controller
/// id as it displays: a lower-case hyphenated UUID): `<controller id>_<scale-set id>`. An
/// underscore, because GCP label values and Kubernetes label values reject `:`. Tagged on
/// every provider instance so instances are found again after a database loss; every crate
/// that builds or reads one back calls this.
///
/// ```
/// use scaleset_domain::{GithubScaleSetId, pool_key_text};
///
/// assert_eq!(
///     pool_key_text("00000000-0000-0000-0000-000000000000", GithubScaleSetId(42)),
///     "00000000-0000-0000-0000-000000000000_42"
/// );
/// ```
pub fn pool_key_text(controller: impl Display, scale_set: GithubScaleSetId) -> String {
    format!("{controller}_{scale_set}")
}

/// The GitHub scale-set id of `pool_key` when it is exactly a pool key of `controller`
/// ([`pool_key_text`] read backwards); `None` for anything else: another controller's key,
/// GARM's pool ids, a key of ours with anything but the canonical id after the underscore.
/// The one rule for "ours by pool key" (the decommission planner and the orphan sweep ask it).
///
/// ```
/// use scaleset_domain::{GithubScaleSetId, pool_key_scale_set};
///
/// let ours = "00000000-0000-0000-0000-000000000000";
/// assert_eq!(pool_key_scale_set(&format!("{ours}_42"), ours), Some(GithubScaleSetId(42)));
/// assert_eq!(pool_key_scale_set(&format!("{ours}_042"), ours), None);
/// assert_eq!(pool_key_scale_set("pool-7", ours), None);
/// ```
pub fn pool_key_scale_set(pool_key: &str, controller: impl Display) -> Option<GithubScaleSetId> {
    let controller = controller.to_string();
    let id: i64 = pool_key
        .strip_prefix(controller.as_str())?
        .strip_prefix('_')?
        .parse()
        .ok()?;
    let id = GithubScaleSetId(id);
    (pool_key_text(&controller, id) == pool_key).then_some(id)
}
