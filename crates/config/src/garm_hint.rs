//! A pointer for an operator who pasted a GARM provider table: GARM's keys (`provider_type`,
//! `description`, the `[provider.external]` table) are unknown here, and serde's
//! ``unknown field `external` `` alone does not say where the equivalent is written.

/// The keys of a GARM `[[provider]]` table that ours does not have.
const GARM_PROVIDER_KEYS: [&str; 3] = ["external", "provider_type", "description"];

/// What to add to the message of an unknown `key` (as [`crate::key_of`] found it) when it is
/// one of GARM's provider keys; `None` for any other key.
pub(crate) fn for_unknown(key: &str, message: &str) -> Option<&'static str> {
    (GARM_PROVIDER_KEYS.contains(&key) && message.contains("`provider`")).then_some(
        "; this looks like a GARM provider table: write it as [[provider]] with name, \
         kind = \"external\", executable and config_file at its top level (GARM's \
         provider_type, description and [provider.external] have no place here); see \
         docs/providers.md, \"Moving from GARM\"",
    )
}
