//! Names in the simulated world (scale sets, runner groups, agents) compare case-insensitively,
//! as a .NET service with a default collation compares them.

/// Whether `a` and `b` name the same thing.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    // The ASCII case needs no allocation, and a scale-set lookup compares with every set of the
    // scope (issue 35: two allocations a set made a lookup among 10,000 cost milliseconds).
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    folded(a) == folded(b)
}

/// The form two names that [`same_name`] holds equal share: the key of the name index.
pub(crate) fn folded(name: &str) -> String {
    name.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_case_insensitively_in_ascii_and_beyond() {
        assert!(same_name("Linux-X64", "linux-x64"));
        assert!(!same_name("linux", "linux2"));
        assert!(!same_name("linux", "linuy"));
        // Non-ASCII takes Unicode's lowercase, as before the ASCII shortcut.
        assert!(same_name("ÉTÉ", "été"));
        assert!(!same_name("été", "ete"));
        // One side ASCII, the other not: Unicode's rule decides, as before the shortcut.
        assert!(
            same_name("K", "\u{212A}"),
            "the Kelvin sign lowercases to k"
        );
        assert_eq!(folded("Linux"), folded("LINUX"));
    }
}
