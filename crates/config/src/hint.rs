//! Pointers added to serde's messages where the bare message leaves an operator stuck: a pasted
//! GARM provider table (GARM's `provider_type`, `description` and `[provider.external]` are
//! unknown here, and ``unknown field `external` `` alone does not say where the equivalent is
//! written), and a GitHub App's client id (`Iv23li…`, which GitHub shows first) given as
//! `app_id`, which takes the numeric App ID (the client id has its own key, `client_id`).

/// The keys of a GARM `[[provider]]` table that ours does not have.
const GARM_PROVIDER_KEYS: [&str; 3] = ["external", "provider_type", "description"];

/// What to add to a TOML error `message` whose key is `key` (as [`crate::key_of`] found it);
/// `None` when there is nothing to add.
pub(crate) fn for_message(key: &str, message: &str) -> Option<&'static str> {
    if GARM_PROVIDER_KEYS.contains(&key) && message.contains("`provider`") {
        return Some(
            "; this looks like a GARM provider table: write it as [[provider]] with name, \
             kind = \"external\", executable and config_file at its top level (GARM's \
             provider_type, description and [provider.external] have no place here); see \
             docs/providers.md, \"Moving from GARM\"",
        );
    }
    if message.contains("invalid type: string") && message.contains(".app_id`") {
        return Some(
            "; app_id is the App's numeric \"App ID\", shown on the App's settings page beside \
             its client id (Iv…): give the number, or give the client id as \
             client_id = \"Iv…\" instead of app_id",
        );
    }
    None
}
