//! Integration tests of `scaleset-provider`: the external provider against
//! real executables, the fake provider's behaviours, and configuration
//! (including the example in `docs/providers.md`).

mod config;
mod directory;
mod external;
mod fake;
mod helpers;
mod names;
