//! Domain values that carry their proof (zero-to-production's `domain/`): a value of one of
//! these types exists only if the one parser of its rule accepted it, so no code that holds one
//! checks it again, and every door (the API, the configuration file, plan/apply, the store's
//! rows, the providers) refuses the same text with the same words.
//!
//! - [`ScaleSetName`], [`RunnerPrefix`], [`ProviderName`]: one name rule ([`check_name`]), one
//!   safe path component of ASCII letters, digits, `.`, `_` and `-`, starting with a letter or
//!   digit, at most so many **characters**. Runner names are built from the first two and
//!   become file names and command arguments at the providers.
//! - [`Label`]: free text GitHub shows (no control character, no comma, no space at its ends),
//!   never an owner label ([`OWNER_LABEL_PREFIX`]).
//! - [`GithubScaleSetId`]: GitHub's id of a runner scale set, the one type every crate passes
//!   (the store's own row id is another type, in `scaleset-store`).
//! - [`pool_key_text`]: the provider pool key's one spelling; [`api_base_url`]: the one
//!   derivation of GitHub's REST API base URL from a web base URL.
//!
//! What it deliberately does not do: no I/O, no clock, no knowledge of the spec as a whole
//! (that is `scaleset-store`'s `ScaleSetSpec`), and it depends on no crate of ours, so every
//! crate may stand on it.
//!
//! ```
//! use scaleset_domain::{Label, ScaleSetName};
//!
//! let name = ScaleSetName::parse("linux-x64").unwrap();
//! assert_eq!(name.as_str(), "linux-x64");
//! assert!(ScaleSetName::parse("../escape").is_err());
//! assert!(Label::parse("a,b").is_err());
//! ```

mod endpoint;
mod github_id;
mod label;
mod name;
mod pool_key;

pub use endpoint::{api_base_url, enterprise_api_base_url, is_github_hosted};
pub use github_id::GithubScaleSetId;
pub use label::{
    LABEL_MAX, Label, LabelError, OWNER_LABEL_PREFIX, TextError, check_text, has_owner_prefix,
};
pub use name::{
    NAME_PATTERN, NameError, PROVIDER_MAX, ProviderName, RUNNER_PREFIX_MAX, RunnerPrefix,
    SCALE_SET_NAME_MAX, ScaleSetName, ScaleSetNameError, check_name,
};
pub use pool_key::{pool_key_scale_set, pool_key_text};
