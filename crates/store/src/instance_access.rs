//! The instance-access aggregate: what a booting instance may fetch and report through the
//! server's instance-facing endpoints (GARM's metadata and callback URLs, which GARM provider
//! images call during bootstrap).
//!
//! The scaler grants access before it asks the provider to create the instance: a token scoped
//! to that one instance (stored as its SHA-256 only, like API tokens) that expires with the
//! bootstrap timeout, and the instance's JIT config sealed by the keyring. The instance then
//! fetches its JIT files with the token and reports its progress (`installing`, then `idle` or
//! `failed`); once it has finished, the token opens nothing any more.

use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use secrecy::SecretString;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::ScaleSetId;
use crate::lease::Lease;

/// The prefix of every instance token, so scanners can recognise a leaked one (API tokens
/// start with [`crate::API_TOKEN_PREFIX`]; the two never open each other's routes).
pub const INSTANCE_TOKEN_PREFIX: &str = "ssi_";

/// A new instance token: `ssi_` and 32 random bytes, base64url. Stored only as its SHA-256
/// (`crate::api_token::token_hash`): 32 random bytes need no slow hash.
pub(crate) fn generate_instance_token() -> Result<SecretString> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| crate::Error::Crypto {
            operation: "encrypt",
            what: "a new instance token".to_owned(),
            reason: "the system random number generator failed".to_owned(),
        })?;
    let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    Ok(SecretString::from(format!("{INSTANCE_TOKEN_PREFIX}{body}")))
}

crate::text_enum! {
    /// How far an instance's bootstrap has come, as the instance itself reports it (GARM's
    /// runner status as its bootstrap scripts send it).
    ///
    /// | from | to |
    /// | --- | --- |
    /// | pending | installing, idle, failed |
    /// | installing | installing, idle, failed |
    /// | idle, failed | (none: bootstrap is over) |
    BootstrapStatus {
        /// Access granted; the instance has not reported yet.
        Pending = "pending",
        /// The instance is installing and configuring the runner.
        Installing = "installing",
        /// The runner is configured and started.
        Idle = "idle",
        /// The instance gave up.
        Failed = "failed",
    }
}

impl BootstrapStatus {
    /// Whether the instance is still bootstrapping: only then does its token open the
    /// metadata and callback endpoints (as GARM allows them only to a pending or installing
    /// runner).
    pub fn is_bootstrapping(self) -> bool {
        matches!(self, Self::Pending | Self::Installing)
    }

    /// Whether a report may move the status from `self` to `to`.
    pub fn can_move_to(self, to: Self) -> bool {
        self.is_bootstrapping() && to != Self::Pending
    }
}

/// An instance's access record (without the token, which is not stored, and the JIT config,
/// which is read with [`InstanceAccessStore::open_instance_jit_config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceAccess {
    /// The instance (and runner) name.
    pub instance_name: String,
    /// The instance's scale set.
    pub scale_set_id: ScaleSetId,
    /// When the token stops working.
    pub expires_at: Timestamp,
    /// What the instance last reported.
    pub bootstrap_status: BootstrapStatus,
    /// The message of its last status report.
    pub status_message: Option<String>,
    /// The runner's GitHub agent id, once reported.
    pub agent_id: Option<i64>,
    /// The operating system's name, once reported.
    pub os_name: Option<String>,
    /// The operating system's version, once reported.
    pub os_version: Option<String>,
    /// When it was last written.
    pub updated_at: Timestamp,
}

/// A status report from an instance (GARM's status callback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapReport {
    /// The status reported.
    pub status: BootstrapStatus,
    /// What the instance said.
    pub message: String,
    /// The runner's agent id, when the instance knows it.
    pub agent_id: Option<i64>,
}

/// A system-information report from an instance (GARM's system-info callback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemInfo {
    /// The operating system's name.
    pub os_name: String,
    /// The operating system's version.
    pub os_version: String,
    /// The runner's agent id, when the instance knows it.
    pub agent_id: Option<i64>,
}

/// Instance access. The grant is fenced by the scale set's lease (the scaler writes it); the
/// reports come from the instance through the server, which holds no lease, and touch only
/// this record.
#[async_trait]
pub trait InstanceAccessStore: Send + Sync {
    /// Grants instance `name` of the lease's scale set a new token valid for `valid_for`,
    /// with its JIT config sealed beside it; a grant already there is replaced (its token
    /// stops working). Returns the token, which is not stored and cannot be recovered.
    async fn grant_instance_access(
        &self,
        lease: &Lease,
        name: &str,
        jit_config: &SecretString,
        valid_for: Duration,
    ) -> Result<SecretString>;

    /// The access record a presented token opens: `None` when the token is unknown or has
    /// expired.
    async fn authenticate_instance(&self, token: &SecretString) -> Result<Option<InstanceAccess>>;

    /// The access record of instance `name`, if it was granted one.
    async fn get_instance_access(&self, name: &str) -> Result<Option<InstanceAccess>>;

    /// The JIT config sealed for instance `name`.
    async fn open_instance_jit_config(&self, name: &str) -> Result<SecretString>;

    /// Records a status report from instance `name`. A move the table in [`BootstrapStatus`]
    /// does not allow is [`crate::Error::Invalid`] and writes nothing.
    async fn report_instance_status(
        &self,
        name: &str,
        report: BootstrapReport,
    ) -> Result<InstanceAccess>;

    /// Records a system-information report from instance `name` (while it is bootstrapping;
    /// afterwards [`crate::Error::Invalid`]).
    async fn report_instance_system_info(
        &self,
        name: &str,
        info: SystemInfo,
    ) -> Result<InstanceAccess>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bootstrapping_instance_moves_and_never_back_to_pending() {
        use BootstrapStatus::{Failed, Idle, Installing, Pending};
        for from in BootstrapStatus::ALL {
            for to in BootstrapStatus::ALL {
                let allowed = matches!(
                    (from, to),
                    (Pending | Installing, Installing | Idle | Failed)
                );
                assert_eq!(from.can_move_to(*to), allowed, "{from:?} -> {to:?}");
            }
        }
        assert!(Pending.is_bootstrapping() && Installing.is_bootstrapping());
        assert!(!Idle.is_bootstrapping() && !Failed.is_bootstrapping());
    }

    #[test]
    fn tokens_are_prefixed_random_and_redacted() {
        use secrecy::ExposeSecret as _;
        let one = generate_instance_token().unwrap();
        let two = generate_instance_token().unwrap();
        assert!(one.expose_secret().starts_with(INSTANCE_TOKEN_PREFIX));
        assert_ne!(one.expose_secret(), two.expose_secret());
        let (h1, h2) = (
            crate::api_token::token_hash(&one),
            crate::api_token::token_hash(&two),
        );
        assert_ne!(h1, h2);
        assert_eq!(h1.len(), 32);
        assert!(!format!("{one:?}").contains(&one.expose_secret()[4..]));
    }
}
