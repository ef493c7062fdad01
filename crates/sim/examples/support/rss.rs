//! Memory measurement for the benchmark examples: `client_memory` and `longpoll_memory` here,
//! and the control crate's `fleet`, which include this file with `#[path]`. It is a file the
//! examples share rather than library code, because reading `/proc` is not the simulator's
//! business and the benchmarks are run by hand (`docs/benchmarks.md`).

use anyhow::{Context as _, Result};

/// The resident set size of process `pid` in KiB (`VmRSS` in `/proc/<pid>/status`, so Linux
/// only).
pub(crate) fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/<pid>/status")
}
