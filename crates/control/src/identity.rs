//! Who this controller is on GitHub and at the providers (DESIGN §3): the validated controller
//! id and every name derived from it, so a rebuilt database finds the same sessions, scale sets
//! and instances again. The pool key and runner names are built here and nowhere else.

use scaleset_adopt::ControllerId;
use scaleset_provider::PoolKey;
use uuid::Uuid;

use crate::error::Error;
use crate::pool_keys::pool_key_of;

/// The controller's identity: its id and the names derived from it. The names themselves come
/// from [`scaleset_adopt::ControllerId`], the one place that derives them for every crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerIdentity {
    id: ControllerId,
    owner_label: bool,
}

impl ControllerIdentity {
    /// An identity for a controller id, with the owner label on.
    pub fn new(id: Uuid) -> Self {
        Self::from_controller_id(ControllerId::from_bytes(id.into_bytes()))
    }

    /// An identity for an already parsed controller id, with the owner label on.
    pub fn from_controller_id(id: ControllerId) -> Self {
        Self {
            id,
            owner_label: true,
        }
    }

    /// Parses a configured controller id; anything but a UUID is a configuration error.
    pub fn parse(text: &str) -> Result<Self, Error> {
        ControllerId::parse(text.trim())
            .map(Self::from_controller_id)
            .map_err(|source| Error::ControllerId { source })
    }

    /// Turns the owner label added to created scale sets on or off.
    #[must_use]
    pub fn with_owner_label(mut self, on: bool) -> Self {
        self.owner_label = on;
        self
    }

    /// The controller id, as the store and the providers keep it.
    pub fn id(&self) -> Uuid {
        Uuid::from_bytes(self.id.to_bytes())
    }

    /// `ownerName` of every listener's own message session: `scaleset-<controller id>`.
    pub fn session_owner(&self) -> String {
        self.id.session_owner()
    }

    /// `ownerName` of every ownership probe: `scaleset-<controller id>-probe`. Under policy
    /// `any` the probe's session is handed to the listener and keeps this owner.
    pub fn probe_owner(&self) -> String {
        self.id.probe_owner()
    }

    /// The owner label: `scaleset-owner-` and all 32 hex digits of the id (shown by the API;
    /// recognised as ours even when adding it is off, see [`Self::owner_label_enabled`]).
    pub fn owner_label(&self) -> String {
        self.id.owner_label()
    }

    /// Whether created scale sets get the owner label.
    pub fn owner_label_enabled(&self) -> bool {
        self.owner_label
    }

    /// The identity the adoption machine works with.
    pub fn adoption(&self) -> scaleset_adopt::Identity {
        let identity = scaleset_adopt::Identity::new(self.id);
        if self.owner_label {
            identity
        } else {
            identity.without_owner_label()
        }
    }

    /// The provider pool key of one GitHub scale set.
    pub fn pool_key(&self, github_scale_set_id: i64) -> PoolKey {
        pool_key_of(self.id, github_scale_set_id)
    }
}

/// The RFC 4648 base32 alphabet, lower-cased (runner names are case-insensitive on GitHub).
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A runner name: `<prefix>-<8 base32 chars>`, random from `rng`.
///
/// ```
/// let mut rng = fastrand::Rng::with_seed(7);
/// let name = scaleset_control::runner_name("linux", &mut rng);
/// assert!(name.starts_with("linux-") && name.len() == "linux-".len() + 8);
/// ```
pub fn runner_name(prefix: &str, rng: &mut fastrand::Rng) -> String {
    let mut name = String::with_capacity(prefix.len() + 9);
    name.push_str(prefix);
    name.push('-');
    for _ in 0..8 {
        name.push(char::from(BASE32[rng.usize(..BASE32.len())]));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_id_must_be_a_uuid() {
        assert!(ControllerIdentity::parse("not-a-uuid").is_err());
        let id = ControllerIdentity::parse("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").unwrap();
        assert_eq!(
            id.session_owner(),
            "scaleset-3f2a9c1e-77b0-4d4e-9a55-0123456789ab"
        );
    }

    #[test]
    fn the_owner_label_carries_all_32_hex_digits() {
        let id = ControllerIdentity::parse("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").unwrap();
        assert_eq!(
            id.owner_label(),
            "scaleset-owner-3f2a9c1e77b04d4e9a550123456789ab"
        );
        assert!(id.owner_label_enabled());
        assert!(!id.with_owner_label(false).owner_label_enabled());
    }

    #[test]
    fn the_pool_key_uses_an_underscore() {
        let id = ControllerIdentity::new(Uuid::from_u128(1));
        let key = id.pool_key(7);
        assert_eq!(key.as_str(), "00000000-0000-0000-0000-000000000001_7");
        assert!(!key.as_str().contains(':'));
    }

    #[test]
    fn runner_names_are_prefix_dash_eight_base32() {
        let mut rng = fastrand::Rng::with_seed(1);
        for _ in 0..100 {
            let name = runner_name("ci", &mut rng);
            let suffix = name.strip_prefix("ci-").unwrap();
            assert_eq!(suffix.len(), 8);
            assert!(suffix.bytes().all(|b| BASE32.contains(&b)), "{name}");
        }
    }

    #[test]
    fn turning_the_owner_label_off_reaches_the_machine() {
        let id = ControllerIdentity::new(Uuid::from_u128(1));
        assert!(id.adoption().owner_label().is_some());
        assert!(
            id.with_owner_label(false)
                .adoption()
                .owner_label()
                .is_none()
        );
    }

    #[test]
    fn the_pool_key_is_the_one_the_adoption_identity_and_the_provider_derive() {
        let uuid = Uuid::parse_str("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").unwrap();
        let id = ControllerIdentity::new(uuid);
        assert_eq!(
            id.pool_key(42).as_str(),
            ControllerId::from_bytes(uuid.into_bytes())
                .pool_key(scaleset_adopt::GithubScaleSetId(42))
        );
        assert_eq!(
            id.pool_key(42),
            PoolKey::for_scale_set(uuid, scaleset_adopt::GithubScaleSetId(42))
        );
        assert_eq!(id.id(), uuid);
    }
}
