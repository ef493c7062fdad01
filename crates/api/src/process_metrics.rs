//! The process's own series under the names every Prometheus client library gives them
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_open_fds`, `process_max_fds`, `process_start_time_seconds`), read from `/proc` at
//! each scrape, and `scaleset_build_info{version,revision,rustc} 1`.
//!
//! Linux only: where `/proc` is absent (or a file of it cannot be read) the series it feeds are
//! left out rather than exported at 0, which a dashboard would read as a real value. The build
//! facts are known everywhere.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

/// The kernel's clock tick for `/proc/<pid>/stat` times (`USER_HZ`): fixed at 100 on every
/// Linux architecture's user interface, whatever the kernel's internal `HZ` (the Go client's
/// `procfs` assumes the same).
const USER_HZ: f64 = 100.0;

/// `scaleset_build_info`'s labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    revision: &'static str,
    rustc: &'static str,
}

/// What this binary was built from: the workspace version, the commit (`SCALESET_REVISION` at
/// build time, as the image build passes it; `unknown` without it) and the compiler's version.
pub(crate) fn build_facts() -> (&'static str, &'static str, &'static str) {
    (
        env!("CARGO_PKG_VERSION"),
        env!("SCALESET_BUILD_REVISION"),
        env!("SCALESET_BUILD_RUSTC"),
    )
}

/// Registers the process series and `scaleset_build_info` in `registry`.
pub(crate) fn register(registry: &mut Registry) {
    let (version, revision, rustc) = build_facts();
    let build = Family::<BuildLabels, Gauge>::default();
    build
        .get_or_create(&BuildLabels {
            version,
            revision,
            rustc,
        })
        .set(1);
    registry.register(
        "scaleset_build_info",
        "1, with the version, the commit (revision; unknown when the build was not given \
         SCALESET_REVISION) and the compiler (rustc) this binary was built from",
        build,
    );
    registry.register_collector(Box::new(ProcessCollector));
}

/// Reads `/proc/self` at each scrape.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let reading = ProcessReading::read();
        if let Some(cpu) = reading.cpu_seconds {
            let metric = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(cpu).encode(metric)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                reading.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                reading.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                reading.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors (the soft limit)",
                reading.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
                ConstGauge::new(value).encode(metric)?;
            }
        }
        if let Some(start) = reading.start_time_seconds {
            let metric = encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(start).encode(metric)?;
        }
        Ok(())
    }
}

/// One read of the process's figures; each `None` when its source could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcessReading {
    pub(crate) cpu_seconds: Option<f64>,
    pub(crate) resident_bytes: Option<u64>,
    pub(crate) virtual_bytes: Option<u64>,
    pub(crate) open_fds: Option<u64>,
    pub(crate) max_fds: Option<u64>,
    pub(crate) start_time_seconds: Option<f64>,
}

impl ProcessReading {
    /// Reads this process's figures from `/proc`.
    pub(crate) fn read() -> Self {
        let text = |path: &str| std::fs::read_to_string(path).ok();
        let stat = text("/proc/self/stat").and_then(|t| parse_stat(&t));
        let boot = text("/proc/stat").and_then(|t| parse_boot_time(&t));
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|dir| dir.filter(Result::is_ok).count() as u64);
        #[allow(clippy::cast_precision_loss)]
        Self {
            cpu_seconds: stat.map(|s| s.cpu_ticks as f64 / USER_HZ),
            resident_bytes: text("/proc/self/status").and_then(|t| parse_resident_bytes(&t)),
            virtual_bytes: stat.map(|s| s.virtual_bytes),
            open_fds,
            max_fds: text("/proc/self/limits").and_then(|t| parse_max_fds(&t)),
            start_time_seconds: stat
                .zip(boot)
                .map(|(s, boot)| boot as f64 + s.start_ticks as f64 / USER_HZ),
        }
    }
}

/// What `/proc/<pid>/stat` says that the series need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// User and system time, in clock ticks.
    pub(crate) cpu_ticks: u64,
    /// The start, in clock ticks after boot.
    pub(crate) start_ticks: u64,
    /// The virtual memory size in bytes.
    pub(crate) virtual_bytes: u64,
}

/// Parses `/proc/<pid>/stat` (proc(5)): fields 14 and 15 (utime, stime), 22 (starttime) and
/// 23 (vsize). The command name (field 2) is in parentheses and may hold spaces and `)`, so
/// fields are counted from the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    // `rest` starts at field 3 (state): field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
    })
}

/// The boot time (`btime`, seconds since the epoch) of `/proc/stat`.
pub(crate) fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// `VmRSS` of `/proc/<pid>/status`, in bytes (the file says kB).
pub(crate) fn parse_resident_bytes(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().next()?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The soft limit of "Max open files" in `/proc/<pid>/limits`; `None` when unlimited.
pub(crate) fn parse_max_fds(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_fields_are_counted_from_the_last_parenthesis_of_the_command_name() {
        // A command name with a space and a `)`, as a process may name itself.
        let text = "4242 (scale set) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 \
                    250 70 0 0 20 0 9 0 123456 104857600 2048 18446744073709551615 \
                    1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                cpu_ticks: 320,
                start_ticks: 123_456,
                virtual_bytes: 104_857_600,
            })
        );
        assert_eq!(parse_stat("4242 (cut short) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis at all"), None);
    }

    #[test]
    fn status_limits_and_boot_time_parse_and_unlimited_fds_are_none() {
        let status = "Name:\tscaleset-worker\nVmPeak:\t  200000 kB\nVmRSS:\t   12345 kB\n";
        assert_eq!(parse_resident_bytes(status), Some(12_345 * 1024));
        assert_eq!(parse_resident_bytes("Name:\tx\n"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max processes             63448                63448                processes\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024));
        assert_eq!(
            parse_max_fds(
                "Max open files            unlimited            unlimited            files\n"
            ),
            None
        );
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1765000000\nprocesses 9\n"),
            Some(1_765_000_000)
        );
    }

    /// On Linux every figure is read, and they describe this process: it started before now,
    /// holds memory, and has open descriptors within its limit.
    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_from_proc() {
        let reading = ProcessReading::read();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        let start = reading.start_time_seconds.expect("start time");
        assert!(
            start <= now + 1.0 && start > now - 86_400.0,
            "started at {start}, now {now}"
        );
        assert!(reading.resident_bytes.expect("rss") > 1024 * 1024);
        assert!(reading.virtual_bytes.expect("vsize") >= reading.resident_bytes.expect("rss"));
        let open = reading.open_fds.expect("open fds");
        assert!(open >= 3, "stdin, stdout, stderr at least: {open}");
        if let Some(max) = reading.max_fds {
            assert!(open <= max, "{open} open of at most {max}");
        }
        assert!(reading.cpu_seconds.expect("cpu") >= 0.0);
    }
}
