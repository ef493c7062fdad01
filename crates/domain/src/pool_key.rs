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
