//! Pool keys (DESIGN §3): `<controller id>_<GitHub scale-set id>`, built and read back here and
//! nowhere else. Apart from `scaleset_control`'s `identity` (which names sessions and runners, and reports
//! configuration errors) so that the pure planners can ask "is this pool ours?" without
//! depending on the crate's error type.

use scaleset_adopt::{ControllerId, GithubScaleSetId};
use scaleset_provider::PoolKey;
use uuid::Uuid;

/// The provider pool key: `<controller id>_<GitHub scale-set id>`. An underscore, because GCP
/// label values and Kubernetes label values reject `:`. Every instance carries it, and nothing
/// without it is ever touched.
///
/// ```
/// let key = scaleset_plan::pool_keys::pool_key(uuid::Uuid::nil(), 42);
/// assert_eq!(key.as_str(), "00000000-0000-0000-0000-000000000000_42");
/// ```
pub fn pool_key(controller: Uuid, github_scale_set_id: i64) -> PoolKey {
    pool_key_of(
        ControllerId::from_bytes(controller.into_bytes()),
        github_scale_set_id,
    )
}

/// [`pool_key`] for a controller id already typed.
pub fn pool_key_of(controller: ControllerId, github_scale_set_id: i64) -> PoolKey {
    // GitHub ids are positive; a negative one (never seen) keeps its sign in the text, so it
    // can never collide with a real scale set's key.
    let text = controller.pool_key(GithubScaleSetId(github_scale_set_id));
    // Built from a UUID and an integer: never empty, never a control character.
    match PoolKey::parse(&text) {
        Ok(key) => key,
        Err(_) => unreachable!("a UUID and an integer form a valid pool key"),
    }
}

/// The GitHub scale-set id of `pool_key` when it is exactly a pool key of `controller`
/// ([`pool_key`] read backwards); `None` for anything else: another controller's key, GARM's
/// pool ids, a key of ours with anything but the canonical id after the underscore. The one
/// rule for "ours by pool key" is [`scaleset_domain::pool_key_scale_set`]; this reads it with the
/// loop's types.
pub fn our_pool(pool_key: &str, controller: Uuid) -> Option<i64> {
    scaleset_domain::pool_key_scale_set(pool_key, controller).map(i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_key_is_ours_only_exactly_as_we_build_it() {
        let ours = Uuid::from_u128(0x3f2a9c1e_77b0_4d4e_9a55_0123456789ab);
        let key = pool_key(ours, 42);
        assert_eq!(our_pool(key.as_str(), ours), Some(42));
        assert_eq!(
            our_pool(key.as_str(), Uuid::from_u128(7)),
            None,
            "another controller's"
        );
        let text = ours.to_string();
        for odd in [
            format!("{text}_042"),
            format!("{text}_+42"),
            format!("{text}_"),
            format!("{text}42"),
            format!("{text}_4_2"),
            format!("{}_42", text.to_uppercase()),
            format!("{}_42", ours.simple()),
            "gpu-big-x".to_owned(),
        ] {
            assert_eq!(our_pool(&odd, ours), None, "{odd}");
        }
        assert_eq!(our_pool(pool_key(ours, -3).as_str(), ours), Some(-3));
    }
}
