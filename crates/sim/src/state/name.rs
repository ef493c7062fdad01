//! Names in the simulated world (scale sets, runner groups, agents) compare case-insensitively,
//! as a .NET service with a default collation compares them.

/// Whether `a` and `b` name the same thing.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}
